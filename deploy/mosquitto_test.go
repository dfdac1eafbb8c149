package deploy

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/edgewan/edgewan/agent/sim"
	"github.com/edgewan/edgewan/controller/config"
	"github.com/edgewan/edgewan/controller/sdwan"
	"github.com/edgewan/edgewan/controller/server/servertest"
)

// syncBuffer is an io.Writer the test can read while a process writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func waitUntil(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
	}
}

// TestMosquittoStack runs the compose stack's Mosquitto for real, on this machine: the real
// broker with deploy/mosquitto/mosquitto.conf and run.sh (paths moved into a temp dir, the
// listener onto a free loopback port), and a real controller writing its certificate and the
// broker's files as in the stack. The controller connects over TLS with its account; a claimed
// agent's account works once run.sh has reloaded the broker, with the CA the claim handed out;
// its telemetry reaches the controller's health report.
func TestMosquittoStack(t *testing.T) {
	bin, err := exec.LookPath("mosquitto")
	if err != nil {
		bin = "/usr/sbin/mosquitto"
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("mosquitto not installed (scripts/mosquitto.sh install): %v", err)
	}
	tmp := t.TempDir()
	data, auth := filepath.Join(tmp, "data"), filepath.Join(tmp, "auth")
	tlsDir := filepath.Join(data, "tls")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()

	raw, err := os.ReadFile("mosquitto/mosquitto.conf")
	if err != nil {
		t.Fatal(err)
	}
	conf := strings.NewReplacer("/var/lib/edgewan/tls", tlsDir, "/var/lib/edgewan-mosquitto", auth, "/var/lib/edgewan-mosquitto-data/", tmp+"/",
		"listener 8883\n", "listener "+strconv.Itoa(port)+" 127.0.0.1\n").Replace(string(raw))
	if os.Geteuid() == 0 { // as root Mosquitto would drop to its own user, which cannot read the temp dir
		conf += "user root\n"
	}
	confPath := filepath.Join(tmp, "mosquitto.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}

	var out syncBuffer
	cmd := exec.Command("sh", "mosquitto/run.sh")
	cmd.Env = append(os.Environ(), "EDGEWAN_MOSQUITTO_DIR="+auth, "EDGEWAN_TLS_DIR="+tlsDir, "MOSQUITTO_CONF="+confPath,
		"MOSQUITTO_BIN="+bin, "RELOAD_POLL_SECONDS=1")
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) // run.sh and its broker
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("run.sh and mosquitto output:\n%s", out.String())
		}
	})

	const ctlPassword = "controller-secret-for-the-stack-test"
	url := "mqtts://localhost:" + strconv.Itoa(port)
	s := servertest.Start(t, servertest.Options{Config: func(c *config.Config) {
		c.DataDir = data
		c.MQTTURL, c.MQTTPublicURL = url, url
		c.MQTTCA = filepath.Join(tlsDir, "ca.crt")
		c.MQTTPassword = ctlPassword
		c.MosquittoDir = auth
	}})
	if !strings.Contains(out.String(), "waiting for") {
		t.Errorf("run.sh did not wait for the controller's files:\n%s", out.String())
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rw := s.Key("sdwan:read", "sdwan:write")
	var site sdwan.Site
	s.Do("POST", "/sd-wan/v1/sites", rw, `{"name":"Stack","transports":[{"name":"inet","interface":"eth0"}]}`).JSON(t, &site)
	acc, err := sim.Claim(ctx, s.Client, s.URL, site.Claim, "stack-r1")
	if err != nil {
		t.Fatal(err)
	}
	if acc.MQTT.URL != url || acc.MQTT.CAPEM == "" {
		t.Fatalf("claim's broker access: %+v", acc.MQTT)
	}
	waitUntil(t, "run.sh reloads mosquitto after the claim", 10*time.Second, func() bool {
		return strings.Contains(out.String(), "reloading mosquitto")
	})
	var ag *sim.Agent
	waitUntil(t, "the agent connects with its new account", 10*time.Second, func() bool {
		ag, err = sim.Connect(ctx, acc)
		return err == nil
	})
	defer ag.Close()
	if err := ag.Report(ctx, time.Now(), time.Second, sim.Window("inet", 5, 0, 25, 2)); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the report reaches the controller through mosquitto", 10*time.Second, func() bool {
		var h sdwan.Health
		s.Do("GET", "/sd-wan/v1/sites/"+site.ID+"/health", rw, nil).JSON(t, &h)
		return len(h.Transports) == 1 && h.Transports[0].Samples == 1
	})
}
