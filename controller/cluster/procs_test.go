package cluster

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/edgewan/edgewan/agent/claim"
	"github.com/edgewan/edgewan/agent/config"
	"github.com/edgewan/edgewan/agent/engine"
	"github.com/edgewan/edgewan/agent/spool"
	"github.com/edgewan/edgewan/controller/mqtt/natstest"
	"github.com/edgewan/edgewan/controller/store/storetest"
	"github.com/edgewan/edgewan/telemetry"
	"github.com/edgewan/edgewan/telemetry/sink/influxtest"
)

// scaledOut is what a controller process in the scaled-out mode runs on: PostgreSQL, a
// 3-node NATS cluster (scripts/nats.sh), an InfluxDB database, and the controller binary with
// the EDGEWAN_* variables deploy/compose.scale-out.yaml sets.
type scaledOut struct {
	db    *sql.DB
	pgURL string
	nc    *natstest.Cluster
	idb   influxtest.Database
	bin   string
	env   []string
}

func newScaledOut(t testing.TB, ttl time.Duration) *scaledOut {
	t.Helper()
	so := &scaledOut{pgURL: storetest.PostgresURL(t)}
	so.db = openDBURL(t, so.pgURL)
	so.nc = natstest.Start(t)
	influxBase := os.Getenv(influxtest.EnvURL)
	if influxBase == "" {
		influxBase = influxtest.Start(t).URL
	}
	so.idb = influxtest.CreateDatabase(t, influxBase)
	so.bin = controllerBinary(t)
	so.env = append(os.Environ(), "EDGEWAN_METRICS_LISTEN=", "EDGEWAN_DATABASE_URL="+so.pgURL,
		"EDGEWAN_INFLUX_URL="+so.idb.URL, "EDGEWAN_INFLUX_BUCKET="+so.idb.Bucket,
		"EDGEWAN_NATS_URLS="+strings.Join(so.nc.URLs, ","), "EDGEWAN_NATS_MQTT_URLS="+strings.Join(so.nc.MQTTURLs, ","),
		"EDGEWAN_NATS_USER="+natstest.User, "EDGEWAN_NATS_PASSWORD="+natstest.Password,
		"EDGEWAN_CLUSTER_PARTITIONS=16", "EDGEWAN_CLUSTER_LEASE_TTL="+ttl.String())
	return so
}

// The controller binary, built once per test binary run (removed by TestMain).
var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

func controllerBinary(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "edgewan-cluster-test-"); binErr != nil {
			return
		}
		out, err := exec.Command("go", "build", "-o", filepath.Join(binDir, "controller"), "github.com/edgewan/edgewan/controller").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return filepath.Join(binDir, "controller")
}

// apiKey creates an API key in the shared database (every controller knows it).
func (so *scaledOut) apiKey(t testing.TB, dataDir string) string {
	t.Helper()
	out, err := exec.Command(so.bin, "keys", "create", "--data-dir", dataDir, "--database-url", so.pgURL, "--scopes", "sdwan:read,sdwan:write").Output()
	if err != nil {
		t.Fatalf("controller keys create: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// TestClusterProcesses is issue 10's multi-process cluster test: 3 `controller serve`
// processes on a 3-node NATS cluster, PostgreSQL and InfluxDB, and 50 agents running the
// agent's own engine (its on-disk spool and MQTT uplink: records are deleted only when the
// controller's watermark covers them) with TCP probes on loopback. Sites are created and
// claimed through the API. In turn: kill -9 of a controller (its sites get a watermark from
// another controller: logged; goal 10 s), kill -9 of a NATS node (every agent has a report
// acknowledged again: logged; goal 5 s), a rolling restart of the 3 controllers (SIGTERM, start
// again, wait until each holds its share). Afterwards every report an agent deleted from its
// spool is in InfluxDB (0 lost), no minute of any site's history is missing, and the events in
// PostgreSQL never repeat one transition of a site (what two owners would do).
func TestClusterProcesses(t *testing.T) {
	const sites = 50
	so := newScaledOut(t, 3*time.Second)
	start := time.Now()
	ids := []string{"ctl-1", "ctl-2", "ctl-3"}
	procs := map[string]*serveProc{}
	for _, id := range ids {
		procs[id] = startServe(t, so.bin, so.env, id)
	}
	waitFor(t, 60*time.Second, "3 controller processes share the 16 partitions", func() bool { return shared(so.db, ids) })
	token := so.apiKey(t, procs["ctl-1"].dataDir)
	obs := observe(t, so.nc.MQTTURLs[0]) // node 1 is never killed: the observer never reconnects
	var phases []phase                   // what happened when, to place the reports lost

	// The agents probe a TCP listener on loopback (always answering: no transport events).
	target := tcpTarget(t)
	agentLog := newTimeline(nil) // the agents' log, for the phases of their failover
	acc := newAccepts()          // when the broker accepted each report
	agents := claimFleet(t, so, []*serveProc{procs[ids[0]], procs[ids[1]], procs[ids[2]]}, token, sites, target, agentLog, acc)
	t.Logf("setup (build, 3 NATS nodes, 3 controllers, %d sites claimed, agents started): %v", sites, time.Since(start).Round(time.Millisecond))
	waitFor(t, 60*time.Second, "every agent's reports covered by a watermark", func() bool {
		for _, a := range agents {
			if obs.last(a.site).seq == 0 {
				return false
			}
		}
		return true
	})

	// kill -9 of the controller owning the most partitions: its sites get watermarks from
	// another controller (the reports sent since are evaluated and stored).
	victim := ids[0]
	for _, id := range ids {
		if leasesHeld(so.db, id) > leasesHeld(so.db, victim) {
			victim = id
		}
	}
	owned := map[int]bool{}
	for _, p := range ownedPartitions(t, so.db, victim) {
		owned[p] = true
	}
	var moved []string
	for _, a := range agents {
		if owned[Partition(a.site, 16)] {
			moved = append(moved, a.site)
		}
	}
	before := map[string]mark{}
	for _, s := range moved {
		before[s] = obs.last(s)
	}
	killedAt := time.Now()
	procs[victim].kill(t)
	phases = append(phases, phase{killedAt, "kill -9 of " + victim})
	// Taken over: the new owner publishes the stored watermark with its own boot at once;
	// evaluated again: its watermark passes what the killed one had published (reports
	// evaluated and stored by the new owner).
	var taken time.Duration
	took := waitFor(t, 60*time.Second, "the killed controller's sites stored by another", func() bool {
		newer := 0
		for _, s := range moved {
			w := obs.last(s)
			if w.boot == before[s].boot || w.at.Before(killedAt) {
				return false
			}
			if w.seq > before[s].seq {
				newer++
			}
		}
		if taken == 0 {
			taken = time.Since(killedAt)
		}
		return newer == len(moved)
	})
	t.Logf("kill -9 of %s (%d partitions, %d sites): every one of its sites had a watermark from another controller %v after the kill, one above the killed controller's last %v after (goal 10 s with TTL 3 s)",
		victim, len(owned), len(moved), taken.Round(time.Millisecond), took.Round(time.Millisecond))
	if took > 30*time.Second {
		t.Errorf("the killed controller's sites took %v to be stored again; want well under 30 s", took)
	}
	procs[victim] = startServe(t, so.bin, so.env, victim)
	waitFor(t, 60*time.Second, victim+" back with its share", func() bool { return shared(so.db, ids) })

	// kill -9 of NATS node 2: every agent has a report acknowledged again.
	published := map[string]float64{}
	for _, a := range agents {
		published[a.site] = a.metric("edgewan_agent_mqtt_published_total")
	}
	spoolsOf := func() map[string]int {
		out := make(map[string]int, len(agents))
		for _, a := range agents {
			out[a.site] = int(a.metric("edgewan_agent_spool_records"))
		}
		return out
	}
	steady := steadySpools(spoolsOf, 6*time.Second) // a whole cycle of the controllers' FlushEvery (5 s)
	t.Logf("the node to be killed (n2) leads: %v", ledBy(t, so.nc.URLs[0], "n2"))
	sw := watchSpools(spoolsOf, steady)
	nodeKilledAt := time.Now()
	phases = append(phases, phase{nodeKilledAt, "kill -9 of NATS node 2"})
	jw := watchJetStream(t, so.nc.URLs[0], "n2", nodeKilledAt)
	so.nc.Kill(t, 2)
	took = waitFor(t, 60*time.Second, "every agent's reports written (QoS 0) or acknowledged (QoS 1) again after a NATS node died", func() bool {
		for _, a := range agents {
			// +2: a batch in flight at the kill may still have been acknowledged.
			if a.metric("edgewan_agent_mqtt_published_total") < published[a.site]+2 {
				return false
			}
		}
		return true
	})
	// Reports again: as in TestScaleOut (accepts.again): the first report after the kill a live
	// node accepted (PUBACK at QoS 1; at QoS 0 sent on a connection that then got a watermark
	// covering it).
	var accepted map[string]time.Duration
	siteIDs := make([]string, 0, len(agents))
	for _, a := range agents {
		siteIDs = append(siteIDs, a.site)
	}
	waitFor(t, 60*time.Second, "every agent has a report accepted again after a NATS node died", func() bool {
		var ok bool
		accepted, ok = acc.again(nodeKilledAt, siteIDs)
		return ok
	})
	acceptedMax, acceptedMedian := maxOf(accepted)
	t.Logf("kill -9 of NATS node 2 (agents' broker profile %q): every agent reported again (a report accepted by a live node) after %v (median %v; goal 5 s); every agent had 2 reports written (QoS 0) or acknowledged (QoS 1) again after %v",
		agentBroker(), acceptedMax.Round(time.Millisecond), acceptedMedian.Round(time.Millisecond), took.Round(time.Millisecond))
	logFailover(t, "failover phases of the agents whose node died", agentLog.failover(nodeKilledAt))
	t.Logf("connections the agents lost, by error: %v", agentLog.drops(nodeKilledAt))
	t.Logf("the live NATS nodes' logs: %v", natsErrors(so.nc.Dir, 1, 3))
	jw.log(t)
	// The agents' spools back to their steady size: what the election cost the reports sent
	// meanwhile (a hole the controllers ask for, docs/scale-out.md "Holes after a node's death").
	if !waitCond(30*time.Second, func() bool {
		for id, n := range spoolsOf() {
			if n > steady[id] {
				return false
			}
		}
		return true
	}) {
		t.Logf("some agents' spools still above their steady size 30 s after the node kill: %v (steady %v)", spoolsOf(), steady)
	}
	t.Logf("kill -9 of NATS node 2: every agent's spool back to its steady size after %s agents whose spool grew", spread(sw.back(nodeKilledAt)))
	so.nc.Restart(t, 2)

	// Rolling restart: SIGTERM one controller at a time, start it again, wait until the three
	// share the partitions again.
	for _, id := range ids {
		t0 := time.Now()
		phases = append(phases, phase{t0, "SIGTERM to " + id})
		procs[id].terminate(t)
		stopped := time.Since(t0)
		procs[id] = startServe(t, so.bin, so.env, id)
		ready := time.Since(t0)
		waitFor(t, 60*time.Second, id+" back with its share after a restart", func() bool { return shared(so.db, ids) })
		t.Logf("rolling restart: %s stopped (SIGTERM to exit) in %v, ready (/readyz) at %v, holding its share again at %v",
			id, stopped.Round(time.Millisecond), ready.Round(time.Millisecond), time.Since(t0).Round(time.Millisecond))
	}

	// Let the agents catch up (their spools shrink to what the last watermark does not cover),
	// then stop them and compare what they deleted with InfluxDB.
	stopDrained(t, agents)
	checkDelivered(t, so.idb, agents, phases)
	// One owner at a time: no status change or path switch of a site is announced twice (each
	// owner announcing what it decided, or a new owner deciding again what the last one had).
	if dup := repeatedTransitions(t, so.db); len(dup) > 0 {
		t.Errorf("one transition of a site recorded twice in a row (two owners?): %v", dup)
	}
	t.Logf("whole test: %v", time.Since(start).Round(time.Millisecond))
}

// claimFleet creates n sites (two transports each) through the controllers' APIs in turn,
// claims each as its router would, and starts an agent on the claim running the agent's own
// engine (startAgent); the agents start on the NATS nodes in turn.
func claimFleet(t *testing.T, so *scaledOut, ctls []*serveProc, token string, n int, target string, log *timeline, acc *accepts) []*runAgent {
	t.Helper()
	agents := make([]*runAgent, 0, n)
	for i := range n {
		ctl := ctls[i%len(ctls)] // create and claim through every controller's API
		var site struct {
			ID    string `json:"id"`
			Claim string `json:"claim_token"`
		}
		ctl.api(t, token, "POST", "/sd-wan/v1/sites", map[string]any{"name": fmt.Sprintf("Branch %d", i), "role": "branch", "transports": []map[string]any{
			{"name": "mpls", "kind": "mpls", "interface": "lo", "gateway": "198.18.1.1", "probe_targets": []string{"198.18.100.1"}},
			{"name": "inet", "kind": "broadband", "interface": "lo", "gateway": "198.18.2.1", "probe_targets": []string{"198.18.100.1"}}}}, &site, http.StatusCreated)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		creds, err := claim.Claim(ctx, ctl.hc, ctl.base, claim.Request{ClaimToken: site.Claim, Hostname: fmt.Sprintf("router-%d", i), Version: "test"})
		cancel()
		if err != nil {
			t.Fatalf("claim of %s: %v", site.ID, err)
		}
		if !sameNodes(creds.MQTTURLs, so.nc.MQTTURLs) {
			t.Fatalf("claim gave broker list %q; want the NATS nodes %q", creds.MQTTURLs, so.nc.MQTTURLs)
		}
		if creds.Broker != claim.BrokerNATS {
			t.Fatalf("claim gave broker kind %q; want %q", creds.Broker, claim.BrokerNATS)
		}
		creds.Broker = agentBroker()
		// One NATS account for everyone (per-device NATS users are not done: docs/scale-out.md);
		// the agents start on the nodes in turn and have all three.
		creds.MQTTURL, creds.Username, creds.Password = so.nc.MQTTURLs[i%3], natstest.User, natstest.Password
		agents = append(agents, startAgent(t, creds, target, log, acc.hook(creds.Site)))
	}
	return agents
}

// stopDrained lets the agents catch up (their spools shrink to what the last watermark does
// not cover), then stops them.
func stopDrained(t *testing.T, agents []*runAgent) {
	t.Helper()
	waitFor(t, 60*time.Second, "every agent's spool drained", func() bool {
		for _, a := range agents {
			// The watermark goes out every 5 s: about 5-7 records of 1 s each are uncovered.
			if a.metric("edgewan_agent_spool_records") > 10 {
				return false
			}
		}
		return true
	})
	for _, a := range agents {
		a.stop(t)
	}
}

// checkDelivered compares what the stopped agents deleted from their spools (covered by a
// watermark) with InfluxDB: every deleted report must be there (0 lost), no spool may have
// dropped records at its cap, and no minute of a site's history may be empty. It returns the
// reports lost (failing the test if any).
func checkDelivered(t *testing.T, idb influxtest.Database, agents []*runAgent, phases []phase) int {
	t.Helper()
	history := influxTimes(t, idb, "mpls")
	var reports, deleted, lost int
	var examples []string
	for _, a := range agents {
		pending, dropped := a.pending(t)
		if dropped != 0 {
			t.Errorf("%s: %d records dropped at the spool's cap", a.site, dropped)
		}
		made := int(a.reports)
		have := 0
		for _, ts := range history[a.site] {
			if !pending[ts] {
				have++
			}
		}
		gone := made - len(pending) // deleted from the spool: covered by a watermark
		reports += made
		deleted += gone
		if have < gone {
			lost += gone - have
			if len(examples) < 10 {
				examples = append(examples, fmt.Sprintf("%s: %d of %d deleted reports not in InfluxDB, gaps %v", a.site, gone-have, gone, gapsAfter(history[a.site], phases)))
			}
		}
		if gaps := missingMinutes(history[a.site]); len(gaps) > 0 {
			t.Errorf("%s: no report in InfluxDB in the minutes starting %v", a.site, gaps)
		}
	}
	t.Logf("%d reports made, %d deleted from the spools (covered by a watermark), %d of those not in InfluxDB", reports, deleted, lost)
	if lost > 0 {
		t.Errorf("%d reports deleted by agents are not in InfluxDB (0 lost wanted), e.g. %v", lost, examples)
	}
	return lost
}

// shared reports whether the controllers hold the 16 partitions between them, each its share:
// at most ceil(16/n) (what a member takes), so at least what the others leave (6, 6, 4 for 3).
func shared(db *sql.DB, ids []string) bool {
	n, most := 0, (16+len(ids)-1)/len(ids)
	for _, id := range ids {
		h := leasesHeld(db, id)
		if h < 16-(len(ids)-1)*most {
			return false
		}
		n += h
	}
	return n == 16
}

func ownedPartitions(t testing.TB, db *sql.DB, owner string) []int {
	t.Helper()
	rows, err := db.Query(`SELECT partition FROM edgewan_partition_leases WHERE owner = $1 AND expires_at > now()`, owner)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []int
	for rows.Next() {
		var p int
		if err := rows.Scan(&p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// tcpTarget is a loopback TCP listener that accepts and closes: the agents' probe target.
func tcpTarget(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return l.Addr().String()
}

// runAgent is an agent run by the agent's own engine (engine.Run) in this process.
type runAgent struct {
	site, dir string
	reg       *prometheus.Registry
	cancel    context.CancelFunc
	done      chan error
	reports   float64 // edgewan_agent_reports_total when stopped
}

func startAgent(t *testing.T, creds *claim.Credentials, target string, log *timeline, accepted func(time.Time)) *runAgent {
	t.Helper()
	off := false
	a := &runAgent{site: creds.Site, dir: t.TempDir(), reg: prometheus.NewRegistry(), done: make(chan error, 1)}
	cfg := &config.Config{DataDir: a.dir, Window: time.Second, Enforce: &off}
	for _, name := range []string{"mpls", "inet"} {
		cfg.Transports = append(cfg.Transports, config.Transport{Name: name, Interface: "lo", Method: "tcp",
			ProbeTargets: []string{target}, Interval: 500 * time.Millisecond})
	}
	cfg.MQTTStandby = agentStandby()
	if err := cfg.Finish(); err != nil {
		t.Fatal(err)
	}
	if err := claim.Save(a.dir, creds); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a.cancel = cancel
	go func() {
		a.done <- engine.Run(ctx, engine.Options{Config: cfg, Creds: creds, Version: "test", Registry: a.reg,
			Logger: slog.New(log).With("site", creds.Site), OnAccepted: accepted})
	}()
	t.Cleanup(func() {
		if a.cancel != nil {
			a.stop(t)
		}
	})
	return a
}

// metric returns the value of an unlabelled counter or gauge of the agent.
func (a *runAgent) metric(name string) float64 {
	mfs, _ := a.reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() != name || len(mf.Metric) == 0 {
			continue
		}
		m := mf.Metric[0]
		if m.Counter != nil {
			return m.Counter.GetValue()
		}
		if m.Gauge != nil {
			return m.Gauge.GetValue()
		}
	}
	return 0
}

func (a *runAgent) stop(t *testing.T) {
	t.Helper()
	a.cancel()
	a.cancel = nil
	select {
	case err := <-a.done:
		if err != nil {
			t.Errorf("agent of %s: %v", a.site, err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("agent of %s did not stop", a.site)
	}
	a.reports = a.metric("edgewan_agent_reports_total")
}

// pending opens the stopped agent's spool: the times of the reports still in it (not
// deleted: not covered by a watermark), and how many records its cap dropped.
func (a *runAgent) pending(t *testing.T) (map[int64]bool, uint64) {
	t.Helper()
	sp, err := spool.Open(spool.Options{Dir: filepath.Join(a.dir, "spool")})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	recs, err := sp.Peek(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]bool{}
	for _, r := range recs {
		kind, payload, _ := bytes.Cut(r.Payload, []byte{'\n'})
		if string(kind) != telemetry.KindTelemetry {
			continue
		}
		var rep telemetry.Report
		if err := json.Unmarshal(payload, &rep); err != nil {
			t.Fatalf("%s: spooled report %d: %v", a.site, r.ID, err)
		}
		out[rep.Time.UnixNano()] = true
	}
	return out, sp.Stats().Dropped
}

// influxTimes reads every site's point times of one transport from InfluxDB (InfluxQL).
func influxTimes(t *testing.T, db influxtest.Database, transport string) map[string][]int64 {
	t.Helper()
	q := fmt.Sprintf("SELECT sent FROM transport WHERE transport = '%s' GROUP BY site", transport)
	resp, err := http.Get(db.URL + "/query?" + url.Values{"db": {db.Name}, "q": {q}, "epoch": {"ns"}}.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Results []struct {
			Error  string `json:"error"`
			Series []struct {
				Tags   map[string]string `json:"tags"`
				Values [][]json.Number   `json:"values"`
			} `json:"series"`
		} `json:"results"`
	}
	dec := json.NewDecoder(resp.Body)
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil || len(out.Results) != 1 || out.Results[0].Error != "" {
		t.Fatalf("InfluxDB query %q: %v %+v", q, err, out)
	}
	times := map[string][]int64{}
	for _, s := range out.Results[0].Series {
		for _, v := range s.Values {
			ns, err := v[0].Int64()
			if err != nil {
				t.Fatal(err)
			}
			times[s.Tags["site"]] = append(times[s.Tags["site"]], ns)
		}
	}
	return times
}

// missingMinutes lists the minutes between a site's first and last point that hold none.
func missingMinutes(times []int64) []time.Time {
	if len(times) == 0 {
		return nil
	}
	have := map[int64]bool{}
	lo, hi := times[0], times[0]
	for _, ts := range times {
		have[ts/int64(time.Minute)] = true
		lo, hi = min(lo, ts), max(hi, ts)
	}
	var out []time.Time
	for m := lo / int64(time.Minute); m <= hi/int64(time.Minute); m++ {
		if !have[m] {
			out = append(out, time.Unix(0, m*int64(time.Minute)).UTC())
		}
	}
	return out
}

// watermarks records every stored watermark the controllers publish (MQTT, on one NATS node),
// per site in arrival order; Boot names the controller start that published it.
type watermarks struct {
	mu   sync.Mutex
	seen map[string][]mark
}

type mark struct {
	boot string
	seq  uint64
	at   time.Time
}

func observe(t *testing.T, broker string) *watermarks {
	t.Helper()
	w := &watermarks{seen: map[string][]mark{}}
	o := paho.NewClientOptions().AddBroker(broker).SetClientID("observer").SetUsername(natstest.User).SetPassword(natstest.Password).
		SetCleanSession(true).SetAutoReconnect(true).SetOrderMatters(true)
	c := paho.NewClient(o)
	if tok := c.Connect(); !tok.WaitTimeout(20*time.Second) || tok.Error() != nil {
		t.Fatalf("observer: %v", tok.Error())
	}
	t.Cleanup(func() { c.Disconnect(100) })
	topic := telemetry.Topic("+", telemetry.KindStored)
	// NATS refuses a subscription (SUBACK 0x80, not an error to paho) while JetStream has no
	// leader for its MQTT streams (a start on a loaded machine): asked again until granted.
	waitFor(t, 60*time.Second, "the observer's subscription granted", func() bool {
		tok := c.Subscribe(topic, 1, func(_ paho.Client, m paho.Message) {
			var st telemetry.Stored
			if json.Unmarshal(m.Payload(), &st) != nil {
				return
			}
			w.mu.Lock()
			w.seen[st.Site] = append(w.seen[st.Site], mark{boot: st.Boot, seq: st.Seq, at: time.Now()})
			w.mu.Unlock()
		})
		if !tok.WaitTimeout(20*time.Second) || tok.Error() != nil {
			t.Fatalf("observer: subscribing: %v", tok.Error())
		}
		if tok.(*paho.SubscribeToken).Result()[topic] == 0x80 {
			time.Sleep(500 * time.Millisecond) // paced: the refusal is immediate
			return false
		}
		return true
	})
	return w
}

func (w *watermarks) last(site string) mark {
	w.mu.Lock()
	defer w.mu.Unlock()
	if l := w.seen[site]; len(l) > 0 {
		return l[len(l)-1]
	}
	return mark{}
}

// repeatedTransitions lists the controllers' events that repeat the previous event of their
// site with the same type and transition: a status or path change announced twice, as two
// owners would (or a new owner deciding again what the last one had).
func repeatedTransitions(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.Query(`SELECT id, type, data, created_at FROM events ORDER BY created_at, id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	prev, prevAgent := map[string]string{}, map[string]string{}
	var out []string
	n, relayed, twice := 0, 0, 0
	for rows.Next() {
		var id, typ, data string
		var at int64
		if err := rows.Scan(&id, &typ, &data, &at); err != nil {
			t.Fatal(err)
		}
		var d struct {
			Site, Device, Transport, Class, From, To, Status, By string
			Previous                                             string `json:"previous_status"`
		}
		if json.Unmarshal([]byte(data), &d) != nil || d.Site == "" {
			continue
		}
		if d.By == "agent" {
			// What an agent did by itself, relayed: one controller may relay it twice when the
			// agent sends its spool again (the watermark's deduplication of agent events).
			relayed++
			if prevAgent[d.Site] == data {
				twice++
			}
			prevAgent[d.Site] = data
			continue
		}
		n++
		key := strings.Join([]string{typ, d.Device, d.Transport, d.Class, d.From, d.To, d.Status, d.Previous}, "|")
		if prev[d.Site] == key {
			out = append(out, fmt.Sprintf("%s %s (%s at %s)", d.Site, key, id, time.UnixMicro(at).Format("15:04:05.000")))
		}
		prev[d.Site] = key
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d site events of the controllers in PostgreSQL checked for repeated transitions; %d agent events relayed, %d of them twice", n, relayed, twice)
	return out
}

// phase is a disruption of the test and when it began.
type phase struct {
	at   time.Time
	what string
}

// gapsAfter describes the holes of more than 1.5 s in a site's point times (its agent reports
// every second), each placed after the disruption that preceded it.
func gapsAfter(times []int64, phases []phase) []string {
	times = slices.Clone(times)
	slices.Sort(times)
	var out []string
	for i := 1; i < len(times); i++ {
		d := time.Duration(times[i] - times[i-1])
		if d <= 1500*time.Millisecond {
			continue
		}
		from := time.Unix(0, times[i-1])
		where := "before any disruption"
		for _, p := range phases {
			if p.at.Before(from) || p.at.Before(from.Add(d)) {
				where = fmt.Sprintf("%v after %s", from.Sub(p.at).Round(100*time.Millisecond), p.what)
			}
		}
		out = append(out, fmt.Sprintf("%v missing from %s (%s)", d.Round(100*time.Millisecond), from.Format("15:04:05.0"), where))
	}
	return out
}
