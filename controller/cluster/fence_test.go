package cluster

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/edgewan/edgewan/controller/sdwan"
	"github.com/edgewan/edgewan/controller/store"
	"github.com/edgewan/edgewan/controller/store/storetest"
	"github.com/edgewan/edgewan/coreapi/event"
	"github.com/edgewan/edgewan/coreapi/page"
)

// TestFencedStatusWrites: the store's site status writes run the member's Fence in their own
// transaction. While the lease holds, a status change and its event are stored; once another
// controller has taken the partition (its epoch moved on) while this one still believes it
// holds it, as a paused process would, the write is refused with ErrFenced and neither the
// status nor the event is stored.
func TestFencedStatusWrites(t *testing.T) {
	u := storetest.PostgresURL(t)
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{DatabaseURL: u})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	db := openDBURL(t, u)
	m, err := New(ctx, Options{DB: db, ID: "a", TTL: time.Minute, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}) // validity outlives the test
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = m.Run(rctx) }()
	defer func() { cancel(); <-done }()
	const site = "site_fenced"
	waitFor(t, 10*time.Second, "member a holds the site's partition", func() bool { return m.Owns(site) })
	st.SetFence(m.Fence)
	now := time.Now().UTC()
	if err := st.CreateSite(ctx, &sdwan.Site{ID: site, Name: "f", Status: sdwan.SiteOffline, Role: "branch", Segments: []string{}, CreatedAt: now, UpdatedAt: now}, "", nil); err != nil {
		t.Fatal(err)
	}
	evFor := func() *event.Envelope {
		ev, err := event.New(event.DeviceStatusChanged, map[string]any{"site": site})
		if err != nil {
			t.Fatal(err)
		}
		return ev
	}
	if _, err := st.SetSiteStatus(ctx, site, sdwan.SiteUp, now, now, evFor()); err != nil {
		t.Fatalf("status write while the lease holds: %v", err)
	}

	// Controller b takes the partition over (a's local validity has not ended: a is "paused").
	p := Partition(site, m.Partitions())
	if _, err := db.ExecContext(ctx, `UPDATE edgewan_partition_leases SET owner = 'b', epoch = epoch + 1 WHERE partition = $1`, p); err != nil {
		t.Fatal(err)
	}
	if !m.Owns(site) {
		t.Fatal("a stopped believing it owns the site before its validity ended; the test needs the paused case")
	}
	_, err = st.SetSiteStatus(ctx, site, sdwan.SiteOffline, now.Add(time.Second), now.Add(time.Second), evFor())
	if !errors.Is(err, ErrFenced) {
		t.Fatalf("status write after the takeover: %v; want ErrFenced", err)
	}
	got, err := st.GetSite(ctx, site)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != sdwan.SiteUp {
		t.Errorf("site status %q after the fenced write; want the owner-era %q", got.Status, sdwan.SiteUp)
	}
	evs, err := st.ListEvents(ctx, page.Params{Limit: 10, Desc: true}, sdwan.EventFilter{Types: []string{event.DeviceStatusChanged}})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 {
		t.Errorf("%d events stored; want only the one written under the lease", len(evs))
	}
}
