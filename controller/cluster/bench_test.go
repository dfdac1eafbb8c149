package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/edgewan/edgewan/agent/claim"
	"github.com/edgewan/edgewan/controller/mqtt"
	"github.com/edgewan/edgewan/controller/mqtt/natstest"
	"github.com/edgewan/edgewan/telemetry"
)

// BenchmarkClusterCPU measures the controller processes' CPU (utime + stime from
// /proc/<pid>/stat) per 1,000 samples/s of telemetry sent through the NATS cluster, with 1, 2
// and 3 controllers sharing the load (scripts/bench-cluster.sh; docs/benchmarks.md). The
// figure must stay flat as controllers are added: a report's work never crosses controllers.
// EDGEWAN_BENCH_SITES sites (default 300) report once a second with 3 transports each (900
// samples/s), for EDGEWAN_BENCH_SECONDS (default 30) per step. Run it with -benchtime 1x.
//
// Diagnostic options (docs/benchmarks.md, "the 1 -> 3 rise"):
//   - EDGEWAN_BENCH_EQUAL=1: equal load per controller instead of the same total: with n
//     controllers only the first n/3 of the sites report, so 1 controller takes R and 3 take R
//     each (3R in all). Whether a controller's CPU per report changes when it has peers is the
//     "no per-report chatter" question asked directly; compared with the default run's 1-controller
//     step (one process at 3R) it separates the cost of having peers from a busier process
//     amortising its wake-ups.
//   - EDGEWAN_BENCH_GOMAXPROCS=n: the controllers run with GOMAXPROCS=n (the Go runtime's idle
//     Ps spin looking for work; three processes with 2 Ps each share 2 cores with NATS here).
//   - EDGEWAN_BENCH_READ_COALESCE=d: the controllers run with --nats-read-coalesce d (0: off;
//     unset: the default), for A/B runs (docs/benchmarks.md, "Read coalescing").
func BenchmarkClusterCPU(b *testing.B) {
	sites, seconds := envInt("EDGEWAN_BENCH_SITES", 300), envInt("EDGEWAN_BENCH_SECONDS", 30)
	equal := os.Getenv("EDGEWAN_BENCH_EQUAL") == "1"
	so := newScaledOut(b, 3*time.Second)
	so.env = append(so.env, "EDGEWAN_RATE_LIMIT=0") // the set-up creates and claims sites in a burst
	if n := envInt("EDGEWAN_BENCH_GOMAXPROCS", 0); n > 0 {
		so.env = append(so.env, "GOMAXPROCS="+strconv.Itoa(n))
	}
	if v := os.Getenv("EDGEWAN_BENCH_READ_COALESCE"); v != "" {
		so.env = append(so.env, "EDGEWAN_NATS_READ_COALESCE="+v)
	}
	ids := []string{"ctl-1", "ctl-2", "ctl-3"}
	// EDGEWAN_BENCH_PROFILE=dir: each controller serves --pprof and a CPU profile of each load
	// window goes to dir/{n}ctl-{id}.pprof (diagnosis; the profiling itself costs CPU).
	profDir := os.Getenv("EDGEWAN_BENCH_PROFILE")
	pprofAddrs := map[string]string{}
	start := func(id string) *serveProc {
		env := so.env
		if profDir != "" {
			pprofAddrs[id] = freeAddr(b)
			env = append(append([]string{}, env...), "EDGEWAN_PPROF=true", "EDGEWAN_METRICS_LISTEN="+pprofAddrs[id])
		}
		return startServe(b, so.bin, env, id)
	}
	procs := []*serveProc{start(ids[0])}
	waitFor(b, 60*time.Second, "ctl-1 holds the 16 partitions", func() bool { return leasesHeld(so.db, ids[0]) == 16 })
	token := so.apiKey(b, procs[0].dataDir)

	var creds []*claim.Credentials
	for i := range sites {
		var site struct {
			ID    string `json:"id"`
			Claim string `json:"claim_token"`
		}
		var trs []map[string]any
		for _, n := range []string{"mpls", "inet", "lte"} {
			trs = append(trs, map[string]any{"name": n, "kind": "broadband", "interface": "eth-" + n, "gateway": "198.18.1.1", "probe_targets": []string{"198.18.100.1"}})
		}
		procs[0].api(b, token, "POST", "/sd-wan/v1/sites", map[string]any{"name": fmt.Sprintf("Bench %d", i), "role": "branch", "transports": trs}, &site, 201)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		c, err := claim.Claim(ctx, procs[0].hc, procs[0].base, claim.Request{ClaimToken: site.Claim, Hostname: fmt.Sprintf("bench-%d", i)})
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		creds = append(creds, c)
	}

	// The load: 8 MQTT connections (spread over the nodes) publish every site's report once a
	// second at QoS 1, as agents would through NATS.
	var samples atomic.Int64
	var paused atomic.Bool  // the idle part of a step
	var active atomic.Int64 // the sites that report: all, or n/3 of them with EDGEWAN_BENCH_EQUAL
	active.Store(int64(len(creds)))
	if equal { // the others never report before their step: they go quiet in no window
		active.Store(int64(len(creds) / 3))
	}
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { stop(); wg.Wait() }()
	const conns = 8
	for c := range conns {
		o := paho.NewClientOptions().AddBroker(so.nc.MQTTURLs[c%3]).SetClientID(fmt.Sprintf("bench-load-%d", c)).
			SetUsername(natstest.User).SetPassword(natstest.Password).SetCleanSession(true).SetAutoReconnect(true)
		cl := paho.NewClient(o)
		if tok := cl.Connect(); !tok.WaitTimeout(20*time.Second) || tok.Error() != nil {
			b.Fatalf("load connection %d: %v", c, tok.Error())
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cl.Disconnect(100)
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for seq := uint64(1); ; seq++ {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				if paused.Load() {
					continue
				}
				var toks []paho.Token
				for i := c; i < int(active.Load()); i += conns {
					r := telemetry.Report{V: telemetry.SchemaVersion, Site: creds[i].Site, Device: creds[i].Device, Seq: seq, Time: time.Now().UTC(), WindowMs: 1000}
					for _, n := range []string{"mpls", "inet", "lte"} {
						r.Transport = append(r.Transport, telemetry.TransportWindow{Name: n, Method: "icmp", Sent: 5, LatencyMs: 20, P50Ms: 20, P95Ms: 25, MinMs: 18, MaxMs: 30, JitterMs: 1, StdDevMs: 1})
					}
					p, _ := json.Marshal(r)
					toks = append(toks, cl.Publish(telemetry.Topic(r.Site, telemetry.KindTelemetry), 1, false, p))
				}
				for _, tok := range toks {
					if tok.WaitTimeout(10*time.Second) && tok.Error() == nil {
						samples.Add(3)
					}
				}
			}
		}()
	}

	b.ResetTimer()
	for n := 1; n <= 3; n++ {
		if n > 1 {
			procs = append(procs, start(ids[n-1]))
		}
		waitFor(b, 60*time.Second, fmt.Sprintf("%d controllers share the partitions", n), func() bool { return shared(so.db, ids[:n]) })
		if equal {
			active.Store(int64(len(creds) * n / 3))
		}
		// Settle (pacing a benchmark): a controller's start-up work must not be measured as a
		// cost of the load. A newcomer publishes its sites' policies at its takeovers (it
		// published every site's at start until 2026-11-24: 1,000 retained QoS 1 publishes
		// one after the other at 1,000 sites, 5-15 s on a loaded box) and checkpoints every
		// second for 2 FlushEvery after its takeovers; with 5 s here that landed in the
		// windows and made the figure rise with N.
		time.Sleep(20 * time.Second)
		// Idle first (what the controllers cost with no telemetry: leases, timers, consumers),
		// then under load.
		paused.Store(true)
		// The last round in flight, and the checkpoint (every 5 s: InfluxDB flush, figures,
		// watermarks) of what was handled before the pause: that is a cost of the load, not of
		// idling.
		time.Sleep(7 * time.Second)
		idle0, ti := cpuSeconds(b, procs), time.Now()
		profs := profileAll(b, profDir, pprofAddrs, procs, seconds/2-1, fmt.Sprintf("%dctl-idle", n))
		time.Sleep(time.Duration(seconds) * time.Second / 2)
		profs.Wait()
		idle1, iel := cpuSeconds(b, procs), time.Since(ti)
		paused.Store(false)
		time.Sleep(2 * time.Second)
		moves0, warns0 := logCount(procs, "cluster: partition acquired"), logCount(procs, "level=WARN")
		logAt := make([]int, len(procs)) // where each log stood when the window began
		for i, p := range procs {
			logAt[i] = len(p.log.String())
		}
		cpu0, s0, t0 := cpuSeconds(b, procs), samples.Load(), time.Now()
		profs = profileAll(b, profDir, pprofAddrs, procs, seconds-2, fmt.Sprintf("%dctl-load", n))
		time.Sleep(time.Duration(seconds) * time.Second)
		profs.Wait()
		cpu1, s1, el := cpuSeconds(b, procs), samples.Load(), time.Since(t0)
		rate := float64(s1-s0) / el.Seconds()
		var total, idle float64
		var each []string
		for i := range procs {
			total += cpu1[i] - cpu0[i]
			idle += idle1[i] - idle0[i]
			each = append(each, fmt.Sprintf("%s %.1f%%", procs[i].id, 100*(cpu1[i]-cpu0[i])/el.Seconds()))
		}
		perK := 1000 * total / el.Seconds() / (rate / 1000)                      // CPU ms per second, per 1,000 samples/s
		netK := 1000 * (total/el.Seconds() - idle/iel.Seconds()) / (rate / 1000) // the same above the idle cost
		backlog := pending(b, so.nc)
		// Partitions that moved, and warnings, during the load window: a window with either
		// measured a takeover (consumer, status replay, policies), not the steady state.
		moves, warns := logCount(procs, "cluster: partition acquired")-moves0, logCount(procs, "level=WARN")-warns0
		b.Logf("%d controller(s)%s: %.0f samples/s offered, controllers' CPU %.1f%% of a core (%s), idle %.1f%%; %.1f CPU-ms per s per 1,000 samples/s, %.1f above idle; stream backlog at the end %d messages (handled, not yet acked included); %d partitions moved, %d warnings logged in the window",
			n, benchMode(equal), rate, 100*total/el.Seconds(), strings.Join(each, ", "), 100*idle/iel.Seconds(), perK, netK, backlog, moves, warns)
		if warns > 0 { // what disturbed the window (up to 5 lines per controller)
			for i, p := range procs {
				k := 0
				for _, line := range strings.Split(p.log.String()[logAt[i]:], "\n") {
					if strings.Contains(line, "level=WARN") && k < 5 {
						b.Logf("  %s: %s", p.id, line)
						k++
					}
				}
			}
		}
		b.ReportMetric(netK, fmt.Sprintf("net-cpu-ms/s/1k-samples/s@%dctl", n))
		b.ReportMetric(perK, fmt.Sprintf("cpu-ms/s/1k-samples/s@%dctl", n))
	}
}

// benchMode names BenchmarkClusterCPU's options in its output.
func benchMode(equal bool) string {
	var m []string
	if equal {
		m = append(m, "equal load per controller")
	}
	if v := os.Getenv("EDGEWAN_BENCH_GOMAXPROCS"); v != "" {
		m = append(m, "GOMAXPROCS="+v)
	}
	if v := os.Getenv("EDGEWAN_BENCH_READ_COALESCE"); v != "" {
		m = append(m, "--nats-read-coalesce "+v)
	}
	if len(m) == 0 {
		return ""
	}
	return " [" + strings.Join(m, ", ") + "]"
}

// logCount counts the lines of the controllers' logs that contain s.
func logCount(procs []*serveProc, s string) int {
	n := 0
	for _, p := range procs {
		n += strings.Count(p.log.String(), s)
	}
	return n
}

// freeAddr returns a free loopback address.
func freeAddr(tb testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// profileAll takes a CPU profile of each controller over the next seconds, into
// dir/{tag}-{id}.pprof, if dir is set; Wait for them.
func profileAll(tb testing.TB, dir string, addrs map[string]string, procs []*serveProc, seconds int, tag string) *sync.WaitGroup {
	var wg sync.WaitGroup
	if dir == "" {
		return &wg
	}
	for _, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			profileCPU(tb, addrs[p.id], seconds, fmt.Sprintf("%s/%s-%s.pprof", dir, tag, p.id))
		}()
	}
	return &wg
}

// profileCPU saves a controller's CPU profile over the next seconds (its --pprof endpoint).
func profileCPU(tb testing.TB, addr string, seconds int, path string) {
	resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, seconds))
	if err != nil {
		tb.Error(err)
		return
	}
	defer resp.Body.Close()
	f, err := os.Create(path)
	if err != nil {
		tb.Error(err)
		return
	}
	defer f.Close()
	if _, err := io.Copy(f, resp.Body); err != nil {
		tb.Error(err)
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// cpuSeconds returns each process's user + system CPU time so far (/proc/<pid>/stat).
func cpuSeconds(tb testing.TB, procs []*serveProc) []float64 {
	tb.Helper()
	tck := 100.0
	if out, err := exec.Command("getconf", "CLK_TCK").Output(); err == nil {
		if v, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64); err == nil && v > 0 {
			tck = v
		}
	}
	out := make([]float64, len(procs))
	for i, p := range procs {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
		if err != nil {
			tb.Fatal(err)
		}
		// Fields after the command (in parentheses, which may hold spaces): state is field 3,
		// utime 14 and stime 15.
		f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
		ut, _ := strconv.ParseFloat(f[11], 64)
		st, _ := strconv.ParseFloat(f[12], 64)
		out[i] = (ut + st) / tck
	}
	return out
}

// pending sums the messages the partitions' durable consumers have not been delivered yet.
func pending(tb testing.TB, c *natstest.Cluster) uint64 {
	conn, err := nats.Connect(strings.Join(c.URLs, ","), nats.UserInfo(natstest.User, natstest.Password))
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close()
	js, _ := jetstream.New(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, mqtt.DefaultNATSStream)
	if err != nil {
		tb.Fatal(err)
	}
	var n uint64
	for p := range 16 {
		if cons, err := mqtt.PartitionConsumer(ctx, st, p); err == nil {
			if ci, err := cons.Info(ctx); err == nil {
				n += ci.NumPending + uint64(ci.NumAckPending)
			}
		}
	}
	return n
}
