package steering

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edgewan/edgewan/telemetry"
	twindow "github.com/edgewan/edgewan/telemetry/window"
)

// The detector's figures come from simulated probes fed through the real code: telemetry/window
// builds each 1 s window, WindowMetrics turns it into Metrics, a Site decides. Time is simulated,
// never the wall clock, and every channel is seeded.

// channel draws one probe's fate: its RTT in ms, or lost.
type channel func(r *rand.Rand) (rttMs float64, lost bool)

func bernoulli(lossPct, baseMs float64, rtt channel) channel {
	return func(r *rand.Rand) (float64, bool) {
		if r.Float64() < lossPct/100 {
			return 0, true
		}
		if rtt != nil {
			return rtt(r)
		}
		return baseMs + 0.5*r.Float64(), false
	}
}

// uniformRTT is base + U(-j, j) (clamped at 0), as netlab's responder adds jitter: the mean
// |ΔRTT| of unclamped samples is 2j/3.
func uniformRTT(base, j float64) channel {
	return func(r *rand.Rand) (float64, bool) { return max(0, base+j*(2*r.Float64()-1)), false }
}

// normalRTT is base + N(0, sd): mean |ΔRTT| = 2 sd / sqrt(pi).
func normalRTT(base, sd float64) channel {
	return func(r *rand.Rand) (float64, bool) { return max(0, base+sd*r.NormFloat64()), false }
}

// spiky adds a spike of spikeMs to a fraction p of the probes (a loaded machine's stall).
func spiky(c channel, p, spikeMs float64) channel {
	return func(r *rand.Rand) (float64, bool) {
		v, lost := c(r)
		if !lost && r.Float64() < p {
			v += spikeMs
		}
		return v, lost
	}
}

// simAgent is the agent's probing (agent/probe, agent/engine) as the detector sees it: a probe
// every Interval, every Fast while the transport is suspect (from a suspect probe until its
// window's verdict, then as long as Site.Suspect says so) and the fast-probing budget lasts (as
// agent/probe: Budget of fast probing, refilled so that the average rate stays at most twice
// Interval's), answers counted when they arrive, losses at the loss deadline (3 suspect
// deadlines of 100 ms on a 20 ms path), 1 s windows.
type simAgent struct {
	Interval, Fast, Timeout time.Duration
	Suspect                 time.Duration // the prober's suspect deadline for an unanswered probe
	Budget                  time.Duration // the longest burst of fast probing; 0: unlimited
}

var labAgent = simAgent{Interval: 200 * time.Millisecond, Fast: 10 * time.Millisecond, Timeout: 300 * time.Millisecond,
	Suspect: 100 * time.Millisecond, Budget: 20 * time.Second}

// agent100 is labAgent with `probe: {interval: 100ms}` (the fast interval stays 10 ms).
var agent100 = func() simAgent { a := labAgent; a.Interval = 100 * time.Millisecond; return a }()

var voiceSLA = Thresholds{MaxLatencyMs: 150, MaxLossPct: 1, MaxJitterMs: 30}

// run simulates warm on a good channel, then d on bad (mpls; inet stays good), and returns
// the time from the start of bad to the first switch of voice (-1: none) and the number of
// switches after warm.
func (a simAgent) run(seed uint64, o Options, sla Thresholds, bad channel, warm, d time.Duration) (first time.Duration, switches int) {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	s, err := NewSite([]string{"mpls", "inet"}, []Class{{Name: "voice", SLA: sla, Preferred: []string{"mpls", "inet"}}}, o)
	if err != nil {
		panic(err)
	}
	good := bernoulli(0, 20, nil)
	inet := Metrics{LatencyMs: 30, Probes: 5, JitterN: 4, JitterMs: 1}
	w := twindow.New(twindow.Options{Name: "mpls", DownAfter: -1})
	type result struct {
		at   time.Duration
		rtt  float64
		lost bool
	}
	var pending []result
	var out []Decision
	first = -1
	t, fastUntil, budget := time.Duration(0), time.Duration(-1), a.Budget
	refill := 1 / (float64(a.Interval)/float64(a.Fast) - 1)
	for win := time.Second; win <= warm+d; win += time.Second {
		for t < win {
			ch := good
			if t >= warm {
				ch = bad
			}
			step := a.Interval
			fast := t < fastUntil && (a.Budget == 0 || budget >= a.Fast)
			if fast {
				step = a.Fast
			}
			if rtt, lost := ch(r); lost {
				pending = append(pending, result{at: t + a.Timeout, lost: true})
				// the prober suspects it at its deadline: faster until that window's verdict
				fastUntil = max(fastUntil, (t+a.Suspect).Truncate(time.Second)+time.Second)
				if a.Budget == 0 || budget >= a.Fast {
					step = min(step, max(a.Suspect, a.Fast))
				}
			} else {
				pending = append(pending, result{at: t + time.Duration(rtt*float64(time.Millisecond)), rtt: rtt})
			}
			if fast || step < a.Interval {
				budget -= step
			}
			budget = min(budget+time.Duration(refill*float64(step)), a.Budget)
			t += step
		}
		slices.SortFunc(pending, func(x, y result) int { return int(x.at - y.at) })
		k := 0
		for ; k < len(pending) && pending[k].at < win; k++ {
			if pending[k].lost {
				w.AddLoss()
			} else {
				w.AddRTT(time.Duration(pending[k].rtt * float64(time.Millisecond)))
			}
		}
		pending = pending[k:]
		tw := w.Flush()
		now := t0.Add(win)
		s.Observe(now, "mpls", WindowMetrics(&tw))
		s.Observe(now, "inet", inet)
		out = s.Evaluate(now, out[:0])
		for _, dd := range out {
			if dd.Kind == PathSwitched && dd.Class == "voice" && win > warm {
				switches++
				if first < 0 {
					first = win - warm
				}
			}
		}
		if s.Suspect("mpls") {
			fastUntil = max(fastUntil, win+time.Second)
		}
	}
	return first, switches
}

// warmFor is a warm-up of 30 s plus a seeded fraction of a second, so an impairment starts at
// any phase of the 1 s windows, as in the lab.
func warmFor(seed uint64) time.Duration {
	return 30*time.Second + time.Duration(seed*7919%1000)*time.Millisecond
}

// TestDetectorNoFalseSwitches: an hour of probes within the voice SLA (150 ms / 1 % / 30 ms)
// on several channels and seeds, through the whole pipeline, moves voice not once.
func TestDetectorNoFalseSwitches(t *testing.T) {
	chans := []struct {
		name string
		c    channel
	}{
		{"0.3% loss", bernoulli(0.3, 20, nil)},
		{"0.3% loss, 10 ms jitter", bernoulli(0.3, 0, uniformRTT(40, 10))},
		{"jitter at half the SLA, uniform", uniformRTT(60, 22.5)}, // mean |ΔRTT| 15 ms
		{"jitter at half the SLA, normal", normalRTT(60, 13.3)},   // mean |ΔRTT| 15 ms
		{"jitter at half the SLA, 0.3% loss", bernoulli(0.3, 0, uniformRTT(60, 22.5))},
		{"jitter at half the SLA, 0.1% stalls of 200 ms", spiky(uniformRTT(60, 22.5), 0.001, 200)},
		{"latency at 80% of the SLA", normalRTT(120, 5)},
	}
	// the lab's 200 ms probes, and the 100 ms that 99 % of 3 % loss onsets within 20 s need
	// (README.md, "The maxima, honestly"): twice the probes must not make a false switch either
	agents := []struct {
		name string
		a    simAgent
	}{{"200ms", labAgent}, {"100ms", agent100}}
	for _, ag := range agents {
		for _, ch := range chans {
			t.Run(ag.name+"/"+ch.name, func(t *testing.T) {
				for seed := uint64(1); seed <= 4; seed++ {
					if first, n := ag.a.run(seed, DefaultOptions(), voiceSLA, ch.c, 0, time.Hour); n != 0 {
						t.Errorf("seed %d: %d switches in an hour, the first after %v", seed, n, first)
					}
				}
			})
		}
	}
}

// impairments are the lab's (docs/benchmarks.md) on a 20 ms path, with the goals of issue 13
// for the whole lab pipeline; the simulation has no MQTT or controller in between, so it must
// do better.
var impairments = []struct {
	name string
	c    channel
	goal time.Duration
}{
	{"20% loss", bernoulli(20, 20, nil), 3 * time.Second},
	{"3% loss", bernoulli(3, 20, nil), 20 * time.Second},
	{"60 ms jitter", uniformRTT(80, 60), 5 * time.Second},
	{"+250 ms delay", bernoulli(0, 270, nil), 4 * time.Second},
	{"100 ms delay + 60 ms jitter", uniformRTT(120, 60), 5 * time.Second},
}

// TestDetectorDecides: each impairment of the lab moves voice, in simulated time, with the
// median over seeds within the issue's goal.
func TestDetectorDecides(t *testing.T) {
	for _, im := range impairments {
		t.Run(im.name, func(t *testing.T) {
			var ds []time.Duration
			for seed := uint64(1); seed <= 15; seed++ {
				first, _ := labAgent.run(seed, DefaultOptions(), voiceSLA, im.c, warmFor(seed), 60*time.Second)
				if first < 0 {
					t.Fatalf("seed %d: no switch within 60 s", seed)
				}
				ds = append(ds, first)
			}
			slices.Sort(ds)
			t.Logf("median %v, all %v", ds[len(ds)/2], ds)
			if med := ds[len(ds)/2]; med > im.goal {
				t.Errorf("median %v over the goal %v (all: %v)", med, im.goal, ds)
			}
		})
	}
}

// TestDetectorTable computes README.md's table: for the voice SLA, per metric and per multiple
// of its bound, the switches per hour (at or under the bound, over seeds x 1 h) or the time to
// decide (median and 90th percentile over seeds, from the impairment's start to voice's move)
// and the share of seeds not decided within 60 s. EDGEWAN_DETECTOR_TABLE=N runs N seeds (the
// README's figures: 200) and prints the table; the suite runs 20 and checks that a larger miss
// is decided no later.
func TestDetectorTable(t *testing.T) {
	seeds := 20
	if n, err := strconv.Atoi(os.Getenv("EDGEWAN_DETECTOR_TABLE")); err == nil && n > 0 {
		seeds = n
	}
	type row struct {
		metric string
		k      float64 // multiple of the bound
		c      channel
	}
	var rows []row
	for _, k := range []float64{0.3, 0.5, 1, 1.5, 2, 3, 5, 10, 20} {
		rows = append(rows, row{"loss", k, bernoulli(k*voiceSLA.MaxLossPct, 20, nil)})
	}
	for _, k := range []float64{0.5, 0.8, 1, 1.25, 1.5, 2, 3} {
		j := 1.5 * k * voiceSLA.MaxJitterMs // uniform +-j: mean |dRTT| 2j/3
		rows = append(rows, row{"jitter", k, uniformRTT(20+j, j)})
	}
	for _, k := range []float64{0.8, 1, 1.1, 1.25, 1.5, 2, 3} {
		rows = append(rows, row{"latency", k, normalRTT(k*voiceSLA.MaxLatencyMs, 5)})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| metric | x bound | switches per hour | decided: median | p90 | p99 | over the goal | not within 60 s |\n|---|---|---|---|---|---|---|---|\n")
	prev := map[string]time.Duration{}
	for _, r := range rows {
		if r.k <= 1 {
			total := 0
			for seed := range uint64(seeds) {
				_, n := labAgent.run(seed+1, DefaultOptions(), voiceSLA, r.c, 0, time.Hour)
				total += n
			}
			fmt.Fprintf(&b, "| %s | %.2g | %.3g (%d in %d h) | | | | | |\n", r.metric, r.k, float64(total)/float64(seeds), total, seeds)
			continue
		}
		var ds []time.Duration
		missed, over, goal := 0, 0, issueGoal(r.metric, r.k)
		for seed := range uint64(seeds) {
			first, _ := labAgent.run(seed+1, DefaultOptions(), voiceSLA, r.c, warmFor(seed+1), 60*time.Second)
			if first < 0 {
				missed++
				first = time.Hour
			}
			ds = append(ds, first)
			if first > goal {
				over++
			}
		}
		slices.Sort(ds)
		med, p90, p99 := ds[len(ds)/2], ds[len(ds)*9/10], ds[len(ds)*99/100]
		fmt.Fprintf(&b, "| %s | %.2g | | %s | %s | %s | %.1f %% (> %v) | %.0f %% |\n", r.metric, r.k, fmtDecide(med), fmtDecide(p90),
			fmtDecide(p99), 100*float64(over)/float64(seeds), goal, 100*float64(missed)/float64(seeds))
		if p, ok := prev[r.metric]; ok && med > p+time.Second {
			t.Errorf("%s at %.2gx the bound decided in %v, later than %v for a smaller miss", r.metric, r.k, med, p)
		}
		prev[r.metric] = med
	}
	t.Logf("%d seeds, A = %.2f nats:\n%s", seeds, DefaultDetector().Threshold(), b.String())
}

// issueGoal is issue 13's time to switch for a miss of k times the bound: 20 % loss (20 x)
// within 3 s, 3 % within 20 s (and so any loss from 3 x), jitter within 5 s, latency within 4 s;
// the smaller misses are held to the same figure, for comparison.
func issueGoal(metric string, k float64) time.Duration {
	switch {
	case metric == "loss" && k >= 20:
		return 3 * time.Second
	case metric == "loss":
		return 20 * time.Second
	case metric == "jitter":
		return 5 * time.Second
	}
	return 4 * time.Second
}

func fmtDecide(d time.Duration) string {
	if d >= time.Hour {
		return "> 60 s"
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}

// TestDetectorRecoveryWaits: with the Detector, a breach still recovers only after RecoverAfter
// good windows and HoldDown since the breach, and the return waits for HoldDown since the switch.
func TestDetectorRecoveryWaits(t *testing.T) {
	o := DefaultOptions()
	s, err := NewSite([]string{"mpls", "inet"}, []Class{{Name: "voice", SLA: voiceSLA, Preferred: []string{"mpls", "inet"}}}, o)
	if err != nil {
		t.Fatal(err)
	}
	good := Metrics{LatencyMs: 20, Probes: 5, LatencySDMs: 1, JitterN: 4, JitterMs: 1, JitterSDMs: 0.5}
	lossy := Metrics{LatencyMs: 20, LossPct: 20, Probes: 20, Lost: 4, LatencySDMs: 1, JitterN: 12, JitterMs: 1, JitterSDMs: 0.5}
	var out []Decision
	var breachAt, backAt int
	for i := 1; i <= 120 && backAt == 0; i++ {
		m := good
		if breachAt == 0 {
			m = lossy
		}
		s.Observe(at(i), "mpls", m)
		s.Observe(at(i), "inet", good)
		for _, d := range s.Evaluate(at(i), out[:0]) {
			if d.Kind != PathSwitched {
				continue
			}
			if d.To == "inet" {
				breachAt = i
			} else {
				backAt = i
			}
		}
	}
	if breachAt == 0 || breachAt > 3 {
		t.Fatalf("20 %% loss on 20 probes a window: switched after %d windows", breachAt)
	}
	if want := breachAt + int(o.HoldDown/time.Second); backAt != want {
		t.Fatalf("breach at %d s, back at %d s; want %d (hold-down %v, %d good windows)", breachAt, backAt, want, o.HoldDown, o.RecoverAfter)
	}
}

// TestDetectorOldAgent: a report without the per-window jitter samples (an agent from before
// them) still breaches on its RFC 3550 jitter, counted as one sample per window, later than the
// samples decide.
func TestDetectorOldAgent(t *testing.T) {
	old := telemetry.TransportWindow{Name: "mpls", Sent: 5, LatencyMs: 60, StdDevMs: 20, JitterMs: 60}
	cur := old
	cur.JitterN, cur.JitterMeanMs, cur.JitterSDMs = 4, 60, 30
	windows := func(tw telemetry.TransportWindow) int {
		s, err := NewSite([]string{"mpls", "inet"}, []Class{{Name: "voice", SLA: voiceSLA, Preferred: []string{"mpls", "inet"}}}, DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		m := WindowMetrics(&tw)
		for i := 1; i <= 60; i++ {
			s.Observe(at(i), "mpls", m)
			s.Observe(at(i), "inet", Metrics{LatencyMs: 20, Probes: 5, JitterN: 4, JitterMs: 1})
			for _, d := range s.Evaluate(at(i), nil) {
				if d.Kind == PathSwitched {
					return i
				}
			}
		}
		return -1
	}
	if m := WindowMetrics(&old); m.JitterN != 0 || m.JitterMs != 60 || m.Probes != 5 {
		t.Fatalf("old window as %+v", m)
	}
	o, c := windows(old), windows(cur)
	if o < 0 || c < 0 || c > o {
		t.Fatalf("60 ms jitter decided after %d windows from an old agent, %d from a current one", o, c)
	}
	t.Logf("decided after %d windows (old agent), %d (current)", o, c)
}

// WouldBreach answers for a window so far without changing the site (the same window observed
// then decides as it said), only for a class's current path, and only on loss evidence.
func TestWouldBreach(t *testing.T) {
	s, err := NewSite([]string{"mpls", "inet"}, []Class{{Name: "voice", SLA: voiceSLA, Preferred: []string{"mpls", "inet"}}}, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	good := Metrics{Probes: 5, LatencyMs: 20, JitterMs: 1, JitterN: 4}
	bad := Metrics{Probes: 20, Lost: 8, LossPct: 40, LatencyMs: 20, JitterMs: 1, JitterN: 10}
	slow := Metrics{Probes: 40, LatencyMs: 2000, LatencySDMs: 1, JitterMs: 1, JitterN: 39}
	for _, tc := range []struct {
		transport string
		m         Metrics
		want      bool
	}{{"mpls", good, false}, {"mpls", bad, true}, {"inet", bad, false}, {"mpls", slow, false}, {"nowhere", bad, false}} {
		if got := s.WouldBreach(tc.transport, tc.m); got != tc.want {
			t.Errorf("WouldBreach(%s, %+v) = %v", tc.transport, tc.m, got)
		}
	}
	now := t0
	for range 3 { // asking changed nothing: good windows decide nothing
		now = now.Add(time.Second)
		s.Observe(now, "mpls", good)
		s.Observe(now, "inet", good)
		if d := s.Evaluate(now, nil); len(d) != 0 {
			t.Fatalf("decisions after good windows: %+v", d)
		}
	}
	now = now.Add(time.Second)
	s.Observe(now, "mpls", bad)
	s.Observe(now, "inet", good)
	var switched bool
	for _, d := range s.Evaluate(now, nil) {
		switched = switched || d.Kind == PathSwitched && d.Class == "voice" && d.To == "inet" && d.Reason == ReasonSLA
	}
	if !switched {
		t.Fatal("the window WouldBreach named did not move voice")
	}
	if s.WouldBreach("mpls", bad) || s.WouldBreach("inet", good) {
		t.Fatal("after the switch: mpls is no longer voice's path, inet is good")
	}
	// the agent asks after every probe result while a transport is suspect
	if n := testing.AllocsPerRun(100, func() { s.WouldBreach("inet", bad) }); n != 0 {
		t.Errorf("WouldBreach allocates %v times", n)
	}
}

// TestProbingRates computes README.md's probing-rate table: for 3 % loss against the voice
// SLA's 1 % (issue 13's goal: a switch within 20 s), the share of onsets over 20 s, and the
// switches in hours at 0.3 % loss, for the configured interval and the fast one while suspect.
// EDGEWAN_PROBING_RATES=N runs N onsets per row (the README's figures: 4000) and prints it;
// the suite runs 300 and checks the two rows the docs rely on.
func TestProbingRates(t *testing.T) {
	onsets, hours := 300, 4
	if n, err := strconv.Atoi(os.Getenv("EDGEWAN_PROBING_RATES")); err == nil && n > 0 {
		onsets, hours = n, 100
	}
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	rows := []struct{ interval, fast float64 }{{200, 25}, {200, 12.5}, {200, 10}, {200, 5}, {100, 25}, {100, 12.5}, {100, 10}, {67, 10}}
	var b strings.Builder
	fmt.Fprintf(&b, "| interval | fast (while suspect) | 3 %% loss: over 20 s | p99 | 0.3 %% loss: switches in %d h |\n|---|---|---|---|---|\n", hours)
	for _, r := range rows {
		a := labAgent
		a.Interval, a.Fast = ms(r.interval), ms(r.fast)
		var ds []time.Duration
		over := 0
		for seed := range uint64(onsets) {
			first, _ := a.run(seed+1, DefaultOptions(), voiceSLA, bernoulli(3, 20, nil), warmFor(seed+1), 60*time.Second)
			if first < 0 {
				first = time.Hour
			}
			if first > 20*time.Second {
				over++
			}
			ds = append(ds, first)
		}
		slices.Sort(ds)
		switches := 0
		for seed := range uint64(hours) {
			_, n := a.run(seed+1, DefaultOptions(), voiceSLA, bernoulli(0.3, 20, nil), 0, time.Hour)
			switches += n
		}
		share := float64(over) / float64(onsets)
		fmt.Fprintf(&b, "| %v | %v | %.2f %% | %s | %d |\n", a.Interval, a.Fast, 100*share, fmtDecide(ds[len(ds)*99/100]), switches)
		switch {
		case a == labAgent && share < 0.048:
			// the wait for the first loss at 5 probes/s alone is over 20 s in 0.97^100 = 4.8 %
			t.Errorf("%v/%v: %.2f %% over 20 s, under the 4.8 %% the first loss alone takes: the simulation is wrong", a.Interval, a.Fast, 100*share)
		case r.interval == 100 && r.fast == 10 && share > 0.02:
			t.Errorf("100ms/10ms: %.2f %% of 3 %% loss onsets over 20 s, the docs say under 1 %%", 100*share)
		}
		if (a == labAgent || r.interval == 100 && r.fast == 10) && switches > 0 {
			t.Errorf("%v/%v: %d switches at 0.3 %% loss in %d h", a.Interval, a.Fast, switches, hours)
		}
	}
	t.Logf("%d onsets per row:\n%s", onsets, b.String())
}
