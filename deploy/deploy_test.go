package deploy

// Validates the deployment files against each other and against the code: the compose stack
// (the compose-spec loader docker compose uses, plus `docker compose config` where the plugin
// exists), the controller's settings in it (through the controller's own flag parsing and
// validation), the Grafana dashboards (datasource uids, Prometheus metric names from the
// controller's registry, InfluxDB measurement and field names from the sink's own writes), the
// systemd units (systemd-analyze) and the Dockerfiles.

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/sirupsen/logrus"
	"gopkg.in/yaml.v3"

	"github.com/edgewan/edgewan/controller/config"
	"github.com/edgewan/edgewan/controller/server/servertest"
	"github.com/edgewan/edgewan/controller/store/storetest"
	"github.com/edgewan/edgewan/telemetry"
	"github.com/edgewan/edgewan/telemetry/sink"
)

func TestMain(m *testing.M) {
	logrus.SetOutput(io.Discard) // the compose loader's warnings about unset variables are expected here
	storetest.Main(m)
}

func loadCompose(t *testing.T, envFiles ...string) (*types.Project, error) {
	t.Helper()
	opts, err := cli.NewProjectOptions([]string{"compose.yaml"},
		cli.WithWorkingDirectory("."), cli.WithEnvFiles(envFiles...), cli.WithDotEnv, cli.WithName("edgewan"))
	if err != nil {
		t.Fatal(err)
	}
	return opts.LoadProject(context.Background())
}

func service(t *testing.T, p *types.Project, name string) types.ServiceConfig {
	t.Helper()
	s, err := p.GetService(name)
	if err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	return s
}

// mountOf returns where service s mounts volume (or bind source) src.
func mountOf(s types.ServiceConfig, src string) (target string, readOnly bool) {
	for _, v := range s.Volumes {
		if v.Source == src || strings.HasSuffix(v.Source, src) {
			return v.Target, v.ReadOnly
		}
	}
	return "", false
}

func TestCompose(t *testing.T) {
	p, err := loadCompose(t, ".env.example")
	if err != nil {
		t.Fatalf("compose.yaml does not load: %v", err)
	}
	for _, name := range []string{"controller", "mosquitto", "postgres", "influxdb", "prometheus", "grafana"} {
		service(t, p, name)
	}
	ctl, mq := service(t, p, "controller"), service(t, p, "mosquitto")
	for _, s := range []types.ServiceConfig{ctl, mq} {
		if s.User == "" || strings.HasPrefix(s.User, "0") || strings.HasPrefix(s.User, "root") {
			t.Errorf("%s runs as %q; want a non-root user", s.Name, s.User)
		}
		if !s.ReadOnly || !slices.Contains(s.CapDrop, "ALL") {
			t.Errorf("%s: read_only %v, cap_drop %v; want a read-only root and every capability dropped", s.Name, s.ReadOnly, s.CapDrop)
		}
	}

	// The controller's environment is valid for the controller itself: every variable is one of
	// its flags, and the configuration they make passes its validation.
	cfg := controllerConfig(t, ctl.Environment)
	if cfg.MQTTURL == "" || cfg.MosquittoDir == "" || cfg.InfluxURL == "" || !strings.HasPrefix(cfg.DatabaseURL, "postgres://") {
		t.Errorf("controller: mqtt-url %q, mosquitto-dir %q, influx-url %q, database-url %q; want Mosquitto, InfluxDB and PostgreSQL",
			cfg.MQTTURL, cfg.MosquittoDir, cfg.InfluxURL, cfg.DatabaseURL)
	}

	// Mosquitto reads the files the controller writes, at the same paths (edgewan.conf names
	// them absolutely), and serves the controller's certificate.
	if dir, _ := mountOf(ctl, "mosquitto-auth"); dir != cfg.MosquittoDir {
		t.Errorf("controller mounts mosquitto-auth at %q; --mosquitto-dir is %q", dir, cfg.MosquittoDir)
	}
	if dir, ro := mountOf(mq, "mosquitto-auth"); dir != cfg.MosquittoDir || !ro {
		t.Errorf("mosquitto mounts mosquitto-auth at %q (read-only %v); want %q read-only", dir, ro, cfg.MosquittoDir)
	}
	tlsDir, _ := mountOf(ctl, "controller-tls")
	if tlsDir != filepath.Join(cfg.DataDir, "tls") || cfg.MQTTCA != filepath.Join(tlsDir, "ca.crt") {
		t.Errorf("controller-tls at %q, data dir %q, mqtt-ca %q: want DATA/tls holding the CA", tlsDir, cfg.DataDir, cfg.MQTTCA)
	}
	if dir, ro := mountOf(mq, "controller-tls"); dir != tlsDir || !ro {
		t.Errorf("mosquitto mounts controller-tls at %q (read-only %v); want %q read-only", dir, ro, tlsDir)
	}
	conf, err := os.ReadFile("mosquitto/mosquitto.conf")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"include_dir " + cfg.MosquittoDir, "certfile " + tlsDir + "/server.crt", "keyfile " + tlsDir + "/server.key", "listener 8883"} {
		if !strings.Contains(string(conf), want+"\n") {
			t.Errorf("mosquitto.conf lacks %q", want)
		}
	}
	if !slices.Contains(cfg.TLSHosts, "mosquitto") || !strings.Contains(cfg.MQTTURL, "//mosquitto:8883") {
		t.Errorf("tls-hosts %v, mqtt-url %q: the controller's certificate must cover the broker's name", cfg.TLSHosts, cfg.MQTTURL)
	}

	// Prometheus scrapes the controller's metrics port.
	_, port, _ := strings.Cut(cfg.MetricsListen, ":")
	prom, err := os.ReadFile("prometheus/prometheus.yml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(prom), `"controller:`+port+`"`) {
		t.Errorf("prometheus.yml does not scrape controller:%s", port)
	}

	// Secrets have no defaults: without the env file the stack refuses to load.
	if _, err := loadCompose(t); err == nil || !strings.Contains(err.Error(), "deploy/.env") {
		t.Errorf("compose.yaml without its env file: %v; want a refusal naming deploy/.env", err)
	}

	// The docker compose plugin, where installed, must agree (this machine may have only the client).
	if exec.Command("docker", "compose", "version").Run() == nil {
		out, err := exec.Command("docker", "compose", "-f", "compose.yaml", "--env-file", ".env.example", "config", "-q").CombinedOutput()
		if err != nil || len(bytes.TrimSpace(out)) > 0 {
			t.Errorf("docker compose config: %v\n%s", err, out)
		}
	} else {
		t.Log("docker compose plugin not installed: validated with the compose-spec loader only")
	}
}

// influxNames returns the measurement and field names the InfluxDB sink writes, read from a
// real write by the sink to a fake InfluxDB.
func influxNames(t *testing.T) (measurements, fields map[string]bool) {
	var mu sync.Mutex
	var body bytes.Buffer
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		body.Write(b)
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	sk, err := sink.NewInflux(sink.InfluxOptions{URL: srv.URL, Bucket: "telemetry", FlushInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer sk.Close()
	r := &telemetry.Report{V: 1, Site: "site_a", Device: "dev_a", Seq: 1, Time: time.Now(), WindowMs: 1000,
		Transport: []telemetry.TransportWindow{{Name: "mpls", Method: "icmp", Sent: 5, Lost: 1, LatencyMs: 20, P50Ms: 20, P95Ms: 22, MinMs: 19, MaxMs: 23, JitterMs: 1, StdDevMs: 1}}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := sk.Write(ctx, r); err != nil {
		t.Fatal(err)
	}
	if err := sk.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	measurements, fields = map[string]bool{}, map[string]bool{}
	mu.Lock()
	defer mu.Unlock()
	for _, line := range strings.Split(strings.TrimSpace(body.String()), "\n") {
		parts := strings.Split(line, " ") // no spaces in our tags: measurement,tags fields time
		if len(parts) != 3 {
			t.Fatalf("unexpected line protocol %q", line)
		}
		m, _, _ := strings.Cut(parts[0], ",")
		measurements[m] = true
		for _, kv := range strings.Split(parts[1], ",") {
			k, _, _ := strings.Cut(kv, "=")
			fields[k] = true
		}
	}
	if len(fields) == 0 {
		t.Fatal("the sink wrote nothing")
	}
	return measurements, fields
}

var (
	promName    = regexp.MustCompile(`\b(edgewan_[a-z0-9_]+|go_[a-z0-9_]+|process_[a-z0-9_]+)\b`)
	fluxMeasure = regexp.MustCompile(`r\._measurement == "([^"]+)"`)
	fluxField   = regexp.MustCompile(`r\._field == "([^"]+)"`)
	fluxTag     = regexp.MustCompile(`\br\.([a-z_]+)\b`)
)

// agentMetricNames lists the metric names the agent's code declares (Name: "edgewan_agent_...").
func agentMetricNames(t *testing.T) []string {
	t.Helper()
	decl := regexp.MustCompile(`Name:\s*"(edgewan_agent_[a-z0-9_]+)"`)
	var names []string
	err := filepath.WalkDir("../agent", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		for _, m := range decl.FindAllStringSubmatch(string(src), -1) {
			names = append(names, m[1])
		}
		return err
	})
	if err != nil || len(names) == 0 {
		t.Fatalf("no agent metrics found in ../agent (%v)", err)
	}
	return names
}

type dashPanel struct {
	ID         int    `json:"id"`
	Title      string `json:"title"`
	Type       string `json:"type"`
	Datasource *struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		Expr  string `json:"expr"`
		Query string `json:"query"`
	} `json:"targets"`
	Panels []dashPanel `json:"panels"`
}

func TestDashboards(t *testing.T) {
	// The provisioned datasources.
	raw, err := os.ReadFile("grafana/provisioning/datasources/edgewan.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var prov struct {
		Datasources []struct{ UID, Type, URL string } `yaml:"datasources"`
	}
	if err := yaml.Unmarshal(raw, &prov); err != nil {
		t.Fatalf("datasources: %v", err)
	}
	dsType := map[string]string{}
	for _, d := range prov.Datasources {
		dsType[d.UID] = d.Type
	}
	if dsType["edgewan-prometheus"] != "prometheus" || dsType["edgewan-influxdb"] != "influxdb" {
		t.Fatalf("provisioned datasources %v; want edgewan-prometheus and edgewan-influxdb", dsType)
	}

	// What the controller exports and writes, and the agent's metrics (declared in its source).
	s := servertest.Start(t, servertest.Options{})
	metrics := append(s.MetricNames(), agentMetricNames(t)...)
	measurements, fields := influxNames(t)
	tags := map[string]bool{"site": true, "device": true, "transport": true, "_measurement": true, "_field": true, "_value": true, "_time": true}

	files, _ := filepath.Glob("grafana/dashboards/*.json")
	if len(files) < 3 {
		t.Fatalf("dashboards: %v; want the SD-WAN, controller and agents dashboards", files)
	}
	uids := map[string]string{}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var d struct {
				UID, Title string
				Panels     []dashPanel
				Templating struct {
					List []struct {
						Name       string
						Datasource struct{ UID string }
					}
				}
			}
			dec := json.NewDecoder(bytes.NewReader(raw))
			if err := dec.Decode(&d); err != nil {
				t.Fatalf("not JSON: %v", err)
			}
			if d.UID == "" || d.Title == "" || uids[d.UID] != "" {
				t.Fatalf("dashboard uid %q title %q: want both, the uid unique (also in %s)", d.UID, d.Title, uids[d.UID])
			}
			uids[d.UID] = f
			for _, v := range d.Templating.List {
				if dsType[v.Datasource.UID] == "" {
					t.Errorf("variable %s: datasource %q is not provisioned", v.Name, v.Datasource.UID)
				}
			}
			ids := map[int]bool{}
			var check func(ps []dashPanel)
			n := 0
			check = func(ps []dashPanel) {
				for _, p := range ps {
					check(p.Panels)
					if ids[p.ID] {
						t.Errorf("panel id %d twice", p.ID)
					}
					ids[p.ID] = true
					if p.Type == "row" {
						continue
					}
					n++
					if p.Datasource == nil || dsType[p.Datasource.UID] == "" || dsType[p.Datasource.UID] != p.Datasource.Type {
						t.Errorf("panel %q: datasource %+v is not a provisioned one", p.Title, p.Datasource)
						continue
					}
					if len(p.Targets) == 0 {
						t.Errorf("panel %q has no query", p.Title)
					}
					for _, tg := range p.Targets {
						switch p.Datasource.Type {
						case "prometheus":
							names := promName.FindAllString(tg.Expr, -1)
							if len(names) == 0 {
								t.Errorf("panel %q: query %q names no metric", p.Title, tg.Expr)
							}
							for _, m := range names {
								base := m
								for _, suf := range []string{"_bucket", "_sum", "_count"} {
									if b, ok := strings.CutSuffix(m, suf); ok && slices.Contains(metrics, b) {
										base = b
									}
								}
								if !slices.Contains(metrics, base) {
									t.Errorf("panel %q: metric %s is not exported by the controller", p.Title, m)
								}
							}
						case "influxdb":
							ms, fs := fluxMeasure.FindAllStringSubmatch(tg.Query, -1), fluxField.FindAllStringSubmatch(tg.Query, -1)
							if len(ms) == 0 || len(fs) == 0 {
								t.Errorf("panel %q: Flux query filters no measurement or field:\n%s", p.Title, tg.Query)
							}
							for _, m := range ms {
								if !measurements[m[1]] {
									t.Errorf("panel %q: measurement %q is not written by the sink (%v)", p.Title, m[1], measurements)
								}
							}
							for _, f := range fs {
								if !fields[f[1]] {
									t.Errorf("panel %q: field %q is not written by the sink (%v)", p.Title, f[1], fields)
								}
							}
							for _, tag := range fluxTag.FindAllStringSubmatch(tg.Query, -1) {
								if !tags[tag[1]] {
									t.Errorf("panel %q: column r.%s is neither a tag nor a Flux column", p.Title, tag[1])
								}
							}
						}
					}
				}
			}
			check(d.Panels)
			if n < 6 {
				t.Errorf("only %d panels", n)
			}
		})
	}
}

func TestSystemdUnits(t *testing.T) {
	units, _ := filepath.Glob("systemd/*.service")
	paths, _ := filepath.Glob("systemd/*.path")
	units = append(units, paths...)
	if len(units) < 4 {
		t.Fatalf("units: %v", units)
	}
	// The brief's command lines: the controller serves from its state directory; the agent as
	// the deployment documents it.
	wantExec := map[string]string{
		"edgewan-controller.service": "/usr/local/bin/controller serve --data-dir /var/lib/edgewan",
		"edgewan-agent.service":      "/usr/local/bin/agent run --config /etc/edgewan/agent.yaml --data-dir /var/lib/edgewan-agent --metrics-listen 127.0.0.1:9101",
	}
	tmp := t.TempDir()
	for _, u := range units {
		raw, err := os.ReadFile(u)
		if err != nil {
			t.Fatal(err)
		}
		text := string(raw)
		name := filepath.Base(u)
		if want, ok := wantExec[name]; ok && !strings.Contains(text, "\nExecStart="+want+"\n") {
			t.Errorf("%s: ExecStart is not %q", name, want)
		}
		if strings.HasSuffix(name, ".service") && strings.Contains(text, "[Install]") {
			for _, key := range []string{"NoNewPrivileges=yes", "ProtectSystem=strict", "ProtectHome=yes", "PrivateTmp=yes",
				"RestrictAddressFamilies=", "SystemCallFilter=@system-service", "CapabilityBoundingSet=", "User="} {
				if !strings.Contains(text, "\n"+key) {
					t.Errorf("%s: no %s", name, key)
				}
			}
		}
		// systemd-analyze verify needs the binaries; check the units with a stand-in.
		text = regexp.MustCompile(`(?m)^ExecStart=/usr/local/bin/[a-z]+`).ReplaceAllString(text, "ExecStart=/bin/true")
		if err := os.WriteFile(filepath.Join(tmp, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Log("systemd-analyze not installed: structural checks only")
		return
	}
	for _, u := range units {
		name := filepath.Base(u)
		cmd := exec.Command("systemd-analyze", "verify", name)
		cmd.Dir = tmp
		if out, err := cmd.CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
			t.Errorf("systemd-analyze verify %s: %v\n%s", name, err, out)
		}
	}
	// The exposure score systemd computes from the hardening options (0 best, 10 worst).
	// --threshold is on a 0-100 scale: 20 is an exposure of 2.0.
	for name, max := range map[string]string{"edgewan-controller.service": "20", "edgewan-agent.service": "30"} {
		cmd := exec.Command("systemd-analyze", "security", "--offline=true", "--no-pager", "--threshold="+max, name)
		cmd.Dir = tmp
		if out, err := cmd.CombinedOutput(); err != nil {
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			t.Errorf("systemd-analyze security %s: over %s (%v): %s", name, max, err, lines[len(lines)-1])
		}
	}
}

func TestDockerfiles(t *testing.T) {
	for _, tc := range []struct{ file, pkg string }{
		{"controller.Dockerfile", "./controller"},
		{"agent.Dockerfile", "./agent"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			raw, err := os.ReadFile(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			text := string(raw)
			var froms, users []string
			for _, line := range strings.Split(text, "\n") {
				f := strings.Fields(line)
				if len(f) >= 2 && f[0] == "FROM" {
					froms = append(froms, f[1])
					users = nil // USER counts in the final stage only
				}
				if len(f) >= 2 && f[0] == "USER" {
					users = append(users, f[1])
				}
			}
			if len(froms) < 2 {
				t.Errorf("%d FROM lines; want a multi-stage build", len(froms))
			}
			if last := froms[len(froms)-1]; !strings.Contains(last, "distroless/static") {
				t.Errorf("final stage FROM %s; want a static distroless base", last)
			}
			if len(users) == 0 || users[len(users)-1] == "root" || strings.HasPrefix(users[len(users)-1], "0") {
				t.Errorf("final stage USER %v; want a non-root user", users)
			}
			for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "buildinfo.Commit=${COMMIT}", "buildinfo.Date=${DATE}", "Version=${VERSION}", tc.pkg} {
				if !strings.Contains(text, want) {
					t.Errorf("no %q", want)
				}
			}
		})
	}
}

// controllerConfig reads a controller service's environment as `controller serve` would: every
// variable must be one of its flags', and the configuration they make must pass validation.
func controllerConfig(t *testing.T, env map[string]*string) config.Config {
	t.Helper()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	cfg := config.Default()
	cfg.Flags(fs)
	for k, v := range env {
		name := strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(k, "EDGEWAN_"), "_", "-"))
		if !strings.HasPrefix(k, "EDGEWAN_") || fs.Lookup(name) == nil {
			t.Errorf("controller environment %s is not a controller flag's variable", k)
			continue
		}
		t.Setenv(k, *v)
	}
	if err := config.ApplyEnv(fs); err != nil {
		t.Fatalf("controller environment: %v", err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("controller environment does not validate: %v", err)
	}
	return cfg
}
