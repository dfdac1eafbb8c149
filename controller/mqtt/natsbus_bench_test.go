package mqtt_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/edgewan/edgewan/controller/cluster"
	"github.com/edgewan/edgewan/controller/mqtt"
	"github.com/edgewan/edgewan/controller/mqtt/natstest"
	"github.com/edgewan/edgewan/telemetry"
)

// BenchmarkNATSBusConsume measures what consuming costs the controller per message on the
// scaled-out bus (docs/benchmarks.md, "the 1 -> 3 rise"): b.N messages of 64 sites, spread
// over the 16 partitions, are stored in the stream of a real 3-node NATS cluster first, then
// one bus owning every partition consumes them; the handler only counts. allocs/op are this
// process's (the NATS client's reader, the jetstream iterator, the bus); cpu-ns/op is its user
// and system CPU per message (the servers run in other processes); consume-ns/op the time
// from the first message handled to the last, per message (ns/op includes the 16 takeovers,
// JetStream API calls). Run it with a fixed count:
// go test -run '^$' -bench NATSBusConsume -benchtime 20000x ./controller/mqtt
func BenchmarkNATSBusConsume(b *testing.B) {
	c := natstest.Start(b)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	bus, err := mqtt.NewNATSBus(ctx, mqtt.NATSOptions{URLs: c.URLs, MQTTURLs: c.MQTTURLs, User: natstest.User,
		Password: natstest.Password, ClientID: "ctl-bench", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	defer bus.Close()
	streamReady(b, c, mqtt.DefaultNATSStream)
	js := jetStreamOf(b, c)
	var got, want, first atomic.Int64
	done := make(chan struct{}, 1)
	if err := bus.Subscribe(telemetry.TopicRoot+"+/"+telemetry.KindTelemetry, func(string, []byte) {
		n := got.Add(1)
		if n == 1 {
			first.Store(time.Now().UnixNano())
		}
		if n == want.Load() {
			done <- struct{}{}
		}
	}); err != nil {
		b.Fatal(err)
	}
	subjects := make([]string, 64)
	for i := range subjects {
		site := fmt.Sprintf("site-%02d", i)
		subjects[i] = fmt.Sprintf("edgewan.in.%d.%s.%s", cluster.Partition(site, 16), site, telemetry.KindTelemetry)
	}
	payload := make([]byte, 600) // about a report of 3 transports
	b.ReportAllocs()
	b.StopTimer()
	for i := range b.N { // stored first: the consumption alone is measured
		if _, err := js.PublishAsync(subjects[i%len(subjects)], payload); err != nil {
			b.Fatal(err)
		}
		if (i+1)%1000 == 0 || i == b.N-1 { // in runs: nats.go refuses more than 4,000 in flight
			select {
			case <-js.PublishAsyncComplete():
			case <-time.After(time.Minute):
				b.Fatal("publishing: no acknowledgement within a minute")
			}
		}
	}
	want.Store(int64(b.N))
	cpu0 := cpuNanos(b)
	b.StartTimer()
	for p := range 16 {
		if err := bus.StartPartition(context.Background(), p); err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		b.Fatalf("consumed %d of %d messages within 5 minutes", got.Load(), b.N)
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuNanos(b)-cpu0)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(time.Now().UnixNano()-first.Load())/float64(b.N), "consume-ns/op")
	for p := range 16 {
		bus.StopPartition(p)
	}
}

// cpuNanos is this process's user + system CPU time so far.
func cpuNanos(tb testing.TB) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
