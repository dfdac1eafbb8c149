package engine

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/edgewan/edgewan/agent/claim"
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
