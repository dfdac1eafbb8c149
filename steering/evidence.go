package steering

import (
	"math"

	"github.com/edgewan/edgewan/telemetry"
)

// Detector is the sequential test that decides an SLA breach (or a Degraded transport) from the
// probes' evidence instead of from a count of bad windows in a row. README.md ("Detector")
// gives the model, its error rates and its time to decide. The zero Detector is off: every
// window is then judged by the window rule (Options.BreachAfter bad windows in a row), as are
// windows that carry no sample counts (Metrics.Probes == 0) when it is on.
type Detector struct {
	// Alpha and Beta are the false-breach and missed-breach probabilities of Wald's sequential
	// probability ratio test; its threshold is A = ln((1-Beta)/Alpha) nats of evidence.
	Alpha, Beta float64
	// LossRatio r sets the loss hypotheses around a class's MaxLossPct p: H0 loss <= p/r (within
	// the SLA), H1 loss >= p*r (breached). A second test with FastLossRatio (H1 >= p*FastLossRatio,
	// threshold ln 10 higher) decides gross loss in a few probes.
	LossRatio, FastLossRatio float64
	// Margin m sets the latency and jitter hypotheses around a bound T: H0 mean <= (1-m)T,
	// H1 mean >= (1+m)T, so the evidence leans neither way at T itself.
	Margin float64
}

// DefaultDetector: 1 in 1000 tests a false breach, 5 % missed, loss hypotheses a factor 2 (and
// 10) around the SLA, latency and jitter 25 % around it.
func DefaultDetector() Detector {
	return Detector{Alpha: 1e-3, Beta: 0.05, LossRatio: 2, FastLossRatio: 10, Margin: 0.25}
}

func (d Detector) on() bool { return d != Detector{} }

func (d Detector) valid() bool {
	if !d.on() {
		return true
	}
	return d.Alpha > 0 && d.Alpha < 0.5 && d.Beta > 0 && d.Beta < 0.5 && d.LossRatio > 1 && !math.IsInf(d.LossRatio, 1) &&
		d.FastLossRatio > d.LossRatio && !math.IsInf(d.FastLossRatio, 1) && d.Margin > 0 && d.Margin < 1
}

// Threshold is A = ln((1-Beta)/Alpha): the evidence, in nats, that decides a breach.
func (d Detector) Threshold() float64 { return math.Log((1 - d.Beta) / d.Alpha) }

// The tests run on every (transport, class) pair, and on every transport for Degraded.
const (
	testLoss     = iota // Bernoulli SPRT on probe outcomes, H1 = r * SLA
	testLossFast        // the same, H1 = FastLossRatio * SLA, for gross loss
	testLatency         // Gaussian SPRT on the answered probes' RTTs
	testJitter          // Gaussian SPRT on the |RTT(i) - RTT(i-1)| samples
	nTests
)

// evidence holds one CUSUM statistic per test: Page's form of Wald's SPRT, which restarts at 0
// whenever the evidence favours H0, so a breach is decided by the evidence since the link was
// last good and not diluted by a long good history.
type evidence [nTests]float64

// fastExtra is how much more evidence the fast loss test needs (ln 10: a tenth of Alpha), as
// its large per-loss weight would otherwise let a few chance losses decide.
const fastExtra = math.Ln10

// jitterFloor bounds the standard deviation used for jitter samples from below, as a fraction
// of the bound: |ΔRTT| spreads about as widely as its mean, and a window of four samples can
// show a deceptively small spread.
const jitterFloor = 0.75

// lossWeights are the loss tests' log-likelihood ratios of one lost and one answered probe for
// one loss bound, computed once per policy (the logarithms were most of judge's cost).
type lossWeights struct {
	a            float64    // the Detector's Threshold
	on           bool       // the bound is checked
	lost, answer [2]float64 // per loss test
}

func (d Detector) weights(th Thresholds) lossWeights {
	if !d.on() {
		return lossWeights{}
	}
	p := th.MaxLossPct / 100
	w := lossWeights{a: d.Threshold(), on: p > 0 && p < 1}
	if !w.on {
		return w
	}
	p0 := p / d.LossRatio
	for i, r := range [...]float64{d.LossRatio, d.FastLossRatio} {
		p1 := min(p*r, (1+p)/2)
		w.lost[i], w.answer[i] = math.Log(p1/p0), math.Log((1-p1)/(1-p0))
	}
	return w
}

// judge adds window m's evidence against th (lw: weights(th)). breach: a test reached its
// threshold; good: every checked test's evidence in this window favours th being met. A window
// adds at most A/2 to the latency and jitter tests, so one window never decides them alone (a
// stalled machine can delay a whole window); a loss is a probe unanswered for three RTOs, which
// a stall does not make. A NaN figure counts as A/2 against th, as it never meets a bound.
func (d *Detector) judge(e *evidence, th Thresholds, lw *lossWeights, m Metrics) (breach, good bool) {
	A := lw.a
	good = true
	add := func(i int, llr, thr float64) {
		if math.IsNaN(llr) {
			llr = A / 2
		}
		if i >= testLatency {
			llr = min(llr, A/2)
		}
		good = good && llr <= 0
		e[i] = min(max(e[i]+llr, 0), thr)
		breach = breach || e[i] >= thr
	}
	n, lost := max(m.Probes, 0), min(max(m.Lost, 0), max(m.Probes, 0))
	if lw.on && n > 0 {
		add(testLoss, float64(lost)*lw.lost[0]+float64(n-lost)*lw.answer[0], A)
		add(testLossFast, float64(lost)*lw.lost[1]+float64(n-lost)*lw.answer[1], A+fastExtra)
	}
	if T := th.MaxLatencyMs; T > 0 && n-lost > 0 {
		add(testLatency, gaussLLR(n-lost, m.LatencyMs, m.LatencySDMs, T, d.Margin, d.Margin), A)
	}
	if T := th.MaxJitterMs; T > 0 {
		jn := m.JitterN
		if jn == 0 && n-lost >= 2 {
			jn = 1 // an agent without per-window samples: its smoothed estimate counts as one
		}
		if jn > 0 {
			// consecutive differences share an RTT: their mean varies about 1.5 times as much as
			// that of independent samples, so they count for two thirds
			add(testJitter, gaussLLR(jn, m.JitterMs, m.JitterSDMs, T, d.Margin, jitterFloor)*2/3, A)
		}
	}
	return breach, good
}

// gaussLLR is the log-likelihood ratio of n samples with mean x and standard deviation sd
// between H1 mean (1+m)T and H0 mean (1-m)T, normal with sigma = max(sd, floor*T):
// n * 2mT/sigma^2 * (x - T).
func gaussLLR(n int, x, sd, T, m, floor float64) float64 {
	s := max(sd, floor*T)
	return float64(n) * 2 * m * T / (s * s) * (x - T)
}

// WindowMetrics is the steering input for one telemetry window: the agent's local steering and
// the controller both feed windows through it, so they weigh the same evidence.
func WindowMetrics(tw *telemetry.TransportWindow) Metrics {
	m := Metrics{LatencyMs: tw.LatencyMs, LossPct: tw.LossPct(), JitterMs: tw.JitterMs, Down: tw.Down,
		Probes: tw.Sent, Lost: tw.Lost, LatencySDMs: tw.StdDevMs}
	if tw.JitterN > 0 {
		m.JitterMs, m.JitterN, m.JitterSDMs = tw.JitterMeanMs, tw.JitterN, tw.JitterSDMs
	}
	return m
}
