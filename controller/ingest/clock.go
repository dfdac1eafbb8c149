package ingest

import (
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/edgewan/edgewan/controller/sdwan"
	"github.com/edgewan/edgewan/coreapi/event"
	"github.com/edgewan/edgewan/coreapi/org"
	"github.com/edgewan/edgewan/telemetry"
)

// The window of agent times the controller accepts, around its own clock (docs/telemetry.md).
// The past is generous: an agent replays its spool after an outage, and the spool's 64 MiB
// hold about a week of reports, which is also how long minute figures are kept. The future is
// a few minutes of clock drift. Anything outside is a wrong clock (or a forged date): it would
// write history that never ages out and skew every lag figure.
const (
	DefaultMaxPast   = 7 * 24 * time.Hour
	DefaultMaxFuture = 5 * time.Minute
	// skewNoteEvery bounds the events and SOC signals of one site's wrong clock.
	skewNoteEvery = 10 * time.Minute
)

// ClockSkew is an agent whose times fall outside the window, passed to Options.OnClockSkew.
type ClockSkew struct {
	Site, Device string
	AgentTime    time.Time
	Skew         time.Duration // agent time minus controller time
}

// The controller's own clock is the likely culprit when most sites heard recently agree on
// the same skew: clockQuorum of them at least, and at least half of the sites heard within
// clockHeard. Agents are then not blamed (no per-site event or case), one ControllerClock is
// announced, and refused reports are held (see hold) so that nothing is lost.
const (
	clockHeard  = time.Minute
	clockQuorum = 3
	// clockEvalEvery bounds the detector's work to one pass over the sites per period.
	clockEvalEvery = 250 * time.Millisecond
	// skewConfirm: with clockQuorum sites or more reporting, a site's own skew is announced
	// only once it has lasted this long while the controller's clock is not suspected, so a
	// step of the controller's clock (seen by all sites within one report) opens no case per site.
	skewConfirm = 20 * time.Second
	// freshSpan: a site's freshest time is the newest it sent in about this long; a controller
	// ahead of the agents sees even that in the past. aheadConfirm: how long that must last
	// (an agent replaying its spool sends old reports too, but for seconds).
	freshSpan    = 10 * time.Second
	aheadConfirm = 20 * time.Second
	// holdFor: a refused range not sent again this long after the site's times are in the
	// window again is given up (the agent no longer has it), so a site is never held for ever.
	holdFor = 5 * time.Minute
)

// ControllerClock is the controller's clock found wrong by the agents, passed to
// Options.OnControllerClock.
type ControllerClock struct {
	Offset      time.Duration // the controller's clock minus the agents' (the median skew, negated)
	Sites       int           // sites agreeing on it
	Heard       int           // sites heard within the last minute
	Refused     bool          // the agents' times are ahead of the window: their reports are held
	Since, Till time.Time     // Till is zero while the fault lasts
}

// siteClock is what the guard knows of one site's clock. Times marked mono are readings of the
// machine's monotonic clock (time.Now), which a step of the wall clock does not move.
type siteClock struct {
	heard    time.Time     // mono: last message
	skew     time.Duration // of the last message (agent time minus controller time)
	fresh    time.Duration // the largest skew of messages since freshAt, and of the span before
	prev     time.Duration
	freshAt  time.Time // mono
	since    time.Time // mono: out of the window since (zero: in it)
	announce time.Time // last announcement of the site's skew (controller time)
	// The refused reports' range [lo, hi] (0: none). Reports after it are held (refused, so
	// not covered by the watermark: the agent keeps them) until lo arrives again, in the
	// window; floor: reports up to it were given up (sent again, still out of the window: the
	// agent's clock, not the controller's).
	// Only a range refused while the controller's clock was at fault (faulty) is held for:
	// an agent's own wrong clock makes reports that are refused for good, as before.
	lo, hi, floor uint64
	faulty        bool
	backAt        time.Time // mono: in the window again with a range open
}

// clockGuard follows the sites' clocks: it rate-limits announcements of skewed agents, finds
// a wrong controller clock, and holds reports that must not be skipped.
type clockGuard struct {
	mu     sync.Mutex
	sites  map[string]*siteClock
	evalAt time.Time // mono
	ahead  time.Time // mono: since the agents look behind (zero: they do not)
	fault  *ControllerClock
	skews  []time.Duration // scratch
}

func (g *clockGuard) site(id string) *siteClock {
	if g.sites == nil {
		g.sites = make(map[string]*siteClock)
	}
	sc := g.sites[id]
	if sc == nil {
		if len(g.sites) > 100_000 { // bounded: one entry per followed site in practice
			clear(g.sites)
		}
		sc = &siteClock{}
		g.sites[id] = sc
	}
	return sc
}

// effective is the site's skew as the detector sees it: ahead of the window by its last
// message, behind it by even its freshest.
func (sc *siteClock) effective(maxFuture time.Duration) time.Duration {
	switch f := max(sc.fresh, sc.prev); {
	case sc.skew > maxFuture:
		return sc.skew
	case f < -maxFuture:
		return f
	}
	return 0
}

// evaluate looks for a controller clock fault at mono (called with g.mu held). It returns the
// fault when it starts or ends, for the caller to announce.
func (g *clockGuard) evaluate(mono, now time.Time, maxFuture time.Duration) (changed *ControllerClock) {
	if !g.evalAt.IsZero() && mono.Sub(g.evalAt) < clockEvalEvery {
		return nil
	}
	g.evalAt = mono
	heard := 0
	g.skews = g.skews[:0]
	for id, sc := range g.sites {
		if mono.Sub(sc.heard) > clockHeard {
			if mono.Sub(sc.heard) > skewNoteEvery && sc.lo == 0 {
				delete(g.sites, id)
			}
			continue
		}
		heard++
		if d := sc.effective(maxFuture); d != 0 {
			g.skews = append(g.skews, d)
		}
	}
	var found *ControllerClock
	if len(g.skews) >= clockQuorum {
		slices.Sort(g.skews)
		m := g.skews[len(g.skews)/2]
		tol := max(time.Minute, m.Abs()/10)
		agree := 0
		for _, d := range g.skews {
			if (d > 0) == (m > 0) && (d-m).Abs() <= tol {
				agree++
			}
		}
		if agree >= clockQuorum && 2*agree >= heard {
			found = &ControllerClock{Offset: -m, Sites: agree, Heard: heard, Refused: m > 0}
		}
	}
	if found != nil && !found.Refused { // agents behind: confirmed only if it lasts
		if g.ahead.IsZero() {
			g.ahead = mono
		}
		if mono.Sub(g.ahead) < aheadConfirm {
			found = nil
		}
	} else {
		g.ahead = time.Time{}
	}
	switch {
	case found != nil && g.fault == nil:
		found.Since = now
		g.fault = found
		c := *found
		return &c
	case found != nil:
		since := g.fault.Since
		*g.fault = *found
		g.fault.Since = since
	case g.fault != nil:
		c := *g.fault
		c.Till = now
		g.fault = nil
		return &c
	}
	return nil
}

// observe notes a message of site dated skew from the controller's clock (in: within the
// window; seq: a report's sequence, 0 for other messages) and says whether to hold it, i.e.
// refuse it although it is in the window, and whether to announce the site's own skew.
func (g *clockGuard) observe(id string, seq uint64, skew time.Duration, in bool, mono, now time.Time, maxFuture time.Duration, log *slog.Logger) (hold, announce bool, changed *ControllerClock) {
	g.mu.Lock()
	defer g.mu.Unlock()
	sc := g.site(id)
	sc.heard, sc.skew = mono, skew
	if sc.freshAt.IsZero() {
		sc.prev, sc.fresh, sc.freshAt = skew, skew, mono
	} else if mono.Sub(sc.freshAt) > freshSpan {
		sc.prev, sc.fresh, sc.freshAt = sc.fresh, skew, mono
	} else {
		sc.fresh = max(sc.fresh, skew)
	}
	changed = g.evaluate(mono, now, maxFuture)
	if in {
		sc.since = time.Time{}
		if sc.lo == 0 || seq == 0 {
			return false, false, changed
		}
		if !sc.faulty {
			sc.lo, sc.hi = 0, 0
			return false, false, changed
		}
		if sc.backAt.IsZero() {
			sc.backAt = mono
		}
		switch {
		case seq <= sc.lo:
			if seq == sc.lo {
				sc.lo, sc.hi, sc.faulty = 0, 0, false
			}
			return false, false, changed
		case mono.Sub(sc.backAt) > holdFor:
			log.Warn("ingest: refused reports not sent again; given up", "site", id, "from", sc.lo, "to", sc.hi)
			sc.floor, sc.lo, sc.hi, sc.faulty = max(sc.floor, sc.hi), 0, 0, false
			return false, false, changed
		}
		return true, false, changed
	}
	if sc.since.IsZero() {
		sc.since = mono
	}
	if seq != 0 && seq > sc.floor {
		switch {
		case sc.lo == 0:
			sc.lo, sc.hi, sc.backAt = seq, seq, time.Time{}
		case seq == sc.lo && g.fault == nil: // sent again and still out: the agent's clock
			sc.floor, sc.lo, sc.hi, sc.faulty = max(sc.floor, sc.hi), 0, 0, false
		default:
			sc.lo, sc.hi = min(sc.lo, seq), max(sc.hi, seq)
		}
		sc.faulty = sc.faulty || (sc.lo != 0 && g.fault != nil && g.fault.Refused)
	}
	if g.fault != nil {
		return false, false, changed
	}
	quiet := 0
	for _, o := range g.sites {
		if mono.Sub(o.heard) <= clockHeard {
			quiet++
			if quiet >= clockQuorum {
				break
			}
		}
	}
	if quiet >= clockQuorum && mono.Sub(sc.since) < skewConfirm {
		return false, false, changed // others report: wait and see whether it is the controller
	}
	if d := now.Sub(sc.announce); !sc.announce.IsZero() && d < skewNoteEvery && d > -skewNoteEvery {
		return false, false, changed
	}
	sc.announce = now
	return false, true, changed
}

// ClockFault returns the controller clock fault in progress, if any.
func (e *Engine) ClockFault() (ControllerClock, bool) { return e.clock.faultNow() }

// controllerClock announces a controller clock fault starting or ending.
func (e *Engine) controllerClock(c *ControllerClock) {
	if c == nil {
		return
	}
	if c.Till.IsZero() {
		e.o.Logger.Error("ingest: the controller's clock looks wrong: most agents agree on it", "offset", c.Offset.Round(time.Second),
			"sites", c.Sites, "heard", c.Heard, "reports_held", c.Refused)
	} else {
		e.o.Logger.Warn("ingest: the controller's clock agrees with the agents again", "after", c.Till.Sub(c.Since).Round(time.Second))
	}
	if e.o.OnControllerClock != nil {
		e.o.OnControllerClock(*c)
	}
}

// inWindow reports whether an agent time t is acceptable at now.
func (e *Engine) inWindow(t, now time.Time) bool {
	d := t.Sub(now)
	return !t.IsZero() && d <= e.o.MaxFuture && d >= -e.o.MaxPast
}

// skewed refuses a message of st dated outside the window: counted, and announced (an event
// and a SOC signal about the site's device, never a name from the message) at most once per
// skewNoteEvery per site, unless the controller's own clock is the culprit.
func (e *Engine) skewed(st *site, t time.Time) bool {
	refuse, _ := e.checkTime(st, t, 0)
	return refuse
}

// refuseReport is skewed for a report: it also holds the reports after a refused range until
// the agent sends that range again (see clockGuard.observe). A report at or below the last
// accepted one is left to the duplicate check.
func (e *Engine) refuseReport(st *site, r *telemetry.Report) bool {
	st.mu.Lock()
	dup := st.win.seen(r.Seq)
	st.mu.Unlock()
	seq := r.Seq
	if dup {
		seq = 0
	}
	refuse, hold := e.checkTime(st, r.Time, seq)
	if hold {
		e.m.rejected.WithLabelValues("held").Inc()
	}
	if refuse && seq != 0 && e.clock.givenUp(st.id, seq) {
		// Sent again and still out of the window (the agent's clock, not ours): refused for
		// good. Its sequence is taken, so that the contiguous watermark passes it, as the
		// agent would otherwise send it again forever.
		st.mu.Lock()
		st.win.take(seq)
		if st.busy == 0 {
			st.safe = st.win.mark
		}
		st.mu.Unlock()
	}
	return refuse || hold
}

// givenUp reports whether the guard gave up on the site's refused report seq: sent again and
// still out of the window with no controller clock fault, or not sent again in time.
func (g *clockGuard) givenUp(id string, seq uint64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	sc := g.sites[id]
	return sc != nil && seq <= sc.floor
}

func (e *Engine) checkTime(st *site, t time.Time, seq uint64) (refuse, hold bool) {
	now := e.o.Now()
	in := e.inWindow(t, now)
	st.mu.Lock()
	siteID, device := st.id, st.device
	st.mu.Unlock()
	skew := t.Sub(now) // saturates for absurd dates, keeping the sign
	if t.IsZero() {
		skew = 0 // no time at all says nothing about the clocks
	}
	hold, announce, changed := e.clock.observe(siteID, seq, skew, in, time.Now(), now, e.o.MaxFuture, e.o.Logger)
	e.controllerClock(changed)
	if in {
		return false, hold
	}
	e.m.rejected.WithLabelValues("clock_skew").Inc()
	if !announce {
		return true, false
	}
	reason := fmt.Sprintf("agent clock off by %s (window -%s..+%s); its reports are refused", skew.Round(time.Second), e.o.MaxPast, e.o.MaxFuture)
	e.o.Logger.Warn("ingest: agent clock outside the accepted window", "site", siteID, "device", device, "agent_time", t, "skew", skew)
	ev := e.newEvent(event.DeviceStatusChanged, map[string]any{"device": device, "site": siteID, "status": "clock_skew",
		"previous_status": org.DeviceOnline, "reason": reason, "agent_time": t.UTC().Format(time.RFC3339Nano), "skew_seconds": skew.Seconds()})
	e.record(siteID, "", "", now, ev)
	if e.o.OnClockSkew != nil {
		e.o.OnClockSkew(ClockSkew{Site: siteID, Device: device, AgentTime: t, Skew: skew})
	}
	return true, false
}

// agentEventData checks an agent's event against its site and returns the SD-WAN event's data,
// or an error naming what is wrong. Every name must be one the site knows, so nothing an agent
// makes up reaches an event or a metric label.
func (e *Engine) agentEventData(st *site, a *telemetry.AgentEvent) (map[string]any, error) {
	st.mu.Lock()
	device := st.device
	transports := make([]string, len(st.transports))
	for i, t := range st.transports {
		transports[i] = t.name
	}
	classes := make([]string, len(st.classes))
	for i, c := range st.classes {
		classes[i] = c.Name
	}
	st.mu.Unlock()
	isTransport := func(n string) bool { return slices.Contains(transports, n) }
	switch {
	case a.V != telemetry.SchemaVersion:
		return nil, fmt.Errorf("schema version %d", a.V)
	case a.Device != device:
		return nil, fmt.Errorf("device %.64q is not the site's", a.Device)
	case a.Reason != "local":
		return nil, fmt.Errorf("reason %.64q (only local)", a.Reason)
	}
	switch a.Type {
	case event.PathSwitched:
		if !slices.Contains(classes, a.Class) || a.Transport != "" || !isTransport(a.To) || (a.From != "" && !isTransport(a.From)) || a.From == a.To {
			return nil, fmt.Errorf("path.switched: class %.64q from %.64q to %.64q: not the site's", a.Class, a.From, a.To)
		}
		return map[string]any{"site": st.id, "class": a.Class, "from": a.From, "to": a.To, "reason": a.Reason, "by": "agent", "at": a.Time.UTC()}, nil
	case event.TransportDown, "transport.up":
		if !isTransport(a.Transport) || a.Class != "" || a.From != "" || a.To != "" {
			return nil, fmt.Errorf("%s: transport %.64q is not the site's", a.Type, a.Transport)
		}
		return map[string]any{"site": st.id, "transport": a.Transport, "status": sdwan.TransportDown, "reason": a.Reason, "by": "agent", "at": a.Time.UTC()}, nil
	}
	return nil, fmt.Errorf("type %.64q", a.Type)
}

func (g *clockGuard) faultNow() (ControllerClock, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.fault == nil {
		return ControllerClock{}, false
	}
	return *g.fault, true
}
