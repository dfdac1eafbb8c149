// Package ingest is the controller's side of the loop with the agents: telemetry in from MQTT,
// rolling aggregates and time series, SLA and path decisions (steering), events, liveness, and
// policies and decisions out.
package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/edgewan/edgewan/controller/mqtt"
	"github.com/edgewan/edgewan/controller/sdwan"
	"github.com/edgewan/edgewan/coreapi/event"
	"github.com/edgewan/edgewan/coreapi/org"
	"github.com/edgewan/edgewan/steering"
	"github.com/edgewan/edgewan/telemetry"
	"github.com/edgewan/edgewan/telemetry/rollup"
)

// Store is what the engine needs of the database.
type Store interface {
	LiveSites(ctx context.Context) ([]*sdwan.Site, error)
	GetSite(ctx context.Context, id string) (*sdwan.Site, error)
	Assignments(ctx context.Context, siteID string) ([]*sdwan.Assignment, error)
	// SetSiteStatus and InsertEvents return how many webhook deliveries the events queued.
	SetSiteStatus(ctx context.Context, id, status string, lastSeen, at time.Time, evs ...*event.Envelope) (int, error)
	SaveFigures(ctx context.Context, sites map[string]time.Time, fs []sdwan.TransportFigures) error
	SetRollout(ctx context.Context, siteID, policyID string, version int, state, reason string, at time.Time) (bool, error)
	InsertEvents(ctx context.Context, evs ...*event.Envelope) (int, error)
}

// Sink stores telemetry as time series (telemetry/sink implements it).
type Sink interface {
	Write(ctx context.Context, r *telemetry.Report) error
	Flush(ctx context.Context) error
}

// Options configure the engine. Zero values take the defaults named.
type Options struct {
	OfflineAfter time.Duration    // no report for this long: the site is offline; default 30s
	FlushEvery   time.Duration    // how often latest figures are saved to the database; default 5s
	Steering     steering.Options // default steering.DefaultOptions()
	Now          func() time.Time
	Notify       func() // wakes the webhook dispatcher after events were stored
	Registerer   prometheus.Registerer
	Logger       *slog.Logger
	// OnSiteRemoved is told when a followed site is decommissioned, e.g. to disconnect its agent.
	OnSiteRemoved func(siteID, deviceID string)
	// MaxPast and MaxFuture bound agent times around Now (clock.go); defaults DefaultMaxPast
	// and DefaultMaxFuture. OnClockSkew is told of a site whose times fall outside (at most
	// once per 10 minutes per site), e.g. to open a SOC case; it must not block.
	MaxPast, MaxFuture time.Duration
	OnClockSkew        func(ClockSkew)
	// Owner, with several controllers (docs/scale-out.md), says which sites this engine may
	// evaluate, publish decisions for and raise events about right now. nil: all of them.
	Owner Owner
}

// Owner tells whether this controller owns a site at the moment (controller/cluster.Member).
type Owner interface {
	Owns(siteID string) bool
}

// Engine runs the loop. Create it with New, then Run.
type Engine struct {
	store Store
	bus   mqtt.Bus
	sink  Sink
	roll  *rollup.Store
	o     Options

	mu    sync.RWMutex
	sites map[string]*site

	reports pool
	rec     recorder
	m       metrics
	clock   clockGuard
}

// site is the live state of one claimed site. Its mutex serialises the site's messages
// (the bus already delivers one site's messages in order, one at a time) with the liveness
// loop, the API's reads and policy pushes.
type site struct {
	mu         sync.Mutex
	id         string
	device     string
	status     string
	lastSeen   time.Time
	seq        uint64
	haveSeq    bool
	steer      *steering.Site
	classes    []steering.Class
	transports []*transport
	paths      map[string]string // last decisions published
	scratch    []steering.Decision
	dirty      bool
	owned      bool // with an Owner: owned at the last check (owner.go)
}

type transport struct {
	name                         string
	status                       string
	latencyMs, lossPct, jitterMs float64
	at                           time.Time
	dirty                        bool
}

// New returns an engine; Run loads the sites and starts it.
func New(st Store, bus mqtt.Bus, sink Sink, o Options) *Engine {
	if o.OfflineAfter <= 0 {
		o.OfflineAfter = 30 * time.Second
	}
	if o.FlushEvery <= 0 {
		o.FlushEvery = 5 * time.Second
	}
	if o.Steering == (steering.Options{}) {
		o.Steering = steering.DefaultOptions()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Notify == nil {
		o.Notify = func() {}
	}
	if o.MaxPast <= 0 {
		o.MaxPast = DefaultMaxPast
	}
	if o.MaxFuture <= 0 {
		o.MaxFuture = DefaultMaxFuture
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	e := &Engine{store: st, bus: bus, sink: sink, roll: rollup.NewStore(), o: o, sites: map[string]*site{}}
	e.rec.init()
	e.m = newMetrics(o.Registerer, e)
	return e
}

// Start loads the live sites and subscribes to the agents' topics. Call it before the broker
// serves, so that nothing is missed; then Run.
func (e *Engine) Start(ctx context.Context) error {
	sites, err := e.store.LiveSites(ctx)
	if err != nil {
		return fmt.Errorf("ingest: loading sites: %w", err)
	}
	for _, s := range sites {
		if err := e.load(ctx, s, false); err != nil {
			return err
		}
	}
	subs := map[string]mqtt.Handler{
		telemetry.KindTelemetry: e.onTelemetry,
		telemetry.KindAcks:      e.onAck,
		telemetry.KindEvents:    e.onAgentEvent,
		telemetry.KindStatus:    e.onStatus,
	}
	for kind, h := range subs {
		if err := e.bus.Subscribe(telemetry.TopicRoot+"+/"+kind, h); err != nil {
			return fmt.Errorf("ingest: subscribing to %s: %w", kind, err)
		}
	}
	e.o.Logger.Info("ingest started", "sites", len(sites), "offline_after", e.o.OfflineAfter)
	return nil
}

// Run publishes every site's policies and decisions (retained, so agents that connect later
// get them), then keeps liveness and figures, and stores status changes and events (see
// recorder), until ctx is done; then it stores what is pending and saves the figures.
func (e *Engine) Run(ctx context.Context) error {
	recDone := make(chan struct{})
	recCtx, stopRec := context.WithCancel(ctx)
	defer func() { stopRec(); <-recDone }()
	go e.writeRecords(recCtx, recDone)

	e.mu.RLock()
	ids := make([]string, 0, len(e.sites))
	for id := range e.sites {
		ids = append(ids, id)
	}
	e.mu.RUnlock()
	for _, id := range ids {
		if err := e.PushPolicies(ctx, id); err != nil {
			e.o.Logger.Error("ingest: publishing policies", "site", id, "err", err)
		}
		if st := e.site(id); st != nil {
			if err := e.publishDecisions(st, true); err != nil {
				e.o.Logger.Error("ingest: publishing decisions", "site", id, "err", err)
			}
		}
	}

	live := time.NewTicker(time.Second)
	flush := time.NewTicker(e.o.FlushEvery)
	defer live.Stop()
	defer flush.Stop()
	for {
		select {
		case <-ctx.Done():
			stopRec() // writes what is pending (within 10s); from now on record writes at once
			<-recDone
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			e.flushFigures(sctx)
			if e.sink != nil {
				if err := e.sink.Flush(sctx); err != nil {
					e.o.Logger.Warn("ingest: flushing time series at shutdown", "err", err)
				}
			}
			return nil
		case <-live.C:
			e.checkLiveness()
		case <-flush.C:
			e.flushFigures(ctx)
		}
	}
}

// load builds (or rebuilds) the live state of a site from the database and, if publish,
// publishes its policies and decisions. A decommissioned site is forgotten.
func (e *Engine) load(ctx context.Context, s *sdwan.Site, publish bool) error {
	if s.Status == sdwan.SiteDecommissioned || s.ClaimedAt.IsZero() {
		e.mu.Lock()
		old := e.sites[s.ID]
		delete(e.sites, s.ID)
		e.mu.Unlock()
		e.roll.Delete(s.ID)
		if old != nil && e.o.OnSiteRemoved != nil {
			e.o.OnSiteRemoved(s.ID, s.DeviceID)
		}
		return nil
	}
	as, err := e.store.Assignments(ctx, s.ID)
	if err != nil {
		return err
	}
	names := make([]string, len(s.Transports))
	for i, t := range s.Transports {
		names[i] = t.Name
	}
	classes := steeringClasses(as, s.Transports)

	e.mu.Lock()
	st := e.sites[s.ID]
	if st == nil {
		st = &site{id: s.ID, status: s.Status, lastSeen: s.LastSeen}
		e.sites[s.ID] = st
	}
	e.mu.Unlock()

	st.mu.Lock()
	st.device = s.DeviceID
	if st.steer == nil {
		st.steer, err = steering.NewSite(names, classes, e.o.Steering)
	} else {
		st.scratch, err = st.steer.Reconfigure(e.o.Now(), names, classes, st.scratch[:0])
	}
	if err != nil {
		st.mu.Unlock()
		return fmt.Errorf("ingest: site %s: %w", s.ID, err)
	}
	st.classes = classes
	old := st.transports
	st.transports = st.transports[:0:0]
	for _, t := range s.Transports {
		tr := &transport{name: t.Name, status: t.Status, latencyMs: t.LatencyMs, lossPct: t.LossPct, jitterMs: t.JitterMs, at: t.LastSampleAt}
		if i := slices.IndexFunc(old, func(o *transport) bool { return o.name == t.Name }); i >= 0 {
			tr = old[i]
		}
		st.transports = append(st.transports, tr)
	}
	st.mu.Unlock()
	if !publish {
		return nil
	}
	if err := e.PushPolicies(ctx, s.ID); err != nil {
		return err
	}
	return e.publishDecisions(st, true)
}

// steeringClasses are the classes the site steers by (shared with the what-if replay).
var steeringClasses = sdwan.SteeringClasses

func (e *Engine) site(id string) *site {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.sites[id]
}

// SiteChanged implements sdwan.Live: reload the site from the database.
func (e *Engine) SiteChanged(ctx context.Context, siteID string) error {
	s, err := e.store.GetSite(ctx, siteID)
	if err != nil {
		return err
	}
	return e.load(ctx, s, true)
}

// The policy message is defined in telemetry, for both sides.
type (
	Policy          = telemetry.Policy
	PolicyTransport = telemetry.PolicyTransport
	PolicyVersion   = telemetry.PolicyVersion
)

// PushPolicies implements sdwan.Pusher: publish the site's desired state, retained, and
// steer by its steering policy from now on.
func (e *Engine) PushPolicies(ctx context.Context, siteID string) error {
	s, err := e.store.GetSite(ctx, siteID)
	if err != nil {
		return err
	}
	as, err := e.store.Assignments(ctx, siteID)
	if err != nil {
		return err
	}
	p := Policy{V: telemetry.SchemaVersion, Site: siteID, Time: e.o.Now().UTC(), Transports: []PolicyTransport{}, Policies: []PolicyVersion{}}
	// Cheapest first: an agent with no steering policy prefers them in this order, as the
	// controller does (steeringClasses).
	byCost := slices.Clone(s.Transports)
	slices.SortStableFunc(byCost, func(a, b *sdwan.Transport) int { return a.Cost - b.Cost })
	for _, t := range byCost {
		p.Transports = append(p.Transports, PolicyTransport{Name: t.Name, Interface: t.Interface, Gateway: t.Gateway, ProbeTargets: t.ProbeTargets, BandwidthKbps: t.BandwidthKbps})
	}
	for _, a := range as {
		p.Policies = append(p.Policies, PolicyVersion{Policy: a.PolicyID, Type: a.Type, Version: a.Version, Content: a.Content})
	}
	if st := e.site(siteID); st != nil {
		classes := steeringClasses(as, s.Transports)
		st.mu.Lock()
		if !slices.EqualFunc(classes, st.classes, sameClass) {
			names := make([]string, len(s.Transports))
			for i, t := range s.Transports {
				names[i] = t.Name
			}
			st.scratch, err = st.steer.Reconfigure(e.o.Now(), names, classes, st.scratch[:0])
			if err == nil {
				st.classes = classes
			}
		}
		st.mu.Unlock()
		if err != nil {
			return fmt.Errorf("ingest: site %s: %w", siteID, err)
		}
		defer func() { _ = e.publishDecisions(st, false) }()
	}
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	if err := e.bus.Publish(telemetry.Topic(siteID, telemetry.KindPolicy), b, true); err != nil {
		return fmt.Errorf("ingest: publishing policy of %s: %w", siteID, err)
	}
	return nil
}

func sameClass(a, b steering.Class) bool {
	return a.Name == b.Name && a.SLA == b.SLA && slices.Equal(a.Preferred, b.Preferred)
}

// publishDecisions publishes the site's current path per class when it changed (or always).
func (e *Engine) publishDecisions(st *site, always bool) error {
	if !e.owns(st) {
		return nil // its owner publishes
	}
	st.mu.Lock()
	paths := make(map[string]string, len(st.classes))
	for _, c := range st.classes {
		paths[c.Name] = st.steer.Path(c.Name)
	}
	same := len(paths) == len(st.paths)
	for k, v := range paths {
		same = same && st.paths[k] == v
	}
	if same && !always {
		st.mu.Unlock()
		return nil
	}
	st.paths = paths
	st.mu.Unlock()
	b, err := json.Marshal(telemetry.Decisions{V: telemetry.SchemaVersion, Site: st.id, Time: e.o.Now().UTC(), Paths: paths})
	if err != nil {
		return err
	}
	return e.bus.Publish(telemetry.Topic(st.id, telemetry.KindDecisions), b, true)
}

// onTelemetry handles one report: the hot path.
func (e *Engine) onTelemetry(topic string, payload []byte) {
	siteID, _, ok := telemetry.ParseTopic(topic)
	st := e.site(siteID)
	if ok && st == nil {
		st = e.adopt(siteID)
	}
	if !ok || st == nil {
		e.m.rejected.WithLabelValues("unknown_site").Inc()
		return
	}
	if !e.owns(st) {
		e.m.rejected.WithLabelValues("not_owner").Inc()
		return
	}
	r := e.reports.get()
	defer e.reports.put(r)
	if err := decodeReport(siteID, payload, r); err != nil {
		e.m.rejected.WithLabelValues("invalid").Inc()
		e.o.Logger.Debug("ingest: invalid telemetry", "site", siteID, "err", err)
		return
	}
	if e.skewed(st, r.Time) {
		return
	}
	now := e.o.Now()
	st.mu.Lock()
	if r.Device != st.device {
		st.mu.Unlock()
		e.m.rejected.WithLabelValues("wrong_device").Inc()
		return
	}
	if st.haveSeq && r.Seq <= st.seq {
		st.mu.Unlock()
		e.m.rejected.WithLabelValues("duplicate").Inc()
		return
	}
	st.seq, st.haveSeq = r.Seq, true
	e.roll.AddReport(now, r)
	for i := range r.Transport {
		tw := &r.Transport[i]
		m := steering.WindowMetrics(tw)
		if !st.steer.Observe(now, tw.Name, m) {
			e.m.rejected.WithLabelValues("unknown_transport").Inc()
			continue
		}
		for _, t := range st.transports {
			if t.name == tw.Name {
				t.latencyMs, t.lossPct, t.jitterMs, t.at, t.dirty = m.LatencyMs, m.LossPct, tw.JitterMs, now, true
			}
		}
	}
	st.scratch = st.steer.Evaluate(now, st.scratch[:0])
	wasOffline := st.status != sdwan.SiteUp && st.status != sdwan.SiteDegraded
	st.lastSeen, st.dirty = now, true
	status := e.siteStatus(st)
	changed := status != st.status
	prev := st.status
	st.status = status
	var evs []*event.Envelope
	switched := false
	for _, d := range st.scratch {
		if ev := e.decisionEvent(st, d, now); ev != nil {
			evs = append(evs, ev)
		}
		switched = switched || d.Kind == steering.PathSwitched
	}
	if wasOffline {
		evs = append(evs, e.newEvent(event.DeviceStatusChanged, map[string]any{
			"device": st.device, "site": st.id, "status": org.DeviceOnline, "previous_status": org.DeviceOffline, "reason": "reporting"}))
	}
	st.mu.Unlock()

	if e.sink != nil {
		if err := e.sink.Write(context.Background(), r); err != nil {
			e.m.rejected.WithLabelValues("sink").Inc()
		}
	}
	if changed || len(evs) > 0 {
		e.record(st.id, status, prev, now, evs...)
	}
	if switched {
		if err := e.publishDecisions(st, false); err != nil {
			e.o.Logger.Warn("ingest: publishing decisions", "site", st.id, "err", err)
		}
	}
	e.m.reports.Inc()
	e.m.lag.Observe(now.Sub(r.Time).Seconds())
}

// siteStatus derives a reporting site's status from its transports and classes. Called with
// st.mu held.
func (e *Engine) siteStatus(st *site) string {
	// Every transport's status first: returning at the first bad one left the others with the
	// status they had before their first window (unknown next to live figures).
	degraded := false
	for _, t := range st.transports {
		if s, ok := st.steer.Status(t.name); ok && !t.at.IsZero() {
			t.status = statusName(s)
		}
		degraded = degraded || t.status == sdwan.TransportDown || t.status == sdwan.TransportDegraded
	}
	if degraded {
		return sdwan.SiteDegraded
	}
	for _, c := range st.classes {
		if !st.steer.SLAMet(c.Name) {
			return sdwan.SiteDegraded
		}
	}
	return sdwan.SiteUp
}

func statusName(s steering.Status) string {
	switch s {
	case steering.Down:
		return sdwan.TransportDown
	case steering.Degraded:
		return sdwan.TransportDegraded
	case steering.Up:
		return sdwan.TransportUp
	}
	return sdwan.TransportUnknown
}

func (e *Engine) newEvent(typ string, data any) *event.Envelope {
	ev, err := event.New(typ, data)
	if err != nil {
		panic(err) // our own types and maps always marshal
	}
	return ev
}

type metricsData struct {
	LatencyMs float64 `json:"latency_ms"`
	LossPct   float64 `json:"loss_pct"`
	JitterMs  float64 `json:"jitter_ms"`
	Down      bool    `json:"down,omitempty"`
}

// decisionEvent turns a steering decision into the event it announces, or nil.
func (e *Engine) decisionEvent(st *site, d steering.Decision, now time.Time) *event.Envelope {
	m := metricsData{LatencyMs: d.Metrics.LatencyMs, LossPct: d.Metrics.LossPct, JitterMs: d.Metrics.JitterMs, Down: d.Metrics.Down}
	switch d.Kind {
	case steering.TransportDegraded, steering.TransportDown:
		status := sdwan.TransportDegraded
		if d.Kind == steering.TransportDown {
			status = sdwan.TransportDown
		}
		return e.newEvent(d.Kind.String(), map[string]any{"site": st.id, "transport": d.Transport, "status": status, "metrics": m})
	case steering.SLABreach:
		var sla steering.Thresholds
		for _, c := range st.classes {
			if c.Name == d.Class {
				sla = c.SLA
			}
		}
		return e.newEvent(event.SLABreach, map[string]any{"site": st.id, "class": d.Class, "transport": d.Transport, "reason": string(d.Reason), "metrics": m,
			"thresholds": map[string]float64{"max_latency_ms": sla.MaxLatencyMs, "max_loss_pct": sla.MaxLossPct, "max_jitter_ms": sla.MaxJitterMs}})
	case steering.PathSwitched:
		e.m.switches.WithLabelValues(string(d.Reason)).Inc()
		return e.newEvent(event.PathSwitched, map[string]any{"site": st.id, "class": d.Class, "from": d.From, "to": d.To, "reason": string(d.Reason), "metrics": m, "by": "controller"})
	}
	return nil
}

// checkLiveness marks sites that stopped reporting offline.
func (e *Engine) checkLiveness() {
	now := e.o.Now()
	e.mu.RLock()
	var stale []*site
	for _, st := range e.sites {
		stale = append(stale, st)
	}
	e.mu.RUnlock()
	for _, st := range stale {
		if !e.owns(st) {
			continue
		}
		st.mu.Lock()
		if (st.status != sdwan.SiteUp && st.status != sdwan.SiteDegraded) || now.Sub(st.lastSeen) < e.o.OfflineAfter {
			st.mu.Unlock()
			continue
		}
		prev := st.status
		st.status = sdwan.SiteOffline
		id, device, last := st.id, st.device, st.lastSeen
		st.mu.Unlock()
		e.markOffline(id, device, prev, last, now, "no report for "+e.o.OfflineAfter.String())
	}
}

func (e *Engine) markOffline(id, device, prev string, last, now time.Time, reason string) {
	evs := []*event.Envelope{
		e.newEvent(event.SiteOffline, map[string]any{"site": id, "device": device, "last_seen": last.UTC(), "previous_status": prev, "reason": reason}),
		e.newEvent(event.DeviceStatusChanged, map[string]any{"device": device, "site": id, "status": org.DeviceOffline, "previous_status": org.DeviceOnline, "reason": reason}),
	}
	e.o.Logger.Info("site offline", "site", id, "last_seen", last, "reason", reason)
	e.record(id, sdwan.SiteOffline, prev, last, evs...)
}

// flushFigures saves the latest transport figures and last-seen times that changed.
func (e *Engine) flushFigures(ctx context.Context) {
	e.mu.RLock()
	all := make([]*site, 0, len(e.sites))
	for _, st := range e.sites {
		all = append(all, st)
	}
	e.mu.RUnlock()
	seen := map[string]time.Time{}
	var fs []sdwan.TransportFigures
	for _, st := range all {
		st.mu.Lock()
		if st.dirty {
			seen[st.id] = st.lastSeen
			st.dirty = false
		}
		for _, t := range st.transports {
			if t.dirty {
				fs = append(fs, sdwan.TransportFigures{SiteID: st.id, Name: t.name, Status: t.status, LatencyMs: t.latencyMs, LossPct: t.lossPct, JitterMs: t.jitterMs, At: t.at})
				t.dirty = false
			}
		}
		st.mu.Unlock()
	}
	if len(seen) == 0 && len(fs) == 0 {
		return
	}
	if err := e.store.SaveFigures(ctx, seen, fs); err != nil && !errors.Is(err, context.Canceled) {
		e.o.Logger.Warn("ingest: saving latest figures", "err", err)
	}
}

// onAck records a policy acknowledgement.
func (e *Engine) onAck(topic string, payload []byte) {
	siteID, _, ok := telemetry.ParseTopic(topic)
	st := e.site(siteID)
	var a telemetry.PolicyAck
	if !ok || st == nil || len(payload) > telemetry.MaxPayload || json.Unmarshal(payload, &a) != nil || a.Site != siteID ||
		(a.Status != sdwan.RolloutApplied && a.Status != sdwan.RolloutFailed) || len(a.Reason) > 2000 || a.Version < 1 {
		e.m.rejected.WithLabelValues("invalid_ack").Inc()
		return
	}
	if e.skewed(st, a.Time) { // dated like reports and events: within the window, or refused
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := e.store.SetRollout(ctx, siteID, a.Policy, a.Version, a.Status, a.Reason, e.o.Now().UTC()); err != nil {
		e.o.Logger.Error("ingest: recording policy ack", "site", siteID, "policy", a.Policy, "err", err)
	}
}

// onAgentEvent relays what an agent did by itself, such as a local failover, once checked
// against its site (agentEventData) and dated within the window.
func (e *Engine) onAgentEvent(topic string, payload []byte) {
	siteID, _, ok := telemetry.ParseTopic(topic)
	st := e.site(siteID)
	var a telemetry.AgentEvent
	if !ok || st == nil || len(payload) > telemetry.MaxPayload || json.Unmarshal(payload, &a) != nil || a.Site != siteID {
		e.m.rejected.WithLabelValues("invalid_event").Inc()
		return
	}
	data, err := e.agentEventData(st, &a)
	if err != nil {
		e.m.rejected.WithLabelValues("invalid_event").Inc()
		e.o.Logger.Debug("ingest: invalid agent event", "site", siteID, "err", err)
		return
	}
	if e.skewed(st, a.Time) || a.Type == "transport.up" {
		return
	}
	if a.Type == event.PathSwitched {
		e.m.switches.WithLabelValues("agent-local").Inc()
	}
	e.record(siteID, "", "", e.o.Now(), e.newEvent(a.Type, data))
}

// onStatus takes an agent's retained presence: "offline" (its last will) marks the site offline
// at once rather than after the liveness timeout.
func (e *Engine) onStatus(topic string, payload []byte) {
	siteID, _, ok := telemetry.ParseTopic(topic)
	st := e.site(siteID)
	var s telemetry.Status
	if !ok || st == nil || len(payload) > telemetry.MaxPayload || json.Unmarshal(payload, &s) != nil ||
		(s.State != "online" && s.State != "offline") {
		e.m.rejected.WithLabelValues("invalid_status").Inc()
		return
	}
	if s.State != "offline" {
		return
	}
	st.mu.Lock()
	if s.Device != st.device || (st.status != sdwan.SiteUp && st.status != sdwan.SiteDegraded) {
		st.mu.Unlock()
		return
	}
	prev := st.status
	st.status = sdwan.SiteOffline
	id, device, last := st.id, st.device, st.lastSeen
	st.mu.Unlock()
	e.markOffline(id, device, prev, last, e.o.Now(), "agent disconnected")
}
