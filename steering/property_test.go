package steering

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// The property tests run thousands of seeded random scenarios; a failure names its seed, and
// rerunning with that seed (scenario) reproduces it.

// randOptions returns random valid Options: small counts, HoldDown up to a minute (sometimes
// 0), damping off, default or random (sometimes suppressing at the first failure).
func randOptions(r *rand.Rand) Options {
	o := Options{
		BreachAfter:  1 + r.IntN(5),
		RecoverAfter: 1 + r.IntN(10),
		ScoreMargin:  []float64{0, 0.25, 1}[r.IntN(3)],
	}
	if r.IntN(5) > 0 {
		o.HoldDown = time.Duration(r.Int64N(int64(time.Minute)))
	}
	if r.IntN(2) == 0 {
		o.Degraded = DefaultOptions().Degraded
	}
	switch r.IntN(3) {
	case 1:
		o.Damping = DefaultOptions().Damping
	case 2:
		s := 100 + 3000*r.Float64()
		o.Damping = Damping{
			HalfLife: 1 + time.Duration(r.Int64N(int64(10*time.Minute))),
			Penalty:  100 + 2000*r.Float64(),
			Suppress: s,
			Reuse:    s * (0.05 + 0.9*r.Float64()),
			Max:      s * (1 + 3*r.Float64()),
		}
	}
	if r.IntN(2) == 0 { // the evidence detector, for windows with sample counts
		o.Detector = Detector{Alpha: 1e-4 + 0.1*r.Float64(), Beta: 1e-3 + 0.2*r.Float64(), LossRatio: 1.1 + 3*r.Float64(),
			Margin: 0.05 + 0.5*r.Float64()}
		o.Detector.FastLossRatio = o.Detector.LossRatio * (1.1 + 10*r.Float64())
	}
	if err := o.Validate(); err != nil {
		panic(err)
	}
	return o
}

// randClasses returns up to max classes with random SLAs (each bound sometimes unchecked)
// and random Preferred lists drawn from transports.
func randClasses(r *rand.Rand, transports []string, max int) []Class {
	classes := make([]Class, r.IntN(max+1))
	bound := func(lo, hi float64) float64 {
		if r.IntN(4) == 0 {
			return 0
		}
		return lo + (hi-lo)*r.Float64()
	}
	for i := range classes {
		classes[i] = Class{
			Name: fmt.Sprint("c", i),
			SLA:  Thresholds{MaxLatencyMs: bound(50, 300), MaxLossPct: bound(0.5, 5), MaxJitterMs: bound(5, 60)},
		}
		for _, k := range r.Perm(len(transports))[:r.IntN(len(transports)+1)] {
			classes[i].Preferred = append(classes[i].Preferred, transports[k])
		}
	}
	return classes
}

// orderOf is a class's transports best first, as documented on Class.Preferred.
func orderOf(c Class, transports []string) []string {
	order := slices.Clone(c.Preferred)
	for _, t := range transports {
		if !slices.Contains(order, t) {
			order = append(order, t)
		}
	}
	return order
}

// randMetrics returns anything a prober or a bug could send: good, bad, partly bad, Down,
// NaN, infinite or negative values.
func randMetrics(r *rand.Rand) Metrics {
	v := func() float64 {
		switch r.IntN(12) {
		case 0:
			return math.NaN()
		case 1:
			return math.Inf(1)
		case 2:
			return -r.Float64() * 10
		}
		return r.ExpFloat64() * 100
	}
	if r.IntN(8) == 0 {
		return Metrics{Down: true}
	}
	m := Metrics{LatencyMs: v(), LossPct: v() / 20, JitterMs: v() / 5}
	if r.IntN(2) == 0 { // sample counts, sometimes inconsistent
		m.Probes = r.IntN(50) - 2
		m.Lost = r.IntN(max(m.Probes+3, 1)) - 1
		m.JitterN = r.IntN(50) - 2
		m.LatencySDMs, m.JitterSDMs = v(), v()/5
	}
	return m
}

// behaviour is how one transport's windows go in a random scenario.
type behaviour func(r *rand.Rand, i int) Metrics

func randBehaviour(r *rand.Rand) behaviour {
	fixed := randMetrics(r)
	period := 2 + r.IntN(100)
	badRun, phase := 1+r.IntN(period-1), r.IntN(period)
	switch r.IntN(4) {
	case 0:
		return func(*rand.Rand, int) Metrics { return fixed }
	case 1:
		return func(r *rand.Rand, i int) Metrics {
			if (i+phase)%period < badRun {
				return Metrics{Down: r.IntN(2) == 0, LatencyMs: 1000, LossPct: 50, JitterMs: 500}
			}
			return Metrics{LatencyMs: 10, JitterMs: 1}
		}
	case 2:
		return func(r *rand.Rand, _ int) Metrics { return randMetrics(r) }
	}
	return func(*rand.Rand, int) Metrics { return Metrics{LatencyMs: 10, JitterMs: 1} }
}

func TestPropertyRandomInput(t *testing.T) {
	const scenarios, steps = 2000, 300
	for seed := range uint64(scenarios) {
		r := rand.New(rand.NewPCG(seed, 1))
		transports := []string{"t0", "t1", "t2", "t3"}[:1+r.IntN(4)]
		o := randOptions(r)
		c := newChecker(t, transports, randClasses(r, transports, 4), o, true)
		behaviours := map[string]behaviour{}
		now, w := t0, time.Duration(100+r.IntN(2000))*time.Millisecond
		for i := range steps {
			if r.IntN(100) == 0 { // a new policy: some transports go, some come
				var next []string
				for _, name := range []string{"t0", "t1", "t2", "t3", "t4", "t5"} {
					if r.IntN(2) == 0 {
						next = append(next, name)
					}
				}
				if len(next) == 0 {
					next = []string{"t5"}
				}
				c.reconfigure(now, next, randClasses(r, next, 4))
				transports = next
			}
			now = now.Add(time.Duration(r.Int64N(int64(2 * w)))) // sometimes 0
			for _, name := range transports {
				if r.IntN(5) == 0 {
					continue // no window from this one
				}
				if behaviours[name] == nil {
					behaviours[name] = randBehaviour(r)
				}
				c.observe(now, name, behaviours[name](r, i))
			}
			c.evaluate(now)
		}
	}
}

// TestPropertyFlapping: one transport F flaps (Down, bad for every class, bad for some,
// NaN) with any period, random or periodic, windows of jittered length; the others are
// steady and good. For every class, whatever the options:
//   - if F is not first in its order, it never switches;
//   - otherwise it alternates between F and H, the first other transport of its order:
//     F > H forced (down or sla), H > F preferred, at least HoldDown after F > H;
//   - any 3 consecutive switches span at least HoldDown: at most 2 in any interval shorter
//     than HoldDown;
//   - with damping, Reuse < Suppress/2: returns to F within any interval of length
//     HalfLife number at most ceil(2*Suppress/Penalty) (4 with the defaults).
func TestPropertyFlapping(t *testing.T) {
	const scenarios, steps = 2000, 1500
	for seed := range uint64(scenarios) {
		r := rand.New(rand.NewPCG(seed, 2))
		transports := []string{"t0", "t1", "t2", "t3"}[:2+r.IntN(3)]
		flapper := transports[r.IntN(len(transports))]
		classes := randClasses(r, transports, 4)
		for i := range classes { // all generous enough for the good windows
			classes[i].SLA = Thresholds{MaxLatencyMs: 100 + 100*r.Float64(), MaxLossPct: 1 + 2*r.Float64(), MaxJitterMs: 20 + 20*r.Float64()}
		}
		o := randOptions(r)
		if r.IntN(3) == 0 { // the bounded case of the damping property
			o.Damping.HalfLife = 10*time.Second + time.Duration(r.Int64N(int64(10*time.Minute)))
			o.Damping.Penalty = 200 + 2000*r.Float64()
			o.Damping.Suppress = 1000 + 2000*r.Float64()
			o.Damping.Reuse = o.Damping.Suppress * (0.05 + 0.4*r.Float64())
			o.Damping.Max = o.Damping.Suppress * (1 + 3*r.Float64())
		}
		c := newChecker(t, transports, classes, o, true)

		goodM := Metrics{LatencyMs: 10, JitterMs: 1}
		badMode := r.IntN(3)
		badWindow := func() Metrics {
			switch mode := badMode; {
			case mode == 0 || mode == 2 && r.IntN(4) == 0:
				return Metrics{Down: true}
			case mode == 1 || r.IntN(3) == 0:
				return Metrics{LatencyMs: 1000, LossPct: 50, JitterMs: 500}
			case r.IntN(2) == 0:
				return Metrics{LatencyMs: math.NaN()}
			}
			return Metrics{LatencyMs: 100 + 150*r.Float64(), JitterMs: 1} // bad for some classes
		}
		period := 2 + r.IntN(200)
		badRun, phase, pBad := 1+r.IntN(period-1), r.IntN(period), 0.05+0.9*r.Float64()
		pattern, isBad := r.IntN(3), false
		flapsAt := func(i int) bool {
			switch pattern {
			case 0:
				return (i+phase)%period < badRun
			case 1:
				return r.Float64() < pBad
			}
			if r.IntN(badRun+1) == 0 { // runs of geometric length
				isBad = !isBad
			}
			return isBad
		}

		type sw struct {
			at time.Time
			d  Decision
		}
		got := map[string][]sw{}
		now, w := t0, time.Duration(50+r.IntN(5000))*time.Millisecond
		for i := range steps {
			now = now.Add(w/2 + time.Duration(r.Int64N(int64(w))))
			for _, name := range transports {
				m := goodM
				if name == flapper && flapsAt(i) {
					m = badWindow()
				}
				c.observe(now, name, m)
			}
			for _, d := range c.evaluate(now) {
				if d.Kind == PathSwitched {
					got[d.Class] = append(got[d.Class], sw{now, d})
				}
			}
		}

		for _, cl := range classes {
			order, sws := orderOf(cl, transports), got[cl.Name]
			fail := func(format string, args ...any) {
				t.Helper()
				t.Fatalf("seed %d, class %s (order %v, F %s, HoldDown %v, %+v): %s", seed, cl.Name, order, flapper, o.HoldDown, o.Damping, fmt.Sprintf(format, args...))
			}
			if order[0] != flapper {
				if len(sws) != 0 {
					fail("got %d switches; want none, its first transport is steady", len(sws))
				}
				continue
			}
			var returns []time.Time
			for i, s := range sws {
				from, to, reasons := flapper, order[1], []Reason{ReasonDown, ReasonSLA}
				if i%2 == 1 {
					from, to, reasons = order[1], flapper, []Reason{ReasonPreferred}
					returns = append(returns, s.at)
					if gap := s.at.Sub(sws[i-1].at); gap < o.HoldDown {
						fail("switch %d back to F %v after leaving it; want at least HoldDown", i, gap)
					}
				}
				if s.d.From != from || s.d.To != to || !slices.Contains(reasons, s.d.Reason) {
					fail("switch %d: got %s > %s (%s); want %s > %s (%v)", i, s.d.From, s.d.To, s.d.Reason, from, to, reasons)
				}
				if i >= 2 && s.at.Sub(sws[i-2].at) < o.HoldDown {
					fail("switches %d..%d: got 3 within %v; want at most 2 within HoldDown", i-2, i, s.at.Sub(sws[i-2].at))
				}
			}
			d := o.Damping
			if d.HalfLife == 0 || !(d.Reuse < d.Suppress/2) {
				continue
			}
			k := int(math.Ceil(2 * d.Suppress / d.Penalty))
			for i := 0; i+k < len(returns); i++ {
				if span := returns[i+k].Sub(returns[i]); span <= d.HalfLife {
					fail("got %d returns to F within %v; want at most %d within HalfLife %v", k+1, span, k, d.HalfLife)
				}
			}
		}
	}
}

// TestPropertySteadyInput: whatever constant windows each transport sends, decisions stop
// after BreachAfter windows, the longest suppression, HoldDown and two windows: every state
// change happens by then, and then at most one switch that waited for HoldDown.
func TestPropertySteadyInput(t *testing.T) {
	const scenarios = 2000
	for seed := range uint64(scenarios) {
		r := rand.New(rand.NewPCG(seed, 3))
		transports := []string{"t0", "t1", "t2", "t3"}[:1+r.IntN(4)]
		o := randOptions(r)
		// The bound is the window rule's: with the Detector a steady window adds the same small
		// evidence each time, and may decide after any number of windows.
		o.Detector = Detector{}
		if o.Damping.HalfLife > 30*time.Second { // keeps the run short
			o.Damping.HalfLife = 30 * time.Second
		}
		c := newChecker(t, transports, randClasses(r, transports, 4), o, true)
		ms := map[string]Metrics{}
		for _, name := range transports {
			ms[name] = randMetrics(r)
			if r.IntN(3) == 0 {
				ms[name] = Metrics{LatencyMs: 10, JitterMs: 1}
			}
		}
		w := time.Duration(100+r.IntN(2000)) * time.Millisecond
		var maxSuppress time.Duration
		if d := o.Damping; d.HalfLife > 0 {
			maxSuppress = time.Duration(float64(d.HalfLife) * math.Log2(d.Max/d.Reuse))
		}
		settled := t0.Add(time.Duration(o.BreachAfter)*w + maxSuppress + o.HoldDown + 2*w)
		for now := t0.Add(w); now.Before(settled.Add(100 * w)); now = now.Add(w) {
			for _, name := range transports {
				c.observe(now, name, ms[name])
			}
			if ds := c.evaluate(now); len(ds) > 0 && now.After(settled) {
				t.Fatalf("seed %d: at %v after the start got %+v; want nothing after %v", seed, now.Sub(t0), ds, settled.Sub(t0))
			}
		}
	}
}
