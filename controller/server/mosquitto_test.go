package server_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/edgewan/edgewan/agent/sim"
	"github.com/edgewan/edgewan/controller/config"
	"github.com/edgewan/edgewan/controller/mqtt"
	"github.com/edgewan/edgewan/controller/mqtt/mqtttest"
	"github.com/edgewan/edgewan/controller/sdwan"
	"github.com/edgewan/edgewan/controller/server/servertest"
	"github.com/edgewan/edgewan/controller/tlsgen"
	"github.com/edgewan/edgewan/telemetry"
)

// TestExternalMosquitto runs the loop through a real Mosquitto instead of the embedded broker:
// the controller connects as its own user, writes the agents' password and ACL files at claim
// (--mosquitto-dir), Mosquitto reloads them on SIGHUP, and the agent's telemetry reaches the
// health endpoint while its publish to another site's topic is dropped by Mosquitto's ACL.
func TestExternalMosquitto(t *testing.T) {
	dataDir := t.TempDir()
	// The controller's own CA signs Mosquitto's certificate too, so the CA handed to agents at
	// claim is the one that verifies the broker.
	files, _, err := tlsgen.Ensure(dataDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	const ctlPassword = "controller-secret-for-tests"
	mq := mqtttest.Start(t, mqtttest.Config{
		Controller: mqtt.MosquittoUser{Username: mqtt.ControllerUsername, Password: ctlPassword},
		TLSCert:    files.Cert, TLSKey: files.Key,
	})
	s := servertest.Start(t, servertest.Options{Config: func(c *config.Config) {
		c.DataDir = dataDir
		c.MQTTURL = strings.Replace(mq.TLSURL, "localhost", "localhost", 1)
		c.MQTTCA = files.CACert
		c.MQTTPassword = ctlPassword
		c.MQTTPublicURL = mq.TLSURL
		c.MosquittoDir = mq.Dir
	}})
	if s.MQTTAddr() != "" {
		t.Fatalf("embedded broker running at %s with --mqtt-url set", s.MQTTAddr())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rw := s.Key("sdwan:read", "sdwan:write")
	var site, other sdwan.Site
	s.Do("POST", "/sd-wan/v1/sites", rw, branchSite).JSON(t, &site)
	s.Do("POST", "/sd-wan/v1/sites", rw, `{"name":"Other","transports":[{"name":"inet","interface":"eth0"}]}`).JSON(t, &other)

	acc, err := sim.Claim(ctx, s.Client, s.URL, site.Claim, "br12")
	if err != nil {
		t.Fatal(err)
	}
	if acc.MQTT.URL != mq.TLSURL {
		t.Fatalf("claim gave broker %q; want %q", acc.MQTT.URL, mq.TLSURL)
	}
	passwd, _ := os.ReadFile(filepath.Join(mq.Dir, "passwd"))
	if !strings.Contains(string(passwd), acc.Device+":$7$") || strings.Contains(string(passwd), acc.MQTT.Password) {
		t.Fatalf("password file lacks the agent's hash, or holds its password:\n%s", passwd)
	}
	reloadMosquitto(t, mq)

	var ag *sim.Agent
	waitFor(t, func() bool { // Mosquitto reloads asynchronously after SIGHUP
		ag, err = sim.Connect(ctx, acc)
		return err == nil
	})
	defer ag.Close()

	var p struct{ Transports []struct{ Name string } }
	nextOf(t, ag, telemetry.KindPolicy, &p) // retained by Mosquitto for the agent
	if len(p.Transports) != 2 {
		t.Fatalf("policy through Mosquitto: %+v", p)
	}
	// Another site's topic: Mosquitto's ACL drops it silently (MQTT 3.1.1 has no refusal).
	_ = ag.PublishTopic(ctx, telemetry.Topic(other.ID, telemetry.KindTelemetry), []byte(`{"v":1}`))
	for i := 0; i < 3; i++ {
		if err := ag.Report(ctx, time.Now(), time.Second, sim.Window("mpls", 5, 0, 20, 1), sim.Window("inet", 50, 1, 30, 2)); err != nil {
			t.Fatal(err)
		}
	}
	var h sdwan.Health
	defer func() {
		if t.Failed() {
			resp, err := http.Get("http://" + s.MetricsAddr() + "/metrics")
			if err == nil {
				b, _ := io.ReadAll(resp.Body)
				for _, l := range strings.Split(string(b), "\n") {
					if strings.HasPrefix(l, "edgewan_ingest") {
						t.Log(l)
					}
				}
			}
			t.Log(mq.Log())
		}
	}()
	waitFor(t, func() bool {
		s.Do("GET", "/sd-wan/v1/sites/"+site.ID+"/health?window=5m", rw, nil).JSON(t, &h)
		return h.Status == "up" && len(h.Transports) == 2 && h.Transports[0].Samples == 3
	})
	if h.Transports[0].Name != "inet" || h.Transports[0].LossPct != 2 {
		t.Fatalf("health through Mosquitto: %+v", h)
	}
	var oh sdwan.Health
	s.Do("GET", "/sd-wan/v1/sites/"+other.ID+"/health?window=5m", rw, nil).JSON(t, &oh)
	for _, tr := range oh.Transports {
		if tr.Samples != 0 {
			t.Fatalf("the other site got telemetry through the ACL: %+v", oh)
		}
	}
}

// reloadMosquitto sends the test broker SIGHUP so it rereads its password and ACL files.
func reloadMosquitto(t *testing.T, mq *mqtttest.Server) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(mq.Dir, "mosquitto.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
}
