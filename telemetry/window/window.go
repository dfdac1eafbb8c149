// Package window turns one transport's probe results into per-window statistics
// (telemetry.TransportWindow) on the agent, in bounded memory and without allocating per probe.
//
// Feed it one probe at a time with AddRTT (an answered probe) or AddLoss (an unanswered one) and
// call Flush at the end of each window. It computes, per window:
//
//   - Sent and Lost: probes fed and probes lost;
//   - LatencyMs, MinMs, MaxMs: mean, minimum and maximum RTT of answered probes;
//   - StdDevMs: the population standard deviation of those RTTs (Welford's online algorithm,
//     so it is exact and numerically stable without keeping the RTTs);
//   - P50Ms, P95Ms: percentiles of those RTTs, by linear interpolation between the closest ranks
//     of the sorted RTTs (numpy's default). The RTTs are kept in a buffer of Options.MaxSamples
//     allocated once; a window with more answered probes than that keeps a uniform random sample
//     of them (reservoir sampling, Algorithm R), so percentiles become estimates while mean,
//     min, max and standard deviation stay exact;
//   - JitterMs: the interarrival jitter of RFC 3550 section 6.4.1 applied to RTTs: for each
//     answered probe i after the first, D = RTT(i) - RTT(i-1) and J += (|D| - J) / 16. Probe i-1
//     is the previous ANSWERED probe: lost probes in between are skipped, not counted as a
//     difference. J starts at 0 and is carried across windows (it is a smoothed estimate, not a
//     per-window figure); a window reports J as it stands at the window's end;
//   - JitterN, JitterMeanMs, JitterSDMs: the count, mean and population standard deviation of
//     this window's own |D| samples (the same differences, not smoothed, not carried over):
//     the evidence the SLA detector in steering weighs, where J is a slow running estimate;
//   - Down: whether the transport is down at the window's end (see below).
//
// Down detection: Options.DownAfter consecutive losses flip the transport to down at once: the
// AddLoss that makes it returns WentDown. The next answered probe clears it and AddRTT returns
// CameUp. Consecutive losses are counted across windows.
//
// RTTs are reported in milliseconds; a negative RTT counts as 0 and one over MaxRTT as MaxRTT,
// so windows always pass telemetry.Report.Validate.
//
// A Window is not safe for concurrent use: one prober goroutine owns it.
package window

import (
	"math"
	"slices"
	"time"

	"github.com/edgewan/edgewan/telemetry"
)

// Defaults for Options fields left zero.
const (
	DefaultDownAfter  = 3
	DefaultMaxSamples = 4096
)

// MaxRTT is the largest RTT a window reports; longer ones are clamped to it (Validate's limit).
const MaxRTT = 600 * time.Second

// Options configure a Window.
type Options struct {
	Name   string // transport name, copied into every TransportWindow
	Method string // probe method (icmp, tcp, http), copied likewise; may be empty

	// DownAfter is the number of consecutive losses that mark the transport down.
	// Zero means DefaultDownAfter; negative means never.
	DownAfter int

	// MaxSamples is the number of RTTs kept per window for percentiles; beyond it the window
	// keeps a uniform random sample of that size. Zero means DefaultMaxSamples.
	MaxSamples int

	// Seed seeds the sampling generator; zero means a fixed default (runs are reproducible).
	Seed uint64
}

// Change is what a probe result did to the transport's down state.
type Change int8

// Changes reported by AddRTT and AddLoss.
const (
	NoChange Change = iota
	WentDown        // this loss made DownAfter consecutive losses
	CameUp          // this answer ended a down period
)

func (c Change) String() string {
	switch c {
	case WentDown:
		return "down"
	case CameUp:
		return "up"
	default:
		return "unchanged"
	}
}

// Window accumulates one transport's probe results. Make it with New.
type Window struct {
	name, method string
	downAfter    int

	// current window
	sent, lost int
	n          int     // answered probes
	mean, m2   float64 // Welford
	min, max   float64
	samples    []float64 // len = kept RTTs, cap = MaxSamples; never grown
	jn         int       // |D| samples in this window
	jmean, jm2 float64   // Welford over them
	rng        uint64    // xorshift64* state for the reservoir

	// carried across windows
	jitter   float64
	prev     float64 // RTT of the previous answered probe
	havePrev bool
	lossRun  int // consecutive losses
	down     bool
}

// New returns an empty Window; its sample buffer is the only allocation it ever makes.
func New(o Options) *Window {
	if o.DownAfter == 0 {
		o.DownAfter = DefaultDownAfter
	}
	if o.MaxSamples <= 0 {
		o.MaxSamples = DefaultMaxSamples
	}
	if o.Seed == 0 {
		o.Seed = 0x9e3779b97f4a7c15
	}
	return &Window{
		name:      o.Name,
		method:    o.Method,
		downAfter: o.DownAfter,
		samples:   make([]float64, 0, o.MaxSamples),
		rng:       o.Seed,
	}
}

// AddRTT records an answered probe with round-trip time rtt.
func (w *Window) AddRTT(rtt time.Duration) Change {
	rtt = min(max(rtt, 0), MaxRTT)
	ms := float64(rtt) / float64(time.Millisecond)

	w.sent++
	w.n++
	if w.n == 1 {
		w.min, w.max = ms, ms
	} else {
		w.min = min(w.min, ms)
		w.max = max(w.max, ms)
	}
	d := ms - w.mean
	w.mean += d / float64(w.n)
	w.m2 += d * (ms - w.mean)

	if len(w.samples) < cap(w.samples) {
		w.samples = append(w.samples, ms) // within capacity: no allocation
	} else if j := w.rand() % uint64(w.n); j < uint64(len(w.samples)) {
		w.samples[j] = ms // Algorithm R: keep the n-th RTT with probability cap/n
	}

	if w.havePrev {
		ad := math.Abs(ms - w.prev)
		w.jitter += (ad - w.jitter) / 16
		w.jn++
		dj := ad - w.jmean
		w.jmean += dj / float64(w.jn)
		w.jm2 += dj * (ad - w.jmean)
	}
	w.prev, w.havePrev = ms, true

	w.lossRun = 0
	if w.down {
		w.down = false
		return CameUp
	}
	return NoChange
}

// AddLoss records an unanswered probe.
func (w *Window) AddLoss() Change {
	w.sent++
	w.lost++
	w.lossRun++
	if !w.down && w.downAfter > 0 && w.lossRun >= w.downAfter {
		w.down = true
		return WentDown
	}
	return NoChange
}

// Down reports whether the transport is down now.
func (w *Window) Down() bool { return w.down }

// Flush ends the current window: it returns the window's statistics and starts a new, empty
// window. Jitter, the down state and the run of consecutive losses carry over.
func (w *Window) Flush() telemetry.TransportWindow {
	tw := w.Peek()
	w.jn, w.jmean, w.jm2 = 0, 0, 0
	w.sent, w.lost, w.n = 0, 0, 0
	w.mean, w.m2, w.min, w.max = 0, 0, 0, 0
	w.samples = w.samples[:0]
	return tw
}

// Peek returns the current window's statistics so far, as Flush would, without ending it.
func (w *Window) Peek() telemetry.TransportWindow {
	tw := telemetry.TransportWindow{
		Name:     w.name,
		Method:   w.method,
		Sent:     w.sent,
		Lost:     w.lost,
		JitterMs: w.jitter,
		Down:     w.down,
	}
	if w.n > 0 {
		tw.LatencyMs = w.mean
		tw.MinMs, tw.MaxMs = w.min, w.max
		tw.StdDevMs = math.Sqrt(w.m2 / float64(w.n))
		slices.Sort(w.samples)
		tw.P50Ms = percentile(w.samples, 0.50)
		tw.P95Ms = percentile(w.samples, 0.95)
	}
	if w.jn > 0 {
		tw.JitterN, tw.JitterMeanMs, tw.JitterSDMs = w.jn, w.jmean, math.Sqrt(w.jm2/float64(w.jn))
	}
	return tw // sorting the reservoir in place is harmless: its order does not matter
}

// percentile of sorted (non-empty) by linear interpolation between closest ranks.
func percentile(sorted []float64, q float64) float64 {
	pos := q * float64(len(sorted)-1)
	i := int(pos)
	if i >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	frac := pos - float64(i)
	return sorted[i] + frac*(sorted[i+1]-sorted[i])
}

// rand is xorshift64*: tiny, allocation-free and good enough for choosing reservoir slots.
func (w *Window) rand() uint64 {
	x := w.rng
	x ^= x >> 12
	x ^= x << 25
	x ^= x >> 27
	w.rng = x
	return x * 0x2545f4914f6cdd1d
}
