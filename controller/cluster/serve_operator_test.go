package cluster

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgewan/edgewan/agent/claim"
	"github.com/edgewan/edgewan/agent/engine"
	"github.com/edgewan/edgewan/agent/sim"
	"github.com/edgewan/edgewan/agent/spool"
	"github.com/edgewan/edgewan/controller/mqtt/natstest"
	"github.com/edgewan/edgewan/controller/store/storetest"
	"github.com/edgewan/edgewan/telemetry"
	"github.com/edgewan/edgewan/telemetry/sink/influxtest"
)

// TestServeOperatorMode runs the real controller binary with per-device NATS credentials
// (--nats-keys, NATS operator mode; docs/scale-out.md) on a 3-node cluster set up by
// `controller nats-init`: the controller connects with users it signs itself, a claiming agent
// gets its own NATS user JWT as its MQTT password and its report, sent with that credential
// unchanged, is evaluated; deleting the site revokes the credential: the agent's connection is
// closed and the credential no longer connects to any node.
func TestServeOperatorMode(t *testing.T) {
	pgURL := storetest.PostgresURL(t)
	influxBase := os.Getenv(influxtest.EnvURL)
	if influxBase == "" {
		influxBase = influxtest.Start(t).URL
	}
	idb := influxtest.CreateDatabase(t, influxBase)
	bin := filepath.Join(t.TempDir(), "controller")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/edgewan/edgewan/controller").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	natsDir := filepath.Join(t.TempDir(), "nats")
	if out, err := exec.Command(bin, "nats-init", "--partitions", "16", natsDir).CombinedOutput(); err != nil {
		t.Fatalf("controller nats-init: %v\n%s", err, out)
	}
	nc := natstest.StartOperator(t, filepath.Join(natsDir, "auth.conf"), 16)
	env := append(os.Environ(), "EDGEWAN_METRICS_LISTEN=", "EDGEWAN_DATABASE_URL="+pgURL,
		"EDGEWAN_INFLUX_URL="+idb.URL, "EDGEWAN_INFLUX_BUCKET="+idb.Bucket,
		"EDGEWAN_NATS_URLS="+strings.Join(nc.URLs, ","), "EDGEWAN_NATS_MQTT_URLS="+strings.Join(nc.MQTTURLs, ","),
		"EDGEWAN_NATS_KEYS="+filepath.Join(natsDir, "controller-keys.json"),
		"EDGEWAN_CLUSTER_PARTITIONS=16", "EDGEWAN_CLUSTER_LEASE_TTL=3s")

	t.Run("refused with keys of other partitions", func(t *testing.T) {
		cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0")
		cmd.Env = append(env, "EDGEWAN_DATA_DIR="+t.TempDir(), "EDGEWAN_CLUSTER_PARTITIONS=8")
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "--nats-keys was made for 16 partitions") {
			t.Fatalf("serve with --cluster-partitions 8 and keys for 16: %v; want a refusal naming both:\n%s", err, out)
		}
	})

	c1 := startServe(t, bin, env, "controller-1")
	out, err := exec.Command(bin, "keys", "create", "--data-dir", c1.dataDir, "--database-url", pgURL, "--scopes", "sdwan:read,sdwan:write").Output()
	if err != nil {
		t.Fatalf("controller keys create: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	token := strings.TrimSpace(lines[len(lines)-1])
	var site struct {
		ID         string `json:"id"`
		Claim      string `json:"claim_token"`
		Status     string `json:"status"`
		Transports []struct {
			LatencyMs float64 `json:"latency_ms"`
		} `json:"transports"`
	}
	c1.api(t, token, "POST", "/sd-wan/v1/sites", map[string]any{"name": "Branch 9", "role": "branch", "transports": []map[string]any{
		{"name": "inet", "kind": "broadband", "interface": "eth1", "gateway": "198.18.1.1", "probe_targets": []string{"198.18.100.1"}}}}, &site, http.StatusCreated)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	acc, err := sim.Claim(ctx, c1.hc, c1.base, site.Claim, "br9-r1")
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	if !strings.HasPrefix(acc.MQTT.Password, "eyJ") { // a JWT, not a random password
		t.Fatalf("claim gave a password that is not a NATS user JWT")
	}
	acc.MQTT.URL = nc.MQTTURLs[1] // the credential as the claim gave it
	if acc.MQTT.Broker != claim.BrokerNATS {
		t.Fatalf("claim gave broker kind %q; want %q", acc.MQTT.Broker, claim.BrokerNATS)
	}

	// The agent's own uplink with that credential, in the NATS profile (QoS 0 reports and
	// subscriptions, nothing retained): the device's permissions carry it, and its reports
	// leave the spool only at the controller's watermark, heard through a QoS 0 subscription.
	sp, err := spool.Open(spool.Options{Dir: t.TempDir(), NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	up, err := engine.NewUplink(&claim.Credentials{Site: acc.Site.ID, Device: acc.Device, MQTTURL: acc.MQTT.URL, MQTTURLs: acc.MQTT.URLs,
		Username: acc.MQTT.Username, Password: acc.MQTT.Password, Broker: acc.MQTT.Broker}, sp, nil)
	if err != nil {
		t.Fatal(err)
	}
	upCtx, upCancel := context.WithCancel(ctx)
	upDone := make(chan struct{})
	go func() { defer close(upDone); up.Run(upCtx) }()
	tws := []telemetry.TransportWindow{{Name: "inet", Method: "icmp", Sent: 30, LatencyMs: 40, P50Ms: 40, P95Ms: 41, MinMs: 39, MaxMs: 42}}
	for round := range 2 { // the first before any watermark (QoS 1), then at QoS 0
		for range 3 {
			up.Report(time.Now(), 10*time.Second, tws)
		}
		waitFor(t, 30*time.Second, fmt.Sprintf("the agent's uplink: spool emptied by the watermark (round %d)", round+1), func() bool { return sp.Stats().Records == 0 })
	}
	if m, n := up.DeleteMode(), up.PubackFallbacks(); m != "watermark" || n != 0 {
		t.Errorf("the agent's uplink: delete mode %q, %v PUBACK fallbacks; want watermark, none", m, n)
	}
	upCancel()
	<-upDone

	ag, err := sim.Connect(ctx, acc)
	if err != nil {
		t.Fatalf("the agent with its own NATS credential: %v", err)
	}
	defer ag.Close()
	ag.ResumeSeq(sp.Stats().LastID) // the same device: its sequence goes on from the uplink's
	if err := ag.Report(ctx, time.Now(), 10*time.Second, sim.Window("inet", 30, 0, 23, 1)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the agent's report with its own credential is evaluated (latency 23 ms)", func() bool {
		c1.api(t, token, "GET", "/sd-wan/v1/sites/"+site.ID, nil, &site, http.StatusOK)
		return len(site.Transports) == 1 && site.Transports[0].LatencyMs == 23
	})

	// Deleting the site revokes the credential: the controller pushes the account JWT with
	// the revocation; the servers close the agent's connection and refuse it on every node.
	c1.api(t, token, "DELETE", "/sd-wan/v1/sites/"+site.ID, nil, nil, http.StatusNoContent)
	waitFor(t, 30*time.Second, "the deleted site's agent is disconnected", func() bool { return !ag.Connected() })
	for i, u := range nc.MQTTURLs {
		acc.MQTT.URL = u
		before := nc.MQTTAuthFailures(t, i+1)
		cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
		a2, err := sim.Connect(cctx, acc)
		ccancel()
		if err == nil {
			a2.Close()
			t.Errorf("node %d let the deleted site's credential in", i+1)
		}
		// NATS 2.9 closes the connection (the agent sees EOF, not a CONNACK): its log says why.
		if after := nc.AwaitMQTTAuthFailures(t, i+1, before+1); after <= before {
			t.Errorf("node %d logged no MQTT authentication failure for the deleted site's credential (%v)", i+1, err)
		}
	}
}
