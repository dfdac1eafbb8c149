package engine

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/edgewan/edgewan/agent/claim"
	"github.com/edgewan/edgewan/controller/mqtt/natstest"
	"github.com/edgewan/edgewan/telemetry"
)

// messages records the messages logged (every level).
type messages struct {
	mu  sync.Mutex
	got []string
}

func (m *messages) Enabled(context.Context, slog.Level) bool { return true }
func (m *messages) Handle(_ context.Context, r slog.Record) error {
	m.mu.Lock()
	m.got = append(m.got, r.Message)
	m.mu.Unlock()
	return nil
}
func (m *messages) WithAttrs([]slog.Attr) slog.Handler { return m }
func (m *messages) WithGroup(string) slog.Handler      { return m }

func (m *messages) count(msg string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, g := range m.got {
		if g == msg {
			n++
		}
	}
	return n
}

// TestStandbyResubscribes: a standby whose subscription brings no watermark (no retained one
// here: the controller's watermarks are published live only, as a subscription NATS 2.9
// confirms and never serves would look) subscribes again after resubscribeAfter, and hears the
// next watermark; the primary is not involved. On a real 3-node cluster.
func TestStandbyResubscribes(t *testing.T) {
	nc := natstest.Start(t)
	const site, device = "site-r", "dev-r"
	ctl := paho.NewClient(paho.NewClientOptions().AddBroker(nc.MQTTURLs[2]).SetClientID("ctl-r").
		SetUsername(natstest.User).SetPassword(natstest.Password).SetCleanSession(true))
	if tok := ctl.Connect(); !tok.WaitTimeout(wait) || tok.Error() != nil {
		t.Fatalf("controller's MQTT client: %v", tok.Error())
	}
	defer ctl.Disconnect(100)
	live := func(seq uint64) { // not retained: a subscription made later gets nothing
		b, _ := json.Marshal(telemetry.Stored{V: telemetry.SchemaVersion, Site: site, Device: device, Seq: seq, Boot: "boot-r", Time: time.Now().UTC()})
		if tok := ctl.Publish(telemetry.Topic(site, telemetry.KindStored), 0, false, b); !tok.WaitTimeout(wait) || tok.Error() != nil {
			t.Fatalf("publishing the watermark: %v", tok.Error())
		}
	}
	creds := &claim.Credentials{Site: site, Device: device, MQTTURL: nc.MQTTURLs[0], MQTTURLs: slices.Clone(nc.MQTTURLs),
		Username: natstest.User, Password: natstest.Password, Broker: claim.BrokerNATS}
	sp := openSpool(t, t.TempDir())
	defer sp.Close()
	logged := &messages{}
	x, err := NewUplink(creds, sp, slog.New(logged))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); x.Run(ctx) }()
	defer func() { cancel(); <-done }()

	waitUntil(t, "the primary connected and subscribed", func() bool { return x.Connected() && x.u.subAt.Load() != 0 })
	live(1) // the primary hears it: the controller speaks the watermark, the standby connects
	waitUntil(t, "the standby connection up", x.StandbyUp)
	const again = "agent: no watermark on the standby connection since subscribing; subscribing again"
	if x.u.sb.heard.Load() {
		t.Fatal("the standby heard a watermark; none was retained")
	}
	// resubscribeAfter, then the standby's loop looks every 5 s at most
	waitFor(t, resubscribeAfter+10*time.Second, "the standby, hearing no watermark, subscribing again", func() bool { return logged.count(again) > 0 })
	waitUntil(t, "the standby hears the next watermark", func() bool {
		live(2)
		return x.u.sb.heard.Load()
	})
	if n := x.StandbyPublished(); n != 0 {
		t.Errorf("%v messages sent on the standby while the primary was up; want 0", n)
	}
}
