package engine

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/edgewan/edgewan/agent/claim"
	"github.com/edgewan/edgewan/agent/config"
	"github.com/edgewan/edgewan/controller/mqtt/natstest"
	"github.com/edgewan/edgewan/telemetry"
)

// On NATS (claim.BrokerNATS) the uplink reports at QoS 1 until it knows the controller
// publishes the watermark, then at QoS 0; a record sent at QoS 0 leaves the spool only when
// the watermark covers it; the agent's subscriptions are at QoS 0 (NATS keeps no JetStream
// consumer for it) and its status is neither stored at QoS 1 nor retained. Checked on a real
// 3-node NATS cluster: the QoS of each message is the one NATS's MQTT layer writes in the
// message's Nmqtt-Pub header, seen by a plain NATS subscriber on the mapped subjects.
func TestUplinkOnNATS(t *testing.T) {
	nc := natstest.Start(t)
	conn, err := nats.Connect(nc.URLs[1], nats.UserInfo(natstest.User, natstest.Password))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	const site, device = "site-n", "dev-n"
	var mu sync.Mutex
	qosOf := map[uint64]string{} // report seq -> the QoS it was first published at
	var status []string          // the QoS of each status message
	sub, err := conn.Subscribe("edgewan.in.*."+site+".*", func(m *nats.Msg) {
		mu.Lock()
		defer mu.Unlock()
		qos := m.Header.Get("Nmqtt-Pub")
		switch {
		case strings.HasSuffix(m.Subject, "."+telemetry.KindTelemetry):
			var r telemetry.Report
			if json.Unmarshal(m.Data, &r) == nil {
				if _, ok := qosOf[r.Seq]; !ok {
					qosOf[r.Seq] = qos
				}
			}
		case strings.HasSuffix(m.Subject, "."+telemetry.KindStatus):
			status = append(status, qos)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := conn.Flush(); err != nil {
		t.Fatal(err)
	}

	// The controller's side: publishes the watermark, retained, as the NATSBus does.
	ctl := paho.NewClient(paho.NewClientOptions().AddBroker(nc.MQTTURLs[2]).SetClientID("ctl-test").
		SetUsername(natstest.User).SetPassword(natstest.Password).SetCleanSession(true))
	if tok := ctl.Connect(); !tok.WaitTimeout(wait) || tok.Error() != nil {
		t.Fatalf("controller's MQTT client: %v", tok.Error())
	}
	defer ctl.Disconnect(100)
	stored := func(seq uint64) {
		b, _ := json.Marshal(telemetry.Stored{V: telemetry.SchemaVersion, Site: site, Device: device, Seq: seq, Boot: "boot-1", Time: time.Now().UTC()})
		if tok := ctl.Publish(telemetry.Topic(site, telemetry.KindStored), 1, true, b); !tok.WaitTimeout(wait) || tok.Error() != nil {
			t.Fatalf("publishing the watermark: %v", tok.Error())
		}
	}

	creds := &claim.Credentials{Site: site, Device: device, MQTTURL: nc.MQTTURLs[0], MQTTURLs: nc.MQTTURLs,
		Username: natstest.User, Password: natstest.Password, Broker: claim.BrokerNATS}
	sp := openSpool(t, t.TempDir())
	defer sp.Close()
	x, err := NewUplink(creds, sp, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	var acceptedAt []time.Time // OnAccepted: at PUBACK (QoS 1), at the covering watermark (QoS 0)
	x.OnAccepted(func(at time.Time) { mu.Lock(); acceptedAt = append(acceptedAt, at); mu.Unlock() })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); x.Run(ctx) }()
	defer func() { cancel(); <-done }()
	report := func(n int) {
		for range n {
			x.Report(time.Now(), time.Second, []telemetry.TransportWindow{{Name: "mpls", Sent: 10}})
		}
	}
	seen := func(n int) func() bool {
		return func() bool { mu.Lock(); defer mu.Unlock(); return len(qosOf) >= n }
	}

	// Before any watermark (an older controller would fall back to PUBACK): QoS 1.
	report(3)
	waitUntil(t, "3 reports on NATS", seen(3))
	spoke := time.Now()
	stored(0) // the controller speaks the watermark; nothing stored yet
	waitUntil(t, "the watermark heard", func() bool { return x.DeleteMode() == modeWatermark })
	report(5)
	waitUntil(t, "8 reports on NATS", seen(8))
	sentTo := time.Now()
	mu.Lock()
	for seq := uint64(1); seq <= 8; seq++ {
		want := "0"
		if seq <= 3 {
			want = "1"
		}
		if qosOf[seq] != want {
			t.Errorf("report %d first published at QoS %q; want %s", seq, qosOf[seq], want)
		}
	}
	for i, q := range status {
		if q != "0" {
			t.Errorf("status message %d published at QoS %q; want 0", i, q)
		}
	}
	if len(status) == 0 {
		t.Error("no online status published")
	}
	mu.Unlock()
	// Sent at QoS 0 is not stored: all 8 stay in the spool until the watermark covers them.
	if n := sp.Stats().Records; n != 8 {
		t.Errorf("spool holds %d records after sending 8 with a watermark of 0; want 8", n)
	}
	mu.Lock()
	if len(acceptedAt) != 3 {
		t.Errorf("%d reports accepted before the watermark covers the QoS 0 ones; want the 3 PUBACKed", len(acceptedAt))
	}
	mu.Unlock()
	stored(8)
	waitUntil(t, "the spool emptied by the watermark", func() bool { return sp.Stats().Records == 0 })
	// The first watermark (a new controller boot) made the agent send the 3 uncovered reports
	// again, now at QoS 0: 3 PUBACKs, then 3 + 5 reports sent at QoS 0 and covered.
	waitUntil(t, "11 reports accepted", func() bool { mu.Lock(); defer mu.Unlock(); return len(acceptedAt) >= 11 })
	mu.Lock()
	for _, at := range acceptedAt[3:] { // the time each QoS 0 report was sent, not the watermark's
		if at.Before(spoke) || at.After(sentTo) {
			t.Errorf("QoS 0 report accepted at %v; want its send, between %v and %v", at, spoke, sentTo)
		}
	}
	if len(acceptedAt) != 11 {
		t.Errorf("%d reports accepted; want 11", len(acceptedAt))
	}
	mu.Unlock()
	if n := x.PubackFallbacks(); n != 0 {
		t.Errorf("fell back to deleting at PUBACK %v times", n)
	}

	// NATS keeps nothing per agent in its MQTT streams: no JetStream consumer (QoS 0
	// subscriptions), no retained status.
	js, _ := jetstream.New(conn)
	jctx, jcancel := context.WithTimeout(context.Background(), wait)
	defer jcancel()
	msgs, err := js.Stream(jctx, "$MQTT_msgs")
	if err != nil {
		t.Fatal(err)
	}
	if info, err := msgs.Info(jctx); err != nil {
		t.Fatal(err)
	} else if info.State.Consumers != 0 {
		t.Errorf("$MQTT_msgs has %d consumers; want 0 (the agent's subscriptions are QoS 0)", info.State.Consumers)
	}
	rmsgs, err := js.Stream(jctx, "$MQTT_rmsgs")
	if err != nil {
		t.Fatal(err)
	}
	oc, err := rmsgs.OrderedConsumer(jctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := oc.FetchNoWait(100)
	if err != nil {
		t.Fatal(err)
	}
	var retained []string
	for m := range batch.Messages() {
		var rm struct{ Topic string }
		_ = json.Unmarshal(m.Data(), &rm)
		retained = append(retained, rm.Topic)
	}
	if len(retained) != 1 || retained[0] != telemetry.Topic(site, telemetry.KindStored) {
		t.Errorf("retained messages %v; want only the controller's watermark", retained)
	}
}

// With the warm standby connection (NATS only), the primary's loss moves the spool to the
// standby at once: no CONNECT, so no wait on NATS's $MQTT_sess stream. The test makes the worst
// case on a real 3-node cluster: the agent's primary is on the node that leads $MQTT_sess, and
// that node is killed, so no CONNECT anywhere can succeed before the stream's election (4-9 s).
// The next report must reach a live node while the primary is still down, sent on the standby;
// the spool still deletes only at the watermark, the primary comes back and the standby stands
// by again on another node.
func TestUplinkStandbyOnNATS(t *testing.T) {
	nc := natstest.Start(t)
	mqttClient := func(node int, id string) paho.Client {
		c := paho.NewClient(paho.NewClientOptions().AddBroker(nc.MQTTURLs[node]).SetClientID(id).
			SetUsername(natstest.User).SetPassword(natstest.Password).SetCleanSession(true))
		if tok := c.Connect(); !tok.WaitTimeout(wait) || tok.Error() != nil {
			t.Fatalf("MQTT client on node %d: %v", node+1, tok.Error())
		}
		return c
	}
	natsConn := func(node int) *nats.Conn {
		c, err := nats.Connect(nc.URLs[node], nats.UserInfo(natstest.User, natstest.Password))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	// NATS creates its MQTT streams at the account's first MQTT connection.
	first := mqttClient(0, "ctl-first")
	first.Disconnect(100)
	probe := natsConn(0)
	js, _ := jetstream.New(probe)
	jctx, jcancel := context.WithTimeout(context.Background(), wait)
	defer jcancel()
	sess, err := js.Stream(jctx, "$MQTT_sess")
	if err != nil {
		t.Fatal(err)
	}
	info, err := sess.Info(jctx)
	if err != nil || info.Cluster == nil || len(info.Cluster.Leader) != 2 {
		t.Fatalf("$MQTT_sess leader: %+v, %v", info, err)
	}
	probe.Close()
	lead := int(info.Cluster.Leader[1] - '1') // server_name n1..n3 (scripts/nats.sh)
	other := (lead + 1) % 3

	conn := natsConn(other)
	defer conn.Close()
	const site, device = "site-s", "dev-s"
	var mu sync.Mutex
	type arrival struct {
		primaryUp bool // the agent's primary connection was up when the report arrived
	}
	arrived := map[uint64]arrival{}
	var x *Uplink
	sub, err := conn.Subscribe("edgewan.in.*."+site+"."+telemetry.KindTelemetry, func(m *nats.Msg) {
		var r telemetry.Report
		if json.Unmarshal(m.Data, &r) != nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if _, ok := arrived[r.Seq]; !ok {
			arrived[r.Seq] = arrival{primaryUp: x.Connected()}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := conn.Flush(); err != nil {
		t.Fatal(err)
	}
	ctl := mqttClient(other, "ctl-test")
	defer ctl.Disconnect(100)
	stored := func(seq uint64) {
		b, _ := json.Marshal(telemetry.Stored{V: telemetry.SchemaVersion, Site: site, Device: device, Seq: seq, Boot: "boot-1", Time: time.Now().UTC()})
		if tok := ctl.Publish(telemetry.Topic(site, telemetry.KindStored), 1, true, b); !tok.WaitTimeout(wait) || tok.Error() != nil {
			t.Fatalf("publishing the watermark: %v", tok.Error())
		}
	}

	// The primary goes to the $MQTT_sess leader: before the first connection the nodes are
	// dialed in the order given.
	urls := []string{nc.MQTTURLs[lead], nc.MQTTURLs[other], nc.MQTTURLs[(lead+2)%3]}
	creds := &claim.Credentials{Site: site, Device: device, MQTTURL: urls[0], MQTTURLs: urls,
		Username: natstest.User, Password: natstest.Password, Broker: claim.BrokerNATS}
	sp := openSpool(t, t.TempDir())
	defer sp.Close()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	mu.Lock() // the subscriber reads x
	x, err = NewUplink(creds, sp, log)
	mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	x.u.sb.move = time.Second // the primary shares the standby's node: move it soon (15 s)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); x.Run(ctx) }()
	defer func() { cancel(); <-done }()
	reported := uint64(0)
	report := func() uint64 {
		x.Report(time.Now(), time.Second, []telemetry.TransportWindow{{Name: "mpls", Sent: 10}})
		reported++
		return reported
	}
	seen := func(seq uint64) func() bool {
		return func() bool { mu.Lock(); defer mu.Unlock(); _, ok := arrived[seq]; return ok }
	}

	report()
	waitUntil(t, "the first report on NATS", seen(1))
	stored(1) // the controller speaks the watermark: reports go at QoS 0, the standby connects
	waitUntil(t, "the standby connection up", x.StandbyUp)
	waitUntil(t, "report 1 deleted at the watermark", func() bool { return sp.Stats().Records == 0 })
	// Node indexes below are in urls (the agent's list).
	if got := x.u.servers.current(); got != 0 {
		t.Fatalf("primary on %s; want %s, the $MQTT_sess leader", urls[got], urls[0])
	}
	if n := x.u.sb.node.Load(); n == 0 {
		t.Fatalf("standby on %s, the primary's node", urls[n])
	}
	report()
	waitUntil(t, "report 2 on NATS", seen(2))
	if n := x.StandbyPublished(); n != 0 {
		t.Errorf("%v messages sent on the standby while the primary was up; want 0", n)
	}

	nc.Kill(t, lead+1)
	waitUntil(t, "the primary's loss noticed", func() bool { return !x.Connected() })
	next := report()
	waitUntil(t, "the next report on a live node", seen(next))
	mu.Lock()
	if arrived[next].primaryUp {
		t.Errorf("report %d arrived after the primary reconnected; want it sent at once on the standby", next)
	}
	mu.Unlock()
	if x.StandbyPublished() < 1 || x.StandbyActivations() != 1 {
		t.Errorf("standby: %v published, %v activations; want >= 1 and 1", x.StandbyPublished(), x.StandbyActivations())
	}
	// Sent at QoS 0 on the standby is not deleted until the watermark covers it.
	if n := sp.Stats().Records; n != int(next-1) {
		t.Errorf("spool holds %d records; want %d (those after the watermark)", n, next-1)
	}
	stored(next)
	waitUntil(t, "the spool emptied by the watermark", func() bool { return sp.Stats().Records == 0 })

	waitFor(t, 2*wait, "the primary back", func() bool { return x.Connected() && !x.OnStandby() })
	waitFor(t, 2*wait, "the standby up again on another node", func() bool {
		return x.StandbyUp() && int(x.u.sb.node.Load()) != x.u.servers.current()
	})
	after := x.StandbyPublished()
	last := report()
	waitUntil(t, "a report on the primary", seen(last))
	if n := x.StandbyPublished(); n != after {
		t.Errorf("%v messages sent on the standby with the primary back; want 0", n-after)
	}
	if n := x.PubackFallbacks(); n != 0 {
		t.Errorf("fell back to deleting at PUBACK %v times", n)
	}
}

// The warm standby exists only on NATS with at least 2 nodes, unless turned off: never on the
// embedded broker or Mosquitto (one broker, and QoS 1 there).
func TestStandbyOnlyOnNATS(t *testing.T) {
	nodes := []string{"tcp://127.0.0.1:1", "tcp://127.0.0.1:2", "tcp://127.0.0.1:3"}
	for _, tc := range []struct {
		name   string
		broker string
		urls   []string
		mode   string
		want   bool
	}{
		{"nats, auto", claim.BrokerNATS, nodes, config.StandbyAuto, true},
		{"nats, off", claim.BrokerNATS, nodes, config.StandbyOff, false},
		{"nats, one node", claim.BrokerNATS, nodes[:1], config.StandbyAuto, false},
		{"mqtt broker (embedded, Mosquitto)", "", nodes, config.StandbyAuto, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp := openSpool(t, t.TempDir())
			defer sp.Close()
			e := &Engine{o: Options{Version: "test"}, m: newMetrics(nil), log: slog.New(slog.DiscardHandler), sp: sp}
			creds := &claim.Credentials{Site: "s", Device: "d", MQTTURL: tc.urls[0], MQTTURLs: tc.urls, Broker: tc.broker}
			u, err := newUplink(e, creds, tc.mode)
			if err != nil {
				t.Fatal(err)
			}
			if got := u.sb != nil; got != tc.want {
				t.Errorf("standby %v; want %v", got, tc.want)
			}
		})
	}
}
