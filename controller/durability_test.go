package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/edgewan/edgewan/coreapi/webhook"
)

// These tests run the real controller binary as a child process, as an operator would.

// ctlBinary builds the controller into a temporary dir of t and returns its path.
func ctlBinary(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	bin := filepath.Join(t.TempDir(), "controller")
	if out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// ctlProcess is a running `controller serve`.
type ctlProcess struct {
	cmd    *exec.Cmd
	URL    string
	Client *http.Client
	stderr *os.File
	done   chan struct{} // closed when the process has exited
	err    error         // Wait's result, once done is closed
}

// ctlKey runs `controller keys create` on dataDir and returns the token.
func ctlKey(t *testing.T, bin, dataDir string, scopes ...string) string {
	t.Helper()
	out, err := exec.Command(bin, "keys", "create", "--data-dir", dataDir, "--scopes", strings.Join(scopes, ",")).Output()
	if err != nil {
		t.Fatalf("controller keys create: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// ctlStart runs `controller serve` on dataDir on a free loopback port and waits until it is
// ready. The process is killed when the test ends if it is still running.
func ctlStart(t *testing.T, bin, dataDir string, extra ...string) *ctlProcess {
	t.Helper()
	var lastErr error
	for try := 0; try < 3; try++ { // another process may take the free port before we bind it
		p, err := ctlTryStart(t, bin, dataDir, extra)
		if err == nil {
			return p
		}
		lastErr = err
		if !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	t.Fatalf("starting the controller: %v", lastErr)
	return nil
}

func ctlTryStart(t *testing.T, bin, dataDir string, extra []string) (*ctlProcess, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	stderr, err := os.CreateTemp(t.TempDir(), "controller-*.log")
	if err != nil {
		return nil, err
	}
	args := append([]string{"serve", "--data-dir", dataDir, "--listen", addr, "--metrics-listen", "",
		"--allow-http-webhooks", "--webhook-retry-base", "100ms"}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = stderr, stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &ctlProcess{cmd: cmd, URL: "https://" + addr, stderr: stderr, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("controller log (%s):\n%s", strings.Join(args, " "), p.log())
		}
	})

	// Ready once the generated CA is complete and /readyz answers 200 over TLS with it.
	caFile := filepath.Join(dataDir, "tls", "ca.crt")
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-p.done:
			return nil, fmt.Errorf("controller exited before it was ready (%v):\n%s", p.err, p.log())
		default:
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-p.done
			return nil, fmt.Errorf("controller not ready after 60s:\n%s", p.log())
		}
		if p.Client == nil {
			if pem, err := os.ReadFile(caFile); err == nil {
				pool := x509.NewCertPool()
				if pool.AppendCertsFromPEM(pem) {
					p.Client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
						TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
				}
			}
		}
		if p.Client != nil {
			if resp, err := p.Client.Get(p.URL + "/readyz"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return p, nil
				}
			}
		}
		time.Sleep(25 * time.Millisecond) // polling a starting process: nothing to wait on
	}
}

func (p *ctlProcess) log() string {
	b, _ := os.ReadFile(p.stderr.Name())
	return string(b)
}

// signal sends sig and waits up to limit for the process to exit, returning its exit code.
func (p *ctlProcess) signal(t *testing.T, sig os.Signal, limit time.Duration) (code int, took time.Duration) {
	t.Helper()
	start := time.Now()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %v: %v", sig, err)
	}
	select {
	case <-p.done:
	case <-time.After(limit):
		t.Fatalf("controller still running %s after %v:\n%s", limit, sig, p.log())
	}
	took = time.Since(start)
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return -int(ws.Signal()), took
		}
		return ee.ExitCode(), took
	}
	if p.err != nil {
		t.Fatalf("waiting for the controller: %v", p.err)
	}
	return 0, took
}

// do sends a JSON request and decodes a JSON answer into out (when not nil).
func (p *ctlProcess) do(t *testing.T, method, path, token string, body, out any, want int) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, p.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := p.Client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: status %d; want %d: %s", method, path, resp.StatusCode, want, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, raw)
		}
	}
}

// holdingReceiver answers nothing until released, then 200. It tags every request with the
// generation current when its connection was accepted, so requests a killed controller left
// on the wire are never mistaken for ones the restarted controller sent.
type holdingReceiver struct {
	URL     string
	gen     atomic.Int32
	release chan struct{}
	once    sync.Once

	mu      sync.Mutex
	secret  string
	got     []heldRequest
	changed chan struct{}
}

type heldRequest struct {
	gen     int32
	eventID string
	caseID  string
	typ     string
	valid   bool
}

type genKey struct{}

func newHoldingReceiver(t *testing.T) *holdingReceiver {
	h := &holdingReceiver{release: make(chan struct{}), changed: make(chan struct{})}
	h.gen.Store(1)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(h.serve))
	srv.Config.ConnContext = func(ctx context.Context, _ net.Conn) context.Context {
		return context.WithValue(ctx, genKey{}, h.gen.Load())
	}
	srv.Start()
	t.Cleanup(func() {
		h.Release() // Close waits for handlers
		srv.Close()
	})
	h.URL = srv.URL + "/hook"
	return h
}

// Release lets every held and future request be answered 200.
func (h *holdingReceiver) Release() { h.once.Do(func() { close(h.release) }) }

func (h *holdingReceiver) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return // the sender died mid-request
	}
	h.mu.Lock()
	secret := h.secret
	h.mu.Unlock()
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	valid := secret != "" &&
		hmac.Equal([]byte(r.Header.Get(webhook.HeaderSignature)), []byte(hex.EncodeToString(mac.Sum(nil)))) &&
		webhook.Verify(secret, body, r.Header.Get(webhook.HeaderSignature), r.Header.Get(webhook.HeaderSigned),
			r.Header.Get(webhook.HeaderTimestamp), 5*time.Minute, time.Now())
	var env struct {
		ID   string `json:"id"`
		Type string `json:"type"`
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	_ = json.Unmarshal(body, &env)
	gen, _ := r.Context().Value(genKey{}).(int32)
	h.mu.Lock()
	h.got = append(h.got, heldRequest{gen: gen, eventID: env.ID, caseID: env.Data.ID, typ: env.Type, valid: valid})
	close(h.changed)
	h.changed = make(chan struct{})
	h.mu.Unlock()
	if !valid {
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	<-h.release
	w.WriteHeader(http.StatusOK)
}

// waitFor waits until cond holds for the requests so far.
func (h *holdingReceiver) waitFor(t *testing.T, limit time.Duration, what string, cond func([]heldRequest) bool) []heldRequest {
	t.Helper()
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	for {
		h.mu.Lock()
		got, changed := append([]heldRequest(nil), h.got...), h.changed
		h.mu.Unlock()
		if cond(got) {
			return got
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("receiver: waited %s for %s; got %d requests", limit, what, len(got))
		}
	}
}

type ctlDelivery struct {
	ID       string `json:"id"`
	EventID  string `json:"event_id"`
	Status   string `json:"status"`
	Attempts int    `json:"attempts"`
}

// deliveries lists every delivery of a webhook.
func (p *ctlProcess) deliveries(t *testing.T, tok, hookID string) []ctlDelivery {
	t.Helper()
	var all []ctlDelivery
	q := "?limit=200"
	for {
		var page struct {
			Data       []ctlDelivery `json:"data"`
			NextCursor *string       `json:"next_cursor"`
		}
		p.do(t, "GET", "/v1/webhooks/"+hookID+"/deliveries"+q, tok, nil, &page, http.StatusOK)
		all = append(all, page.Data...)
		if page.NextCursor == nil {
			return all
		}
		q = "?limit=200&cursor=" + url.QueryEscape(*page.NextCursor)
	}
}

// TestDeliveriesSurviveKill kills the controller while deliveries are in flight and checks the
// restarted controller delivers every event: at least once, signed, with its original event ID.
func TestDeliveriesSurviveKill(t *testing.T) {
	const cases = 50
	start := time.Now()
	bin, dataDir := ctlBinary(t), t.TempDir()
	tok := ctlKey(t, bin, dataDir, "soc:write", "webhooks:write")
	recv := newHoldingReceiver(t)

	first := ctlStart(t, bin, dataDir)
	var hook struct{ ID, Secret string }
	first.do(t, "POST", "/v1/webhooks", tok, map[string]any{"url": recv.URL, "events": []string{"case.opened"}}, &hook, http.StatusCreated)
	recv.mu.Lock()
	recv.secret = hook.Secret
	recv.mu.Unlock()

	caseIDs := map[string]bool{}
	for i := range cases {
		var c struct{ ID string }
		first.do(t, "POST", "/v1/soc/cases", tok, map[string]any{"title": fmt.Sprintf("durability %d", i), "severity": "high"}, &c, http.StatusCreated)
		caseIDs[c.ID] = true
	}
	// Every event is durable once its POST answered; the receiver now holds a lane's worth of
	// attempts in flight, unanswered.
	t.Logf("build, start and %d cases: %v", cases, time.Since(start).Round(time.Millisecond))
	held := recv.waitFor(t, 30*time.Second, "deliveries in flight", func(got []heldRequest) bool { return len(got) >= 8 })
	before := first.deliveries(t, tok, hook.ID)
	if len(before) != cases {
		t.Fatalf("%d deliveries queued before the kill; want %d", len(before), cases)
	}

	if code, _ := first.signal(t, syscall.SIGKILL, 10*time.Second); code != -int(syscall.SIGKILL) {
		t.Fatalf("exit after SIGKILL: %d; want killed by the signal", code)
	}
	recv.gen.Store(2) // any connection accepted from now on is the restarted controller's
	t.Logf("killed the controller with %d requests held at the receiver", len(held))

	restarted := time.Now()
	second := ctlStart(t, bin, dataDir)
	recv.Release()

	// Map the queued deliveries' event IDs to the cases they announce, from what arrives.
	wantEvents := map[string]bool{}
	for _, d := range before {
		wantEvents[d.EventID] = true
	}
	got := recv.waitFor(t, 60*time.Second, fmt.Sprintf("all %d events after the restart", cases), func(got []heldRequest) bool {
		seen := map[string]bool{}
		for _, r := range got {
			if r.gen == 2 && r.valid && wantEvents[r.eventID] {
				seen[r.eventID] = true
			}
		}
		return len(seen) == len(wantEvents)
	})
	t.Logf("restart to every event received again: %v", time.Since(restarted).Round(time.Millisecond))
	seenCases := map[string]string{} // case -> event
	for _, r := range got {
		if !r.valid {
			t.Errorf("request with an invalid signature (generation %d, event %s)", r.gen, r.eventID)
			continue
		}
		if r.gen != 2 {
			continue
		}
		if r.typ != "case.opened" || !wantEvents[r.eventID] || !caseIDs[r.caseID] {
			t.Errorf("after restart: %s %s for case %s; want case.opened of a queued event and a created case", r.typ, r.eventID, r.caseID)
			continue
		}
		if ev, ok := seenCases[r.caseID]; ok && ev != r.eventID {
			t.Errorf("case %s announced by two events, %s and %s", r.caseID, ev, r.eventID)
		}
		seenCases[r.caseID] = r.eventID
	}
	if len(seenCases) != cases {
		t.Errorf("after restart the receiver got events for %d cases; want %d", len(seenCases), cases)
	}

	// The restarted controller records every delivery as succeeded.
	deadline := time.Now().Add(30 * time.Second)
	for {
		ds := second.deliveries(t, tok, hook.ID)
		done := 0
		for _, d := range ds {
			if d.Status == webhook.StatusSucceeded {
				done++
			}
		}
		if done == cases && len(ds) == cases {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d deliveries succeeded 30s after the restart: %+v", done, cases, ds)
		}
		time.Sleep(50 * time.Millisecond) // polling the API: there is no event to wait on
	}
	if !strings.Contains(second.log(), "requeued deliveries left in flight") {
		t.Errorf("the restarted controller did not log requeueing the deliveries left in flight")
	}

	if code, took := second.signal(t, syscall.SIGTERM, 15*time.Second); code != 0 {
		t.Errorf("exit after SIGTERM: %d after %v; want 0", code, took)
	}
}

// TestGracefulShutdown checks SIGTERM stops a busy controller promptly and cleanly.
func TestGracefulShutdown(t *testing.T) {
	bin, dataDir := ctlBinary(t), t.TempDir()
	tok := ctlKey(t, bin, dataDir, "soc:write", "webhooks:write")
	p := ctlStart(t, bin, dataDir)

	delivered := make(chan struct{}, 10)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
		select {
		case delivered <- struct{}{}:
		default:
		}
	}))
	t.Cleanup(recv.Close)
	p.do(t, "POST", "/v1/webhooks", tok, map[string]any{"url": recv.URL, "events": []string{"case.opened"}}, nil, http.StatusCreated)
	p.do(t, "POST", "/v1/soc/cases", tok, map[string]any{"title": "before shutdown"}, nil, http.StatusCreated)
	select {
	case <-delivered:
	case <-time.After(30 * time.Second):
		t.Fatal("no delivery within 30s")
	}

	code, took := p.signal(t, syscall.SIGTERM, 10*time.Second)
	if code != 0 {
		t.Errorf("exit code after SIGTERM: %d; want 0", code)
	}
	if took > 5*time.Second {
		t.Errorf("SIGTERM took %v to stop an idle controller; want under 5s", took)
	}
	if log := p.log(); !strings.Contains(log, "controller stopped") {
		t.Errorf("log does not end with a clean stop:\n%s", log)
	}
	t.Logf("SIGTERM to exit: %v", took)

	// The data dir is reusable: a new controller starts on it and still has the case.
	again := ctlStart(t, bin, dataDir)
	var list struct {
		Data []struct{ Title string } `json:"data"`
	}
	again.do(t, "GET", "/v1/soc/cases", ctlKey(t, bin, dataDir, "soc:read"), nil, &list, http.StatusOK)
	if len(list.Data) != 1 || list.Data[0].Title != "before shutdown" {
		t.Errorf("cases after restart: %+v; want the one created before shutdown", list.Data)
	}
	if code, _ := again.signal(t, syscall.SIGTERM, 10*time.Second); code != 0 {
		t.Errorf("second exit code: %d; want 0", code)
	}
}
