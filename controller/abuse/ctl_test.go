package abuse

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ctlBin is the controller binary TestMain builds, as an operator would run it.
var ctlBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "edgewan-abuse-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "abuse:", err)
		os.Exit(1)
	}
	ctlBin = filepath.Join(dir, "controller")
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	if out, err := exec.Command(goTool, "build", "-o", ctlBin, "github.com/edgewan/edgewan/controller").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "abuse: building the controller: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	figures.print(os.Stdout)
	if f := os.Getenv("EDGEWAN_ABUSE_REPORT"); f != "" { // scripts/test.sh prints it: go test hides a passing package's output
		var b bytes.Buffer
		figures.print(&b)
		_ = os.WriteFile(f, b.Bytes(), 0o644)
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// summary collects one line of figures per property, printed when the suite ends.
type summary struct {
	mu    sync.Mutex
	lines map[string]string
}

var figures = &summary{lines: map[string]string{}}

func (s *summary) add(t *testing.T, name, format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	t.Logf("FIGURES %s: %s", name, line)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lines[name] = line
}

func (s *summary) print(w io.Writer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.lines) == 0 {
		return
	}
	names := make([]string, 0, len(s.lines))
	for n := range s.lines {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintln(w, "abuse and fault suite, figures:")
	for _, n := range names {
		fmt.Fprintf(w, "  %-28s %s\n", n, s.lines[n])
	}
}

// ctl is one controller process on fixed loopback ports, which it keeps across restarts so
// agents and clients can come back to the same address.
type ctl struct {
	t       *testing.T
	DataDir string
	Extra   []string // flags beyond the data dir and the addresses
	Env     []string

	API, MQTT, Metrics string // host:port
	URL                string
	Client             *http.Client

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{}
	exitErr error
	logBuf  *lockedBuffer
	exits   int // exits the test did not cause: crashes
	killing bool
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() > 4<<20 { // keep the head; a runaway log must not eat the test's memory
		return len(p), nil
	}
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// newCtl prepares a controller on dataDir (a fresh temporary one when empty); Start runs it.
func newCtl(t *testing.T, dataDir string, extra ...string) *ctl {
	if dataDir == "" {
		dataDir = t.TempDir()
	}
	c := &ctl{t: t, DataDir: dataDir, Extra: extra, logBuf: &lockedBuffer{},
		API: freeAddr(t), MQTT: freeAddr(t), Metrics: freeAddr(t)}
	c.URL = "https://" + c.API
	t.Cleanup(func() {
		c.Kill()
		if t.Failed() {
			log := c.logBuf.String()
			if len(log) > 20000 {
				log = log[:10000] + "\n...\n" + log[len(log)-10000:]
			}
			t.Logf("controller log:\n%s", log)
		}
	})
	return c
}

func (c *ctl) args() []string {
	a := []string{"serve", "--data-dir", c.DataDir, "--listen", c.API, "--metrics-listen", c.Metrics,
		"--mqtt-listen", c.MQTT, "--rate-limit", "0", "--allow-http-webhooks", "--shutdown-timeout", "5s"}
	return append(a, c.Extra...)
}

// Start runs the controller and waits until /readyz answers 200.
func (c *ctl) Start() {
	c.t.Helper()
	c.StartNoWait()
	if _, err := c.WaitReady(90 * time.Second); err != nil {
		c.t.Fatalf("controller not ready: %v", err)
	}
}

// StartNoWait runs the controller without waiting for it.
func (c *ctl) StartNoWait() {
	c.t.Helper()
	cmd := exec.Command(ctlBin, c.args()...)
	cmd.Env = append(os.Environ(), c.Env...)
	fmt.Fprintf(c.logBuf, "---- start %s\n", time.Now().Format(time.RFC3339Nano))
	cmd.Stdout, cmd.Stderr = c.logBuf, c.logBuf
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		c.t.Fatalf("starting the controller: %v", err)
	}
	done := make(chan struct{})
	c.mu.Lock()
	c.cmd, c.done, c.killing = cmd, done, false
	c.mu.Unlock()
	go func() {
		err := cmd.Wait()
		c.mu.Lock()
		c.exitErr = err
		if !c.killing {
			c.exits++
			fmt.Fprintf(c.logBuf, "---- exited by itself: %v\n", err)
		}
		c.mu.Unlock()
		close(done)
	}()
}

// Running reports whether the process is alive.
func (c *ctl) Running() bool {
	c.mu.Lock()
	done := c.done
	c.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// Crashes is how many times the controller exited without the test asking.
func (c *ctl) Crashes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.exits
}

// Kill sends SIGKILL and waits for the process to be gone.
func (c *ctl) Kill() { c.signal(syscall.SIGKILL) }

// Stop sends SIGTERM and waits for the process to exit.
func (c *ctl) Stop() { c.signal(syscall.SIGTERM) }

func (c *ctl) signal(sig syscall.Signal) {
	c.mu.Lock()
	cmd, done := c.cmd, c.done
	if cmd == nil {
		c.mu.Unlock()
		return
	}
	c.killing = true
	c.mu.Unlock()
	select {
	case <-done:
		return
	default:
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

func (c *ctl) Log() string { return c.logBuf.String() }

// client trusts the controller's generated CA, once it exists.
func (c *ctl) client() *http.Client {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.Client != nil {
		return c.Client
	}
	pem, err := os.ReadFile(filepath.Join(c.DataDir, "tls", "ca.crt"))
	if err != nil {
		return nil
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil
	}
	c.Client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, MaxIdleConnsPerHost: 16}}
	return c.Client
}

// Ready asks /readyz once: its status (0 when unreachable) and body.
func (c *ctl) Ready() (int, string) {
	hc := c.client()
	if hc == nil {
		return 0, "no CA yet"
	}
	resp, err := hc.Get(c.URL + "/readyz")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// WaitReady polls /readyz until it answers 200 and returns how long that took.
func (c *ctl) WaitReady(limit time.Duration) (time.Duration, error) {
	return c.waitReadiness(limit, func(code int, _ string) bool { return code == http.StatusOK })
}

// WaitNotReady polls /readyz until it answers 503 with a body containing want.
func (c *ctl) WaitNotReady(limit time.Duration, want string) (time.Duration, error) {
	return c.waitReadiness(limit, func(code int, body string) bool {
		return code == http.StatusServiceUnavailable && strings.Contains(body, want)
	})
}

func (c *ctl) waitReadiness(limit time.Duration, ok func(int, string) bool) (time.Duration, error) {
	start := time.Now()
	var code int
	var body string
	for time.Since(start) < limit {
		code, body = c.Ready()
		if ok(code, body) {
			return time.Since(start), nil
		}
		if !c.Running() {
			return time.Since(start), fmt.Errorf("controller exited (%v); /readyz last said %d %s", c.exitErr, code, body)
		}
		time.Sleep(50 * time.Millisecond) // polling another process's readiness: nothing to wait on
	}
	return time.Since(start), fmt.Errorf("after %v /readyz still said %d %s", limit, code, body)
}

// Key creates an API key (or, with project set, an AI gateway key) with the CLI.
func (c *ctl) Key(project string, scopes ...string) (id, token string) {
	c.t.Helper()
	args := []string{"keys", "create", "--data-dir", c.DataDir}
	for i, a := range c.Extra { // the same database as the server
		if a == "--database-url" && i+1 < len(c.Extra) {
			args = append(args, a, c.Extra[i+1])
		}
	}
	if len(scopes) > 0 {
		args = append(args, "--scopes", strings.Join(scopes, ","))
	}
	if project != "" {
		args = append(args, "--project", project)
	}
	cmd := exec.Command(ctlBin, args...)
	cmd.Env = append(os.Environ(), c.Env...)
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, ee.Stderr)
		}
		c.t.Fatalf("controller keys create: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	f := strings.Fields(lines[0]) // "created key ID (...)"
	return f[2], strings.TrimSpace(lines[len(lines)-1])
}

// Revoke revokes a key with the CLI.
func (c *ctl) Revoke(id string) {
	c.t.Helper()
	if out, err := exec.Command(ctlBin, "keys", "revoke", "--data-dir", c.DataDir, id).CombinedOutput(); err != nil {
		c.t.Fatalf("controller keys revoke: %v: %s", err, out)
	}
}

// resp is an answer and how long it took.
type resp struct {
	Status int
	Header http.Header
	Body   []byte
	Took   time.Duration
	Err    error
}

// Do sends a request with a raw body (nil: none) and, when token is not "", a bearer token.
func (c *ctl) Do(method, path, token string, body []byte, hdr ...string) resp {
	hc := c.client()
	if hc == nil {
		return resp{Err: errors.New("no CA yet")}
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, c.URL+path, rd)
	if err != nil {
		return resp{Err: err}
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	start := time.Now()
	r, err := hc.Do(req)
	if err != nil {
		return resp{Err: err, Took: time.Since(start)}
	}
	defer r.Body.Close()
	b, err := io.ReadAll(r.Body)
	return resp{Status: r.StatusCode, Header: r.Header, Body: b, Took: time.Since(start), Err: err}
}

// JSON sends v as JSON and decodes a 2xx answer into out, failing the test otherwise.
func (c *ctl) JSON(method, path, token string, v, out any) {
	c.t.Helper()
	var b []byte
	if v != nil {
		b, _ = json.Marshal(v)
	}
	r := c.Do(method, path, token, b)
	if r.Err != nil || r.Status/100 != 2 {
		c.t.Fatalf("%s %s: %v %d %s", method, path, r.Err, r.Status, r.Body)
	}
	if out != nil {
		if err := json.Unmarshal(r.Body, out); err != nil {
			c.t.Fatalf("%s %s: %v: %s", method, path, err, r.Body)
		}
	}
}

// Scrape returns the text of /metrics.
func (c *ctl) Scrape() string {
	c.t.Helper()
	r, err := http.Get("http://" + c.Metrics + "/metrics")
	if err != nil {
		c.t.Fatalf("scraping /metrics: %v", err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return string(b)
}

func httpGetJSON(u string) ([]byte, error) {
	r, err := http.Get(u)
	if err != nil {
		return nil, err
	}
	defer r.Body.Close()
	return io.ReadAll(r.Body)
}

func urlQueryEscape(s string) string { return url.QueryEscape(s) }
