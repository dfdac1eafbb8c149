package mqtt_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/edgewan/edgewan/controller/cluster"
	"github.com/edgewan/edgewan/controller/mqtt"
	"github.com/edgewan/edgewan/controller/mqtt/natstest"
	"github.com/edgewan/edgewan/telemetry"
)

// jetStreamOf connects to c's JetStream as the test user, until the test ends.
func jetStreamOf(t testing.TB, c *natstest.Cluster) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(strings.Join(c.URLs, ","), nats.UserInfo(natstest.User, natstest.Password))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// streamReady waits until stream has a leader and every replica is current.
func streamReady(t testing.TB, c *natstest.Cluster, stream string) {
	t.Helper()
	js := jetStreamOf(t, c)
	deadline := time.Now().Add(wait)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		var info *jetstream.StreamInfo
		s, err := js.Stream(ctx, stream)
		if err == nil {
			info, err = s.Info(ctx)
		}
		cancel()
		if err == nil && info.Cluster != nil && info.Cluster.Leader != "" &&
			!slices.ContainsFunc(info.Cluster.Replicas, func(r *jetstream.PeerInfo) bool { return !r.Current }) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("stream %s not ready within %v: %v %+v", stream, wait, err, info)
		}
		time.Sleep(100 * time.Millisecond) // polled: JetStream announces no readiness
	}
}

// TestNATSBusStartWithoutJetStream: taking partitions while JetStream cannot answer (two of
// the three nodes down: no quorum) neither blocks the caller nor loses the partitions.
// controller/cluster takes and renews every lease on one goroutine and calls StartPartition
// there: a start that waited for JetStream (5 s per partition after a node's restart) let
// the other leases expire (TestClusterProcesses' slow first rolling restart). Once the nodes
// are back, the consumers bind by themselves and the messages flow; a partition stopped
// before it was bound stays stopped.
func TestNATSBusStartWithoutJetStream(t *testing.T) {
	c := natstest.Start(t)
	rec := newReceived()
	bus := newNATSBus(t, c, "ctl-start")
	if err := bus.Subscribe(telemetry.TopicRoot+"+/"+telemetry.KindTelemetry, rec.handler("a")); err != nil {
		t.Fatal(err)
	}
	c.Kill(t, 2)
	c.Kill(t, 3)

	const stopped = 15
	t0 := time.Now()
	for p := range 16 {
		if err := bus.StartPartition(context.Background(), p); err != nil {
			t.Fatalf("StartPartition(%d) without JetStream: %v", p, err)
		}
	}
	bus.StopPartition(stopped)
	// One JetStream request times out after 5 s: a start that waited for one would take that
	// long for the first partition alone.
	if took := time.Since(t0); took >= 5*time.Second {
		t.Errorf("starting 16 partitions and stopping one without JetStream took %v; want no wait for JetStream", took)
	}
	if got := len(bus.Partitions()); got != 15 {
		t.Errorf("Partitions() = %d partitions; want 15 (16 started, 1 stopped)", got)
	}

	c.Restart(t, 2)
	c.Restart(t, 3)
	// NATS' MQTT listener acknowledges a QoS 1 publish before the stream stores it (see
	// docs/scale-out.md): published while the stream has no leader yet, it would be lost.
	streamReady(t, c, mqtt.DefaultNATSStream)
	var sites, other []string
	for i := 0; len(sites) < 6 || len(other) < 1; i++ {
		s := fmt.Sprintf("site-%d", i)
		if cluster.Partition(s, 16) == stopped {
			if len(other) < 1 {
				other = append(other, s)
			}
		} else if len(sites) < 6 {
			sites = append(sites, s)
		}
	}
	agent := agentClient(t, "agent-start", c.MQTTURLs)
	publishSeqs(t, agent, append(sites, other...), 1, 5)
	rec.waitAll(t, sites, 5)
	rec.inOrder(t)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if got := rec.bySite[other[0]]; len(got) > 0 {
		t.Errorf("site %s of the stopped partition %d was handled (%v); want nothing", other[0], stopped, got)
	}
}

// TestNATSBusReplaysLastStatus: a partition's new consumer first hands the status handler
// the last status each agent of the partition sent (what paths it is on: it does not say so
// again for a new owner), then the partition's messages in order; the replay leaves no
// consumer behind in the stream.
func TestNATSBusReplaysLastStatus(t *testing.T) {
	c := natstest.Start(t)
	sites := []string{"site-a", "site-b", "site-c", "site-d"}
	agent := agentClient(t, "agent-status", c.MQTTURLs)
	bus := newNATSBus(t, c, "ctl-status") // creates the stream
	for q := 1; q <= 3; q++ {
		for _, s := range sites {
			tok := agent.Publish(telemetry.Topic(s, telemetry.KindStatus), 1, false, strconv.Itoa(q))
			if !tok.WaitTimeout(wait) || tok.Error() != nil {
				t.Fatalf("publish %s status %d: %v", s, q, tok.Error())
			}
		}
	}
	rec := newReceived()
	if err := bus.Subscribe(telemetry.TopicRoot+"+/"+telemetry.KindStatus, rec.handler("a")); err != nil {
		t.Fatal(err)
	}
	for p := range 16 {
		if err := bus.StartPartition(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	// The replay (3), then the stream (1, 2, 3).
	deadline := time.After(wait)
	for {
		rec.mu.Lock()
		all := !slices.ContainsFunc(sites, func(s string) bool { return len(rec.bySite[s]) < 4 })
		rec.mu.Unlock()
		if all {
			break
		}
		select {
		case <-rec.more:
		case <-deadline:
			t.Fatalf("not 4 statuses per site within %v: %v", wait, rec.bySite)
		}
	}
	rec.mu.Lock()
	for _, s := range sites {
		if got := rec.bySite[s]; len(got) < 4 || got[0] != 3 || !slices.Equal(got[len(got)-3:], []int{1, 2, 3}) {
			t.Errorf("site %s: statuses handled %v; want the last (3) replayed first, then 1, 2, 3", s, got)
		}
	}
	rec.mu.Unlock()

	nc, err := nats.Connect(strings.Join(c.URLs, ","), nats.UserInfo(natstest.User, natstest.Password))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	st, err := js.Stream(ctx, mqtt.DefaultNATSStream)
	if err != nil {
		t.Fatal(err)
	}
	// A consumer's removal goes through the cluster's meta leader: polled until it shows.
	var extra []string
	for range 100 {
		extra = extra[:0]
		names := st.ConsumerNames(ctx)
		for n := range names.Name() {
			if !strings.HasPrefix(n, "p") {
				extra = append(extra, n)
			}
		}
		if err := names.Err(); err != nil {
			t.Fatal(err)
		}
		if len(extra) == 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Errorf("consumers left in the stream 10 s after the replay: %v; want only the partitions' durable ones", extra)
}
