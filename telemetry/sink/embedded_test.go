package sink

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgewan/edgewan/telemetry"
)

// base is on an hour boundary.
var base = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func report(site, device string, at time.Time, tws ...telemetry.TransportWindow) *telemetry.Report {
	return &telemetry.Report{V: telemetry.SchemaVersion, Site: site, Device: device, Time: at, WindowMs: 10_000, Transport: tws}
}

func win(name string, sent, lost int, lat, p95, minMs, maxMs, jit, sd float64, down bool) telemetry.TransportWindow {
	return telemetry.TransportWindow{Name: name, Method: "icmp", Sent: sent, Lost: lost, LatencyMs: lat, P50Ms: lat,
		P95Ms: p95, MinMs: minMs, MaxMs: maxMs, JitterMs: jit, StdDevMs: sd, Down: down}
}

func openEmbedded(t testing.TB, opts EmbeddedOptions) *EmbeddedSink {
	t.Helper()
	if opts.DataDir == "" {
		opts.DataDir = t.TempDir()
	}
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	s, err := NewEmbedded(opts)
	if err != nil {
		t.Fatalf("NewEmbedded: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestEmbeddedHistory(t *testing.T) {
	ctx := context.Background()
	a := win("wan1", 10, 0, 10, 15, 8, 20, 1, 2, false)
	b := win("wan1", 10, 5, 40, 50, 30, 60, 4, 8, true)
	lost := win("wan1", 10, 10, 0, 0, 0, 0, 0, 0, true)
	lte := win("lte", 4, 1, 100, 120, 90, 130, 5, 6, false)

	// want rollup with answered-weighted means of a and b: answered 10 and 5
	ab := Rollup{Windows: 2, Sent: 20, Lost: 5, LossPct: 25, LatencyMs: (10*10 + 40*5) / 15.0,
		P95Ms: (15*10 + 50*5) / 15.0, JitterMs: (1*10 + 4*5) / 15.0, StdDevMs: (2*10 + 8*5) / 15.0,
		MinMs: 8, MaxMs: 60, DownWindows: 1}

	tests := []struct {
		name       string
		batches    [][]*telemetry.Report // Flush after each batch
		site       string
		transport  string
		from, to   time.Time
		resolution time.Duration
		want       []Rollup // Site and Resolution filled in by the test
	}{
		{
			name:    "one minute, two windows weighted by answered probes",
			batches: [][]*telemetry.Report{{report("s1", "d1", base.Add(5*time.Second), a), report("s1", "d1", base.Add(55*time.Second), b)}},
			site:    "s1", transport: "wan1", from: base, to: base.Add(time.Hour), resolution: time.Minute,
			want: []Rollup{withTime(ab, "wan1", base)},
		},
		{
			name: "two devices of a site merge; other sites stay apart",
			batches: [][]*telemetry.Report{{report("s1", "d1", base.Add(5*time.Second), a), report("s1", "d2", base.Add(6*time.Second), b),
				report("s2", "d1", base.Add(5*time.Second), lost)}},
			site: "s1", transport: "wan1", from: base, to: base.Add(time.Hour), resolution: time.Minute,
			want: []Rollup{withTime(ab, "wan1", base)},
		},
		{
			name: "a late report merges into a flushed minute",
			batches: [][]*telemetry.Report{
				{report("s1", "d1", base.Add(5*time.Second), a)},
				{report("s1", "d1", base.Add(6*time.Second), b)},
			},
			site: "s1", transport: "wan1", from: base, to: base.Add(time.Hour), resolution: time.Minute,
			want: []Rollup{withTime(ab, "wan1", base)},
		},
		{
			name:    "all lost: no latency, no minimum",
			batches: [][]*telemetry.Report{{report("s2", "d1", base, lost)}},
			site:    "s2", transport: "wan1", from: base, to: base.Add(time.Minute), resolution: time.Minute,
			want: []Rollup{{Transport: "wan1", Time: base, Windows: 1, Sent: 10, Lost: 10, LossPct: 100, DownWindows: 1}},
		},
		{
			name: "minutes, every transport, ordered by transport then time",
			batches: [][]*telemetry.Report{{report("s1", "d1", base.Add(61*time.Second), a, lte),
				report("s1", "d1", base.Add(5*time.Second), b)}},
			site: "s1", from: base, to: base.Add(time.Hour), resolution: time.Minute,
			want: []Rollup{
				{Transport: "lte", Time: base.Add(time.Minute), Windows: 1, Sent: 4, Lost: 1, LossPct: 25, LatencyMs: 100, P95Ms: 120,
					JitterMs: 5, StdDevMs: 6, MinMs: 90, MaxMs: 130},
				{Transport: "wan1", Time: base, Windows: 1, Sent: 10, Lost: 5, LossPct: 50, LatencyMs: 40, P95Ms: 50,
					JitterMs: 4, StdDevMs: 8, MinMs: 30, MaxMs: 60, DownWindows: 1},
				{Transport: "wan1", Time: base.Add(time.Minute), Windows: 1, Sent: 10, LatencyMs: 10, P95Ms: 15,
					JitterMs: 1, StdDevMs: 2, MinMs: 8, MaxMs: 20},
			},
		},
		{
			name: "hours sum their minutes, across flushes",
			batches: [][]*telemetry.Report{
				{report("s1", "d1", base.Add(time.Minute), a)},
				{report("s1", "d1", base.Add(59*time.Minute+59*time.Second), b), report("s1", "d1", base.Add(time.Hour), lost)},
			},
			site: "s1", transport: "wan1", from: base, to: base.Add(2 * time.Hour), resolution: time.Hour,
			want: []Rollup{withTime(ab, "wan1", base),
				{Transport: "wan1", Time: base.Add(time.Hour), Windows: 1, Sent: 10, Lost: 10, LossPct: 100, DownWindows: 1}},
		},
		{
			name: "range: periods starting in [from, to)",
			batches: [][]*telemetry.Report{{report("s1", "d1", base, a), report("s1", "d1", base.Add(time.Minute), a),
				report("s1", "d1", base.Add(2*time.Minute), a)}},
			site: "s1", transport: "wan1", from: base.Add(30 * time.Second), to: base.Add(2 * time.Minute), resolution: time.Minute,
			want: []Rollup{{Transport: "wan1", Time: base.Add(time.Minute), Windows: 1, Sent: 10, LatencyMs: 10, P95Ms: 15,
				JitterMs: 1, StdDevMs: 2, MinMs: 8, MaxMs: 20}},
		},
		{
			name:    "automatic resolution: a short recent range in minutes",
			batches: [][]*telemetry.Report{{report("s1", "d1", base.Add(5*time.Second), a), report("s1", "d1", base.Add(55*time.Second), b)}},
			site:    "s1", transport: "wan1", from: base, to: base.Add(time.Hour),
			want: []Rollup{withTime(ab, "wan1", base)},
		},
		{
			name:    "automatic resolution: a long range in hours",
			batches: [][]*telemetry.Report{{report("s1", "d1", base.Add(5*time.Second), a), report("s1", "d1", base.Add(30*time.Minute), b)}},
			site:    "s1", transport: "wan1", from: base.Add(-48 * time.Hour), to: base.Add(time.Hour),
			want: []Rollup{withTime(ab, "wan1", base)},
		},
		{
			name:    "unknown site",
			batches: [][]*telemetry.Report{{report("s1", "d1", base, a)}},
			site:    "nope", from: base, to: base.Add(time.Hour), resolution: time.Minute,
		},
	}
	// Each case with the minutes left as rows, and compacted into hour blocks after each
	// flush (so a later batch merges into a block).
	for _, compact := range []bool{false, true} {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s/compacted=%v", tt.name, compact), func(t *testing.T) {
				s := openEmbedded(t, EmbeddedOptions{Now: func() time.Time { return base.Add(time.Hour) }})
				var windows int64
				for _, batch := range tt.batches {
					for _, r := range batch {
						if err := s.Write(ctx, r); err != nil {
							t.Fatalf("Write: %v", err)
						}
						windows += int64(len(r.Transport))
					}
					if err := s.Flush(ctx); err != nil {
						t.Fatalf("Flush: %v", err)
					}
					if compact {
						if _, err := s.Compact(ctx, base.Add(24*time.Hour)); err != nil {
							t.Fatalf("Compact: %v", err)
						}
					}
				}
				if got := s.Stats().Windows; got != windows {
					t.Errorf("Stats().Windows: got %d; want %d", got, windows)
				}
				got, err := s.History(ctx, tt.site, tt.transport, tt.from, tt.to, tt.resolution)
				if err != nil {
					t.Fatalf("History: %v", err)
				}
				res := tt.resolution
				if res == 0 {
					res = time.Minute
					if tt.to.Sub(tt.from) > 24*time.Hour {
						res = time.Hour
					}
				}
				for i := range tt.want {
					tt.want[i].Site, tt.want[i].Resolution = tt.site, res
				}
				checkRollups(t, got, tt.want)
			})
		}
	}
}

func withTime(r Rollup, transport string, at time.Time) Rollup {
	r.Transport, r.Time = transport, at
	return r
}

func checkRollups(t *testing.T, got, want []Rollup) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d rollups %+v; want %d %+v", len(got), got, len(want), want)
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Site != w.Site || g.Transport != w.Transport || !g.Time.Equal(w.Time) || g.Resolution != w.Resolution ||
			g.Windows != w.Windows || g.Sent != w.Sent || g.Lost != w.Lost || g.DownWindows != w.DownWindows {
			t.Errorf("rollup %d: got %+v; want %+v", i, g, w)
			continue
		}
		for _, f := range []struct {
			name      string
			got, want float64
		}{
			{"LossPct", g.LossPct, w.LossPct}, {"LatencyMs", g.LatencyMs, w.LatencyMs}, {"P95Ms", g.P95Ms, w.P95Ms},
			{"JitterMs", g.JitterMs, w.JitterMs}, {"StdDevMs", g.StdDevMs, w.StdDevMs}, {"MinMs", g.MinMs, w.MinMs},
			{"MaxMs", g.MaxMs, w.MaxMs},
		} {
			if math.Abs(f.got-f.want) > 1e-9*math.Max(1, math.Abs(f.want)) {
				t.Errorf("rollup %d (%s %v) %s: got %v; want %v", i, g.Transport, g.Time, f.name, f.got, f.want)
			}
		}
	}
}

func TestEmbeddedPrune(t *testing.T) {
	ctx := context.Background()
	now := base
	const day = 24 * time.Hour
	tests := []struct {
		name                  string
		opts                  EmbeddedOptions
		at                    []time.Duration // report times before now
		wantPruned            int64
		wantMinutes, wantHour int // rows left
	}{
		{
			name:        "defaults: minutes 7 days, hours 400 days",
			at:          []time.Duration{time.Minute, 6 * day, 7*day + time.Minute, 30 * day, 399 * day, 401 * day},
			wantPruned:  4 + 1, // minutes of 7d1m, 30d, 399d, 401d; hour of 401d
			wantMinutes: 2, wantHour: 5,
		},
		{
			name:        "nothing to prune",
			at:          []time.Duration{time.Minute, 2 * time.Hour},
			wantMinutes: 2, wantHour: 2,
		},
		{
			name:        "custom retention",
			opts:        EmbeddedOptions{MinuteRetention: time.Hour, HourRetention: day},
			at:          []time.Duration{30 * time.Minute, 2 * time.Hour, 2 * day},
			wantPruned:  2 + 1,
			wantMinutes: 1, wantHour: 2,
		},
		{
			name:        "retention ends inside an hour: that hour keeps its later minutes",
			opts:        EmbeddedOptions{MinuteRetention: 90 * time.Minute},
			at:          []time.Duration{100 * time.Minute, 80 * time.Minute},
			wantPruned:  1,
			wantMinutes: 1, wantHour: 1,
		},
		{
			name:        "many slices of old minutes",
			opts:        EmbeddedOptions{MinuteRetention: time.Hour},
			at:          []time.Duration{10 * time.Minute, 2 * time.Hour, 5 * time.Hour, 9 * time.Hour, 900 * day},
			wantPruned:  4 + 1,
			wantMinutes: 1, wantHour: 4,
		},
	}
	// Each case with the minutes as rows, and compacted into hour blocks up to now's hour or
	// up to a later one (so the blocks of the hour the retention ends in lose some minutes).
	for _, compactAt := range []time.Duration{-1, 0, 10 * day} {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s/compact=%v", tt.name, compactAt), func(t *testing.T) {
				tt.opts.PruneInterval = -1
				s := openEmbedded(t, tt.opts)
				for _, d := range tt.at {
					if err := s.Write(ctx, report("s1", "d1", now.Add(-d), win("wan1", 1, 0, 1, 1, 1, 1, 0, 0, false))); err != nil {
						t.Fatal(err)
					}
				}
				if err := s.Flush(ctx); err != nil {
					t.Fatal(err)
				}
				if compactAt >= 0 {
					if _, err := s.Compact(ctx, now.Add(compactAt)); err != nil {
						t.Fatal(err)
					}
				}
				n, err := s.Prune(ctx, now)
				if err != nil || n != tt.wantPruned {
					t.Fatalf("Prune: got %d, %v; want %d", n, err, tt.wantPruned)
				}
				if got := s.Stats().Pruned; got != n {
					t.Errorf("Stats().Pruned: got %d; want %d", got, n)
				}
				for _, c := range []struct {
					res  time.Duration
					want int
				}{{time.Minute, tt.wantMinutes}, {time.Hour, tt.wantHour}} {
					rows, err := s.History(ctx, "s1", "wan1", now.Add(-1000*day), now.Add(time.Hour), c.res)
					if err != nil || len(rows) != c.want {
						t.Errorf("History %v after Prune: got %d rows, %v; want %d", c.res, len(rows), err, c.want)
					}
				}
				if n, err := s.Prune(ctx, now); err != nil || n != 0 {
					t.Errorf("second Prune: got %d, %v; want 0", n, err)
				}
			})
		}
	}
}

// TestEmbeddedReopen: Close writes what is in memory, and a new sink on the same dir reads it.
func TestEmbeddedReopen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := NewEmbedded(EmbeddedOptions{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, report("s1", "d1", base, win("wan1", 10, 1, 20, 30, 10, 40, 2, 3, false))); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := s.Write(ctx, report("s1", "d1", base, win("wan1", 1, 0, 1, 1, 1, 1, 0, 0, false))); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Close: got %v; want ErrClosed", err)
	}
	if got, want := s.Path(), filepath.Join(dir, "telemetry.db"); got != want {
		t.Errorf("Path: got %q; want %q", got, want)
	}

	s2 := openEmbedded(t, EmbeddedOptions{DataDir: dir})
	rows, err := s2.History(ctx, "s1", "wan1", base, base.Add(time.Minute), time.Minute)
	if err != nil || len(rows) != 1 || rows[0].Sent != 10 || rows[0].LatencyMs != 20 {
		t.Fatalf("History after reopen: got %+v, %v; want one row of 10 sent at 20 ms", rows, err)
	}
}

func TestEmbeddedErrors(t *testing.T) {
	ctx := context.Background()
	s := openEmbedded(t, EmbeddedOptions{})
	tests := []struct {
		name    string
		err     func() error
		wantIs  error
		wantMsg string
	}{
		{
			name: "NaN",
			err: func() error {
				return s.Write(ctx, report("s1", "d1", base, win("wan1", 1, 0, math.NaN(), 1, 1, 1, 0, 0, false)))
			},
			wantIs: telemetry.ErrInvalid,
		},
		{
			name: "bad resolution",
			err: func() error {
				_, err := s.History(ctx, "s1", "", base, base.Add(time.Hour), 5*time.Minute)
				return err
			},
			wantMsg: "want 1m, 1h or 0",
		},
		{
			name: "no data dir",
			err: func() error {
				_, err := NewEmbedded(EmbeddedOptions{})
				return err
			},
			wantMsg: "no data dir",
		},
		{
			name: "data dir is a file",
			err: func() error {
				_, err := NewEmbedded(EmbeddedOptions{DataDir: s.Path()})
				return err
			},
			wantMsg: "sink.NewEmbedded",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.err()
			if err == nil || (tt.wantIs != nil && !errors.Is(err, tt.wantIs)) || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("got %v; want an error (is %v) with %q", err, tt.wantIs, tt.wantMsg)
			}
		})
	}
}

// BenchmarkEmbeddedWrite is one report of 3 transport windows from a fleet of 10,000 sites
// reporting every simulated second (30,000 windows per simulated second), with a Flush each
// simulated minute (30,000 minute rows and their hour rows): what the controller's defaults do.
// windows/s is the sustained rate, flushes included.
func BenchmarkEmbeddedWrite(b *testing.B) {
	ctx := context.Background()
	s := openEmbedded(b, EmbeddedOptions{FlushInterval: time.Hour, PruneInterval: -1})
	const sites = 10_000
	names := make([]string, sites)
	for i := range names {
		names[i] = fmt.Sprintf("site-%05d", i)
	}
	r := report("", "edge-1", base,
		win("wan1", 10, 0, 20, 25, 18, 30, 1, 2, false),
		win("wan2", 10, 1, 35, 45, 30, 50, 3, 4, false),
		win("lte", 10, 2, 60, 90, 50, 120, 8, 9, false))
	b.ReportAllocs()
	start := time.Now()
	i := 0
	for b.Loop() {
		sec := i / sites
		r.Site, r.Time = names[i%sites], base.Add(time.Duration(sec)*time.Second)
		if err := s.Write(ctx, r); err != nil {
			b.Fatal(err)
		}
		i++
		if i%(sites*60) == 0 {
			if err := s.Flush(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := s.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(3*i)/time.Since(start).Seconds(), "windows/s")
}

// BenchmarkEmbeddedFlush is one flush of a minute of the full fleet: 30,000 minute rows, each
// also merged into its hour row.
func BenchmarkEmbeddedFlush(b *testing.B) {
	ctx := context.Background()
	s := openEmbedded(b, EmbeddedOptions{FlushInterval: time.Hour, PruneInterval: -1})
	r := report("", "edge-1", base,
		win("wan1", 10, 0, 20, 25, 18, 30, 1, 2, false),
		win("wan2", 10, 1, 35, 45, 30, 50, 3, 4, false),
		win("lte", 10, 2, 60, 90, 50, 120, 8, 9, false))
	names := make([]string, 10_000)
	for i := range names {
		names[i] = fmt.Sprintf("site-%05d", i)
	}
	minute := 0
	for b.Loop() {
		b.StopTimer()
		r.Time = base.Add(time.Duration(minute) * time.Minute)
		minute++
		for _, n := range names {
			r.Site = n
			if err := s.Write(ctx, r); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		if err := s.Flush(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(30_000, "rows/op")
}

// TestEmbeddedConcurrent writes from several goroutines while another flushes; run with -race.
// Every window ends up in the database exactly once.
func TestEmbeddedConcurrent(t *testing.T) {
	ctx := context.Background()
	s := openEmbedded(t, EmbeddedOptions{PruneInterval: -1})
	const writers, perWriter = 4, 2000
	errs := make(chan error, writers+1)
	stop := make(chan struct{})
	flushed := make(chan struct{})
	go func() {
		defer close(flushed)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := s.Flush(ctx); err != nil {
				errs <- err
				return
			}
		}
	}()
	done := make(chan struct{})
	for w := 0; w < writers; w++ {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := 0; i < perWriter; i++ {
				r := report(fmt.Sprintf("s%d", i%5), fmt.Sprintf("d%d", w), base.Add(time.Duration(i)*time.Second),
					win("wan1", 2, 1, 10, 10, 10, 10, 0, 0, false))
				if err := s.Write(ctx, r); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for w := 0; w < writers; w++ {
		<-done
	}
	close(stop)
	<-flushed
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var windows, sent int64
	for site := 0; site < 5; site++ {
		rows, err := s.History(ctx, fmt.Sprintf("s%d", site), "wan1", base, base.Add(24*time.Hour), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			windows += r.Windows
			sent += r.Sent
		}
	}
	if windows != writers*perWriter || sent != 2*writers*perWriter {
		t.Errorf("got %d windows, %d sent; want %d, %d", windows, sent, writers*perWriter, 2*writers*perWriter)
	}
}

func TestEmbeddedWriteAllocs(t *testing.T) {
	s := openEmbedded(t, EmbeddedOptions{FlushInterval: time.Hour, PruneInterval: -1})
	r := report("s1", "d1", base, win("wan1", 10, 1, 20, 30, 10, 40, 2, 3, false), win("lte", 10, 1, 20, 30, 10, 40, 2, 3, false))
	ctx := context.Background()
	_ = s.Write(ctx, r)
	if got := testing.AllocsPerRun(1000, func() { _ = s.Write(ctx, r) }); got != 0 {
		t.Errorf("got %v allocs per Write; want 0", got)
	}
}

// TestEmbeddedDuplicateRows: rows kept from a failed flush may meet fresh rows of the same
// minute in one statement; they merge.
func TestEmbeddedDuplicateRows(t *testing.T) {
	ctx := context.Background()
	s := openEmbedded(t, EmbeddedOptions{PruneInterval: -1})
	k := seriesKey{"s1", "wan1"}
	var a agg
	a.ts = base.Unix()
	a.add(&telemetry.TransportWindow{Name: "wan1", Sent: 10, Lost: 0, LatencyMs: 10, MinMs: 5, MaxMs: 20})
	rows := []minuteRow{{k, a}, {k, a}, {k, a}}
	if err := s.writeRows(ctx, rows); err != nil {
		t.Fatal(err)
	}
	for _, res := range []time.Duration{time.Minute, time.Hour} {
		got, err := s.History(ctx, "s1", "wan1", base, base.Add(time.Hour), res)
		if err != nil || len(got) != 1 || got[0].Windows != 3 || got[0].Sent != 30 || got[0].LatencyMs != 10 {
			t.Errorf("History %v: got %+v, %v; want one row of 3 windows, 30 sent, 10 ms", res, got, err)
		}
	}
}

// TestEmbeddedMinutes: Minutes gives History's minute rollups (bar the extremes and the
// standard deviation), appended to the buffer given, for every transport.
func TestEmbeddedMinutes(t *testing.T) {
	s, err := NewEmbedded(EmbeddedOptions{DataDir: t.TempDir(), FlushInterval: time.Hour, PruneInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	base := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	for m := range 5 {
		for k := range 3 { // three windows a minute, the second one down on lte in minute 2
			r := telemetry.Report{Site: "s1", Device: "d", Time: base.Add(time.Duration(m)*time.Minute + time.Duration(10+k*15)*time.Second),
				Transport: []telemetry.TransportWindow{
					{Name: "mpls", Sent: 10, Lost: k, LatencyMs: 20 + float64(m), P95Ms: 30, JitterMs: 2},
					{Name: "lte", Sent: 10, Lost: map[bool]int{true: 10, false: 0}[m == 2 && k == 1], LatencyMs: 60, P95Ms: 80, JitterMs: 9, Down: m == 2 && k == 1},
				}}
			if err := s.Write(ctx, &r); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	hist, err := s.History(ctx, "s1", "", base.Add(30*time.Second), base.Add(4*time.Minute), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	buf := []Rollup{{Transport: "kept"}}
	got, err := s.Minutes(ctx, "s1", base.Add(30*time.Second), base.Add(4*time.Minute), buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 6 || len(got) != 7 || got[0].Transport != "kept" { // minutes 1..3 of 2 transports
		t.Fatalf("History %d rows, Minutes %d (with the 1 given); want 6 and 7", len(hist), len(got))
	}
	for i, h := range hist {
		h.Site, h.MinMs, h.MaxMs, h.StdDevMs = "", 0, 0, 0
		if got[i+1] != h {
			t.Errorf("row %d: Minutes %+v; History %+v", i, got[i+1], h)
		}
	}
	if got[1].Transport != "lte" || got[2].DownWindows != 1 || got[2].LossPct != 100*10/30.0 {
		t.Errorf("lte's minute 2: %+v; want 1 Down window and 10 of 30 probes lost", got[2])
	}
}
