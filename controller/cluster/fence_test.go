package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/edgewan/edgewan/controller/sdwan"
	"github.com/edgewan/edgewan/controller/store"
	"github.com/edgewan/edgewan/controller/store/storetest"
	"github.com/edgewan/edgewan/coreapi/event"
	"github.com/edgewan/edgewan/coreapi/page"
)

// TestFencedWrites: every write only a site's owner may make runs the member's fence in its
// own transaction: status changes with their events (SetSiteStatus), other site events
// (InsertEvents: path decisions), the latest figures and stored watermarks (SaveFigures) and
// rollout states (SetRollout). While the lease holds they are stored; once another controller
// has taken the partition (its epoch moved on) while this one still believes it holds it, as a
// paused process would, each is refused with ErrFenced and nothing of it is stored. A figures
// batch over two partitions writes the held one's site and names only the other as fenced.
// The member that met the takeover drops the lease at once (it no longer Owns the site).
func TestFencedWrites(t *testing.T) {
	u := storetest.PostgresURL(t)
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{DatabaseURL: u})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	db := openDBURL(t, u)
	relc := make(chan int, 16)
	m, err := New(ctx, Options{DB: db, ID: "a", TTL: time.Minute, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), // validity outlives the test
		OnRelease: func(p int) { relc <- p }})
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = m.Run(rctx) }()
	defer func() { cancel(); <-done }()

	// Two sites in different partitions: "fenced" will be taken over, "kept" stays a's.
	const fencedSite = "site_fenced"
	keptSite := ""
	for i := 0; keptSite == ""; i++ {
		if id := fmt.Sprintf("site_kept%d", i); Partition(id, m.Partitions()) != Partition(fencedSite, m.Partitions()) {
			keptSite = id
		}
	}
	waitFor(t, 10*time.Second, "member a holds both sites' partitions", func() bool { return m.Owns(fencedSite) && m.Owns(keptSite) })
	st.SetFence(m)
	now := time.Now().UTC().Truncate(time.Microsecond)
	for _, id := range []string{fencedSite, keptSite} {
		if err := st.CreateSite(ctx, &sdwan.Site{ID: id, Name: id, Status: sdwan.SiteOffline, Role: "branch", Segments: []string{}, CreatedAt: now, UpdatedAt: now}, "",
			[]*sdwan.Transport{{ID: "tr_" + id, SiteID: id, Name: "wan1", Kind: "fiber", Interface: "eth0", ProbeTargets: []string{}, Status: "unknown", CreatedAt: now, UpdatedAt: now}}); err != nil {
			t.Fatal(err)
		}
	}
	p := &sdwan.Policy{ID: "pol_fenced", Name: "fenced", Type: sdwan.TypeSteering, CreatedAt: now, UpdatedAt: now}
	if err := st.CreatePolicy(ctx, p, &sdwan.Version{Version: 1, Status: "draft", Content: json.RawMessage(`{}`), CreatedBy: "key_x", CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if err := st.PublishPolicy(ctx, p.ID, 1, []string{fencedSite}, sdwan.TypeSteering,
		&sdwan.Change{ID: "chg_fenced", Kind: "policy.published", Actor: "key_x", Target: p.ID, Version: 1, Sites: []string{fencedSite}, CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	evFor := func(typ, site string) *event.Envelope {
		ev, err := event.New(typ, map[string]any{"site": site})
		if err != nil {
			t.Fatal(err)
		}
		return ev
	}
	figures := func(at time.Time, seq uint64) error {
		return st.SaveFigures(ctx, map[string]sdwan.SiteFigures{fencedSite: {LastSeen: at, StoredSeq: seq}, keptSite: {LastSeen: at, StoredSeq: seq}},
			[]sdwan.TransportFigures{{SiteID: fencedSite, Name: "wan1", Status: "up", LatencyMs: seq2ms(seq), At: at}, {SiteID: keptSite, Name: "wan1", Status: "up", LatencyMs: seq2ms(seq), At: at}})
	}

	// Under the lease: every write is stored.
	if _, err := st.SetSiteStatus(ctx, fencedSite, sdwan.SiteUp, now, now, evFor(event.DeviceStatusChanged, fencedSite)); err != nil {
		t.Fatalf("status write while the lease holds: %v", err)
	}
	if _, err := st.InsertEvents(ctx, evFor(event.PathSwitched, fencedSite)); err != nil {
		t.Fatalf("event write while the lease holds: %v", err)
	}
	if err := figures(now, 10); err != nil {
		t.Fatalf("figures while the lease holds: %v", err)
	}
	if ok, err := st.SetRollout(ctx, fencedSite, p.ID, 1, sdwan.RolloutApplied, "", now); err != nil || !ok {
		t.Fatalf("rollout write while the lease holds: %v, %v", ok, err)
	}

	// Controller b takes the partition over (a's local validity has not ended: a is "paused").
	part := Partition(fencedSite, m.Partitions())
	if _, err := db.ExecContext(ctx, `UPDATE edgewan_partition_leases SET owner = 'b', epoch = epoch + 1 WHERE partition = $1`, part); err != nil {
		t.Fatal(err)
	}
	if !m.Owns(fencedSite) {
		t.Fatal("a stopped believing it owns the site before its validity ended; the test needs the paused case")
	}
	later := now.Add(time.Second)
	writes := []struct {
		name  string
		write func() error
	}{
		{"status", func() error {
			_, err := st.SetSiteStatus(ctx, fencedSite, sdwan.SiteOffline, later, later, evFor(event.DeviceStatusChanged, fencedSite))
			return err
		}},
		{"events", func() error { _, err := st.InsertEvents(ctx, evFor(event.PathSwitched, fencedSite)); return err }},
		{"figures", func() error { return figures(later, 20) }},
		{"rollout", func() error {
			_, err := st.SetRollout(ctx, fencedSite, p.ID, 1, sdwan.RolloutFailed, "late", later)
			return err
		}},
	}
	for i, w := range writes {
		err := w.write()
		var fe *store.FencedError
		if !errors.Is(err, store.ErrFenced) || !errors.As(err, &fe) || !slices.Equal(fe.Sites, []string{fencedSite}) {
			t.Errorf("%s write after the takeover: %v; want ErrFenced naming only %s", w.name, err, fencedSite)
		}
		if i == 0 { // the first refusal dropped the lease here at once
			select {
			case got := <-relc:
				if got != part {
					t.Errorf("OnRelease(%d); want the taken partition %d", got, part)
				}
			case <-time.After(5 * time.Second):
				t.Error("the member kept the taken lease after a fenced write")
			}
			if m.Owns(fencedSite) {
				t.Error("a still Owns the site after a fenced write")
			}
		}
	}

	got, err := st.GetSite(ctx, fencedSite)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != sdwan.SiteUp || got.StoredSeq != 10 || !got.LastSeen.Equal(now) {
		t.Errorf("fenced site: status %q, stored %d, last seen %v after the fenced writes; want the owner-era up, 10, %v", got.Status, got.StoredSeq, got.LastSeen, now)
	}
	if ts, err := st.SiteTransports(ctx, fencedSite); err != nil || len(ts) != 1 || ts[0].LatencyMs != seq2ms(10) {
		t.Errorf("fenced site's transport: %+v, %v; want the owner-era latency %v", ts, err, seq2ms(10))
	}
	kept, err := st.GetSite(ctx, keptSite)
	if err != nil {
		t.Fatal(err)
	}
	if kept.StoredSeq != 20 || !kept.LastSeen.Equal(later) {
		t.Errorf("kept site: stored %d, last seen %v; want 20, %v (its partition is still a's)", kept.StoredSeq, kept.LastSeen, later)
	}
	for typ, want := range map[string]int{event.DeviceStatusChanged: 1, event.PathSwitched: 1} {
		evs, err := st.ListEvents(ctx, page.Params{Limit: 10, Desc: true}, sdwan.EventFilter{Types: []string{typ}})
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != want {
			t.Errorf("%d %s events stored; want only the %d written under the lease", len(evs), typ, want)
		}
	}
	pol, err := st.GetPolicy(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(pol.Rollout) != 1 || pol.Rollout[0].State != sdwan.RolloutApplied {
		t.Errorf("rollout after the fenced write: %+v; want the owner-era applied", pol.Rollout)
	}
}

func seq2ms(seq uint64) float64 { return float64(seq) + 0.5 }
