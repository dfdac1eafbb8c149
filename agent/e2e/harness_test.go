// Package e2e runs the real controller and agent binaries against each other in a
// network-namespace lab (agent/internal/netlab): real ICMP, real netlink, the embedded broker.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netns"

	"github.com/edgewan/edgewan/agent/dataplane"
	"github.com/edgewan/edgewan/agent/internal/netlab"
)

var controllerBin, agentBin string

// logs are the outputs of the running processes, shown when a wait fails (with -v).
var logs []*syncBuffer

// procs are the agents started, for goroutine dumps (EDGEWAN_E2E_DUMP=1) when a wait fails.
var procs []*os.Process

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "edgewan-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	controllerBin, agentBin = filepath.Join(dir, "controller"), filepath.Join(dir, "agent")
	for bin, pkg := range map[string]string{controllerBin: "../../controller", agentBin: ".."} {
		cmd := exec.Command("go", "build", "-o", bin, pkg)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: building", pkg, ":", err)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// syncBuffer collects a process's output for failure messages.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *syncBuffer) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Len()
}

// ---- controller -------------------------------------------------------------------------------

type controller struct {
	dataDir, ip                   string
	apiPort, mqttPort, metricPort int
	key                           string
	hc                            *http.Client
	cmd                           *exec.Cmd
	done                          chan error
	log                           *syncBuffer
	holdDown                      time.Duration
}

func freePort(t testing.TB, ip string) int {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// newController prepares a controller on the lab's management address with an API key; start
// runs it.
func newController(t testing.TB, lab *netlab.Lab, holdDown time.Duration) *controller {
	t.Helper()
	ip := lab.MgmtRootIP.String()
	c := &controller{dataDir: t.TempDir(), ip: ip, apiPort: freePort(t, ip), mqttPort: freePort(t, ip), metricPort: freePort(t, ip), holdDown: holdDown}
	out, err := exec.Command(controllerBin, "keys", "create", "--data-dir", c.dataDir, "--scopes", "sdwan:read,sdwan:write", "--name", "e2e").CombinedOutput()
	if err != nil {
		t.Fatalf("keys create: %v: %s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	c.key = lines[len(lines)-1]
	c.start(t)
	t.Cleanup(func() { c.stop(t) })
	return c
}

func (c *controller) base() string {
	return "https://" + net.JoinHostPort(c.ip, strconv.Itoa(c.apiPort))
}

func (c *controller) start(t testing.TB) {
	t.Helper()
	c.log = &syncBuffer{}
	c.cmd = exec.Command(controllerBin, "serve", "--data-dir", c.dataDir,
		"--listen", net.JoinHostPort(c.ip, strconv.Itoa(c.apiPort)),
		"--mqtt-listen", net.JoinHostPort(c.ip, strconv.Itoa(c.mqttPort)),
		"--metrics-listen", net.JoinHostPort(c.ip, strconv.Itoa(c.metricPort)),
		"--tls-hosts", c.ip, "--offline-after", "10s",
		"--steering-hold-down", c.holdDown.String(), "--steering-recover-after", "3")
	c.cmd.Stdout, c.cmd.Stderr = c.log, c.log
	logs = append(logs, c.log)
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c.done = make(chan error, 1)
	go func(cmd *exec.Cmd, done chan error) { done <- cmd.Wait() }(c.cmd, c.done)
	// trust the CA it generated
	waitFor(t, 30*time.Second, "controller CA", func() bool {
		select {
		case err := <-c.done:
			t.Fatalf("controller exited: %v\n%s", err, c.log)
		default:
		}
		_, err := os.Stat(filepath.Join(c.dataDir, "tls", "ca.crt"))
		return err == nil
	})
	pool := x509.NewCertPool()
	b, _ := os.ReadFile(filepath.Join(c.dataDir, "tls", "ca.crt"))
	pool.AppendCertsFromPEM(b)
	c.hc = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	waitFor(t, 30*time.Second, "controller ready", func() bool {
		select {
		case err := <-c.done:
			t.Fatalf("controller exited: %v\n%s", err, c.log)
		default:
		}
		resp, err := c.hc.Get(c.base() + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
}

func (c *controller) stop(t testing.TB) {
	if c.cmd == nil {
		return
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
	c.cmd = nil
}

// fingerprint is the SHA-256 of the controller's CA certificate, as it logs it.
func (c *controller) fingerprint(t testing.TB) string {
	b, err := os.ReadFile(filepath.Join(c.dataDir, "tls", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	sum := sha256.Sum256(blk.Bytes)
	return hex.EncodeToString(sum[:])
}

// do calls the API; out may be nil. It returns the status.
func (c *controller) do(t testing.TB, method, path string, body, out any) int {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, c.base()+path, r)
	req.Header.Set("Authorization", "Bearer "+c.key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, raw)
		}
	}
	if resp.StatusCode >= 300 && out != nil {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	return resp.StatusCode
}

// metric sums the samples of a Prometheus metric served at url (a missing metric is 0).
func metric(t testing.TB, hc *http.Client, url, name string) float64 {
	t.Helper()
	v, err := tryMetric(hc, url, name)
	if err != nil {
		t.Fatalf("metrics %s: %v", url, err)
	}
	return v
}

// tryMetric is metric for polling: an error while the process starts is not a failure.
func tryMetric(hc *http.Client, url, name string) (float64, error) {
	resp, err := hc.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, name+" ") || strings.HasPrefix(line, name+"{") {
			f := strings.Fields(line)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			sum += v
		}
	}
	return sum, sc.Err()
}

// ---- agent ------------------------------------------------------------------------------------

type agent struct {
	dataDir     string
	metricsAddr string
	cmd         *exec.Cmd
	done        chan error
	log         *syncBuffer
}

// startAgent runs the agent binary in the branch namespace with args after `agent run`.
func startAgent(t testing.TB, lab *netlab.Lab, dataDir string, args ...string) *agent {
	t.Helper()
	a := &agent{dataDir: dataDir, log: &syncBuffer{},
		metricsAddr: net.JoinHostPort(lab.MgmtBranchIP.String(), strconv.Itoa(freePort(t, "127.0.0.1")))}
	full := append([]string{"run", "--data-dir", dataDir, "--metrics-listen", a.metricsAddr, "--log-level", "debug"}, args...)
	a.cmd = lab.Branch.Command(context.Background(), agentBin, full...)
	a.cmd.Stdout, a.cmd.Stderr = a.log, a.log
	logs = append(logs, a.log)
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	procs = append(procs, a.cmd.Process)
	a.done = make(chan error, 1)
	go func() { a.done <- a.cmd.Wait() }()
	t.Cleanup(func() { a.kill() })
	return a
}

// stop sends SIGTERM and waits for the agent's clean shutdown.
func (a *agent) stop(t testing.TB) error {
	t.Helper()
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-a.done:
		a.done = nil
		return err
	case <-time.After(30 * time.Second):
		t.Fatalf("agent did not stop in 30s\n%s", a.log)
	}
	return nil
}

// downsSince counts the agent's local dead-link verdicts logged after offset off of its log.
func (a *agent) downsSince(off int) int {
	return strings.Count(a.log.String()[off:], `msg="agent: transport down"`)
}

// revokedSince counts the agent's dead-link verdicts revoked by a late answer (a delay step)
// after offset off of its log.
func (a *agent) revokedSince(off int) int {
	return strings.Count(a.log.String()[off:], `msg="agent: dead-link verdict revoked`)
}

// kill ends the agent abruptly (SIGKILL), as a crash or power loss would.
func (a *agent) kill() {
	if a.done == nil {
		return
	}
	_ = a.cmd.Process.Kill()
	<-a.done
	a.done = nil
}

func (a *agent) metric(t testing.TB, name string) float64 {
	return metric(t, http.DefaultClient, "http://"+a.metricsAddr+"/metrics", name)
}

// connected reports whether the agent is up and connected to the broker (false while it starts).
func (a *agent) connected() bool {
	v, err := tryMetric(http.DefaultClient, "http://"+a.metricsAddr+"/metrics", "edgewan_agent_mqtt_connected")
	return err == nil && v == 1
}

// exited reports whether the agent has exited (without reaping it).
func (a *agent) exited() bool { return a.done == nil || len(a.done) > 0 }

// wait returns the agent's exit error once it has exited by itself.
func (a *agent) wait(t testing.TB, d time.Duration) error {
	t.Helper()
	select {
	case err := <-a.done:
		a.done = nil
		if err == nil {
			return nil
		}
		return err
	case <-time.After(d):
		t.Fatalf("agent still running after %v\n%s", d, a.log)
	}
	return nil
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return 0
}

// ---- the branch's data plane ----------------------------------------------------------------

// branchDP opens the agent's view of the branch namespace's rules (read-only use).
func branchDP(t testing.TB, lab *netlab.Lab) *dataplane.Dataplane {
	t.Helper()
	ns, err := netns.GetFromPath(lab.Branch.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	d, err := dataplane.New(ns, dataplane.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return d
}

// tables returns, for the rules matching f, their tables.
func tables(t testing.TB, d *dataplane.Dataplane, f func(dataplane.RuleInfo) bool) []int {
	rs, err := d.Rules()
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, r := range rs {
		if f(r) {
			out = append(out, r.Table)
		}
	}
	return out
}

// defaultTable is the table the default class uses now (0: no such rule).
func defaultTable(t testing.TB, d *dataplane.Dataplane) int {
	ts := tables(t, d, func(r dataplane.RuleInfo) bool { return r.Priority == 10999 })
	if len(ts) != 1 {
		return 0
	}
	return ts[0]
}

// voiceTable is the table DSCP 46 (voice) uses now.
func voiceTable(t testing.TB, d *dataplane.Dataplane) int {
	ts := tables(t, d, func(r dataplane.RuleInfo) bool { return r.DSCP == 46 })
	if len(ts) != 1 {
		return 0
	}
	return ts[0]
}

func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	poll(t, d, 10*time.Millisecond, what, cond)
}

// waitAPI is waitFor for conditions read through the API (slower, within its rate limit).
func waitAPI(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	poll(t, d, 250*time.Millisecond, what, cond)
}

func poll(t testing.TB, d, every time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			if testing.Verbose() {
				if os.Getenv("EDGEWAN_E2E_DUMP") != "" {
					for _, p := range procs {
						_ = p.Signal(syscall.SIGQUIT)
					}
					time.Sleep(time.Second)
				}
				for _, l := range logs {
					t.Logf("%s", l)
				}
			}
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(every)
	}
}
