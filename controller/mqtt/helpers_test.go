package mqtt_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/eclipse/paho.mqtt.golang/packets"

	"github.com/edgewan/edgewan/controller/mqtt"
	"github.com/edgewan/edgewan/controller/tlsgen"
	"github.com/edgewan/edgewan/telemetry"
)

// wait bounds every wait of these tests: generous for a loaded CI machine, never a sleep.
const wait = 20 * time.Second

// memStore is an in-memory CredentialStore.
type memStore struct {
	mu    sync.Mutex
	creds map[string]mqtt.Credential
}

func (s *memStore) MQTTCredential(_ context.Context, username string) (*mqtt.Credential, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.creds[username]
	if !ok {
		return nil, nil
	}
	return &c, nil
}

// agentSpec is a test agent: device, site and password.
type agentSpec struct{ device, site, password string }

// claim issues credentials for device on site, as the controller does at claim time.
func claim(t testing.TB, device, site string) (agentSpec, mqtt.Credential) {
	t.Helper()
	pw, c, err := mqtt.NewCredential(device, site)
	if err != nil {
		t.Fatal(err)
	}
	return agentSpec{device, site, pw}, c
}

// tlsFiles makes a CA and a server certificate for localhost with the controller's own tlsgen.
func tlsFiles(t testing.TB) tlsgen.Files {
	t.Helper()
	f, _, err := tlsgen.Ensure(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func serverTLS(t testing.TB, f tlsgen.Files) *tls.Config {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}}
}

func clientTLS(t testing.TB, f tlsgen.Files) *tls.Config {
	t.Helper()
	pem, err := os.ReadFile(f.CACert)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatal("no CA certificate")
	}
	return &tls.Config{RootCAs: pool, ServerName: "localhost", MinVersion: tls.VersionTLS12}
}

func quietLogger() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// msg is one message a test subscriber got.
type msg struct {
	topic    string
	payload  string
	retained bool
}

// agent is a real MQTT client (paho) standing in for an edge agent.
type agent struct {
	c    paho.Client
	msgs chan msg   // everything received, in order
	lost chan error // the connection was lost (no auto-reconnect)
}

// dialAgent connects as user/password (client ID = user, clean session, no auto-reconnect).
func dialAgent(t testing.TB, brokerURL string, tc *tls.Config, user, password string, mod ...func(*paho.ClientOptions)) (*agent, error) {
	t.Helper()
	a := &agent{msgs: make(chan msg, 1000), lost: make(chan error, 1)}
	o := paho.NewClientOptions().AddBroker(brokerURL).SetClientID(user).SetUsername(user).SetPassword(password).
		SetCleanSession(true).SetAutoReconnect(false).SetConnectTimeout(wait).SetOrderMatters(true).
		SetKeepAlive(30 * time.Second).
		SetDefaultPublishHandler(func(_ paho.Client, m paho.Message) {
			a.msgs <- msg{m.Topic(), string(m.Payload()), m.Retained()}
		}).
		SetConnectionLostHandler(func(_ paho.Client, err error) { a.lost <- err })
	if tc != nil {
		o.SetTLSConfig(tc)
	}
	for _, f := range mod {
		f(o)
	}
	a.c = paho.NewClient(o)
	tok := a.c.Connect()
	if !tok.WaitTimeout(wait) {
		return nil, errors.New("connect: timed out")
	}
	if err := tok.Error(); err != nil {
		return nil, err
	}
	t.Cleanup(func() { a.c.Disconnect(0) })
	return a, nil
}

func mustDialAgent(t testing.TB, brokerURL string, tc *tls.Config, s agentSpec, mod ...func(*paho.ClientOptions)) *agent {
	t.Helper()
	a, err := dialAgent(t, brokerURL, tc, s.device, s.password, mod...)
	if err != nil {
		t.Fatalf("agent %s: connect to %s: %v", s.device, brokerURL, err)
	}
	return a
}

// publish publishes at QoS 1 and waits for the PUBACK (or the error).
func (a *agent) publish(t testing.TB, topic, payload string, retain bool) error {
	t.Helper()
	tok := a.c.Publish(topic, 1, retain, payload)
	if !tok.WaitTimeout(wait) {
		return errors.New("publish: no PUBACK")
	}
	return tok.Error()
}

// subscribe subscribes at QoS 1 and returns the granted QoS (0x80: refused).
func (a *agent) subscribe(t testing.TB, filter string) byte {
	t.Helper()
	tok := a.c.Subscribe(filter, 1, nil)
	if !tok.WaitTimeout(wait) {
		t.Fatalf("subscribe %s: no SUBACK", filter)
	}
	if err := tok.Error(); err != nil {
		t.Fatalf("subscribe %s: %v", filter, err)
	}
	res := tok.(*paho.SubscribeToken).Result()
	if len(res) != 1 {
		t.Fatalf("subscribe %s: result %v", filter, res)
	}
	for _, q := range res { // paho keys "$share/g/x" as "x"
		return q
	}
	return 0
}

// refused reports whether err is a broker's refusal of the credentials. mochi answers MQTT
// 3.1.1 clients "not authorized" (5) where it means "bad username or password" (4).
func refused(err error) bool {
	return errors.Is(err, packets.ErrorRefusedBadUsernameOrPassword) || errors.Is(err, packets.ErrorRefusedNotAuthorised)
}

// next returns the next message the agent gets.
func (a *agent) next(t testing.TB) msg {
	t.Helper()
	select {
	case m := <-a.msgs:
		return m
	case <-time.After(wait):
		t.Fatalf("no message within %v", wait)
		return msg{}
	}
}

// waitLost waits until the broker drops the agent's connection.
func (a *agent) waitLost(t testing.TB) {
	t.Helper()
	select {
	case <-a.lost:
	case <-time.After(wait):
		t.Fatalf("the broker kept the connection open")
	}
}

// recorder is a Bus handler recording what it gets, in order. It never blocks (a full
// recorder would hold up the bus and, through it, the broker).
type recorder struct {
	mu   sync.Mutex
	msgs []msg
	more chan struct{}
}

func newRecorder() *recorder { return &recorder{more: make(chan struct{}, 1)} }

func (r *recorder) handle(topic string, payload []byte) {
	r.mu.Lock()
	r.msgs = append(r.msgs, msg{topic: topic, payload: string(payload)})
	r.mu.Unlock()
	select {
	case r.more <- struct{}{}:
	default:
	}
}

// next returns the next message handled.
func (r *recorder) next(t testing.TB) msg {
	t.Helper()
	deadline := time.After(wait)
	for {
		r.mu.Lock()
		if len(r.msgs) > 0 {
			m := r.msgs[0]
			r.msgs = r.msgs[1:]
			r.mu.Unlock()
			return m
		}
		r.mu.Unlock()
		select {
		case <-r.more:
		case <-deadline:
			t.Fatalf("no message handled within %v", wait)
		}
	}
}

// expect fails unless the next message handled is (topic, payload): used with a marker
// published after something that must not arrive, on a bus with one worker (one queue).
func (r *recorder) expect(t testing.TB, topic, payload string) {
	t.Helper()
	if m := r.next(t); m.topic != topic || m.payload != payload {
		t.Fatalf("handled %s %q; want %s %q (a refused message got through?)", m.topic, m.payload, topic, payload)
	}
}

// violations collects OnViolation calls.
type violations chan mqtt.Violation

func (v violations) report(x mqtt.Violation) { v <- x }

func (v violations) expect(t testing.TB, want mqtt.Violation) {
	t.Helper()
	select {
	case got := <-v:
		got.Remote = ""
		if got != want {
			t.Fatalf("violation %+v; want %+v", got, want)
		}
	case <-time.After(wait):
		t.Fatalf("no violation reported; want %+v", want)
	}
}

// rawConnect sends a CONNECT with a last will over a raw connection and returns the CONNACK
// return code and the connection (which the caller closes abruptly to fire the will).
func rawConnect(t testing.TB, brokerURL string, tc *tls.Config, user, password, willTopic, willPayload string) (byte, net.Conn) {
	t.Helper()
	u, err := url.Parse(brokerURL)
	if err != nil {
		t.Fatal(err)
	}
	d := &net.Dialer{Timeout: wait}
	var conn net.Conn
	if u.Scheme == "mqtts" {
		conn, err = tls.DialWithDialer(d, "tcp", u.Host, tc)
	} else {
		conn, err = d.Dial("tcp", u.Host)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(wait))
	cp := packets.NewControlPacket(packets.Connect).(*packets.ConnectPacket)
	cp.ProtocolName, cp.ProtocolVersion = "MQTT", 4
	cp.CleanSession, cp.Keepalive, cp.ClientIdentifier = true, 60, user
	cp.UsernameFlag, cp.Username = true, user
	cp.PasswordFlag, cp.Password = true, []byte(password)
	cp.WillFlag, cp.WillTopic, cp.WillMessage, cp.WillQos = true, willTopic, []byte(willPayload), 1
	if err := cp.Write(conn); err != nil {
		t.Fatal(err)
	}
	p, err := packets.ReadPacket(conn)
	if err != nil {
		return 0xff, conn // closed without CONNACK
	}
	ack, ok := p.(*packets.ConnackPacket)
	if !ok {
		t.Fatalf("got %T; want CONNACK", p)
	}
	return ack.ReturnCode, conn
}

func topic(site, kind string) string { return telemetry.Topic(site, kind) }

func payloadOf(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a' + byte(i%26)
	}
	return string(b)
}
