package steering

import (
	"fmt"
	"math"
	"time"
)

// Options tune the hysteresis, hold-down and flap damping of every Site built with them.
// Start from DefaultOptions; Validate says what is accepted.
type Options struct {
	// BreachAfter is how many consecutive bad windows breach a class's SLA on a transport, or
	// make a transport Degraded. At least 1. Down windows do not count: Down acts at once.
	BreachAfter int
	// RecoverAfter is how many consecutive good windows a breached pair, a Degraded transport
	// or a Down transport needs to recover (non-Down windows for Down). At least 1.
	RecoverAfter int
	// HoldDown is the least time from a breach (or going Down) to its recovery, and the least
	// time from a class's path switch to its next switch unless that one is forced (the path is
	// Down, or breaches the SLA while another transport meets it). 0: no time condition.
	HoldDown time.Duration
	// Degraded are the transport-level thresholds behind TransportDegraded (the
	// transport.degraded event); they do not steer traffic, class SLAs do. Zero: a transport is
	// never reported Degraded, only Down.
	Degraded Thresholds
	// ScoreMargin is how much lower (in Violation units) another transport's score must be
	// before a class on a breached path moves to it when no transport meets its SLA. 0: any
	// improvement.
	ScoreMargin float64
	// Damping suppresses transports that keep failing. Zero: no damping.
	Damping Damping
	// Detector decides breaches (and Degraded) from the evidence of windows that carry sample
	// counts; BreachAfter then applies only to windows without them. Zero: off, every window
	// is judged by BreachAfter.
	Detector Detector
}

// Damping is route-flap damping (RFC 2439 style) per (transport, class): each time the
// transport becomes unusable for the class (goes Down or breaches the class's SLA) its penalty
// grows by Penalty, up to Max, and it decays exponentially with HalfLife. A penalty reaching
// Suppress suppresses the transport as a target for that class (it ranks after every
// unsuppressed live transport) until the penalty decays below Reuse. A class already on a
// suppressed transport is not moved off it for that reason.
type Damping struct {
	HalfLife time.Duration // 0 disables damping
	Penalty  float64       // added per failure; > 0
	Suppress float64       // suppress at or above; > Reuse
	Reuse    float64       // usable again below; > 0
	Max      float64       // ceiling of the penalty, bounds the suppression time; >= Suppress
}

// DefaultOptions are tuned for 1-second windows: breach on the Detector's evidence (after 3 s of
// bad windows for windows without sample counts), recover after
// 10 good ones and 30 s, damping with the BGP figures (1000/2000/750) and a 5-minute half-life.
func DefaultOptions() Options {
	return Options{
		BreachAfter:  3,
		RecoverAfter: 10,
		HoldDown:     30 * time.Second,
		Degraded:     Thresholds{MaxLatencyMs: 300, MaxLossPct: 5, MaxJitterMs: 50},
		ScoreMargin:  0.25,
		Damping: Damping{
			HalfLife: 5 * time.Minute,
			Penalty:  1000,
			Suppress: 2000,
			Reuse:    750,
			Max:      6000, // suppressed for at most 3 half-lives (log2(Max/Reuse))
		},
		Detector: DefaultDetector(),
	}
}

// maxCount is the ceiling of the window counters (uint16).
const maxCount = math.MaxUint16

// Validate reports the first unacceptable field.
func (o Options) Validate() error {
	switch {
	case o.BreachAfter < 1 || o.BreachAfter > maxCount:
		return fmt.Errorf("steering.Options: BreachAfter %d: want 1..%d", o.BreachAfter, maxCount)
	case o.RecoverAfter < 1 || o.RecoverAfter > maxCount:
		return fmt.Errorf("steering.Options: RecoverAfter %d: want 1..%d", o.RecoverAfter, maxCount)
	case o.HoldDown < 0:
		return fmt.Errorf("steering.Options: HoldDown %v: want >= 0", o.HoldDown)
	case !o.Degraded.valid():
		return fmt.Errorf("steering.Options: Degraded %+v: want finite values >= 0", o.Degraded)
	case !(o.ScoreMargin >= 0) || math.IsInf(o.ScoreMargin, 1):
		return fmt.Errorf("steering.Options: ScoreMargin %v: want a finite value >= 0", o.ScoreMargin)
	case !o.Detector.valid():
		return fmt.Errorf("steering.Options: Detector %+v: want 0 < Alpha, Beta < 0.5, 1 < LossRatio < FastLossRatio, 0 < Margin < 1, all finite (or all zero: off)", o.Detector)
	}
	d := o.Damping
	switch {
	case d.HalfLife < 0:
		return fmt.Errorf("steering.Options: Damping.HalfLife %v: want >= 0", d.HalfLife)
	case d.HalfLife == 0:
		return nil
	case !(d.Penalty > 0) || !(d.Reuse > 0) || !(d.Reuse < d.Suppress) || !(d.Suppress <= d.Max) ||
		math.IsInf(d.Max, 1):
		return fmt.Errorf("steering.Options: Damping %+v: want 0 < Penalty, 0 < Reuse < Suppress <= Max, all finite", d)
	}
	return nil
}
