// Package ingest is the controller's side of the loop with the agents: telemetry in from MQTT,
// rolling aggregates and time series, SLA and path decisions (steering), events, liveness, and
// policies and decisions out.
package ingest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
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
	// SaveFigures saves sites' last-seen times and watermarks and transports' latest figures.
	SaveFigures(ctx context.Context, sites map[string]sdwan.SiteFigures, fs []sdwan.TransportFigures) error
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
	OfflineAfter time.Duration // no report for this long: the site is offline; default 30s
	// FlushEvery is how often the time series are flushed, the latest figures saved and the
	// sites' watermarks published to the agents (see telemetry.Stored); default 5s.
	FlushEvery time.Duration
	Steering   steering.Options // default steering.DefaultOptions()
	Now        func() time.Time
	Notify     func() // wakes the webhook dispatcher after events were stored
	Registerer prometheus.Registerer
	Logger     *slog.Logger
	// OnSiteRemoved is told when a followed site is decommissioned, e.g. to disconnect its agent.
	OnSiteRemoved func(siteID, deviceID string)
	// OnQuarantine is told when a site is quarantined (e.g. to open a SOC case). It must not
	// block: it may be called with no lock held but on the message's or the API's path.
	OnQuarantine func(siteID string, q sdwan.Quarantine)
	// LateAfter: a report whose window ended longer ago than this (or three windows, if more)
	// is late (replayed from the agent's spool after an outage, or delayed): it goes into the
	// history, but no decision comes from it. Default 5s.
	LateAfter time.Duration
	// SyncWithin: after a start, the engine decides nothing for a site until its agent says
	// which paths it is on (its online status), or for at most this long; default 15s.
	SyncWithin time.Duration
	// RetryQuarantinedEvery is how often Run tries to load the quarantined sites again;
	// default 1 minute.
	RetryQuarantinedEvery time.Duration
	// MaxPast and MaxFuture bound agent times around Now (clock.go); defaults DefaultMaxPast
	// and DefaultMaxFuture. OnClockSkew is told of a site whose times fall outside (at most
	// once per 10 minutes per site), e.g. to open a SOC case; it must not block.
	MaxPast, MaxFuture time.Duration
	OnClockSkew        func(ClockSkew)
	// OnControllerClock is told when most sites agree that the controller's clock is wrong
	// (clock.go), and when that ends (Till set); it must not block.
	OnControllerClock func(ControllerClock)
	// Owner, with several controllers (docs/scale-out.md), says which sites this engine may
	// evaluate, publish decisions for and raise events about right now. nil: all of them.
	Owner Owner
	// HoleGrace: a site's sequences missing below newer ones for this long are asked of its
	// agent at once (holes.go); default DefaultHoleGrace, negative: never (the agent then
	// finds the hole by its stalled watermark alone, as with controllers before the request).
	HoleGrace time.Duration
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
	boot  string // this start's identity in the watermarks

	reports pool
	rec     recorder
	// Sites taken over (SitesTaken), for Run's takeover goroutine.
	takeMu   sync.Mutex
	taking   []func(string) bool
	takeWake chan struct{}
	took     chan struct{} // to Run: sites were taken over, checkpoint soon
	retain   retainer      // the watermarks' retained copies, on a liveBus (watermark.go)
	holes    holes         // sites with sequences missing below newer ones (holes.go)
	m        metrics
	clock    clockGuard
}

// site is the live state of one claimed site. Its mutex serialises the site's messages
// (the bus already delivers one site's messages in order, one at a time) with the liveness
// loop, the API's reads and policy pushes.
type site struct {
	mu       sync.Mutex
	id       string
	device   string
	status   string
	lastSeen time.Time
	// win: which of the device's sequences were taken (seqwin.go); its mark, the highest
	// contiguous one, is what the watermark may cover. Until resyncTill the site has just
	// become this engine's (Owner): a jump to what the agent holds is a catch-up on what the
	// previous owner stored, not a loss (the stream may still redeliver older reports first).
	win        seqWindow
	resyncTill time.Time
	// The watermark may cover only messages fully handled (written to the sink, events
	// recorded): busy counts the messages taken and still being handled (a reconnecting
	// agent's old and new connections may deliver at once), safe the contiguous mark when busy
	// was last 0.
	busy       int
	safe       uint64
	stored     uint64         // the watermark: reports up to it are stored (persisted, published)
	steer      *steering.Site // nil while the site has no transports, or is quarantined
	quarantine *sdwan.Quarantine
	// synced: the steering state holds the paths the agent is on (see Options.SyncWithin);
	// until then, or syncBy, nothing is decided.
	synced     bool
	syncBy     time.Time
	classes    []steering.Class
	transports []*transport
	paths      map[string]string // last decisions published
	scratch    []steering.Decision
	dirty      bool
	owned      bool // with an Owner: owned at the last check (owner.go)
	fenced     bool // a write was fenced since it was last owned: logged once (owner.go)
	// policyOut: with an Owner, its policy was published at a takeover since this engine
	// started (owner.go); later takeovers (leases moving back and forth) leave it: a change
	// is published when it is made, by whichever controller makes it.
	policyOut bool
	hole      holeState // its lowest open hole, and the requests made for it (holes.go)
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
	if o.LateAfter <= 0 {
		o.LateAfter = 5 * time.Second
	}
	if o.SyncWithin <= 0 {
		o.SyncWithin = 15 * time.Second
	}
	if o.HoleGrace == 0 {
		o.HoleGrace = DefaultHoleGrace
	}
	if o.RetryQuarantinedEvery <= 0 {
		o.RetryQuarantinedEvery = time.Minute
	}
	boot := make([]byte, 8)
	_, _ = rand.Read(boot)
	e := &Engine{store: st, bus: bus, sink: sink, roll: rollup.NewStore(), o: o, sites: map[string]*site{}, boot: hex.EncodeToString(boot), takeWake: make(chan struct{}, 1), took: make(chan struct{}, 1)}
	e.retain = retainer{pending: map[string]retained{}, wake: make(chan struct{}, 1)}
	e.rec.init()
	e.m = newMetrics(o.Registerer, e)
	return e
}

// Start loads the live sites and subscribes to the agents' topics. Call it before the broker
// serves, so that nothing is missed; then Run. Nothing in one site's data stops it: a site
// that cannot be loaded is quarantined (see sdwan.Quarantine) and every other one runs. It
// fails only when the database cannot be read at all or the bus refuses a subscription.
func (e *Engine) Start(ctx context.Context) error {
	sites, err := e.store.LiveSites(ctx)
	if err != nil {
		return fmt.Errorf("ingest: loading sites: %w", err)
	}
	for _, s := range sites {
		e.load(ctx, s, false)
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

// Run publishes every site's policies and watermark (retained, so agents that connect later
// get them; with several controllers each owner publishes its sites' at takeover instead),
// then keeps liveness and figures, and stores status changes and events (see
// recorder), until ctx is done; then it stores what is pending and saves the figures.
func (e *Engine) Run(ctx context.Context) error {
	recDone := make(chan struct{})
	recCtx, stopRec := context.WithCancel(ctx)
	defer func() { stopRec(); <-recDone }()
	go e.writeRecords(recCtx, recDone)
	takeDone := make(chan struct{})
	takeCtx, stopTake := context.WithCancel(ctx)
	defer func() { stopTake(); <-takeDone }()
	go e.takeOvers(takeCtx, takeDone)
	defer e.startRetaining(ctx)() // after the last checkpoint: it publishes what is queued

	e.mu.RLock()
	ids := make([]string, 0, len(e.sites))
	for id := range e.sites {
		ids = append(ids, id)
	}
	e.mu.RUnlock()
	e.publishAll(ctx, ids)

	live := time.NewTicker(time.Second)
	flush := time.NewTicker(e.o.FlushEvery)
	var fastUntil time.Time // checkpoints every second until then (took)
	retry := time.NewTicker(e.o.RetryQuarantinedEvery)
	holes := time.NewTicker(e.holeTick())
	if e.o.HoleGrace < 0 {
		holes.Stop() // never asks
	}
	defer holes.Stop()
	defer live.Stop()
	defer flush.Stop()
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			stopRec() // writes what is pending (within 10s); from now on record writes at once
			<-recDone
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			e.checkpoint(sctx)
			return nil
		case <-live.C:
			e.checkLiveness()
		case <-flush.C:
			e.checkpoint(ctx)
			if time.Now().Before(fastUntil) {
				flush.Reset(min(time.Second, e.o.FlushEvery))
			} else {
				flush.Reset(e.o.FlushEvery)
			}
		case <-e.took:
			// Sites were taken over: what their agents send again, what the stream delivers
			// again (a dead owner's message unacknowledged for AckWait) and their next reports
			// are covered by a watermark within a second rather than at the next FlushEvery,
			// for two FlushEvery.
			fastUntil = time.Now().Add(2 * e.o.FlushEvery)
			flush.Reset(min(time.Second, e.o.FlushEvery))
		case <-retry.C:
			e.retryQuarantined(ctx)
		case <-holes.C:
			if e.askHoles(e.o.Now()) {
				// A hole asked for is filled: the watermark over it, within a second, lets
				// the agent delete what it kept.
				flush.Reset(min(time.Second, e.o.FlushEvery))
			}
		}
	}
}

// load builds (or rebuilds) the live state of a site from the database and, if publish,
// publishes its policies and decisions. A decommissioned site is forgotten. A site whose state
// cannot be loaded is quarantined, not an error: the caller's change is stored already, and
// the site is followed (liveness, history) without decisions until it loads.
func (e *Engine) load(ctx context.Context, s *sdwan.Site, publish bool) {
	if s.Status == sdwan.SiteDecommissioned || s.ClaimedAt.IsZero() {
		e.mu.Lock()
		old := e.sites[s.ID]
		delete(e.sites, s.ID)
		e.mu.Unlock()
		e.roll.Delete(s.ID)
		if old != nil && e.o.OnSiteRemoved != nil {
			e.o.OnSiteRemoved(s.ID, s.DeviceID)
		}
		return
	}
	e.mu.Lock()
	st := e.sites[s.ID]
	// A site new to this engine at run time: just claimed, or taken over from another
	// controller (Owner). Its watermark goes out at once, even at 0: an agent that has never
	// seen one falls back to deleting at PUBACK after a grace (an older controller), and must
	// learn before that this controller speaks the watermark.
	isNew := st == nil && publish
	if st == nil {
		// The watermark survives restarts: what is stored is not taken again.
		st = &site{id: s.ID, status: s.Status, lastSeen: s.LastSeen, device: s.DeviceID, stored: s.StoredSeq, safe: s.StoredSeq,
			// A site claimed now has no paths to learn; one loaded at start, or taken over
			// from another controller (Owner), has.
			synced: publish && e.o.Owner == nil, syncBy: e.o.Now().Add(e.o.SyncWithin)}
		st.win.reset(s.StoredSeq)
		e.sites[s.ID] = st
	}
	e.mu.Unlock()
	st.mu.Lock()
	if st.device != s.DeviceID { // another device claimed the site: its sequence starts again (the claim stored 0)
		st.win.reset(s.StoredSeq)
		st.stored, st.safe = s.StoredSeq, s.StoredSeq
	}
	st.mu.Unlock()
	if isNew { // taken over: the agent sends again what the previous owner had not stored
		e.publishStored(s.ID, s.DeviceID, s.StoredSeq)
	}

	var q *sdwan.Quarantine
	var as []*sdwan.Assignment
	if s.Quarantine != nil {
		q = s.Quarantine
	} else if a, err := e.store.Assignments(ctx, s.ID); err != nil {
		q = &sdwan.Quarantine{Kind: sdwan.QuarantineStore, Reason: "reading its policies: " + err.Error()}
	} else {
		as = a
	}

	st.mu.Lock()
	st.device = s.DeviceID
	old := st.transports
	st.transports = st.transports[:0:0]
	for _, t := range s.Transports {
		tr := &transport{name: t.Name, status: t.Status, latencyMs: t.LatencyMs, lossPct: t.LossPct, jitterMs: t.JitterMs, at: t.LastSampleAt}
		if i := slices.IndexFunc(old, func(o *transport) bool { return o.name == t.Name }); i >= 0 {
			tr = old[i]
		}
		st.transports = append(st.transports, tr)
	}
	if q == nil {
		if err := e.configure(st, s.Transports, steeringClasses(as, s.Transports)); err != nil {
			q = &sdwan.Quarantine{Kind: sdwan.QuarantineSteering, Reason: err.Error()}
		}
	}
	fresh := e.setQuarantine(st, q)
	st.mu.Unlock()
	if fresh {
		e.reportQuarantine(st.id, *q)
	}
	if !publish || q != nil {
		return
	}
	if err := e.PushPolicies(ctx, s.ID); err != nil {
		e.o.Logger.Error("ingest: publishing policies", "site", s.ID, "err", err)
		return
	}
	if err := e.publishDecisions(st, true); err != nil {
		e.o.Logger.Error("ingest: publishing decisions", "site", s.ID, "err", err)
	}
}

// configure builds or reconfigures a site's steering state for these transports and classes.
// With no transports, a normal state for a site claimed before its transports were added,
// there is nothing to steer: the state is dropped and evaluation begins with the first
// transport. On error the site is unchanged. Called with st.mu held.
func (e *Engine) configure(st *site, ts []*sdwan.Transport, classes []steering.Class) error {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Name
	}
	var err error
	switch {
	case len(names) == 0:
		st.steer = nil
	case st.steer == nil:
		var n *steering.Site
		if n, err = steering.NewSite(names, classes, e.o.Steering); err == nil {
			st.steer = n
		}
	default:
		st.scratch, err = st.steer.Reconfigure(e.o.Now(), names, classes, st.scratch[:0])
	}
	if err != nil {
		return err
	}
	st.classes = classes
	return nil
}

// setQuarantine sets or lifts a site's quarantine and reports whether it is a new one (then
// the caller reports it, with no lock held). Called with st.mu held.
func (e *Engine) setQuarantine(st *site, q *sdwan.Quarantine) bool {
	switch {
	case q == nil:
		if st.quarantine != nil {
			e.o.Logger.Info("ingest: site loads again; quarantine lifted", "site", st.id)
		}
		st.quarantine = nil
		return false
	case st.quarantine != nil && st.quarantine.Kind == q.Kind && st.quarantine.Reason == q.Reason:
		return false
	}
	q.Since = e.o.Now().UTC()
	st.quarantine, st.steer, st.classes, st.paths = q, nil, nil, nil
	return true
}

func (e *Engine) reportQuarantine(siteID string, q sdwan.Quarantine) {
	e.o.Logger.Error("ingest: site quarantined: its stored state cannot be loaded; every other site runs",
		"site", siteID, "kind", q.Kind, "reason", q.Reason)
	if e.o.OnQuarantine != nil {
		e.o.OnQuarantine(siteID, q)
	}
}

// Quarantined implements sdwan.Live: why the site is quarantined, or nil.
func (e *Engine) Quarantined(siteID string) *sdwan.Quarantine {
	st := e.site(siteID)
	if st == nil {
		return nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.quarantine == nil {
		return nil
	}
	q := *st.quarantine
	return &q
}

// retryQuarantined loads the quarantined sites again: the cause may have been passing (a
// database error) or fixed outside the API.
func (e *Engine) retryQuarantined(ctx context.Context) {
	e.mu.RLock()
	var ids []string
	for id, st := range e.sites {
		st.mu.Lock()
		if st.quarantine != nil {
			ids = append(ids, id)
		}
		st.mu.Unlock()
	}
	e.mu.RUnlock()
	for _, id := range ids {
		if err := e.SiteChanged(ctx, id); err != nil {
			e.o.Logger.Warn("ingest: retrying a quarantined site", "site", id, "err", err)
		}
	}
}

// steeringClasses are the classes the site steers by (shared with the what-if replay).
var steeringClasses = sdwan.SteeringClasses

func (e *Engine) site(id string) *site {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.sites[id]
}

// SiteChanged implements sdwan.Live: reload the site from the database. It fails only when
// the site cannot be read; a site that cannot be run is quarantined.
func (e *Engine) SiteChanged(ctx context.Context, siteID string) error {
	s, err := e.store.GetSite(ctx, siteID)
	if err != nil {
		return err
	}
	e.load(ctx, s, true)
	return nil
}

// The policy message is defined in telemetry, for both sides.
type (
	Policy          = telemetry.Policy
	PolicyTransport = telemetry.PolicyTransport
	PolicyVersion   = telemetry.PolicyVersion
)

// publishAll publishes each site's policy and watermark at start (see Run), reading the sites
// and their assignments takeOverBatch at a time when the store can: two queries per site
// were most of a restarted controller's CPU at 10,000 sites, while every agent was
// reconnecting to it (docs/benchmarks.md, "Reconnect rate at 10,000 agents"). With several
// controllers (an Owner) it does nothing: each publishes its own sites' when it takes them
// over (takeOverSites), not N controllers every site's.
func (e *Engine) publishAll(ctx context.Context, ids []string) {
	if e.o.Owner != nil {
		return
	}
	slices.Sort(ids)
	for chunk := range slices.Chunk(ids, takeOverBatch) {
		if ctx.Err() != nil {
			return
		}
		e.publishPolicies(ctx, chunk, nil)
		for _, id := range chunk {
			// Decisions are not published now: a fresh steering state is not what the agents
			// run (see onStatus); the last ones published stay with the agents.
			if st := e.site(id); st != nil {
				st.mu.Lock()
				device, stored := st.device, st.stored
				st.mu.Unlock()
				e.publishStored(id, device, stored) // with this boot: the agents send again what is not covered
			}
		}
	}
}

// publishPolicies publishes the policies of the sites of ids (at most takeOverBatch), reading
// the sites (unless given) and their assignments in one batch each when the store can.
func (e *Engine) publishPolicies(ctx context.Context, ids []string, sites map[string]*sdwan.Site) {
	sitesOf, _ := e.store.(sitesByID)
	assignmentsOf, _ := e.store.(assignmentsByID)
	if sites == nil && sitesOf != nil {
		var err error
		if sites, err = sitesOf.SitesByID(ctx, ids); err != nil {
			e.o.Logger.Warn("ingest: reading sites to publish their policies", "sites", len(ids), "err", err)
			sites = nil // each site on its own, below
		}
	}
	var as map[string][]*sdwan.Assignment
	if sites != nil && assignmentsOf != nil {
		var err error
		if as, err = assignmentsOf.AssignmentsOf(ctx, ids); err != nil {
			e.o.Logger.Warn("ingest: reading assignments to publish policies", "sites", len(ids), "err", err)
			as = nil // each site's on its own, below
		}
	}
	for _, id := range ids {
		var err error
		switch s := sites[id]; {
		case sites == nil:
			err = e.PushPolicies(ctx, id)
		case s == nil: // removed since the engine loaded it
		case as != nil:
			err = e.pushPolicy(s, as[id])
		default:
			var a []*sdwan.Assignment
			if a, err = e.store.Assignments(ctx, id); err == nil {
				err = e.pushPolicy(s, a)
			}
		}
		if err != nil {
			e.o.Logger.Error("ingest: publishing policies", "site", id, "err", err)
		}
	}
}

// assignmentsByID is the batch read of assignments (controller/store has it; see sitesByID).
type assignmentsByID interface {
	AssignmentsOf(ctx context.Context, ids []string) (map[string][]*sdwan.Assignment, error)
}

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
	return e.pushPolicy(s, as)
}

// pushPolicy is PushPolicies with the site and its assignments read.
func (e *Engine) pushPolicy(s *sdwan.Site, as []*sdwan.Assignment) error {
	siteID := s.ID
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
		var q *sdwan.Quarantine
		fresh := false
		st.mu.Lock()
		// A site quarantined for its steering state may load with this policy.
		retry := st.quarantine != nil && st.quarantine.Kind == sdwan.QuarantineSteering
		if retry || (st.quarantine == nil && !slices.EqualFunc(classes, st.classes, sameClass)) {
			if err := e.configure(st, s.Transports, classes); err != nil {
				q = &sdwan.Quarantine{Kind: sdwan.QuarantineSteering, Reason: err.Error()}
			}
			fresh = e.setQuarantine(st, q)
		}
		st.mu.Unlock()
		if fresh {
			e.reportQuarantine(siteID, *q)
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
	if st.steer == nil || !st.synced { // nothing decided (yet): the agent keeps its own paths
		st.mu.Unlock()
		return nil
	}
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
	if e.refuseReport(st, r) {
		return
	}
	now := e.o.Now()
	st.mu.Lock()
	if r.Device != st.device {
		st.mu.Unlock()
		e.m.rejected.WithLabelValues("wrong_device").Inc()
		return
	}
	v := e.takeSeq(st, r.Seq, r.Held, now)
	e.noteHole(st, now)
	if v == seqDuplicate || v == seqTooFar {
		st.mu.Unlock()
		e.m.rejected.WithLabelValues(rejectReason(v)).Inc()
		return
	}
	st.busy++
	// A late report goes into the history only: evaluating old windows as current raised
	// transport.down and moved traffic off healthy links after every controller restart. A
	// report filling a hole (sent again after the broker lost it) is older than one already
	// evaluated: history only too.
	late := v == seqGap || now.Sub(r.Time) > max(e.o.LateAfter, 3*time.Duration(r.WindowMs)*time.Millisecond)
	if late {
		e.m.late.Inc()
	}
	e.roll.AddReport(now, r) // placed at the report's own time
	for i := range r.Transport {
		if st.steer == nil || late { // no transports yet, or quarantined: history and liveness only
			break
		}
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
	if !st.synced && now.After(st.syncBy) {
		st.synced = true // the agent did not say; decide from the evidence gathered since the start
	}
	if st.steer != nil && !late && st.synced {
		st.scratch = st.steer.Evaluate(now, st.scratch[:0])
	} else {
		st.scratch = st.scratch[:0]
	}
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
			if !errors.Is(err, telemetry.ErrInvalid) { // invalid for good: never sent again
				// Not stored: the watermark must not cover it, or the agent deletes a report
				// that is in no history. Given back, it is sent again when the watermark stalls.
				st.mu.Lock()
				st.win.untake(r.Seq)
				e.noteHole(st, now)
				st.mu.Unlock()
				e.o.Logger.Debug("ingest: writing a report to the time series failed; the watermark waits for it to come again",
					"site", st.id, "seq", r.Seq, "err", err)
			}
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
	e.handled(st)
	e.m.reports.Inc()
	e.m.lag.Observe(now.Sub(r.Time).Seconds())
}

// siteStatus derives a reporting site's status from its transports and classes. Called with
// st.mu held.
func (e *Engine) siteStatus(st *site) string {
	if st.steer == nil {
		return sdwan.SiteUp // reporting, with nothing evaluated
	}
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
	ev, err := event.NewAt(typ, data, e.o.Now())
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

// checkpoint makes what was handled durable and tells the agents: it notes each site's last
// handled report, flushes the time series, saves the latest figures, last-seen times and
// watermarks in one transaction, waits until the events recorded before are stored, and only
// then publishes the new watermarks (retained). A failure leaves the watermarks where they were:
// the agents keep their records and send them again.
func (e *Engine) checkpoint(ctx context.Context) {
	e.mu.RLock()
	all := make([]*site, 0, len(e.sites))
	for _, st := range e.sites {
		all = append(all, st)
	}
	e.mu.RUnlock()
	type mark struct {
		st     *site
		device string
		seq    uint64
	}
	var marks []mark
	sites := map[string]sdwan.SiteFigures{}
	var fs []sdwan.TransportFigures
	for _, st := range all {
		if e.o.Owner != nil && !e.o.Owner.Owns(st.id) {
			continue // another controller's to write (a fenced write would be refused anyway)
		}
		st.mu.Lock()
		h := st.safe
		if st.dirty || h > st.stored {
			sites[st.id] = sdwan.SiteFigures{LastSeen: st.lastSeen, StoredSeq: max(h, st.stored)}
			st.dirty = false
		}
		if h > st.stored {
			marks = append(marks, mark{st, st.device, h})
		}
		for _, t := range st.transports {
			if t.dirty {
				fs = append(fs, sdwan.TransportFigures{SiteID: st.id, Name: t.name, Status: t.status, LatencyMs: t.latencyMs, LossPct: t.lossPct, JitterMs: t.jitterMs, At: t.at})
				t.dirty = false
			}
		}
		st.mu.Unlock()
	}
	gen := e.rec.mark()
	if e.sink != nil {
		if err := e.sink.Flush(ctx); err != nil {
			e.o.Logger.Warn("ingest: flushing time series; watermarks held", "err", err)
			for _, m := range marks { // save the figures, not the watermarks
				f := sites[m.st.id]
				m.st.mu.Lock()
				f.StoredSeq = m.st.stored
				m.st.mu.Unlock()
				sites[m.st.id] = f
			}
			marks = nil
		}
	}
	if len(sites) == 0 && len(fs) == 0 {
		return
	}
	if err := e.store.SaveFigures(ctx, sites, fs); e.fenced(err, "figures") {
		// The others were saved; a fenced site's watermark is its new owner's to publish.
		gone := fencedSites(err)
		marks = slices.DeleteFunc(marks, func(m mark) bool { return slices.Contains(gone, m.st.id) })
	} else if err != nil {
		if !errors.Is(err, context.Canceled) {
			e.o.Logger.Warn("ingest: saving latest figures; watermarks held", "err", err)
		}
		return
	}
	if len(marks) == 0 || !e.rec.waitStored(ctx, gen) {
		return
	}
	for _, m := range marks {
		m.st.mu.Lock()
		m.st.stored = max(m.st.stored, m.seq)
		m.st.mu.Unlock()
		e.publishStored(m.st.id, m.device, m.seq)
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
	if !e.takeOther(st, a.Seq) { // a duplicate
		return
	}
	defer e.handled(st)
	if e.skewed(st, a.Time) { // dated like reports and events: within the window, or refused
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := e.store.SetRollout(ctx, siteID, a.Policy, a.Version, a.Status, a.Reason, e.o.Now().UTC()); err != nil && !e.fenced(err, "rollout") {
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
	if !e.takeOther(st, a.Seq) { // a duplicate (sent again after a reconnect or a hole)
		return
	}
	defer e.handled(st) // refused below or recorded: the watermark may pass it either way
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

// adoptPaths takes the paths a site's agent is on into a steering state that has not yet learnt
// them (after a start), so that the controller's first decisions start from where traffic is.
func (e *Engine) adoptPaths(st *site, s *telemetry.Status) {
	st.mu.Lock()
	if st.synced || s.Device != st.device || st.steer == nil || len(s.Paths) == 0 {
		st.mu.Unlock()
		return
	}
	for class, path := range s.Paths {
		st.steer.Adopt(e.o.Now(), class, path) // an unknown class or transport is left as it is
	}
	st.synced = true
	st.mu.Unlock()
	if err := e.publishDecisions(st, true); err != nil {
		e.o.Logger.Warn("ingest: publishing decisions", "site", st.id, "err", err)
	}
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
	if !e.owns(st) { // its owner follows it (a status replayed to a partition's former owner)
		return
	}
	if s.State == "online" {
		e.adoptPaths(st, &s)
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
