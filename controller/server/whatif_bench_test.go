package server_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/edgewan/edgewan/controller/config"
	"github.com/edgewan/edgewan/controller/sdwan"
	"github.com/edgewan/edgewan/controller/server/servertest"
	"github.com/edgewan/edgewan/telemetry"
	"github.com/edgewan/edgewan/telemetry/sink"
)

// BenchmarkSimulateFleet is the what-if goal end to end: POST .../simulate over 10,000 sites x
// 24 h of minute history in the embedded store (SQLite store, real route, streamed answer read
// to its end), draft against the published version of a 3-class policy. It reports the wall
// time per simulation and the process's peak RSS during it (controller and client are this
// process; the peak is reset after the fixture is built). EDGEWAN_BENCH_SITES changes the
// fleet's size; EDGEWAN_BENCH_CPUPROFILE=FILE writes a CPU profile of the simulation alone. Run it with -benchtime 1x (scripts/bench-whatif.sh does).
//
// The fixture: 100 sites' days written through the sink (Write, Flush, Compact, as the
// controller does), then copied in SQL to the other sites (site k has site k%100's history):
// writing 43 M minutes through the sink would take the benchmark most of an hour, and the
// replay does the same work on a copy.
func BenchmarkSimulateFleet(b *testing.B) {
	sites := 10_000
	if v := os.Getenv("EDGEWAN_BENCH_SITES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10_000 {
			b.Fatalf("EDGEWAN_BENCH_SITES=%q: want 1 to 10000", v)
		}
		sites = n
	}
	ctx := context.Background()
	dir := b.TempDir()
	ids := make([]string, sites)
	for i := range ids {
		ids[i] = fmt.Sprintf("site_b%05d", i)
	}
	t0 := time.Now()
	buildFleetHistory(b, dir, ids, time.Now().UTC().Truncate(time.Minute).Add(-24*time.Hour))
	b.Logf("history of %d site-days in %v", sites, time.Since(t0).Round(time.Millisecond))

	s := servertest.Start(b, servertest.Options{Config: func(c *config.Config) { c.DataDir = dir }})
	now := time.Now().UTC()
	for _, id := range ids {
		site := &sdwan.Site{ID: id, Name: "Bench " + id, Status: sdwan.SitePending, Role: "branch", Segments: []string{"corporate"}, CreatedAt: now, UpdatedAt: now}
		var ts []*sdwan.Transport
		for i, name := range []string{"mpls", "inet", "lte"} {
			ts = append(ts, &sdwan.Transport{ID: fmt.Sprintf("tr_%s%d", strings.TrimPrefix(id, "site_"), i), SiteID: id, Name: name, Kind: "broadband",
				Interface: fmt.Sprintf("eth%d", i+1), ProbeTargets: []string{}, Status: sdwan.TransportUnknown, Cost: i, CreatedAt: now, UpdatedAt: now})
		}
		if err := s.Store.CreateSite(ctx, site, "claim_"+strings.TrimPrefix(id, "site_"), ts); err != nil {
			b.Fatal(err)
		}
	}
	rw := s.Key("sdwan:read", "sdwan:write")
	var pol sdwan.Policy
	classes := func(voiceMs int) string {
		return fmt.Sprintf(`{"classes":[{"name":"voice","max_latency_ms":%d,"max_loss_pct":1,"max_jitter_ms":30},{"name":"video","max_latency_ms":200,"max_loss_pct":2},{"name":"bulk"}],
			"paths":{"voice":["mpls","inet","lte"],"video":["inet","mpls"],"bulk":["inet","lte"]}}`, voiceMs)
	}
	s.Do("POST", "/sd-wan/v1/policies", rw, `{"name":"fleet","type":"steering","content":`+classes(150)+`}`).JSON(b, &pol)
	if r := s.Do("POST", "/sd-wan/v1/policies/"+pol.ID+"/publish", rw, map[string]any{"version": 1, "sites": ids}); r.Status != 202 {
		b.Fatalf("publish: %d %s", r.Status, r.Body)
	}
	if r := s.Do("POST", "/sd-wan/v1/policies/"+pol.ID+"/versions", rw, `{"content":`+classes(100)+`}`); r.Status != 201 {
		b.Fatalf("draft: %d %s", r.Status, r.Body)
	}
	body, _ := json.Marshal(map[string]any{"window": "24h", "sites": ids})
	client := *s.Client
	client.Timeout = 0 // a loaded machine may take longer than the test client's 30 s
	b.Logf("controller ready with %d sites in %v", sites, time.Since(t0).Round(time.Millisecond))

	debug.FreeOSMemory() // the fixture's garbage is not the simulation's
	b.Logf("RSS before the simulation: %.0f MB", float64(rss(b, "VmRSS:"))/(1<<20))
	resetPeakRSS(b)
	var ru0 syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru0); err != nil {
		b.Fatal(err)
	}
	if path := os.Getenv("EDGEWAN_BENCH_CPUPROFILE"); path != "" { // the simulation's alone, not the fixture's
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			b.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	b.ResetTimer()
	var bytesRead int64
	for b.Loop() {
		req, _ := http.NewRequest("POST", s.URL+"/sd-wan/v1/policies/"+pol.ID+"/versions/2/simulate", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+rw)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		// Read the stream to its end, keeping only the tail (the summary) in memory.
		tail := &tailWriter{max: 1 << 20}
		n, err := io.Copy(tail, resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("simulate: %d, %v, %d bytes", resp.StatusCode, err, n)
		}
		bytesRead = n
		end := string(tail.buf)
		i := strings.LastIndex(end, `],"summary":`)
		if i < 0 || !strings.HasSuffix(strings.TrimSpace(end), `"complete":true}`) {
			b.Fatalf("simulation did not complete: ...%s", end[max(0, len(end)-500):])
		}
		var sum sdwan.SimulationSummary
		if err := json.NewDecoder(strings.NewReader(end[i+len(`],"summary":`):])).Decode(&sum); err != nil {
			b.Fatal(err)
		}
		if sum.Sites != sites || sum.SitesFailed != 0 || sum.SitesNoData != 0 {
			b.Fatalf("summary: %d sites, %d failed, %d without data; want %d, 0, 0", sum.Sites, sum.SitesFailed, sum.SitesNoData, sites)
		}
		b.ReportMetric(float64(sum.SitesChanged), "sites_changed")
	}
	var ru1 syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru1); err != nil {
		b.Fatal(err)
	}
	cpu := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/simulation")
	// The CPU time of the process (controller and client) per simulation: on a shared machine
	// the wall time says more about the neighbours; on 2 idle cores it is about cpu_s / 2.
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu_s/simulation")
	b.ReportMetric(float64(rss(b, "VmHWM:"))/(1<<20), "peak_rss_MB")
	b.ReportMetric(float64(bytesRead)/(1<<20), "answer_MB")
}

// buildFleetHistory writes 24 h of minute history from start for ids into the embedded store
// in dir: the first 100 through the sink, the rest copied from them.
func buildFleetHistory(b *testing.B, dir string, ids []string, start time.Time) {
	ctx := context.Background()
	es, err := sink.NewEmbedded(sink.EmbeddedOptions{DataDir: dir, FlushInterval: time.Hour, PruneInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	seeds := min(len(ids), 100)
	for k := range seeds {
		rng := rand.New(rand.NewPCG(uint64(k), 14))
		slowAt, lossAt, downAt := rng.IntN(1440), rng.IntN(1440), rng.IntN(1440)
		for m := range 1440 {
			mpls := telemetry.TransportWindow{Name: "mpls", Sent: 300, LatencyMs: 20 + rng.Float64()*5, P95Ms: 30, JitterMs: 1, MinMs: 15, MaxMs: 40}
			inet := telemetry.TransportWindow{Name: "inet", Sent: 300, LatencyMs: 35 + rng.Float64()*10, P95Ms: 50, JitterMs: 3, MinMs: 25, MaxMs: 70}
			lte := telemetry.TransportWindow{Name: "lte", Sent: 300, LatencyMs: 60 + rng.Float64()*20, P95Ms: 90, JitterMs: 8, MinMs: 40, MaxMs: 120}
			if m >= slowAt && m < slowAt+20 {
				mpls.LatencyMs = 130
			}
			if m >= lossAt && m < lossAt+5 {
				inet.Lost = 9
			}
			if m == downAt {
				lte.Lost, lte.Down = 300, true
			}
			r := telemetry.Report{V: telemetry.SchemaVersion, Site: ids[k], Device: "d1", WindowMs: 60_000,
				Time: start.Add(time.Duration(m)*time.Minute + 30*time.Second), Transport: []telemetry.TransportWindow{mpls, inet, lte}}
			if err := es.Write(ctx, &r); err != nil {
				b.Fatal(err)
			}
		}
		if err := es.Flush(ctx); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := es.Compact(ctx, time.Now()); err != nil {
		b.Fatal(err)
	}
	if err := es.Close(); err != nil {
		b.Fatal(err)
	}
	if len(ids) == seeds {
		return
	}
	// The copies, in SQL on the sink's tables (its layout is the sink's business; a benchmark
	// fixture may know it).
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, sink.DefaultEmbeddedFile)+"?_pragma=journal_mode(WAL)&_pragma=synchronous(OFF)")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	stmts := []string{"CREATE TEMP TABLE copies (src TEXT NOT NULL, dst TEXT NOT NULL)"}
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			b.Fatal(err)
		}
	}
	tx, err := db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	for i := seeds; i < len(ids); i++ {
		if _, err := tx.Exec("INSERT INTO copies VALUES (?, ?)", ids[i%seeds], ids[i]); err != nil {
			b.Fatal(err)
		}
	}
	for _, q := range []string{
		"INSERT INTO minute_blocks SELECT c.dst, t.transport, t.hour, t.mask, t.data FROM copies c JOIN minute_blocks t ON t.site = c.src ORDER BY c.dst, t.transport, t.hour",
		"INSERT INTO rollup_1m SELECT c.dst, t.transport, t.ts, t.windows, t.sent, t.lost, t.down, t.lat_sum, t.p95_sum, t.jit_sum, t.sd_sum, t.min_ms, t.max_ms FROM copies c JOIN rollup_1m t ON t.site = c.src ORDER BY c.dst, t.transport, t.ts",
		"INSERT INTO rollup_1h SELECT c.dst, t.transport, t.ts, t.windows, t.sent, t.lost, t.down, t.lat_sum, t.p95_sum, t.jit_sum, t.sd_sum, t.min_ms, t.max_ms FROM copies c JOIN rollup_1h t ON t.site = c.src ORDER BY c.dst, t.transport, t.ts",
	} {
		if _, err := tx.Exec(q); err != nil {
			b.Fatalf("%s: %v", q, err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	if _, err := db.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		b.Fatal(err)
	}
}

// tailWriter keeps the last max bytes written to it.
type tailWriter struct {
	buf []byte
	max int
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	if over := len(w.buf) - w.max; over > 0 {
		w.buf = append(w.buf[:0], w.buf[over:]...)
	}
	return len(p), nil
}

// resetPeakRSS starts the kernel's peak resident set size (VmHWM) of this process afresh.
func resetPeakRSS(b *testing.B) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Fatalf("resetting the peak RSS: %v", err)
	}
}

// rss is this process's resident set size in bytes: field "VmRSS:" now, "VmHWM:" at its peak.
func rss(b *testing.B, field string) int64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	b.Fatalf("no %s in /proc/self/status", field)
	return 0
}
