package mqtt_test

import (
	"context"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/edgewan/edgewan/controller/cluster"
	"github.com/edgewan/edgewan/controller/mqtt"
	"github.com/edgewan/edgewan/controller/mqtt/natstest"
	"github.com/edgewan/edgewan/telemetry"
)

// TestNATSBusAcks: the partition consumers acknowledge cumulatively (AckAll), a run of
// messages with one ack, and never a message before it is handled:
//   - "batched": an ack goes out per AckBatch messages handled, the rest at StopPartition;
//   - "timer": a run shorter than AckBatch is acknowledged within AckDelay;
//   - "upgrade": the released version's consumer (p{N}, AckExplicit, some messages acked,
//     some delivered and not) is taken over from its ack floor: every message not acked comes,
//     once, in order, none acked comes again; the old consumer is kept, set to expire after
//     MaxAge unused, so that a controller of the released version binding it again resumes
//     after its floor (not from the start of the stream), and the next takeover keeps it too;
//   - "restart": starting again (a takeover) continues after the last message handled;
//   - "lease lost": an owner whose lease ended while it had messages out (its handler busy,
//     the rest pulled) acknowledges nothing it did not handle, and pulls no more: the next
//     owner gets every message from the first one not handled, nothing lost.
func TestNATSBusAcks(t *testing.T) {
	c := natstest.Start(t)
	ctx := context.Background()
	js := jetStreamOf(t, c)
	newBus := func(t *testing.T, id string, batch int, delay time.Duration, owns func(int) bool) *mqtt.NATSBus {
		t.Helper()
		ctx, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		b, err := mqtt.NewNATSBus(ctx, mqtt.NATSOptions{URLs: c.URLs, MQTTURLs: c.MQTTURLs, User: natstest.User,
			Password: natstest.Password, ClientID: id, AckWait: 2 * time.Second, AckBatch: batch, AckDelay: delay,
			Owns: owns, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(b.Close)
		return b
	}
	newBus(t, "ctl-setup", 0, 0, nil) // creates the stream
	streamReady(t, c, mqtt.DefaultNATSStream)
	agent := agentClient(t, "agent-acks", c.MQTTURLs)
	stream, err := js.Stream(ctx, mqtt.DefaultNATSStream)
	if err != nil {
		t.Fatal(err)
	}
	// consumers lists partition p's consumers: name -> info.
	consumers := func(t *testing.T, p int) map[string]*jetstream.ConsumerInfo {
		t.Helper()
		out := map[string]*jetstream.ConsumerInfo{}
		names := stream.ConsumerNames(ctx)
		for n := range names.Name() {
			if n == "p"+strconv.Itoa(p) || strings.HasPrefix(n, "p"+strconv.Itoa(p)+"-g") {
				cons, err := stream.Consumer(ctx, n)
				if err != nil {
					t.Fatal(err)
				}
				out[n] = cons.CachedInfo()
			}
		}
		if err := names.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	// siteIn returns a site of partition p, its name prefixed.
	siteIn := func(prefix string, p int) string {
		for i := 0; ; i++ {
			if s := prefix + strconv.Itoa(i); cluster.Partition(s, 16) == p {
				return s
			}
		}
	}
	// exactly checks site's messages were from..to, each once, in order.
	exactly := func(t *testing.T, rec *received, site string, from, to int) {
		t.Helper()
		rec.mu.Lock()
		defer rec.mu.Unlock()
		var want []int
		for q := from; q <= to; q++ {
			want = append(want, q)
		}
		if got := rec.bySite[site]; !slices.Equal(got, want) {
			t.Errorf("site %s handled %v; want %d..%d once each, in order", site, got, from, to)
		}
	}
	// ackState waits until p's current consumer has cond, or fails with what it has.
	ackState := func(t *testing.T, p int, what string, cond func(*jetstream.ConsumerInfo) bool) {
		t.Helper()
		deadline := time.Now().Add(wait)
		for {
			cons, err := mqtt.PartitionConsumer(ctx, stream, p)
			var ci *jetstream.ConsumerInfo
			if err == nil {
				ci, err = cons.Info(ctx)
			}
			if err == nil && cond(ci) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("partition %d: not %s within %v: %v %+v", p, what, wait, err, ci)
			}
			time.Sleep(50 * time.Millisecond) // polled: the server announces no ack
		}
	}

	t.Run("batched", func(t *testing.T) {
		const p = 3
		site := siteIn("batch-", p)
		rec := newReceived()
		b := newBus(t, "ctl-batch", 10, time.Hour, nil)
		if err := b.Subscribe(telemetry.TopicRoot+"+/"+telemetry.KindTelemetry, rec.handler("b")); err != nil {
			t.Fatal(err)
		}
		if err := b.StartPartition(ctx, p); err != nil {
			t.Fatal(err)
		}
		publishSeqs(t, agent, []string{site}, 1, 25)
		rec.waitAll(t, []string{site}, 25)
		// Acks after the 10th and the 20th: 5 handled, waiting for the next ack.
		ackState(t, p, "acked up to the 20th", func(ci *jetstream.ConsumerInfo) bool {
			return ci.AckFloor.Consumer == 20 && ci.NumAckPending == 5
		})
		b.StopPartition(p)
		ackState(t, p, "acked up to the 25th at stop", func(ci *jetstream.ConsumerInfo) bool {
			return ci.AckFloor.Consumer == 25 && ci.NumAckPending == 0
		})
		cs := consumers(t, p)
		if len(cs) != 1 || cs["p3-g1"] == nil || cs["p3-g1"].Config.AckPolicy != jetstream.AckAllPolicy {
			t.Errorf("partition 3's consumers: %v; want p3-g1 alone, AckAll", slices.Collect(func(yield func(string) bool) {
				for n := range cs {
					if !yield(n) {
						return
					}
				}
			}))
		}
		exactly(t, rec, site, 1, 25)

		t.Run("restart", func(t *testing.T) {
			publishSeqs(t, agent, []string{site}, 26, 30)
			b2 := newBus(t, "ctl-batch2", 0, 0, nil)
			if err := b2.Subscribe(telemetry.TopicRoot+"+/"+telemetry.KindTelemetry, rec.handler("b2")); err != nil {
				t.Fatal(err)
			}
			if err := b2.StartPartition(ctx, p); err != nil {
				t.Fatal(err)
			}
			rec.waitAll(t, []string{site}, 30)
			b2.StopPartition(p)
			exactly(t, rec, site, 1, 30)
			if cs := consumers(t, p); len(cs) != 1 || cs["p3-g2"] == nil {
				t.Errorf("partition 3's consumers after a restart: %d; want p3-g2 alone", len(cs))
			}
		})
	})

	t.Run("timer", func(t *testing.T) {
		const p = 5
		site := siteIn("timer-", p)
		rec := newReceived()
		b := newBus(t, "ctl-timer", 1000, 100*time.Millisecond, nil)
		if err := b.Subscribe(telemetry.TopicRoot+"+/"+telemetry.KindTelemetry, rec.handler("b")); err != nil {
			t.Fatal(err)
		}
		if err := b.StartPartition(ctx, p); err != nil {
			t.Fatal(err)
		}
		publishSeqs(t, agent, []string{site}, 1, 7)
		rec.waitAll(t, []string{site}, 7)
		ackState(t, p, "acked by the timer", func(ci *jetstream.ConsumerInfo) bool {
			return ci.AckFloor.Consumer == 7 && ci.NumAckPending == 0
		})
		exactly(t, rec, site, 1, 7)
	})

	t.Run("upgrade", func(t *testing.T) {
		const p = 6
		site := siteIn("upgrade-", p)
		// The released version's consumer, as it created it at every bind.
		released := jetstream.ConsumerConfig{
			Durable: "p6", FilterSubject: "edgewan.in.6.>", AckPolicy: jetstream.AckExplicitPolicy,
			AckWait: 5 * time.Second, MaxAckPending: 64, DeliverPolicy: jetstream.DeliverAllPolicy, Replicas: 3,
		}
		old, err := js.CreateOrUpdateConsumer(ctx, mqtt.DefaultNATSStream, released)
		if err != nil {
			t.Fatal(err)
		}
		publishSeqs(t, agent, []string{site}, 1, 60)
		// The old controller handled and acked 1..20, had 21..30 delivered when it stopped.
		batch, err := old.Fetch(30, jetstream.FetchMaxWait(wait))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for m := range batch.Messages() {
			n++
			if n <= 20 {
				if err := m.DoubleAck(ctx); err != nil {
					t.Fatal(err)
				}
			}
		}
		if n != 30 {
			t.Fatalf("the old consumer fetched %d; want 30 (%v)", n, batch.Error())
		}
		rec := newReceived()
		b := newBus(t, "ctl-upgrade", 0, 0, nil)
		if err := b.Subscribe(telemetry.TopicRoot+"+/"+telemetry.KindTelemetry, rec.handler("b")); err != nil {
			t.Fatal(err)
		}
		if err := b.StartPartition(ctx, p); err != nil {
			t.Fatal(err)
		}
		rec.waitRange(t, []string{site}, 21, 60)
		b.StopPartition(p)
		exactly(t, rec, site, 21, 60)
		ackState(t, p, "all acknowledged", func(ci *jetstream.ConsumerInfo) bool { return ci.NumAckPending == 0 && ci.NumPending == 0 })
		cs := consumers(t, p)
		if cs["p6"] == nil || cs["p6-g1"] == nil || len(cs) != 2 {
			t.Fatalf("partition 6's consumers after the upgrade: %d, p6 %v, p6-g1 %v; want p6-g1 and the released p6 kept", len(cs), cs["p6"] != nil, cs["p6-g1"] != nil)
		}
		if ci := cs["p6-g1"]; ci.Config.AckPolicy != jetstream.AckAllPolicy || ci.NumAckPending != 0 || ci.NumPending != 0 {
			t.Errorf("p6-g1 after the upgrade: %v, ack pending %d, pending %d; want AckAll, all acknowledged", ci.Config.AckPolicy, ci.NumAckPending, ci.NumPending)
		}
		if ci := cs["p6"]; ci.Config.InactiveThreshold != 24*time.Hour || ci.AckFloor.Stream == 0 {
			t.Errorf("the released p6 after the upgrade: inactive threshold %v, ack floor %d; want 24h (the stream's MaxAge), its floor kept", ci.Config.InactiveThreshold, ci.AckFloor.Stream)
		}
		// A controller of the released version takes the partition back (a new one died in
		// the middle of a rolling upgrade, or a rollback): its bind (CreateOrUpdateConsumer,
		// as it did) resumes p6 after its own ack floor, not from the start of the stream.
		// Before the fix p6 was deleted here and the bind created it again: 1..60 again.
		old, err = js.CreateOrUpdateConsumer(ctx, mqtt.DefaultNATSStream, released)
		if err != nil {
			t.Fatalf("the released version's bind after the upgrade: %v", err)
		}
		if ci := old.CachedInfo(); ci.Config.InactiveThreshold != 0 {
			t.Errorf("p6 bound by the released version: inactive threshold %v; want 0 (in use)", ci.Config.InactiveThreshold)
		}
		batch, err = old.Fetch(1, jetstream.FetchMaxWait(wait))
		if err != nil {
			t.Fatal(err)
		}
		for m := range batch.Messages() {
			// 31: the next one p6 never delivered (21..30 come again after their AckWait).
			if q, err := strconv.Atoi(string(m.Data())); m.Subject() != "edgewan.in.6."+site+".telemetry" || err != nil || q <= 20 {
				t.Errorf("the released version's first message after the upgrade: %s %q; want one of %s's 21..60 (1..20 were acknowledged to it)", m.Subject(), m.Data(), site)
			}
			_ = m.Nak()
		}
		// The next takeover starts after the highest floor (p6-g1's), and keeps p6 again.
		b2 := newBus(t, "ctl-upgrade-2", 0, 0, nil)
		rec2 := newReceived()
		if err := b2.Subscribe(telemetry.TopicRoot+"+/"+telemetry.KindTelemetry, rec2.handler("b2")); err != nil {
			t.Fatal(err)
		}
		if err := b2.StartPartition(ctx, p); err != nil {
			t.Fatal(err)
		}
		publishSeqs(t, agent, []string{site}, 61, 62)
		rec2.waitRange(t, []string{site}, 61, 62)
		b2.StopPartition(p)
		exactly(t, rec2, site, 61, 62)
		if cs := consumers(t, p); cs["p6"] == nil || cs["p6-g2"] == nil || len(cs) != 2 || cs["p6"].Config.InactiveThreshold != 24*time.Hour {
			t.Errorf("partition 6's consumers after a second takeover: %v; want p6-g2 and p6 (threshold 24h again)", slices.Sorted(maps.Keys(cs)))
		}
	})

	t.Run("lease lost", func(t *testing.T) {
		const p = 9
		site := siteIn("lost-", p)
		var ownsA atomic.Bool
		var aGot atomic.Int32 // messages a handled
		ownsA.Store(true)
		entered := make(chan struct{})
		release := make(chan struct{})
		rec := newReceived()
		var once sync.Once
		a := newBus(t, "ctl-lost-a", 0, 0, func(int) bool { return ownsA.Load() })
		if err := a.Subscribe(telemetry.TopicRoot+"+/"+telemetry.KindTelemetry, func(topic string, payload []byte) {
			once.Do(func() { close(entered); <-release }) // busy with the first message
			aGot.Add(1)
			rec.handler("a")(topic, payload)
		}); err != nil {
			t.Fatal(err)
		}
		if err := a.StartPartition(ctx, p); err != nil {
			t.Fatal(err)
		}
		publishSeqs(t, agent, []string{site}, 1, 20)
		select {
		case <-entered:
		case <-time.After(wait):
			t.Fatal("a never got the first message")
		}
		ackState(t, p, "all 20 delivered to a", func(ci *jetstream.ConsumerInfo) bool { return ci.NumAckPending == 20 })
		ownsA.Store(false) // the lease ended; the next owner takes over while a still works
		b := newBus(t, "ctl-lost-b", 0, 0, nil)
		if err := b.Subscribe(telemetry.TopicRoot+"+/"+telemetry.KindTelemetry, rec.handler("b")); err != nil {
			t.Fatal(err)
		}
		if err := b.StartPartition(ctx, p); err != nil {
			t.Fatal(err)
		}
		rec.waitAll(t, []string{site}, 20)
		close(release) // a finishes its message: acks it, hands back the next, pulls no more
		publishSeqs(t, agent, []string{site}, 21, 40)
		rec.waitAll(t, []string{site}, 40)
		a.StopPartition(p)
		b.StopPartition(p)
		rec.mu.Lock()
		got := slices.Clone(rec.bySite[site])
		rec.mu.Unlock()
		// a handled the first message only; b every one from the first (a had not acked it).
		want := []int{1}
		for q := 1; q <= 40; q++ {
			want = append(want, q)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) || aGot.Load() != 1 {
			t.Errorf("site %s handled %v, %d by a; want 1 twice (a, busy, then b), 2..40 once, by b", site, got, aGot.Load())
		}
	})
}
