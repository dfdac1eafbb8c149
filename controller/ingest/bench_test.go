package ingest

// Benchmarks of the ingest hot path with 10,000 sites of 3 transports each (the SD-WAN
// acceptance figure "30k samples/s on 2 cores"; scripts/bench-sdwan.sh runs them):
//
//	BenchmarkIngest/decode-json  telemetry.DecodeReport alone (encoding/json)
//	BenchmarkIngest/decode-fast  the engine's decodeReport alone (its fast path, decode.go)
//	BenchmarkIngest/direct       onTelemetry called with real payloads, one report per iteration:
//	                             decode, rollup, steering Observe/Evaluate, the embedded sink
//	BenchmarkIngest/broker       the same through the embedded mochi broker's inline publish and
//	                             the InlineBus dispatcher (4 workers, as in the controller):
//	                             everything but the agents' TLS connections
//	BenchmarkIngestMemory        heap per site after every site reported: engine state and
//	                             steering, rolling aggregates, the embedded sink's rollups
//	BenchmarkIngestFirstReports  every site's first report after a (re)start, each a status
//	                             change and an event to store, into an engine on the real SQLite
//	                             store with Run running: how long until all are evaluated, and
//	                             until all are stored
//
// Besides ns/op (wall time, which on a shared machine says how busy the neighbours are) each
// reports cpu-ns/op, the process's CPU time per report, and cores-for-30k, the cores that
// 10,000 reports/s (30k samples/s) take at that cost.
//
// Reports go round the sites: iteration i is site i%N's report number i/N+1, one second after
// its previous one on the engine's (injected) clock, so rollups and steering see a 1 s cadence.
// Payloads are marshalled round by round with the timer stopped. Every site reports once,
// untimed, before the first timed report: the first report of a site changes its status
// (stored, with an event), later ones do not.
//
//	go test -run '^$' -bench 'BenchmarkIngest$' -benchtime 100000x -benchmem ./controller/ingest/
//	go test -run '^$' -bench 'BenchmarkIngestMemory' -benchtime 1x ./controller/ingest/

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/edgewan/edgewan/controller/mqtt"
	"github.com/edgewan/edgewan/controller/sdwan"
	"github.com/edgewan/edgewan/controller/store"
	"github.com/edgewan/edgewan/controller/tlsgen"
	"github.com/edgewan/edgewan/coreapi/event"
	"github.com/edgewan/edgewan/coreapi/org"
	"github.com/edgewan/edgewan/telemetry"
	"github.com/edgewan/edgewan/telemetry/sink"
)

var benchSites = flag.Int("ingest-sites", 10_000, "sites in the ingest benchmarks (3 transports each)")

// benchTransports are every benchmark site's transports, cheapest first.
var benchTransports = []string{"mpls", "inet", "lte"}

// benchPolicy is the steering policy every site runs: two classes with SLAs, so Evaluate judges
// 2 classes x 3 transports per report.
var benchPolicy = json.RawMessage(`{"classes":[{"name":"voice","max_latency_ms":150,"max_loss_pct":2,"max_jitter_ms":30},` +
	`{"name":"bulk","max_latency_ms":400,"max_loss_pct":5}],"paths":{"voice":["mpls","inet","lte"],"bulk":["inet","mpls","lte"]},"default_class":"bulk"}`)

// benchStore is the database as the engine sees it, in memory: claimed sites, one steering
// assignment each; writes are counted and dropped.
type benchStore struct {
	sites    map[string]*sdwan.Site
	order    []string
	statuses atomic.Int64
	events   atomic.Int64
}

func newBenchStore(n int) *benchStore {
	st := &benchStore{sites: make(map[string]*sdwan.Site, n)}
	claimed := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		id := fmt.Sprintf("site_bench%06d", i)
		s := &sdwan.Site{ID: id, Name: id, Status: sdwan.SiteOffline, Role: "branch", DeviceID: fmt.Sprintf("dev_bench%06d", i), ClaimedAt: claimed}
		for c, name := range benchTransports {
			s.Transports = append(s.Transports, &sdwan.Transport{ID: fmt.Sprintf("tr_%s_%d", id, c), SiteID: id, Name: name,
				Interface: fmt.Sprintf("eth%d", c), Cost: c, Status: sdwan.TransportUnknown})
		}
		st.sites[id] = s
		st.order = append(st.order, id)
	}
	return st
}

func (st *benchStore) LiveSites(context.Context) ([]*sdwan.Site, error) {
	out := make([]*sdwan.Site, 0, len(st.order))
	for _, id := range st.order {
		out = append(out, st.sites[id])
	}
	return out, nil
}

func (st *benchStore) GetSite(_ context.Context, id string) (*sdwan.Site, error) {
	if s := st.sites[id]; s != nil {
		return s, nil
	}
	return nil, fmt.Errorf("site %s not found", id)
}

func (st *benchStore) Assignments(_ context.Context, siteID string) ([]*sdwan.Assignment, error) {
	return []*sdwan.Assignment{{Rollout: sdwan.Rollout{SiteID: siteID, PolicyID: "pol_bench", Type: sdwan.TypeSteering, Version: 1, State: sdwan.RolloutApplied},
		Content: benchPolicy}}, nil
}

func (st *benchStore) SetSiteStatus(_ context.Context, _, _ string, _, _ time.Time, evs ...*event.Envelope) (int, error) {
	st.statuses.Add(1)
	st.events.Add(int64(len(evs)))
	return 0, nil
}

func (st *benchStore) SaveFigures(context.Context, map[string]sdwan.SiteFigures, []sdwan.TransportFigures) error {
	return nil
}

func (st *benchStore) SetRollout(context.Context, string, string, int, string, string, time.Time) (bool, error) {
	return true, nil
}

func (st *benchStore) InsertEvents(_ context.Context, evs ...*event.Envelope) (int, error) {
	st.events.Add(int64(len(evs)))
	return len(evs), nil
}

// nopBus is a Bus that drops what is published (decisions when a path switches).
type nopBus struct{ published atomic.Int64 }

func (b *nopBus) Subscribe(string, mqtt.Handler) error { return nil }
func (b *nopBus) Publish(string, []byte, bool) error   { b.published.Add(1); return nil }
func (b *nopBus) Close()                               {}

// benchClock is the engine's clock: it moves one second per round of reports.
type benchClock struct{ ns atomic.Int64 }

func (c *benchClock) now() time.Time { return time.Unix(0, c.ns.Load()) }

// benchReports makes every site's report for round r (r >= 1): its Seq is r and its window
// ends at the clock's now. Figures vary per site and round but stay within the SLAs.
type benchReports struct {
	st       *benchStore
	clock    *benchClock
	round    int
	payloads [][]byte
	topics   []string
}

func newBenchReports(st *benchStore, clock *benchClock) *benchReports {
	g := &benchReports{st: st, clock: clock, payloads: make([][]byte, len(st.order)), topics: make([]string, len(st.order))}
	for i, id := range st.order {
		g.topics[i] = telemetry.Topic(id, telemetry.KindTelemetry)
	}
	return g
}

// next advances the clock by a second and marshals the next round.
func (g *benchReports) next(b testing.TB) {
	g.round++
	g.clock.ns.Add(int64(time.Second))
	now := g.clock.now().UTC()
	for i, id := range g.st.order {
		s := g.st.sites[id]
		// held: the agent still holds its last few reports (the watermark trails by a flush)
		r := telemetry.Report{V: telemetry.SchemaVersion, Site: id, Device: s.DeviceID, Seq: uint64(g.round), Held: uint64(max(1, g.round-5)), Time: now, WindowMs: 1000}
		for t, name := range benchTransports {
			lat := 10 + float64((i*7+g.round*13+t*29)%400)/10 // 10..50 ms
			jit := 0.5 + float64((i+g.round+t)%40)/10         // 0.5..4.4 ms
			lost := 0
			if (i+g.round+t)%97 == 0 {
				lost = 1
			}
			r.Transport = append(r.Transport, telemetry.TransportWindow{Name: name, Method: "icmp", Sent: 10, Lost: lost, LatencyMs: lat,
				P50Ms: lat, P95Ms: lat + 2*jit, MinMs: lat - jit, MaxMs: lat + 3*jit, JitterMs: jit, StdDevMs: jit})
		}
		p, err := json.Marshal(r)
		if err != nil {
			b.Fatal(err)
		}
		g.payloads[i] = p
	}
}

type benchEngine struct {
	e     *Engine
	st    *benchStore
	sink  *sink.EmbeddedSink
	clock *benchClock
	gen   *benchReports
}

// newBenchEngine loads n sites into an engine over bus (nil: a bus that drops everything) with
// the embedded sink (flushed only when the benchmark ends), without Start's subscriptions.
func newBenchEngine(b testing.TB, n int, bus mqtt.Bus) *benchEngine {
	b.Helper()
	st := newBenchStore(n)
	sk, err := sink.NewEmbedded(sink.EmbeddedOptions{DataDir: b.TempDir(), FlushInterval: time.Hour, PruneInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = sk.Close() })
	if bus == nil {
		bus = &nopBus{}
	}
	clock := &benchClock{}
	clock.ns.Store(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).UnixNano())
	e := New(st, bus, sk, Options{Now: clock.now, SyncWithin: time.Nanosecond /* evaluate at once, as before a restart */, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx := context.Background()
	for _, id := range st.order {
		e.load(ctx, st.sites[id], false)
		if q := e.Quarantined(id); q != nil {
			b.Fatal(q.Reason)
		}
	}
	return &benchEngine{e: e, st: st, sink: sk, clock: clock, gen: newBenchReports(st, clock)}
}

// warm sends every site its first report, untimed.
func (be *benchEngine) warm(b testing.TB) {
	be.gen.next(b)
	for i, p := range be.gen.payloads {
		be.e.onTelemetry(be.gen.topics[i], p)
	}
	if got := counter(be.e.m.reports); got != float64(len(be.gen.payloads)) {
		b.Fatalf("reports after the first round: got %v; want %d (rejected: %v)", got, len(be.gen.payloads), be.rejected())
	}
}

func (be *benchEngine) rejected() map[string]float64 {
	out := map[string]float64{}
	for _, r := range []string{"invalid", "unknown_site", "wrong_device", "duplicate", "unknown_transport", "sink"} {
		if v := counter(be.e.m.rejected.WithLabelValues(r)); v > 0 {
			out[r] = v
		}
	}
	return out
}

func counter(c interface{ Write(*dto.Metric) error }) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}

func BenchmarkIngest(b *testing.B) {
	n := *benchSites
	parent := b // the shared engines live, and are cleaned up, with the parent: a sub-benchmark's
	// function runs once per b.N tried, and its Cleanup after each run.

	// The decode alone: encoding/json (telemetry.DecodeReport, what the engine used before) and
	// the engine's decodeReport (its fast path).
	for _, dec := range []struct {
		name string
		fn   func(string, []byte, *telemetry.Report) error
	}{{"decode-json", telemetry.DecodeReport}, {"decode-fast", decodeReport}} {
		b.Run(dec.name, func(b *testing.B) {
			be := newBenchEngine(b, min(n, 1000), nil)
			be.gen.next(b)
			r := &telemetry.Report{}
			b.ReportAllocs()
			b.SetBytes(int64(len(be.gen.payloads[0])))
			var cpu cpuTimer
			b.ResetTimer()
			cpu.start()
			for i := range b.N {
				k := i % len(be.gen.payloads)
				if err := dec.fn(be.st.order[k], be.gen.payloads[k], r); err != nil {
					b.Fatal(err)
				}
			}
			cpu.stop()
			cpu.report(b)
		})
	}

	// One engine for every run of direct (b.N grows): sites keep their sequence numbers.
	var direct *benchEngine
	b.Run("direct", func(b *testing.B) {
		if direct == nil {
			direct = newBenchEngine(parent, n, nil)
			direct.warm(b)
		}
		be := direct
		before := counter(be.e.m.reports)
		var cpu cpuTimer
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; {
			b.StopTimer()
			cpu.stop()
			be.gen.next(b)
			cpu.start()
			b.StartTimer()
			for k := 0; k < len(be.gen.payloads) && i < b.N; k, i = k+1, i+1 {
				be.e.onTelemetry(be.gen.topics[k], be.gen.payloads[k])
			}
		}
		b.StopTimer()
		cpu.stop()
		cpu.report(b)
		if got := counter(be.e.m.reports) - before; got != float64(b.N) || len(be.rejected()) > 0 {
			b.Fatalf("reports evaluated: got %v; want %d (rejected: %v)", got, b.N, be.rejected())
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "reports/s")
		b.ReportMetric(3*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
	})

	var broker *benchEngine
	var ib *mqtt.InlineBus
	b.Run("broker", func(b *testing.B) {
		if broker == nil {
			br := benchBroker(parent)
			ib = mqtt.NewInlineBus(br, mqtt.BusOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			parent.Cleanup(ib.Close)
			broker = newBenchEngine(parent, n, ib)
			if err := broker.e.Start(context.Background()); err != nil {
				b.Fatal(err)
			}
			broker.warm(b)
		}
		be := broker
		before := counter(be.e.m.reports)
		var cpu cpuTimer
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; {
			b.StopTimer()
			cpu.stop()
			be.gen.next(b)
			cpu.start()
			b.StartTimer()
			for k := 0; k < len(be.gen.payloads) && i < b.N; k, i = k+1, i+1 {
				if err := ib.Publish(be.gen.topics[k], be.gen.payloads[k], false); err != nil {
					b.Fatal(err)
				}
			}
		}
		// Wait for the workers to evaluate everything published (bounded).
		deadline := time.Now().Add(time.Minute)
		for counter(be.e.m.reports)-before < float64(b.N) {
			if time.Now().After(deadline) {
				b.Fatalf("reports evaluated: got %v; want %d (rejected: %v)", counter(be.e.m.reports)-before, b.N, be.rejected())
			}
			time.Sleep(100 * time.Microsecond)
		}
		b.StopTimer()
		cpu.stop()
		cpu.report(b)
		if r := be.rejected(); len(r) > 0 {
			b.Fatalf("rejected: %v", r)
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "reports/s")
		b.ReportMetric(3*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
	})
}

// benchBroker starts the embedded broker (TLS on a loopback port, no agent can log in: the
// benchmark publishes through the inline client).
func benchBroker(b testing.TB) *mqtt.Broker {
	b.Helper()
	f, _, err := tlsgen.Ensure(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		b.Fatal(err)
	}
	br, err := mqtt.NewBroker(mqtt.Options{Listen: "127.0.0.1:0", TLS: &tls.Config{Certificates: []tls.Certificate{cert}},
		Credentials: noCredentials{}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := br.Start(ctx); err != nil {
		cancel()
		b.Fatal(err)
	}
	b.Cleanup(func() { cancel(); br.Close() })
	return br
}

type noCredentials struct{}

func (noCredentials) MQTTCredential(context.Context, string) (*mqtt.Credential, error) {
	return nil, nil
}

// BenchmarkIngestMemory reports the heap held per site (3 transports) once every site has
// reported: engine-B/site is the site's live state and steering as loaded, rollup-B/site its
// rolling aggregates (telemetry/rollup), reported-B/site what its first report adds besides
// (the embedded sink's in-memory rollups, decision buffers), and B/site all of it. Run it with
// -benchtime 1x; each iteration builds a fresh engine.
func BenchmarkIngestMemory(b *testing.B) {
	n := *benchSites
	var engineB, rollupB, reportedB, totalB float64
	for range b.N {
		st := newBenchStore(n)
		sk, err := sink.NewEmbedded(sink.EmbeddedOptions{DataDir: b.TempDir(), FlushInterval: time.Hour, PruneInterval: -1})
		if err != nil {
			b.Fatal(err)
		}
		clock := &benchClock{}
		clock.ns.Store(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).UnixNano())
		gen := newBenchReports(st, clock)
		gen.next(b)
		h0 := heap()
		e := New(st, &nopBus{}, sk, Options{Now: clock.now, SyncWithin: time.Nanosecond /* evaluate at once, as before a restart */, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		for _, id := range st.order {
			e.load(context.Background(), st.sites[id], false)
			if q := e.Quarantined(id); q != nil {
				b.Fatal(q.Reason)
			}
		}
		h1 := heap()
		// Rollups first, alone, then the whole hot path (the sink's in-memory rollups, state).
		r := &telemetry.Report{}
		for i, p := range gen.payloads {
			if err := telemetry.DecodeReport(st.order[i], p, r); err != nil {
				b.Fatal(err)
			}
			e.roll.AddReport(clock.now(), r)
		}
		h2 := heap()
		for i, p := range gen.payloads {
			e.onTelemetry(gen.topics[i], p)
		}
		h3 := heap()
		if got := counter(e.m.reports); got != float64(n) {
			b.Fatalf("reports: got %v; want %d", got, n)
		}
		engineB += float64(h1-h0) / float64(n)
		rollupB += float64(h2-h1) / float64(n)
		reportedB += (float64(h3) - float64(h2)) / float64(n)
		totalB += float64(h3-h0) / float64(n)
		runtime.KeepAlive(e)
		runtime.KeepAlive(st)
		runtime.KeepAlive(gen) // its payloads were allocated before h0
		runtime.KeepAlive(r)
		_ = sk.Close()
	}
	b.ReportMetric(engineB/float64(b.N), "engine-B/site")
	b.ReportMetric(rollupB/float64(b.N), "rollup-B/site")
	b.ReportMetric(reportedB/float64(b.N), "reported-B/site")
	b.ReportMetric(totalB/float64(b.N), "B/site")
}

// cpuTimer accumulates the process's CPU time (user and system, every thread: GC and the bus
// workers included) over timed sections. On a shared machine wall time per op says how busy the
// neighbours are; CPU time per op says what a report costs, and so how many a core can take.
type cpuTimer struct {
	total, t0 time.Duration
	running   bool
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func (c *cpuTimer) start() {
	if !c.running {
		c.t0, c.running = processCPU(), true
	}
}

func (c *cpuTimer) stop() {
	if c.running {
		c.total += processCPU() - c.t0
		c.running = false
	}
}

// report adds cpu-ns/op, and cores-for-30k: the CPU cores 10,000 reports/s (30k samples/s) take.
func (c *cpuTimer) report(b *testing.B) {
	per := float64(c.total.Nanoseconds()) / float64(b.N)
	b.ReportMetric(per, "cpu-ns/op")
	b.ReportMetric(per*10_000/1e9, "cores-for-30k")
}

var heapMu sync.Mutex

// heap returns the bytes of live heap objects after a full collection.
func heap() uint64 {
	heapMu.Lock()
	defer heapMu.Unlock()
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// countingBus counts what the engine publishes (Run publishes every site's policy and decisions
// first).
type countingBus struct {
	mqtt.Bus
	published atomic.Int64
}

func (c *countingBus) Publish(topic string, payload []byte, retain bool) error {
	c.published.Add(1)
	return c.Bus.Publish(topic, payload, retain)
}

// BenchmarkIngestFirstReports is the status storm after the controller (re)starts with every
// site offline: each site's first report changes its status to up and raises
// device.status_changed, which the engine stores in the database (SQLite, as embedded).
// evaluated-s is how long until the engine evaluated all N first reports (published at once
// through the embedded broker and InlineBus), stored-s until every change was stored, and
// evaluated/s the reports evaluated per second meanwhile. Run it with -benchtime 1x; the N sites
// are created and claimed in the store first (not timed).
func BenchmarkIngestFirstReports(b *testing.B) {
	n := *benchSites
	ctx := context.Background()
	for range b.N {
		b.StopTimer()
		dir := b.TempDir()
		st, err := store.Open(ctx, store.Options{DataDir: dir})
		if err != nil {
			b.Fatal(err)
		}
		bs := newBenchStore(n)
		t0 := time.Now()
		claimSites(b, st, bs)
		b.Logf("created and claimed %d sites in %s", n, time.Since(t0).Round(time.Millisecond))

		br := benchBroker(b)
		ib := mqtt.NewInlineBus(br, mqtt.BusOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		bus := &countingBus{Bus: ib}
		sk, err := sink.NewEmbedded(sink.EmbeddedOptions{DataDir: dir, FlushInterval: time.Hour, PruneInterval: -1})
		if err != nil {
			b.Fatal(err)
		}
		e := New(st, bus, sk, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err := e.Start(ctx); err != nil {
			b.Fatal(err)
		}
		rctx, stop := context.WithCancel(ctx)
		runDone := make(chan error, 1)
		go func() { runDone <- e.Run(rctx) }()
		deadline := time.Now().Add(5 * time.Minute)
		for bus.published.Load() < int64(2*n) { // Run's first publishes: every site's policy and decisions
			if time.Now().After(deadline) {
				b.Fatalf("Run published %d of %d policies and decisions in 5 minutes", bus.published.Load(), 2*n)
			}
			time.Sleep(10 * time.Millisecond)
		}
		clock := &benchClock{}
		clock.ns.Store(time.Now().UnixNano())
		gen := newBenchReports(bs, clock)
		gen.next(b)
		gen.clock.ns.Store(time.Now().UnixNano())

		b.StartTimer()
		start := time.Now()
		for k, p := range gen.payloads {
			if err := ib.Publish(gen.topics[k], p, false); err != nil {
				b.Fatal(err)
			}
		}
		var evaluated, stored time.Duration
		deadline = time.Now().Add(10 * time.Minute)
		for stored == 0 {
			if time.Now().After(deadline) {
				b.Fatalf("after 10 minutes: %v reports evaluated, %v events stored, of %d", counter(e.m.reports), counter(e.m.events.WithLabelValues(event.DeviceStatusChanged)), n)
			}
			if evaluated == 0 && counter(e.m.reports) >= float64(n) {
				evaluated = time.Since(start)
			}
			if evaluated != 0 && counter(e.m.events.WithLabelValues(event.DeviceStatusChanged)) >= float64(n) {
				stored = time.Since(start)
			}
			time.Sleep(time.Millisecond)
		}
		b.StopTimer()
		b.ReportMetric(evaluated.Seconds(), "evaluated-s")
		b.ReportMetric(stored.Seconds(), "stored-s")
		b.ReportMetric(float64(n)/evaluated.Seconds(), "evaluated/s")
		if r := (&benchEngine{e: e}).rejected(); len(r) > 0 {
			b.Fatalf("rejected: %v", r)
		}
		stop()
		if err := <-runDone; err != nil {
			b.Fatal(err)
		}
		ib.Close()
		_ = sk.Close()
		_ = st.Close()
	}
}

// claimSites creates bs's sites in the real store and claims them for their devices.
func claimSites(tb testing.TB, st *store.Store, bs *benchStore) {
	tb.Helper()
	ctx := context.Background()
	claimed := time.Now().UTC().Truncate(time.Microsecond)
	for _, id := range bs.order {
		s := bs.sites[id]
		site := &sdwan.Site{ID: id, Name: id, Status: sdwan.SitePending, Role: "branch", Segments: []string{"corporate"},
			CreatedAt: claimed, UpdatedAt: claimed, ClaimExpiresAt: claimed.Add(time.Hour)}
		for _, t := range s.Transports {
			t.CreatedAt, t.UpdatedAt, t.ProbeTargets = claimed, claimed, []string{}
		}
		if err := st.CreateSite(ctx, site, "claim-"+id, s.Transports); err != nil {
			tb.Fatal(err)
		}
		dev := &org.Device{ID: s.DeviceID, SiteID: id, Name: s.DeviceID, Status: org.DeviceOffline, CreatedAt: claimed, UpdatedAt: claimed}
		if err := st.ClaimSite(ctx, sdwan.ClaimRecord{SiteID: id, ClaimHash: "claim-" + id, Device: dev, MQTTUser: s.DeviceID, MQTTHash: "x", At: claimed}); err != nil {
			tb.Fatal(err)
		}
	}
}
