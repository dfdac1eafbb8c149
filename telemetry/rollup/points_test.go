package rollup

import (
	"testing"
	"time"
)

func TestPoints(t *testing.T) {
	tests := []struct {
		name     string
		adds     []add
		now      time.Duration
		window   time.Duration
		wantStep time.Duration
		want     []Point // At, Samples, LatencyMs, LossPct checked
	}{
		{
			name:     "empty window has gaps only",
			now:      30 * time.Second,
			window:   2 * time.Minute,
			wantStep: time.Minute,
			want:     []Point{{At: at(-2 * time.Minute)}, {At: at(-time.Minute)}, {At: at(0)}},
		},
		{
			name: "minute buckets, a gap in the middle",
			adds: []add{
				{at: -2*time.Minute + 10*time.Second, w: tw(10, 0, 20, 1, 25), want: true},
				{at: -2*time.Minute + 20*time.Second, w: tw(10, 0, 40, 1, 45), want: true},
				{at: 5 * time.Second, w: tw(10, 5, 100, 1, 110), want: true},
			},
			now:      30 * time.Second,
			window:   2 * time.Minute,
			wantStep: time.Minute,
			want: []Point{
				{At: at(-2 * time.Minute), Samples: 2, LatencyMs: 30},
				{At: at(-time.Minute)},
				{At: at(0), Samples: 1, LatencyMs: 100, LossPct: 50},
			},
		},
		{
			name:     "a day is answered from 15-minute buckets",
			adds:     []add{{at: 0, w: tw(10, 0, 20, 1, 25), want: true}},
			now:      0,
			window:   24 * time.Hour,
			wantStep: 15 * time.Minute,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewStore()
			for _, a := range tc.adds {
				w := a.w
				if got := s.Add(at(a.at), "site_a", &w); got != a.want {
					t.Fatalf("Add at %v: got %v; want %v", a.at, got, a.want)
				}
			}
			step, series := s.SitePoints(at(tc.now), "site_a", tc.window)
			if len(tc.adds) == 0 {
				var se Series
				step, pts := se.Points(at(tc.now), tc.window)
				series = []TransportPoints{{Transport: "wan1", Points: pts}}
				if step != tc.wantStep {
					t.Fatalf("step: got %v; want %v", step, tc.wantStep)
				}
			} else if step != tc.wantStep {
				t.Fatalf("step: got %v; want %v", step, tc.wantStep)
			}
			if len(series) != 1 || series[0].Transport != "wan1" {
				t.Fatalf("got %+v; want one series for wan1", series)
			}
			pts := series[0].Points
			if tc.want == nil {
				if n := len(pts); n != 97 {
					t.Fatalf("points: got %d; want 97 (24h of 15m buckets, both ends)", n)
				}
				return
			}
			if len(pts) != len(tc.want) {
				t.Fatalf("points: got %d (%+v); want %d", len(pts), pts, len(tc.want))
			}
			for i, w := range tc.want {
				g := pts[i]
				if !g.At.Equal(w.At) || g.Samples != w.Samples || g.LatencyMs != w.LatencyMs || g.LossPct != w.LossPct {
					t.Errorf("point %d: got %+v; want %+v", i, g, w)
				}
			}
		})
	}
	if _, pts := NewStore().SitePoints(t0, "nope", time.Hour); pts != nil {
		t.Errorf("unknown site: got %+v; want nil", pts)
	}
}
