package ingest

import (
	"fmt"
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

// clockGuard remembers when each site's wrong clock was last announced.
type clockGuard struct {
	mu   sync.Mutex
	last map[string]time.Time
}

// due reports whether site's skew may be announced at now, and records it.
func (g *clockGuard) due(site string, now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.last == nil {
		g.last = make(map[string]time.Time)
	}
	if t, ok := g.last[site]; ok && now.Sub(t) < skewNoteEvery && now.Sub(t) > -skewNoteEvery {
		return false
	}
	if len(g.last) > 100_000 { // bounded: one entry per followed site in practice
		clear(g.last)
	}
	g.last[site] = now
	return true
}

// inWindow reports whether an agent time t is acceptable at now.
func (e *Engine) inWindow(t, now time.Time) bool {
	d := t.Sub(now)
	return !t.IsZero() && d <= e.o.MaxFuture && d >= -e.o.MaxPast
}

// skewed refuses a message of st dated outside the window: counted, and announced (an event
// and a SOC signal about the site's device, never a name from the message) at most once per
// skewNoteEvery per site.
func (e *Engine) skewed(st *site, t time.Time) bool {
	now := e.o.Now()
	if e.inWindow(t, now) {
		return false
	}
	st.mu.Lock()
	siteID, device := st.id, st.device
	st.mu.Unlock()
	e.m.rejected.WithLabelValues("clock_skew").Inc()
	if !e.clock.due(siteID, now) {
		return true
	}
	skew := t.Sub(now) // saturates for absurd dates, keeping the sign
	reason := fmt.Sprintf("agent clock off by %s (window -%s..+%s); its reports are refused", skew.Round(time.Second), e.o.MaxPast, e.o.MaxFuture)
	e.o.Logger.Warn("ingest: agent clock outside the accepted window", "site", siteID, "device", device, "agent_time", t, "skew", skew)
	ev := e.newEvent(event.DeviceStatusChanged, map[string]any{"device": device, "site": siteID, "status": "clock_skew",
		"previous_status": org.DeviceOnline, "reason": reason, "agent_time": t.UTC().Format(time.RFC3339Nano), "skew_seconds": skew.Seconds()})
	e.record(siteID, "", "", now, ev)
	if e.o.OnClockSkew != nil {
		e.o.OnClockSkew(ClockSkew{Site: siteID, Device: device, AgentTime: t, Skew: skew})
	}
	return true
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
