package ingest

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/edgewan/edgewan/controller/mqtt"
	"github.com/edgewan/edgewan/controller/mqtt/mqtttest"
	"github.com/edgewan/edgewan/controller/store"
	"github.com/edgewan/edgewan/telemetry"
	"github.com/edgewan/edgewan/telemetry/sink"
)

// storedBus records the stored messages published, with their retain flag.
type storedBus struct {
	mu   sync.Mutex
	msgs []storedMsg
}

type storedMsg struct {
	m      telemetry.Stored
	retain bool
}

func (b *storedBus) Subscribe(string, mqtt.Handler) error { return nil }
func (b *storedBus) Close()                               {}
func (b *storedBus) Publish(topic string, payload []byte, retain bool) error {
	if _, kind, _ := telemetry.ParseTopic(topic); kind != telemetry.KindStored {
		return nil
	}
	var m telemetry.Stored
	if err := json.Unmarshal(payload, &m); err != nil {
		return err
	}
	b.mu.Lock()
	b.msgs = append(b.msgs, storedMsg{m, retain})
	b.mu.Unlock()
	return nil
}

// requests returns the hole requests published since the last call.
func (b *storedBus) requests() []storedMsg {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []storedMsg
	for _, x := range b.msgs {
		if x.m.Hole != nil {
			out = append(out, x)
		}
	}
	b.msgs = nil
	return out
}

// switchOwner owns every site while on.
type switchOwner struct{ on bool }

func (o *switchOwner) Owns(string) bool { return o.on }

// report marshals a report of be's first site with seq (held 1).
func (be *benchEngine) report(t *testing.T, seq uint64) (string, []byte) {
	t.Helper()
	id := be.st.order[0]
	r := telemetry.Report{V: telemetry.SchemaVersion, Site: id, Device: be.st.sites[id].DeviceID, Seq: seq, Held: 1,
		Time: be.clock.now().UTC(), WindowMs: 1000,
		Transport: []telemetry.TransportWindow{{Name: "inet", Method: "icmp", Sent: 10, LatencyMs: 20, P50Ms: 20, P95Ms: 22, MinMs: 19, MaxMs: 25, JitterMs: 1, StdDevMs: 1}}}
	p, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return telemetry.Topic(id, telemetry.KindTelemetry), p
}

// TestAskHoles: a site whose sequence 3 is missing below 4 and 5 is asked for 3..3 once the
// grace has passed (not before), live and not retained, with the watermark already published;
// again after 2 then 4 grace periods while it stays open, or one grace after the last request
// when newer reports came meanwhile; never while another controller owns
// the site, nor within takeoverQuiet of a takeover; and a filled hole is reported (a checkpoint
// soon) and no longer tracked. With HoleGrace < 0 nothing is tracked at all.
func TestAskHoles(t *testing.T) {
	bus := &storedBus{}
	be := newBenchEngine(t, 1, bus)
	e, owner := be.e, &switchOwner{on: true}
	e.o.HoleGrace, e.o.Owner = time.Second, owner
	for _, seq := range []uint64{1, 2, 4, 5} {
		e.onTelemetry(be.report(t, seq))
	}
	st := e.site(be.st.order[0])
	if st.hole.quiet == 0 {
		t.Fatal("the first report under an Owner took the site over: want takeoverQuiet set")
	}
	st.hole.quiet = 0 // the takeover's quiet time is tested below
	st.stored = 2     // as a checkpoint would have published
	t0 := be.clock.now()
	at := func(d time.Duration) []storedMsg {
		t.Helper()
		if filled := e.askHoles(t0.Add(d)); filled {
			t.Fatalf("at %v: a hole reported filled; none was", d)
		}
		return bus.requests()
	}
	if got := at(900 * time.Millisecond); len(got) != 0 {
		t.Fatalf("within the grace: requests %+v; want none", got)
	}
	got := at(time.Second)
	if len(got) != 1 || got[0].retain || *got[0].m.Hole != (telemetry.SeqRange{From: 3, To: 3}) || got[0].m.Seq != 2 || got[0].m.Boot != e.boot {
		t.Fatalf("after the grace: %+v; want one live request for 3..3 with watermark 2 and this boot", got)
	}
	if got := at(2900 * time.Millisecond); len(got) != 0 {
		t.Fatalf("1.9 s after the first request: %+v; want none (the next after 2 grace periods)", got)
	}
	if got := at(3 * time.Second); len(got) != 1 {
		t.Fatalf("2 s after the first request: %d requests; want 1", len(got))
	}
	// Newer reports came and the hole did not fill (the agent's answer was lost on the way):
	// asked again one grace after the last request, not after the next back-off (4 s).
	e.onTelemetry(be.report(t, 6))
	if got := at(3900 * time.Millisecond); len(got) != 0 {
		t.Fatalf("0.9 s after the last request, newer reports since: %+v; want none yet", got)
	}
	if got := at(4 * time.Second); len(got) != 1 {
		t.Fatalf("a grace after the last request, newer reports since: %d requests; want 1", len(got))
	}
	if got := at(5 * time.Second); len(got) != 0 {
		t.Fatalf("nothing newer since the last request: %+v; want none before the back-off", got)
	}
	owner.on = false
	if got := at(20 * time.Second); len(got) != 0 {
		t.Fatalf("while another controller owns the site: %+v; want none", got)
	}
	if n := len(e.holes.list()); n != 0 {
		t.Fatalf("%d sites tracked while another controller owns the site; want 0 (its owner's to ask)", n)
	}
	owner.on = true
	e.onTelemetry(be.report(t, 7)) // back here: its next report tracks the hole again
	st.mu.Lock()
	st.hole.quiet = t0.Add(25 * time.Second).UnixNano() // a takeover at 20 s
	st.mu.Unlock()
	if got := at(24 * time.Second); len(got) != 0 {
		t.Fatalf("within takeoverQuiet: %+v; want none", got)
	}
	if got := at(25 * time.Second); len(got) != 1 {
		t.Fatalf("after takeoverQuiet: %d requests; want 1", len(got))
	}

	e.onTelemetry(be.report(t, 3))
	if !e.askHoles(t0.Add(26 * time.Second)) {
		t.Error("the hole asked for was filled: want askHoles to say so (a checkpoint soon)")
	}
	if n := len(e.holes.list()); n != 0 {
		t.Errorf("%d sites tracked after the hole filled; want 0", n)
	}

	e.o.HoleGrace = -1
	for _, seq := range []uint64{9, 10} {
		e.onTelemetry(be.report(t, seq))
	}
	if n := len(e.holes.list()); n != 0 {
		t.Errorf("HoleGrace < 0: %d sites tracked; want 0", n)
	}
}

// TestSeqWindowHole: the lowest run missing below a taken sequence.
func TestSeqWindowHole(t *testing.T) {
	for _, tc := range []struct {
		name     string
		take     []uint64
		from, to uint64
		ok       bool
	}{
		{"none taken", nil, 0, 0, false},
		{"contiguous", []uint64{1, 2, 3}, 0, 0, false},
		{"one missing", []uint64{1, 2, 4}, 3, 3, true},
		{"a run missing", []uint64{1, 5, 6}, 2, 4, true},
		{"the lowest of two", []uint64{2, 4}, 1, 1, true},
		{"far above", []uint64{1, 200}, 2, 199, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w seqWindow
			for _, s := range tc.take {
				w.take(s)
			}
			from, to, ok := w.hole()
			if from != tc.from || to != tc.to || ok != tc.ok {
				t.Errorf("hole() = %d, %d, %v; want %d, %d, %v", from, to, ok, tc.from, tc.to, tc.ok)
			}
		})
	}
	var w seqWindow // a sequence given back (its write failed) is a hole too
	for _, s := range []uint64{1, 2, 3} {
		w.take(s)
	}
	w.untake(2)
	if from, to, ok := w.hole(); from != 2 || to != 2 || !ok {
		t.Errorf("after untake(2): hole() = %d, %d, %v; want 2, 2, true", from, to, ok)
	}
}

// TestHoleRequestMosquitto runs the engine (SQLite store, embedded time series) on a real
// Mosquitto with an agent's real MQTT client under the broker's ACL: reports 1, 2, 4 and 5
// arrive, 3 does not; the agent hears a request for 3..3 on its stored topic, sends 3, and
// then hears a watermark covering 5. The request was not retained: a later subscriber gets
// the plain watermark.
func TestHoleRequestMosquitto(t *testing.T) {
	ctx := context.Background()
	bs := newBenchStore(1)
	site := bs.order[0]
	device := bs.sites[site].DeviceID
	const ctlPassword, agentPassword = "controller-secret-holes", "agent-secret-holes"
	url := mqtttest.Mosquitto(t, []mqtt.MosquittoUser{{Username: device, Site: site, Password: agentPassword}},
		mqtt.MosquittoUser{Username: mqtt.ControllerUsername, Password: ctlPassword})
	st, err := store.Open(ctx, store.Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	claimSites(t, st, bs)
	sk, err := sink.NewEmbedded(sink.EmbeddedOptions{DataDir: t.TempDir(), FlushInterval: time.Hour, PruneInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sk.Close() })
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	bus, err := mqtt.NewClientBus(mqtt.ClientOptions{URL: url, Password: ctlPassword, ClientID: "ctl-holes", Bus: mqtt.BusOptions{Logger: quiet}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(bus.Close)
	e := New(st, bus, sk, Options{FlushEvery: 100 * time.Millisecond, HoleGrace: 300 * time.Millisecond, Logger: quiet})
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := bus.Start(ctx); err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = e.Run(rctx) }()
	t.Cleanup(func() { stop(); <-done })

	heard := make(chan telemetry.Stored, 64)
	agent := agentClient(t, url, device, agentPassword, "agent-holes")
	subscribeStored(t, agent, site, heard)
	for _, seq := range []uint64{1, 2, 4, 5} {
		publishReport(t, agent, site, device, seq)
	}
	m := awaitStored(t, heard, "a request for 3..3", func(m telemetry.Stored) bool { return m.Hole != nil })
	if *m.Hole != (telemetry.SeqRange{From: 3, To: 3}) || m.Seq > 2 || m.Device != device {
		t.Fatalf("request %+v (hole %+v); want 3..3 for %s with a watermark of at most 2", m, *m.Hole, device)
	}
	publishReport(t, agent, site, device, 3)
	awaitStored(t, heard, "a watermark covering 5", func(m telemetry.Stored) bool { return m.Hole == nil && m.Seq == 5 })

	// The broker takes the username as the client ID (no client can kick another's session), so
	// the later subscriber, with the same device's credentials, comes after the first has gone.
	agent.Disconnect(250)
	later := make(chan telemetry.Stored, 4)
	subscribeStored(t, agentClient(t, url, device, agentPassword, "agent-holes-later"), site, later)
	if m := awaitStored(t, later, "the retained watermark", func(telemetry.Stored) bool { return true }); m.Hole != nil || m.Seq != 5 {
		t.Errorf("retained stored message %+v; want the watermark 5, no request", m)
	}
}

func agentClient(t *testing.T, url, user, password, id string) paho.Client {
	t.Helper()
	c := paho.NewClient(paho.NewClientOptions().AddBroker(url).SetClientID(id).SetUsername(user).SetPassword(password).SetCleanSession(true).SetAutoReconnect(false))
	if tok := c.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("agent connecting: %v", tok.Error())
	}
	t.Cleanup(func() { c.Disconnect(100) })
	return c
}

func subscribeStored(t *testing.T, c paho.Client, site string, out chan<- telemetry.Stored) {
	t.Helper()
	tok := c.Subscribe(telemetry.Topic(site, telemetry.KindStored), 1, func(_ paho.Client, msg paho.Message) {
		var m telemetry.Stored
		if json.Unmarshal(msg.Payload(), &m) == nil {
			select {
			case out <- m:
			default:
			}
		}
	})
	if !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("subscribing: %v", tok.Error())
	}
}

func publishReport(t *testing.T, c paho.Client, site, device string, seq uint64) {
	t.Helper()
	p, err := json.Marshal(telemetry.Report{V: telemetry.SchemaVersion, Site: site, Device: device, Seq: seq, Held: 1,
		Time: time.Now().UTC(), WindowMs: 1000,
		Transport: []telemetry.TransportWindow{{Name: "inet", Method: "icmp", Sent: 10, LatencyMs: 20, P50Ms: 20, P95Ms: 22, MinMs: 19, MaxMs: 25, JitterMs: 1, StdDevMs: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	if tok := c.Publish(telemetry.Topic(site, telemetry.KindTelemetry), 1, false, p); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("publishing report %d: %v", seq, tok.Error())
	}
}

func awaitStored(t *testing.T, c <-chan telemetry.Stored, what string, ok func(telemetry.Stored) bool) telemetry.Stored {
	t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		select {
		case m := <-c:
			if ok(m) {
				return m
			}
		case <-deadline:
			t.Fatalf("no stored message: %s", what)
		}
	}
}
