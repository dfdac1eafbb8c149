package mqtt_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	agentclaim "github.com/edgewan/edgewan/agent/claim"
	"github.com/edgewan/edgewan/agent/engine"
	"github.com/edgewan/edgewan/agent/spool"
	"github.com/edgewan/edgewan/controller/cluster"
	"github.com/edgewan/edgewan/controller/mqtt"
	"github.com/edgewan/edgewan/controller/mqtt/natstest"
	"github.com/edgewan/edgewan/telemetry"
)

// received records, per bus, what each site's handler got, in order ("seq" payloads).
type received struct {
	mu     sync.Mutex
	bySite map[string][]int
	by     map[string]string // site -> the bus that got it
	n      int
	more   chan struct{}
}

func newReceived() *received {
	return &received{bySite: map[string][]int{}, by: map[string]string{}, more: make(chan struct{}, 1)}
}

func (r *received) handler(bus string) mqtt.Handler {
	return func(topic string, payload []byte) {
		site, _, _ := telemetry.ParseTopic(topic)
		seq, err := strconv.Atoi(string(payload))
		if err != nil { // a report from an agent's uplink
			var rep telemetry.Report
			_ = json.Unmarshal(payload, &rep)
			seq = int(rep.Seq)
		}
		r.mu.Lock()
		r.bySite[site] = append(r.bySite[site], seq)
		if prev, ok := r.by[site]; ok && prev != bus {
			r.by[site] = prev + "+" + bus
		} else if !ok {
			r.by[site] = bus
		}
		r.n++
		r.mu.Unlock()
		select {
		case r.more <- struct{}{}:
		default:
		}
	}
}

// waitAll waits until every site has every seq in 1..upTo at least once.
func (r *received) waitAll(t *testing.T, sites []string, upTo int) {
	t.Helper()
	r.waitRange(t, sites, 1, upTo)
}

// missing lists the sites that never had seq.
func (r *received) missing(sites []string, seq int) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, s := range sites {
		if !slices.Contains(r.bySite[s], seq) {
			out = append(out, s)
		}
	}
	return out
}

// waitRange waits until every site has every seq in from..upTo at least once.
func (r *received) waitRange(t *testing.T, sites []string, from, upTo int) {
	t.Helper()
	deadline := time.After(wait)
	for {
		r.mu.Lock()
		missing := ""
		for _, s := range sites {
			have := map[int]bool{}
			for _, q := range r.bySite[s] {
				have[q] = true
			}
			for q := from; q <= upTo; q++ {
				if !have[q] {
					missing = fmt.Sprintf("site %s seq %d", s, q)
					break
				}
			}
			if missing != "" {
				break
			}
		}
		r.mu.Unlock()
		if missing == "" {
			return
		}
		select {
		case <-r.more:
		case <-deadline:
			t.Fatalf("not received within %v: %s (and maybe more)", wait, missing)
		}
	}
}

// inOrder checks each site's messages arrived in order: every seq seen for the first time is
// above all before it (a redelivery repeats one already seen).
func (r *received) inOrder(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for s, qs := range r.bySite {
		seen := map[int]bool{}
		hi := 0
		for _, q := range qs {
			if !seen[q] && q < hi {
				t.Errorf("site %s: %v out of order", s, qs)
				break
			}
			seen[q] = true
			hi = max(hi, q)
		}
	}
}

func agentClient(t *testing.T, id string, urls []string) paho.Client {
	t.Helper()
	o := paho.NewClientOptions().SetClientID(id).SetUsername(natstest.User).SetPassword(natstest.Password).
		SetCleanSession(false).SetAutoReconnect(true).SetConnectRetry(true).
		SetConnectRetryInterval(100 * time.Millisecond).SetMaxReconnectInterval(500 * time.Millisecond).
		SetConnectTimeout(2 * time.Second).SetKeepAlive(2 * time.Second).SetPingTimeout(time.Second)
	for _, u := range urls {
		o.AddBroker(u)
	}
	c := paho.NewClient(o)
	if tok := c.Connect(); !tok.WaitTimeout(wait) || tok.Error() != nil {
		t.Fatalf("agent connect: %v", tok.Error())
	}
	t.Cleanup(func() { c.Disconnect(100) })
	return c
}

func publishSeqs(t *testing.T, c paho.Client, sites []string, from, to int) {
	t.Helper()
	for q := from; q <= to; q++ {
		for _, s := range sites {
			tok := c.Publish(telemetry.Topic(s, telemetry.KindTelemetry), 1, false, strconv.Itoa(q))
			if !tok.WaitTimeout(wait) || tok.Error() != nil {
				t.Fatalf("publish %s %d: %v", s, q, tok.Error())
			}
		}
	}
}

func newNATSBus(t *testing.T, c *natstest.Cluster, id string) *mqtt.NATSBus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	b, err := mqtt.NewNATSBus(ctx, mqtt.NATSOptions{URLs: c.URLs, MQTTURLs: c.MQTTURLs, User: natstest.User,
		Password: natstest.Password, ClientID: id, AckWait: 2 * time.Second,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

// TestNATSBus runs the scaled-out bus on a real 3-node NATS cluster: agents' MQTT messages
// reach the bus owning the site's partition (the server's mapping agrees with
// cluster.Partition), in order; a partition handed over loses nothing published meanwhile;
// retained publishes reach an agent on another node; and after kill -9 of the node the agents
// are on, every report they deleted from their spools was received.
func TestNATSBus(t *testing.T) {
	c := natstest.Start(t)
	ctx := context.Background()
	rec := newReceived()
	a, b := newNATSBus(t, c, "ctl-a"), newNATSBus(t, c, "ctl-b")
	for name, bus := range map[string]*mqtt.NATSBus{"a": a, "b": b} {
		if err := bus.Subscribe(telemetry.TopicRoot+"+/"+telemetry.KindTelemetry, rec.handler(name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Subscribe(telemetry.TopicRoot+"#", rec.handler("a")); err == nil {
		t.Errorf("Subscribe(#): got nil; want a refusal")
	}
	for p := range 16 {
		bus := a
		if p%2 == 1 {
			bus = b
		}
		if err := bus.StartPartition(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	var sites []string
	for i := range 12 {
		sites = append(sites, fmt.Sprintf("site-%d", i))
	}
	agent := agentClient(t, "agent-1", c.MQTTURLs)

	t.Run("partitioned", func(t *testing.T) {
		publishSeqs(t, agent, sites, 1, 20)
		rec.waitAll(t, sites, 20)
		rec.mu.Lock()
		for _, s := range sites {
			want := "a"
			if cluster.Partition(s, 16)%2 == 1 {
				want = "b"
			}
			if got := rec.by[s]; got != want {
				t.Errorf("site %s (partition %d): handled by %q; want %q", s, cluster.Partition(s, 16), got, want)
			}
		}
		rec.mu.Unlock()
		rec.inOrder(t)
	})

	t.Run("handover", func(t *testing.T) {
		for p := 1; p < 16; p += 2 {
			b.StopPartition(p)
		}
		publishSeqs(t, agent, sites, 21, 30) // the odd partitions have no consumer now
		for p := 1; p < 16; p += 2 {
			if err := a.StartPartition(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		rec.waitAll(t, sites, 30)
		rec.inOrder(t)
	})

	t.Run("retained", func(t *testing.T) {
		topic := telemetry.Topic("site-3", telemetry.KindPolicy)
		if err := a.Publish(topic, []byte(`{"v":1}`), true); err != nil {
			t.Fatal(err)
		}
		got := make(chan string, 1)
		other := agentClient(t, "agent-2", c.MQTTURLs[2:]) // another node than the publisher's first
		tok := other.Subscribe(topic, 1, func(_ paho.Client, m paho.Message) {
			select {
			case got <- string(m.Payload()):
			default:
			}
		})
		if !tok.WaitTimeout(wait) || tok.Error() != nil {
			t.Fatal(tok.Error())
		}
		select {
		case p := <-got:
			if p != `{"v":1}` {
				t.Errorf("retained payload %q", p)
			}
		case <-time.After(wait):
			t.Fatal("retained policy not delivered on another node")
		}
	})

	// kill -9 of the node the agents are on. NATS 2.9 PUBACKs an MQTT QoS 1 publish before the
	// stream stored it, so a report in flight can be acknowledged and lost. The agents here are
	// the agent's own spool and uplink (engine.Uplink), and the test publishes each site's
	// watermark as the controller does: the highest contiguous sequence received. So the
	// watermark stays below a lost report, the agent sends it again, and nothing is lost.
	t.Run("node killed", func(t *testing.T) {
		var ksites []string
		for i := range 12 {
			ksites = append(ksites, fmt.Sprintf("site-k%d", i))
		}
		ups := startUplinks(t, c, ksites)
		stopMarks := publishWatermarks(t, a, rec, ksites)
		defer stopMarks()
		for q := 1; q <= 10; q++ {
			ups.report()
		}
		rec.waitAll(t, ksites, 10)
		ups.waitDrained(t, 30*time.Second)
		c.Kill(t, 1) // the agents' first server, where they are connected
		for q := 11; q <= 40; q++ {
			ups.report()
			time.Sleep(50 * time.Millisecond) // pacing the reports across the failover, not synchronisation
		}
		ups.waitDrained(t, 60*time.Second) // every record covered by the watermark, then deleted
		rec.waitAll(t, ksites, 40)         // so every one was received: 0 lost
		t.Logf("kill -9 of the agents' node: 480 reports, all received; %v sent again for a stalled watermark", ups.resent())
		rec.inOrder(t)
		c.Restart(t, 1)
	})
	if t.Failed() {
		t.Logf("node 1 log tail: %s", tail(c.Dir+"/node1.log"))
	}
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	s := string(b)
	if len(s) > 3000 {
		s = s[len(s)-3000:]
	}
	return strings.TrimSpace(s)
}

// uplinks are agents: the agent's own spool and uplink per site.
type uplinks struct {
	ups    []*engine.Uplink
	spools []*spool.Spool
}

func startUplinks(t *testing.T, c *natstest.Cluster, sites []string) *uplinks {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	u := &uplinks{}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, s := range sites {
		sp, err := spool.Open(spool.Options{Dir: t.TempDir(), NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		creds := &agentclaim.Credentials{Site: s, Device: "dev-" + s, Username: natstest.User, Password: natstest.Password, MQTTURL: c.MQTTURLs[0], MQTTURLs: c.MQTTURLs,
			Broker: agentclaim.BrokerNATS} // as the controller says at claim in the scaled-out mode: QoS 0
		up, err := engine.NewUplink(creds, sp, quiet)
		if err != nil {
			t.Fatal(err)
		}
		up.SetHoleAfter(2 * time.Second) // the watermarks below move every 200 ms
		u.ups, u.spools = append(u.ups, up), append(u.spools, sp)
		wg.Add(1)
		go func() { defer wg.Done(); up.Run(ctx) }()
	}
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		for _, sp := range u.spools {
			_ = sp.Close()
		}
	})
	return u
}

func (u *uplinks) report() {
	tws := []telemetry.TransportWindow{{Name: "wan1", Method: "icmp", Sent: 5, LatencyMs: 20, P50Ms: 20, P95Ms: 22, MinMs: 19, MaxMs: 25, JitterMs: 1, StdDevMs: 1}}
	for _, up := range u.ups {
		up.Report(time.Now(), time.Second, tws)
	}
}

func (u *uplinks) waitDrained(t *testing.T, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		left := ""
		for i, sp := range u.spools {
			if st := sp.Stats(); st.Records > 0 {
				left = fmt.Sprintf("agent %d: %d records above %d", i, st.Records, st.Acked)
				break
			}
		}
		if left == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("spools not emptied by the watermark within %v: %s", within, left)
		}
		time.Sleep(20 * time.Millisecond) // polling the spools
	}
}

func (u *uplinks) resent() float64 {
	n := 0.0
	for _, up := range u.ups {
		n += up.Resent()
	}
	return n
}

// publishWatermarks publishes, every 200 ms, each site's watermark as the controller does
// (controller/ingest: the highest contiguous sequence it has; here, received by rec).
func publishWatermarks(t *testing.T, bus mqtt.Bus, rec *received, sites []string) (stop func()) {
	t.Helper()
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			for _, s := range sites {
				mark := rec.contiguous(s)
				b, _ := json.Marshal(telemetry.Stored{V: telemetry.SchemaVersion, Site: s, Device: "dev-" + s, Seq: uint64(mark), Boot: "test", Time: time.Now().UTC()})
				_ = bus.Publish(telemetry.Topic(s, telemetry.KindStored), b, true) // a failure: the next tick
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// contiguous is the highest seq such that every one from 1 to it was received for site.
func (r *received) contiguous(site string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	have := map[int]bool{}
	for _, q := range r.bySite[site] {
		have[q] = true
	}
	n := 0
	for have[n+1] {
		n++
	}
	return n
}
