package steering

import "math"

// Metrics is one measurement window of one transport (telemetry.TransportWindow maps onto it).
type Metrics struct {
	LatencyMs float64 // mean round-trip time
	LossPct   float64 // 0..100
	JitterMs  float64
	// Down is a hard failure seen by the prober (N consecutive losses, no answer at all). It
	// takes the transport out of use at once, whatever the other fields say.
	Down bool

	// The sample counts behind the figures, which the Detector weighs (WindowMetrics fills
	// them from a telemetry window). Probes == 0: none, the window rule judges the window.
	Probes      int     // probes resolved in the window: answered + Lost
	Lost        int     // of which unanswered
	LatencySDMs float64 // standard deviation of the answered probes' RTTs
	// JitterN > 0: JitterMs is the mean of the window's JitterN |ΔRTT| samples, JitterSDMs
	// their standard deviation; 0: JitterMs is a smoothed estimate (RFC 3550).
	JitterN    int
	JitterSDMs float64
}

// Thresholds are upper bounds on one window's metrics. A zero field is not checked.
type Thresholds struct {
	MaxLatencyMs float64
	MaxLossPct   float64
	MaxJitterMs  float64
}

// Meets reports whether m is within t. A Down window never meets; a NaN metric never meets a
// bound that is checked.
func (t Thresholds) Meets(m Metrics) bool {
	return !m.Down && within(m.LatencyMs, t.MaxLatencyMs) && within(m.LossPct, t.MaxLossPct) &&
		within(m.JitterMs, t.MaxJitterMs)
}

// Violation is the score that ranks transports when none meets a class's SLA: the sum, over
// the checked bounds, of how far m exceeds each bound relative to the bound,
//
//	max(0, latency/maxLatency - 1) + max(0, loss/maxLoss - 1) + max(0, jitter/maxJitter - 1)
//
// so 0 when m meets t, and 1.0 means "one whole threshold" over (twice the allowed latency, or
// 50% over on two metrics). The three metrics weigh the same. A Down window and a NaN metric
// score +Inf.
func (t Thresholds) Violation(m Metrics) float64 {
	if m.Down {
		return math.Inf(1)
	}
	return excess(m.LatencyMs, t.MaxLatencyMs) + excess(m.LossPct, t.MaxLossPct) +
		excess(m.JitterMs, t.MaxJitterMs)
}

func (t Thresholds) valid() bool {
	for _, v := range [...]float64{t.MaxLatencyMs, t.MaxLossPct, t.MaxJitterMs} {
		if !(v >= 0) || math.IsInf(v, 1) { // also rejects NaN
			return false
		}
	}
	return true
}

func within(v, limit float64) bool { return limit == 0 || v <= limit }

func excess(v, limit float64) float64 {
	switch {
	case limit == 0 || v <= limit:
		return 0
	case math.IsNaN(v):
		return math.Inf(1)
	}
	return v/limit - 1
}
