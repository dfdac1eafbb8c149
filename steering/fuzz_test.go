package steering

import (
	"math"
	"testing"
	"time"
)

// fuzzInput reads a fuzzer's bytes as decisions; past the end it reads zeros.
type fuzzInput []byte

func (in *fuzzInput) byte() int {
	if len(*in) == 0 {
		return 0
	}
	b := (*in)[0]
	*in = (*in)[1:]
	return int(b)
}

var fuzzNames = []string{"t0", "t1", "t2", "t3", "t4", "t5"}

func (in *fuzzInput) metrics() Metrics {
	b := in.byte()
	v := float64(b>>3) * 10 // 0..310
	switch b % 8 {
	case 0:
		return Metrics{LatencyMs: 10, JitterMs: 1}
	case 1:
		return Metrics{LatencyMs: v, JitterMs: v / 10}
	case 2:
		return Metrics{LatencyMs: v * 3, LossPct: v / 20, JitterMs: v / 4}
	case 3:
		return Metrics{Down: true}
	case 4:
		return Metrics{LatencyMs: math.NaN(), LossPct: v / 30}
	case 5:
		return Metrics{LossPct: math.Inf(1)}
	case 6:
		return Metrics{LatencyMs: -v, LossPct: -1, JitterMs: -v}
	}
	m := Metrics{LatencyMs: v / 2, LossPct: float64(b % 7), JitterMs: v}
	if c := in.byte(); c%2 == 1 { // sample counts for the Detector, sometimes inconsistent
		m.Probes, m.Lost, m.JitterN, m.LatencySDMs, m.JitterSDMs = int(c>>1)%40-1, int(c>>3)-2, int(c>>2)%30-1, v/3, v/5
	}
	return m
}

func (in *fuzzInput) classes(transports []string) []Class {
	classes := make([]Class, in.byte()%5)
	for i := range classes {
		b := in.byte()
		classes[i] = Class{
			Name: fuzzNames[i],
			SLA: Thresholds{
				MaxLatencyMs: []float64{0, 50, 150, 300}[b%4],
				MaxLossPct:   []float64{0, 1, 5}[b/4%3],
				MaxJitterMs:  []float64{0, 10, 30}[b/12%3],
			},
		}
		for range in.byte() % (len(transports) + 1) {
			name := transports[in.byte()%len(transports)]
			if !contains(classes[i].Preferred, name) {
				classes[i].Preferred = append(classes[i].Preferred, name)
			}
		}
	}
	return classes
}

func contains(names []string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

// FuzzSite drives a site with windows, evaluations, clock steps and new policies decoded from
// the input, and checks the invariants of checker after every Evaluate and Reconfigure.
func FuzzSite(f *testing.F) {
	f.Add([]byte{2, 2, 4, 3, 0, 1, 3, 17, 2, 0, 1, 0, 3, 8, 0, 5, 10, 0, 3, 8, 3, 5, 10, 8, 0, 5, 10})
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 3, 5, 1, 0, 0, 5, 1, 6, 0xff, 2, 1, 1, 0, 5, 1})
	f.Add([]byte{3, 3, 2, 5, 1, 1, 0x21, 4, 9, 3, 1, 2, 3, 0, 2, 1, 2, 0, 4, 0, 5, 20, 8, 4, 16, 6, 5, 20, 7, 200, 5, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		in := fuzzInput(data)
		transports := fuzzNames[:1+in.byte()%4]
		o := Options{
			BreachAfter:  1 + in.byte()%4,
			RecoverAfter: 1 + in.byte()%6,
			HoldDown:     time.Duration(in.byte()%16) * time.Second,
			ScoreMargin:  float64(in.byte()%3) / 2,
		}
		if b := in.byte(); b%2 == 1 {
			o.Degraded = DefaultOptions().Degraded
		}
		if b := in.byte(); b%4 == 1 {
			o.Detector = DefaultDetector()
		}
		if b := in.byte(); b%2 == 1 {
			o.Damping = Damping{HalfLife: time.Duration(1+b/2) * time.Second, Penalty: float64(500 * (1 + b%5)), Suppress: 2000, Reuse: 750, Max: 6000}
		}
		c := newChecker(t, transports, in.classes(transports), o, false)
		now := t0
		for len(in) > 0 {
			switch op := in.byte(); op % 8 {
			case 5:
				now = now.Add(time.Duration(in.byte()) * 100 * time.Millisecond)
				c.evaluate(now)
			case 6:
				mask := in.byte()
				var next []string
				for i, name := range fuzzNames {
					if mask&(1<<i) != 0 {
						next = append(next, name)
					}
				}
				if len(next) == 0 {
					next = fuzzNames[:1]
				}
				c.reconfigure(now, next, in.classes(next))
				transports = next
			case 7:
				now = now.Add(time.Duration(in.byte()) * time.Second)
			case 4: // a dead-link verdict revoked by a late answer (refused unless Down)
				c.s.Revoke(now, fuzzNames[(op>>3)%len(fuzzNames)], float64(in.byte())*4)
			default: // a window, sometimes of a transport not in the site
				c.observe(now, fuzzNames[(op>>3)%len(fuzzNames)], in.metrics())
			}
		}
		c.evaluate(now)
	})
}
