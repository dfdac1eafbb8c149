package steering

import (
	"fmt"
	"math"
	"time"
)

// Status is a transport's state as a whole (class SLAs aside).
type Status uint8

// The transport states.
const (
	Up       Status = iota // neither Degraded nor Down
	Degraded               // BreachAfter windows missed Options.Degraded; RecoverAfter good ones and HoldDown clear it
	Down                   // a Down window; RecoverAfter non-Down windows and HoldDown clear it
)

func (s Status) String() string {
	switch s {
	case Up:
		return "up"
	case Degraded:
		return "degraded"
	case Down:
		return "down"
	}
	return "unknown"
}

// Class is one traffic class's policy.
type Class struct {
	Name string
	SLA  Thresholds
	// Preferred lists transport names, best first. Transports not listed follow them in the
	// site's order; empty means the site's order.
	Preferred []string
}

// maxTransports bounds a site's transports (indices are bytes).
const maxTransports = math.MaxUint8

// Site is the steering state of one site: per transport, per (transport, class) pair and per
// class. It is not safe for concurrent use; Observe and Evaluate do not allocate.
type Site struct {
	opts       Options
	degW       lossWeights // the Detector's, for opts.Degraded
	transports []transport
	classes    []class
	cells      []cell  // per (class, transport): cells[c*len(transports)+t]
	order      []uint8 // per class, its transports best first: order[c*len(transports)+k]
}

type transport struct {
	name            string
	last            Metrics
	downNs, degNs   int64 // UnixNano when it went Down, became Degraded
	revokedNs       int64 // UnixNano of the last Revoke, if revoked
	revoked         bool
	upRun           uint16 // consecutive non-Down windows while Down
	degBad, degGood uint16 // consecutive windows missing / meeting Options.Degraded
	degEv           evidence
	down, degraded  bool
	reported        Status // as last reported by Evaluate
}

func (t *transport) status() Status {
	switch {
	case t.down:
		return Down
	case t.degraded:
		return Degraded
	}
	return Up
}

// cell is one (transport, class) pair: SLA hysteresis and flap damping.
type cell struct {
	sinceNs    int64   // UnixNano of the breach
	penNs      int64   // UnixNano when pen was set
	pen        float64 // flap penalty at penNs
	bad, good  uint16  // consecutive windows missing / meeting the class's SLA
	ev         evidence
	breached   bool
	suppressed bool
}

type class struct {
	name       string
	sla        Thresholds
	lossW      lossWeights // the Detector's, for sla
	switchedNs int64       // UnixNano of the last switch, if switched
	path       uint8
	switched   bool
	breached   bool // the SLA status last reported by Evaluate
}

// NewSite returns the state of a site with these transports (at least one, at most 255, names
// unique) and classes (names unique, Preferred naming only these transports). Every transport
// starts Up and every pair within its SLA; each class starts on the first of its order.
func NewSite(transports []string, classes []Class, opts Options) (*Site, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("steering.NewSite: %w", err)
	}
	s := &Site{opts: opts, degW: opts.Detector.weights(opts.Degraded)}
	if err := s.build(transports, classes); err != nil {
		return nil, fmt.Errorf("steering.NewSite: %w", err)
	}
	for ci := range s.classes {
		s.classes[ci].path = s.order[ci*len(transports)]
	}
	return s, nil
}

// build validates a policy and lays out fresh state for it.
func (s *Site) build(transports []string, classes []Class) error {
	if len(transports) == 0 || len(transports) > maxTransports {
		return fmt.Errorf("%d transports: want 1..%d", len(transports), maxTransports)
	}
	T := len(transports)
	s.transports = make([]transport, T)
	for i, name := range transports {
		if name == "" {
			return fmt.Errorf("transport %d: empty name", i)
		}
		if s.transportIndex(name) >= 0 {
			return fmt.Errorf("transport %q: listed twice", name)
		}
		s.transports[i].name = name
	}
	s.classes = make([]class, len(classes))
	s.cells = make([]cell, len(classes)*T)
	s.order = make([]uint8, len(classes)*T)
	for ci, c := range classes {
		if c.Name == "" {
			return fmt.Errorf("class %d: empty name", ci)
		}
		if s.classIndex(c.Name) >= 0 {
			return fmt.Errorf("class %q: listed twice", c.Name)
		}
		if !c.SLA.valid() {
			return fmt.Errorf("class %q: SLA %+v: want finite values >= 0", c.Name, c.SLA)
		}
		s.classes[ci] = class{name: c.Name, sla: c.SLA, lossW: s.opts.Detector.weights(c.SLA)}
		order := s.order[ci*T : ci*T : (ci+1)*T]
		var listed [maxTransports + 1]bool
		for _, name := range c.Preferred {
			ti := s.transportIndex(name)
			switch {
			case ti < 0:
				return fmt.Errorf("class %q: preferred transport %q is not in the site", c.Name, name)
			case listed[ti]:
				return fmt.Errorf("class %q: preferred transport %q listed twice", c.Name, name)
			}
			listed[ti] = true
			order = append(order, uint8(ti))
		}
		for ti := range T {
			if !listed[ti] {
				order = append(order, uint8(ti))
			}
		}
	}
	return nil
}

// Reconfigure applies a new policy. State of transports, classes and pairs whose names remain
// is kept (windows counted, breaches, hold-downs, penalties, paths), and so is the Detector's
// evidence of a pair unless its class's SLA changed (it was weighed against the old one). New
// ones start as in NewSite, except that a new class starts on the best live transport. A class whose path was
// removed moves at once to the best live transport, appended to out as a PathSwitched with
// ReasonRemoved; a class whose SLA or order changed may switch at the next Evaluate without
// waiting for HoldDown. On error the site is unchanged.
func (s *Site) Reconfigure(now time.Time, transports []string, classes []Class, out []Decision) ([]Decision, error) {
	n := &Site{opts: s.opts, degW: s.degW}
	if err := n.build(transports, classes); err != nil {
		return out, fmt.Errorf("steering.Reconfigure: %w", err)
	}
	T, oldT := len(n.transports), len(s.transports)
	oldIdx := make([]int, T)
	for ti := range n.transports {
		oldIdx[ti] = s.transportIndex(n.transports[ti].name)
		if oldIdx[ti] >= 0 {
			n.transports[ti] = s.transports[oldIdx[ti]]
		}
	}
	ns := now.UnixNano()
	for ci := range n.classes {
		c := &n.classes[ci]
		oc := s.classIndex(c.name)
		if oc < 0 {
			c.path = n.bestOrFirst(ci, ns)
			continue
		}
		old := &s.classes[oc]
		for ti, oi := range oldIdx {
			if oi >= 0 {
				n.cells[ci*T+ti] = s.cells[oc*oldT+oi]
				if c.sla != old.sla {
					// evidence is measured against the SLA: gathered against the old one it would
					// hasten (or delay) a breach of the new one
					n.cells[ci*T+ti].ev = evidence{}
				}
			}
		}
		c.switched, c.switchedNs, c.breached = old.switched, old.switchedNs, old.breached
		if c.sla != old.sla || !s.sameOrder(oc, n, ci) {
			c.switched = false // the operator's new policy applies without waiting
		}
		from := &s.transports[old.path]
		if p := n.transportIndex(from.name); p >= 0 {
			c.path = uint8(p)
			continue
		}
		c.path = n.bestOrFirst(ci, ns)
		c.switched, c.switchedNs = true, ns
		out = append(out, Decision{Kind: PathSwitched, Class: c.name, From: from.name,
			To: n.transports[c.path].name, Reason: ReasonRemoved})
	}
	*s = *n
	return out, nil
}

// sameOrder reports whether class oc of s and class ci of n rank the same transport names.
func (s *Site) sameOrder(oc int, n *Site, ci int) bool {
	T, oldT := len(n.transports), len(s.transports)
	if T != oldT {
		return false
	}
	for k := range T {
		if s.transports[s.order[oc*oldT+k]].name != n.transports[n.order[ci*T+k]].name {
			return false
		}
	}
	return true
}

func (s *Site) bestOrFirst(ci int, ns int64) uint8 {
	if q, _, _, _ := s.best(ci, -1, ns); q >= 0 {
		return uint8(q)
	}
	return s.order[ci*len(s.transports)]
}

// Observe feeds one window of one transport, ending at now. It reports false, and does nothing,
// if the transport is not in the site.
func (s *Site) Observe(now time.Time, transport string, m Metrics) bool {
	ti := s.transportIndex(transport)
	if ti < 0 {
		return false
	}
	ns, o := now.UnixNano(), &s.opts
	t := &s.transports[ti]
	t.last = m
	wasDown := t.down
	if m.Down {
		t.upRun = 0
		if !t.down {
			t.down, t.downNs = true, ns
		}
	} else {
		if t.down {
			t.upRun = inc(t.upRun)
			if int(t.upRun) >= o.RecoverAfter && elapsed(ns, t.downNs) >= o.HoldDown {
				t.down, t.upRun = false, 0
			}
		}
		s.judge(&t.degraded, &t.degBad, &t.degGood, &t.degNs, &t.degEv, o.Degraded, &s.degW, m, ns)
	}
	T := len(s.transports)
	for ci := range s.classes {
		c := &s.cells[ci*T+ti]
		wasUsable := !wasDown && !c.breached
		if !m.Down { // Down has its own hysteresis above; it does not also count as a bad window
			cl := &s.classes[ci]
			s.judge(&c.breached, &c.bad, &c.good, &c.sinceNs, &c.ev, cl.sla, &cl.lossW, m, ns)
		}
		if wasUsable && (t.down || c.breached) {
			s.charge(c, ns)
		}
	}
	return true
}

// WouldBreach reports whether window m, observed on transport, would make the Detector's loss
// tests decide a breach of a class whose path is that transport and that is not breached yet.
// It changes nothing. The agent asks it of the window so far while a transport is suspect, and
// ends the window at once when the answer is yes, so that the switch (the controller's, on the
// same window) does not wait for the window's end. Latency and jitter are left out: their cap
// per window is what keeps a stalled machine from deciding them, and a window cut short where a
// stall ends would get round it; a loss is a probe unanswered for three RTOs, which a stall
// does not make.
func (s *Site) WouldBreach(transport string, m Metrics) bool {
	ti := s.transportIndex(transport)
	if ti < 0 || m.Down || m.Probes <= 0 || !s.opts.Detector.on() {
		return false
	}
	T := len(s.transports)
	for ci := range s.classes {
		cl, c := &s.classes[ci], &s.cells[ci*T+ti]
		if int(cl.path) != ti || c.breached || cl.lossW.a == 0 {
			continue
		}
		ev, loss := c.ev, Thresholds{MaxLossPct: cl.sla.MaxLossPct}
		if breach, _ := s.opts.Detector.judge(&ev, loss, &cl.lossW, m); breach {
			return true
		}
	}
	return false
}

// judge applies window m to one state against th: with the Detector on and sample counts in m,
// a breach is decided by the evidence, and a window counts as good (towards RecoverAfter) when
// all its evidence favours th; otherwise by the window rule (step). Recovery resets the evidence.
func (s *Site) judge(state *bool, bad, good *uint16, since *int64, ev *evidence, th Thresholds, lw *lossWeights, m Metrics, ns int64) {
	o := &s.opts
	if lw.a == 0 || m.Probes <= 0 { // the Detector is off (a is its threshold, > 0 when on)
		step(state, bad, good, since, !th.Meets(m), ns, o)
		return
	}
	breach, ok := o.Detector.judge(ev, th, lw, m)
	switch {
	case breach && !*state:
		*state, *since, *good = true, ns, 0
	case !ok:
		*good = 0
	default:
		*good = inc(*good)
		if *state && int(*good) >= o.RecoverAfter && elapsed(ns, *since) >= o.HoldDown {
			*state, *good = false, 0
			*ev = evidence{}
		}
	}
	*bad = 0
}

// step is the window hysteresis: BreachAfter consecutive bad windows set *state (at *since);
// RecoverAfter consecutive good ones clear it, once HoldDown has passed since it was set.
func step(state *bool, bad, good *uint16, since *int64, isBad bool, ns int64, o *Options) {
	if isBad {
		*good, *bad = 0, inc(*bad)
		if !*state && int(*bad) >= o.BreachAfter {
			*state, *since = true, ns
		}
		return
	}
	*bad, *good = 0, inc(*good)
	if *state && int(*good) >= o.RecoverAfter && elapsed(ns, *since) >= o.HoldDown {
		*state = false
	}
}

func inc(n uint16) uint16 {
	if n == math.MaxUint16 {
		return n
	}
	return n + 1
}

// elapsed is ns-since, 0 if the clock went back.
func elapsed(ns, since int64) time.Duration {
	if ns < since {
		return 0
	}
	return time.Duration(ns - since)
}

// charge adds a failure to a pair's flap penalty.
func (s *Site) charge(c *cell, ns int64) {
	d := &s.opts.Damping
	if d.HalfLife == 0 {
		return
	}
	c.pen, c.penNs = min(s.penalty(c, ns)+d.Penalty, d.Max), ns
	if c.pen >= d.Suppress {
		c.suppressed = true
	}
}

// penalty is the pair's flap penalty decayed to ns.
func (s *Site) penalty(c *cell, ns int64) float64 {
	if c.pen == 0 {
		return 0
	}
	return c.pen * math.Exp2(-float64(elapsed(ns, c.penNs))/float64(s.opts.Damping.HalfLife))
}

// Evaluate appends to out what changed since the previous Evaluate, transports first, and
// moves classes to their best path:
//   - a transport whose Status changed: TransportDown, TransportDegraded or TransportRecovered;
//   - a class whose path is Down moves at once to the best live transport (ReasonDown); if all
//     are Down it stays and reports SLABreach with ReasonAllDown;
//   - a class whose path breaches its SLA moves at once to the first transport of its order
//     that meets it and is not suppressed (ReasonSLA);
//   - otherwise, once HoldDown has passed since the class's last switch, it moves to a
//     transport meeting the SLA earlier in its order (ReasonPreferred) or, when none meets
//     it, to one whose Violation is lower by ScoreMargin (ReasonScore);
//   - a class whose SLA status on its (new) path changed: SLABreach or SLARecovered.
//
// It allocates only if out must grow.
func (s *Site) Evaluate(now time.Time, out []Decision) []Decision {
	for i := range s.transports {
		t := &s.transports[i]
		st := t.status()
		if st == t.reported {
			continue
		}
		t.reported = st
		k := TransportRecovered
		switch st {
		case Down:
			k = TransportDown
		case Degraded:
			k = TransportDegraded
		}
		out = append(out, Decision{Kind: k, Transport: t.name, Metrics: t.last})
	}
	ns := now.UnixNano()
	for ci := range s.classes {
		out = s.steer(ci, ns, out)
	}
	return out
}

func (s *Site) steer(ci int, ns int64, out []Decision) []Decision {
	c := &s.classes[ci]
	p := int(c.path)
	q, qSupp, qRank, pRank := s.best(ci, p, ns)
	var reason Reason
	switch {
	case q < 0 || q == p:
	case s.transports[p].down:
		reason = ReasonDown
	case pRank > 0 && qRank == 0 && !qSupp:
		reason = ReasonSLA
	case c.switched && elapsed(ns, c.switchedNs) < s.opts.HoldDown:
		// Voluntary moves wait; this is what bounds switches under flapping.
	case qRank == 0: // q comes before p in the order, both meet the SLA
		reason = ReasonPreferred
	case qRank+s.opts.ScoreMargin < pRank:
		reason = ReasonScore
	}
	if reason != "" {
		from := &s.transports[p]
		out = append(out, Decision{Kind: PathSwitched, Class: c.name, From: from.name,
			To: s.transports[q].name, Reason: reason, Metrics: from.last})
		c.path, c.switched, c.switchedNs = uint8(q), true, ns
		p = q
	}
	t := &s.transports[p]
	breached := t.down || s.cells[ci*len(s.transports)+p].breached
	if breached == c.breached {
		return out
	}
	c.breached = breached
	d := Decision{Kind: SLARecovered, Transport: t.name, Class: c.name, Metrics: t.last}
	if breached {
		d.Kind, d.Reason = SLABreach, ReasonSLA
		if t.down {
			d.Reason = ReasonAllDown
		}
	}
	return append(out, d)
}

// best ranks class ci's live (not Down) transports by (suppressed, rank, order) and returns
// the first, -1 if all are Down. rank is 0 for a pair within its SLA, else 1+Violation of the
// last window. The current path p is never taken as suppressed: damping keeps a transport
// from being chosen, not from being kept. It also returns p's rank and clears suppressions
// whose penalty has decayed below Reuse.
func (s *Site) best(ci, p int, ns int64) (q int, qSupp bool, qRank, pRank float64) {
	T := len(s.transports)
	cells, order := s.cells[ci*T:(ci+1)*T], s.order[ci*T:(ci+1)*T]
	sla := &s.classes[ci].sla
	q = -1
	for _, ti8 := range order {
		ti := int(ti8)
		t := &s.transports[ti]
		if t.down {
			continue
		}
		c := &cells[ti]
		if c.suppressed && s.penalty(c, ns) < s.opts.Damping.Reuse {
			c.suppressed = false
		}
		supp := c.suppressed && ti != p
		var rank float64
		if c.breached {
			rank = 1 + sla.Violation(t.last)
		}
		if ti == p {
			pRank = rank
		}
		if q < 0 || (!supp && qSupp) || (supp == qSupp && rank < qRank) {
			q, qSupp, qRank = ti, supp, rank
		}
	}
	return q, qSupp, qRank, pRank
}

// Suspect reports whether evidence of a breach is building on the transport without a decision
// yet: some class not breached on it has evidence against its SLA. The agent probes a suspect
// transport faster, so that the evidence decides sooner either way.
func (s *Site) Suspect(transport string) bool {
	ti := s.transportIndex(transport)
	if ti < 0 || s.transports[ti].down {
		return false
	}
	T := len(s.transports)
	for ci := range s.classes {
		c := &s.cells[ci*T+ti]
		if c.breached {
			continue
		}
		for _, v := range c.ev {
			if v > 0 {
				return true
			}
		}
	}
	return false
}

// Path returns the transport class uses now, "" if the class is not in the site.
func (s *Site) Path(class string) string {
	ci := s.classIndex(class)
	if ci < 0 {
		return ""
	}
	return s.transports[s.classes[ci].path].name
}

// Adopt makes class use transport as of now without deciding it (no decision): for a
// controller that restarted and learns the paths the agent is on, so that its fresh state does
// not move traffic. Off the preferred path, it counts as a switch at now: the return to a better
// path waits for HoldDown as after any switch. It reports false, and does nothing, if either is
// not in the site.
func (s *Site) Adopt(now time.Time, class, transport string) bool {
	ci, ti := s.classIndex(class), s.transportIndex(transport)
	if ci < 0 || ti < 0 {
		return false
	}
	c := &s.classes[ci]
	if c.path != uint8(ti) {
		c.path, c.switched, c.switchedNs = uint8(ti), true, now.UnixNano()
	}
	return true
}

// Revoke withdraws a dead-link verdict (a Down window observed on transport) that the probes
// then disproved: the probe that made it was answered after all, late, rttMs after it was sent,
// so the path was slow, not dead. The transport is no longer Down as of now and the flap
// penalty that going Down charged is given back; the classes that moved off it stay where they
// are (a return is a voluntary switch, after HoldDown: no flapping). The late answer is
// latency evidence: a class whose latency bound the answer exceeds by the Detector's margin (or
// at all, with the Detector off) is breached on the transport at once, so that it does not go
// back to a path that misses its SLA by that much. A transport is revoked at most once per
// HoldDown: a second verdict within it stays Down with the usual recovery, so that verdicts and
// revocations in turn cannot move a class back and forth without limit. It reports false, and
// does nothing, if the transport is not in the site, not Down, or was revoked within HoldDown.
func (s *Site) Revoke(now time.Time, transport string, rttMs float64) bool {
	ti := s.transportIndex(transport)
	ns := now.UnixNano()
	if ti < 0 || !s.transports[ti].down {
		return false
	}
	t, T := &s.transports[ti], len(s.transports)
	if t.revoked && elapsed(ns, t.revokedNs) < s.opts.HoldDown {
		return false
	}
	t.down, t.upRun, t.revoked, t.revokedNs = false, 0, true, ns
	d := &s.opts.Damping
	for ci := range s.classes {
		c, sla := &s.cells[ci*T+ti], &s.classes[ci].sla
		if d.HalfLife > 0 && c.pen > 0 {
			c.pen, c.penNs = max(s.penalty(c, ns)-d.Penalty, 0), ns
		}
		bound := sla.MaxLatencyMs
		if s.opts.Detector.on() {
			bound *= 1 + s.opts.Detector.Margin
		}
		if !c.breached && sla.MaxLatencyMs > 0 && rttMs > bound {
			c.breached, c.sinceNs, c.good, c.bad = true, ns, 0, 0
			s.charge(c, ns)
		}
	}
	return true
}

// Usable reports whether class may use transport now: the transport is not Down and the class's
// SLA is not breached on it. False if either is not in the site.
func (s *Site) Usable(class, transport string) bool {
	ci, ti := s.classIndex(class), s.transportIndex(transport)
	return ci >= 0 && ti >= 0 && !s.transports[ti].down && !s.cells[ci*len(s.transports)+ti].breached
}

// Status returns a transport's state now (Evaluate reports its changes), false if the
// transport is not in the site.
func (s *Site) Status(transport string) (Status, bool) {
	ti := s.transportIndex(transport)
	if ti < 0 {
		return Down, false
	}
	return s.transports[ti].status(), true
}

// SLAMet reports whether class's SLA is met on its path as of the last Evaluate: the path is
// neither Down nor breached for the class. False if the class is not in the site.
func (s *Site) SLAMet(class string) bool {
	ci := s.classIndex(class)
	return ci >= 0 && !s.classes[ci].breached
}

func (s *Site) transportIndex(name string) int {
	for i := range s.transports {
		if s.transports[i].name == name {
			return i
		}
	}
	return -1
}

func (s *Site) classIndex(name string) int {
	for i := range s.classes {
		if s.classes[i].name == name {
			return i
		}
	}
	return -1
}
