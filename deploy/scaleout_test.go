package deploy

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"

	"github.com/edgewan/edgewan/controller/natsauth"
)

// TestComposeScaleOut loads the scaled-out stack with the compose-spec loader (there is no
// Docker engine to run it here) and checks its shape: 3 controllers, 3 NATS nodes with the
// MQTT port published, the shared services, hardening, and each controller's environment:
// every variable one of `controller serve`'s flags, and the configuration they make valid and
// scaled out.
func TestComposeScaleOut(t *testing.T) {
	opts, err := cli.NewProjectOptions([]string{"compose.scale-out.yaml"},
		cli.WithWorkingDirectory("."), cli.WithEnvFiles(".env.example"), cli.WithDotEnv, cli.WithName("edgewan-scale-out"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("compose.scale-out.yaml does not load: %v", err)
	}
	for _, name := range []string{"controller-1", "controller-2", "controller-3", "nats-1", "nats-2", "nats-3",
		"postgres", "influxdb", "prometheus", "grafana"} {
		service(t, p, name)
	}
	ids := map[string]bool{}
	for _, n := range []string{"controller-1", "controller-2", "controller-3"} {
		s := service(t, p, n)
		if s.User == "" || strings.HasPrefix(s.User, "0") || !s.ReadOnly || !slices.Contains(s.CapDrop, "ALL") {
			t.Errorf("%s: user %q, read_only %v, cap_drop %v; want non-root, read-only, no capabilities", n, s.User, s.ReadOnly, s.CapDrop)
		}
		t.Run(n, func(t *testing.T) {
			cfg := controllerConfig(t, s.Environment)
			if !cfg.Scaled() || len(cfg.NATSURLs) != 3 || len(cfg.NATSMQTTURLs) != 3 || cfg.ClusterID == "" || ids[cfg.ClusterID] {
				t.Errorf("nats-urls %q, nats-mqtt-urls %q, cluster-id %q; want the 3 nodes and an ID of its own", cfg.NATSURLs, cfg.NATSMQTTURLs, cfg.ClusterID)
			}
			ids[cfg.ClusterID] = true
		})
	}
	for i, n := range []string{"nats-1", "nats-2", "nats-3"} {
		s := service(t, p, n)
		if len(s.Ports) != 1 || s.Ports[0].Target != 1883 || s.Ports[0].Published != []string{"1883", "1884", "1885"}[i] {
			t.Errorf("%s: ports %+v; want its MQTT listener published on %d", n, s.Ports, 1883+i)
		}
		if s.HealthCheck == nil {
			t.Errorf("%s: no health check (controllers wait for it)", n)
		}
	}
}

// TestNATSConfig has the real nats-server (scripts/nats.sh install) check deploy/nats/nats.conf
// with the auth.conf `controller nats-init` makes (operator mode), as the compose file mounts
// them side by side.
func TestNATSConfig(t *testing.T) {
	bin, err := exec.LookPath("nats-server")
	if err != nil {
		bin = "/usr/sbin/nats-server"
	}
	dir := t.TempDir()
	setup, err := natsauth.Generate(16)
	if err != nil {
		t.Fatal(err)
	}
	if err := setup.Write(filepath.Join(dir, "operator"), filepath.Join(dir, "operator", "operator.jwt")); err != nil {
		t.Fatal(err)
	}
	conf, err := os.ReadFile("nats/nats.conf")
	if err != nil {
		t.Fatal(err)
	}
	// The resolver's directory is the container's /data/jwt: here a directory of the test's.
	conf = bytes.ReplaceAll(conf, []byte(`"/data/jwt"`), []byte(strconv.Quote(filepath.Join(dir, "jwt"))))
	if err := os.WriteFile(filepath.Join(dir, "nats.conf"), conf, 0o644); err != nil {
		t.Fatal(err)
	}
	auth, err := os.ReadFile(filepath.Join(dir, "operator", "auth.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "auth.conf"), auth, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "-t", "-c", filepath.Join(dir, "nats.conf")).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "is valid") {
		t.Errorf("nats-server -t -c nats/nats.conf (with a nats-init auth.conf): %v\n%s", err, out)
	}
}
