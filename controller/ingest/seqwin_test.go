package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/edgewan/edgewan/controller/mqtt"
	"github.com/edgewan/edgewan/controller/store"
	"github.com/edgewan/edgewan/telemetry"
	"github.com/edgewan/edgewan/telemetry/sink"
)

// TestSeqWindow checks the window against a plain set of taken sequences, with random orders,
// duplicates, holes filled late, declared abandoned (skipTo) and sequences beyond the window.
func TestSeqWindow(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 7))
		var w seqWindow
		start := rng.Uint64N(3) * 1000
		w.reset(start)
		taken := map[uint64]bool{}
		mark, newest := start, start
		for range 3000 {
			if rng.IntN(50) == 0 { // the agent says it holds nothing below held
				held := mark + 1 + rng.Uint64N(80)
				want := uint64(0)
				for q := mark + 1; q < held; q++ {
					if !taken[q] {
						want++
					}
				}
				if got := w.skipTo(held); got != want {
					t.Fatalf("seed %d: skipTo(%d) from mark %d: %d abandoned; want %d", seed, held, mark, got, want)
				}
				for q := mark + 1; q < held; q++ {
					taken[q] = true
				}
				newest = max(newest, held-1)
			} else {
				q := mark + 1 + rng.Uint64N(seqWindowBits+40)
				if rng.IntN(4) == 0 && mark > start {
					q = mark - rng.Uint64N(min(mark-start, 5)) // at or below the mark
				}
				var want seqVerdict
				switch {
				case taken[q] || q <= start:
					want = seqDuplicate
				case q-mark-1 >= seqWindowBits:
					want = seqTooFar
				case q < newest:
					want = seqGap
				default:
					want = seqNew
				}
				if got := w.take(q); got != want {
					t.Fatalf("seed %d: take(%d) with mark %d newest %d: %v; want %v", seed, q, mark, newest, got, want)
				}
				if want == seqNew || want == seqGap {
					taken[q] = true
					newest = max(newest, q)
				}
			}
			for taken[mark+1] {
				mark++
			}
			if w.mark != mark || w.newest != newest {
				t.Fatalf("seed %d: mark %d newest %d; want %d and %d", seed, w.mark, w.newest, mark, newest)
			}
		}
	}
}

// TestSeqWindowLegacy: an agent that does not say what it holds is taken as before the
// contiguous watermark: the highest sequence vouches for everything below it.
func TestSeqWindowLegacy(t *testing.T) {
	var w seqWindow
	for _, c := range []struct {
		seq  uint64
		want seqVerdict
		mark uint64
	}{{1, seqNew, 1}, {5, seqNew, 5}, {3, seqDuplicate, 5}, {5, seqDuplicate, 5}, {9000, seqNew, 9000}} {
		if got := w.legacy(c.seq); got != c.want || w.mark != c.mark {
			t.Errorf("legacy(%d): %v, mark %d; want %v, mark %d", c.seq, got, w.mark, c.want, c.mark)
		}
	}
}

func TestSeqWindowTakeAllocations(t *testing.T) {
	var w seqWindow
	q := uint64(0)
	if n := testing.AllocsPerRun(1000, func() { q += 2; w.take(q); w.take(q - 1) }); n != 0 {
		t.Errorf("take: %v allocations; want 0", n)
	}
}

// storedWatch follows a site's retained watermarks on the bus.
type storedWatch struct {
	mu   sync.Mutex
	last telemetry.Stored
	more chan struct{}
}

func watchStored(t *testing.T, bus mqtt.Bus, site string) *storedWatch {
	t.Helper()
	w := &storedWatch{more: make(chan struct{}, 1)}
	if err := bus.Subscribe(telemetry.Topic(site, telemetry.KindStored), func(_ string, p []byte) {
		var m telemetry.Stored
		if json.Unmarshal(p, &m) != nil {
			return
		}
		w.mu.Lock()
		w.last = m
		w.mu.Unlock()
		select {
		case w.more <- struct{}{}:
		default:
		}
	}); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *storedWatch) seq() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last.Seq
}

// waitFor waits for the watermark seq (not above: the test fails if it passes it).
func (w *storedWatch) waitFor(t *testing.T, seq uint64) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		got := w.seq()
		if got == seq {
			return
		}
		if got > seq {
			t.Fatalf("watermark %d; want %d (it passed a report never stored)", got, seq)
		}
		select {
		case <-w.more:
		case <-deadline:
			t.Fatalf("watermark %d after 30 s; want %d", got, seq)
		}
	}
}

// TestContiguousWatermark runs the engine on the real SQLite store, the embedded broker and
// InlineBus and the embedded time-series sink, and plays what a broker losing a report looks
// like: reports 1..30, not 31, 32..40. The watermark stays at 30 (a max-based one would say
// 40 and the agent would delete 31 for good), duplicates are refused, 31 sent again is taken
// into the history (not evaluated: older than what was evaluated), and then the watermark is
// 40. After a restart of the engine on the same database, what was stored is still refused.
func TestContiguousWatermark(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := store.Open(ctx, store.Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	bs := newBenchStore(1)
	claimSites(t, st, bs)
	id := bs.order[0]
	device := bs.sites[id].DeviceID
	sk, err := sink.NewEmbedded(sink.EmbeddedOptions{DataDir: dir, FlushInterval: time.Hour, PruneInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sk.Close() })
	br := benchBroker(t)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	t0 := time.Now().UTC().Truncate(time.Minute)
	if time.Since(t0) > 15*time.Second { // every report's window in one minute, as of now
		t0 = t0.Add(time.Minute)
	}
	clock := &benchClock{}
	clock.ns.Store(t0.UnixNano())

	type running struct {
		e    *Engine
		bus  *mqtt.InlineBus
		stop func()
	}
	start := func() running {
		bus := mqtt.NewInlineBus(br, mqtt.BusOptions{Workers: 1, Logger: quiet})
		// LateAfter an hour: no report here is late by its time, so a late count is the gap rule
		e := New(st, bus, sk, Options{Now: clock.now, FlushEvery: 20 * time.Millisecond, LateAfter: time.Hour, SyncWithin: time.Nanosecond, Logger: quiet})
		if err := e.Start(ctx); err != nil {
			t.Fatal(err)
		}
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); _ = e.Run(rctx) }()
		return running{e: e, bus: bus, stop: func() { cancel(); <-done; bus.Close() }}
	}
	r := start()
	watch := watchStored(t, r.bus, id)
	publish := func(bus *mqtt.InlineBus, seq uint64, held uint64) {
		t.Helper()
		at := t0.Add(time.Duration(seq) * time.Second)
		if clock.now().Before(at) {
			clock.ns.Store(at.UnixNano())
		}
		rep := telemetry.Report{V: telemetry.SchemaVersion, Site: id, Device: device, Seq: seq, Held: held, Time: at, WindowMs: 1000}
		for _, n := range benchTransports {
			rep.Transport = append(rep.Transport, telemetry.TransportWindow{Name: n, Method: "icmp", Sent: 10, LatencyMs: 20, P50Ms: 20, P95Ms: 22, MinMs: 19, MaxMs: 25, JitterMs: 1, StdDevMs: 1})
		}
		b, _ := json.Marshal(rep)
		if err := bus.Publish(telemetry.Topic(id, telemetry.KindTelemetry), b, false); err != nil {
			t.Fatal(err)
		}
	}
	rejected := func(e *Engine, reason string) float64 { return counter(e.m.rejected.WithLabelValues(reason)) }

	for q := uint64(1); q <= 30; q++ {
		publish(r.bus, q, 1) // the agent holds everything: nothing was covered yet
	}
	watch.waitFor(t, 30)
	for q := uint64(32); q <= 40; q++ {
		publish(r.bus, q, 1)
	}
	publish(r.bus, 35, 1) // a QoS 1 redelivery
	waitUntil(t, "39 reports taken and the duplicate refused", func() bool {
		return counter(r.e.m.reports) == 39 && rejected(r.e, "duplicate") == 1
	})
	r.e.checkpoint(ctx) // a checkpoint with 32..40 handled must not pass 31
	site := r.e.site(id)
	site.mu.Lock()
	stored := site.stored
	site.mu.Unlock()
	if stored != 30 {
		t.Fatalf("watermark %d with 31 missing; want 30", stored)
	}
	if late := counter(r.e.m.late); late != 0 {
		t.Fatalf("%v late reports before the hole is filled; want 0", late)
	}
	publish(r.bus, 31, 1) // the agent sends the hole again
	watch.waitFor(t, 40)
	if late, n := counter(r.e.m.late), counter(r.e.m.reports); late != 1 || n != 40 {
		t.Errorf("after 31 filled the hole: %v late, %v reports; want 1 (31: history only) and 40", late, n)
	}
	publish(r.bus, 31, 1)
	publish(r.bus, 40, 1)
	waitUntil(t, "31 and 40 again refused", func() bool { return rejected(r.e, "duplicate") == 3 })

	// The history holds each of the 40 windows once per transport.
	rows, err := sk.Minutes(ctx, id, t0, t0.Add(time.Minute), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(benchTransports) {
		t.Fatalf("history: %d minute rows; want %d: %+v", len(rows), len(benchTransports), rows)
	}
	for _, row := range rows {
		if row.Windows != 40 {
			t.Errorf("history of %s: %d windows; want 40", row.Transport, row.Windows)
		}
	}

	// A restart on the same database: the watermark (40) is loaded; what it covers is refused.
	r.stop()
	r = start()
	watch = watchStored(t, r.bus, id)
	watch.waitFor(t, 40)  // published at Run's start, with the new boot
	publish(r.bus, 38, 0) // even from an agent that does not say what it holds
	publish(r.bus, 38, 1)
	publish(r.bus, 41, 39)
	watch.waitFor(t, 41)
	if d, n := rejected(r.e, "duplicate"), counter(r.e.m.reports); d != 2 || n != 1 {
		t.Errorf("after the restart: %v duplicates, %v reports; want 2 and 1", d, n)
	}

	// The agent lost its spool below 45 (wiped): what it no longer holds is given up, counted.
	publish(r.bus, 46, 45)
	watch.waitFor(t, 44) // 42..44 given up; 45 it holds, so the mark waits for it
	if n := counter(r.e.m.abandoned); n != 3 {
		t.Errorf("abandoned %v; want 3 (42..44)", n)
	}
	publish(r.bus, 45, 45)
	watch.waitFor(t, 46)
	r.stop()
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond) // polling a counter, not synchronising on time
	}
}

// TestSeqWindowUntake: a sequence given back (its handling failed) is no longer taken and the
// mark stays below it, whether it was above the mark or the mark had already passed it; what
// was taken around it stays taken.
func TestSeqWindowUntake(t *testing.T) {
	for seed := range uint64(100) {
		rng := rand.New(rand.NewPCG(seed, 11))
		var w seqWindow
		w.reset(100)
		taken := map[uint64]bool{}
		for range 400 {
			q := w.mark + 1 + rng.Uint64N(200)
			if v := w.take(q); v == seqNew || v == seqGap {
				taken[q] = true
			}
		}
		var pick []uint64
		for q := range taken {
			pick = append(pick, q)
		}
		back := pick[rng.IntN(len(pick))]
		w.untake(back)
		delete(taken, back)
		mark := uint64(100)
		for taken[mark+1] {
			mark++
		}
		if w.mark != mark || mark >= back {
			t.Fatalf("seed %d: untake(%d): mark %d; want %d (below it)", seed, back, w.mark, mark)
		}
		for q := uint64(90); q < back+300; q++ {
			if got, want := w.seen(q), q <= 100 || taken[q]; got != want {
				t.Fatalf("seed %d: untake(%d): seen(%d) %v; want %v", seed, back, q, got, want)
			}
		}
		if v := w.take(back); v != seqGap && v != seqNew {
			t.Fatalf("seed %d: %d sent again after untake: %v; want taken", seed, back, v)
		}
	}
}

// failingSink fails the write of one report sequence, once (a time-series write that did not
// happen: InfluxDB's buffer full, the sink closed at shutdown).
type failingSink struct {
	Sink
	mu   sync.Mutex
	seq  uint64
	fail bool
}

func (s *failingSink) Write(ctx context.Context, r *telemetry.Report) error {
	s.mu.Lock()
	fail := s.fail && r.Seq == s.seq
	if fail {
		s.fail = false
	}
	s.mu.Unlock()
	if fail {
		return errors.New("test: the write did not happen")
	}
	return s.Sink.Write(ctx, r)
}

// TestSinkFailureHoldsWatermark: a report whose time-series write failed is not covered by the
// watermark (the agent would delete a report that is in no history): reports 1..5 with 3's
// write failing leave the safe mark at 2; 3 sent again is taken (not a duplicate), and then
// the mark is 5.
func TestSinkFailureHoldsWatermark(t *testing.T) {
	be := newBenchEngine(t, 1, nil)
	id := be.st.order[0]
	device := be.st.sites[id].DeviceID
	fs := &failingSink{Sink: be.e.sink, seq: 3, fail: true}
	be.e.sink = fs
	t0 := be.clock.now()
	send := func(seq uint64) {
		t.Helper()
		rep := telemetry.Report{V: telemetry.SchemaVersion, Site: id, Device: device, Seq: seq, Held: 1, Time: t0.Add(time.Duration(seq) * time.Second), WindowMs: 1000}
		for _, n := range benchTransports {
			rep.Transport = append(rep.Transport, telemetry.TransportWindow{Name: n, Method: "icmp", Sent: 10, LatencyMs: 20, P50Ms: 20, P95Ms: 22, MinMs: 19, MaxMs: 25, JitterMs: 1, StdDevMs: 1})
		}
		b, _ := json.Marshal(rep)
		be.clock.ns.Store(rep.Time.UnixNano())
		be.e.onTelemetry(telemetry.Topic(id, telemetry.KindTelemetry), b)
	}
	safe := func() uint64 {
		st := be.e.site(id)
		st.mu.Lock()
		defer st.mu.Unlock()
		return st.safe
	}
	for q := uint64(1); q <= 5; q++ {
		send(q)
	}
	if got := safe(); got != 2 {
		t.Fatalf("safe mark %d after 1..5 with 3 not written; want 2", got)
	}
	if n := counter(be.e.m.rejected.WithLabelValues("sink")); n != 1 {
		t.Fatalf("sink failures counted %v; want 1", n)
	}
	send(3) // the agent sends it again (the watermark stalled below it)
	if got := safe(); got != 5 {
		t.Fatalf("safe mark %d after 3 came again; want 5", got)
	}
	if d := counter(be.e.m.rejected.WithLabelValues("duplicate")); d != 0 {
		t.Errorf("3 sent again refused as a duplicate (%v)", d)
	}
}
