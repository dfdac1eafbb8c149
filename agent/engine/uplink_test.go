package engine

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/edgewan/edgewan/agent/claim"
	"github.com/edgewan/edgewan/agent/config"
	"github.com/edgewan/edgewan/agent/spool"
	"github.com/edgewan/edgewan/controller/mqtt"
	"github.com/edgewan/edgewan/controller/tlsgen"
	"github.com/edgewan/edgewan/telemetry"
)

// wait bounds every wait of these tests: generous for a loaded machine, never a sleep.
const wait = 30 * time.Second

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	waitFor(t, wait, what, cond)
}

// waitFor waits for cond at most d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond) // polling a condition, not synchronising on time
	}
}

// credStore is an in-memory mqtt.CredentialStore.
type credStore map[string]mqtt.Credential

func (s credStore) MQTTCredential(_ context.Context, username string) (*mqtt.Credential, error) {
	if c, ok := s[username]; ok {
		return &c, nil
	}
	return nil, nil
}

// controllerSide is the embedded broker (the controller's own, over TLS on loopback) with an
// inline subscriber standing in for the controller's ingest: it records the agent's reports.
type controllerSide struct {
	broker *mqtt.Broker
	bus    *mqtt.InlineBus
	creds  *claim.Credentials // the agent's

	mu   sync.Mutex
	seen map[int]bool // report numbers received (resent ones once)
}

func startController(t *testing.T, dir string, store credStore, creds claim.Credentials) *controllerSide {
	t.Helper()
	files, _, err := tlsgen.Ensure(dir, nil) // the same CA when dir is reused
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.LoadX509KeyPair(files.Cert, files.Key)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(files.CACert)
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	b, err := mqtt.NewBroker(mqtt.Options{Listen: "127.0.0.1:0", TLS: &tls.Config{Certificates: []tls.Certificate{cert}},
		Credentials: store, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	c := &controllerSide{broker: b, bus: mqtt.NewInlineBus(b, mqtt.BusOptions{Workers: 1, Logger: quiet}), seen: map[int]bool{}}
	if err := c.bus.Subscribe(telemetry.Topic(creds.Site, telemetry.KindTelemetry), func(_ string, p []byte) {
		var r struct{ N int }
		if json.Unmarshal(p, &r) == nil {
			c.mu.Lock()
			c.seen[r.N] = true
			c.mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); b.Close(); c.bus.Close() })
	_, port, _ := net.SplitHostPort(b.Addr())
	creds.MQTTURL, creds.CAPEM = "mqtts://localhost:"+port, string(ca)
	c.creds = &creds
	return c
}

func (c *controllerSide) received() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.seen)
}

// publishStored publishes the site's watermark, retained, as a controller of this version does.
func (c *controllerSide) publishStored(t *testing.T, seq uint64) {
	t.Helper()
	b, _ := json.Marshal(telemetry.Stored{V: telemetry.SchemaVersion, Site: c.creds.Site, Device: c.creds.Device, Seq: seq, Boot: "boot-1", Time: time.Now().UTC()})
	if err := c.bus.Publish(telemetry.Topic(c.creds.Site, telemetry.KindStored), b, true); err != nil {
		t.Fatal(err)
	}
}

// runningUplink is the agent's real uplink and spool, without probes or a data plane.
type runningUplink struct {
	e    *Engine
	u    *uplink
	stop func()
}

func startUplink(t *testing.T, c *controllerSide, sp *spool.Spool, grace time.Duration) *runningUplink {
	t.Helper()
	e := &Engine{o: Options{Creds: c.creds, Version: "test"}, m: newMetrics(nil), log: slog.New(slog.DiscardHandler),
		sp: sp, kick: make(chan struct{}, 1), events: make(chan telemetry.AgentEvent, 16),
		monitors: map[string]*monitor{}, decisions: map[string]string{}, paths: map[string]string{}, acked: map[string]string{}}
	if testing.Verbose() {
		e.log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	u, err := newUplink(e, c.creds, config.StandbyAuto)
	if err != nil {
		t.Fatal(err)
	}
	u.grace.Store(int64(grace))
	e.up = u
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); u.connectLoop(ctx) }()
	go func() { defer wg.Done(); u.sendLoop(ctx) }()
	r := &runningUplink{e: e, u: u}
	var once sync.Once
	r.stop = func() { once.Do(func() { cancel(); wg.Wait(); u.close() }) }
	t.Cleanup(r.stop)
	return r
}

// report spools n telemetry reports numbered from first.
func (r *runningUplink) report(first, n int) {
	for i := first; i < first+n; i++ {
		r.e.spoolMessage(telemetry.KindTelemetry, map[string]int{"n": i})
	}
}

// turn waits until the sender has gone once round its loop after now: the second of two wakes
// is taken only after a whole turn started by the first.
func (r *runningUplink) turn(t *testing.T) {
	t.Helper()
	for range 2 {
		r.u.wake()
		waitUntil(t, "the sender taking a wake", func() bool { return len(r.u.wakeC) == 0 })
	}
}

func (r *runningUplink) mode() string { return r.e.Status().Spool.DeleteMode }

// gaugeOf is the value of the registered edgewan_agent_spool_delete_mode gauge of mode.
func gaugeOf(t *testing.T, reg *prometheus.Registry, mode string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if mf.GetName() == "edgewan_agent_spool_delete_mode" && len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == mode {
				return m.GetGauge().GetValue()
			}
		}
	}
	t.Fatalf("no edgewan_agent_spool_delete_mode{mode=%q}", mode)
	return 0
}

func setup(t *testing.T) (dir string, store credStore, creds claim.Credentials) {
	t.Helper()
	pw, cred, err := mqtt.NewCredential("dev-1", "site-1")
	if err != nil {
		t.Fatal(err)
	}
	return t.TempDir(), credStore{cred.Username: cred}, claim.Credentials{Site: "site-1", Device: "dev-1", Username: cred.Username, Password: pw}
}

func openSpool(t *testing.T, dir string) *spool.Spool {
	t.Helper()
	sp, err := spool.Open(spool.Options{Dir: dir, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// An older controller publishes no watermark: the agent keeps what it sent during the grace
// (at most maxUnconfirmed records), then deletes at the broker's PUBACK and keeps reporting
// past maxUnconfirmed; when the controller is upgraded (a watermark appears) it switches to the
// watermark for good.
func TestUplinkOlderControllerFallsBackToPuback(t *testing.T) {
	dir, store, creds := setup(t)
	c := startController(t, dir, store, creds)
	sp := openSpool(t, t.TempDir())
	defer sp.Close()
	const n = maxUnconfirmed + 476
	r := startUplink(t, c, sp, time.Hour) // the grace ends below, when the test says
	r.report(0, n)

	waitUntil(t, "the first maxUnconfirmed reports at the controller", func() bool { return c.received() >= maxUnconfirmed })
	r.turn(t)
	if got := c.received(); got != maxUnconfirmed {
		t.Fatalf("during the grace: %d reports sent; want the sender stopped at %d", got, maxUnconfirmed)
	}
	if got := r.mode(); got != modeWaiting {
		t.Fatalf("during the grace: delete mode %q; want %q", got, modeWaiting)
	}
	if st := sp.Stats(); st.Acked != 0 || st.Records != n {
		t.Fatalf("during the grace: spool %+v; want nothing deleted (Acked 0, Records %d)", st, n)
	}

	r.u.grace.Store(0) // the grace is over with no watermark
	r.u.wake()
	waitUntil(t, "every report delivered and deleted at PUBACK", func() bool { return c.received() == n && sp.Stats().Records == 0 })
	if got := r.mode(); got != modePuback {
		t.Fatalf("after the grace: delete mode %q; want %q", got, modePuback)
	}
	reg := prometheus.NewRegistry()
	r.e.m.registerDeleteMode(reg, r.u.deleteMode)
	for _, m := range []string{modeWatermark, modeWaiting, modePuback} {
		want := 0.0
		if m == modePuback {
			want = 1
		}
		if got := gaugeOf(t, reg, m); got != want {
			t.Errorf("edgewan_agent_spool_delete_mode{mode=%q}: got %v; want %v", m, got, want)
		}
	}
	r.report(n, 300) // reporting continues
	waitUntil(t, "later reports delivered and deleted", func() bool { return c.received() == n+300 && sp.Stats().Records == 0 })
	if f := sp.Flags(); f != 0 {
		t.Fatalf("spool flags %#x; want none (no watermark seen)", f)
	}

	// The controller is upgraded: its watermark appears, and from then on records stay until
	// it covers them.
	c.publishStored(t, uint64(n+300))
	waitUntil(t, "watermark mode", func() bool { return r.mode() == modeWatermark })
	if f := sp.Flags(); f&flagWatermark == 0 {
		t.Fatalf("spool flags %#x; want flagWatermark persisted", f)
	}
	r.report(n+300, 10)
	waitUntil(t, "reports after the upgrade delivered", func() bool { return c.received() == n+310 })
	if st := sp.Stats(); st.Records != 10 {
		t.Fatalf("after the upgrade: %d records in the spool; want the 10 not yet covered", st.Records)
	}
	c.publishStored(t, sp.Stats().LastID)
	waitUntil(t, "covered records deleted", func() bool { return sp.Stats().Records == 0 })
}

// A controller of this version that stops publishing watermarks (stalled) never makes the
// agent fall back to PUBACK, past the grace, nor after a restart against a broker that lost
// the retained watermark: the spool remembers that the controller speaks it.
func TestUplinkNewControllerNeverFallsBack(t *testing.T) {
	dir, store, creds := setup(t)
	c := startController(t, dir, store, creds)
	spoolDir := t.TempDir()
	sp := openSpool(t, spoolDir)
	const grace = 2 * time.Second // the retained watermark comes at subscribe, well within it even on a loaded machine
	c.publishStored(t, 0)         // retained: the agent gets it at subscribe
	r := startUplink(t, c, sp, grace)
	const n = maxUnconfirmed + 476
	r.report(0, n)
	waitUntil(t, "watermark mode", func() bool { return r.mode() == modeWatermark })
	waitUntil(t, "maxUnconfirmed reports at the controller", func() bool { return c.received() >= maxUnconfirmed })

	c.publishStored(t, 100) // then the controller stalls
	waitUntil(t, "the covered records deleted", func() bool { return sp.Stats().Acked == 100 })
	// Sending resumed for the 100 covered, well after the grace: the sender ran past it.
	waitUntil(t, "100 more reports sent", func() bool { return c.received() >= maxUnconfirmed+100 })
	waitUntil(t, "the grace over", func() bool { return time.Since(time.Unix(0, r.u.connAt.Load())) > grace })
	r.turn(t)
	if got := r.mode(); got != modeWatermark {
		t.Fatalf("stalled controller: delete mode %q; want %q", got, modeWatermark)
	}
	if st := sp.Stats(); st.Acked != 100 || st.Records != n-100 {
		t.Fatalf("stalled controller: spool %+v; want only the covered 100 deleted", st)
	}
	r.stop()
	if err := sp.Close(); err != nil {
		t.Fatal(err)
	}

	// The agent restarts against a broker without the retained watermark (e.g. restarted
	// without persistence, while the controller is still stalled).
	c2 := startController(t, dir, store, creds)
	sp = openSpool(t, spoolDir)
	defer sp.Close()
	r = startUplink(t, c2, sp, grace)
	waitUntil(t, "connected", r.u.connected)
	if got := r.mode(); got != modeWatermark {
		t.Fatalf("after a restart: delete mode %q; want %q (remembered)", got, modeWatermark)
	}
	waitUntil(t, "the uncovered reports sent again", func() bool { return c2.received() >= maxUnconfirmed })
	waitUntil(t, "the grace over", func() bool { return time.Since(time.Unix(0, r.u.connAt.Load())) > grace })
	r.turn(t)
	if st := sp.Stats(); st.Acked != 100 || st.Records != n-100 || r.mode() != modeWatermark {
		t.Fatalf("after a restart, stalled controller: spool %+v, mode %q; want nothing more deleted, watermark", st, r.mode())
	}
	if got := c2.received(); got > maxUnconfirmed {
		t.Fatalf("after a restart: %d reports sent ahead of the watermark; want at most %d", got, maxUnconfirmed)
	}
}
