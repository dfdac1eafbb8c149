package engine

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"reflect"
	"time"

	"github.com/edgewan/edgewan/agent/probe"
	"github.com/edgewan/edgewan/steering"
	"github.com/edgewan/edgewan/telemetry"
	"github.com/edgewan/edgewan/telemetry/window"
)

// monitor owns one transport's prober and window. Its state is guarded by the engine's mu.
type monitor struct {
	e        *Engine
	name     string
	pc       probe.Config
	w        *window.Window
	pace     *probe.Pace // fast while the transport is suspect
	suspect  time.Time   // when a probe was last past its suspect deadline
	suspects int         // consecutive probes past their suspect deadline
	first    time.Time   // when the first of them was sent
	overdue  bool        // and the first of them is past its down deadline (probe.Result.Overdue)
	answered time.Time   // when the last answered probe was sent
	down     bool        // hard down: DownAfter suspects in a row, the first overdue, until the next answer
	verdict  verdict     // the last dead-link verdict, until confirmed or revoked
	revoked  time.Time   // when a verdict was last revoked
	stopped  bool
	cancel   context.CancelFunc
	sent     prometheus.Counter // this transport's, looked up once
	lost     prometheus.Counter
}

// verdict is a dead-link verdict: the classes move at once (a blackhole must move traffic
// within 400 ms), but it is only *confirmed*, raising transport.down and reported as Down, when
// its first unanswered probe is still unanswered at the probe timeout. A late answer to that
// probe revokes it: the path was slow (a delay step longer than DelayStep), not dead, and a slow
// path is the SLA detector's to judge, not a dead link that moves every class.
type verdict struct {
	first     time.Time // the sending of the run's first unanswered probe; zero: none pending
	confirmed bool
}

// startMonitor starts probing; prev (stopped, may be nil) hands over its window so that jitter
// and the down state carry across a probe reconfiguration.
func startMonitor(e *Engine, name string, pc probe.Config, prev *monitor) *monitor {
	m := &monitor{e: e, name: name, pc: pc, pace: probe.NewPace(), sent: e.m.probesSent.WithLabelValues(name), lost: e.m.probesLost.WithLabelValues(name)}
	if prev != nil {
		m.w, m.suspects, m.first, m.overdue, m.answered, m.down = prev.w, prev.suspects, prev.first, prev.overdue, prev.answered, prev.down
		// the old prober's probes are gone: no answer can revoke a pending verdict any more
		if m.verdict = prev.verdict; !m.verdict.first.IsZero() && !m.verdict.confirmed {
			m.confirmLocked()
		}
	} else {
		// Down is decided here from suspect deadlines (faster than full timeouts), not by the
		// window's loss count.
		m.w = window.New(window.Options{Name: name, Method: pc.Method, DownAfter: -1})
		e.m.transportUp.WithLabelValues(name).Set(1)
	}
	return m
}

// begin starts probing, once: the engine calls it when the transport's table and probe rule
// exist, as probes sent before would be lost for want of a route and count as an outage.
func (m *monitor) begin() {
	if m.cancel != nil || m.stopped {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go m.run(ctx)
}

func (m *monitor) run(ctx context.Context) {
	backoff := time.Second
	for ctx.Err() == nil {
		err := probe.RunPaced(ctx, m.pc, m.pace, m.handle)
		if ctx.Err() != nil {
			return
		}
		// e.g. the interface is gone for now: every probe would fail; say so and retry
		m.e.log.Warn("agent: probing stopped; retrying", "transport", m.name, "err", err, "in", backoff)
		m.e.mu.Lock()
		if !m.stopped && !m.down {
			m.down = true
			m.verdict = verdict{first: time.Now(), confirmed: true} // nothing was sent: nothing can revoke it
			m.e.onDownLocked(m.name, time.Now())
			m.e.onConfirmedLocked(m.name)
		}
		m.e.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

func (m *monitor) handle(r probe.Result) {
	e := m.e
	e.mu.Lock()
	defer e.mu.Unlock()
	if m.stopped {
		return
	}
	switch {
	case r.Suspect:
		// Evidence of a fault: probe faster at once (a blackhole is declared down sooner, and a
		// loss counts sooner); the window's verdict (setPace) decides how long.
		m.pace.SetFast(true)
		m.suspect = time.Now()
		// a probe sent before a revocation had its deadlines from the RTTs before the delay step
		// that the late answer showed: it is no evidence of a dead link
		if r.Sent.After(m.answered) && r.Sent.After(m.revoked) {
			if m.suspects == 0 {
				m.first = r.Sent
			}
			m.suspects++
			m.checkDownLocked()
		}
	case r.Overdue:
		if r.Sent.After(m.answered) && r.Sent.After(m.revoked) && m.suspects > 0 {
			m.overdue = true
			m.checkDownLocked()
		}
	case r.Lost:
		m.w.AddLoss()
		m.sent.Inc()
		m.lost.Inc()
		m.checkEarlyLocked()
	default:
		// an answer, or a Late one (its loss is counted; it still proves the path works)
		if !r.Late {
			m.w.AddRTT(r.RTT)
			m.sent.Inc()
			m.checkEarlyLocked()
		}
		if r.Sent.After(m.answered) {
			m.answered = r.Sent
		}
		m.suspects, m.overdue = 0, false
		if v := m.verdict; !v.first.IsZero() && !v.confirmed && !r.Sent.After(v.first) {
			// the probe the verdict counted as the first unanswered one was answered after all
			m.verdict, m.down, m.revoked = verdict{}, false, time.Now()
			e.m.verdictsRevoked.Inc()
			e.log.Info("agent: dead-link verdict revoked: its first probe was answered late (a delay step)",
				"transport", m.name, "rtt", r.RTT)
			e.onRevokedLocked(m.name, r.RTT, time.Now())
			return
		}
		if m.down {
			m.down = false
			e.log.Info("agent: transport answers again", "transport", m.name)
			if m.verdict.confirmed {
				e.onUpLocked(m.name)
			} // else: the confirmation (at the first probe's timeout) raises down and up together
		}
	}
}

// checkEarlyLocked ends the window early when, while the transport is suspect, the window so far
// would make the local detector decide a breach: the decision then waits for neither the rest of
// the window (up to a second) nor for more probes than the evidence needs.
func (m *monitor) checkEarlyLocked() {
	if m.down || !m.pace.Fast() || m.e.steer == nil {
		return
	}
	tw := m.w.Peek()
	if m.e.steer.WouldBreach(m.name, steering.WindowMetrics(&tw)) {
		m.e.endWindowEarly(time.Now())
	}
}

// checkDownLocked declares the transport hard down once DownAfter probes in a row are past
// their suspect deadline and the first of them is past its down deadline (SRTT + the probe's
// DelayStep + max(4*RTTVAR, 30ms): 280 ms on a fast path). With fast probing the suspects come
// within a quarter second of a blackhole; waiting for the first to be overdue keeps a delay
// step of up to DelayStep (or the agent stalled on a loaded machine for less than the slack)
// from looking like a dead link: the SLA detector judges a delay.
func (m *monitor) checkDownLocked() {
	if m.down || m.suspects < m.e.cfg.DownAfter || !m.overdue {
		return
	}
	m.down = true
	m.verdict = verdict{first: m.first}
	m.e.log.Warn("agent: transport unanswered: classes moved; a dead link unless its first probe is answered late",
		"transport", m.name, "unanswered", m.suspects)
	m.e.onDownLocked(m.name, time.Now())
	first := m.first
	time.AfterFunc(time.Until(first.Add(m.pc.Timeout+confirmSlack)), func() {
		m.e.mu.Lock()
		defer m.e.mu.Unlock()
		if !m.stopped && m.verdict.first.Equal(first) && !m.verdict.confirmed {
			m.confirmLocked()
		}
	})
}

// confirmSlack is how long after the first unanswered probe's timeout (when the prober forgets
// it, so no answer can revoke the verdict any more) the verdict is confirmed.
const confirmSlack = 20 * time.Millisecond

// confirmLocked confirms the pending verdict: the transport was dead (for a while at least).
// It raises transport.down, and transport.up too when the transport already answers again.
func (m *monitor) confirmLocked() {
	m.verdict.confirmed = true
	m.e.log.Warn("agent: transport down", "transport", m.name, "since", m.verdict.first)
	m.e.onConfirmedLocked(m.name)
	if !m.down {
		m.e.onUpLocked(m.name)
	}
}

// pace keeps fast probing while the local steering finds the transport suspect, or a probe was
// suspect within the last window (its loss may not be counted yet) (engine mu held).
func (m *monitor) setPace(suspect bool, now time.Time, window time.Duration) {
	m.pace.SetFast(suspect || now.Sub(m.suspect) < window)
}

// flush ends the window (engine mu held). The report says Down only for a confirmed verdict
// (the controller never hears of a revoked one); localDown is whether the local steering is to
// see it Down: for every verdict from the moment it was made.
func (m *monitor) flush() (tw telemetry.TransportWindow, localDown bool) {
	tw = m.w.Flush()
	tw.Down = m.down && m.verdict.confirmed
	return tw, m.down
}

func (m *monitor) sameProbe(pc probe.Config) bool { return reflect.DeepEqual(m.pc, pc) }

// stop ends probing (engine mu held; it does not wait, as the prober's callbacks take mu).
func (m *monitor) stop() {
	m.stopped = true
	if m.cancel != nil {
		m.cancel()
	}
}
