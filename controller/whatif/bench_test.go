package whatif_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/edgewan/edgewan/controller/whatif"
	"github.com/edgewan/edgewan/steering"
	"github.com/edgewan/edgewan/telemetry"
	"github.com/edgewan/edgewan/telemetry/sink"
)

// fleetDay fills rows with one site's day of minute rollups for mpls, inet and lte: steady
// figures with a few bad stretches (mpls slow, inet lossy, lte down), different per site.
func fleetDay(rows []sink.Rollup, site int, start time.Time) []sink.Rollup {
	rows = rows[:0]
	rng := rand.New(rand.NewPCG(uint64(site), 7))
	slowAt, lossAt, downAt := rng.IntN(1440), rng.IntN(1440), rng.IntN(1440)
	for m := range 1440 {
		at := start.Add(time.Duration(m) * time.Minute)
		mpls := sink.Rollup{Transport: "mpls", Time: at, Windows: 60, Sent: 300, LatencyMs: 20 + rng.Float64()*5, P95Ms: 30, JitterMs: 1}
		inet := sink.Rollup{Transport: "inet", Time: at, Windows: 60, Sent: 300, LatencyMs: 35 + rng.Float64()*10, P95Ms: 50, JitterMs: 3}
		lte := sink.Rollup{Transport: "lte", Time: at, Windows: 60, Sent: 300, LatencyMs: 60 + rng.Float64()*20, P95Ms: 90, JitterMs: 8}
		if m >= slowAt && m < slowAt+20 {
			mpls.LatencyMs = 130
		}
		if m >= lossAt && m < lossAt+5 {
			inet.LossPct = 3
		}
		if m == downAt {
			lte.DownWindows = 60
		}
		rows = append(rows, mpls, inet, lte)
	}
	return rows
}

var (
	benchTransports = []string{"mpls", "inet", "lte"}
	benchPublished  = whatif.Policy{
		{Name: "voice", SLA: steering.Thresholds{MaxLatencyMs: 150, MaxLossPct: 2, MaxJitterMs: 30}, Preferred: []string{"mpls", "inet", "lte"}},
		{Name: "video", SLA: steering.Thresholds{MaxLatencyMs: 200, MaxLossPct: 2}, Preferred: []string{"inet", "mpls"}},
		{Name: "bulk", Preferred: []string{"inet", "lte"}},
	}
	benchDraft = whatif.Policy{
		{Name: "voice", SLA: steering.Thresholds{MaxLatencyMs: 100, MaxLossPct: 1, MaxJitterMs: 30}, Preferred: []string{"mpls", "inet", "lte"}},
		{Name: "video", SLA: steering.Thresholds{MaxLatencyMs: 200, MaxLossPct: 2}, Preferred: []string{"inet", "mpls"}},
		{Name: "bulk", Preferred: []string{"inet", "lte"}},
	}
)

// BenchmarkSite is one site's day (1440 minutes x 3 transports) replayed under two policies of
// 3 classes: the replay's cost per site, history generation included.
func BenchmarkSite(b *testing.B) {
	o := whatif.Options{Steering: steering.DefaultOptions(), LiveWindow: time.Second, Latency: whatif.Mean}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var rows []sink.Rollup
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		rows = fleetDay(rows, i, start)
		s := whatif.NewSite(benchTransports, o, benchDraft, benchPublished)
		s.Run(rows)
		if s.Minutes() != 1440 {
			b.Fatal(s.Minutes())
		}
	}
}

// BenchmarkFleet10k is the goal of the what-if: 10,000 sites x 24 h of minute history replayed
// under a draft and the published policy, GOMAXPROCS sites at a time, each site's history
// generated into a buffer its worker reuses (as a streamed read would be: memory holds one
// day of one site per worker, never the fleet's). Run it with -benchtime=1x.
func BenchmarkFleet10k(b *testing.B) {
	const sites = 10_000
	o := whatif.Options{Steering: steering.DefaultOptions(), LiveWindow: time.Second, Latency: whatif.Mean}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	workers := runtime.GOMAXPROCS(0)
	for b.Loop() {
		next := make(chan int, 64)
		var wg sync.WaitGroup
		var mu sync.Mutex
		changed := 0
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var rows []sink.Rollup
				n := 0
				for site := range next {
					rows = fleetDay(rows, site, start)
					s := whatif.NewSite(benchTransports, o, benchDraft, benchPublished)
					s.Run(rows)
					d, p := s.Outcomes(0), s.Outcomes(1)
					for c := range d {
						if !d[c].Same(&p[c]) {
							n++
							break
						}
					}
				}
				mu.Lock()
				changed += n
				mu.Unlock()
			}()
		}
		for i := range sites {
			next <- i
		}
		close(next)
		wg.Wait()
		b.ReportMetric(float64(changed), "sites_changed")
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e9, "s/fleet")
	b.ReportMetric(float64(sites*1440*3), "rollups/fleet")
}

// BenchmarkGenerate is fleetDay alone, to subtract from BenchmarkSite.
func BenchmarkGenerate(b *testing.B) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var rows []sink.Rollup
	for i := 0; b.Loop(); i++ {
		rows = fleetDay(rows, i, start)
	}
}

// BenchmarkEmbeddedSite is one site's day read from a real embedded store (SQLite minute
// rollups, 100 sites x 24 h x 3 transports written first) and replayed under two policies: the
// cost per site of the simulate route's inner loop with the embedded sink (Minutes, into a
// reused buffer).
func BenchmarkEmbeddedSite(b *testing.B) {
	const sites = 100
	start := time.Now().UTC().Truncate(time.Minute).Add(-24 * time.Hour)
	es, err := sink.NewEmbedded(sink.EmbeddedOptions{DataDir: b.TempDir(), FlushInterval: time.Hour, PruneInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer es.Close()
	ctx := context.Background()
	var rows []sink.Rollup
	for site := range sites {
		rows = fleetDay(rows, site, start)
		for i := 0; i < len(rows); i += 3 {
			r := telemetry.Report{Site: fmt.Sprintf("site%d", site), Device: "d", Time: rows[i].Time.Add(30 * time.Second)}
			for _, x := range rows[i : i+3] {
				r.Transport = append(r.Transport, telemetry.TransportWindow{Name: x.Transport, Sent: 300, Lost: int(x.LossPct * 3),
					LatencyMs: x.LatencyMs, P95Ms: x.P95Ms, JitterMs: x.JitterMs, Down: x.DownWindows > 0})
			}
			if err := es.Write(ctx, &r); err != nil {
				b.Fatal(err)
			}
		}
		if err := es.Flush(ctx); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := es.Compact(ctx, time.Now()); err != nil { // closed hours into blocks, as the sink does after each flush
		b.Fatal(err)
	}
	o := whatif.Options{Steering: steering.DefaultOptions(), LiveWindow: time.Second, Latency: whatif.Mean}
	b.Run("read", func(b *testing.B) {
		var got []sink.Rollup
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			got, err = es.Minutes(ctx, fmt.Sprintf("site%d", i%sites), start, start.Add(24*time.Hour), got[:0])
			if err != nil || len(got) != 1440*3 {
				b.Fatalf("%d rows, %v", len(got), err)
			}
		}
	})
	b.Run("read+replay", func(b *testing.B) {
		var got []sink.Rollup
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			got, err = es.Minutes(ctx, fmt.Sprintf("site%d", i%sites), start, start.Add(24*time.Hour), got[:0])
			if err != nil || len(got) != 1440*3 {
				b.Fatalf("%d rows, %v", len(got), err)
			}
			s := whatif.NewSite(benchTransports, o, benchDraft, benchPublished)
			s.Run(got)
		}
	})
}
