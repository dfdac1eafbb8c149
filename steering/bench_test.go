package steering

import (
	"runtime"
	"testing"
	"time"
)

// benchInput is window i of transport ti: noisy but within every SLA of testClasses, except
// that when flapping mpls misses voice's SLA 3 windows out of 50 and is Down 1 in 200.
func benchInput(i, ti int, flapping bool) Metrics {
	// a window of 5 probes, as WindowMetrics makes them: the Detector's path
	lost := (i + ti) % 50 / 49 // 0.4 % of the probes
	m := Metrics{LatencyMs: 20 + float64((i*7+ti*13)%40), LossPct: float64(lost) * 20, JitterMs: 2 + float64((i*3+ti)%9),
		Probes: 5, Lost: lost, LatencySDMs: 3, JitterN: 3, JitterSDMs: 1.5}
	if flapping && ti == 0 {
		switch {
		case i%200 == 100:
			m.Down = true
		case i%50 < 3:
			m.LatencyMs = 400
		}
	}
	return m
}

func TestObserveEvaluateDoNotAllocate(t *testing.T) {
	tests := []struct {
		name     string
		opts     Options
		flapping bool
	}{
		{"steady", DefaultOptions(), false},
		{"flapping, decisions into a reused buffer", DefaultOptions(), true},
		{"flapping, short hold-down and half-life", func() Options {
			o := DefaultOptions()
			o.HoldDown, o.Damping.HalfLife = time.Second, 10*time.Second
			return o
		}(), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestSite(t, tt.opts)
			out := make([]Decision, 0, 64)
			i, decisions := 0, 0
			allocs := testing.AllocsPerRun(10_000, func() {
				i++
				now := at(i)
				for ti, name := range testTransports {
					s.Observe(now, name, benchInput(i, ti, tt.flapping))
				}
				out = s.Evaluate(now, out[:0])
				decisions += len(out)
			})
			if allocs != 0 {
				t.Errorf("allocs per Observe+Evaluate: got %v; want 0", allocs)
			}
			if tt.flapping && decisions == 0 {
				t.Errorf("decisions: got 0; want some, mpls flaps")
			}
		})
	}
}

// BenchmarkEvaluate is one site, 3 transports, 4 classes, one window per transport and an
// Evaluate per op: the work per site per second on the controller, per probe window on the
// agent.
func BenchmarkEvaluate(b *testing.B) {
	for _, flapping := range []bool{false, true} {
		name := "steady"
		if flapping {
			name = "flapping"
		}
		b.Run(name, func(b *testing.B) {
			s := newTestSite(b, DefaultOptions())
			out := make([]Decision, 0, 64)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				now := at(i)
				for ti, name := range testTransports {
					s.Observe(now, name, benchInput(i, ti, flapping))
				}
				out = s.Evaluate(now, out[:0])
			}
		})
	}
}

// BenchmarkControllerSecond is one second of the controller: 10,000 sites of 3 transports and
// 4 classes, a window per transport and an Evaluate per site. ns/op is the whole second's CPU.
func BenchmarkControllerSecond(b *testing.B) {
	const n = 10_000
	sites := make([]*Site, n)
	for i := range sites {
		sites[i] = newTestSite(b, DefaultOptions())
	}
	out := make([]Decision, 0, 64)
	b.ReportAllocs()
	for sec := 0; b.Loop(); sec++ {
		now := at(sec)
		for k, s := range sites {
			for ti, name := range testTransports {
				s.Observe(now, name, benchInput(sec+k, ti, k%10 == 0)) // one site in ten flaps
			}
			out = s.Evaluate(now, out[:0])
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/site")
}

// BenchmarkSiteMemory reports the heap held by one Site of 3 transports and 4 classes, over
// 10,000 of them (names are shared with the caller's strings, as NewSite keeps them).
func BenchmarkSiteMemory(b *testing.B) {
	const n = 10_000
	classes := testClasses()
	var perSite float64
	for b.Loop() {
		sites := make([]*Site, n)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range sites {
			s, err := NewSite(testTransports, classes, DefaultOptions())
			if err != nil {
				b.Fatal(err)
			}
			sites[i] = s
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		perSite = float64(after.HeapAlloc-before.HeapAlloc) / n
		runtime.KeepAlive(sites)
	}
	b.ReportMetric(perSite, "bytes/site")
}
