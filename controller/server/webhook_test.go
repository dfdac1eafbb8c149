package server_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgewan/edgewan/controller/config"
	"github.com/edgewan/edgewan/controller/server/servertest"
	"github.com/edgewan/edgewan/coreapi/webhook"
)

// The webhook tests run the real controller over HTTPS on both backends and receive its
// deliveries on real HTTP servers in the test process. Helper names start with "wh" so other
// test files of this package do not collide with them.

// whWait bounds every wait for a delivery. Retries are picked up by the dispatcher's 1s poll,
// so a few seconds per retry is normal; the bound only stops a broken build from hanging.
const whWait = 30 * time.Second

// whBackends runs fn against a fresh controller on SQLite and on PostgreSQL.
func whBackends(t *testing.T, cfg func(*config.Config), fn func(t *testing.T, s *servertest.Server)) {
	t.Helper()
	for _, b := range []struct {
		name     string
		postgres bool
	}{{"sqlite", false}, {"postgres", true}} {
		t.Run(b.name, func(t *testing.T) {
			fn(t, servertest.Start(t, servertest.Options{Postgres: b.postgres, Config: cfg}))
		})
	}
}

// whEnvelope is a delivery body as the spec describes it.
type whEnvelope struct {
	ID        string    `json:"id"`
	Type      string    `json:"type"`
	CreatedAt time.Time `json:"created_at"`
	Data      struct {
		ID       string `json:"id"`
		Severity string `json:"severity"`
		Status   string `json:"status"`
	} `json:"data"`
}

// whRequest is one request a receiver got whose signatures verified.
type whRequest struct {
	N      int // 1-based arrival order at this receiver
	Header http.Header
	Body   []byte
	Keys   []string // the body's top-level keys, sorted
	Env    whEnvelope
}

// whReceiver is a webhook endpoint that verifies every request as the spec tells receivers to:
// X-Service-Signature over the raw body with the secret from the creation response, then the
// timestamped signature and the timestamp's freshness. A request that fails verification is
// answered 401 and recorded as bad; the test fails at its end if there was any.
type whReceiver struct {
	URL string

	// respond decides the status of a verified request; it may block. nil answers 200.
	respond func(r whRequest) int

	mu      sync.Mutex
	secret  string
	got     []whRequest
	bad     []string
	changed chan struct{} // closed and replaced whenever got changes
}

func whNewReceiver(t *testing.T, respond func(r whRequest) int) *whReceiver {
	t.Helper()
	r := &whReceiver{respond: respond, changed: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(func() {
		srv.Close()
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, b := range r.bad {
			t.Errorf("receiver refused a delivery: %s", b)
		}
	})
	r.URL = srv.URL + "/hook"
	return r
}

func (r *whReceiver) setSecret(s string) {
	r.mu.Lock()
	r.secret = s
	r.mu.Unlock()
}

func (r *whReceiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	secret := r.secret
	r.mu.Unlock()
	if why := whVerify(secret, req, body); why != "" {
		r.mu.Lock()
		r.bad = append(r.bad, why)
		r.mu.Unlock()
		http.Error(w, why, http.StatusUnauthorized)
		return
	}
	d := whRequest{Header: req.Header.Clone(), Body: body}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err == nil {
		for k := range top {
			d.Keys = append(d.Keys, k)
		}
		slices.Sort(d.Keys)
	}
	_ = json.Unmarshal(body, &d.Env)
	r.mu.Lock()
	d.N = len(r.got) + 1
	r.got = append(r.got, d)
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
	status := http.StatusOK
	if r.respond != nil {
		status = r.respond(d)
	}
	w.WriteHeader(status)
}

// whVerify says what is wrong with a delivery's signatures, or "" if nothing is.
func whVerify(secret string, req *http.Request, body []byte) string {
	if secret == "" {
		return "delivery arrived before the test knew the secret"
	}
	if req.Method != http.MethodPost {
		return "method " + req.Method
	}
	if ct := req.Header.Get("Content-Type"); ct != "application/json" {
		return "Content-Type " + ct
	}
	// Recompute the spec's signature independently of the package under test.
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	want := hex.EncodeToString(m.Sum(nil))
	if !hmac.Equal([]byte(req.Header.Get(webhook.HeaderSignature)), []byte(want)) {
		return fmt.Sprintf("%s %q does not match the body", webhook.HeaderSignature, req.Header.Get(webhook.HeaderSignature))
	}
	if !webhook.Verify(secret, body, req.Header.Get(webhook.HeaderSignature), req.Header.Get(webhook.HeaderSigned),
		req.Header.Get(webhook.HeaderTimestamp), 5*time.Minute, time.Now()) {
		return fmt.Sprintf("%s %q with %s %q does not verify", webhook.HeaderSigned, req.Header.Get(webhook.HeaderSigned),
			webhook.HeaderTimestamp, req.Header.Get(webhook.HeaderTimestamp))
	}
	return ""
}

// requests returns a copy of what the receiver has got so far.
func (r *whReceiver) requests() []whRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// waitFor waits until cond holds for the requests received so far, failing the test after whWait.
func (r *whReceiver) waitFor(t *testing.T, what string, cond func(got []whRequest) bool) []whRequest {
	t.Helper()
	deadline := time.NewTimer(whWait)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		got, changed := slices.Clone(r.got), r.changed
		r.mu.Unlock()
		if cond(got) {
			return got
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("receiver: waited %s for %s; got %d requests: %s", whWait, what, len(got), whSummary(got))
		}
	}
}

// eventIDs is the set of event IDs received.
func whEventIDs(got []whRequest) map[string]int {
	ids := map[string]int{}
	for _, d := range got {
		ids[d.Env.ID]++
	}
	return ids
}

func whSummary(got []whRequest) string {
	var b strings.Builder
	for _, d := range got {
		fmt.Fprintf(&b, "[%d %s %s attempt %s] ", d.N, d.Env.Type, d.Env.ID, d.Header.Get(webhook.HeaderAttempt))
	}
	return b.String()
}

// whRegister creates a webhook for r and tells r its secret.
func whRegister(t *testing.T, s *servertest.Server, tok string, r *whReceiver, events ...string) string {
	t.Helper()
	res := s.Do("POST", "/v1/webhooks", tok, map[string]any{"url": r.URL, "events": events})
	if res.Status != http.StatusCreated {
		t.Fatalf("POST /v1/webhooks: status %d; want 201: %s", res.Status, res.Body)
	}
	var w webhook.Webhook
	res.JSON(t, &w)
	if !strings.HasPrefix(w.Secret, "whsec_") || w.ID == "" {
		t.Fatalf("POST /v1/webhooks: id %q, secret %q; want an id and a whsec_ secret", w.ID, w.Secret)
	}
	r.setSecret(w.Secret)
	return w.ID
}

// whOpenCase opens a SOC case and returns its ID.
func whOpenCase(t *testing.T, s *servertest.Server, tok, title, severity string) string {
	t.Helper()
	res := s.Do("POST", "/v1/soc/cases", tok, map[string]any{"title": title, "severity": severity})
	if res.Status != http.StatusCreated {
		t.Fatalf("POST /v1/soc/cases: status %d; want 201: %s", res.Status, res.Body)
	}
	var c struct{ ID string }
	res.JSON(t, &c)
	return c.ID
}

func whPatchCase(t *testing.T, s *servertest.Server, tok, id string, body map[string]any) {
	t.Helper()
	if res := s.Do("PATCH", "/v1/soc/cases/"+id, tok, body); res.Status != http.StatusOK {
		t.Fatalf("PATCH /v1/soc/cases/%s: status %d; want 200: %s", id, res.Status, res.Body)
	}
}

type whDeliveryPage struct {
	Data       []webhook.Delivery `json:"data"`
	NextCursor *string            `json:"next_cursor"`
}

func whDeliveries(t *testing.T, s *servertest.Server, tok, webhookID, query string) whDeliveryPage {
	t.Helper()
	path := "/v1/webhooks/" + webhookID + "/deliveries"
	if query != "" {
		path += "?" + query
	}
	res := s.Do("GET", path, tok, nil)
	if res.Status != http.StatusOK {
		t.Fatalf("GET %s: status %d; want 200: %s", path, res.Status, res.Body)
	}
	var p whDeliveryPage
	res.JSON(t, &p)
	return p
}

// whWaitDeliveries polls a webhook's delivery list (results are stored asynchronously, in
// batches) until cond holds, failing the test after whWait.
func whWaitDeliveries(t *testing.T, s *servertest.Server, tok, webhookID, what string, cond func([]webhook.Delivery) bool) []webhook.Delivery {
	t.Helper()
	deadline := time.Now().Add(whWait)
	for {
		ds := whDeliveries(t, s, tok, webhookID, "limit=200").Data
		if cond(ds) {
			return ds
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s; deliveries: %+v", whWait, what, ds)
		}
		time.Sleep(20 * time.Millisecond) // polling the API: there is no event to wait on
	}
}

func whAllSucceeded(n int) func([]webhook.Delivery) bool {
	return func(ds []webhook.Delivery) bool {
		if len(ds) != n {
			return false
		}
		for _, d := range ds {
			if d.Status != webhook.StatusSucceeded {
				return false
			}
		}
		return true
	}
}

func TestWebhookRegistration(t *testing.T) {
	whBackends(t, nil, func(t *testing.T, s *servertest.Server) {
		tok := s.Key("webhooks:write")
		tests := []struct {
			name   string
			body   any
			status int
			msg    string // in the error message
		}{
			{"https", map[string]any{"url": "https://hooks.example.com/edgewan", "events": []string{"case.opened"}}, 201, ""},
			{"http to 127.0.0.1 when allowed", map[string]any{"url": "http://127.0.0.1:9/hook", "events": []string{"case.opened", "case.closed"}}, 201, ""},
			{"http to localhost when allowed", map[string]any{"url": "http://localhost:9/hook", "events": []string{"case.opened"}}, 201, ""},
			{"http to [::1] when allowed", map[string]any{"url": "http://[::1]:9/hook", "events": []string{"case.opened"}}, 201, ""},
			{"http to another host", map[string]any{"url": "http://hooks.example.com/edgewan", "events": []string{"case.opened"}}, 400, "https"},
			{"http to a private address", map[string]any{"url": "http://10.0.0.1/hook", "events": []string{"case.opened"}}, 400, "https"},
			{"ftp", map[string]any{"url": "ftp://hooks.example.com/x", "events": []string{"case.opened"}}, 400, "https"},
			{"relative url", map[string]any{"url": "/hook", "events": []string{"case.opened"}}, 400, "absolute"},
			{"no url", map[string]any{"events": []string{"case.opened"}}, 400, "url"},
			{"credentials in url", map[string]any{"url": "https://u:p@hooks.example.com/x", "events": []string{"case.opened"}}, 400, "credentials"},
			{"unknown event type", map[string]any{"url": "https://hooks.example.com/x", "events": []string{"case.opened", "case.exploded"}}, 400, "case.exploded"},
			{"empty events", map[string]any{"url": "https://hooks.example.com/x", "events": []string{}}, 400, "events"},
			{"no events", map[string]any{"url": "https://hooks.example.com/x"}, 400, "events"},
			{"not JSON", "{url:", 400, ""},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				res := s.Do("POST", "/v1/webhooks", tok, tt.body)
				if res.Status != tt.status {
					t.Fatalf("status %d; want %d: %s", res.Status, tt.status, res.Body)
				}
				if tt.status != 201 {
					if e := res.Err(t); !strings.Contains(e.Error.Message, tt.msg) {
						t.Errorf("error message %q; want it to mention %q", e.Error.Message, tt.msg)
					}
				}
			})
		}

		t.Run("scope required", func(t *testing.T) {
			res := s.Do("POST", "/v1/webhooks", s.Key("soc:write"), map[string]any{"url": "https://hooks.example.com/x", "events": []string{"case.opened"}})
			if res.Status != http.StatusForbidden {
				t.Fatalf("status %d; want 403: %s", res.Status, res.Body)
			}
			if e := res.Err(t); e.Error.Code != "invalid_scope" || !strings.Contains(e.Error.Message, "webhooks:write") {
				t.Errorf("error %+v; want invalid_scope naming webhooks:write", e.Error)
			}
		})

		t.Run("secret only at creation", func(t *testing.T) {
			res := s.Do("POST", "/v1/webhooks", tok, map[string]any{"url": "https://hooks.example.com/secret", "events": []string{"case.closed", "case.closed"}, "description": "SIEM"})
			if res.Status != http.StatusCreated {
				t.Fatalf("status %d; want 201: %s", res.Status, res.Body)
			}
			var w webhook.Webhook
			res.JSON(t, &w)
			if len(w.Secret) < len("whsec_")+32 {
				t.Fatalf("secret %q; want a whsec_ secret of 32 random bytes", w.Secret)
			}
			if !slices.Equal(w.Events, []string{"case.closed"}) {
				t.Errorf("events %v; want [case.closed] (duplicates dropped)", w.Events)
			}
			if loc := res.Header.Get("Location"); loc != "/v1/webhooks/"+w.ID {
				t.Errorf("Location %q; want /v1/webhooks/%s", loc, w.ID)
			}
			for _, path := range []string{"/v1/webhooks/" + w.ID, "/v1/webhooks", "/v1/webhooks?event=case.closed"} {
				res := s.Do("GET", path, tok, nil)
				if res.Status != http.StatusOK {
					t.Fatalf("GET %s: status %d; want 200: %s", path, res.Status, res.Body)
				}
				if strings.Contains(string(res.Body), w.Secret) || strings.Contains(string(res.Body), `"secret"`) {
					t.Errorf("GET %s shows the secret: %s", path, res.Body)
				}
				if !strings.Contains(string(res.Body), w.ID) {
					t.Errorf("GET %s does not show webhook %s: %s", path, w.ID, res.Body)
				}
			}
			res = s.Do("GET", "/v1/webhooks?event=case.updated", tok, nil)
			if strings.Contains(string(res.Body), w.ID) {
				t.Errorf("GET /v1/webhooks?event=case.updated lists %s, subscribed to case.closed only: %s", w.ID, res.Body)
			}
		})

		t.Run("delete", func(t *testing.T) {
			res := s.Do("POST", "/v1/webhooks", tok, map[string]any{"url": "https://hooks.example.com/gone", "events": []string{"case.opened"}})
			var w webhook.Webhook
			res.JSON(t, &w)
			if res := s.Do("DELETE", "/v1/webhooks/"+w.ID, tok, nil); res.Status != http.StatusNoContent {
				t.Fatalf("DELETE: status %d; want 204: %s", res.Status, res.Body)
			}
			for _, path := range []string{"/v1/webhooks/" + w.ID, "/v1/webhooks/" + w.ID + "/deliveries"} {
				if res := s.Do("GET", path, tok, nil); res.Status != http.StatusNotFound {
					t.Errorf("GET %s after delete: status %d; want 404", path, res.Status)
				}
			}
			if res := s.Do("DELETE", "/v1/webhooks/"+w.ID, tok, nil); res.Status != http.StatusNotFound {
				t.Errorf("second DELETE: status %d; want 404", res.Status)
			}
		})
	})

	t.Run("http refused unless allowed", func(t *testing.T) {
		whBackends(t, func(c *config.Config) { c.AllowHTTPWebhooks = false }, func(t *testing.T, s *servertest.Server) {
			res := s.Do("POST", "/v1/webhooks", s.Key("webhooks:write"), map[string]any{"url": "http://127.0.0.1:9/hook", "events": []string{"case.opened"}})
			if res.Status != http.StatusBadRequest {
				t.Fatalf("status %d; want 400: %s", res.Status, res.Body)
			}
			if e := res.Err(t); !strings.Contains(e.Error.Message, "https") {
				t.Errorf("message %q; want it to ask for https", e.Error.Message)
			}
		})
	})
}

func TestWebhookCaseEvents(t *testing.T) {
	whBackends(t, nil, func(t *testing.T, s *servertest.Server) {
		tok, socTok := s.Key("webhooks:write"), s.Key("soc:write")
		all := whNewReceiver(t, nil)
		allID := whRegister(t, s, tok, all, "case.opened", "case.updated", "case.closed")
		closedOnly := whNewReceiver(t, nil)
		closedID := whRegister(t, s, tok, closedOnly, "case.closed")

		caseID := whOpenCase(t, s, socTok, "impossible travel for admin", "high")
		whPatchCase(t, s, socTok, caseID, map[string]any{"status": "investigating"})
		whPatchCase(t, s, socTok, caseID, map[string]any{"status": "resolved"})

		got := all.waitFor(t, "case.opened, case.updated and case.closed", func(got []whRequest) bool { return len(whEventIDs(got)) >= 3 })
		want := map[string]string{"case.opened": "open", "case.updated": "investigating", "case.closed": "resolved"}
		seen := map[string]bool{}
		for _, d := range got {
			e := d.Env
			if !slices.Equal(d.Keys, []string{"created_at", "data", "id", "type"}) {
				t.Errorf("%s: body keys %v; want the envelope id, type, created_at, data: %s", e.Type, d.Keys, d.Body)
			}
			status, ok := want[e.Type]
			if !ok {
				t.Errorf("unexpected event type %q", e.Type)
				continue
			}
			seen[e.Type] = true
			if !strings.HasPrefix(e.ID, "evt") || e.CreatedAt.IsZero() || time.Since(e.CreatedAt) > time.Minute {
				t.Errorf("%s: id %q created_at %v; want an event id and a recent time", e.Type, e.ID, e.CreatedAt)
			}
			if e.Data.ID != caseID || e.Data.Severity != "high" || e.Data.Status != status {
				t.Errorf("%s: data %+v; want id %s, severity high, status %s", e.Type, e.Data, caseID, status)
			}
			if h := d.Header.Get(webhook.HeaderEventID); h != e.ID {
				t.Errorf("%s: %s %q; want the body's id %q", e.Type, webhook.HeaderEventID, h, e.ID)
			}
			if h := d.Header.Get(webhook.HeaderEventType); h != e.Type {
				t.Errorf("%s: %s %q; want %q", e.Type, webhook.HeaderEventType, h, e.Type)
			}
			if d.Header.Get(webhook.HeaderDelivery) == "" || d.Header.Get(webhook.HeaderAttempt) != "1" {
				t.Errorf("%s: delivery %q attempt %q; want a delivery id and attempt 1", e.Type,
					d.Header.Get(webhook.HeaderDelivery), d.Header.Get(webhook.HeaderAttempt))
			}
		}
		if len(seen) != 3 {
			t.Errorf("event types received: %v; want case.opened, case.updated, case.closed", seen)
		}
		if len(got) != 3 {
			t.Errorf("got %d requests; want 3, one per event: %s", len(got), whSummary(got))
		}

		closed := closedOnly.waitFor(t, "case.closed", func(got []whRequest) bool { return len(got) >= 1 })
		if closed[0].Env.Type != "case.closed" || closed[0].Env.Data.ID != caseID {
			t.Errorf("case.closed-only webhook got %s for %s; want case.closed for %s", closed[0].Env.Type, closed[0].Env.Data.ID, caseID)
		}
		// Deliveries are queued with the event, in its transaction: the lists are complete now.
		whWaitDeliveries(t, s, tok, allID, "3 succeeded deliveries", whAllSucceeded(3))
		ds := whWaitDeliveries(t, s, tok, closedID, "1 succeeded delivery", whAllSucceeded(1))
		if ds[0].EventType != "case.closed" || ds[0].EventID != closed[0].Env.ID || ds[0].Attempts != 1 || ds[0].LastStatus != 200 {
			t.Errorf("delivery %+v; want case.closed %s, 1 attempt, last status 200", ds[0], closed[0].Env.ID)
		}
	})
}

func TestWebhookRetryThenSuccess(t *testing.T) {
	const failures = 3
	whBackends(t, nil, func(t *testing.T, s *servertest.Server) {
		tok := s.Key("webhooks:write")
		r := whNewReceiver(t, func(d whRequest) int {
			if d.N <= failures {
				return http.StatusInternalServerError
			}
			return http.StatusOK
		})
		hookID := whRegister(t, s, tok, r, "case.opened")
		caseID := whOpenCase(t, s, s.Key("soc:write"), "flapping receiver", "low")

		got := r.waitFor(t, fmt.Sprintf("%d failed attempts and a success", failures), func(got []whRequest) bool { return len(got) >= failures+1 })
		first := got[0]
		if first.Env.Type != "case.opened" || first.Env.Data.ID != caseID {
			t.Fatalf("first request: %s for %q; want case.opened for %s", first.Env.Type, first.Env.Data.ID, caseID)
		}
		for i, d := range got {
			if d.Env.ID != first.Env.ID {
				t.Errorf("request %d: event id %s; want the same event id %s on every attempt", i+1, d.Env.ID, first.Env.ID)
			}
			if h := d.Header.Get(webhook.HeaderDelivery); h != first.Header.Get(webhook.HeaderDelivery) {
				t.Errorf("request %d: delivery id %s; want %s", i+1, h, first.Header.Get(webhook.HeaderDelivery))
			}
			if h := d.Header.Get(webhook.HeaderAttempt); h != strconv.Itoa(i+1) {
				t.Errorf("request %d: attempt header %q; want %d", i+1, h, i+1)
			}
		}
		ds := whWaitDeliveries(t, s, tok, hookID, "the delivery to succeed", whAllSucceeded(1))
		if d := ds[0]; d.Attempts != failures+1 || d.LastStatus != 200 || d.LastError != "" || d.EventID != first.Env.ID {
			t.Errorf("delivery %+v; want %d attempts, last status 200, no error, event %s", d, failures+1, first.Env.ID)
		}
		if n := len(r.requests()); n != failures+1 {
			t.Errorf("receiver got %d requests; want %d", n, failures+1)
		}
	})
}

func TestWebhookGivesUpAfterRetryWindow(t *testing.T) {
	short := func(c *config.Config) { c.WebhookRetryWindow = 300 * time.Millisecond }
	whBackends(t, short, func(t *testing.T, s *servertest.Server) {
		tok := s.Key("webhooks:write")
		r := whNewReceiver(t, func(whRequest) int { return http.StatusServiceUnavailable })
		hookID := whRegister(t, s, tok, r, "case.opened")
		whOpenCase(t, s, s.Key("soc:write"), "receiver is down", "critical")

		ds := whWaitDeliveries(t, s, tok, hookID, "the delivery to fail", func(ds []webhook.Delivery) bool {
			return len(ds) == 1 && ds[0].Status == webhook.StatusFailed
		})
		d := ds[0]
		if d.Attempts < 1 || d.LastStatus != http.StatusServiceUnavailable || !strings.Contains(d.LastError, "503") {
			t.Errorf("delivery %+v; want at least 1 attempt, last status 503 and an error naming it", d)
		}
		if !d.NextAttemptAt.IsZero() {
			t.Errorf("failed delivery has next_attempt_at %v; want none", d.NextAttemptAt)
		}
		if n := len(r.requests()); n != d.Attempts {
			t.Errorf("receiver got %d requests; the delivery records %d attempts", n, d.Attempts)
		}
		if f := whDeliveries(t, s, tok, hookID, "status=failed").Data; len(f) != 1 {
			t.Errorf("?status=failed lists %d deliveries; want 1", len(f))
		}
	})
}

func TestWebhookSlowReceiverDoesNotDelayOthers(t *testing.T) {
	const cases = 40 // more than a lane's workers, so the slow lane has a backlog too
	// Attempts must outlive the test's hold on the slow receiver rather than time out and retry.
	long := func(c *config.Config) { c.WebhookTimeout = 2 * whWait }
	whBackends(t, long, func(t *testing.T, s *servertest.Server) {
		tok := s.Key("webhooks:write")
		release := make(chan struct{})
		var releaseOnce sync.Once
		slow := whNewReceiver(t, func(whRequest) int {
			<-release
			return http.StatusOK
		})
		// Registered after the receiver's cleanup, so it runs first: Close waits for handlers.
		t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })
		fast := whNewReceiver(t, nil)
		slowID := whRegister(t, s, tok, slow, "case.opened")
		fastID := whRegister(t, s, tok, fast, "case.opened")

		socTok := s.Key("soc:write")
		want := map[string]bool{}
		for i := range cases {
			want[whOpenCase(t, s, socTok, fmt.Sprintf("case %d", i), "medium")] = true
		}
		allCases := func(got []whRequest) bool {
			seen := map[string]bool{}
			for _, d := range got {
				if want[d.Env.Data.ID] {
					seen[d.Env.Data.ID] = true
				}
			}
			return len(seen) == len(want)
		}
		fast.waitFor(t, fmt.Sprintf("all %d case.opened events at the fast receiver", cases), allCases)
		// The slow receiver is still holding every request it got: none has been answered.
		held := slow.requests()
		if len(held) == 0 {
			t.Fatal("slow receiver got nothing; the test did not exercise a blocked lane")
		}
		if len(held) >= cases {
			t.Errorf("slow receiver got %d requests while blocked; want them limited by the lane's workers", len(held))
		}
		whWaitDeliveries(t, s, tok, fastID, "the fast deliveries to be stored as succeeded", whAllSucceeded(cases))
		for _, d := range whDeliveries(t, s, tok, slowID, "limit=200").Data {
			if d.Status == webhook.StatusSucceeded {
				t.Errorf("slow delivery %s succeeded while its receiver was blocked", d.ID)
			}
		}

		releaseOnce.Do(func() { close(release) })
		slow.waitFor(t, fmt.Sprintf("all %d events at the slow receiver after release", cases), allCases)
		whWaitDeliveries(t, s, tok, slowID, "the slow deliveries to succeed", whAllSucceeded(cases))
	})
}

func TestWebhookRedeliver(t *testing.T) {
	whBackends(t, nil, func(t *testing.T, s *servertest.Server) {
		tok := s.Key("webhooks:write")
		r := whNewReceiver(t, nil)
		hookID := whRegister(t, s, tok, r, "case.opened")
		caseID := whOpenCase(t, s, s.Key("soc:write"), "redeliver me", "medium")
		first := r.waitFor(t, "the first delivery", func(got []whRequest) bool { return len(got) >= 1 })[0]
		old := whWaitDeliveries(t, s, tok, hookID, "the first delivery to succeed", whAllSucceeded(1))[0]

		res := s.Do("POST", "/v1/webhooks/"+hookID+"/deliveries/"+old.ID+"/redeliver", tok, nil)
		if res.Status != http.StatusAccepted {
			t.Fatalf("redeliver: status %d; want 202: %s", res.Status, res.Body)
		}
		var nd webhook.Delivery
		res.JSON(t, &nd)
		if nd.ID == "" || nd.ID == old.ID || nd.EventID != old.EventID || nd.EventType != "case.opened" || nd.WebhookID != hookID || nd.Attempts != 0 {
			t.Errorf("redelivery %+v; want a new delivery of event %s to %s with no attempts yet", nd, old.EventID, hookID)
		}

		got := r.waitFor(t, "the redelivery", func(got []whRequest) bool { return len(got) >= 2 })
		again := got[1]
		if again.Env.ID != first.Env.ID || again.Env.Data.ID != caseID {
			t.Errorf("redelivered event %s for case %s; want the same event %s for %s", again.Env.ID, again.Env.Data.ID, first.Env.ID, caseID)
		}
		if string(again.Body) != string(first.Body) {
			t.Errorf("redelivered body differs:\n%s\nfirst:\n%s", again.Body, first.Body)
		}
		if h := again.Header.Get(webhook.HeaderDelivery); h != nd.ID {
			t.Errorf("redelivery's %s %q; want the new delivery %q", webhook.HeaderDelivery, h, nd.ID)
		}
		ds := whWaitDeliveries(t, s, tok, hookID, "both deliveries to succeed", whAllSucceeded(2))
		byEvent := whDeliveries(t, s, tok, hookID, "event_id="+url.QueryEscape(first.Env.ID)).Data
		if len(byEvent) != 2 {
			t.Errorf("deliveries of event %s: %d; want 2: %+v", first.Env.ID, len(byEvent), ds)
		}
		res = s.Do("GET", "/v1/webhooks/"+hookID+"/deliveries/"+nd.ID, tok, nil)
		var one webhook.Delivery
		res.JSON(t, &one)
		if res.Status != http.StatusOK || one.ID != nd.ID || one.Status != webhook.StatusSucceeded || one.Attempts != 1 {
			t.Errorf("GET delivery %s: status %d, %+v; want 200, succeeded after 1 attempt", nd.ID, res.Status, one)
		}

		for _, path := range []string{
			"/v1/webhooks/" + hookID + "/deliveries/dlv_missing/redeliver",
			"/v1/webhooks/wh_missing/deliveries/" + old.ID + "/redeliver",
		} {
			if res := s.Do("POST", path, tok, nil); res.Status != http.StatusNotFound {
				t.Errorf("POST %s: status %d; want 404: %s", path, res.Status, res.Body)
			}
		}
	})
}

func TestWebhookDeleteStopsDeliveries(t *testing.T) {
	// Retries wait 0.5-1s, 1-2s, ...: the doomed webhook's retry cannot come due between the
	// test seeing it pending and deleting the webhook, and the control webhook's third attempt
	// comes due after it would have.
	slow := func(c *config.Config) { c.WebhookRetryBase, c.WebhookRetryMax = time.Second, 10*time.Second }
	whBackends(t, slow, func(t *testing.T, s *servertest.Server) {
		tok, socTok := s.Key("webhooks:write"), s.Key("soc:write")
		// doomed fails every attempt, so it has a retry pending when it is deleted.
		doomed := whNewReceiver(t, func(whRequest) int { return http.StatusInternalServerError })
		doomedID := whRegister(t, s, tok, doomed, "case.opened")
		// control fails each event's first two attempts, so its success comes from a retry
		// claimed later than a retry of doomed's would have been.
		var mu sync.Mutex
		tries := map[string]int{}
		control := whNewReceiver(t, func(d whRequest) int {
			mu.Lock()
			defer mu.Unlock()
			if tries[d.Env.ID]++; tries[d.Env.ID] <= 2 {
				return http.StatusInternalServerError
			}
			return http.StatusOK
		})
		controlID := whRegister(t, s, tok, control, "case.opened")

		before := whOpenCase(t, s, socTok, "before delete", "low")
		doomed.waitFor(t, "a failed attempt at the doomed webhook", func(got []whRequest) bool { return len(got) >= 1 })
		whWaitDeliveries(t, s, tok, doomedID, "the doomed delivery to wait for a retry", func(ds []webhook.Delivery) bool {
			return len(ds) == 1 && ds[0].Status == webhook.StatusPending && ds[0].Attempts == 1
		})
		if res := s.Do("DELETE", "/v1/webhooks/"+doomedID, tok, nil); res.Status != http.StatusNoContent {
			t.Fatalf("DELETE: status %d; want 204: %s", res.Status, res.Body)
		}
		hits := len(doomed.requests())

		after := whOpenCase(t, s, socTok, "after delete", "low")
		control.waitFor(t, "both events delivered to the control webhook on the third attempt", func(got []whRequest) bool {
			n := map[string]int{}
			for _, d := range got {
				n[d.Env.Data.ID]++
			}
			return n[before] >= 3 && n[after] >= 3
		})
		whWaitDeliveries(t, s, tok, controlID, "the control deliveries to succeed", whAllSucceeded(2))

		for _, d := range doomed.requests()[hits:] {
			t.Errorf("deleted webhook got %s for case %s (attempt %s)", d.Env.Type, d.Env.Data.ID, d.Header.Get(webhook.HeaderAttempt))
		}
		if res := s.Do("GET", "/v1/webhooks/"+doomedID+"/deliveries", tok, nil); res.Status != http.StatusNotFound {
			t.Errorf("deliveries of the deleted webhook: status %d; want 404", res.Status)
		}
	})
}

func TestWebhookDeliveriesPaginate(t *testing.T) {
	const n = 7
	whBackends(t, nil, func(t *testing.T, s *servertest.Server) {
		tok, socTok := s.Key("webhooks:write"), s.Key("soc:write")
		r := whNewReceiver(t, nil)
		hookID := whRegister(t, s, tok, r, "case.opened", "case.updated")
		for i := range n {
			whOpenCase(t, s, socTok, fmt.Sprintf("case %d", i), "low")
		}
		// Deliveries move in the (updated_at, id) order while they are worked on; page once
		// they are done.
		all := whWaitDeliveries(t, s, tok, hookID, fmt.Sprintf("%d deliveries to succeed", n), whAllSucceeded(n))
		received := whEventIDs(r.requests())

		for _, order := range []string{"desc", "asc"} {
			t.Run(order, func(t *testing.T) {
				var ids []string
				var last time.Time
				q := "limit=3&order=" + order
				for pages := 0; ; pages++ {
					if pages > n {
						t.Fatalf("more than %d pages for %d deliveries", n, n)
					}
					p := whDeliveries(t, s, tok, hookID, q)
					if len(p.Data) > 3 {
						t.Fatalf("page of %d; want at most 3", len(p.Data))
					}
					for _, d := range p.Data {
						if !last.IsZero() && ((order == "desc" && d.UpdatedAt.After(last)) || (order == "asc" && d.UpdatedAt.Before(last))) {
							t.Errorf("delivery %s updated %v out of %s order after %v", d.ID, d.UpdatedAt, order, last)
						}
						last = d.UpdatedAt
						ids = append(ids, d.ID)
						if received[d.EventID] == 0 {
							t.Errorf("delivery %s is of event %s, which the receiver never got", d.ID, d.EventID)
						}
					}
					if p.NextCursor == nil {
						break
					}
					q = "limit=3&order=" + order + "&cursor=" + url.QueryEscape(*p.NextCursor)
				}
				if len(ids) != n {
					t.Fatalf("paged through %d deliveries; want %d", len(ids), n)
				}
				seen := map[string]bool{}
				for _, id := range ids {
					if seen[id] {
						t.Errorf("delivery %s on two pages", id)
					}
					seen[id] = true
				}
				for _, d := range all {
					if !seen[d.ID] {
						t.Errorf("delivery %s never paged", d.ID)
					}
				}
			})
		}

		t.Run("filters", func(t *testing.T) {
			if got := whDeliveries(t, s, tok, hookID, "status=succeeded&limit=200").Data; len(got) != n {
				t.Errorf("status=succeeded: %d; want %d", len(got), n)
			}
			if got := whDeliveries(t, s, tok, hookID, "status=pending").Data; len(got) != 0 {
				t.Errorf("status=pending: %d; want 0", len(got))
			}
			if got := whDeliveries(t, s, tok, hookID, "event_id="+url.QueryEscape(all[0].EventID)).Data; len(got) != 1 || got[0].ID != all[0].ID {
				t.Errorf("event=%s: %+v; want just delivery %s", all[0].EventID, got, all[0].ID)
			}
			for _, q := range []string{"status=lost", "limit=0", "limit=201", "cursor=garbage", "colour=red"} {
				if res := s.Do("GET", "/v1/webhooks/"+hookID+"/deliveries?"+q, tok, nil); res.Status != http.StatusBadRequest {
					t.Errorf("?%s: status %d; want 400", q, res.Status)
				}
			}
		})
	})
}
