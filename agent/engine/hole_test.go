package engine

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/edgewan/edgewan/agent/claim"
	"github.com/edgewan/edgewan/controller/ingest"
	"github.com/edgewan/edgewan/controller/mqtt"
	"github.com/edgewan/edgewan/controller/sdwan"
	"github.com/edgewan/edgewan/controller/store"
	"github.com/edgewan/edgewan/coreapi/org"
	"github.com/edgewan/edgewan/telemetry"
	"github.com/edgewan/edgewan/telemetry/sink"
)

// lossyBus is the controller's bus losing chosen reports after the broker acknowledged them:
// what NATS 2.9 does to a message in flight when a node dies (docs/scale-out.md). The first
// delivery of each sequence in lose never reaches the handler.
type lossyBus struct {
	mqtt.Bus
	mu   sync.Mutex
	lose map[uint64]bool
	lost []uint64
}

// Publish passes only the watermark: the test's agent is its uplink and spool alone, with no
// probes or data plane to apply a policy or decisions to.
func (b *lossyBus) Publish(topic string, payload []byte, retain bool) error {
	if _, kind, _ := telemetry.ParseTopic(topic); kind != telemetry.KindStored {
		return nil
	}
	return b.Bus.Publish(topic, payload, retain)
}

func (b *lossyBus) Subscribe(filter string, h mqtt.Handler) error {
	return b.Bus.Subscribe(filter, func(topic string, payload []byte) {
		var r struct{ Seq uint64 }
		if _, kind, _ := telemetry.ParseTopic(topic); kind == telemetry.KindTelemetry && json.Unmarshal(payload, &r) == nil {
			b.mu.Lock()
			drop := b.lose[r.Seq]
			if drop {
				delete(b.lose, r.Seq)
				b.lost = append(b.lost, r.Seq)
			}
			b.mu.Unlock()
			if drop {
				return
			}
		}
		h(topic, payload)
	})
}

// historySink is the embedded time-series store, noting which reports were written to it.
type historySink struct {
	*sink.EmbeddedSink
	mu   sync.Mutex
	seqs map[uint64]int
}

func (s *historySink) Write(ctx context.Context, r *telemetry.Report) error {
	s.mu.Lock()
	s.seqs[r.Seq]++
	s.mu.Unlock()
	return s.EmbeddedSink.Write(ctx, r)
}

func (s *historySink) has(seq uint64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seqs[seq]
}

// TestUplinkSendsLostReportAgain runs the agent's real uplink and spool against the
// controller's real ingest engine (SQLite store, embedded time series) on the embedded
// broker, with the controller's bus losing reports the broker acknowledged: one in the middle
// of a run, and one of an event's neighbours. The watermark (contiguous) stays below each
// hole; the agent, seeing it stalled below records acknowledged long ago, sends the oldest
// again; they are stored; and only then does the spool delete them. Nothing is lost and
// nothing is stored twice. The controller is one from before hole requests (HoleGrace < 0):
// a new agent with an older controller (TestUplinkHoleRequested has both new).
func TestUplinkSendsLostReportAgain(t *testing.T) {
	dir, creds, c := setupWithSite(t)
	bus, hist := runLossyControllerWith(t, c, creds, map[uint64]bool{7: true, 12: true, 13: true}, nil, ingest.Options{HoleGrace: -1})

	sp := openSpool(t, dir)
	defer sp.Close()
	r := startUplink(t, c, sp, time.Hour)
	r.u.holeAfter.Store(int64(time.Second)) // 15 s in production: three controller flush intervals
	// The controller's first watermark (at Run's start, retained) makes the agent send again
	// whatever is uncovered (a new boot): the holes below must be found by the stall alone.
	waitUntil(t, "the controller's first watermark", func() bool { b, _ := r.u.boot.Load().(string); return b != "" })
	r.turn(t)
	window := []telemetry.TransportWindow{{Name: "wan1", Method: "icmp", Sent: 10, LatencyMs: 20, P50Ms: 20, P95Ms: 22, MinMs: 19, MaxMs: 25, JitterMs: 1, StdDevMs: 1}}
	for i := range 20 {
		if i == 10 { // an agent event in between: its sequence counts in the watermark too
			r.e.spoolMessage(telemetry.KindEvents, &telemetry.AgentEvent{V: telemetry.SchemaVersion, Site: creds.Site, Device: creds.Device,
				Time: time.Now().UTC(), Type: "transport.down", Transport: "wan1", Reason: "local"})
		}
		r.e.spoolReport(time.Now(), time.Second, window)
	}
	last := sp.Stats().LastID // 21: 20 reports and the event (11)
	waitUntil(t, "every record covered by the watermark and deleted", func() bool { return sp.Stats().Acked == last && sp.Stats().Records == 0 })
	bus.mu.Lock()
	lost := bus.lost
	bus.mu.Unlock()
	if len(lost) != 3 {
		t.Fatalf("the bus lost %v; want 7, 12 and 13 (the test's premise)", lost)
	}
	for q := uint64(1); q <= last; q++ {
		if q == 11 {
			continue // the event
		}
		if n := hist.has(q); n != 1 {
			t.Errorf("report %d written to the history %d times; want once", q, n)
		}
	}
	if got := counterValue(t, r.e.m.resent); got < 1 {
		t.Errorf("edgewan_agent_spool_resent_total %v; want the lost ones sent again", got)
	}
}

// setupWithSite is setup with the embedded broker running, the agent's credentials known to it.
func setupWithSite(t *testing.T) (string, *claim.Credentials, *controllerSide) {
	t.Helper()
	dir, cs, creds := setup(t)
	c := startController(t, dir, cs, creds)
	return t.TempDir(), c.creds, c
}

// claimSite creates the site with one transport in the real store and claims it for device.
func claimSite(t *testing.T, st *store.Store, site, device string) {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Microsecond)
	s := &sdwan.Site{ID: site, Name: site, Status: sdwan.SitePending, Role: "branch", Segments: []string{"corporate"},
		CreatedAt: now, UpdatedAt: now, ClaimExpiresAt: now.Add(time.Hour)}
	ts := []*sdwan.Transport{{ID: "tr-" + site, SiteID: site, Name: "wan1", Interface: "eth0", Status: sdwan.TransportUnknown,
		ProbeTargets: []string{}, CreatedAt: now, UpdatedAt: now}}
	if err := st.CreateSite(ctx, s, "claim-"+site, ts); err != nil {
		t.Fatal(err)
	}
	dev := &org.Device{ID: device, SiteID: site, Name: device, Status: org.DeviceOffline, CreatedAt: now, UpdatedAt: now}
	if err := st.ClaimSite(ctx, sdwan.ClaimRecord{SiteID: site, ClaimHash: "claim-" + site, Device: dev, MQTTUser: device, MQTTHash: "x", At: now}); err != nil {
		t.Fatal(err)
	}
}

func counterValue(t *testing.T, c interface{ Write(*dto.Metric) error }) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// TestUplinkResendIsBounded: a controller that is merely slow (its watermark moves, a little
// at a time) causes no resend at all; one that stores nothing (the watermark never moves) gets
// the oldest records again at a falling rate (the wait doubles after a probe that changed
// nothing), not the whole window every time.
func TestUplinkResendIsBounded(t *testing.T) {
	dir, store, creds := setup(t)
	c := startController(t, dir, store, creds)
	c.publishStored(t, 0)
	sp := openSpool(t, t.TempDir())
	defer sp.Close()
	r := startUplink(t, c, sp, time.Hour)
	const hole = 2 * time.Second
	r.u.holeAfter.Store(int64(hole))
	waitUntil(t, "watermark mode", func() bool { return r.mode() == modeWatermark })
	r.report(1, 200)
	waitUntil(t, "200 reports at the controller", func() bool { return c.received() == 200 })

	// Slow: the watermark covers 20 more every 500 ms (a quarter of holeAfter), for 5 s.
	for w := uint64(20); w <= 200; w += 20 {
		c.publishStored(t, w)
		time.Sleep(hole / 4) // the slow controller's pace, not synchronisation
	}
	waitUntil(t, "every record covered", func() bool { return sp.Stats().Records == 0 })
	if got := counterValue(t, r.e.m.resent); got != 0 {
		t.Fatalf("a slow controller whose watermark moves: %v records sent again; want 0", got)
	}

	// Dead: 100 more, and the watermark never moves again. Probes come after 1, 2 and 4 times
	// holeAfter (then 8, 16): in 8 holeAfter at most 3 probes (and at least one) of the
	// oldest 64.
	r.report(201, 100)
	waitUntil(t, "100 more at the controller", func() bool { return c.received() == 300 })
	start := time.Now()
	waitUntil(t, "a first probe", func() bool { return counterValue(t, r.e.m.resent) > 0 })
	time.Sleep(8*hole - time.Since(start)) // observing the rate over 8 holeAfter
	if got := counterValue(t, r.e.m.resent); got < publishBatch || got > 3*publishBatch {
		t.Errorf("a controller storing nothing, over %v: %v records sent again; want 1 to 3 probes of %d", 8*hole, got, publishBatch)
	}
}

// silentBus is lossyBus whose controller publishes no watermark while it has nothing
// contiguous to confirm (0): a controller that took a site over and waits for reports its
// previous owner stored is one.
type silentBus struct{ *lossyBus }

func (b silentBus) Publish(topic string, payload []byte, retain bool) error {
	var m telemetry.Stored
	if _, kind, _ := telemetry.ParseTopic(topic); kind == telemetry.KindStored && json.Unmarshal(payload, &m) == nil && m.Seq == 0 {
		return nil
	}
	return b.lossyBus.Publish(topic, payload, retain)
}

// TestUplinkWaitingSendsHoleAgain: an agent that has never heard a watermark (mode waiting)
// whose first reports the broker acknowledged and lost, to a controller that therefore has
// nothing contiguous and publishes nothing, sends the oldest again when nothing moves for
// holeAfter; the controller then stores them and publishes its watermark, and the spool
// empties by it. Before, the agent only waited (for the grace, then deleted at PUBACK).
func TestUplinkWaitingSendsHoleAgain(t *testing.T) {
	dir, creds, c := setupWithSite(t)
	_, hist := runLossyController(t, c, creds, map[uint64]bool{1: true, 2: true}, func(b *lossyBus) mqtt.Bus { return silentBus{b} })

	sp := openSpool(t, dir)
	defer sp.Close()
	r := startUplink(t, c, sp, time.Hour) // no PUBACK fallback within the test
	r.u.holeAfter.Store(int64(time.Second))
	window := []telemetry.TransportWindow{{Name: "wan1", Method: "icmp", Sent: 10, LatencyMs: 20, P50Ms: 20, P95Ms: 22, MinMs: 19, MaxMs: 25, JitterMs: 1, StdDevMs: 1}}
	for range 5 {
		r.e.spoolReport(time.Now(), time.Second, window)
	}
	if m := r.mode(); m != modeWaiting {
		t.Fatalf("delete mode %q; want %q (the premise: no watermark heard)", m, modeWaiting)
	}
	waitUntil(t, "every report stored and covered by the watermark", func() bool { return sp.Stats().Acked == 5 && sp.Stats().Records == 0 })
	for q := uint64(1); q <= 5; q++ {
		if n := hist.has(q); n != 1 {
			t.Errorf("report %d written to the history %d times; want once", q, n)
		}
	}
}

// runLossyController runs the controller's real ingest engine (SQLite store, embedded time
// series) for creds' site on c's embedded broker, through a lossyBus losing the reports in
// lose (wrapped by wrap, if not nil), until the test ends.
func runLossyController(t *testing.T, c *controllerSide, creds *claim.Credentials, lose map[uint64]bool, wrap func(*lossyBus) mqtt.Bus) (*lossyBus, *historySink) {
	t.Helper()
	return runLossyControllerWith(t, c, creds, lose, wrap, ingest.Options{})
}

// runLossyControllerWith is runLossyController with the engine's options o (its FlushEvery
// and Logger are the test's).
func runLossyControllerWith(t *testing.T, c *controllerSide, creds *claim.Credentials, lose map[uint64]bool, wrap func(*lossyBus) mqtt.Bus, o ingest.Options) (*lossyBus, *historySink) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	claimSite(t, st, creds.Site, creds.Device)
	emb, err := sink.NewEmbedded(sink.EmbeddedOptions{DataDir: t.TempDir(), FlushInterval: time.Hour, PruneInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = emb.Close() })
	hist := &historySink{EmbeddedSink: emb, seqs: map[uint64]int{}}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	lossy := &lossyBus{Bus: mqtt.NewInlineBus(c.broker, mqtt.BusOptions{Workers: 1, Logger: quiet}), lose: lose}
	t.Cleanup(lossy.Close)
	var bus mqtt.Bus = lossy
	if wrap != nil {
		bus = wrap(lossy)
	}
	o.FlushEvery, o.Logger = 50*time.Millisecond, quiet
	eng := ingest.New(st, bus, hist, o)
	if err := eng.Start(ctx); err != nil {
		t.Fatal(err)
	}
	rctx, stopEngine := context.WithCancel(ctx)
	engineDone := make(chan struct{})
	go func() { defer close(engineDone); _ = eng.Run(rctx) }()
	t.Cleanup(func() { stopEngine(); <-engineDone })
	return lossy, hist
}

// holeTest runs the lossy controller with the options o (a registry of its own) and an agent
// that waits an hour before its own stall probe unless holeAfter says otherwise, reports 20
// windows, and waits until every record is covered and deleted. It returns the controller's
// hole requests and the history.
func holeTest(t *testing.T, o ingest.Options, holeAfter time.Duration, older bool) (*runningUplink, *historySink, float64) {
	t.Helper()
	dir, creds, c := setupWithSite(t)
	reg := prometheus.NewRegistry()
	o.Registerer = reg
	bus, hist := runLossyControllerWith(t, c, creds, map[uint64]bool{7: true, 12: true, 13: true}, nil, o)
	sp := openSpool(t, dir)
	t.Cleanup(func() { _ = sp.Close() })
	r := startUplink(t, c, sp, time.Hour)
	r.u.olderAgent.Store(older)
	r.u.holeAfter.Store(int64(holeAfter))
	waitUntil(t, "the controller's first watermark", func() bool { b, _ := r.u.boot.Load().(string); return b != "" })
	r.turn(t)
	window := []telemetry.TransportWindow{{Name: "wan1", Method: "icmp", Sent: 10, LatencyMs: 20, P50Ms: 20, P95Ms: 22, MinMs: 19, MaxMs: 25, JitterMs: 1, StdDevMs: 1}}
	for range 20 {
		r.e.spoolReport(time.Now(), time.Second, window)
	}
	waitUntil(t, "every record covered by the watermark and deleted", func() bool { return sp.Stats().Acked == 20 && sp.Stats().Records == 0 })
	bus.mu.Lock()
	lost := slices.Clone(bus.lost)
	bus.mu.Unlock()
	if len(lost) != 3 {
		t.Fatalf("the bus lost %v; want 7, 12 and 13 (the test's premise)", lost)
	}
	for q := uint64(1); q <= 20; q++ {
		if n := hist.has(q); n != 1 {
			t.Errorf("report %d written to the history %d times; want once", q, n)
		}
	}
	asks := 0.0
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "edgewan_ingest_hole_requests_total" {
			asks = mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return r, hist, asks
}

// TestUplinkHoleRequested: the controller's bus loses reports 7, 12 and 13 after the broker
// acknowledged them; the controller, holding newer ones, asks the agent for each hole once the
// reorder grace passed (telemetry.Stored.Hole), and the agent sends them at once. Its own stall
// probe (holeAfter) is an hour here, so only the request can have brought them back: every
// report is stored once and the spool empties.
func TestUplinkHoleRequested(t *testing.T) {
	r, _, asks := holeTest(t, ingest.Options{HoleGrace: 200 * time.Millisecond}, time.Hour, false)
	if asks < 1 {
		t.Errorf("controller hole requests %v; want at least one", asks)
	}
	if got := counterValue(t, r.e.m.holeRequests); got < 1 {
		t.Errorf("edgewan_agent_spool_hole_requests_total %v; want the controller's requests served", got)
	}
	if got := counterValue(t, r.e.m.resent); got < 3 {
		t.Errorf("edgewan_agent_spool_resent_total %v; want at least the 3 lost", got)
	}
}

// TestUplinkOlderAgentHoleRequest: a controller that asks for holes and an agent older than
// the request (it ignores the field, as encoding/json skips unknown ones): the requests do it
// no harm (a repeated watermark), and its stall probe still brings the lost reports back.
func TestUplinkOlderAgentHoleRequest(t *testing.T) {
	r, _, asks := holeTest(t, ingest.Options{HoleGrace: 200 * time.Millisecond}, time.Second, true)
	if asks < 1 {
		t.Errorf("controller hole requests %v; want at least one (the test's premise)", asks)
	}
	if got := counterValue(t, r.e.m.holeRequests); got != 0 {
		t.Errorf("an agent older than hole requests served %v of them; want 0", got)
	}
	if got := counterValue(t, r.e.m.resent); got < 3 {
		t.Errorf("edgewan_agent_spool_resent_total %v; want the stall probe to send the lost ones again", got)
	}
}
