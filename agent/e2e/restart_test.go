package e2e

import (
	"database/sql"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/edgewan/edgewan/agent/internal/netlab"
)

// kill ends the controller abruptly (SIGKILL), as a crash would: nothing is flushed.
func (c *controller) kill() {
	if c.cmd == nil {
		return
	}
	_ = c.cmd.Process.Kill()
	<-c.done
	c.cmd = nil
}

// restartResult is what TestControllerRestarts measured.
type restartResult struct {
	restarts               int
	confirmed, stored      float64 // reports the agent deleted as stored; windows in the store
	lost                   float64 // confirmed reports missing from the store
	downs, switches        int     // controller-raised transport.down and path.switched on healthy links
	agentSwitches          float64 // path changes the agent applied on the controller's word
	localSwitches          float64 // path changes the agent made by itself (its own probes)
	storedWan2             float64 // windows of the other transport in the store
	reconnects             []time.Duration
	controllerRejectedDups float64
}

// runControllerRestarts runs the real agent in a healthy lab, reporting every second, and
// restarts the controller n times at random moments (SIGKILL, or SIGTERM every third time), then
// stops it cleanly and compares: every report the agent deleted from its spool (the
// controller's watermark covered it) must be in the controller's time-series store, and no
// restart may raise a down event or move a path (every link stays healthy throughout).
func runControllerRestarts(t *testing.T, n int) restartResult {
	lab := netlab.New(t, netlab.Spec{Transports: 2})
	const holdDown = 5 * time.Second
	c := newController(t, lab, holdDown)
	s := stageSite(t, c, lab)
	a := startAgent(t, lab, t.TempDir(), "--controller", c.base(), "--claim-token", s.claimToken,
		"--ca-fingerprint", c.fingerprint(t), "--steering-hold-down", holdDown.String(), "--steering-recover-after", "3")
	waitAPI(t, 60*time.Second, "policy applied", func() bool { return rolloutState(t, c, s) == "applied" })
	waitFor(t, 30*time.Second, "first reports confirmed stored", func() bool { return a.metric(t, "edgewan_agent_reports_stored_total") > 0 })
	agentSwitches0 := a.metric(t, `edgewan_agent_path_switches_total{by="controller"}`)
	localSwitches0 := a.metric(t, `edgewan_agent_path_switches_total{by="local"}`)

	var res restartResult
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	for i := range n {
		// A random moment within the watermark's 5 s cycle and beyond.
		time.Sleep(time.Duration(500+rng.IntN(6000)) * time.Millisecond) // the scenario: a crash at a random time
		if i%3 == 2 {
			c.stop(t)
		} else {
			c.kill()
		}
		c.start(t)
		back := time.Now()
		waitFor(t, 60*time.Second, "agent reconnected", a.connected)
		res.reconnects = append(res.reconnects, time.Since(back))
		res.restarts++
	}
	// Let the agent send again what the last controller had not confirmed.
	before := a.metric(t, "edgewan_agent_reports_stored_total")
	waitFor(t, 60*time.Second, "watermark moving after the last restart", func() bool {
		return a.metric(t, "edgewan_agent_reports_stored_total") > before+5
	})
	cm := "http://" + c.ip + ":" + strconv.Itoa(c.metricPort) + "/metrics"
	res.controllerRejectedDups = metric(t, c.hc, cm, `edgewan_ingest_rejected_total{reason="duplicate"}`)
	res.downs = len(events(t, c, s, "transport.down").Data)
	for _, ev := range events(t, c, s, "path.switched").Data {
		if ev.Data["by"] == "controller" {
			res.switches++
		}
	}
	res.agentSwitches = a.metric(t, `edgewan_agent_path_switches_total{by="controller"}`) - agentSwitches0
	res.localSwitches = a.metric(t, `edgewan_agent_path_switches_total{by="local"}`) - localSwitches0

	c.stop(t) // a clean stop stores everything it took; the agent keeps reporting into its spool
	res.confirmed = a.metric(t, "edgewan_agent_reports_stored_total")
	db, err := sql.Open("sqlite", "file:"+filepath.Join(c.dataDir, "telemetry.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var windows sql.NullInt64
	// rollup_1h holds every window written; the minute rows of closed hours move into blocks.
	if err := db.QueryRow("SELECT SUM(windows) FROM rollup_1h WHERE site = ? AND transport = 'wan1'", s.id).Scan(&windows); err != nil {
		t.Fatal(err)
	}
	res.stored = float64(windows.Int64)
	if err := db.QueryRow("SELECT SUM(windows) FROM rollup_1h WHERE site = ? AND transport = 'wan2'", s.id).Scan(&windows); err != nil {
		t.Fatal(err)
	}
	res.storedWan2 = float64(windows.Int64)
	res.lost = max(0, res.confirmed-res.stored)
	return res
}

// TestControllerRestarts: 10 controller restarts (SIGKILL, and SIGTERM every third) at random
// moments under continuous reporting by the real agent: 0 confirmed reports lost, no down event
// and no path change on healthy links. scripts/bench-restarts.sh runs it longer.
func TestControllerRestarts(t *testing.T) {
	n := 10
	if v := os.Getenv("EDGEWAN_E2E_RESTARTS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			t.Fatal(err)
		}
	}
	res := runControllerRestarts(t, n)
	var total time.Duration
	for _, d := range res.reconnects {
		total += d
	}
	t.Logf("restarts %d: reports confirmed stored %.0f, windows in the store %.0f, lost %.0f; duplicates dropped %.0f; "+
		"controller transport.down %d, path.switched %d, agent path changes by the controller %.0f (by itself %.0f); wan2 windows %.0f; reconnect median %v (mean %v)",
		res.restarts, res.confirmed, res.stored, res.lost, res.controllerRejectedDups, res.downs, res.switches, res.agentSwitches, res.localSwitches, res.storedWan2,
		median(res.reconnects), total/time.Duration(max(1, len(res.reconnects))))
	if res.lost != 0 {
		t.Errorf("%.0f reports the agent deleted as stored are not in the store", res.lost)
	}
	if res.stored > res.confirmed+float64(20) { // the agent confirms only what the last watermark covered
		t.Errorf("%.0f windows stored for %.0f confirmed reports: duplicates", res.stored, res.confirmed)
	}
	if res.downs != 0 || res.switches != 0 || res.agentSwitches != 0 {
		t.Errorf("restarts changed the network: %d transport.down, %d path.switched by the controller, %.0f applied by the agent", res.downs, res.switches, res.agentSwitches)
	}
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s[len(s)/2]
}
