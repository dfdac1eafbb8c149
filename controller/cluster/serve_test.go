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
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgewan/edgewan/agent/sim"
	"github.com/edgewan/edgewan/controller/mqtt/natstest"
	"github.com/edgewan/edgewan/controller/store/storetest"
	"github.com/edgewan/edgewan/telemetry/sink/influxtest"
)

// TestServeScaledOut runs the real controller binary in the scaled-out mode, configured
// through the EDGEWAN_* variables deploy/compose.scale-out.yaml sets, on a 3-node NATS
// cluster (scripts/nats.sh), PostgreSQL and InfluxDB: it becomes ready, takes every
// partition's lease, gives a claiming agent the NATS nodes as its broker list, and evaluates
// the agent's report sent through a NATS node (the site turns up in the API). An
// inconsistent setup (NATS without PostgreSQL) is refused at start with both flags named.
func TestServeScaledOut(t *testing.T) {
	pgURL := storetest.PostgresURL(t)
	db, err := sql.Open("pgx", pgURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	nc := natstest.Start(t)
	influxBase := os.Getenv(influxtest.EnvURL)
	if influxBase == "" {
		influxBase = influxtest.Start(t).URL
	}
	idb := influxtest.CreateDatabase(t, influxBase)
	bin := filepath.Join(t.TempDir(), "controller")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/edgewan/edgewan/controller").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dataDir := t.TempDir()
	env := append(os.Environ(),
		"EDGEWAN_DATA_DIR="+dataDir, "EDGEWAN_METRICS_LISTEN=", "EDGEWAN_DATABASE_URL="+pgURL,
		"EDGEWAN_INFLUX_URL="+idb.URL, "EDGEWAN_INFLUX_BUCKET="+idb.Bucket,
		"EDGEWAN_NATS_URLS="+strings.Join(nc.URLs, ","), "EDGEWAN_NATS_MQTT_URLS="+strings.Join(nc.MQTTURLs, ","),
		"EDGEWAN_NATS_USER="+natstest.User, "EDGEWAN_NATS_PASSWORD="+natstest.Password,
		"EDGEWAN_CLUSTER_ID=controller-1", "EDGEWAN_CLUSTER_PARTITIONS=16", "EDGEWAN_CLUSTER_LEASE_TTL=3s")

	t.Run("refused without PostgreSQL", func(t *testing.T) {
		cmd := exec.Command(bin, "serve", "--database-url", "", "--listen", "127.0.0.1:0")
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "--nats-urls needs --database-url") {
			t.Fatalf("serve with NATS and no PostgreSQL: %v; want a refusal naming --nats-urls and --database-url:\n%s", err, out)
		}
	})

	out, err := exec.Command(bin, "keys", "create", "--data-dir", dataDir, "--database-url", pgURL, "--scopes", "sdwan:read,sdwan:write").Output()
	if err != nil {
		t.Fatalf("controller keys create: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	token := strings.TrimSpace(lines[len(lines)-1])

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	var logBuf logBuffer
	cmd := exec.Command(bin, "serve", "--listen", addr)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, &logBuf, &logBuf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("controller log:\n%s", logBuf.String())
		}
	})
	base := "https://" + addr
	var hc *http.Client
	waitFor(t, 60*time.Second, "the controller in NATS mode answers /readyz 200", func() bool {
		select {
		case err := <-exited:
			stopped = true
			t.Fatalf("controller exited: %v", err)
		default:
		}
		if hc == nil {
			pem, err := os.ReadFile(filepath.Join(dataDir, "tls", "ca.crt"))
			pool := x509.NewCertPool()
			if err != nil || !pool.AppendCertsFromPEM(pem) {
				return false
			}
			hc = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
		}
		resp, err := hc.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	waitFor(t, 30*time.Second, "controller-1 holds the 16 partitions", func() bool {
		return leasesHeld(db, "controller-1") == 16
	})

	api := func(method, path string, body, v any, want int) {
		t.Helper()
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(method, base+path, bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		rb, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != want {
			t.Fatalf("%s %s: %d %s; want %d", method, path, resp.StatusCode, rb, want)
		}
		if v != nil {
			if err := json.Unmarshal(rb, v); err != nil {
				t.Fatal(err)
			}
		}
	}
	var site struct {
		ID       string    `json:"id"`
		Claim    string    `json:"claim_token"`
		Status   string    `json:"status"`
		LastSeen time.Time `json:"last_seen"`
	}
	api("POST", "/sd-wan/v1/sites", map[string]any{"name": "Branch 7", "role": "branch", "transports": []map[string]any{
		{"name": "inet", "kind": "broadband", "interface": "eth1", "gateway": "198.18.1.1", "probe_targets": []string{"198.18.100.1"}}}}, &site, http.StatusCreated)
	cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer ccancel()
	acc, err := sim.Claim(cctx, hc, base, site.Claim, "br7-r1")
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	if !slices.Equal(acc.MQTT.URLs, nc.MQTTURLs) {
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
		api("GET", "/sd-wan/v1/sites/"+site.ID, nil, &site, http.StatusOK)
		return (site.Status == "up" || site.Status == "degraded") && !site.LastSeen.IsZero()
	})

	// SIGINT: the controller leaves the cluster, releasing its leases for the next owner.
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	stopped = true
	if err := <-exited; err != nil {
		t.Fatalf("controller after SIGINT: %v", err)
	}
	if n := leasesHeld(db, "controller-1"); n != 0 {
		t.Fatalf("after a graceful stop controller-1 still holds %d leases; want them released", n)
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
