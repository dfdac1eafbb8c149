package sdwan_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/edgewan/edgewan/controller/sdwan"
	"github.com/edgewan/edgewan/controller/store/storetest"
	"github.com/edgewan/edgewan/telemetry"
	"github.com/edgewan/edgewan/telemetry/sink"
)

// failingHistory is the embedded store, but reading one site's history fails.
type failingHistory struct {
	*sink.EmbeddedSink
	site string
}

func (h failingHistory) Minutes(ctx context.Context, site string, from, to time.Time, buf []sink.Rollup) ([]sink.Rollup, error) {
	if site == h.site {
		return buf, errors.New("disk on fire")
	}
	return h.EmbeddedSink.Minutes(ctx, site, from, to, buf)
}

// failingStore is the database, but reading the batch of sites holding one site fails.
type failingStore struct {
	sdwan.Store
	site string
}

func (f failingStore) AssignmentsOf(ctx context.Context, ids []string) (map[string][]*sdwan.Assignment, error) {
	if slices.Contains(ids, f.site) {
		return nil, errors.New("database on fire")
	}
	return f.Store.AssignmentsOf(ctx, ids)
}

// TestSimulateStreamsInOrder: with more sites than the workers' window, every site is
// replayed once and the answer lists them in order (the workers finish out of order); a site
// whose history cannot be read ends the answer there with complete false and the error. The
// sites' database rows are read in batches smaller than the fleet.
func TestSimulateStreamsInOrder(t *testing.T) {
	ctx := context.Background()
	st := storetest.SQLite(t)
	svc := sdwan.NewService(st, sdwan.Options{}, nil)
	es, err := sink.NewEmbedded(sink.EmbeddedOptions{DataDir: t.TempDir(), PruneInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer es.Close()
	_, policyID := simFixture(t, svc)
	var ids []string
	base := time.Now().UTC().Truncate(time.Minute).Add(-30 * time.Minute)
	for i := range 37 {
		site, err := svc.CreateSite(ctx, sdwan.CreateSiteRequest{Name: fmt.Sprintf("s%d", i), Transports: []sdwan.CreateTransportRequest{{Name: "inet", Interface: "eth0"}}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, site.ID)
		for m := range 1 + i%5 { // sites with more minutes take longer
			r := &telemetry.Report{V: telemetry.SchemaVersion, Site: site.ID, Device: "d", Time: base.Add(time.Duration(m) * time.Minute),
				Transport: []telemetry.TransportWindow{{Name: "inet", Sent: 5, LatencyMs: float64(50 + 20*(m%2))}}}
			if err := es.Write(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
	}
	ids = append(ids, "site_nosuchsite")
	sorted := slices.Sorted(slices.Values(ids))
	// The site whose history fails must exist (a missing one is never read): the 21st in
	// order, or the 22nd when the missing one sorts 21st (random IDs: 1 run in 38).
	failAt := 20
	if sorted[failAt] == "site_nosuchsite" {
		failAt++
	}

	for _, tc := range []struct {
		name    string
		history sdwan.History
		store   sdwan.Store // nil: st
		want    int         // sites listed
		errText string
	}{
		{"all sites", es, nil, len(ids), ""},
		{"a site's history fails", failingHistory{es, sorted[failAt]}, nil, failAt, "disk on fire"},
		{"a batch's database read fails", es, failingStore{st, sorted[22]}, 20, "database on fire"}, // the batch of sites 20-24
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := svc
			if tc.store != nil {
				svc = sdwan.NewService(tc.store, sdwan.Options{}, nil)
			}
			svc.SetHistory(tc.history, sdwan.SimulationOptions{Workers: 3, Batch: 5}) // 8 batches, the last short
			run, err := svc.Simulate(ctx, policyID, 1, sdwan.SimulateRequest{Window: "1h", Sites: ids}, "")
			if err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			flushes := 0
			err = run.Stream(ctx, &out, func() { flushes++ })
			var res struct {
				Sites    []sdwan.SimulationSite  `json:"sites"`
				Summary  sdwan.SimulationSummary `json:"summary"`
				Complete bool                    `json:"complete"`
				Error    string                  `json:"error"`
			}
			if jerr := json.Unmarshal([]byte(out.String()), &res); jerr != nil {
				t.Fatalf("answer is not JSON (%v): %s", jerr, out.String())
			}
			if len(res.Sites) != tc.want {
				t.Fatalf("%d sites listed; want %d", len(res.Sites), tc.want)
			}
			for i, s := range res.Sites {
				if s.Site != sorted[i] {
					t.Fatalf("site %d is %s; want %s", i, s.Site, sorted[i])
				}
			}
			if tc.errText == "" {
				if err != nil || !res.Complete || res.Summary.Sites != len(ids) || res.Summary.SitesFailed != 1 || flushes < len(ids)/12 {
					t.Fatalf("Stream: %v; complete %v, summary %+v, %d flushes", err, res.Complete, res.Summary, flushes)
				}
				for _, s := range res.Sites {
					i := slices.Index(ids, s.Site)
					if i == len(ids)-1 && s.Error != "no such site" || i < len(ids)-1 && s.Minutes != 1+i%5 {
						t.Errorf("site %d: %+v; want %d minutes", i, s, 1+i%5)
					}
				}
				return
			}
			// The client is told of an internal error; the error returned (logged) says which.
			if err == nil || !strings.Contains(err.Error(), tc.errText) || res.Complete || !strings.Contains(res.Error, "internal error") {
				t.Fatalf("Stream: %v; complete %v, error %q; want the history's error", err, res.Complete, res.Error)
			}
		})
	}
}
