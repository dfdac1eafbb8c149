package natsauth_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/edgewan/edgewan/controller/mqtt"
	"github.com/edgewan/edgewan/controller/mqtt/natstest"
	"github.com/edgewan/edgewan/controller/natsauth"
	"github.com/edgewan/edgewan/telemetry"
)

const wait = 20 * time.Second

// received collects the payloads a controller's handlers got, by topic.
type received struct {
	mu  sync.Mutex
	got map[string][]string
	ch  chan struct{}
}

func (r *received) handler(topic string, payload []byte) {
	r.mu.Lock()
	r.got[topic] = append(r.got[topic], string(payload))
	r.mu.Unlock()
	select {
	case r.ch <- struct{}{}:
	default:
	}
}

// await waits until topic got payload.
func (r *received) await(t *testing.T, topic, payload string) {
	t.Helper()
	deadline := time.After(wait)
	for {
		r.mu.Lock()
		for _, p := range r.got[topic] {
			if p == payload {
				r.mu.Unlock()
				return
			}
		}
		r.mu.Unlock()
		select {
		case <-r.ch:
		case <-deadline:
			t.Fatalf("%s: %q never reached the controller", topic, payload)
		}
	}
}

var conns atomic.Int64

// device connects an MQTT client the way an agent does, with its JWT as the password. Each
// connection has a client ID of its own: NATS 2.9 refuses a client ID whose session is still
// being closed on another node, which is not what these tests are about.
func device(t *testing.T, url, id, token string, lost chan<- error) (paho.Client, error) {
	t.Helper()
	cid := id + "-" + strconv.FormatInt(conns.Add(1), 10)
	o := paho.NewClientOptions().AddBroker(url).SetClientID(cid).SetUsername(id).SetPassword(token).
		SetCleanSession(true).SetAutoReconnect(false).SetConnectTimeout(5 * time.Second)
	if lost != nil {
		o.SetConnectionLostHandler(func(_ paho.Client, err error) { lost <- err })
	}
	c := paho.NewClient(o)
	tok := c.Connect()
	if !tok.WaitTimeout(wait) {
		return nil, errors.New("connect: no CONNACK")
	}
	if err := tok.Error(); err != nil {
		return nil, err
	}
	t.Cleanup(func() { c.Disconnect(100) })
	return c, nil
}

func publish(t *testing.T, c paho.Client, topic, payload string) {
	t.Helper()
	tok := c.Publish(topic, 1, false, payload)
	if !tok.WaitTimeout(wait) || tok.Error() != nil {
		t.Fatalf("publish %s: %v", topic, tok.Error())
	}
}

func subscribe(t *testing.T, c paho.Client, filter string, h paho.MessageHandler) byte {
	t.Helper()
	tok := c.Subscribe(filter, 1, h)
	if !tok.WaitTimeout(wait) || tok.Error() != nil {
		t.Fatalf("subscribe %s: %v", filter, tok.Error())
	}
	return tok.(*paho.SubscribeToken).Result()[filter]
}

// TestOperatorMode runs per-device credentials on a real 3-node NATS 2.9 cluster in operator
// mode: a device connects with its own bearer JWT to any node and its reports reach the
// controller; it can neither publish to nor subscribe to another site's topics; its revoked
// credential stops working on every node (its live connection too) while a credential issued
// again for it and the controller's own users keep working.
func TestOperatorMode(t *testing.T) {
	c, setup := startCluster(t, 16)
	iss, err := natsauth.NewIssuer(setup.Keys)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	natsJWT, seed, mqttJWT, err := iss.Controller("ctl-a")
	if err != nil {
		t.Fatal(err)
	}
	bus, err := mqtt.NewNATSBus(ctx, mqtt.NATSOptions{URLs: c.URLs, MQTTURLs: c.MQTTURLs, JWT: natsJWT, Seed: string(seed),
		MQTTJWT: mqttJWT, ClientID: "ctl-a", Partitions: iss.Partitions(), AckWait: 2 * time.Second,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatalf("controller with its own JWT: %v", err)
	}
	t.Cleanup(bus.Close)
	rec := &received{got: map[string][]string{}, ch: make(chan struct{}, 1)}
	for _, k := range telemetry.UpKinds {
		if err := bus.Subscribe(telemetry.TopicRoot+"+/"+k, rec.handler); err != nil {
			t.Fatal(err)
		}
	}
	for p := range iss.Partitions() {
		if err := bus.StartPartition(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	tokA, pubA, err := iss.Device("dev-a", "site-a")
	if err != nil {
		t.Fatal(err)
	}
	legit := 0 // messages that may be in the stream

	t.Run("reports on every node", func(t *testing.T) {
		for n, u := range c.MQTTURLs {
			d, err := device(t, u, "dev-a", tokA, nil)
			if err != nil {
				t.Fatalf("node %d: %v", n+1, err)
			}
			for _, k := range telemetry.UpKinds {
				payload := "node-" + u + "-" + k
				publish(t, d, telemetry.Topic("site-a", k), payload)
				legit++
				rec.await(t, telemetry.Topic("site-a", k), payload)
			}
			d.Disconnect(100)
		}
	})

	t.Run("other sites refused", func(t *testing.T) {
		d, err := device(t, c.MQTTURLs[0], "dev-a", tokA, nil)
		if err != nil {
			t.Fatal(err)
		}
		forged := []string{
			telemetry.Topic("site-b", telemetry.KindTelemetry),
			telemetry.Topic("site-b", telemetry.KindStatus),
			telemetry.Topic("site-b", telemetry.KindPolicy), // a downward kind, even of its own site
			telemetry.Topic("site-a", telemetry.KindPolicy),
			"edgewan/in/0/site-b/telemetry", // the stream's subjects directly
			"edgewan/in/1/site-a/telemetry",
			"edgewan/in/15/site-a/telemetry",
		}
		for _, topic := range forged {
			publish(t, d, topic, "forged") // NATS acknowledges QoS 1 and drops it
		}
		// The server handles one client's packets in order: once a later report has reached
		// the controller, the forged ones were handled (dropped) before it.
		publish(t, d, telemetry.Topic("site-a", telemetry.KindTelemetry), "after-forged")
		legit++
		rec.await(t, telemetry.Topic("site-a", telemetry.KindTelemetry), "after-forged")
		rec.mu.Lock()
		for topic, ps := range rec.got {
			for _, p := range ps {
				if p == "forged" {
					t.Errorf("forged message on %s reached the controller", topic)
				}
			}
		}
		rec.mu.Unlock()
		js, err := jetstream.New(controllerConn(t, c, iss))
		if err != nil {
			t.Fatal(err)
		}
		s, err := js.Stream(ctx, mqtt.DefaultNATSStream)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(ctx, jetstream.WithSubjectFilter(">"))
		if err != nil {
			t.Fatal(err)
		}
		if info.State.Msgs != uint64(legit) {
			t.Errorf("stream has %d messages (%v); want the %d legitimate ones", info.State.Msgs, info.State.Subjects, legit)
		}
		for sub := range info.State.Subjects {
			if !strings.Contains(sub, ".site-a.") {
				t.Errorf("stream has a message on %s", sub)
			}
		}

		// Subscriptions: the site's downward kinds only, no wildcard, no other site.
		for _, tc := range []struct {
			filter string
			want   byte
		}{
			{telemetry.Topic("site-a", telemetry.KindPolicy), 1},
			{telemetry.Topic("site-b", telemetry.KindPolicy), 0x80},
			{telemetry.TopicRoot + "+/" + telemetry.KindPolicy, 0x80},
			{telemetry.TopicRoot + "#", 0x80},
			{telemetry.Topic("site-a", telemetry.KindTelemetry), 0x80},
			{"edgewan/in/#", 0x80},
			{"$MQTT/sub/#", 0x80}, // other sessions' QoS 1 deliveries
			{"$MQTT/#", 0x80},
			{"#", 0x80},
		} {
			if got := subscribe(t, d, tc.filter, func(paho.Client, paho.Message) {}); got != tc.want {
				t.Errorf("SUBACK for %s: %#x; want %#x", tc.filter, got, tc.want)
			}
		}
		// The controller's retained publish reaches the device on its own topic.
		if err := bus.Publish(telemetry.Topic("site-a", telemetry.KindDecisions), []byte("decided"), true); err != nil {
			t.Fatalf("controller publish: %v", err)
		}
		got := make(chan string, 1)
		if q := subscribe(t, d, telemetry.Topic("site-a", telemetry.KindDecisions), func(_ paho.Client, m paho.Message) {
			select {
			case got <- string(m.Payload()):
			default:
			}
		}); q != 1 {
			t.Fatalf("SUBACK for own decisions: %#x", q)
		}
		select {
		case p := <-got:
			if p != "decided" {
				t.Errorf("decisions: %q", p)
			}
		case <-time.After(wait):
			t.Errorf("the controller's retained decisions never reached the device")
		}
	})

	t.Run("not a NATS client", func(t *testing.T) {
		nc, err := nats.Connect(strings.Join(c.URLs, ","), nats.UserJWT(
			func() (string, error) { return tokA, nil },
			func([]byte) ([]byte, error) { return nil, nil }), // bearer: no signature needed
			nats.MaxReconnects(0))
		if err == nil {
			nc.Close()
			t.Fatal("a device's JWT opened a NATS (non-MQTT) connection")
		}
	})

	t.Run("revoked", func(t *testing.T) {
		lost := make(chan error, 1)
		if _, err := device(t, c.MQTTURLs[1], "dev-a", tokA, lost); err != nil {
			t.Fatal(err)
		}
		n, err := iss.Sync(ctx, c.URLs, map[string]time.Time{pubA: time.Now()}, len(c.URLs))
		if err != nil || n != len(c.URLs) {
			t.Fatalf("push: %d nodes stored it, %v; want %d", n, err, len(c.URLs))
		}
		select {
		case <-lost:
		case <-time.After(wait):
			t.Errorf("the revoked device's live connection was not closed")
		}
		for i, u := range c.MQTTURLs {
			before := c.MQTTAuthFailures(t, i+1)
			if _, err := device(t, u, "dev-a", tokA, nil); err == nil {
				t.Errorf("node %d let the revoked credential in", i+1)
			}
			// NATS 2.9 closes the connection (paho sees EOF, not a CONNACK): its log says why.
			if after := c.AwaitMQTTAuthFailures(t, i+1, before+1); after != before+1 {
				t.Errorf("node %d: %d MQTT authentication failures logged, was %d; want one more", i+1, after, before)
			}
		}
		// A controller that read the database before the deletion pushes without the
		// revocation: Sync joins the resolver's revocations, so the credential stays refused.
		if n, err := iss.Sync(ctx, c.URLs, nil, len(c.URLs)); err != nil || n != len(c.URLs) {
			t.Fatalf("stale push: %d nodes stored it, %v", n, err)
		}
		for i, u := range c.MQTTURLs {
			before := c.MQTTAuthFailures(t, i+1)
			if _, err := device(t, u, "dev-a", tokA, nil); err == nil {
				t.Errorf("node %d let the revoked credential in after a stale controller's push", i+1)
			}
			if after := c.AwaitMQTTAuthFailures(t, i+1, before+1); after != before+1 {
				t.Errorf("node %d after the stale push: %d MQTT authentication failures logged, was %d; want one more", i+1, after, before)
			}
		}
		// Claimed again: a new user key, which the revocation does not cover.
		tokA2, _, err := iss.Device("dev-a", "site-a")
		if err != nil {
			t.Fatal(err)
		}
		d, err := device(t, c.MQTTURLs[2], "dev-a", tokA2, nil)
		if err != nil {
			t.Fatalf("re-issued credential: %v", err)
		}
		publish(t, d, telemetry.Topic("site-a", telemetry.KindStatus), "after-revocation")
		rec.await(t, telemetry.Topic("site-a", telemetry.KindStatus), "after-revocation")
		// The controller kept its rights: its retained publish still goes out.
		if err := bus.Publish(telemetry.Topic("site-a", telemetry.KindPolicy), []byte("policy"), true); err != nil {
			t.Errorf("controller publish after the revocation: %v", err)
		}
	})
}

// startCluster starts a 3-node cluster in operator mode with a new Setup.
func startCluster(t *testing.T, partitions int) (*natstest.Cluster, *natsauth.Setup) {
	t.Helper()
	s, err := natsauth.Generate(partitions)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := s.Write(dir, ""); err != nil {
		t.Fatal(err)
	}
	return natstest.StartOperator(t, filepath.Join(dir, "auth.conf"), partitions), s
}

func controllerConn(t *testing.T, c *natstest.Cluster, iss *natsauth.Issuer) *nats.Conn {
	t.Helper()
	j, seed, _, err := iss.Controller("test")
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(strings.Join(c.URLs, ","), nats.UserJWTAndSeed(j, string(seed)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}
