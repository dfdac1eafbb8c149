package abuse

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/edgewan/edgewan/agent/sim"
	"github.com/edgewan/edgewan/controller/mqtt"
	"github.com/edgewan/edgewan/controller/mqtt/mqtttest"
	"github.com/edgewan/edgewan/controller/tlsgen"
	"github.com/edgewan/edgewan/telemetry/sink"
	"github.com/edgewan/edgewan/telemetry/sink/influxtest"
)

// Each fault runs a controller of its own, so they run in parallel; the long outages (the
// database 30 s, InfluxDB 60 s) overlap instead of adding up.
//
// Every fault checks the same properties: the controller never exits by itself (no crash,
// hence no crash loop), /readyz names the fault while it lasts, everything it acknowledged
// before, during and after the fault is still there afterwards (and after a restart), and it
// recovers by itself once the fault ends: the time from the fault's end to /readyz 200 and an
// accepted write is the recovery time printed.

// writer creates SOC cases one after another until stopped, keeping the IDs acknowledged (201).
type writer struct {
	c     *ctl
	token string
	stop  chan struct{}
	done  chan struct{}

	mu      sync.Mutex
	acked   []string
	refused map[int]int // status (0: no answer) -> count
	lastOK  time.Time
}

func startWriter(c *ctl, token string) *writer {
	w := &writer{c: c, token: token, stop: make(chan struct{}), done: make(chan struct{}), refused: map[int]int{}}
	go func() {
		defer close(w.done)
		for i := 0; ; i++ {
			select {
			case <-w.stop:
				return
			default:
			}
			r := c.Do("POST", "/v1/soc/cases", token, []byte(fmt.Sprintf(`{"title":"fault write %d"}`, i)))
			var kase struct{ ID string }
			w.mu.Lock()
			if r.Err == nil && r.Status == 201 && json.Unmarshal(r.Body, &kase) == nil && kase.ID != "" {
				w.acked = append(w.acked, kase.ID)
				w.lastOK = time.Now()
			} else {
				w.refused[r.Status]++
			}
			w.mu.Unlock()
			time.Sleep(20 * time.Millisecond) // a steady pace: the check afterwards reads every write back
		}
	}()
	return w
}

// okAfter waits until a write made after t0 is acknowledged and returns when it was.
func (w *writer) okAfter(t0 time.Time, limit time.Duration) (time.Time, error) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		w.mu.Lock()
		last := w.lastOK
		w.mu.Unlock()
		if last.After(t0) {
			return last, nil
		}
		time.Sleep(20 * time.Millisecond) // the writer goroutine has no event to wait on
	}
	return time.Time{}, fmt.Errorf("no write accepted within %v", limit)
}

func (w *writer) Stop() []string {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.acked
}

// lostCases returns how many of the acknowledged cases the controller no longer has.
func lostCases(t *testing.T, c *ctl, token string, ids []string) int {
	t.Helper()
	lost := 0
	for _, id := range ids {
		r := c.Do("GET", "/v1/soc/cases/"+id, token, nil)
		if r.Err != nil || r.Status != 200 {
			lost++
			if lost <= 5 {
				t.Errorf("acknowledged case %s is gone: %v %d %s", id, r.Err, r.Status, r.Body)
			}
		}
	}
	return lost
}

// faultRun is the figures of one fault.
type faultRun struct {
	name      string
	acked     int
	lost      int
	refused   map[int]int
	recovery  time.Duration
	reported  string // what /readyz said during the fault (its error message)
	telemetry string // extra figures
}

func (f faultRun) print(t *testing.T, c *ctl) {
	crashes := c.Crashes()
	figures.add(t, "fault "+f.name, "crashes %d, accepted %d, data lost %d, recovery %v, refused during the fault %v, readyz said %q%s",
		crashes, f.acked, f.lost, f.recovery.Round(time.Millisecond), f.refused, f.reported, f.telemetry)
	if crashes > 0 {
		t.Errorf("the controller exited %d times by itself", crashes)
	}
	if f.lost > 0 {
		t.Errorf("%d acknowledged writes lost", f.lost)
	}
	for status, n := range f.refused {
		if status != 0 && status != 503 {
			t.Errorf("%d writes refused with %d during the fault; want 503 unavailable (a dependency is down)", n, status)
		}
	}
}

// outage runs the common shape of a fault: writes before, inject, wait for /readyz to name
// it, hold it for hold, end it, measure the recovery, check nothing acknowledged was lost, then
// restart the controller and check again.
func outage(t *testing.T, c *ctl, name, want string, hold time.Duration, inject, end, recovered func()) faultRun {
	t.Helper()
	_, token := c.Key("", "soc:read", "soc:write")
	c.Start()
	w := startWriter(c, token)
	for i := 0; i < 10; i++ { // some writes acknowledged before the fault
		if _, err := w.okAfter(time.Now(), 30*time.Second); err != nil {
			t.Fatalf("before the fault: %v", err)
		}
	}
	inject()
	run := faultRun{name: name}
	if _, err := c.WaitNotReady(30*time.Second, want); err != nil {
		t.Errorf("readiness did not report the fault: %v", err)
	}
	_, said := c.Ready()
	var eb struct{ Error struct{ Message string } }
	if json.Unmarshal([]byte(said), &eb) == nil && eb.Error.Message != "" {
		said = eb.Error.Message
	}
	run.reported = said
	time.Sleep(hold) // the fault's duration is the point of the test
	w.mu.Lock()
	run.refused = map[int]int{}
	for k, v := range w.refused {
		run.refused[k] = v
	}
	w.mu.Unlock()
	end()
	ended := time.Now() // the dependency is back: from here on, recovery is the controller's
	if _, err := c.WaitReady(2 * time.Minute); err != nil {
		t.Errorf("not ready again after the fault ended: %v", err)
	}
	ok, err := w.okAfter(ended, 2*time.Minute)
	if err != nil {
		t.Errorf("no write accepted after the fault ended: %v", err)
	}
	run.recovery = max(ok.Sub(ended), 0)
	if ok.IsZero() {
		run.recovery = time.Since(ended)
	}
	acked := w.Stop()
	if recovered != nil {
		recovered() // e.g. stop reporting
	}
	run.acked = len(acked)
	run.lost = lostCases(t, c, token, acked)
	if !c.Running() {
		t.Fatalf("the controller is not running after the fault")
	}
	c.Stop() // a clean restart
	c.Start()
	if lost := lostCases(t, c, token, acked); lost > run.lost {
		run.lost = lost
	}
	return run
}

// knob is a duration the long run (scripts/bench-abuse.sh) raises: EDGEWAN_ABUSE_NAME.
func knob(t *testing.T, name string, def time.Duration) time.Duration {
	v := os.Getenv("EDGEWAN_ABUSE_" + name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("EDGEWAN_ABUSE_%s=%q: %v", name, v, err)
	}
	return d
}

func TestFaults(t *testing.T) {
	t.Parallel() // with the API and MQTT abuse
	t.Run("sigkill", testSIGKILL)
	t.Run("disk full", testDiskFull)
	t.Run("database down 30s", testPostgresDown)
	t.Run("influxdb down 60s", testInfluxDown)
	t.Run("embedded broker restart", testEmbeddedBrokerRestart)
	t.Run("mosquitto restart", testMosquittoRestart)
	t.Run("clock stepped", testClockStep)
}

// testSIGKILL kills the controller at random moments under writes: every write acknowledged
// before a kill is there after the restart.
func testSIGKILL(t *testing.T) {
	t.Parallel()
	c := newCtl(t, "")
	_, token := c.Key("", "soc:read", "soc:write")
	c.Start()
	rounds := 5
	if v, err := strconv.Atoi(os.Getenv("EDGEWAN_ABUSE_KILLS")); err == nil && v > 0 {
		rounds = v
	}
	// An agent reports all along, with the agent's own spool and uplink: it deletes a report
	// only once the controller's stored watermark covers it, and sends again what a killed
	// controller had acknowledged (PUBACK) but not stored. So every report it deleted must be
	// in the store afterwards, kills or not.
	ag := startSpooler(t, c, 100*time.Millisecond)
	var acked []string
	var worst time.Duration
	for i := 0; i < rounds; i++ {
		w := startWriter(c, token)
		if _, err := w.okAfter(time.Time{}, 30*time.Second); err != nil && i == 0 {
			t.Fatal(err)
		}
		// The agent is back and the store moves: then a random moment within one of the
		// controller's flush intervals (5 s), so reports acknowledged and not yet stored die
		// with it.
		if !ag.WaitDeleted(ag.Stats().Acked+1, time.Minute) {
			t.Fatalf("round %d: the agent's watermark did not move within a minute: %+v", i, ag.Stats())
		}
		time.Sleep(time.Duration(50+rand.IntN(5000)) * time.Millisecond) // a random moment is the point
		c.Kill()
		acked = append(acked, w.Stop()...)
		killed := time.Now()
		c.StartNoWait()
		if _, err := c.WaitReady(time.Minute); err != nil {
			t.Fatalf("round %d: not ready after the restart: %v", i, err)
		}
		worst = max(worst, time.Since(killed))
	}
	run := faultRun{name: "sigkill x" + strconv.Itoa(rounds), acked: len(acked), recovery: worst, reported: "(no process: connection refused)"}
	run.lost = lostCases(t, c, token, acked)
	atKills := ag.Stats() // by the last kill's recovery
	made := ag.StopReporting()
	drained := ag.WaitDrained(time.Minute)
	deleted := ag.Stats().Acked
	c.Stop()
	stored := embeddedWindows(t, c.DataDir, ag.Site)
	published := int64(ag.up.Published())
	run.telemetry = fmt.Sprintf("; telemetry reports made %d (%d by the last kill's recovery), sent again after the kills %d, deleted from the agent's spool on the stored watermark %d, stored %d",
		made, atKills.LastID, max(published-int64(made), 0), deleted, stored)
	if !drained {
		t.Errorf("the agent's spool still holds reports a minute after the last kill: %+v (watermark %d)", ag.Stats(), ag.up.Watermark())
	}
	if stored < int64(deleted) {
		t.Errorf("telemetry lost across the kills: the agent deleted %d reports on the controller's watermark, the store has %d", deleted, stored)
		run.lost += int(int64(deleted) - stored)
	}
	if stored > int64(made) {
		t.Errorf("telemetry stored twice across the kills: %d reports made, %d windows stored", made, stored)
	}
	run.print(t, c)
}

// testDiskFull fills the data dir's filesystem (a tmpfs of 64 MiB mounted for the test).
func testDiskFull(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Fatal("the disk-full fault mounts a tmpfs: run the suite as root (CI does)")
	}
	mnt, err := os.MkdirTemp("", "edgewan-abuse-disk-")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64m,mode=0700", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v: %s", err, out)
	}
	c := newCtl(t, filepath.Join(mnt, "data"))
	t.Cleanup(func() { // after the controller's own cleanup (registered later, run first)
		if out, err := exec.Command("umount", "-l", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", mnt, err, out)
		}
		os.Remove(mnt)
	})
	filler := filepath.Join(mnt, "filler")
	hold := knob(t, "DISK_FULL_FOR", 5*time.Second)
	run := outage(t, c, "disk full "+hold.String(), "data dir full", hold,
		func() {
			f, err := os.Create(filler)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			chunk := make([]byte, 1<<20)
			for {
				if _, err := f.Write(chunk); err != nil {
					if !errors.Is(err, syscall.ENOSPC) {
						t.Fatalf("filling the disk: %v", err)
					}
					return
				}
			}
		},
		func() {
			if err := os.Remove(filler); err != nil {
				t.Fatal(err)
			}
		}, nil)
	run.print(t, c)
}

// testPostgresDown stops a PostgreSQL of the test's own for 30 s.
func testPostgresDown(t *testing.T) {
	t.Parallel()
	pg := startPostgres(t)
	c := newCtl(t, "", "--database-url", pg.url)
	hold := knob(t, "DATABASE_DOWN_FOR", 30*time.Second)
	run := outage(t, c, "database down "+hold.String(), "database not reachable", hold,
		func() { pg.stop(t) }, func() { pg.start(t) }, nil)
	run.print(t, c)
}

// testInfluxDown stops an InfluxDB of the test's own for 60 s while an agent reports 5 times
// a second: every report the broker acknowledged is in InfluxDB afterwards.
func testInfluxDown(t *testing.T) {
	t.Parallel()
	ix := influxtest.Start(t)
	db := influxtest.CreateDatabase(t, ix.URL)
	c := newCtl(t, "", "--influx-url", ix.URL, "--influx-bucket", db.Bucket)
	rep := &reporter{}
	var site string
	var sent, stored int
	var back time.Time
	var caughtUp time.Duration
	hold := knob(t, "INFLUXDB_DOWN_FOR", 60*time.Second)
	run := outage(t, c, "influxdb down "+hold.String(), "telemetry store", hold,
		func() {
			site = rep.start(t, c, 200*time.Millisecond)
			rep.waitAcked(t, 5)
			ix.Stop(t)
		},
		func() {
			ix.Restart(t)
			back = time.Now()
		},
		func() {
			rep.waitAcked(t, rep.acked()+5)
			sent = rep.stop()
			// Written once the sink's buffer, held through the outage, is empty.
			for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); {
				if stored = influxCount(t, ix.URL, db.Name, site); stored >= sent {
					break
				}
				time.Sleep(250 * time.Millisecond) // InfluxDB's writes land asynchronously
			}
			caughtUp = time.Since(back)
		})
	run.telemetry = fmt.Sprintf("; telemetry reports acknowledged %d, in InfluxDB %d, all written %v after InfluxDB was back",
		sent, stored, caughtUp.Round(time.Millisecond))
	if stored < sent {
		run.lost += sent - stored
	}
	run.print(t, c)
}

// testEmbeddedBrokerRestart restarts the controller (its embedded broker with it) under an
// agent reporting 5 times a second: the agent comes back by itself and every report the broker
// acknowledged is in the telemetry store.
func testEmbeddedBrokerRestart(t *testing.T) {
	t.Parallel()
	c := newCtl(t, "")
	_, token := c.Key("", "soc:read", "soc:write")
	c.Start()
	rep := &reporter{}
	site := rep.start(t, c, 200*time.Millisecond)
	rep.waitAcked(t, 5)
	c.Stop()
	stopped := time.Now()
	c.Start()
	n := rep.acked()
	rep.waitAcked(t, n+5)
	recovery := time.Since(stopped)
	sent := rep.stop()
	c.Stop()
	stored := embeddedWindows(t, c.DataDir, site)
	run := faultRun{name: "embedded broker restart", acked: sent, recovery: recovery, reported: "(no process: connection refused)",
		telemetry: fmt.Sprintf("; telemetry reports acknowledged %d, stored %d", sent, stored)}
	if stored < int64(sent) {
		run.lost = sent - int(stored)
	}
	_ = token
	run.print(t, c)
}

// testMosquittoRestart stops the external Mosquitto (--mqtt-url) for 10 s under an agent
// reporting 5 times a second.
func testMosquittoRestart(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	files, _, err := tlsgen.Ensure(dataDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	const ctlPassword = "controller-secret-for-the-abuse-suite"
	mq := mqtttest.Start(t, mqtttest.Config{
		Controller: mqtt.MosquittoUser{Username: mqtt.ControllerUsername, Password: ctlPassword},
		TLSCert:    files.Cert, TLSKey: files.Key,
	})
	c := newCtl(t, dataDir, "--mqtt-url", mq.TLSURL, "--mqtt-ca", files.CACert, "--mqtt-public-url", mq.TLSURL,
		"--mosquitto-dir", mq.Dir)
	c.Env = []string{"EDGEWAN_MQTT_PASSWORD=" + ctlPassword}
	rep := &reporter{beforeConnect: func() { mq.Reload(t) }}
	var site string
	var sent int
	hold := knob(t, "MOSQUITTO_DOWN_FOR", 10*time.Second)
	run := outage(t, c, "mosquitto down "+hold.String(), "MQTT broker not connected", hold,
		func() {
			site = rep.start(t, c, 200*time.Millisecond)
			rep.waitAcked(t, 5)
			mq.Stop(t)
		},
		func() { mq.Restart(t) },
		func() {
			rep.waitAcked(t, rep.acked()+5)
			sent = rep.stop()
		})
	c.Stop()
	stored := embeddedWindows(t, c.DataDir, site)
	run.telemetry = fmt.Sprintf("; telemetry reports acknowledged by Mosquitto %d, stored %d", sent, stored)
	if stored < int64(sent) {
		run.lost += sent - int(stored)
	}
	run.print(t, c)
}

// faultSite is a site of one transport, inet, to be claimed with Claim.
type faultSite struct {
	ID    string
	Claim string `json:"claim_token"`
}

var sitesMade atomic.Int64 // site names are unique per controller

func newSite(c *ctl) faultSite {
	c.t.Helper()
	_, tok := c.Key("", "sdwan:read", "sdwan:write")
	var site faultSite
	name := fmt.Sprintf("fault-site-%d", sitesMade.Add(1))
	c.JSON("POST", "/sd-wan/v1/sites", tok, map[string]any{"name": name, "transports": []map[string]any{
		{"name": "inet", "kind": "broadband", "interface": "eth0", "probe_targets": []string{"198.18.100.1"}}}}, &site)
	return site
}

// reporter is a simulated agent reporting one transport window per tick, keeping count of the
// reports the broker acknowledged.
type reporter struct {
	beforeConnect func() // e.g. make Mosquitto reload its password file
	ag            *sim.Agent
	n             atomic.Int64
	stopc, done   chan struct{}
}

func (r *reporter) start(t *testing.T, c *ctl, every time.Duration) string {
	t.Helper()
	site := newSite(c)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	acc, err := sim.Claim(ctx, c.client(), c.URL, site.Claim, "fault-router")
	if err != nil {
		t.Fatal(err)
	}
	if r.beforeConnect != nil {
		r.beforeConnect()
	}
	for {
		r.ag, err = sim.Connect(ctx, acc)
		if err == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond) // Mosquitto reloads its password file asynchronously
	}
	if err != nil {
		t.Fatal(err)
	}
	r.stopc, r.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(r.done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-r.stopc:
				return
			case <-tick.C:
			}
			pctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			err := r.ag.Report(pctx, time.Now(), every, sim.Window("inet", 10, 0, 20, 1))
			cancel()
			if err == nil {
				r.n.Add(1)
			}
		}
	}()
	return site.ID
}

func (r *reporter) acked() int { return int(r.n.Load()) }

func (r *reporter) waitAcked(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for r.acked() < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %d reports acknowledged, want %d", r.acked(), n)
		}
		time.Sleep(50 * time.Millisecond) // counting another goroutine's acknowledgements
	}
}

func (r *reporter) stop() int {
	if r.stopc == nil {
		return 0
	}
	close(r.stopc)
	<-r.done
	r.ag.Close()
	return r.acked()
}

// embeddedWindows counts the transport windows of site in the embedded telemetry store of a
// stopped controller.
func embeddedWindows(t *testing.T, dataDir, site string) int64 {
	t.Helper()
	s, err := sink.NewEmbedded(sink.EmbeddedOptions{DataDir: dataDir})
	if err != nil {
		t.Fatalf("opening the embedded telemetry store: %v", err)
	}
	defer s.Close()
	rows, err := s.History(context.Background(), site, "inet", time.Now().Add(-time.Hour), time.Now().Add(time.Hour), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, r := range rows {
		n += r.Windows
	}
	return n
}

// influxCount counts site's points in db.
func influxCount(t *testing.T, base, db, site string) int {
	t.Helper()
	q := fmt.Sprintf(`SELECT count("latency_ms") FROM "transport" WHERE "site" = '%s'`, site)
	resp, err := httpGetJSON(base + "/query?db=" + db + "&q=" + urlQueryEscape(q))
	if err != nil {
		return 0
	}
	var out struct {
		Results []struct {
			Series []struct {
				Values [][]any
			}
		}
	}
	if json.Unmarshal(resp, &out) != nil || len(out.Results) == 0 || len(out.Results[0].Series) == 0 ||
		len(out.Results[0].Series[0].Values) == 0 || len(out.Results[0].Series[0].Values[0]) < 2 {
		return 0
	}
	f, _ := out.Results[0].Series[0].Values[0][1].(float64)
	return int(f)
}

// pgServer is a PostgreSQL of the test's own (scripts/postgres.sh), which it may stop.
type pgServer struct {
	dir  string
	port int
	url  string
}

func startPostgres(t *testing.T) *pgServer {
	t.Helper()
	dir, err := os.MkdirTemp("", "edgewan-abuse-pg-")
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pg := &pgServer{dir: dir, port: l.Addr().(*net.TCPAddr).Port}
	l.Close()
	t.Cleanup(func() {
		_ = exec.Command("bash", scriptPath(t, "postgres.sh"), "stop", dir).Run()
		os.RemoveAll(dir)
	})
	pg.start(t)
	return pg
}

func (pg *pgServer) start(t *testing.T) {
	t.Helper()
	out, err := exec.Command("bash", scriptPath(t, "postgres.sh"), "start", pg.dir, strconv.Itoa(pg.port)).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, ee.Stderr)
		}
		t.Fatalf("starting PostgreSQL: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	pg.url = lines[len(lines)-1]
}

func (pg *pgServer) stop(t *testing.T) {
	t.Helper()
	if out, err := exec.Command("bash", scriptPath(t, "postgres.sh"), "stop", pg.dir).CombinedOutput(); err != nil {
		t.Fatalf("stopping PostgreSQL: %v: %s", err, out)
	}
}

// scriptPath finds scripts/NAME from the package directory.
func scriptPath(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "scripts", name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("scripts/%s: %v", name, err)
	}
	return p
}
