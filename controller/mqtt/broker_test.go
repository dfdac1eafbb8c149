package mqtt_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/eclipse/paho.mqtt.golang/packets"

	"github.com/edgewan/edgewan/controller/mqtt"
	"github.com/edgewan/edgewan/controller/tlsgen"
	"github.com/edgewan/edgewan/telemetry"
)

// embedded is a running embedded broker with the controller's InlineBus subscribed to every
// edgewan topic (one worker, so everything it handles is in one order), and two claimed agents.
type embedded struct {
	broker *mqtt.Broker
	bus    *mqtt.InlineBus
	url    string // mqtts://localhost:PORT
	files  tlsgen.Files
	tc     *tls.Config // the agents' TLS config (trusts the CA)
	rec    *recorder
	viol   violations
	store  *memStore
	a, b   agentSpec // dev-a on site-a, dev-b on site-b
	ctrlPW string    // the controller's network password
	cancel context.CancelFunc
}

func startEmbedded(t testing.TB, mod ...func(*mqtt.Options)) *embedded {
	t.Helper()
	e := &embedded{rec: newRecorder(), viol: make(violations, 100), files: tlsFiles(t)}
	e.tc = clientTLS(t, e.files)
	a, ca := claim(t, "dev-a", "site-a")
	b, cb := claim(t, "dev-b", "site-b")
	e.a, e.b = a, b
	e.store = &memStore{creds: map[string]mqtt.Credential{ca.Username: ca, cb.Username: cb}}
	pw, err := mqtt.NewPassword()
	if err != nil {
		t.Fatal(err)
	}
	e.ctrlPW = pw
	ctrlHash, err := mqtt.HashPassword(pw)
	if err != nil {
		t.Fatal(err)
	}
	opts := mqtt.Options{
		Listen:         "127.0.0.1:0",
		TLS:            serverTLS(t, e.files),
		Credentials:    e.store,
		ControllerHash: ctrlHash,
		OnViolation:    e.viol.report,
		Logger:         quietLogger(),
	}
	for _, f := range mod {
		f(&opts)
	}
	e.broker, err = mqtt.NewBroker(opts)
	if err != nil {
		t.Fatal(err)
	}
	e.bus = mqtt.NewInlineBus(e.broker, mqtt.BusOptions{Workers: 1, Logger: quietLogger()})
	if err := e.bus.Subscribe("edgewan/#", e.rec.handle); err != nil { // before Start: nothing missed
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	if err := e.broker.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		e.broker.Close()
		e.bus.Close()
	})
	_, port, _ := net.SplitHostPort(e.broker.Addr())
	e.url = "mqtts://localhost:" + port
	return e
}

func (e *embedded) dial(t testing.TB, s agentSpec, mod ...func(*paho.ClientOptions)) *agent {
	t.Helper()
	return mustDialAgent(t, e.url, e.tc, s, mod...)
}

// marker publishes a message from agent b on its own telemetry topic and expects it to be the
// next thing the controller handles: whatever was refused before it did not get through.
func (e *embedded) marker(t *testing.T, b *agent, text string) {
	t.Helper()
	if err := b.publish(t, topic(e.b.site, telemetry.KindTelemetry), text, false); err != nil {
		t.Fatal(err)
	}
	e.rec.expect(t, topic(e.b.site, telemetry.KindTelemetry), text)
}

func TestEmbeddedAgentTelemetryReachesController(t *testing.T) {
	e := startEmbedded(t)
	a := e.dial(t, e.a)
	for _, kind := range telemetry.UpKinds {
		tp := topic("site-a", kind)
		if err := a.publish(t, tp, `{"v":1,"kind":"`+kind+`"}`, kind == telemetry.KindStatus); err != nil {
			t.Fatalf("publish %s: %v", tp, err)
		}
		e.rec.expect(t, tp, `{"v":1,"kind":"`+kind+`"}`)
	}
}

func TestEmbeddedPublishRefused(t *testing.T) {
	e := startEmbedded(t)
	b := e.dial(t, e.b)
	for _, tc := range []struct {
		name   string
		topic  string
		qos    byte
		silent bool // refused as malformed, before any ACL check: no violation
	}{
		{"other site telemetry qos1", topic("site-b", telemetry.KindTelemetry), 1, false},
		{"other site telemetry qos0", topic("site-b", telemetry.KindTelemetry), 0, false},
		{"other site status", topic("site-b", telemetry.KindStatus), 1, false},
		{"other site policy", topic("site-b", telemetry.KindPolicy), 1, false},
		{"own policy (read-only)", topic("site-a", telemetry.KindPolicy), 1, false},
		{"own decisions (read-only)", topic("site-a", telemetry.KindDecisions), 0, false},
		{"unknown kind", topic("site-a", "config"), 1, false},
		{"deeper level", topic("site-a", telemetry.KindTelemetry) + "/x", 1, false},
		{"site prefix", "edgewan/v1/sites/site-a-evil/telemetry", 1, false},
		{"outside the tree", "edgewan/v1/admin", 1, false},
		{"$SYS", "$SYS/broker/clients", 1, false},
		{"wildcard", "edgewan/v1/sites/+/telemetry", 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := e.dial(t, e.a)
			tok := a.c.Publish(tc.topic, tc.qos, true, "forged by dev-a") // retained too: must not stick
			_ = tok                                                       // MQTT 3.1.1 has no negative PUBACK: the broker closes the connection
			a.waitLost(t)
			if !tc.silent {
				e.viol.expect(t, mqtt.Violation{Username: "dev-a", Site: "site-a", Topic: tc.topic, Write: true})
			}
			e.marker(t, b, "after "+tc.name)
		})
	}
	// Nothing forged was retained either: a fresh subscriber to site-b's policy gets nothing
	// before the controller's own message.
	b2 := e.dial(t, agentSpec{"dev-b", "site-b", e.b.password})
	if q := b2.subscribe(t, topic("site-b", telemetry.KindPolicy)); q != 1 {
		t.Fatalf("granted %#x; want 1", q)
	}
	if err := e.bus.Publish(topic("site-b", telemetry.KindPolicy), []byte("real policy"), false); err != nil {
		t.Fatal(err)
	}
	if m := b2.next(t); m.payload != "real policy" {
		t.Fatalf("site-b's agent got %q; want the controller's policy", m.payload)
	}
}

// TestEmbeddedSubscribeRefused: a refused subscribe is reported and disconnects the agent, as
// a refused publish does (docs/telemetry.md); its own down topics are granted.
func TestEmbeddedSubscribeRefused(t *testing.T) {
	e := startEmbedded(t)
	b := e.dial(t, e.b)
	for _, f := range []string{
		"edgewan/v1/sites/+/policy",
		"edgewan/v1/sites/+/+",
		"edgewan/v1/sites/#",
		"#",
		"+/v1/sites/site-a/policy",
		"edgewan/v1/sites/site-b/policy",
		"edgewan/v1/sites/site-a/+",
		"edgewan/v1/sites/site-a/#",
		"edgewan/v1/sites/site-a/telemetry", // its own up topic: write-only
		"$share/g/edgewan/v1/sites/site-a/policy",
		"$SYS/#",
	} {
		a := e.dial(t, e.a)
		a.c.Subscribe(f, 1, nil)
		a.waitLost(t)
		e.viol.expect(t, mqtt.Violation{Username: "dev-a", Site: "site-a", Topic: f, Write: false})
		e.marker(t, b, "after subscribing to "+f)
	}
	a := e.dial(t, e.a)
	for _, k := range telemetry.DownKinds {
		if q := a.subscribe(t, topic("site-a", k)); q != 1 {
			t.Fatalf("subscribe own %s: granted %#x; want 1", k, q)
		}
	}
	// The controller publishes to site-b then site-a: dev-a's first message is its own.
	for _, s := range []string{"site-b", "site-a"} {
		if err := e.bus.Publish(topic(s, telemetry.KindPolicy), []byte("policy for "+s), false); err != nil {
			t.Fatal(err)
		}
	}
	if m := a.next(t); m.topic != topic("site-a", telemetry.KindPolicy) {
		t.Fatalf("dev-a got %s %q; want only its own site's policy", m.topic, m.payload)
	}
}

func TestEmbeddedAuthentication(t *testing.T) {
	e := startEmbedded(t)
	for _, tc := range []struct {
		name, user, password string
		ok                   bool
	}{
		{"valid agent", "dev-a", e.a.password, true},
		{"wrong password", "dev-a", e.b.password, false},
		{"empty password", "dev-a", "", false},
		{"unknown user", "dev-x", e.a.password, false},
		{"anonymous", "", "", false},
		{"bad username", "Dev A", e.a.password, false},
		{"controller", mqtt.ControllerUsername, e.ctrlPW, true},
		{"controller wrong password", mqtt.ControllerUsername, e.a.password, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := tc.user
			if id == "" {
				id = "anon"
			}
			_, err := dialAgent(t, e.url, e.tc, tc.user, tc.password, func(o *paho.ClientOptions) { o.SetClientID(id) })
			switch {
			case tc.ok && err != nil:
				t.Fatalf("connect: %v; want accepted", err)
			case !tc.ok && !refused(err):
				t.Fatalf("connect: %v; want refused", err)
			}
		})
	}
	t.Run("controller login disabled", func(t *testing.T) {
		e2 := startEmbedded(t, func(o *mqtt.Options) { o.ControllerHash = "" })
		_, err := dialAgent(t, e2.url, e2.tc, mqtt.ControllerUsername, e.ctrlPW)
		if !refused(err) {
			t.Fatalf("connect: %v; want refused", err)
		}
	})
	t.Run("plaintext to the TLS port", func(t *testing.T) {
		_, port, _ := net.SplitHostPort(e.broker.Addr())
		_, err := dialAgent(t, "tcp://127.0.0.1:"+port, nil, "dev-a", e.a.password)
		if err == nil {
			t.Fatal("plaintext MQTT connected to the TLS listener")
		}
	})
	t.Run("untrusted certificate", func(t *testing.T) {
		_, err := dialAgent(t, e.url, &tls.Config{ServerName: "localhost"}, "dev-a", e.a.password)
		var cv *tls.CertificateVerificationError
		if !errors.As(err, &cv) {
			t.Fatalf("connect: %v; want a certificate verification error", err)
		}
	})
}

// An agent cannot take over (or kick) another agent's session by using its client ID: the
// broker names every client after its username.
func TestEmbeddedClientIDIsUsername(t *testing.T) {
	e := startEmbedded(t)
	a := e.dial(t, e.a)
	b := e.dial(t, e.b, func(o *paho.ClientOptions) { o.SetClientID("dev-a") })
	if err := a.publish(t, topic("site-a", telemetry.KindTelemetry), "a still here", false); err != nil {
		t.Fatalf("dev-a after dev-b used its client ID: %v", err)
	}
	e.rec.expect(t, topic("site-a", telemetry.KindTelemetry), "a still here")
	if err := b.publish(t, topic("site-b", telemetry.KindTelemetry), "b as itself", false); err != nil {
		t.Fatal(err)
	}
	e.rec.expect(t, topic("site-b", telemetry.KindTelemetry), "b as itself")
	select {
	case err := <-a.lost:
		t.Fatalf("dev-a was disconnected: %v", err)
	default:
	}
}

func TestEmbeddedOversizeRefused(t *testing.T) {
	e := startEmbedded(t)
	b := e.dial(t, e.b)
	a := e.dial(t, e.a)
	full := payloadOf(telemetry.MaxPayload)
	if err := a.publish(t, topic("site-a", telemetry.KindTelemetry), full, false); err != nil {
		t.Fatalf("publish %d bytes: %v", len(full), err)
	}
	if m := e.rec.next(t); len(m.payload) != telemetry.MaxPayload {
		t.Fatalf("handled %d bytes; want %d", len(m.payload), telemetry.MaxPayload)
	}
	for _, n := range []int{telemetry.MaxPayload + 1, mqtt.MaxPacket + 1, 4 << 20} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			a := e.dial(t, e.a)
			a.c.Publish(topic("site-a", telemetry.KindTelemetry), 1, false, payloadOf(n))
			a.waitLost(t)
			e.marker(t, b, fmt.Sprintf("after %d bytes", n))
		})
	}
}

func TestEmbeddedRetainedPolicyOnReconnect(t *testing.T) {
	e := startEmbedded(t)
	policy := topic("site-a", telemetry.KindPolicy)
	if err := e.bus.Publish(policy, []byte(`{"version":1}`), true); err != nil {
		t.Fatal(err)
	}
	e.rec.expect(t, policy, `{"version":1}`) // the controller's own subscription sees it too

	a := e.dial(t, e.a)
	if q := a.subscribe(t, policy); q != 1 {
		t.Fatalf("granted %#x", q)
	}
	if m := a.next(t); m.payload != `{"version":1}` || !m.retained {
		t.Fatalf("on connect got %+v; want the retained version 1", m)
	}
	a.c.Disconnect(100)

	if err := e.bus.Publish(policy, []byte(`{"version":2}`), true); err != nil {
		t.Fatal(err)
	}
	a = e.dial(t, e.a)
	if q := a.subscribe(t, policy); q != 1 {
		t.Fatalf("granted %#x", q)
	}
	if m := a.next(t); m.payload != `{"version":2}` || !m.retained {
		t.Fatalf("on reconnect got %+v; want the retained version 2 only", m)
	}
	// And dev-b, subscribed to its own policy, gets none of site-a's: its first message is
	// the one published for it.
	b := e.dial(t, e.b)
	b.subscribe(t, topic("site-b", telemetry.KindPolicy))
	if err := e.bus.Publish(topic("site-b", telemetry.KindPolicy), []byte("b"), false); err != nil {
		t.Fatal(err)
	}
	if m := b.next(t); m.topic != topic("site-b", telemetry.KindPolicy) {
		t.Fatalf("dev-b got %s", m.topic)
	}
}

// mochi publishes last wills without an ACL check (mochi-mqtt/server#503); the broker refuses
// a CONNECT whose will the agent could not publish itself.
func TestEmbeddedLastWill(t *testing.T) {
	e := startEmbedded(t)
	forged := topic("site-b", telemetry.KindPolicy)
	code, _ := rawConnect(t, e.url, e.tc, "dev-a", e.a.password, forged, "forged will")
	if code != packets.ErrRefusedNotAuthorised {
		t.Fatalf("CONNACK %d for a will on another site's topic; want %d (not authorised)", code, packets.ErrRefusedNotAuthorised)
	}
	e.viol.expect(t, mqtt.Violation{Username: "dev-a", Site: "site-a", Topic: forged, Write: true})

	status := topic("site-a", telemetry.KindStatus)
	code, conn := rawConnect(t, e.url, e.tc, "dev-a", e.a.password, status, `{"state":"offline"}`)
	if code != packets.Accepted {
		t.Fatalf("CONNACK %d for a will on its own status; want accepted", code)
	}
	conn.Close() // no DISCONNECT: the will fires
	e.rec.expect(t, status, `{"state":"offline"}`)
}

// Messages of one site reach the handlers in the order the agent published them, while sites
// are handled concurrently.
func TestEmbeddedOrderPerSite(t *testing.T) {
	e := startEmbedded(t)
	o := newOrderCheck()
	bus := mqtt.NewInlineBus(e.broker, mqtt.BusOptions{Workers: 4, QueueLen: 8, Logger: quietLogger()})
	t.Cleanup(bus.Close)
	if err := bus.Subscribe("edgewan/v1/sites/+/+", o.handle); err != nil {
		t.Fatal(err)
	}
	o.run(t, map[string]*agent{"site-a": e.dial(t, e.a), "site-b": e.dial(t, e.b)})
}

// orderCheck publishes orderN messages per site (telemetry and events interleaved) and checks
// that each site's arrive in order.
type orderCheck struct{ got map[string]chan string }

const orderN = 300

func newOrderCheck() *orderCheck {
	return &orderCheck{got: map[string]chan string{"site-a": make(chan string, orderN), "site-b": make(chan string, orderN)}}
}

func (o *orderCheck) handle(tp string, p []byte) {
	if site, kind, _ := telemetry.ParseTopic(tp); kind == telemetry.KindTelemetry || kind == telemetry.KindEvents {
		o.got[site] <- string(p)
	}
}

func (o *orderCheck) run(t *testing.T, agents map[string]*agent) {
	t.Helper()
	errs := make(chan error, len(agents))
	for site, a := range agents {
		go func() {
			var last paho.Token
			for i := range orderN {
				kind := telemetry.KindTelemetry
				if i%3 == 0 {
					kind = telemetry.KindEvents
				}
				last = a.c.Publish(topic(site, kind), 1, false, strconv.Itoa(i))
			}
			if !last.WaitTimeout(wait) {
				errs <- errors.New(site + ": no PUBACK for the last message")
				return
			}
			errs <- last.Error()
		}()
	}
	for range agents {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for site, ch := range o.got {
		for i := range orderN {
			select {
			case p := <-ch:
				if p != strconv.Itoa(i) {
					t.Fatalf("%s: message %d handled as #%s; want publish order", site, i, p)
				}
			case <-time.After(wait):
				t.Fatalf("%s: only %d of %d messages handled", site, i, orderN)
			}
		}
	}
}

// The controller identity over the network, through ClientBus (TLS, CA from a file): allowed
// every topic.
func TestEmbeddedControllerOverClientBus(t *testing.T) {
	e := startEmbedded(t)
	rec := newRecorder()
	cb, err := mqtt.NewClientBus(mqtt.ClientOptions{URL: e.url, Password: e.ctrlPW, CAFile: e.files.CACert,
		Bus: mqtt.BusOptions{Workers: 1, Logger: quietLogger()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cb.Close)
	if err := cb.Subscribe("edgewan/v1/sites/+/telemetry", rec.handle); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context() // Start's context is the bus's lifetime
	if err := cb.Start(ctx); err != nil {
		t.Fatal(err)
	}
	a := e.dial(t, e.a)
	if err := a.publish(t, topic("site-a", telemetry.KindTelemetry), "t1", false); err != nil {
		t.Fatal(err)
	}
	rec.expect(t, topic("site-a", telemetry.KindTelemetry), "t1")
	if err := cb.Publish(topic("site-a", telemetry.KindDecisions), []byte("d1"), true); err != nil {
		t.Fatal(err)
	}
	a.subscribe(t, topic("site-a", telemetry.KindDecisions))
	if m := a.next(t); m.payload != "d1" || !m.retained {
		t.Fatalf("agent got %+v; want the retained decisions", m)
	}
	select {
	case v := <-e.viol:
		t.Fatalf("violation for the controller: %+v", v)
	default:
	}
}

func TestEmbeddedRevoke(t *testing.T) {
	e := startEmbedded(t)
	a := e.dial(t, e.a)
	e.store.mu.Lock()
	delete(e.store.creds, "dev-a")
	e.store.mu.Unlock()
	e.broker.Revoke("dev-a")
	a.waitLost(t)
	if _, err := dialAgent(t, e.url, e.tc, "dev-a", e.a.password); !refused(err) {
		t.Fatalf("reconnect after revoke: %v; want refused", err)
	}
}

// A client that connects but never completes TLS or CONNECT is dropped after ConnectTimeout.
func TestEmbeddedConnectTimeout(t *testing.T) {
	// Long enough for a TLS handshake on a loaded machine, so the second case gets past it.
	e := startEmbedded(t, func(o *mqtt.Options) { o.ConnectTimeout = 2 * time.Second })
	for _, name := range []string{"no TLS handshake", "no CONNECT"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var conn net.Conn
			var err error
			if name == "no TLS handshake" {
				conn, err = net.Dial("tcp", e.broker.Addr())
			} else {
				conn, err = tls.Dial("tcp", e.broker.Addr(), e.tc)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetReadDeadline(time.Now().Add(wait))
			_, err = conn.Read(make([]byte, 1))
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("the broker kept an idle connection open for %v", wait)
			}
			if err == nil {
				t.Fatal("read data from an idle connection; want it closed")
			}
		})
	}
}

// Cancelling Start's context stops the broker: clients are dropped and the port closes.
func TestEmbeddedStopsWithContext(t *testing.T) {
	e := startEmbedded(t)
	a := e.dial(t, e.a)
	e.cancel()
	a.waitLost(t)
	e.broker.Close() // waits; idempotent with the context's
	if c, err := net.DialTimeout("tcp", e.broker.Addr(), time.Second); err == nil {
		c.Close()
		t.Fatal("the listener still accepts connections")
	}
}

// A handler stuck for good does not hang Close: after DrainTimeout the messages waiting for its
// full queue are dropped (the agents send them again; their spools keep every record until the
// controller's watermark).
func TestEmbeddedCloseWithStuckHandler(t *testing.T) {
	e := startEmbedded(t, func(o *mqtt.Options) { o.DrainTimeout = 300 * time.Millisecond })
	entered := make(chan struct{}, 10)
	release := make(chan struct{})
	bus := mqtt.NewInlineBus(e.broker, mqtt.BusOptions{Workers: 1, QueueLen: 1, Logger: quietLogger()})
	if err := bus.Subscribe(topic("site-a", telemetry.KindEvents), func(string, []byte) {
		entered <- struct{}{}
		<-release
	}); err != nil {
		t.Fatal(err)
	}
	a := e.dial(t, e.a)
	if err := a.publish(t, topic("site-a", telemetry.KindEvents), "1", false); err != nil {
		t.Fatal(err)
	}
	<-entered                              // the worker is stuck in message 1
	for _, p := range []string{"2", "3"} { // 2 fills the queue; the broker acks 3, then blocks on it
		if err := a.publish(t, topic("site-a", telemetry.KindEvents), p, false); err != nil {
			t.Fatal(err)
		}
	}
	closed := make(chan struct{})
	go func() {
		e.broker.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(wait):
		t.Fatal("Broker.Close hangs on a stuck handler")
	}
	close(release)
	bus.Close() // runs message 2, then returns
}

func TestNewBrokerValidates(t *testing.T) {
	good := mqtt.Options{TLS: &tls.Config{}, Credentials: &memStore{}, Logger: quietLogger()}
	for _, tc := range []struct {
		name string
		mod  func(*mqtt.Options)
		want string
	}{
		{"no TLS", func(o *mqtt.Options) { o.TLS = nil }, "TLS"},
		{"no store", func(o *mqtt.Options) { o.Credentials = nil }, "Credentials"},
		{"bad controller hash", func(o *mqtt.Options) { o.ControllerHash = "plaintext" }, "ControllerHash"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := good
			tc.mod(&o)
			_, err := mqtt.NewBroker(o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewBroker: %v; want an error about %s", err, tc.want)
			}
		})
	}
	if _, err := mqtt.NewBroker(good); err != nil {
		t.Fatalf("NewBroker with the required options: %v", err)
	}
}

func TestBusRefusesBadInput(t *testing.T) {
	e := startEmbedded(t)
	big := make([]byte, telemetry.MaxPayload+1)
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"publish wildcard", e.bus.Publish("edgewan/v1/sites/+/policy", nil, false)},
		{"publish empty topic", e.bus.Publish("", nil, false)},
		{"publish oversize", e.bus.Publish(topic("site-a", telemetry.KindPolicy), big, false)},
		{"subscribe bad filter", e.bus.Subscribe("a/#/b", func(string, []byte) {})},
		{"subscribe nil handler", e.bus.Subscribe("a/b", nil)},
	} {
		if tc.err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	e.bus.Close()
	if err := e.bus.Publish("a/b", nil, false); !errors.Is(err, mqtt.ErrClosed) {
		t.Errorf("publish after Close: %v; want ErrClosed", err)
	}
}

// BenchmarkEmbeddedIngest is the end-to-end rate of one agent's QoS 1 telemetry over TLS into
// an InlineBus handler.
func BenchmarkEmbeddedIngest(b *testing.B) {
	e := startEmbedded(b)
	benchIngest(b, func(h mqtt.Handler) {
		bus := mqtt.NewInlineBus(e.broker, mqtt.BusOptions{Logger: quietLogger()})
		b.Cleanup(bus.Close)
		if err := bus.Subscribe("edgewan/v1/sites/+/telemetry", h); err != nil {
			b.Fatal(err)
		}
	}, e.dial(b, e.a))
}

// benchIngest publishes b.N reports from a and waits until subscribe's handler has them all.
func benchIngest(b *testing.B, subscribe func(mqtt.Handler), a *agent) {
	payload := []byte(`{"v":1,"site":"site-a","device":"dev-a","seq":1,"ts":"2026-01-01T00:00:00Z","window_ms":10000,` +
		`"transports":[{"name":"wan1","sent":10,"lost":0,"latency_ms":12.5,"p50_ms":12,"p95_ms":15,"min_ms":11,"max_ms":16,"jitter_ms":1.2,"stddev_ms":1.1}]}`)
	var n atomic.Int64
	all := make(chan struct{})
	target := int64(b.N)
	subscribe(func(string, []byte) {
		if n.Add(1) == target {
			close(all)
		}
	})
	tp := topic("site-a", telemetry.KindTelemetry)
	b.SetBytes(int64(len(payload)))
	b.ResetTimer()
	var last paho.Token
	for range b.N {
		last = a.c.Publish(tp, 1, false, payload)
	}
	if !last.WaitTimeout(time.Minute) || last.Error() != nil {
		b.Fatalf("last publish: %v", last.Error())
	}
	select {
	case <-all:
	case <-time.After(time.Minute):
		b.Fatalf("%d of %d handled", n.Load(), b.N)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}
