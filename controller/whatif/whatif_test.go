package whatif_test

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/edgewan/edgewan/controller/whatif"
	"github.com/edgewan/edgewan/steering"
	"github.com/edgewan/edgewan/telemetry/sink"
)

func TestScale(t *testing.T) {
	live := steering.DefaultOptions()
	tests := []struct {
		name          string
		breach, recov int
		window        time.Duration
		wantB, wantR  int
	}{
		{"defaults, 1 s windows", 3, 10, time.Second, 1, 1},
		{"zero window is 1 s", 3, 10, 0, 1, 1},
		{"90 windows of 1 s", 90, 120, time.Second, 2, 2},
		{"10 s windows", 7, 13, 10 * time.Second, 2, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			live.BreachAfter, live.RecoverAfter = tc.breach, tc.recov
			o := whatif.Scale(live, tc.window)
			if o.BreachAfter != tc.wantB || o.RecoverAfter != tc.wantR || o.HoldDown != live.HoldDown || o.Damping != live.Damping {
				t.Errorf("Scale: %+v; want breach %d, recover %d, hold-down and damping kept", o, tc.wantB, tc.wantR)
			}
		})
	}
}

func TestMetrics(t *testing.T) {
	r := sink.Rollup{LatencyMs: 40, P95Ms: 90, LossPct: 1.5, JitterMs: 3, Windows: 60}
	if m := whatif.Metrics(&r, whatif.Mean); m != (steering.Metrics{LatencyMs: 40, LossPct: 1.5, JitterMs: 3}) {
		t.Errorf("mean: %+v", m)
	}
	if m := whatif.Metrics(&r, whatif.P95); m.LatencyMs != 90 || m.Down {
		t.Errorf("p95: %+v", m)
	}
	r.DownWindows = 1 // one Down window of 60: live, that failed over at once
	if m := whatif.Metrics(&r, whatif.Mean); !m.Down {
		t.Errorf("a minute with a Down window: %+v; want Down", m)
	}
	for _, v := range []string{"", "mean", "p95"} {
		if _, err := whatif.ParseStatistic(v); err != nil {
			t.Errorf("ParseStatistic(%q): %v", v, err)
		}
	}
	if _, err := whatif.ParseStatistic("max"); err == nil {
		t.Error("ParseStatistic(max): no error")
	}
}

// TestRunOrder: the outcomes do not depend on the order the rows come in (by time, by
// transport then time as the sinks return them, or shuffled), and the time on paths adds up to
// the minutes replayed.
func TestRunOrder(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	byTime := fleetDay(nil, 42, start)
	byTransport := slices.Clone(byTime)
	slices.SortStableFunc(byTransport, func(a, b sink.Rollup) int {
		if a.Transport != b.Transport {
			return map[string]int{"mpls": 0, "inet": 1, "lte": 2}[a.Transport] - map[string]int{"mpls": 0, "inet": 1, "lte": 2}[b.Transport]
		}
		return a.Time.Compare(b.Time)
	})
	shuffled := slices.Clone(byTime)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	o := whatif.Options{Steering: steering.DefaultOptions(), LiveWindow: time.Second, Latency: whatif.Mean}
	var want string
	for i, rows := range [][]sink.Rollup{byTime, byTransport, shuffled} {
		s := whatif.NewSite(benchTransports, o, benchDraft, benchPublished)
		s.Run(rows)
		if s.Minutes() != 1440 {
			t.Fatalf("order %d: %d minutes; want 1440", i, s.Minutes())
		}
		for side := range 2 {
			for _, oc := range s.Outcomes(side) {
				var sum int64
				for _, v := range oc.TimeOnPathS {
					sum += v
				}
				if sum != 1440*60 {
					t.Errorf("order %d side %d: %d s on paths; want %d", i, side, sum, 1440*60)
				}
			}
		}
		got, _ := json.Marshal([][]whatif.Outcome{s.Outcomes(0), s.Outcomes(1)})
		if i == 0 {
			want = string(got)
			if !json.Valid(got) || s.Outcomes(0)[0].PathSwitches == 0 {
				t.Fatalf("the day's bad stretches switched nothing: %s", got)
			}
		} else if string(got) != want {
			t.Errorf("order %d gives\n%s\nwant\n%s", i, got, want)
		}
	}
}

// TestPolicyTheSiteCannotRun: a draft naming a transport the site lacks is an error for that
// side only.
func TestPolicyTheSiteCannotRun(t *testing.T) {
	o := whatif.Options{Steering: steering.DefaultOptions(), LiveWindow: time.Second}
	bad := whatif.Policy{{Name: "voice", Preferred: []string{"5g"}}}
	s := whatif.NewSite(benchTransports, o, bad, benchPublished)
	if s.Err(0) == nil || s.Err(1) != nil || s.Outcomes(0) != nil {
		t.Fatalf("errors %v, %v; outcomes %v", s.Err(0), s.Err(1), s.Outcomes(0))
	}
	s.Run(fleetDay(nil, 1, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
	if len(s.Outcomes(1)) != 3 {
		t.Errorf("the published side did not run: %v", s.Outcomes(1))
	}
}
