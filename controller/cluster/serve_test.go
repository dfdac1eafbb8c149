package cluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/edgewan/edgewan/agent/sim"
	"github.com/edgewan/edgewan/controller/mqtt/natstest"
)

// TestServeScaledOut runs the real controller binary in the scaled-out mode, configured
// through the EDGEWAN_* variables deploy/compose.scale-out.yaml sets, on a 3-node NATS
// cluster (scripts/nats.sh), PostgreSQL and InfluxDB: it becomes ready, takes every
// partition's lease, gives a claiming agent the NATS nodes as its broker list, and evaluates
// the agent's report sent through a NATS node (the site turns up in the API). A second
// process joins (8/8 partitions); the site's owner is killed with SIGKILL and the other
// process takes every partition and evaluates the agent's continuing reports; SIGINT then
// releases its leases. An inconsistent setup (NATS without PostgreSQL) is refused at start
// with both flags named.
func TestServeScaledOut(t *testing.T) {
	so := newScaledOut(t, 3*time.Second)
	db, pgURL, nc, bin, env := so.db, so.pgURL, so.nc, so.bin, so.env

	t.Run("refused without PostgreSQL", func(t *testing.T) {
		cmd := exec.Command(bin, "serve", "--database-url", "", "--listen", "127.0.0.1:0")
		cmd.Env = append(env, "EDGEWAN_DATA_DIR="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "--nats-urls needs --database-url") {
			t.Fatalf("serve with NATS and no PostgreSQL: %v; want a refusal naming --nats-urls and --database-url:\n%s", err, out)
		}
	})

	c1 := startServe(t, bin, env, "controller-1")
	waitFor(t, 30*time.Second, "controller-1 holds the 16 partitions", func() bool {
		return leasesHeld(db, "controller-1") == 16
	})
	out, err := exec.Command(bin, "keys", "create", "--data-dir", c1.dataDir, "--database-url", pgURL, "--scopes", "sdwan:read,sdwan:write").Output()
	if err != nil {
		t.Fatalf("controller keys create: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	token := strings.TrimSpace(lines[len(lines)-1]) // in the shared database: every controller knows it

	var site struct {
		ID       string    `json:"id"`
		Claim    string    `json:"claim_token"`
		Status   string    `json:"status"`
		LastSeen time.Time `json:"last_seen"`
		// The latest figures of the site's one transport: only a report's evaluation sets them.
		Transports []struct {
			LatencyMs float64 `json:"latency_ms"`
		} `json:"transports"`
	}
	c1.api(t, token, "POST", "/sd-wan/v1/sites", map[string]any{"name": "Branch 7", "role": "branch", "transports": []map[string]any{
		{"name": "inet", "kind": "broadband", "interface": "eth1", "gateway": "198.18.1.1", "probe_targets": []string{"198.18.100.1"}}}}, &site, http.StatusCreated)
	cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer ccancel()
	acc, err := sim.Claim(cctx, c1.hc, c1.base, site.Claim, "br7-r1")
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	if !sameNodes(acc.MQTT.URLs, nc.MQTTURLs) {
		t.Fatalf("claim gave broker list %q; want the NATS nodes %q (the default of --mqtt-public-url)", acc.MQTT.URLs, nc.MQTTURLs)
	}
	// The test cluster has one account for everyone (per-device NATS users are not done:
	// docs/scale-out.md); the agent connects to the last node of its list.
	acc.MQTT.URL, acc.MQTT.Username, acc.MQTT.Password = nc.MQTTURLs[2], natstest.User, natstest.Password
	ag, err := sim.Connect(cctx, acc)
	if err != nil {
		t.Fatal(err)
	}
	defer ag.Close()
	if err := ag.Report(cctx, time.Now(), 10*time.Second, sim.Window("inet", 30, 0, 12, 1)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the agent's report through NATS turns the site up", func() bool {
		c1.api(t, token, "GET", "/sd-wan/v1/sites/"+site.ID, nil, &site, http.StatusOK)
		return (site.Status == "up" || site.Status == "degraded") && !site.LastSeen.IsZero()
	})

	// A second controller process joins: the partitions are shared 8/8. Then the owner of the
	// site's partition is killed (SIGKILL, leases not released): the other takes all 16 within
	// the lease TTL and evaluates the reports the agent sends from then on.
	c2 := startServe(t, bin, env, "controller-2")
	waitFor(t, 30*time.Second, "two controller processes share the partitions 8/8", func() bool {
		return leasesHeld(db, "controller-1") == 8 && leasesHeld(db, "controller-2") == 8
	})
	var owner string
	if err := db.QueryRow(`SELECT owner FROM edgewan_partition_leases WHERE partition = $1`, Partition(site.ID, 16)).Scan(&owner); err != nil {
		t.Fatal(err)
	}
	victim, survivor := c1, c2
	if owner == "controller-2" {
		victim, survivor = c2, c1
	}
	killedAt := time.Now()
	victim.kill(t)
	rctx, stopReports := context.WithCancel(context.Background())
	reporting := make(chan struct{})
	go func() {
		defer close(reporting)
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-rctx.Done():
				return
			case <-tick.C:
				_ = ag.Report(rctx, time.Now(), 10*time.Second, sim.Window("inet", 30, 0, 77, 1)) // 77: after the kill
			}
		}
	}()
	defer func() { stopReports(); <-reporting }()
	took := waitFor(t, 30*time.Second, survivor.id+" takes the dead controller's partitions", func() bool {
		return leasesHeld(db, survivor.id) == 16
	})
	waitFor(t, 30*time.Second, survivor.id+" evaluates the reports sent after the kill (latency 77 ms)", func() bool {
		survivor.api(t, token, "GET", "/sd-wan/v1/sites/"+site.ID, nil, &site, http.StatusOK)
		return len(site.Transports) == 1 && site.Transports[0].LatencyMs == 77
	})
	t.Logf("kill -9 of %s (owner of the site): %s held all 16 partitions after %v and evaluated the reports sent since (%v after the kill)",
		victim.id, survivor.id, took.Round(time.Millisecond), time.Since(killedAt).Round(time.Millisecond))

	// SIGINT: the survivor leaves the cluster, releasing its leases for the next owner.
	survivor.interrupt(t)
	if n := leasesHeld(db, survivor.id); n != 0 {
		t.Fatalf("after a graceful stop %s still holds %d leases; want them released", survivor.id, n)
	}
}

// serveProc is a `controller serve` process in the scaled-out mode.
type serveProc struct {
	id, dataDir, base string
	hc                *http.Client
	cmd               *exec.Cmd
	exited            chan error
	stopped           bool
	log               logBuffer
}

// startServe starts the binary as cluster member id, with its own data dir and a free
// loopback port, and waits until /readyz answers 200.
func startServe(t testing.TB, bin string, env []string, id string) *serveProc {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	p := &serveProc{id: id, dataDir: t.TempDir(), base: "https://" + addr, exited: make(chan error, 1)}
	p.cmd = exec.Command(bin, "serve", "--listen", addr)
	p.cmd.Env = append(env, "EDGEWAN_DATA_DIR="+p.dataDir, "EDGEWAN_CLUSTER_ID="+id)
	p.cmd.Stdout, p.cmd.Stderr = &p.log, &p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- p.cmd.Wait() }()
	t.Cleanup(func() {
		if !p.stopped {
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			t.Logf("%s log:\n%s", id, p.log.String())
		}
	})
	waitFor(t, 60*time.Second, id+" in NATS mode answers /readyz 200", func() bool {
		select {
		case err := <-p.exited:
			p.stopped = true
			t.Fatalf("%s exited: %v", id, err)
		default:
		}
		if p.hc == nil {
			pem, err := os.ReadFile(filepath.Join(p.dataDir, "tls", "ca.crt"))
			pool := x509.NewCertPool()
			if err != nil || !pool.AppendCertsFromPEM(pem) {
				return false
			}
			p.hc = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
		}
		resp, err := p.hc.Get(p.base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return p
}

func (p *serveProc) api(t testing.TB, token, method, path string, body, v any, want int) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, p.base+path, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rb, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s on %s: %d %s; want %d", method, path, p.id, resp.StatusCode, rb, want)
	}
	if v != nil {
		if err := json.Unmarshal(rb, v); err != nil {
			t.Fatal(err)
		}
	}
}

// kill stops p with SIGKILL: its leases are not released.
func (p *serveProc) kill(t testing.TB) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p.stopped = true
	<-p.exited
}

// interrupt stops p with SIGINT and requires a clean exit.
func (p *serveProc) interrupt(t testing.TB) { p.signal(t, os.Interrupt) }

// terminate stops p with SIGTERM and requires a clean exit.
func (p *serveProc) terminate(t testing.TB) { p.signal(t, syscall.SIGTERM) }

func (p *serveProc) signal(t testing.TB, sig os.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	p.stopped = true
	if err := <-p.exited; err != nil {
		t.Fatalf("%s after %v: %v\n%s", p.id, sig, err, p.log.String())
	}
}

// leasesHeld counts the unexpired leases of owner (-1 before the controller made the table).
func leasesHeld(db *sql.DB, owner string) int {
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM edgewan_partition_leases WHERE owner = $1 AND expires_at > now()`, owner).Scan(&n); err != nil {
		return -1
	}
	return n
}

// logBuffer collects a child process's output while the test reads it.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
