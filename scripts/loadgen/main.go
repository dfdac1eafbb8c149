// Command loadgen loads an edgewan controller like a fleet of agents: it pre-stages and claims
// sites through the API, connects one MQTT/TLS agent per site to the embedded broker, publishes
// telemetry at a fixed rate, probes the health endpoint meanwhile, and reads the controller's
// /metrics for what it evaluated, how late (edgewan_ingest_lag_seconds), its CPU and memory.
//
//	go run ./scripts/loadgen --api https://127.0.0.1:8443 --ca data/tls/ca.pem --token $TOKEN \
//	    --metrics http://127.0.0.1:9108/metrics --sites 10000 --duration 60s
//
// With --health-only it only probes the health endpoint, to run beside a publishing loadgen
// (whose own scheduling delays would otherwise be in the probes' latency). scripts/bench-sdwan.sh
// starts a controller and runs both. With --reconnect it runs the controller itself
// (--controller-cmd), kills and restarts it, and measures the fleet reconnecting on the agent's
// own backoff (scripts/bench-reconnect.sh). Every loop is bounded: the run lasts --duration (at most
// 10m) plus the drain, and staging retries a bounded number of times.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"
)

// maxDuration caps --duration: the load loop is bounded whatever the flags say.
const maxDuration = 10 * time.Minute

// options are the flags.
type options struct {
	API, CA, Token, Metrics, MQTT, State, Prefix, Out string
	Sites, Conns, StageWorkers, ConnectWorkers        int
	Rate                                              float64
	Duration, Warmup, Drain                           time.Duration
	PID                                               int
	RSSBase                                           float64
	HealthRequests, HealthWorkers                     int
	HealthWindow                                      string
	Policy, CleanSession, StageOnly, HealthOnly       bool
	TLSResume                                         bool
	// The reconnect scenario.
	Reconnect                    bool
	ControllerCmd, ControllerLog string
	KillSignal                   string
	Outage, ReconnectTimeout     time.Duration
	ProfileDir                   string
	ProfileFor                   time.Duration
	TraceFor                     time.Duration
	GCLimit                      int64
}

func main() {
	log.SetFlags(log.Ltime | log.Lmicroseconds)
	o := options{}
	fs := flag.NewFlagSet("loadgen", flag.ExitOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: go run ./scripts/loadgen --api URL --token T [flags]\n\n"+
			"Pre-stages and claims --sites sites (resumable: --state keeps the credentials), connects --conns\n"+
			"agents over MQTT/TLS (one site each), publishes --rate reports per agent per second for\n"+
			"--duration, probes GET /sd-wan/v1/sites/{id}/health meanwhile, then reports samples/s, loss,\n"+
			"evaluation lag (from the controller's /metrics), CPU and memory per site.\n\nflags:\n")
		fs.PrintDefaults()
	}
	fs.StringVar(&o.API, "api", "https://127.0.0.1:8443", "controller API base URL")
	fs.StringVar(&o.CA, "ca", "", "CA certificate (PEM) of the API; default: the system roots. The broker's CA comes with the claims")
	fs.StringVar(&o.Token, "token", os.Getenv("EDGEWAN_TOKEN"), "API key with sdwan:read,sdwan:write (default $EDGEWAN_TOKEN)")
	fs.StringVar(&o.Metrics, "metrics", "http://127.0.0.1:9108/metrics", "the controller's Prometheus /metrics URL (empty: no lag, CPU or memory figures)")
	fs.StringVar(&o.MQTT, "mqtt", "", "broker address host:port (default: the URL the claims return)")
	fs.StringVar(&o.State, "state", "loadgen-state.json", "state file: the claimed sites and their credentials (re-runs skip staging)")
	fs.StringVar(&o.Prefix, "prefix", "loadgen", "name prefix of the pre-staged sites")
	fs.StringVar(&o.Out, "out", "", "also write the results as a markdown table to this file")
	fs.IntVar(&o.Sites, "sites", 10000, "sites to pre-stage and claim (all are in the controller's memory)")
	fs.IntVar(&o.Conns, "conns", 0, "MQTT connections, one agent (site) each, the first --conns sites; 0 means --sites")
	fs.Float64Var(&o.Rate, "rate", 1, "reports per agent per second (each report: 3 transport samples); 0.05..100")
	fs.DurationVar(&o.Duration, "duration", 60*time.Second, "how long to publish (at most 10m)")
	fs.DurationVar(&o.Warmup, "warmup", 10*time.Second, "first part of --duration not measured (every site's first report changes its status)")
	fs.DurationVar(&o.Drain, "drain", 30*time.Second, "after publishing, how long to wait for the controller to evaluate everything")
	fs.IntVar(&o.StageWorkers, "stage-workers", 8, "concurrent API requests while staging")
	fs.IntVar(&o.ConnectWorkers, "connect-workers", 16, "concurrent MQTT connects")
	fs.IntVar(&o.PID, "pid", 0, "the controller's PID, for VmRSS from /proc (default: process_resident_memory_bytes from --metrics)")
	fs.Float64Var(&o.RSSBase, "rss-base", 0, "the controller's RSS in bytes with no site, for memory per site (default: measured when it has no live site)")
	fs.IntVar(&o.HealthRequests, "health-requests", 2000, "GET .../health requests to random sites, spread over the measured part of the run (0: none)")
	fs.IntVar(&o.HealthWorkers, "health-workers", 4, "concurrent health requests")
	fs.StringVar(&o.HealthWindow, "health-window", "5m", "the health requests' window parameter")
	fs.BoolVar(&o.Policy, "policy", true, "publish a steering policy with two SLA classes to every site (so reports are judged against SLAs)")
	fs.BoolVar(&o.CleanSession, "clean-session", false, "connect with a clean session (real agents keep theirs)")
	fs.BoolVar(&o.TLSResume, "tls-resume", true, "each agent keeps a TLS session cache and resumes its session when it reconnects, as the agent does\n"+
		"(false: a full handshake every time, as agents before 2026-11-24)")
	fs.BoolVar(&o.StageOnly, "stage-only", false, "pre-stage and claim, then exit")
	fs.BoolVar(&o.HealthOnly, "health-only", false, "only probe the health endpoint (sites from --state), from --warmup to --duration: run it beside a loadgen that publishes,\n"+
		"so that the probes' latency does not include the publishing loader's own scheduling delays")
	fs.BoolVar(&o.Reconnect, "reconnect", false, "the reconnect scenario instead of publishing: loadgen runs the controller (--controller-cmd), connects the agents,\n"+
		"stops the controller (--kill-signal), starts it again after --outage, and reports the reconnect rate and times")
	fs.StringVar(&o.ControllerCmd, "controller-cmd", "", "with --reconnect: the controller's command line (split at spaces), e.g. \"bin/controller serve --data-dir d --listen 127.0.0.1:8443 ...\"")
	fs.StringVar(&o.ControllerLog, "controller-log", "loadgen-controller.log", "with --reconnect: the controller's output is appended here")
	fs.StringVar(&o.KillSignal, "kill-signal", "KILL", "with --reconnect: KILL or TERM")
	fs.DurationVar(&o.Outage, "outage", 10*time.Second, "with --reconnect: from stopping the controller to starting it again (long enough and every agent waits at the backoff's cap)")
	fs.DurationVar(&o.ReconnectTimeout, "reconnect-timeout", 2*time.Minute, "with --reconnect: how long after the controller is ready to wait for every agent")
	fs.StringVar(&o.ProfileDir, "profile-dir", "", "with --reconnect: save the restarted controller's CPU profile (from its restart, --profile-for long) and its goroutine,\n"+
		"block and mutex profiles (2 s after ready) here; the controller must run with --pprof (served next to --metrics)")
	fs.DurationVar(&o.ProfileFor, "profile-for", 12*time.Second, "with --profile-dir: the CPU profile's length")
	fs.Int64Var(&o.GCLimit, "gc-limit", 4<<30, "with --reconnect: from the kill until the fleet is back, loadgen's GC runs only when its memory exceeds this many bytes\n"+
		"(its 10,000 agents share one heap, and its collections stalled them all at once; real agents have their own); 0: the GC as usual")
	fs.DurationVar(&o.TraceFor, "trace-for", 0, "with --profile-dir: also save a runtime execution trace (trace.out, for `go tool trace`) of the restarted controller\n"+
		"this long from ready (0: none)")
	_ = fs.Parse(os.Args[1:])
	if err := o.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if _, err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

func (o *options) validate() error {
	var errs []error
	if o.Token == "" {
		errs = append(errs, errors.New("--token (or $EDGEWAN_TOKEN) is required"))
	}
	if o.Sites < 1 || o.Sites > 100_000 {
		errs = append(errs, fmt.Errorf("--sites %d: want 1..100000", o.Sites))
	}
	if o.Conns == 0 {
		o.Conns = o.Sites
	}
	if o.Conns < 0 || o.Conns > o.Sites {
		errs = append(errs, fmt.Errorf("--conns %d: want 1..--sites (one agent per site: the broker lets an agent publish only for its own site)", o.Conns))
	}
	if o.Rate < 0.05 || o.Rate > 100 {
		errs = append(errs, fmt.Errorf("--rate %v: want 0.05..100 reports per agent per second", o.Rate))
	}
	if o.Duration <= 0 || o.Duration > maxDuration {
		errs = append(errs, fmt.Errorf("--duration %s: want up to %s", o.Duration, maxDuration))
	}
	if o.Warmup < 0 || o.Warmup >= o.Duration {
		errs = append(errs, fmt.Errorf("--warmup %s: want less than --duration", o.Warmup))
	}
	if o.Drain < 0 || o.Drain > 5*time.Minute {
		errs = append(errs, fmt.Errorf("--drain %s: want up to 5m", o.Drain))
	}
	if o.StageWorkers < 1 || o.ConnectWorkers < 1 || o.HealthWorkers < 1 {
		errs = append(errs, errors.New("worker counts must be at least 1"))
	}
	if o.HealthRequests < 0 || o.HealthRequests > 1_000_000 {
		errs = append(errs, fmt.Errorf("--health-requests %d: want 0..1000000", o.HealthRequests))
	}
	if o.Reconnect {
		if len(strings.Fields(o.ControllerCmd)) == 0 {
			errs = append(errs, errors.New("--reconnect needs --controller-cmd: loadgen stops and restarts the controller itself"))
		}
		if o.KillSignal != "KILL" && o.KillSignal != "TERM" {
			errs = append(errs, fmt.Errorf("--kill-signal %q: want KILL or TERM", o.KillSignal))
		}
		if o.Outage < 0 || o.Outage > 5*time.Minute {
			errs = append(errs, fmt.Errorf("--outage %s: want up to 5m", o.Outage))
		}
		if o.ReconnectTimeout <= 0 || o.ReconnectTimeout > 10*time.Minute {
			errs = append(errs, fmt.Errorf("--reconnect-timeout %s: want up to 10m", o.ReconnectTimeout))
		}
		if o.HealthOnly || o.StageOnly {
			errs = append(errs, errors.New("--reconnect goes with neither --health-only nor --stage-only"))
		}
		if o.ProfileDir != "" && o.Metrics == "" {
			errs = append(errs, errors.New("--profile-dir needs --metrics: the profiles are served next to it"))
		}
		if o.ProfileFor < time.Second || o.ProfileFor > 5*time.Minute {
			errs = append(errs, fmt.Errorf("--profile-for %s: want 1s..5m", o.ProfileFor))
		}
		if o.GCLimit < 0 {
			errs = append(errs, fmt.Errorf("--gc-limit %d: want 0 or more bytes", o.GCLimit))
		}
		if o.TraceFor != 0 && (o.ProfileDir == "" || o.TraceFor < time.Second || o.TraceFor > time.Minute) {
			errs = append(errs, fmt.Errorf("--trace-for %s: want 1s..1m, with --profile-dir", o.TraceFor))
		}
	} else if o.ProfileDir != "" {
		errs = append(errs, errors.New("--profile-dir is only for --reconnect"))
	} else if o.ControllerCmd != "" {
		errs = append(errs, errors.New("--controller-cmd is only for --reconnect"))
	}
	return errors.Join(errs...)
}

// results is everything the run measured.
type results struct {
	o                                options
	staged                           time.Duration // staging this run (0: from the state)
	connectTime                      time.Duration
	connected, connectErrs           int64
	measured                         time.Duration
	sent, acked, measureSent, errs   int64
	disconnects, late, fromBroker    int64
	processed                        float64
	rejected                         map[string]float64
	lag, lagAll, httpServer          []bucket
	lagMean                          float64
	ackP50, ackP99                   time.Duration
	ctlCores, genCores               float64
	machineBusy, machineSteal        float64
	rssBase, rssLoaded, rssConnected float64
	rssEnd, heapEnd, heapBase        float64
	goroutines, events, switches     float64
	hiccup50, hiccup99, hiccupMax    time.Duration
	sitesLive                        float64
	health                           []time.Duration
	healthErrs                       int64
	healthFirstErr                   string
	reconnect                        *reconnectResults
}

func run(ctx context.Context, o options) (*results, error) {
	// With --reconnect loadgen runs the controller, which writes its CA (--ca) when it first starts.
	if !o.HealthOnly {
		if err := raiseFileLimit(o.Conns + 256); err != nil { // a descriptor per agent
			return nil, err
		}
	}
	var ctl *controllerProc
	if o.Reconnect {
		ctl = &controllerProc{args: strings.Fields(o.ControllerCmd), logPath: o.ControllerLog}
		if err := ctl.start(); err != nil {
			return nil, err
		}
		defer ctl.stop(syscall.SIGTERM)
		if err := ctl.waitFile(ctx, o.CA, time.Minute); err != nil {
			return nil, err
		}
	}
	apiTLS := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.CA != "" {
		pem, err := os.ReadFile(o.CA)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--ca %s: no certificate", o.CA)
		}
		apiTLS.RootCAs = pool
	}
	hc := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{TLSClientConfig: apiTLS,
		MaxIdleConnsPerHost: max(o.StageWorkers, o.HealthWorkers) + 2, IdleConnTimeout: 90 * time.Second}}
	mc := &http.Client{Timeout: 30 * time.Second}
	a := &api{base: strings.TrimRight(o.API, "/"), token: o.Token, hc: hc}
	res := &results{o: o, rssBase: o.RSSBase}
	if ctl != nil {
		if _, err := ctl.waitReady(ctx, hc, a.base, readyTimeout); err != nil {
			return nil, err
		}
	}

	st, err := loadState(o.State)
	if err != nil {
		return nil, err
	}
	if st.API != "" && st.API != a.base {
		log.Printf("state %s was made with %s; using its sites with %s (a controller on the same data dir)", o.State, st.API, a.base)
	}
	st.API = a.base

	// Memory before: an empty controller is the baseline of memory per site.
	if s0, err := metricsOrNil(ctx, mc, o.Metrics); s0 != nil {
		if s0.Sites == 0 && res.rssBase == 0 {
			res.rssBase = rss(o.PID, s0)
			res.heapBase = s0.HeapInuse
		}
	} else if err != nil {
		log.Printf("metrics: %v", err)
	}

	if o.HealthOnly {
		return nil, healthOnly(ctx, o, a, mc, st)
	}

	stg := &stager{a: a, st: st, path: o.State, workers: o.StageWorkers, prefix: o.Prefix, dirty: true}
	t0 := time.Now()
	staged := false
	for _, ss := range st.Sites[:min(len(st.Sites), o.Sites)] {
		staged = staged || !ss.claimed()
	}
	staged = staged || len(st.Sites) < o.Sites
	if err := stg.stage(ctx, o.Sites); err != nil {
		return nil, err
	}
	if o.Policy {
		if err := stg.publishPolicy(ctx, o.Sites); err != nil {
			return nil, err
		}
	}
	if staged {
		res.staged = time.Since(t0)
	}
	if o.StageOnly {
		return res, nil
	}
	sites := st.Sites[:o.Sites]
	s1, _ := metricsOrNil(ctx, mc, o.Metrics)
	if s1 != nil {
		res.rssLoaded = rss(o.PID, s1)
	}

	// Agents.
	brokerAddr := o.MQTT
	if brokerAddr == "" {
		u, err := url.Parse(st.MQTTURL)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("the claims' broker URL %q: give --mqtt host:port", st.MQTTURL)
		}
		brokerAddr = u.Host
	}
	host, _, _ := strings.Cut(brokerAddr, ":")
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(st.CAPEM)) {
		return nil, errors.New("the claims' CA PEM holds no certificate")
	}
	mqttTLS := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool, ServerName: host}
	cnt := &counters{}
	agents := make([]*agent, o.Conns)
	for i := range agents {
		tc := mqttTLS
		if o.TLSResume { // as the agent (agent/engine): each its own session cache
			tc = mqttTLS.Clone()
			tc.ClientSessionCache = tls.NewLRUClientSessionCache(1)
		}
		agents[i] = &agent{ss: sites[i], index: i, cnt: cnt, tc: tc}
	}
	defer func() {
		var wg sync.WaitGroup
		for _, ag := range agents {
			wg.Add(1)
			go func() { defer wg.Done(); ag.close() }()
		}
		wg.Wait()
	}()
	log.Printf("connecting %d agents to %s (%d at a time)", len(agents), brokerAddr, o.ConnectWorkers)
	t0 = time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range o.ConnectWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				k := int(next.Add(1)) - 1
				if k >= len(agents) {
					return
				}
				cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
				err := agents[k].connect(cctx, brokerAddr, o.CleanSession)
				cancel()
				if err != nil {
					if cnt.connectErrs.Add(1) <= 5 {
						log.Printf("agent %s: %v", agents[k].ss.Name, err)
					}
					continue
				}
				if n := cnt.connected.Add(1); n%1000 == 0 {
					log.Printf("connected %d agents (%.0f/s)", n, float64(n)/time.Since(t0).Seconds())
				}
			}
		}()
	}
	wg.Wait()
	res.connectTime, res.connected, res.connectErrs = time.Since(t0), cnt.connected.Load(), cnt.connectErrs.Load()
	log.Printf("connected %d agents in %s, %d failed", res.connected, res.connectTime.Round(time.Millisecond), res.connectErrs)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if res.connected == 0 {
		return nil, errors.New("no agent connected")
	}
	sleep(ctx, 2*time.Second) // let the retained policies and decisions reach the agents
	s2, _ := metricsOrNil(ctx, mc, o.Metrics)
	if s2 != nil {
		res.rssConnected = rss(o.PID, s2)
	}
	if o.Reconnect {
		rr, err := reconnectScenario(ctx, o, ctl, hc, agents, brokerAddr)
		if err != nil {
			return nil, err
		}
		res.reconnect = rr
		rs := reconnectRows(rr)
		printRows(os.Stdout, rs)
		if o.Out != "" {
			return res, writeMarkdown(o.Out, rs)
		}
		return res, nil
	}

	// Publish.
	period := time.Duration(float64(time.Second) / o.Rate)
	start := time.Now().Add(500 * time.Millisecond).Truncate(100 * time.Millisecond)
	stopAt := start.Add(o.Duration)
	measureFrom := start.Add(o.Warmup)
	seq0 := uint64(time.Now().UnixMilli()) // Seq only grows, also across runs (the controller drops a Seq it saw)
	log.Printf("publishing: %d agents x %.3g reports/s = %.0f reports/s (%.0f samples/s) for %s, measuring after %s",
		res.connected, o.Rate, float64(res.connected)*o.Rate, 3*float64(res.connected)*o.Rate, o.Duration, o.Warmup)
	var pubWG sync.WaitGroup
	for i, ag := range agents {
		if ag.c == nil {
			continue
		}
		phase := time.Duration(int64(period) * int64(i) / int64(len(agents)))
		pubWG.Add(1)
		go func() {
			defer pubWG.Done()
			ag.run(ctx, start, stopAt, period, phase, seq0)
		}()
	}

	// The measured window: health probes, CPU.
	sleep(ctx, time.Until(measureFrom))
	sA, _ := metricsOrNil(ctx, mc, o.Metrics)
	cpuA, tA := selfCPU(), time.Now()
	mBusyA, mTotalA, mStealA := machineCPU()
	cnt.measuring.Store(true)
	hiccups := &histogram{}
	hctx, stopHiccups := context.WithDeadline(ctx, stopAt)
	defer stopHiccups()
	go hiccupMeter(hctx, hiccups)
	var hl latencies
	var healthErrs atomic.Int64
	var healthFirst atomic.Value
	healthDone := make(chan struct{})
	go func() {
		defer close(healthDone)
		probeHealth(ctx, a, sites, o, time.Until(stopAt), &hl, &healthErrs, &healthFirst)
	}()
	progress := time.NewTicker(10 * time.Second)
	for waiting := true; waiting; {
		select {
		case <-ctx.Done():
			waiting = false
		case <-progress.C:
			log.Printf("sent %d, acked %d, errors %d, late %d", cnt.sent.Load(), cnt.acked.Load(), cnt.publishErrs.Load(), cnt.late.Load())
		case <-time.After(time.Until(stopAt)):
			waiting = false
		}
	}
	progress.Stop()
	pubWG.Wait()
	cnt.measuring.Store(false)
	res.measured = stopAt.Sub(tA)
	res.genCores = (selfCPU() - cpuA).Seconds() / time.Since(tA).Seconds()
	if mBusyB, mTotalB, mStealB := machineCPU(); mTotalB > mTotalA {
		cores := float64(runtime.NumCPU())
		res.machineBusy = cores * (mBusyB - mBusyA) / (mTotalB - mTotalA)
		res.machineSteal = cores * (mStealB - mStealA) / (mTotalB - mTotalA)
	}
	sB, _ := metricsOrNil(ctx, mc, o.Metrics)
	<-healthDone
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}

	// Drain: wait for the PUBACKs, then for the controller to evaluate all it acknowledged.
	deadline := time.Now().Add(o.Drain)
	for cnt.acked.Load() < cnt.sent.Load() && time.Now().Before(deadline) {
		sleep(ctx, 100*time.Millisecond)
	}
	var sC *scrape
	for {
		sC, _ = metricsOrNil(ctx, mc, o.Metrics)
		if sC == nil || s2 == nil || sC.Reports-s2.Reports >= float64(cnt.acked.Load()) || !time.Now().Before(deadline) || ctx.Err() != nil {
			break
		}
		sleep(ctx, 200*time.Millisecond)
	}

	res.sent, res.acked, res.measureSent, res.errs = cnt.sent.Load(), cnt.acked.Load(), cnt.measureSent.Load(), cnt.publishErrs.Load()
	res.disconnects, res.late, res.fromBroker = cnt.disconnects.Load(), cnt.late.Load(), cnt.fromBroker.Load()
	res.ackP50, _ = cnt.ackRTT.quantile(0.50)
	res.ackP99, _ = cnt.ackRTT.quantile(0.99)
	res.hiccup50, _ = hiccups.quantile(0.5)
	res.hiccup99, _ = hiccups.quantile(0.99)
	res.hiccupMax, _ = hiccups.quantile(1)
	hl.mu.Lock()
	res.health = slices.Clone(hl.d)
	hl.mu.Unlock()
	res.healthErrs = healthErrs.Load()
	if v, ok := healthFirst.Load().(string); ok {
		res.healthFirstErr = v
	}
	if sA != nil && sB != nil && sC != nil && s2 != nil {
		res.processed = sC.Reports - s2.Reports
		res.rejected = map[string]float64{}
		for k, v := range sC.Rejected {
			if d := v - s2.Rejected[k]; d > 0 {
				res.rejected[k] = d
			}
		}
		res.lag = histDelta(sA.Lag, sC.Lag)
		res.lagAll = histDelta(s2.Lag, sC.Lag)
		res.httpServer = histDelta(sA.HTTP, sB.HTTP)
		if n := sC.LagCount - sA.LagCount; n > 0 {
			res.lagMean = (sC.LagSum - sA.LagSum) / n
		}
		res.ctlCores = (sB.CPUSeconds - sA.CPUSeconds) / sB.At.Sub(sA.At).Seconds()
		res.rssEnd, res.heapEnd, res.goroutines, res.sitesLive = rss(o.PID, sB), sB.HeapInuse, sB.Goroutines, sB.Sites
		res.events, res.switches = sC.Events-sA.Events, sC.Switches-sA.Switches
	}
	rs := rows(res)
	printRows(os.Stdout, rs)
	if o.Out != "" {
		return res, writeMarkdown(o.Out, rs)
	}
	return res, nil
}

func metricsOrNil(ctx context.Context, hc *http.Client, u string) (*scrape, error) {
	if u == "" {
		return nil, nil
	}
	return getMetrics(ctx, hc, u)
}

// rss is the controller's resident memory: from /proc with --pid, else from its metrics.
func rss(pid int, s *scrape) float64 {
	if pid > 0 {
		if v, err := procRSS(pid); err == nil {
			return v
		}
	}
	return s.RSS
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// probeHealth sends o.HealthRequests requests to random sites' health, spread evenly over d,
// from o.HealthWorkers workers, each measured from sending the request to the end of the body.
// Requests that start over a second behind schedule are reported (the workers were all busy).
func probeHealth(ctx context.Context, a *api, sites []siteState, o options, d time.Duration, hl *latencies, errs *atomic.Int64, first *atomic.Value) {
	n := o.HealthRequests
	if n == 0 || d <= 0 {
		return
	}
	interval := d / time.Duration(n)
	jobs := make(chan time.Time, n)
	var wg sync.WaitGroup
	for w := range o.HealthWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
			for due := range jobs {
				ss := sites[r.IntN(len(sites))]
				t0 := time.Now()
				err := healthOnce(ctx, a, ss.ID, o.HealthWindow)
				if err != nil {
					errs.Add(1)
					first.CompareAndSwap(nil, err.Error())
					continue
				}
				hl.add(time.Since(t0))
				if late := t0.Sub(due); late > time.Second {
					first.CompareAndSwap(nil, fmt.Sprintf("health requests fell %s behind schedule (workers busy)", late.Round(time.Millisecond)))
				}
			}
		}()
	}
	start := time.Now()
	for i := 0; i < n && ctx.Err() == nil; i++ {
		due := start.Add(time.Duration(i) * interval)
		sleep(ctx, time.Until(due))
		jobs <- due
	}
	close(jobs)
	wg.Wait()
}

// healthOnly probes the health endpoint from --warmup to --duration and reports only that.
func healthOnly(ctx context.Context, o options, a *api, mc *http.Client, st *state) error {
	if len(st.Sites) < o.Sites || !st.Sites[o.Sites-1].claimed() {
		return fmt.Errorf("--health-only: the state %s has fewer than %d claimed sites; stage them first", o.State, o.Sites)
	}
	start := time.Now()
	sleep(ctx, o.Warmup)
	res := &results{o: o}
	sA, _ := metricsOrNil(ctx, mc, o.Metrics)
	hiccups := &histogram{}
	hctx, stopHiccups := context.WithTimeout(ctx, o.Duration-o.Warmup)
	defer stopHiccups()
	go hiccupMeter(hctx, hiccups)
	var hl latencies
	var errs atomic.Int64
	var first atomic.Value
	probeHealth(ctx, a, st.Sites[:o.Sites], o, time.Until(start.Add(o.Duration)), &hl, &errs, &first)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	sB, _ := metricsOrNil(ctx, mc, o.Metrics)
	res.health, res.healthErrs = hl.d, errs.Load()
	if v, ok := first.Load().(string); ok {
		res.healthFirstErr = v
	}
	if sA != nil && sB != nil {
		res.httpServer = histDelta(sA.HTTP, sB.HTTP)
	}
	res.hiccup50, _ = hiccups.quantile(0.5)
	res.hiccup99, _ = hiccups.quantile(0.99)
	res.hiccupMax, _ = hiccups.quantile(1)
	rs := healthRows(res)
	rs = append(rs, [2]string{"hiccups p50 / p99 / max (1 ms sleeps in the health prober)", fmt.Sprintf("%.2f ms / %.2f ms / %.2f ms",
		float64(res.hiccup50)/1e6, float64(res.hiccup99)/1e6, float64(res.hiccupMax)/1e6)})
	printRows(os.Stdout, rs)
	if o.Out != "" {
		return writeMarkdown(o.Out, rs)
	}
	return nil
}

// hiccupMeter sleeps 1 ms at a time and records how much longer each sleep took: on a shared
// machine, how long a runnable goroutine waits for a CPU. A lag or latency tail no longer than
// these hiccups is the machine's, not the controller's.
func hiccupMeter(ctx context.Context, h *histogram) {
	for ctx.Err() == nil {
		t0 := time.Now()
		time.Sleep(time.Millisecond)
		h.record(time.Since(t0) - time.Millisecond)
	}
}

func healthOnce(ctx context.Context, a *api, site, window string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base+"/sd-wan/v1/sites/"+site+"/health?window="+url.QueryEscape(window), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	resp, err := a.hc.Do(req)
	if err != nil {
		return err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("health of %s: HTTP %d: %.200s", site, resp.StatusCode, body)
	}
	return nil
}

func pct(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	k := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[max(k, 0)]
}

// rows are the results as label/value pairs, for the terminal and for markdown.
func rows(r *results) [][2]string {
	o := r.o
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/1e6) }
	mb := func(b float64) string { return fmt.Sprintf("%.0f MiB", b/(1<<20)) }
	var out [][2]string
	add := func(k, v string) { out = append(out, [2]string{k, v}) }
	add("sites in the controller (live)", fmt.Sprintf("%d staged+claimed (%.0f live)", o.Sites, r.sitesLive))
	if r.staged > 0 {
		add("staging (create + claim via API)", fmt.Sprintf("%s (%.0f sites/s)", r.staged.Round(time.Millisecond), float64(o.Sites)/r.staged.Seconds()))
	}
	add("MQTT/TLS agent connections", fmt.Sprintf("%d connected, %d failed, in %s (%.0f/s)", r.connected, r.connectErrs, r.connectTime.Round(time.Millisecond), float64(r.connected)/r.connectTime.Seconds()))
	target := float64(r.connected) * o.Rate
	add("offered load", fmt.Sprintf("%.0f reports/s = %.0f samples/s (%d agents x %.3g/s x 3 transports)", target, 3*target, r.connected, o.Rate))
	rate := float64(r.measureSent) / r.measured.Seconds()
	add("achieved (published in the measured window)", fmt.Sprintf("%.0f reports/s = %.0f samples/s over %s", rate, 3*rate, r.measured.Round(time.Millisecond)))
	add("publish errors / disconnects / late skips", fmt.Sprintf("%d / %d / %d", r.errs, r.disconnects, r.late))
	add("sent / acknowledged / processed (reports)", fmt.Sprintf("%d / %d / %.0f (loss %.0f)", r.sent, r.acked, r.processed, float64(r.acked)-r.processed))
	if len(r.rejected) > 0 {
		add("rejected by the controller", fmt.Sprint(r.rejected))
	}
	add("SD-WAN events stored / path switches (measured window)", fmt.Sprintf("%.0f / %.0f", r.events, r.switches))
	add("PUBACK round trip p50 / p99", fmt.Sprintf("%s / %s", ms(r.ackP50), ms(r.ackP99)))
	if len(r.lag) > 0 {
		add("evaluation lag p50 / p99 (measured window)", fmt.Sprintf("%.3f s / %.3f s (mean %.1f ms; %.2f%% within 1 s)",
			histogramQuantile(0.5, r.lag), histogramQuantile(0.99, r.lag), 1000*r.lagMean, 100*shareWithin(1, r.lag)))
		add("evaluation lag p99 (whole run, with warm-up)", fmt.Sprintf("%.3f s (%.2f%% within 1 s)", histogramQuantile(0.99, r.lagAll), 100*shareWithin(1, r.lagAll)))
	}
	out = append(out, healthRows(r)...)
	add("machine hiccups p50 / p99 / max (1 ms sleeps in the load generator)", fmt.Sprintf("%s / %s / %s", ms(r.hiccup50), ms(r.hiccup99), ms(r.hiccupMax)))
	if r.ctlCores > 0 {
		add("CPU: controller / load generator / whole machine (of its cores)", fmt.Sprintf("%.2f / %.2f / %.2f of %d cores (steal %.2f)",
			r.ctlCores, r.genCores, r.machineBusy, runtime.NumCPU(), r.machineSteal))
		if rate > 0 {
			add("controller CPU per report", fmt.Sprintf("%.0f µs (%.2f cores per 10k reports/s)", 1e6*r.ctlCores/rate, 1e4*r.ctlCores/rate))
		}
	}
	if r.rssEnd > 0 {
		add("controller RSS: empty / sites loaded / agents connected / end", fmt.Sprintf("%s / %s / %s / %s", mb(r.rssBase), mb(r.rssLoaded), mb(r.rssConnected), mb(r.rssEnd)))
		if r.rssBase > 0 {
			add("memory per site (RSS end - empty) / sites", fmt.Sprintf("%.1f KiB (heap in use %.1f KiB)", (r.rssEnd-r.rssBase)/float64(o.Sites)/1024, (r.heapEnd-r.heapBase)/float64(o.Sites)/1024))
		} else {
			add("memory per site (RSS end / sites, gross)", fmt.Sprintf("%.1f KiB", r.rssEnd/float64(o.Sites)/1024))
		}
		if r.rssLoaded > 0 && r.connected > 0 {
			add("of which per connected agent (broker session)", fmt.Sprintf("%.1f KiB", (r.rssConnected-r.rssLoaded)/float64(r.connected)/1024))
		}
		add("controller goroutines", fmt.Sprintf("%.0f", r.goroutines))
	}
	return out
}

// healthRows are the health probes' figures: as the prober saw them, and the controller's own
// handling time from its edgewan_http_request_duration_seconds histogram.
func healthRows(r *results) [][2]string {
	var out [][2]string
	if len(r.health) > 0 {
		h := slices.Clone(r.health)
		slices.Sort(h)
		ms := func(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/1e6) }
		out = append(out, [2]string{fmt.Sprintf("health p50 / p99 / max (%d requests, window=%s)", len(h), r.o.HealthWindow),
			fmt.Sprintf("%s / %s / %s (%d errors)", ms(pct(h, 50)), ms(pct(h, 99)), ms(h[len(h)-1]), r.healthErrs)})
	}
	if len(r.httpServer) > 0 && r.httpServer[len(r.httpServer)-1].Count > 0 {
		out = append(out, [2]string{"of which in the controller's handler p50 / p99 (its histogram)", fmt.Sprintf("%.2f ms / %.2f ms (%.1f%% within 4.5 ms, %.1f%% within 13.5 ms)",
			1000*histogramQuantile(0.5, r.httpServer), 1000*histogramQuantile(0.99, r.httpServer), 100*shareWithin(0.0045, r.httpServer), 100*shareWithin(0.0135, r.httpServer))})
	}
	if r.healthFirstErr != "" {
		out = append(out, [2]string{"first health error", r.healthFirstErr})
	}
	return out
}

func printRows(w io.Writer, rs [][2]string) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw)
	for _, row := range rs {
		fmt.Fprintf(tw, "%s\t%s\n", row[0], row[1])
	}
	_ = tw.Flush()
}

func writeMarkdown(path string, rs [][2]string) error {
	var b strings.Builder
	b.WriteString("| figure | value |\n|---|---|\n")
	for _, row := range rs {
		fmt.Fprintf(&b, "| %s | %s |\n", row[0], strings.ReplaceAll(row[1], "|", "\\|"))
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
