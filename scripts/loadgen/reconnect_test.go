package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edgewan/edgewan/agent/backoff"
)

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// TestReconnectScenario is the short version of scripts/bench-reconnect.sh: 200 agents against
// the real controller binary on loopback, SIGKILLed and started again after an outage long
// enough that every agent waits at the backoff's cap. Everyone must come back, and no second
// after the controller is ready may see more than 3N/4 reconnects: with full jitter at the 8 s
// cap the model is 2N/8 s = N/4 in the first second, falling linearly to 0 after 8 s (package
// backoff), so 3N/4 tolerates the controller or loadgen stalling about 3-4 s on a loaded machine,
// while a fleet reconnecting in lockstep (paho's own backoff) puts all N into one second.
// No timing is asserted.
func TestReconnectScenario(t *testing.T) {
	const agents = 200
	dir := t.TempDir()
	bin := filepath.Join(dir, "controller")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/edgewan/edgewan/controller").CombinedOutput(); err != nil {
		t.Fatalf("building the controller: %v\n%s", err, out)
	}
	data := filepath.Join(dir, "data")
	out, err := exec.Command(bin, "keys", "create", "--data-dir", data, "--scopes", "sdwan:read,sdwan:write", "--name", "reconnect-test").CombinedOutput()
	if err != nil {
		t.Fatalf("keys create: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	api, mqtt, metrics := freePort(t), freePort(t), freePort(t)
	// Every agent is at the cap once the outage exceeds the sum of the windows below it.
	var below time.Duration
	for w := backoff.ReconnectBase; w < backoff.ReconnectCap; w *= 2 {
		below += w
	}
	o := options{
		API: "https://127.0.0.1:" + api, CA: filepath.Join(data, "tls", "ca.crt"), Token: lines[len(lines)-1],
		MQTT: "127.0.0.1:" + mqtt, State: filepath.Join(dir, "state.json"), Prefix: "rc",
		Sites: agents, Rate: 1, Duration: time.Minute, Warmup: time.Second, Drain: time.Second,
		StageWorkers: 8, ConnectWorkers: 16, HealthWorkers: 1, Policy: true, TLSResume: true,
		Metrics: "http://127.0.0.1:" + metrics + "/metrics", ProfileDir: filepath.Join(dir, "profiles"), ProfileFor: 2 * time.Second, TraceFor: time.Second, GCLimit: 1 << 30,
		Reconnect: true, ControllerLog: filepath.Join(dir, "controller.log"), KillSignal: "KILL",
		ControllerCmd: strings.Join([]string{bin, "serve", "--data-dir", data, "--listen", "127.0.0.1:" + api,
			"--mqtt-listen", "127.0.0.1:" + mqtt, "--metrics-listen", "127.0.0.1:" + metrics, "--rate-limit", "0", "--log-level", "warn", "--pprof"}, " "),
		Outage: below + time.Second, ReconnectTimeout: 2 * time.Minute,
	}
	if err := o.validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := run(ctx, o)
	if err != nil {
		t.Fatalf("run: %v (controller log %s)", err, o.ControllerLog)
	}
	r := res.reconnect
	for _, row := range reconnectRows(r) {
		t.Logf("%s: %s", row[0], row[1])
	}
	if r.notLost != 0 || r.notBack != 0 || len(r.back) != agents {
		t.Fatalf("%d of %d agents back, %d not back, %d never lost the connection; want all back", len(r.back), agents, r.notBack, r.notLost)
	}
	if r.failedAfter != 0 {
		t.Errorf("%d attempts failed after the controller was ready (%v; first: %s); want 0", r.failedAfter, r.failedKinds, r.firstFailure)
	}
	// The controller's session ticket key outlives its process: every agent resumes, but one
	// whose handshake failed during the restart (a timeout on a loaded machine), as crypto/tls
	// then drops its ticket.
	if r.unexplained > 0 {
		t.Errorf("%d of %d reconnects resumed their TLS session; %d did not although they held a ticket and no handshake of theirs failed: %s",
			r.resumed, len(r.back), r.unexplained, strings.Join(r.notResumed, "; "))
	}
	for _, f := range []string{"cpu.pprof", "trace.out", "loadgen-trace.out", "ready+2s-goroutine.pprof", "ready+2s-block.pprof", "ready+2s-mutex.pprof"} {
		if st, err := os.Stat(filepath.Join(o.ProfileDir, f)); err != nil || st.Size() == 0 {
			t.Errorf("profile %s of the restarted controller: %v (empty or missing)", f, err)
		}
	}
	if peak := slices.Max(r.perSecond); peak > 3*agents/4 {
		t.Errorf("%d reconnects in one second (per second: %v); want at most %d (3N/4; the model is at most N/4 = %d)", peak, r.perSecond, 3*agents/4, agents/4)
	}
}
