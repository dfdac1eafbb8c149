package server

// BenchmarkSiteHealth measures GET /sd-wan/v1/sites/{id}/health?window=5m over real HTTPS
// (loopback, kept-alive TLS connections) against a controller holding 10,000 claimed sites of 3
// transports, each on a steering policy with two SLA classes and with telemetry in its rolling
// aggregates. Each iteration is one request to a random site; it reports the per-request p50
// and p99 in microseconds (p50-us, p99-us), so -benchtime Nx sets how many requests the
// percentiles are computed over. Requests are paced (-bench-health-rate, 200/s by default) so
// that 2000 of them span 10 s of the controller's periodic work; ns/op is then the pacing.
//
//	idle         nothing else runs
//	ingest-10k   while 10,000 reports/s (30k samples/s) flow into the engine through the
//	             embedded broker's inline client and the InlineBus, as agents' reports do once
//	             the broker has read them (the agents' TLS connections are not simulated here:
//	             scripts/loadgen does that end to end)
//
// This file is in package server (not server_test) to publish telemetry on the controller's
// own bus; it starts the controller as servertest does (servertest imports this package).
// The setup (sites through the API, reports) is not timed. scripts/bench-sdwan.sh runs it:
//
//	go test -run '^$' -bench '^BenchmarkSiteHealth$' -benchtime 2000x ./controller/server/

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgewan/edgewan/controller/config"
	"github.com/edgewan/edgewan/coreapi/auth"
	"github.com/edgewan/edgewan/telemetry"
)

var (
	benchHealthSites = flag.Int("bench-health-sites", 10_000, "sites in BenchmarkSiteHealth")
	benchHealthRate  = flag.Int("bench-health-rate", 200, "BenchmarkSiteHealth's requests per second (0: back to back); paced, the requests span the engine's periodic work (figures saved every 5 s, GC)")
)

func BenchmarkSiteHealth(b *testing.B) {
	n := *benchHealthSites
	hb := startHealthBench(b, n)
	for _, mode := range []struct {
		name string
		rate int // background reports per second
	}{{"idle", 0}, {"ingest-10k", 10_000}} {
		b.Run(mode.name, func(b *testing.B) {
			stop := hb.ingest(b, mode.rate)
			for range 50 { // warm the connections, untimed
				hb.health(b, hb.sites[rand.IntN(len(hb.sites))].id)
			}
			lat := make([]time.Duration, 0, b.N)
			var interval time.Duration
			if *benchHealthRate > 0 {
				interval = time.Second / time.Duration(*benchHealthRate)
			}
			b.ResetTimer()
			start := time.Now()
			for i := range b.N {
				if interval > 0 {
					time.Sleep(time.Until(start.Add(time.Duration(i) * interval)))
				}
				id := hb.sites[rand.IntN(len(hb.sites))].id
				t0 := time.Now()
				hb.health(b, id)
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			sent, ran := stop()
			slices.Sort(lat)
			b.ReportMetric(float64(healthPct(lat, 50).Nanoseconds())/1e3, "p50-us")
			b.ReportMetric(float64(healthPct(lat, 99).Nanoseconds())/1e3, "p99-us")
			if mode.rate > 0 {
				b.ReportMetric(float64(sent)/ran.Seconds(), "reports/s")
			}
		})
	}
}

type benchSite struct{ id, device string }

type healthBench struct {
	s     *Server
	url   string
	token string
	hc    *http.Client
	sites []benchSite
	seq   atomic.Uint64 // reports' Seq, shared by every site (it only has to grow per site)
}

// startHealthBench starts a controller on loopback with n claimed sites on a steering policy,
// and gives every site three reports.
func startHealthBench(b *testing.B, n int) *healthBench {
	b.Helper()
	if os.Getenv("EDGEWAN_TEST_LOGS") == "" {
		slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	}
	cfg := config.Default()
	cfg.DataDir = b.TempDir()
	cfg.Listen, cfg.MetricsListen, cfg.MQTTListen = "127.0.0.1:0", "", "127.0.0.1:0"
	cfg.RateLimit = 0
	cfg.OfflineAfter = time.Hour // sites report only while a sub-benchmark runs
	ctx, cancel := context.WithCancel(context.Background())
	s, err := New(ctx, cfg)
	if err != nil {
		cancel()
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	b.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			b.Errorf("controller stopped with error: %v", err)
		}
	})
	pem, err := os.ReadFile(s.CAFile)
	if err != nil {
		b.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	hb := &healthBench{s: s, url: "https://" + s.Addr(),
		hc: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, MaxIdleConnsPerHost: 16}}}
	hb.seq.Store(uint64(time.Now().UnixMilli()))
	_, hb.token, err = auth.Create(ctx, s.Store, "bench", []string{auth.ScopeSDWANRead, auth.ScopeSDWANWrite}, "")
	if err != nil {
		b.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !s.ready.Load() {
		if time.Now().After(deadline) {
			b.Fatal("controller not ready after 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}

	// Sites, pre-staged and claimed through the API by 8 workers.
	t0 := time.Now()
	hb.sites = make([]benchSite, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				var site struct {
					ID    string `json:"id"`
					Claim string `json:"claim_token"`
				}
				body := fmt.Sprintf(`{"name":"bench-%05d","transports":[{"name":"mpls","interface":"eth1","cost":10},{"name":"inet","interface":"eth2","cost":20},{"name":"lte","interface":"wwan0","cost":30}]}`, i)
				if err := hb.do("POST", "/sd-wan/v1/sites", body, 201, &site); err != nil {
					errs <- err
					return
				}
				var claim struct {
					Device string `json:"device"`
				}
				if err := hb.do("POST", "/sd-wan/v1/claim", `{"claim_token":"`+site.Claim+`"}`, 200, &claim); err != nil {
					errs <- err
					return
				}
				hb.sites[i] = benchSite{id: site.ID, device: claim.Device}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	var pol struct {
		ID string `json:"id"`
	}
	if err := hb.do("POST", "/sd-wan/v1/policies", `{"name":"bench","type":"steering","content":{"classes":[{"name":"voice","max_latency_ms":150,"max_loss_pct":2,"max_jitter_ms":30},`+
		`{"name":"bulk","max_latency_ms":400,"max_loss_pct":5}],"paths":{"voice":["mpls","inet","lte"],"bulk":["inet","mpls","lte"]},"default_class":"bulk"}}`, 201, &pol); err != nil {
		b.Fatal(err)
	}
	for lo := 0; lo < n; lo += 1000 {
		ids := make([]string, 0, 1000)
		for _, st := range hb.sites[lo:min(lo+1000, n)] {
			ids = append(ids, st.id)
		}
		body, _ := json.Marshal(map[string]any{"version": 1, "sites": ids})
		if err := hb.do("POST", "/sd-wan/v1/policies/"+pol.ID+"/publish", string(body), 202, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("%d sites pre-staged, claimed and on a steering policy in %s", n, time.Since(t0).Round(time.Millisecond))

	// Three reports per site, one second apart on the agents' clock.
	t0 = time.Now()
	before := hb.reports()
	for round := range 3 {
		at := time.Now().Add(time.Duration(round-3) * time.Second)
		for i := range hb.sites {
			if err := hb.report(i, at); err != nil {
				b.Fatal(err)
			}
		}
	}
	for hb.reports()-before < float64(3*n) {
		if time.Since(t0) > 5*time.Minute {
			b.Fatalf("%v of %d reports evaluated after 5 minutes", hb.reports()-before, 3*n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.Logf("%d reports evaluated in %s", 3*n, time.Since(t0).Round(time.Millisecond))
	return hb
}

// do sends a request with the benchmark's token and decodes the answer into out.
func (hb *healthBench) do(method, path, body string, want int, out any) error {
	req, err := http.NewRequest(method, hb.url+path, bytes.NewReader([]byte(body)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+hb.token)
	resp, err := hb.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: HTTP %d: %s", method, path, resp.StatusCode, raw)
	}
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}

// health fetches one site's health and checks it is a live site's.
func (hb *healthBench) health(b *testing.B, id string) {
	var h struct {
		Status     string `json:"status"`
		Transports []struct {
			Samples int `json:"samples"`
		} `json:"transports"`
		SLA []struct{} `json:"sla"`
	}
	if err := hb.do("GET", "/sd-wan/v1/sites/"+id+"/health?window=5m", "", 200, &h); err != nil {
		b.Fatal(err)
	}
	if len(h.Transports) != 3 || h.Transports[0].Samples == 0 || len(h.SLA) != 2 {
		b.Fatalf("health of %s: %+v; want 3 transports with samples and 2 SLA classes", id, h)
	}
}

// report publishes site i's next report, its window ending at at, on the controller's bus.
func (hb *healthBench) report(i int, at time.Time) error {
	st := hb.sites[i]
	seq := hb.seq.Add(1)
	p := make([]byte, 0, 800)
	p = append(p, `{"v":1,"site":"`+st.id+`","device":"`+st.device+`","seq":`...)
	p = strconv.AppendUint(p, seq, 10)
	p = append(p, `,"ts":"`...)
	p = at.UTC().AppendFormat(p, time.RFC3339Nano)
	p = append(p, `","window_ms":1000,"transports":[`...)
	for t, name := range []string{"mpls", "inet", "lte"} {
		if t > 0 {
			p = append(p, ',')
		}
		lat := 10 + float64((i*7+int(seq)*13+t*29)%400)/10 + float64(15*t)
		p = fmt.Appendf(p, `{"name":%q,"method":"icmp","sent":10,"lost":0,"latency_ms":%.3f,"p50_ms":%.3f,"p95_ms":%.3f,"min_ms":%.3f,"max_ms":%.3f,"jitter_ms":1.5,"stddev_ms":1.5,"down":false}`,
			name, lat, lat, lat+3, lat-1.5, lat+4.5)
	}
	p = append(p, "]}"...)
	return hb.s.bus.Publish(telemetry.Topic(st.id, telemetry.KindTelemetry), p, false)
}

// reports is edgewan_ingest_reports_total.
func (hb *healthBench) reports() float64 {
	mfs, err := hb.s.registry.Gather()
	if err != nil {
		panic(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "edgewan_ingest_reports_total" {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}

// ingest publishes rate reports a second, round the sites, in ticks of 10 ms, until the
// returned stop is called (which returns how many it published, in how long). rate 0: nothing.
func (hb *healthBench) ingest(b *testing.B, rate int) (stop func() (int64, time.Duration)) {
	start := time.Now()
	if rate == 0 {
		return func() (int64, time.Duration) { return 0, time.Since(start) }
	}
	ctx, cancel := context.WithCancel(context.Background())
	var sent atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		next := 0
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-tick.C:
				due := int(now.Sub(start).Seconds() * float64(rate))
				next = max(next, due-rate) // never more than a second behind: skip, do not burst
				for ; next < due; next++ {
					if err := hb.report(next%len(hb.sites), now); err != nil {
						b.Error(err)
						return
					}
					sent.Add(1)
				}
			}
		}
	}()
	return func() (int64, time.Duration) { cancel(); <-done; return sent.Load(), time.Since(start) }
}

// healthPct returns the p-th percentile (nearest rank) of sorted latencies.
func healthPct(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[max((len(sorted)*p+99)/100, 1)-1]
}
