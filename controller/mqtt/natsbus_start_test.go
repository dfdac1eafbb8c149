package mqtt_test

import (
	"context"
	"fmt"
	"slices"
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

// streamReady waits until stream has a leader and every replica is current.
func streamReady(t *testing.T, c *natstest.Cluster, stream string) {
	t.Helper()
	nc, err := nats.Connect(strings.Join(c.URLs, ","), nats.UserInfo(natstest.User, natstest.Password))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
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
