// Package engine is the agent's main loop: it probes every transport, turns the results into
// telemetry windows spooled to disk and sent over MQTT, applies the controller's policy and
// path decisions to the data plane, and fails over by itself when a transport dies.
package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/netip"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vishvananda/netns"

	"github.com/edgewan/edgewan/agent/claim"
	"github.com/edgewan/edgewan/agent/config"
	"github.com/edgewan/edgewan/agent/dataplane"
	"github.com/edgewan/edgewan/agent/probe"
	"github.com/edgewan/edgewan/agent/spool"
	"github.com/edgewan/edgewan/steering"
	"github.com/edgewan/edgewan/telemetry"
)

// Options are what Run needs besides the configuration.
type Options struct {
	Config   *config.Config
	Creds    *claim.Credentials
	Version  string
	Logger   *slog.Logger
	Registry prometheus.Registerer // nil: metrics are not registered
	Steering steering.Options      // zero: steering.DefaultOptions(), as the controller
	OnStart  func(*Engine)         // called once the engine runs (e.g. to serve its Status); may be nil
	// OnAccepted, if set, is told when the broker accepted each spooled report: at its PUBACK
	// (QoS 1); at QoS 0 (on NATS) the time it was sent on the connection, once the
	// controller's watermark covers it (the copy stored may be one the agent sent again, as
	// for a PUBACKed report the broker dropped). Tests of a broker node's failover measure
	// with it. Called from the sending goroutine: it must not block.
	OnAccepted func(at time.Time)
}

// Engine is one running agent. Its fields are guarded by mu; probe callbacks take it briefly.
type Engine struct {
	o   Options
	cfg *config.Config
	log *slog.Logger
	m   *metrics
	sp  *spool.Spool
	dp  *dataplane.Dataplane // nil when not enforcing
	up  *uplink

	kick   chan struct{} // reconcile the data plane (coalescing)
	early  chan struct{} // end the window now: the local detector would decide on it (coalescing)
	events chan telemetry.AgentEvent

	mu         sync.Mutex
	policy     *telemetry.Policy // last received; nil before the first
	transports []transportSpec   // effective, in table order
	monitors   map[string]*monitor
	steer      *steering.Site
	classes    []steering.Class
	content    *telemetry.SteeringContent
	qos        *telemetry.QoSContent
	closing    bool              // Run is shutting down: no new monitors, no new policy
	decisions  map[string]string // the controller's, class -> transport
	paths      map[string]string // applied (effective) paths
	acked      map[string]string // policy -> "version/status" last acknowledged
	scratch    []steering.Decision
	windowAt   time.Time // when the current window began
}

// transportSpec is a transport as the agent runs it: the configuration merged over the
// controller's description.
type transportSpec struct {
	Name, Interface, Gateway, Gateway6, Source, Method string
	Targets                                            []string
	Interval, Timeout, DelayStep                       time.Duration
}

// Run runs the agent until ctx ends, then shuts down cleanly: it stops probing, sends what it
// can, and removes everything it added to the data plane.
func Run(ctx context.Context, o Options) error {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Steering == (steering.Options{}) {
		o.Steering = steering.DefaultOptions()
		st := o.Config.Steering
		if st.HoldDown > 0 {
			o.Steering.HoldDown = st.HoldDown
		}
		if st.BreachAfter > 0 {
			o.Steering.BreachAfter = st.BreachAfter
		}
		if st.RecoverAfter > 0 {
			o.Steering.RecoverAfter = st.RecoverAfter
		}
	}
	e := &Engine{o: o, cfg: o.Config, log: o.Logger, kick: make(chan struct{}, 1), early: make(chan struct{}, 1), events: make(chan telemetry.AgentEvent, 1024),
		monitors: map[string]*monitor{}, decisions: map[string]string{}, paths: map[string]string{}, acked: map[string]string{}}
	e.m = newMetrics(o.Registry)
	// Acks are written every 5 s: a crash re-sends at most that much, which the controller
	// drops by sequence number.
	sp, err := spool.Open(spool.Options{Dir: filepath.Join(o.Config.DataDir, "spool"), MaxBytes: o.Config.SpoolMax, AckEvery: 5 * time.Second})
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	defer sp.Close()
	e.sp = sp
	e.m.registerSpool(o.Registry, sp)
	if *o.Config.Enforce {
		dp, err := dataplane.New(netns.None(), dataplane.Options{TableBase: o.Config.Routing.TableBase,
			RulePriority: o.Config.Routing.RulePriority, MarkBase: o.Config.Routing.MarkBase})
		if err != nil {
			return fmt.Errorf("agent: %w", err)
		}
		defer dp.Close()
		e.dp = dp
	}

	// Until the controller's policy arrives, run what the configuration says.
	e.mu.Lock()
	e.setTransportsLocked(e.mergeTransports(nil))
	e.mu.Unlock()

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	e.up, err = newUplink(e, o.Creds, o.Config.MQTTStandby)
	if err != nil {
		e.stopMonitors()
		return err
	}
	e.m.registerDeleteMode(o.Registry, e.up.deleteMode)
	wg.Add(5)
	go func() { defer wg.Done(); e.eventLoop(runCtx) }()
	go func() { defer wg.Done(); e.reconcileLoop(runCtx) }()
	go func() { defer wg.Done(); e.windowLoop(runCtx) }()
	go func() { defer wg.Done(); e.up.sendLoop(runCtx) }()
	go func() { defer wg.Done(); e.up.connectLoop(runCtx) }()
	e.kickReconcile()
	if o.OnStart != nil {
		o.OnStart(e)
	}

	<-ctx.Done()
	e.log.Info("agent: shutting down")
	stop()
	e.stopMonitors()
	wg.Wait()
	e.up.close()
	if e.dp != nil {
		if n, err := e.dp.Cleanup(); err != nil {
			e.log.Error("agent: removing the data plane", "err", err)
		} else {
			e.log.Info("agent: data plane removed", "changes", n)
		}
	}
	return nil
}

// ---- transports and probes --------------------------------------------------------------------

// mergeTransports gives the transports to run: the controller's (cheapest first) with the
// local configuration's fields over them, then transports only the configuration names.
func (e *Engine) mergeTransports(p *telemetry.Policy) []transportSpec {
	var out []transportSpec
	local := map[string]config.Transport{}
	for _, t := range e.cfg.Transports {
		local[t.Name] = t
	}
	add := func(t transportSpec) {
		if l, ok := local[t.Name]; ok {
			if l.Interface != "" {
				t.Interface = l.Interface
			}
			if l.Gateway != "" {
				t.Gateway = l.Gateway
			}
			if l.Gateway6 != "" {
				t.Gateway6 = l.Gateway6
			}
			if len(l.ProbeTargets) > 0 {
				t.Targets = l.ProbeTargets
			}
			t.Source, t.Method, t.Interval, t.Timeout, t.DelayStep = l.Source, l.Method, l.Interval, l.Timeout, l.DelayStep
			delete(local, t.Name)
		}
		if t.Method == "" {
			t.Method = probe.ICMP
		}
		if t.Interval <= 0 {
			t.Interval = e.cfg.Probe.Interval
		}
		if t.Timeout <= 0 {
			t.Timeout = e.cfg.Probe.Timeout
		}
		if t.DelayStep <= 0 {
			t.DelayStep = e.cfg.Probe.DelayStep
		}
		if len(t.Targets) == 0 && t.Gateway != "" {
			t.Targets = []string{t.Gateway}
		}
		if len(t.Targets) == 0 && t.Gateway6 != "" {
			t.Targets = []string{t.Gateway6}
		}
		out = append(out, t)
	}
	if p != nil {
		for _, t := range p.Transports {
			add(transportSpec{Name: t.Name, Interface: t.Interface, Gateway: t.Gateway, Targets: t.ProbeTargets})
		}
	}
	for _, t := range e.cfg.Transports {
		if _, ok := local[t.Name]; ok {
			add(transportSpec{Name: t.Name})
		}
	}
	return out
}

// setTransportsLocked starts, restarts and stops monitors to match ts, and rebuilds the local
// steering state when the transports or classes changed.
func (e *Engine) setTransportsLocked(ts []transportSpec) {
	if e.closing {
		return
	}
	e.transports = ts
	keep := map[string]bool{}
	for i, t := range ts {
		keep[t.Name] = true
		pc := probe.Config{Method: t.Method, Targets: t.Targets, Interval: t.Interval, Timeout: t.Timeout,
			DelayStep: t.DelayStep, Interface: t.Interface, Source: t.Source}
		if e.dp != nil {
			pc.Mark = e.dp.Mark(i)
		}
		if mon := e.monitors[t.Name]; mon != nil {
			if mon.sameProbe(pc) {
				continue
			}
			mon.stop()
		}
		if len(pc.Targets) == 0 {
			if mon := e.monitors[t.Name]; mon != nil {
				mon.stop()
				delete(e.monitors, t.Name)
			}
			e.log.Warn("agent: transport has no probe target and no gateway: not probed", "transport", t.Name)
			continue
		}
		prev := e.monitors[t.Name]
		mon := startMonitor(e, t.Name, pc, prev)
		e.monitors[t.Name] = mon
		if e.dp == nil {
			mon.begin() // nothing to wait for
		}
	}
	for name, mon := range e.monitors {
		if !keep[name] {
			mon.stop()
			delete(e.monitors, name)
		}
	}
	e.rebuildSteeringLocked()
}

// rebuildSteeringLocked (re)makes the local steering state for the current transports and
// steering policy, keeping what it knew where the shape did not change.
func (e *Engine) rebuildSteeringLocked() {
	names := make([]string, 0, len(e.transports))
	for _, t := range e.transports {
		names = append(names, t.Name)
	}
	var classes []steering.Class
	if e.content != nil {
		for _, c := range steering.ClassesOf(e.content) {
			c.Preferred = slices.DeleteFunc(slices.Clone(c.Preferred), func(n string) bool { return !slices.Contains(names, n) })
			classes = append(classes, c)
		}
	} else if len(names) > 0 {
		classes = []steering.Class{{Name: steering.DefaultClass, Preferred: names}}
	}
	if len(names) == 0 {
		e.steer, e.classes = nil, nil
		return
	}
	now := time.Now()
	if e.steer != nil {
		var err error
		e.scratch, err = e.steer.Reconfigure(now, names, classes, e.scratch[:0])
		if err == nil {
			e.classes = classes
			return
		}
		e.log.Warn("agent: steering reconfigure", "err", err)
	}
	s, err := steering.NewSite(names, classes, e.o.Steering)
	if err != nil {
		e.log.Error("agent: steering", "err", err)
		e.steer = nil
		return
	}
	e.steer, e.classes = s, classes
}

// onDown is called by a monitor (with e.mu held) the moment its transport goes hard down: the
// local steering moves the classes off it at once. The verdict is confirmed (onConfirmedLocked)
// or revoked (onRevokedLocked) within the probe timeout.
func (e *Engine) onDownLocked(name string, now time.Time) {
	if e.steer != nil {
		e.steer.Observe(now, name, steering.Metrics{Down: true})
		e.scratch = e.steer.Evaluate(now, e.scratch[:0])
		e.logDecisions()
	}
	e.kickReconcile()
}

// logDecisions logs the local steering's latest decisions (debug).
func (e *Engine) logDecisions() {
	for _, d := range e.scratch {
		e.log.Debug("agent: local steering", "kind", d.Kind.String(), "transport", d.Transport, "class", d.Class,
			"from", d.From, "to", d.To, "reason", string(d.Reason), "latency_ms", d.Metrics.LatencyMs, "loss_pct", d.Metrics.LossPct, "jitter_ms", d.Metrics.JitterMs)
	}
}

// onConfirmedLocked raises transport.down for a confirmed dead-link verdict.
func (e *Engine) onConfirmedLocked(name string) {
	e.m.transportUp.WithLabelValues(name).Set(0)
	e.event(telemetry.AgentEvent{Type: "transport.down", Transport: name, Reason: "local"})
}

// onRevokedLocked withdraws a dead-link verdict that a late answer (rtt) disproved: no event
// (nothing was raised), the local steering no longer holds the transport down, and the classes
// whose latency bound the answer misses stay off it (steering.Site.Revoke).
func (e *Engine) onRevokedLocked(name string, rtt time.Duration, now time.Time) {
	if e.steer == nil {
		return
	}
	if !e.steer.Revoke(now, name, float64(rtt)/float64(time.Millisecond)) {
		// a second verdict within the hold-down of a revocation: flap damping, the local
		// steering holds the transport down until it recovers as from any Down
		e.log.Info("agent: revoked again within the hold-down: the transport stays down for local steering", "transport", name)
		return
	}
	e.scratch = e.steer.Evaluate(now, e.scratch[:0])
	e.logDecisions()
	e.kickReconcile()
}

func (e *Engine) onUpLocked(name string) {
	e.m.transportUp.WithLabelValues(name).Set(1)
	e.event(telemetry.AgentEvent{Type: "transport.up", Transport: name, Reason: "local"})
}

// ---- windows and reports ----------------------------------------------------------------------

func (e *Engine) windowLoop(ctx context.Context) {
	e.mu.Lock()
	e.windowAt = time.Now()
	e.mu.Unlock()
	t := time.NewTicker(e.cfg.Window)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			e.flushWindow(now, e.cfg.Window)
		case <-e.early:
			now := time.Now()
			e.mu.Lock()
			d := now.Sub(e.windowAt)
			e.mu.Unlock()
			e.log.Debug("agent: window ended early: the local detector would decide a loss breach on it", "window", d)
			e.flushWindow(now, d)
			t.Reset(e.cfg.Window) // the windows after it are whole again
		}
	}
}

// endWindowEarly asks the window loop to end the window now (e.mu held): a transport's window
// so far would make the local detector decide a breach, and the controller, judging the same
// window, would too. Not before a tenth of a window, so that a window is never tiny.
func (e *Engine) endWindowEarly(now time.Time) {
	if now.Sub(e.windowAt) < e.cfg.Window/10 {
		return
	}
	select {
	case e.early <- struct{}{}:
	default:
	}
}

// flushWindow ends every transport's window, of length d: one report to the spool, and the
// windows to the local steering.
func (e *Engine) flushWindow(now time.Time, d time.Duration) {
	e.mu.Lock()
	e.windowAt = now
	tws := make([]telemetry.TransportWindow, 0, len(e.transports))
	for _, t := range e.transports {
		mon := e.monitors[t.Name]
		if mon == nil {
			continue
		}
		tw, localDown := mon.flush()
		tws = append(tws, tw)
		if e.steer != nil {
			local := tw
			local.Down = localDown
			e.steer.Observe(now, t.Name, steering.WindowMetrics(&local))
		}
	}
	if e.steer != nil {
		e.scratch = e.steer.Evaluate(now, e.scratch[:0])
		if len(e.scratch) > 0 {
			e.logDecisions()
			e.kickReconcile()
		}
	}
	for _, t := range e.transports {
		if mon := e.monitors[t.Name]; mon != nil {
			mon.setPace(e.steer != nil && e.steer.Suspect(t.Name), now, e.cfg.Window)
		}
	}
	e.mu.Unlock()
	if len(tws) == 0 {
		return
	}
	e.spoolReport(now, d, tws)
}

// spoolReport appends one report of the windows tws, ended at now, to the spool.
func (e *Engine) spoolReport(now time.Time, window time.Duration, tws []telemetry.TransportWindow) {
	held := e.held()
	_, err := e.sp.Append(func(id uint64, dst []byte) ([]byte, error) {
		r := telemetry.Report{V: telemetry.SchemaVersion, Site: e.o.Creds.Site, Device: e.o.Creds.Device, Seq: id, Held: min(held, id),
			Time: now.UTC(), WindowMs: max(int(window/time.Millisecond), 1), Transport: tws}
		return appendMessage(dst, telemetry.KindTelemetry, r)
	})
	if err != nil {
		e.log.Error("agent: spooling a report", "err", err)
		return
	}
	e.m.reports.Inc()
	e.up.wake()
}

// event queues an agent event for the spool (reliable, in order with the reports). It does not
// block: callers hold mu on the failover path, where a disk write must not wait.
func (e *Engine) event(ev telemetry.AgentEvent) {
	ev.V, ev.Site, ev.Device, ev.Time = telemetry.SchemaVersion, e.o.Creds.Site, e.o.Creds.Device, time.Now().UTC()
	select {
	case e.events <- ev:
	default:
		e.log.Error("agent: event queue full; event dropped", "type", ev.Type, "transport", ev.Transport)
	}
}

func (e *Engine) eventLoop(ctx context.Context) {
	for {
		select {
		case ev := <-e.events:
			e.spoolMessage(telemetry.KindEvents, &ev)
		case <-ctx.Done():
			for { // what was queued before the shutdown still goes to the spool
				select {
				case ev := <-e.events:
					e.spoolMessage(telemetry.KindEvents, &ev)
				default:
					return
				}
			}
		}
	}
}

func (e *Engine) spoolMessage(kind string, v any) {
	if _, err := e.sp.Append(func(id uint64, dst []byte) ([]byte, error) {
		switch m := v.(type) { // the controller takes events and acks by sequence too (contiguous watermark)
		case *telemetry.AgentEvent:
			m.Seq = id
		case *telemetry.PolicyAck:
			m.Seq = id
		}
		return appendMessage(dst, kind, v)
	}); err != nil {
		e.log.Error("agent: spooling", "kind", kind, "err", err)
		return
	}
	if e.up != nil {
		e.up.wake()
	}
}

// A spooled message is the topic kind, a newline, and the JSON payload.
func appendMessage(dst []byte, kind string, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return dst, err
	}
	dst = append(dst, kind...)
	dst = append(dst, '\n')
	return append(dst, b...), nil
}

func splitMessage(rec []byte) (kind string, payload []byte, ok bool) {
	k, p, found := bytes.Cut(rec, []byte{'\n'})
	return string(k), p, found
}

// ---- policy and decisions from the controller ------------------------------------------------

// stopMonitors ends all probing and refuses new monitors from now on.
func (e *Engine) stopMonitors() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closing = true
	for name, mon := range e.monitors {
		mon.stop()
		delete(e.monitors, name)
	}
}

// onPolicy takes the site's desired state.
func (e *Engine) onPolicy(payload []byte) {
	var p telemetry.Policy
	if err := json.Unmarshal(payload, &p); err != nil || p.V != telemetry.SchemaVersion || p.Site != e.o.Creds.Site {
		e.log.Warn("agent: ignoring a bad policy message", "err", err)
		return
	}
	var content *telemetry.SteeringContent
	var qos *telemetry.QoSContent
	for _, pv := range p.Policies {
		switch pv.Type {
		case telemetry.TypeSteering:
			var c telemetry.SteeringContent
			if err := json.Unmarshal(pv.Content, &c); err == nil {
				content = &c
			}
		case telemetry.TypeQoS:
			var q telemetry.QoSContent
			if err := json.Unmarshal(pv.Content, &q); err == nil {
				qos = &q
			}
		}
	}
	e.mu.Lock()
	e.policy, e.content, e.qos = &p, content, qos
	e.setTransportsLocked(e.mergeTransports(&p))
	e.mu.Unlock()
	e.log.Info("agent: policy received", "transports", len(p.Transports), "policies", len(p.Policies))
	e.kickReconcile()
}

// onDecisions takes the controller's current path per class.
func (e *Engine) onDecisions(payload []byte) {
	var d telemetry.Decisions
	if err := json.Unmarshal(payload, &d); err != nil || d.V != telemetry.SchemaVersion || d.Site != e.o.Creds.Site {
		e.log.Warn("agent: ignoring bad decisions", "err", err)
		return
	}
	e.mu.Lock()
	e.decisions = d.Paths
	e.mu.Unlock()
	e.kickReconcile()
}

// ---- reconciling the data plane ---------------------------------------------------------------

func (e *Engine) kickReconcile() {
	select {
	case e.kick <- struct{}{}:
	default:
	}
}

func (e *Engine) reconcileLoop(ctx context.Context) {
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-e.kick:
		case <-retry.C:
		}
		if err := e.reconcile(); err != nil {
			retry.Reset(5 * time.Second) // an interface may come back; try again
		}
	}
}

// effectivePathLocked is the path class c uses now: the controller's decision unless the local
// steering finds that transport unusable for c, Down or breached (then the local choice: the
// controller has not reacted yet, or cannot be reached), or the local choice when there is no
// decision, or no connection for longer than decisionGrace.
func (e *Engine) effectivePathLocked(c string) (path string, local bool) {
	var lp string
	if e.steer != nil {
		lp = e.steer.Path(c)
	}
	if cp, ok := e.decisions[c]; ok && e.up.decisionsHold() && e.known(cp) {
		if e.steer == nil {
			return cp, false
		}
		// the controller has not judged yet what the agent saw: the path is dead, or a dead-link
		// verdict was revoked by an answer far over the class's latency bound
		if e.steer.Usable(c, cp) {
			return cp, false
		}
	}
	return lp, true
}

func (e *Engine) known(name string) bool {
	for _, t := range e.transports {
		if t.Name == name {
			return true
		}
	}
	return false
}

// reconcile applies the current plan and acknowledges policy versions.
func (e *Engine) reconcile() error {
	e.mu.Lock()
	plan := dataplane.Plan{QoS: e.qos}
	for _, t := range e.transports {
		dt := dataplane.Transport{Name: t.Name, Interface: t.Interface}
		// gateway is IPv4, or IPv6 for an IPv6-only circuit; gateway6 makes it dual-stack
		for _, g := range []string{t.Gateway, t.Gateway6} {
			if a, err := netip.ParseAddr(g); err == nil && a.Is4() {
				dt.Gateway = a
			} else if err == nil {
				dt.Gateway6 = a
			}
		}
		plan.Transports = append(plan.Transports, dt)
	}
	if e.content != nil {
		plan.Rules = e.content.Rules
		plan.DefaultClass = e.content.DefaultClass
	} else if len(e.transports) > 0 {
		plan.DefaultClass = steering.DefaultClass
	}
	plan.Paths = map[string]string{}
	type change struct{ class, from, to, by string }
	var changes []change
	for _, c := range e.classes {
		p, local := e.effectivePathLocked(c.Name)
		if p == "" {
			continue
		}
		plan.Paths[c.Name] = p
		if old, ok := e.paths[c.Name]; ok && old != p {
			by := "controller"
			if local {
				by = "local"
			}
			changes = append(changes, change{c.Name, old, p, by})
		}
	}
	var versions []telemetry.PolicyVersion
	if e.policy != nil {
		versions = e.policy.Policies
	}
	e.mu.Unlock()

	var err error
	if e.dp != nil {
		var n int
		n, err = e.dp.Apply(plan)
		e.m.dpChanges.Add(float64(n))
		if err != nil {
			e.m.dpErrors.Inc()
			e.log.Error("agent: applying the data plane", "err", err)
		}
	}
	noTable, rulesFailed := dataplane.Failures(err)
	e.mu.Lock()
	if rulesFailed {
		// The kernel may not route as the plan says: keep the paths as they were, so the
		// switches are reported (and counted) when a retry has put them in effect.
		changes = nil
	} else {
		for c, p := range plan.Paths {
			e.paths[c] = p
		}
	}
	// Probing starts once a transport's table and probe rule are in place; one whose interface
	// is missing stays unprobed until a later reconcile succeeds (a QoS failure does not hold
	// it back: routing works without shaping).
	for _, t := range e.transports {
		if mon := e.monitors[t.Name]; mon != nil && !noTable[t.Name] {
			mon.begin()
		}
	}
	var acks []telemetry.PolicyAck
	for _, v := range versions {
		a := telemetry.PolicyAck{Policy: v.Policy, Version: v.Version, Status: "applied"}
		if err != nil {
			a.Status, a.Reason = "failed", truncate(err.Error(), 500)
		}
		// one ack per version and outcome: a failure retried every few seconds is not repeated,
		// and success after a failure is reported
		key := fmt.Sprintf("%d/%s", v.Version, a.Status)
		if e.acked[v.Policy] == key {
			continue
		}
		e.acked[v.Policy] = key
		acks = append(acks, a)
	}
	e.mu.Unlock()
	for _, ch := range changes {
		e.m.switches.WithLabelValues(ch.by).Inc()
		e.log.Info("agent: path switched", "class", ch.class, "from", ch.from, "to", ch.to, "by", ch.by)
		if ch.by == "local" { // the controller raised its own switches already
			e.event(telemetry.AgentEvent{Type: "path.switched", Class: ch.class, From: ch.from, To: ch.to, Reason: "local"})
		}
	}
	for _, a := range acks {
		a.V, a.Site, a.Device, a.Time = telemetry.SchemaVersion, e.o.Creds.Site, e.o.Creds.Device, time.Now().UTC()
		e.spoolMessage(telemetry.KindAcks, &a)
	}
	if len(changes) > 0 {
		e.up.publishOnline() // the retained status tells a restarted controller where traffic is
	}
	return err
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
