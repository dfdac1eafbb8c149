package sink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edgewan/edgewan/telemetry"
	"github.com/edgewan/edgewan/telemetry/sink/influxtest"
)

// testLogger sends a sink's log to t's.
func testLogger(t testing.TB) *slog.Logger { return slog.New(slog.NewTextHandler(tlog{t}, nil)) }

type tlog struct{ t testing.TB }

func (w tlog) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func openInflux(t testing.TB, opts InfluxOptions) *InfluxSink {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	s, err := NewInflux(opts)
	if err != nil {
		t.Fatalf("NewInflux: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() }) // tests that care check Close themselves
	return s
}

func flush(t testing.TB, s *InfluxSink, timeout time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := s.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v", err)
	}
}

// samplesOf is what InfluxDB should hold for reports.
func samplesOf(reports ...*telemetry.Report) []Sample {
	var out []Sample
	for _, r := range reports {
		for _, tw := range r.Transport {
			out = append(out, Sample{Site: r.Site, Device: r.Device, Transport: tw.Name, Time: r.Time,
				LatencyMs: tw.LatencyMs, P95Ms: tw.P95Ms, LossPct: tw.LossPct(), JitterMs: tw.JitterMs,
				StdDevMs: tw.StdDevMs, Sent: int64(tw.Sent), Lost: int64(tw.Lost), Down: tw.Down})
		}
	}
	return out
}

func checkSamples(t *testing.T, got, want []Sample) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d samples; want %d\ngot:  %+v\nwant: %+v", len(got), len(want), got, want)
	}
	for i := range got {
		g, w := got[i], want[i]
		if !g.Time.Equal(w.Time) {
			t.Errorf("sample %d: got time %v; want %v", i, g.Time, w.Time)
		}
		g.Time, w.Time = time.Time{}, time.Time{}
		if g != w { // exact: line protocol carries floats in shortest round-trip form
			t.Errorf("sample %d:\ngot  %+v\nwant %+v", i, g, w)
		}
	}
}

func TestInfluxWriteQuery(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 123456789, time.UTC)
	r1 := report("site-a", "edge-1", t0,
		win("wan1", 10, 1, 12.345678901234, 20.5, 10, 25, 1.0/3, math.Pi, false),
		win("lte", 5, 5, 0, 0, 0, 0, 0, 0, true))
	r2 := report("site-a", "edge-2", t0, win("wan1", 7, 0, 0.001, 0.002, 0.0005, 0.003, 1e-7, 599_999.5, false))
	r3 := report("site-a", "edge-1", t0.Add(10*time.Second), win("wan1", 1_000_000, 3, 600_000, 600_000, 1, 600_000, 5, 6, false))
	r4 := report("site-b", "edge-1", t0.Add(5*time.Second), win("wan_2", 3, 1, 4, 5, 3, 6, 0, 0, false))

	tests := []struct {
		name      string
		site      string
		from, to  time.Time
		want      []Sample
		batchSize int
	}{
		{name: "one site", site: "site-a", from: t0.Add(-time.Hour), to: t0.Add(time.Hour),
			want: samplesOf(r1, r2, r3)},
		{name: "every site", site: "", from: t0.Add(-time.Hour), to: t0.Add(time.Hour),
			want: samplesOf(r1, r2, r4, r3)},
		{name: "range", site: "", from: t0.Add(time.Second), to: t0.Add(6 * time.Second), want: samplesOf(r4)},
		{name: "batches of one", site: "site-b", from: t0.Add(-time.Hour), to: t0.Add(time.Hour), want: samplesOf(r4), batchSize: 1},
		{name: "nothing", site: "site-c", from: t0.Add(-time.Hour), to: t0.Add(time.Hour)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := influxtest.NewDatabase(t)
			s := openInflux(t, InfluxOptions{URL: db.URL, Bucket: db.Bucket, BatchSize: tt.batchSize})
			for _, r := range []*telemetry.Report{r1, r2, r3, r4} {
				if err := s.Write(ctx, r); err != nil {
					t.Fatalf("Write: %v", err)
				}
			}
			flush(t, s, time.Minute)
			got, err := s.Query(ctx, tt.site, tt.from, tt.to)
			if err != nil {
				t.Fatalf("Query: %v", err)
			}
			sortSamples(tt.want)
			checkSamples(t, got, tt.want)
			if st := s.Stats(); st.Accepted != 5 || st.Written != 5 || st.Pending != 0 || st.Dropped != 0 || st.Rejected != 0 {
				t.Errorf("Stats: got %+v; want 5 accepted and written, nothing else", st)
			}
			if err := s.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
}

// TestInfluxOutage is the "no data lost" promise: InfluxDB is stopped in the middle of a
// stream of reports and restarted later; after Flush every report is in it, exactly once.
func TestInfluxOutage(t *testing.T) {
	ctx := context.Background()
	srv := influxtest.Start(t)
	db := influxtest.CreateDatabase(t, srv.URL)
	s := openInflux(t, InfluxOptions{URL: db.URL, Bucket: db.Bucket, BatchSize: 50,
		FlushInterval: 20 * time.Millisecond, RetryMin: 20 * time.Millisecond, RetryMax: 200 * time.Millisecond, Timeout: 5 * time.Second})

	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	const n = 900
	reports := make([]*telemetry.Report, n)
	for i := range reports {
		reports[i] = report(fmt.Sprintf("site-%d", i%7), "edge-1", t0.Add(time.Duration(i)*time.Second),
			win("wan1", 10, i%3, float64(i)+0.25, float64(i)+1.5, 1, float64(i)+2, float64(i%10)/7, 0.5, false),
			win("lte", 10, 10, 0, 0, 0, 0, 0, 0, i%2 == 0))
	}
	// The writer streams reports in three thirds; the test stops InfluxDB after the first
	// and restarts it after the second, so the second third (and whatever was in flight) is
	// written while InfluxDB is down.
	third := make(chan int)
	resume := make(chan struct{})
	writeErr := make(chan error, 1)
	go func() {
		defer close(third)
		for i, r := range reports {
			if i > 0 && i%(n/3) == 0 {
				third <- i
				<-resume
			}
			if err := s.Write(ctx, r); err != nil {
				writeErr <- fmt.Errorf("Write %d: %w", i, err)
				return
			}
		}
	}()

	<-third
	srv.Stop(t)
	resume <- struct{}{}
	<-third
	// While InfluxDB is down, Flush cannot finish: it says so, with the cause.
	short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	err := s.Flush(short)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "not yet written") {
		t.Errorf("Flush while InfluxDB is down: got %v; want a deadline error saying points are not yet written", err)
	}
	if st := s.Stats(); st.Pending == 0 || st.Retries == 0 {
		t.Errorf("Stats while down: got %+v; want points pending and retries", st)
	}
	srv.Restart(t)
	resume <- struct{}{}
	for range third { // until the writer is done
	}
	select {
	case err := <-writeErr:
		t.Fatal(err)
	default:
	}

	flush(t, s, 2*time.Minute)
	got, err := s.Query(ctx, "", t0.Add(-time.Hour), t0.Add(time.Hour))
	if err != nil {
		t.Fatalf("Query: %v", err)
	}
	want := samplesOf(reports...)
	sortSamples(want)
	checkSamples(t, got, want)
	if st := s.Stats(); st.Accepted != 2*n || st.Written != 2*n || st.Pending != 0 || st.Dropped != 0 || st.Rejected != 0 {
		t.Errorf("Stats: got %+v; want %d accepted and written, nothing else", st, 2*n)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

func sortSamples(ss []Sample) {
	// Query's order: time, site, device, transport.
	for i := 1; i < len(ss); i++ {
		for j := i; j > 0 && sampleLess(ss[j], ss[j-1]); j-- {
			ss[j], ss[j-1] = ss[j-1], ss[j]
		}
	}
}

func sampleLess(a, b Sample) bool {
	if !a.Time.Equal(b.Time) {
		return a.Time.Before(b.Time)
	}
	if a.Site != b.Site {
		return a.Site < b.Site
	}
	if a.Device != b.Device {
		return a.Device < b.Device
	}
	return a.Transport < b.Transport
}

// TestInfluxMissingDatabase: writes to a database that does not exist yet are kept and retried
// until it is created.
func TestInfluxMissingDatabase(t *testing.T) {
	ctx := context.Background()
	base := influxtest.URL(t)
	name := fmt.Sprintf("edgewan_test_late_%d", time.Now().UnixNano())
	s := openInflux(t, InfluxOptions{URL: base, Bucket: name + "/autogen", RetryMin: 20 * time.Millisecond, RetryMax: 100 * time.Millisecond})
	r := report("site-a", "edge-1", time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC), win("wan1", 10, 1, 20, 30, 10, 40, 2, 3, false))
	if err := s.Write(ctx, r); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	err := s.Flush(short)
	cancel()
	if err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("Flush before CREATE DATABASE: got %v; want a 'database not found' error", err)
	}
	if err := influxtest.Exec(base, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = influxtest.Exec(base, "DROP DATABASE "+name) })
	flush(t, s, time.Minute)
	got, err := s.Query(ctx, "site-a", r.Time.Add(-time.Minute), r.Time.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	checkSamples(t, got, samplesOf(r))
}

// TestInfluxRejected: data InfluxDB refuses for good (a field type conflict) is dropped,
// counted and reported by Flush, and does not block what comes after.
func TestInfluxRejected(t *testing.T) {
	ctx := context.Background()
	db := influxtest.NewDatabase(t)
	at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	// "sent" as a float first: our integer "sent" then conflicts (HTTP 400, partial write).
	if err := writeLine(db, fmt.Sprintf("transport,device=x,site=x,transport=x sent=1.5 %d", at.UnixNano())); err != nil {
		t.Fatal(err)
	}
	s := openInflux(t, InfluxOptions{URL: db.URL, Bucket: db.Bucket, RetryMin: 20 * time.Millisecond})
	if err := s.Write(ctx, report("site-a", "edge-1", at, win("wan1", 10, 1, 20, 30, 10, 40, 2, 3, false))); err != nil {
		t.Fatal(err)
	}
	long, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err := s.Flush(long)
	if err == nil || !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), "refused 1 of 1 points") || !strings.Contains(err.Error(), "conflict") {
		t.Errorf("Flush: got %v; want InfluxDB refused 1 of 1 points (field type conflict)", err)
	}
	if st := s.Stats(); st.Rejected != 1 || st.Pending != 0 {
		t.Errorf("Stats: got %+v; want 1 rejected, 0 pending", st)
	}
	if err := s.Flush(long); err != nil {
		t.Errorf("second Flush: got %v; want nil (the error was reported once)", err)
	}
}

func writeLine(db influxtest.Database, line string) error {
	resp, err := http.Post(db.URL+"/write?db="+db.Name, "text/plain", strings.NewReader(line))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("write %q: %s: %s", line, resp.Status, b)
	}
	return nil
}

func TestInfluxBadOptions(t *testing.T) {
	tests := []struct {
		name    string
		opts    InfluxOptions
		wantErr string
	}{
		{name: "no URL", opts: InfluxOptions{Bucket: "db/autogen"}, wantErr: "no URL"},
		{name: "no scheme", opts: InfluxOptions{URL: "127.0.0.1:8086", Bucket: "db/autogen"}, wantErr: "bad URL"},
		{name: "bad scheme", opts: InfluxOptions{URL: "ftp://127.0.0.1:8086", Bucket: "db/autogen"}, wantErr: "want http://host:port"},
		{name: "no host", opts: InfluxOptions{URL: "http://", Bucket: "db/autogen"}, wantErr: "bad URL"},
		{name: "unparsable", opts: InfluxOptions{URL: "http://[::1", Bucket: "db/autogen"}, wantErr: "bad URL"},
		{name: "no bucket", opts: InfluxOptions{URL: "http://127.0.0.1:8086"}, wantErr: "no bucket"},
		{name: "negative", opts: InfluxOptions{URL: "http://127.0.0.1:8086", Bucket: "db/autogen", MaxBuffered: -1}, wantErr: "negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewInflux(tt.opts)
			if err == nil {
				s.Close()
				t.Fatalf("got no error; want %q", tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), "sink.NewInflux: ") {
				t.Errorf("got %q; want sink.NewInflux: ...%s...", err, tt.wantErr)
			}
		})
	}
}

// TestInfluxUnreachable: a URL where nothing listens gives clear errors, and a full buffer
// refuses reports with ErrOverflow, counted.
func TestInfluxUnreachable(t *testing.T) {
	ctx := context.Background()
	u := "http://" + closedAddr(t)
	s := openInflux(t, InfluxOptions{URL: u, Bucket: "db/autogen", MaxBuffered: 4, OverflowWait: 20 * time.Millisecond,
		CloseTimeout: 50 * time.Millisecond, RetryMin: 10 * time.Millisecond, RetryMax: 20 * time.Millisecond})
	r := report("site-a", "edge-1", time.Now(), win("wan1", 10, 1, 20, 30, 10, 40, 2, 3, false), win("lte", 1, 0, 1, 1, 1, 1, 0, 0, false))

	tests := []struct {
		name   string
		err    func() error
		wantIs error
		want   []string
	}{
		{name: "Ping", err: func() error { return s.Ping(ctx) }, want: []string{"sink.InfluxSink.Ping", u, "connection refused"}},
		{name: "first write fits", err: func() error { return s.Write(ctx, r) }},
		{name: "second write fits", err: func() error { return s.Write(ctx, r) }},
		{name: "third overflows", err: func() error { return s.Write(ctx, r) }, wantIs: ErrOverflow, want: []string{"4 points buffered"}},
		{name: "a caller that gives up is refused, not counted as dropped", err: func() error {
			gone, cancel := context.WithCancel(ctx)
			cancel()
			return s.Write(gone, r)
		}, wantIs: context.Canceled, want: []string{"waiting for room"}},
		{name: "Flush", err: func() error {
			short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			defer cancel()
			return s.Flush(short)
		}, wantIs: context.DeadlineExceeded, want: []string{"4 points not yet written to " + u, "connection refused"}},
		{name: "NaN", err: func() error {
			return s.Write(ctx, report("site-a", "edge-1", time.Now(), win("wan1", 1, 0, math.Inf(1), 1, 1, 1, 0, 0, false)))
		}, wantIs: telemetry.ErrInvalid},
		{name: "Close", err: s.Close, want: []string{"4 points not"}},
		{name: "Write after Close", err: func() error { return s.Write(ctx, r) }, wantIs: ErrClosed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.err()
			if tt.wantIs == nil && tt.want == nil {
				if err != nil {
					t.Fatalf("got %v; want nil", err)
				}
				return
			}
			if err == nil || (tt.wantIs != nil && !errors.Is(err, tt.wantIs)) {
				t.Fatalf("got %v; want an error that is %v", err, tt.wantIs)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got %q; want it to say %q", err, w)
				}
			}
		})
	}
	if st := s.Stats(); st.Dropped != 2 || st.Accepted != 4 || st.Written != 0 {
		t.Errorf("Stats: got %+v; want 2 dropped, 4 accepted, 0 written", st)
	}
}

// TestInfluxParallelOrder: with many requests in flight at once (one point per batch, 8
// writers), each series is still written in order: rewriting one point of a series 40 times
// leaves the last value in InfluxDB (the last write of a series and time wins), for every site.
func TestInfluxParallelOrder(t *testing.T) {
	ctx := context.Background()
	db := influxtest.NewDatabase(t)
	s := openInflux(t, InfluxOptions{URL: db.URL, Bucket: db.Bucket, BatchSize: 1, Writers: 8})
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	const sites, rewrites = 24, 40
	for k := range rewrites {
		for i := range sites {
			r := report(fmt.Sprintf("site-%02d", i), "edge-1", t0, win("wan1", k+1, 0, float64(k), 1, 1, 1, 0, 0, false))
			if err := s.Write(ctx, r); err != nil {
				t.Fatalf("Write: %v", err)
			}
		}
	}
	flush(t, s, 2*time.Minute)
	got, err := s.Query(ctx, "", t0.Add(-time.Minute), t0.Add(time.Minute))
	if err != nil {
		t.Fatalf("Query: %v", err)
	}
	if len(got) != sites {
		t.Fatalf("got %d samples; want %d (one per site)", len(got), sites)
	}
	for _, sm := range got {
		if sm.Sent != rewrites {
			t.Errorf("site %s: got sent=%d; want %d (the last write): writes of a series were reordered", sm.Site, sm.Sent, rewrites)
		}
	}
	if st := s.Stats(); st.Accepted != sites*rewrites || st.Written != sites*rewrites || st.Dropped != 0 {
		t.Errorf("Stats: got %+v; want %d accepted and written, none dropped", st, sites*rewrites)
	}
}

// TestInfluxBackPressure: a buffer far smaller than the stream makes Write wait for room
// instead of dropping: every point of 4 concurrent writers arrives, and the waits are counted.
func TestInfluxBackPressure(t *testing.T) {
	ctx := context.Background()
	db := influxtest.NewDatabase(t)
	s := openInflux(t, InfluxOptions{URL: db.URL, Bucket: db.Bucket, BatchSize: 3, MaxBuffered: 6, Writers: 2,
		OverflowWait: time.Minute, FlushInterval: 10 * time.Millisecond})
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	const goroutines, perG = 4, 50
	errs := make(chan error, goroutines)
	for g := range goroutines {
		go func() {
			for k := range perG {
				r := report(fmt.Sprintf("site-%d", g), "edge-1", t0.Add(time.Duration(k)*time.Second),
					win("wan1", 1, 0, 1, 1, 1, 1, 0, 0, false), win("wan2", 1, 0, 2, 2, 2, 2, 0, 0, false), win("lte", 1, 0, 3, 3, 3, 3, 0, 0, false))
				if err := s.Write(ctx, r); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range goroutines {
		if err := <-errs; err != nil {
			t.Fatalf("Write: %v", err)
		}
	}
	flush(t, s, 2*time.Minute)
	got, err := s.Query(ctx, "", t0.Add(-time.Minute), t0.Add(time.Hour))
	if err != nil {
		t.Fatalf("Query: %v", err)
	}
	const want = goroutines * perG * 3
	st := s.Stats()
	if len(got) != want || st.Written != want || st.Dropped != 0 {
		t.Errorf("got %d samples, stats %+v; want %d written, none dropped", len(got), st, want)
	}
	if st.Waits == 0 {
		t.Errorf("Stats: got %+v; want Writes that waited for room", st)
	}
}

// closedAddr returns a loopback address where nothing listens.
func closedAddr(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestLineProtocol(t *testing.T) {
	tests := []struct {
		name                 string
		site, device, transp string
		want                 string
	}{
		{name: "plain", site: "s1", device: "d1", transp: "wan1",
			want: "transport,device=d1,site=s1,transport=wan1 latency_ms=1.5,p95_ms=2,loss_pct=10,jitter_ms=0.25,stddev_ms=1e-07,sent=10i,lost=1i,down=true 42\n"},
		{name: "escaped", site: "a b,c=d\\", device: "", transp: "x\ny",
			want: "transport,device=_,site=a\\ b\\,c\\=d\\\\,transport=x y latency_ms=1.5,p95_ms=2,loss_pct=10,jitter_ms=0.25,stddev_ms=1e-07,sent=10i,lost=1i,down=true 42\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tw := win(tt.transp, 10, 1, 1.5, 2, 1, 3, 0.25, 1e-7, true)
			if got := string(appendLine(nil, tt.site, tt.device, &tw, 42)); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestInfluxWriteAllocs(t *testing.T) {
	s := openInflux(t, InfluxOptions{URL: "http://" + closedAddr(t), Bucket: "db/autogen", BatchSize: 1 << 20,
		MaxBuffered: 1 << 30, FlushInterval: time.Hour, CloseTimeout: time.Millisecond})
	r := report("site-a", "edge-1", time.Now(), win("wan1", 10, 1, 20, 30, 10, 40, 2, 3, false))
	for range 1000 { // grow the batch buffer first
		_ = s.Write(context.Background(), r)
	}
	if got := testing.AllocsPerRun(1000, func() { _ = s.Write(context.Background(), r) }); got > 0.01 {
		t.Errorf("got %v allocs per Write; want 0 (amortised)", got)
	}
}

// BenchmarkInfluxWrite is one report of 3 transport windows written to a real InfluxDB, Flush
// included at the end; windows/s is the rate InfluxDB took them at.
func BenchmarkInfluxWrite(b *testing.B) {
	ctx := context.Background()
	db := influxtest.NewDatabase(b)
	s := openInflux(b, InfluxOptions{URL: db.URL, Bucket: db.Bucket, Writers: benchWriters()})
	r := report("", "edge-1", time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC),
		win("wan1", 10, 0, 20, 25, 18, 30, 1, 2, false),
		win("wan2", 10, 1, 35, 45, 30, 50, 3, 4, false),
		win("lte", 10, 2, 60, 90, 50, 120, 8, 9, false))
	sites := make([]string, 10_000)
	for i := range sites {
		sites[i] = fmt.Sprintf("site-%05d", i)
	}
	t0 := r.Time
	b.ReportAllocs()
	start := time.Now()
	i := 0
	for b.Loop() {
		r.Site, r.Time = sites[i%len(sites)], t0.Add(time.Duration(i/len(sites))*time.Second)
		if err := s.Write(ctx, r); err != nil {
			b.Fatal(err)
		}
		i++
	}
	flush(b, s, 10*time.Minute)
	b.ReportMetric(float64(3*i)/time.Since(start).Seconds(), "windows/s")
}

// benchWriters is InfluxOptions.Writers for the benchmarks: EDGEWAN_BENCH_INFLUX_WRITERS, or
// 0 (the default).
func benchWriters() int {
	n, _ := strconv.Atoi(os.Getenv("EDGEWAN_BENCH_INFLUX_WRITERS"))
	return n
}

// BenchmarkInfluxSustained offers InfluxDB the fleet's rate, paced on the wall clock: each op
// is one second of 10,000 sites x 3 transports (30,000 windows, written in 100 slices of
// 10 ms). It reports the rate InfluxDB took (windows/s, the final Flush included), the most
// points ever pending, the Writes that waited for room, and "lost": windows offered that
// InfluxDB does not hold afterwards (counted there with InfluxQL). Writers comes from
// benchWriters. Run with -benchtime 60x.
func BenchmarkInfluxSustained(b *testing.B) {
	ctx := context.Background()
	db := influxtest.NewDatabase(b)
	s := openInflux(b, InfluxOptions{URL: db.URL, Bucket: db.Bucket, Writers: benchWriters()})
	const sites, slices = 10_000, 100
	r := report("", "edge-1", time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC),
		win("wan1", 10, 0, 20, 25, 18, 30, 1, 2, false),
		win("wan2", 10, 1, 35, 45, 30, 50, 3, 4, false),
		win("lte", 10, 2, 60, 90, 50, 120, 8, 9, false))
	names := make([]string, sites)
	for i := range names {
		names[i] = fmt.Sprintf("site-%05d", i)
	}
	t0 := r.Time
	var offered, maxPending int64
	start := time.Now()
	sec := 0
	for b.Loop() {
		for k := range slices {
			due := start.Add(time.Duration(sec)*time.Second + time.Duration(k)*time.Second/slices)
			if d := time.Until(due); d > 0 {
				time.Sleep(d) // pacing the offered load, not synchronisation
			}
			for i := k * sites / slices; i < (k+1)*sites/slices; i++ {
				r.Site, r.Time = names[i], t0.Add(time.Duration(sec)*time.Second)
				if err := s.Write(ctx, r); err != nil {
					b.Fatal(err)
				}
				offered += 3
			}
			maxPending = max(maxPending, s.Stats().Pending)
		}
		sec++
	}
	flush(b, s, 10*time.Minute)
	elapsed := time.Since(start)
	n, err := influxtest.Count(db, "")
	if err != nil {
		b.Fatal(err)
	}
	st := s.Stats()
	b.ReportMetric(float64(offered)/elapsed.Seconds(), "windows/s")
	b.ReportMetric(float64(offered-n), "lost")
	b.ReportMetric(float64(maxPending), "max-pending")
	b.ReportMetric(float64(st.Waits), "waits")
	if n != offered || st.Dropped != 0 {
		b.Errorf("offered %d windows; InfluxDB holds %d; stats %+v", offered, n, st)
	}
}

// BenchmarkInfluxMinutes is one site-hour of 1-second windows (3 transports: 10,800 points)
// aggregated to minutes by InfluxDB (Minutes, Flux aggregateWindow): the what-if's read per site
// and hour with this sink (a day is 24 times as many points).
func BenchmarkInfluxMinutes(b *testing.B) {
	ctx := context.Background()
	db := influxtest.NewDatabase(b)
	s := openInflux(b, InfluxOptions{URL: db.URL, Bucket: db.Bucket})
	t0 := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	for sec := range 3600 {
		r := report("site-1", "edge-1", t0.Add(time.Duration(sec)*time.Second),
			win("wan1", 5, 0, 20, 25, 18, 30, 1, 2, false),
			win("wan2", 5, 1, 35, 45, 30, 50, 3, 4, false),
			win("lte", 5, 0, 60, 90, 50, 120, 8, 9, sec%600 == 0))
		if err := s.Write(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
	flush(b, s, 2*time.Minute)
	var rows []Rollup
	for b.Loop() {
		var err error
		rows, err = s.Minutes(ctx, "site-1", t0, t0.Add(time.Hour), rows[:0])
		if err != nil || len(rows) != 180 {
			b.Fatalf("%d rows, %v", len(rows), err)
		}
	}
}

// TestInfluxMinutes: InfluxQL's minutes (Minutes on InfluxDB 1.x) and Flux's (History) agree,
// two devices of one site merged, Down windows counted, and the buffer given is appended to.
func TestInfluxMinutes(t *testing.T) {
	ctx := context.Background()
	db := influxtest.NewDatabase(t)
	s := openInflux(t, InfluxOptions{URL: db.URL, Bucket: db.Bucket})
	t0 := time.Now().UTC().Truncate(time.Hour).Add(-time.Hour)
	for sec := 0; sec < 180; sec += 10 { // 3 minutes of 10-second windows; a second device from minute 1
		at := t0.Add(time.Duration(sec) * time.Second)
		if err := s.Write(ctx, report("site-1", "edge-1", at, win("wan1", 10, sec/60, 20+float64(sec/60), 30, 18, 40, 2, 1, false),
			win("lte", 10, 0, 60, 80, 50, 90, 8, 2, sec == 70))); err != nil {
			t.Fatal(err)
		}
		if sec >= 60 {
			if err := s.Write(ctx, report("site-1", "edge-2", at.Add(time.Second), win("wan1", 10, 0, 40, 50, 38, 60, 4, 1, false))); err != nil {
				t.Fatal(err)
			}
		}
	}
	flush(t, s, time.Minute)
	flux, err := s.History(ctx, "site-1", "", t0, t0.Add(3*time.Minute), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	ql, err := s.Minutes(ctx, "site-1", t0, t0.Add(3*time.Minute), []Rollup{{Transport: "kept"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(flux) != 6 || len(ql) != 7 || ql[0].Transport != "kept" {
		t.Fatalf("Flux %d rows, InfluxQL %d (with the 1 given); want 6 and 7", len(flux), len(ql))
	}
	for i, f := range flux {
		q := ql[i+1]
		f.Site = ""
		if f.Transport != q.Transport || !f.Time.Equal(q.Time) || f.Windows != q.Windows || f.Sent != q.Sent || f.Lost != q.Lost ||
			f.DownWindows != q.DownWindows || math.Abs(f.LatencyMs-q.LatencyMs) > 1e-9 || math.Abs(f.P95Ms-q.P95Ms) > 1e-9 ||
			math.Abs(f.JitterMs-q.JitterMs) > 1e-9 || math.Abs(f.LossPct-q.LossPct) > 1e-9 {
			t.Errorf("row %d: InfluxQL %+v; Flux %+v", i, q, f)
		}
	}
	// wan1's minute 1: 6 windows of edge-1 at 21 ms and 6 of edge-2 at 40 ms; 6 of 120 probes lost.
	if w := ql[5]; w.Transport != "wan1" || w.Windows != 12 || w.LatencyMs != 30.5 || w.Lost != 6 || w.Sent != 120 {
		t.Errorf("wan1 minute 1: %+v", w)
	}
	if l := ql[2]; l.Transport != "lte" || l.DownWindows != 1 {
		t.Errorf("lte minute 1: %+v; want 1 Down window", l)
	}
}
