package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/edgewan/edgewan/controller/sdwan"
	"github.com/edgewan/edgewan/controller/store/storetest"
)

// TestSaveFigures: the checkpoint's write of last-seen times, watermarks and transports'
// latest figures, several statements' worth of rows (more than one batch), lands on every
// site and transport named and on nothing else.
func TestSaveFigures(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			s := b.Open(t)
			t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			const n = 300 // 300 sites and 600 transports written: two and three statements
			names := []string{"mpls", "inet"}
			for i := range n + 1 { // the last one is not written
				id := fmt.Sprintf("site_fig%03d", i)
				site := &sdwan.Site{ID: id, Name: id, Status: sdwan.SitePending, Role: "branch", Segments: []string{"corporate"}, CreatedAt: t0, UpdatedAt: t0}
				var ts []*sdwan.Transport
				for j, name := range names {
					ts = append(ts, &sdwan.Transport{ID: fmt.Sprintf("tr_%s%d", id, j), SiteID: id, Name: name, Kind: "broadband",
						Interface: fmt.Sprintf("eth%d", j), ProbeTargets: []string{}, Status: sdwan.TransportUnknown, Cost: j, CreatedAt: t0, UpdatedAt: t0})
				}
				if err := s.CreateSite(ctx, site, "claim_"+id, ts); err != nil {
					t.Fatal(err)
				}
			}
			sites := map[string]sdwan.SiteFigures{}
			var fs []sdwan.TransportFigures
			for i := range n {
				id := fmt.Sprintf("site_fig%03d", i)
				sites[id] = sdwan.SiteFigures{LastSeen: t0.Add(time.Duration(i) * time.Second), StoredSeq: uint64(1000 + i)}
				for j, name := range names {
					fs = append(fs, sdwan.TransportFigures{SiteID: id, Name: name, Status: sdwan.TransportUp,
						LatencyMs: float64(i) + 0.5, LossPct: float64(j) + 0.25, JitterMs: float64(i%7) + 0.125, At: t0.Add(time.Duration(i+j) * time.Millisecond)})
				}
			}
			if err := s.SaveFigures(ctx, sites, fs); err != nil {
				t.Fatal(err)
			}
			for i := range n + 1 {
				id := fmt.Sprintf("site_fig%03d", i)
				got, err := s.GetSite(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				wantSeen, wantSeq := time.Time{}, uint64(0)
				if i < n {
					wantSeen, wantSeq = t0.Add(time.Duration(i)*time.Second), uint64(1000+i)
				}
				if !got.LastSeen.Equal(wantSeen) && !(wantSeen.IsZero() && got.LastSeen.UnixMicro() == 0) || got.StoredSeq != wantSeq {
					t.Errorf("%s: last seen %v, stored %d; want %v, %d", id, got.LastSeen, got.StoredSeq, wantSeen, wantSeq)
				}
				for j, tr := range got.Transports {
					if i == n {
						if tr.Status != sdwan.TransportUnknown || tr.LatencyMs != 0 {
							t.Errorf("%s/%s, not written: %s %v", id, tr.Name, tr.Status, tr.LatencyMs)
						}
						continue
					}
					k := map[string]int{"mpls": 0, "inet": 1}[tr.Name]
					want := fs[2*i+k]
					if tr.Status != want.Status || tr.LatencyMs != want.LatencyMs || tr.LossPct != want.LossPct || tr.JitterMs != want.JitterMs || !tr.LastSampleAt.Equal(want.At) {
						t.Errorf("%s/%s (%d): %s %v %v %v %v; want %+v", id, tr.Name, j, tr.Status, tr.LatencyMs, tr.LossPct, tr.JitterMs, tr.LastSampleAt, want)
					}
				}
			}
		})
	}
}
