package mqtt_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

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

// BenchmarkNATSBusConsumePaced measures the same per-message cost at a low, steady rate, the
// case of a controller taking a third of a small fleet's load (docs/benchmarks.md, "Read
// coalescing"): b.N messages are published at EDGEWAN_BENCH_RATE per second (default 1,000)
// by another process (this test binary run again as pacedPublisher, so its CPU is not counted)
// while one bus owning every partition consumes them, once for each read-coalescing window
// (off and the sub-benchmark's d). cpu-ns/op is this process's CPU per message, from the
// the 2 s of messages that warm the consumers up to the last handled; lag-us/op the mean time
// from publishing to the handler (ns/op and allocs/op include the warm-up and the takeovers). Alternate the windows with -count:
// go test -run '^$' -bench NATSBusConsumePaced -benchtime 10000x -count 4 ./controller/mqtt
func BenchmarkNATSBusConsumePaced(b *testing.B) {
	rate := 1000
	if v, err := strconv.Atoi(os.Getenv("EDGEWAN_BENCH_RATE")); err == nil && v > 0 {
		rate = v
	}
	c := natstest.Start(b)
	for _, d := range []time.Duration{-1, 2 * time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond} {
		name := "coalesce=off"
		if d > 0 {
			name = "coalesce=" + d.String()
		}
		b.Run(name, func(b *testing.B) { consumePaced(b, c, d, rate) })
	}
}

func consumePaced(b *testing.B, c *natstest.Cluster, d time.Duration, rate int) {
	if b.N == 1 { // the framework's first call, before the -benchtime count: spares 16 takeovers
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bus, err := mqtt.NewNATSBus(ctx, mqtt.NATSOptions{URLs: c.URLs, MQTTURLs: c.MQTTURLs, User: natstest.User,
		Password: natstest.Password, ClientID: "ctl-bench-paced", ReadCoalesce: d,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		b.Fatal(err)
	}
	defer bus.Close()
	streamReady(b, c, mqtt.DefaultNATSStream)
	js := jetStreamOf(b, c)
	// The first warm messages (2 s) are not measured: they absorb the consumers' first pulls.
	warm := int64(2 * rate)
	var got, lag, runStart, cpu0 atomic.Int64
	runStart.Store(math.MaxInt64)
	done := make(chan struct{}, 1)
	n := warm + int64(b.N)
	if err := bus.Subscribe(telemetry.TopicRoot+"+/"+telemetry.KindTelemetry, func(_ string, payload []byte) {
		// The stream is shared by the sub-benchmarks and runs: an earlier run's message (an
		// ack lost at a stop) is not this run's.
		ts := int64(binary.BigEndian.Uint64(payload))
		if ts < runStart.Load() {
			return
		}
		switch k := got.Add(1); {
		case k == warm:
			cpu0.Store(cpuNanos(b))
		case k > warm:
			lag.Add(time.Now().UnixNano() - ts)
			if k == n {
				done <- struct{}{}
			}
		}
	}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.StopTimer()
	for p := range 16 {
		if err := bus.StartPartition(context.Background(), p); err != nil {
			b.Fatal(err)
		}
	}
	st, err := js.Stream(ctx, mqtt.DefaultNATSStream)
	if err != nil {
		b.Fatal(err)
	}
	for p := range 16 { // every consumer bound before the first message: none waits in the stream
		for {
			if _, err := mqtt.PartitionConsumer(ctx, st, p); err == nil {
				break
			} else if ctx.Err() != nil {
				b.Fatalf("partition %d's consumer: %v", p, err)
			}
			time.Sleep(50 * time.Millisecond) // polled: the bus announces no binding
		}
	}
	pub := exec.Command(os.Args[0], "-test.run=^$")
	pub.Env = append(os.Environ(), pacedEnv+"="+fmt.Sprintf("%s|%d|%d", strings.Join(c.URLs, ","), rate, n))
	pub.Stdout, pub.Stderr = os.Stderr, os.Stderr
	runStart.Store(time.Now().UnixNano())
	b.StartTimer()
	if err := pub.Start(); err != nil {
		b.Fatal(err)
	}
	defer pub.Wait() //nolint:errcheck // its error is read below; this only reaps it on a failure
	select {
	case <-done:
	case <-time.After(time.Duration(n/int64(rate))*time.Second + 2*time.Minute):
		_ = pub.Process.Kill()
		b.Fatalf("consumed %d of %d messages", got.Load(), b.N)
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuNanos(b)-cpu0.Load())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(lag.Load())/float64(b.N)/1e3, "lag-us/op")
	if err := pub.Wait(); err != nil {
		b.Fatalf("publisher: %v", err)
	}
	for p := range 16 {
		bus.StopPartition(p)
	}
}

// pacedEnv, set to "urls|rate|n", makes this test binary the publisher of
// BenchmarkNATSBusConsumePaced (TestMain) instead of running tests.
const pacedEnv = "EDGEWAN_BENCH_PACED_PUBLISHER"

// pacedPublisher publishes n messages of 64 sites' telemetry at rate per second, evenly (a
// few per millisecond at most), each starting with its publishing time (UnixNano).
func pacedPublisher(spec string) error {
	parts := strings.Split(spec, "|")
	if len(parts) != 3 {
		return fmt.Errorf("%s=%q: want urls|rate|n", pacedEnv, spec)
	}
	rate, err1 := strconv.Atoi(parts[1])
	n, err2 := strconv.Atoi(parts[2])
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	nc, err := nats.Connect(parts[0], nats.UserInfo(natstest.User, natstest.Password))
	if err != nil {
		return err
	}
	defer nc.Close()
	subjects := make([]string, 64)
	for i := range subjects {
		site := fmt.Sprintf("site-%02d", i)
		subjects[i] = fmt.Sprintf("edgewan.in.%d.%s.%s", cluster.Partition(site, 16), site, telemetry.KindTelemetry)
	}
	payload := make([]byte, 600) // about a report of 3 transports
	start := time.Now()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for sent := 0; sent < n; {
		due := min(n, int(time.Since(start).Seconds()*float64(rate)))
		for ; sent < due; sent++ {
			binary.BigEndian.PutUint64(payload, uint64(time.Now().UnixNano()))
			if err := nc.Publish(subjects[sent%len(subjects)], payload); err != nil {
				return err
			}
		}
		if err := nc.Flush(); err != nil {
			return err
		}
		<-tick.C
	}
	return nc.FlushTimeout(10 * time.Second)
}

func TestMain(m *testing.M) {
	if spec := os.Getenv(pacedEnv); spec != "" {
		if err := pacedPublisher(spec); err != nil {
			fmt.Fprintln(os.Stderr, "paced publisher:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
