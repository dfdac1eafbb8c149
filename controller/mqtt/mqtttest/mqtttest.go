// Package mqtttest starts real MQTT brokers for tests: a private Mosquitto per call, secured by
// the files controller/mqtt.WriteMosquittoFiles generates, and stopped when the test ends.
//
//	url := mqtttest.Mosquitto(t, agents, mqtt.MosquittoUser{Password: "pw"})
//
// Mosquitto is installed with apt by scripts/mosquitto.sh when missing. When it cannot be
// installed or started, the test fails; it never skips.
package mqtttest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgewan/edgewan/controller/mqtt"
	"github.com/edgewan/edgewan/scripts/scriptpath"
	"github.com/edgewan/edgewan/scripts/testserver"
)

// Config says what a test Mosquitto holds.
type Config struct {
	Agents     []mqtt.MosquittoUser
	Controller mqtt.MosquittoUser // Username "" means mqtt.ControllerUsername
	// TLSCert and TLSKey (PEM files), when set, add a TLS listener: Server.TLSURL.
	TLSCert, TLSKey string
}

// Server is a running test Mosquitto.
type Server struct {
	URL    string // tcp://127.0.0.1:PORT
	TLSURL string // mqtts://localhost:PORT when Config.TLSCert is set, else ""
	Dir    string // its files: passwd, acl, edgewan.conf, mosquitto.conf, mosquitto.log
	Files  mqtt.MosquittoFiles

	script        string
	port, tlsPort int
	extra         string
}

// Mosquitto starts a Mosquitto for agents and the controller and returns its URL
// (tcp://127.0.0.1:PORT). It is stopped via t.Cleanup.
func Mosquitto(t testing.TB, agents []mqtt.MosquittoUser, controller mqtt.MosquittoUser) string {
	t.Helper()
	return Start(t, Config{Agents: agents, Controller: controller}).URL
}

const (
	dirPrefix = "edgewan-mosquitto-"
)

var (
	installOnce sync.Once
	installErr  error
)

// Start starts a Mosquitto as cfg says; it is stopped and its directory removed via t.Cleanup.
func Start(t testing.TB, cfg Config) *Server {
	t.Helper()
	script, err := scriptpath.Find("mosquitto.sh")
	if err != nil {
		t.Fatalf("mqtttest: %v", err)
	}
	install(script)
	if installErr != nil {
		t.Fatalf("mqtttest: cannot install Mosquitto: %v", installErr)
	}
	dir, err := testserver.OwnedDir(dirPrefix)
	if err != nil {
		t.Fatalf("mqtttest: %v", err)
	}
	s := &Server{Dir: dir, script: script}
	t.Cleanup(func() {
		if _, err := testserver.Run(nil, script, time.Minute, "stop", dir); err != nil {
			t.Errorf("mqtttest: stop Mosquitto in %s: %v", dir, err)
			return
		}
		if !t.Failed() {
			os.RemoveAll(dir)
		} else {
			t.Logf("mqtttest: kept %s (see mosquitto.log)", dir)
		}
	})
	s.Files, err = mqtt.WriteMosquittoFiles(dir, cfg.Agents, cfg.Controller)
	if err != nil {
		t.Fatalf("mqtttest: %v", err)
	}
	var errs []error
	for attempt := 0; attempt < 3; attempt++ { // another process may take a free port first
		if s.port, err = testserver.FreePort(); err != nil {
			t.Fatalf("mqtttest: %v", err)
		}
		s.extra = ""
		if cfg.TLSCert != "" {
			if s.tlsPort, err = testserver.FreePort(); err != nil {
				t.Fatalf("mqtttest: %v", err)
			}
			s.extra = fmt.Sprintf("listener %d 127.0.0.1\ncertfile %s\nkeyfile %s\n", s.tlsPort, cfg.TLSCert, cfg.TLSKey)
		}
		if err = s.start(); err == nil {
			return s
		}
		errs = append(errs, err)
		if !strings.Contains(err.Error(), "in use") && !strings.Contains(err.Error(), "does not accept") {
			break
		}
	}
	t.Fatalf("mqtttest: cannot start Mosquitto:\n%v", errors.Join(errs...))
	return nil
}

func (s *Server) start() error {
	u, err := testserver.Run(nil, s.script, 2*time.Minute, "start", s.Dir, strconv.Itoa(s.port), s.extra)
	if err != nil {
		return err
	}
	s.URL = u
	if s.tlsPort != 0 {
		s.TLSURL = fmt.Sprintf("mqtts://localhost:%d", s.tlsPort)
	}
	return nil
}

// Restart stops the broker and starts it again on the same ports. It keeps no state (no
// persistence): sessions and retained messages are gone, as after a crash.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Stop(t)
	if err := s.start(); err != nil {
		t.Fatalf("mqtttest: restart Mosquitto: %v", err)
	}
}

// Stop stops the broker (Restart starts it again).
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	if _, err := testserver.Run(nil, s.script, time.Minute, "stop", s.Dir); err != nil {
		t.Fatalf("mqtttest: stop Mosquitto: %v", err)
	}
}

// Reload sends the broker SIGHUP: it rereads its password and ACL files (e.g. after the files
// in Dir were rewritten). Mosquitto does it asynchronously, after this returns.
func (s *Server) Reload(t testing.TB) {
	t.Helper()
	if _, err := testserver.Run(nil, s.script, time.Minute, "reload", s.Dir); err != nil {
		t.Fatalf("mqtttest: reload Mosquitto: %v", err)
	}
}

// Log returns the broker's log so far, for failure messages.
func (s *Server) Log() string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, "mosquitto.log"))
	return string(b)
}

// PasswdHash returns the hash Mosquitto's own mosquitto_passwd makes of password, to check
// that hashes cross between Mosquitto and controller/mqtt.
func PasswdHash(t testing.TB, password string) string {
	t.Helper()
	script, err := scriptpath.Find("mosquitto.sh")
	if err != nil {
		t.Fatalf("mqtttest: %v", err)
	}
	install(script)
	if installErr != nil {
		t.Fatalf("mqtttest: cannot install Mosquitto: %v", installErr)
	}
	file := filepath.Join(t.TempDir(), "passwd")
	out, err := exec.Command("mosquitto_passwd", "-c", "-b", file, "user", password).CombinedOutput()
	if err != nil {
		t.Fatalf("mqtttest: mosquitto_passwd: %v\n%s", err, out)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	h, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "user:")
	if !ok {
		t.Fatalf("mqtttest: mosquitto_passwd wrote %q", b)
	}
	return h
}

func install(script string) {
	installOnce.Do(func() {
		testserver.ReapStale(dirPrefix, func(dir string) error {
			_, err := testserver.Run(nil, script, time.Minute, "stop", dir)
			return err
		})
		_, installErr = testserver.Run(nil, script, 15*time.Minute, "install") // once, not by every parallel test
	})
}
