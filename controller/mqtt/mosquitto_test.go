package mqtt_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/eclipse/paho.mqtt.golang/packets"

	"github.com/edgewan/edgewan/controller/mqtt"
	"github.com/edgewan/edgewan/controller/mqtt/mqtttest"
	"github.com/edgewan/edgewan/controller/tlsgen"
	"github.com/edgewan/edgewan/telemetry"
)

// external is a real Mosquitto secured by the generated files, with the controller connected
// through ClientBus (one worker: everything it handles is in one order), and two agents.
type external struct {
	srv    *mqtttest.Server
	bus    *mqtt.ClientBus
	rec    *recorder
	states chan bool // OnConnectionChange: up or down
	a, b   agentSpec
	ctrlPW string
}

func startExternal(t testing.TB, files *tlsgen.Files) *external {
	t.Helper()
	return startExternalWith(t, files, "edgewan/#", nil)
}

// startExternalWith subscribes the controller's bus to filter with h (nil: e.rec).
func startExternalWith(t testing.TB, files *tlsgen.Files, filter string, h mqtt.Handler) *external {
	t.Helper()
	e := &external{rec: newRecorder(), states: make(chan bool, 100)}
	a, ca := claim(t, "dev-a", "site-a")
	b, cb := claim(t, "dev-b", "site-b")
	e.a, e.b = a, b
	pw, err := mqtt.NewPassword()
	if err != nil {
		t.Fatal(err)
	}
	e.ctrlPW = pw
	cfg := mqtttest.Config{
		// As in production: agents' hashes as stored at claim time, the controller's password.
		Agents:     []mqtt.MosquittoUser{{Username: ca.Username, Site: ca.Site, Hash: ca.Hash}, {Username: cb.Username, Site: cb.Site, Hash: cb.Hash}},
		Controller: mqtt.MosquittoUser{Password: pw},
	}
	if files != nil {
		cfg.TLSCert, cfg.TLSKey = files.Cert, files.Key
	}
	e.srv = mqtttest.Start(t, cfg)
	if h == nil {
		h = e.rec.handle
	}
	e.bus = e.dialBus(t, filter, h)
	return e
}

// dialBus connects a ClientBus as the controller, subscribed to filter.
func (e *external) dialBus(t testing.TB, filter string, h mqtt.Handler) *mqtt.ClientBus {
	t.Helper()
	bus, err := mqtt.NewClientBus(mqtt.ClientOptions{
		URL: e.srv.URL, Password: e.ctrlPW,
		MaxReconnectInterval: 2 * time.Second,
		OnConnectionChange:   func(up bool, _ error) { e.states <- up },
		Bus:                  mqtt.BusOptions{Workers: 1, Logger: quietLogger()},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(bus.Close)
	if err := bus.Subscribe(filter, h); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context() // Start's context is the bus's lifetime
	if err := bus.Start(ctx); err != nil {
		t.Fatalf("ClientBus.Start: %v\n%s", err, e.srv.Log())
	}
	return bus
}

func (e *external) dial(t testing.TB, s agentSpec, mod ...func(*paho.ClientOptions)) *agent {
	t.Helper()
	return mustDialAgent(t, e.srv.URL, nil, s, mod...)
}

// marker publishes from a on its own telemetry topic (PUBACK awaited) and expects it to be the
// next message the controller handles: anything a sent before was refused.
func (e *external) marker(t *testing.T, a *agent, site, text string) {
	t.Helper()
	if err := a.publish(t, topic(site, telemetry.KindTelemetry), text, false); err != nil {
		t.Fatal(err)
	}
	e.rec.expect(t, topic(site, telemetry.KindTelemetry), text)
}

func (e *external) waitState(t *testing.T, want bool) {
	t.Helper()
	select {
	case up := <-e.states:
		if up != want {
			t.Fatalf("connection up=%v; want %v", up, want)
		}
	case <-time.After(wait):
		t.Fatalf("ClientBus did not report up=%v within %v", want, wait)
	}
}

func TestMosquittoAgentTelemetryReachesController(t *testing.T) {
	t.Parallel() // each has its own broker
	e := startExternal(t, nil)
	a := e.dial(t, e.a)
	for _, kind := range telemetry.UpKinds {
		if err := a.publish(t, topic("site-a", kind), "hello "+kind, false); err != nil {
			t.Fatal(err)
		}
		e.rec.expect(t, topic("site-a", kind), "hello "+kind)
	}
}

func TestMosquittoPublishRefused(t *testing.T) {
	t.Parallel() // each has its own broker
	e := startExternal(t, nil)
	a := e.dial(t, e.a)
	for _, tc := range []struct {
		name  string
		topic string
		qos   byte
	}{
		{"other site telemetry qos1", topic("site-b", telemetry.KindTelemetry), 1},
		{"other site telemetry qos0", topic("site-b", telemetry.KindTelemetry), 0},
		{"other site status", topic("site-b", telemetry.KindStatus), 1},
		{"other site policy", topic("site-b", telemetry.KindPolicy), 1},
		{"own policy (read-only)", topic("site-a", telemetry.KindPolicy), 1},
		{"own decisions (read-only)", topic("site-a", telemetry.KindDecisions), 1},
		{"unknown kind", topic("site-a", "config"), 1},
		{"deeper level", topic("site-a", telemetry.KindTelemetry) + "/x", 1},
		{"site prefix", "edgewan/v1/sites/site-a-evil/telemetry", 1},
		{"outside the tree", "edgewan/v1/admin", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Mosquitto acknowledges a refused MQTT 3.1.1 publish and drops it.
			tok := a.c.Publish(tc.topic, tc.qos, true, "forged by dev-a")
			if !tok.WaitTimeout(wait) {
				t.Fatal("no PUBACK")
			}
			e.marker(t, a, "site-a", "after "+tc.name)
		})
	}
	b := e.dial(t, e.b)
	if q := b.subscribe(t, topic("site-b", telemetry.KindPolicy)); q != 1 {
		t.Fatalf("granted %#x", q)
	}
	if err := e.bus.Publish(topic("site-b", telemetry.KindPolicy), []byte("real policy"), false); err != nil {
		t.Fatal(err)
	}
	if m := b.next(t); m.payload != "real policy" {
		t.Fatalf("site-b's agent got %q; want the controller's policy (a forged one was retained?)", m.payload)
	}
}

func TestMosquittoSubscribeRefused(t *testing.T) {
	t.Parallel() // each has its own broker
	e := startExternal(t, nil)
	// Retained state of site-b that a wildcard subscription would fetch at once.
	if err := e.bus.Publish(topic("site-b", telemetry.KindDecisions), []byte("b decisions"), true); err != nil {
		t.Fatal(err)
	}
	a := e.dial(t, e.a)
	for _, f := range []string{
		"edgewan/v1/sites/+/policy",
		"edgewan/v1/sites/+/+",
		"edgewan/v1/sites/#",
		"#",
		"edgewan/v1/sites/site-b/policy",
		"edgewan/v1/sites/site-b/decisions",
		"edgewan/v1/sites/site-a/telemetry",
	} {
		// Mosquitto 2.0.11 grants any subscription and applies the read ACL to each message
		// it would deliver (the embedded broker refuses the SUBSCRIBE instead). Either way,
		// nothing of another site may arrive: checked below.
		if q := a.subscribe(t, f); q != 1 && q != 0x80 {
			t.Errorf("subscribe %s: SUBACK %#x; want 1 or 0x80", f, q)
		}
	}
	if q := a.subscribe(t, topic("site-a", telemetry.KindPolicy)); q != 1 {
		t.Fatalf("subscribe own policy: granted %#x; want 1", q)
	}
	for _, s := range []string{"site-b", "site-a"} {
		if err := e.bus.Publish(topic(s, telemetry.KindPolicy), []byte("policy for "+s), false); err != nil {
			t.Fatal(err)
		}
	}
	// site-b's retained decisions (on subscribing) and live policy would both come first.
	if m := a.next(t); m.topic != topic("site-a", telemetry.KindPolicy) {
		t.Fatalf("dev-a got %s %q; want only its own site's policy", m.topic, m.payload)
	}
}

func TestMosquittoAuthentication(t *testing.T) {
	t.Parallel() // each has its own broker
	e := startExternal(t, nil)
	for _, tc := range []struct {
		name, user, password string
		ok                   bool
	}{
		{"valid agent (hash from claim)", "dev-a", e.a.password, true},
		{"wrong password", "dev-a", e.b.password, false},
		{"empty password", "dev-a", "", false},
		{"unknown user", "dev-x", e.a.password, false},
		{"anonymous", "", "", false},
		{"controller wrong password", mqtt.ControllerUsername, e.a.password, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := dialAgent(t, e.srv.URL, nil, tc.user, tc.password, func(o *paho.ClientOptions) { o.SetClientID("probe") })
			switch {
			case tc.ok && err != nil:
				t.Fatalf("connect: %v; want accepted", err)
			case !tc.ok && !refused(err):
				t.Fatalf("connect: %v; want refused", err)
			}
		})
	}
	t.Run("ClientBus with a wrong password fails at once", func(t *testing.T) {
		bus, err := mqtt.NewClientBus(mqtt.ClientOptions{URL: e.srv.URL, Password: "wrong", Bus: mqtt.BusOptions{Logger: quietLogger()}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if err := bus.Start(ctx); !refused(err) {
			t.Fatalf("Start: %v; want refused", err)
		}
		if ctx.Err() != nil {
			t.Fatal("Start retried a refusal until its context ended")
		}
	})
}

func TestMosquittoClientIDIsUsername(t *testing.T) {
	t.Parallel() // each has its own broker
	e := startExternal(t, nil)
	a := e.dial(t, e.a)
	b := e.dial(t, e.b, func(o *paho.ClientOptions) { o.SetClientID("dev-a") })
	e.marker(t, a, "site-a", "a still here")
	e.marker(t, b, "site-b", "b as itself")
	select {
	case err := <-a.lost:
		t.Fatalf("dev-a was disconnected: %v", err)
	default:
	}
}

func TestMosquittoOversizeRefused(t *testing.T) {
	t.Parallel() // each has its own broker
	e := startExternal(t, nil)
	a := e.dial(t, e.a)
	full := payloadOf(telemetry.MaxPayload)
	if err := a.publish(t, topic("site-a", telemetry.KindTelemetry), full, false); err != nil {
		t.Fatal(err)
	}
	if m := e.rec.next(t); len(m.payload) != telemetry.MaxPayload {
		t.Fatalf("handled %d bytes; want %d", len(m.payload), telemetry.MaxPayload)
	}
	// Just over the limit: acknowledged and dropped (message_size_limit).
	if err := a.publish(t, topic("site-a", telemetry.KindTelemetry), payloadOf(telemetry.MaxPayload+1), false); err != nil {
		t.Fatal(err)
	}
	e.marker(t, a, "site-a", "after MaxPayload+1")
	// Over the packet limit: the connection is closed (max_packet_size).
	a.c.Publish(topic("site-a", telemetry.KindTelemetry), 1, false, payloadOf(mqtt.MaxPacket+1))
	a.waitLost(t)
	e.marker(t, e.dial(t, e.a), "site-a", "after MaxPacket+1")
}

func TestMosquittoRetainedPolicyOnReconnect(t *testing.T) {
	t.Parallel() // each has its own broker
	e := startExternal(t, nil)
	policy := topic("site-a", telemetry.KindPolicy)
	for v := 1; v <= 2; v++ {
		body := []byte(fmt.Sprintf(`{"version":%d}`, v))
		if err := e.bus.Publish(policy, body, true); err != nil {
			t.Fatal(err)
		}
		e.rec.expect(t, policy, string(body))
		a := e.dial(t, e.a)
		if q := a.subscribe(t, policy); q != 1 {
			t.Fatalf("granted %#x", q)
		}
		if m := a.next(t); m.payload != string(body) || !m.retained {
			t.Fatalf("on (re)connect got %+v; want retained %s", m, body)
		}
		a.c.Disconnect(100)
	}
}

// Mosquitto 2.0 accepts any last will at CONNECT but checks the ACL when it publishes it.
func TestMosquittoLastWill(t *testing.T) {
	t.Parallel() // each has its own broker
	e := startExternal(t, nil)
	code, conn := rawConnect(t, e.srv.URL, nil, "dev-a", e.a.password, topic("site-b", telemetry.KindPolicy), "forged will")
	if code != packets.Accepted {
		t.Fatalf("CONNACK %d", code)
	}
	conn.Close() // no DISCONNECT: the broker would publish the will
	status := topic("site-a", telemetry.KindStatus)
	// Same client ID: by the time this is accepted, the first connection's will is settled.
	code, conn = rawConnect(t, e.srv.URL, nil, "dev-a", e.a.password, status, `{"state":"offline"}`)
	if code != packets.Accepted {
		t.Fatalf("CONNACK %d", code)
	}
	conn.Close()
	e.rec.expect(t, status, `{"state":"offline"}`)
}

func TestMosquittoOrderPerSite(t *testing.T) {
	t.Parallel()
	o := newOrderCheck()
	e := startExternalWith(t, nil, "edgewan/v1/sites/+/+", o.handle)
	o.run(t, map[string]*agent{"site-a": e.dial(t, e.a), "site-b": e.dial(t, e.b)})
}

// After the broker restarts (losing every session), ClientBus reconnects by itself and
// renews its subscriptions.
func TestMosquittoReconnectResubscribes(t *testing.T) {
	t.Parallel() // each has its own broker
	e := startExternal(t, nil)
	e.waitState(t, true) // the first connection
	e.srv.Restart(t)
	e.waitState(t, false)
	e.waitState(t, true)
	a := e.dial(t, e.a)
	e.marker(t, a, "site-a", "after restart")
}

// The session is persistent: what agents publish while the controller is away is delivered
// when it comes back, to handlers subscribed before Start.
func TestMosquittoPersistentSession(t *testing.T) {
	t.Parallel() // each has its own broker
	e := startExternal(t, nil)
	a := e.dial(t, e.a)
	e.marker(t, a, "site-a", "before")
	e.bus.Close()
	for _, p := range []string{"away 1", "away 2", "away 3"} {
		if err := a.publish(t, topic("site-a", telemetry.KindTelemetry), p, false); err != nil {
			t.Fatal(err)
		}
	}
	rec := newRecorder()
	e.dialBus(t, "edgewan/#", rec.handle)
	for _, p := range []string{"away 1", "away 2", "away 3"} {
		rec.expect(t, topic("site-a", telemetry.KindTelemetry), p)
	}
}

func TestMosquittoTLS(t *testing.T) {
	t.Parallel() // each has its own broker
	files := tlsFiles(t)
	e := startExternal(t, &files)
	t.Run("trusted CA", func(t *testing.T) {
		rec := newRecorder()
		bus, err := mqtt.NewClientBus(mqtt.ClientOptions{URL: e.srv.TLSURL, Password: e.ctrlPW, ClientID: "controller-tls",
			CAFile: files.CACert, Bus: mqtt.BusOptions{Workers: 1, Logger: quietLogger()}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(bus.Close)
		if err := bus.Subscribe(topic("site-a", telemetry.KindTelemetry), rec.handle); err != nil {
			t.Fatal(err)
		}
		ctx := t.Context() // Start's context is the bus's lifetime
		if err := bus.Start(ctx); err != nil {
			t.Fatalf("Start over TLS: %v\n%s", err, e.srv.Log())
		}
		a := mustDialAgent(t, e.srv.TLSURL, clientTLS(t, files), e.a)
		if err := a.publish(t, topic("site-a", telemetry.KindTelemetry), "over tls", false); err != nil {
			t.Fatal(err)
		}
		rec.expect(t, topic("site-a", telemetry.KindTelemetry), "over tls")
	})
	t.Run("untrusted CA fails at once", func(t *testing.T) {
		bus, err := mqtt.NewClientBus(mqtt.ClientOptions{URL: e.srv.TLSURL, Password: e.ctrlPW,
			TLS: &tls.Config{}, Bus: mqtt.BusOptions{Logger: quietLogger()}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		err = bus.Start(ctx)
		var cv *tls.CertificateVerificationError
		if !errors.As(err, &cv) {
			t.Fatalf("Start: %v; want a certificate verification error", err)
		}
	})
}

// Hashes cross both ways: mosquitto_passwd's verify here, and ours (HashPassword, written by
// WriteMosquittoFiles) are accepted by Mosquitto in every test above.
func TestPasswordHashMosquittoCompatible(t *testing.T) {
	t.Parallel()
	const pw = "correct horse battery staple"
	h := mqtttest.PasswdHash(t, pw)
	if !strings.HasPrefix(h, "$7$101$") {
		t.Fatalf("mosquitto_passwd wrote %q; want the $7$101$ format", h)
	}
	if err := mqtt.CheckHash(h); err != nil {
		t.Fatal(err)
	}
	if !mqtt.VerifyPassword(h, pw) {
		t.Fatal("VerifyPassword refused mosquitto_passwd's hash of the right password")
	}
	if mqtt.VerifyPassword(h, pw+"x") {
		t.Fatal("VerifyPassword accepted a wrong password")
	}
}

// BenchmarkMosquittoIngest is the same through Mosquitto (plain TCP) and ClientBus.
func BenchmarkMosquittoIngest(b *testing.B) {
	var h mqtt.Handler
	e := startExternalWith(b, nil, "edgewan/v1/sites/+/telemetry", func(t string, p []byte) { h(t, p) })
	benchIngest(b, func(hh mqtt.Handler) { h = hh }, e.dial(b, e.a))
}
