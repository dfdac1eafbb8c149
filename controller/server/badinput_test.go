package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edgewan/edgewan/controller/config"
	"github.com/edgewan/edgewan/controller/server/servertest"
	"github.com/edgewan/edgewan/coreapi/auth"
)

// biBackends runs fn against a real controller on each database backend.
func biBackends(t *testing.T, cfg func(*config.Config), fn func(t *testing.T, s *servertest.Server)) {
	for _, pg := range []bool{false, true} {
		name := "sqlite"
		if pg {
			name = "postgres"
		}
		t.Run(name, func(t *testing.T) {
			fn(t, servertest.Start(t, servertest.Options{Postgres: pg, Config: cfg}))
		})
	}
}

// biSend makes a request with exactly the given headers (servertest.Do always sets
// Content-Type and a Bearer scheme).
func biSend(t *testing.T, s *servertest.Server, method, path string, header map[string]string, body string) *servertest.Response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.URL+path, rd)
	if err != nil {
		t.Fatalf("new request: %v", err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := s.Client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading body: %v", err)
	}
	return &servertest.Response{Status: resp.StatusCode, Header: resp.Header, Body: raw}
}

// biCheck asserts what every response carries: an X-Request-Id, no 5xx, and on errors the
// complete error body with that request_id. It returns the error body (zero on success).
func biCheck(t *testing.T, r *servertest.Response) servertest.ErrorBody {
	t.Helper()
	if r.Header.Get("X-Request-Id") == "" {
		t.Fatalf("got no X-Request-Id header (status %d); want one on every response", r.Status)
	}
	if r.Status >= 500 {
		t.Fatalf("got %d (%s); want no 5xx for bad input", r.Status, r.Body)
	}
	if r.Status < 400 {
		return servertest.ErrorBody{}
	}
	return r.Err(t)
}

// biFixture is what the bad-input table needs to exist on a server.
type biFixture struct {
	all, socRead, socWrite, webhooks, devices, org string // tokens
	revoked, wrongSecret, unknown                  string
	caseID, webhookA, webhookB, deliveryA          string
	casesCursor, deliveriesCursor                  string // next_cursor of /v1/soc/cases?limit=1 and of webhook A's deliveries
}

func biSetup(t *testing.T, s *servertest.Server) biFixture {
	t.Helper()
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(recv.Close)
	f := biFixture{
		all:      s.Key(auth.APIScopes...),
		socRead:  s.Key(auth.ScopeSOCRead),
		socWrite: s.Key(auth.ScopeSOCWrite),
		webhooks: s.Key(auth.ScopeWebhooksWrite),
		devices:  s.Key(auth.ScopeDevicesRead),
		org:      s.Key(auth.ScopeOrgRead),
		revoked:  s.Key(auth.ScopeOrgRead),
	}
	id, _, _ := auth.ParseToken(f.revoked)
	if err := s.Store.RevokeKey(context.Background(), id, time.Now()); err != nil {
		t.Fatalf("RevokeKey: %v", err)
	}
	last := f.org[len(f.org)-1:]
	f.wrongSecret = f.org[:len(f.org)-1] + map[bool]string{true: "B", false: "A"}[last == "A"]
	_, f.unknown, _ = auth.NewToken()

	var wh struct{ ID string }
	for _, dst := range []*string{&f.webhookA, &f.webhookB} {
		r := s.Do("POST", "/v1/webhooks", f.webhooks, map[string]any{"url": recv.URL + "/hook", "events": []string{"case.opened"}})
		if r.Status != http.StatusCreated {
			t.Fatalf("creating webhook: got %d (%s); want 201", r.Status, r.Body)
		}
		r.JSON(t, &wh)
		*dst = wh.ID
	}
	for i := range 3 {
		r := s.Do("POST", "/v1/soc/cases", f.socWrite, map[string]any{"title": fmt.Sprintf("case %d", i), "severity": "low"})
		if r.Status != http.StatusCreated {
			t.Fatalf("creating case: got %d (%s); want 201", r.Status, r.Body)
		}
		var cs struct{ ID string }
		r.JSON(t, &cs)
		f.caseID = cs.ID
	}
	var pg struct {
		Data       []struct{ ID string }
		NextCursor *string `json:"next_cursor"`
	}
	s.Do("GET", "/v1/soc/cases?limit=1", f.socRead, nil).JSON(t, &pg)
	if pg.NextCursor == nil {
		t.Fatalf("cases page of 1 of 3 has no next_cursor")
	}
	f.casesCursor = *pg.NextCursor
	s.Do("GET", "/v1/webhooks/"+f.webhookA+"/deliveries?limit=1", f.webhooks, nil).JSON(t, &pg)
	if pg.NextCursor == nil || len(pg.Data) != 1 {
		t.Fatalf("deliveries page of 1 of 3 has no next_cursor")
	}
	f.deliveriesCursor, f.deliveryA = *pg.NextCursor, pg.Data[0].ID
	return f
}

// biRequest is one request of the bad-input table and the answer it must get.
type biRequest struct {
	name       string
	method     string
	path       string
	token      string            // sent as a Bearer token unless header sets Authorization
	header     map[string]string // when set, sent instead of servertest's headers
	body       string            // sent as is; "" sends none unless emptyBody
	emptyBody  bool
	wantStatus int
	wantCode   string   // "" on success
	wantMsg    []string // parts of the error message
	wantHeader map[string]string
}

func biRequests(f biFixture) []biRequest {
	const cases = "/v1/soc/cases"
	huge := `{"title":"` + strings.Repeat("x", 1<<20) + `","severity":"low"}`
	return []biRequest{
		// JSON bodies.
		{name: "malformed JSON", method: "POST", path: cases, token: f.socWrite, body: `{"title":"a",}`, wantStatus: 400, wantCode: "bad_request", wantMsg: []string{"invalid JSON"}},
		{name: "truncated JSON", method: "POST", path: cases, token: f.socWrite, body: `{"title":"a"`, wantStatus: 400, wantCode: "bad_request", wantMsg: []string{"unexpected end"}},
		{name: "wrong type", method: "POST", path: cases, token: f.socWrite, body: `{"title":42,"severity":"low"}`, wantStatus: 400, wantCode: "bad_request", wantMsg: []string{`"title"`, "a string"}},
		{name: "wrong type on PATCH", method: "PATCH", path: cases + "/" + f.caseID, token: f.socWrite, body: `{"status":true}`, wantStatus: 400, wantCode: "bad_request", wantMsg: []string{`"status"`}},
		{name: "wrong type for webhook events", method: "POST", path: "/v1/webhooks", token: f.webhooks, body: `{"url":"https://example.com/h","events":"case.opened"}`, wantStatus: 400, wantCode: "bad_request", wantMsg: []string{`"events"`, "an array"}},
		{name: "unknown field", method: "POST", path: cases, token: f.socWrite, body: `{"title":"a","severity":"low","priority":1}`, wantStatus: 400, wantCode: "bad_request", wantMsg: []string{"unknown field", `"priority"`}},
		{name: "unknown field on PATCH", method: "PATCH", path: cases + "/" + f.caseID, token: f.socWrite, body: `{"state":"open"}`, wantStatus: 400, wantCode: "bad_request", wantMsg: []string{`"state"`}},
		{name: "empty body", method: "POST", path: cases, token: f.socWrite, emptyBody: true, wantStatus: 400, wantCode: "bad_request", wantMsg: []string{"empty"}},
		{name: "no body", method: "POST", path: "/v1/webhooks", token: f.webhooks, wantStatus: 400, wantCode: "bad_request", wantMsg: []string{"empty"}},
		{name: "null body", method: "PATCH", path: cases + "/" + f.caseID, token: f.socWrite, body: `null`, wantStatus: 400, wantCode: "bad_request", wantMsg: []string{"null"}},
		{name: "array body", method: "POST", path: cases, token: f.socWrite, body: `[{"title":"a"}]`, wantStatus: 400, wantCode: "bad_request", wantMsg: []string{"must be an object"}},
		{name: "trailing data", method: "POST", path: cases, token: f.socWrite, body: `{"title":"a","severity":"low"}{}`, wantStatus: 400, wantCode: "bad_request", wantMsg: []string{"after the top-level value"}},
		{name: "NUL in a string", method: "POST", path: cases, token: f.socWrite, body: `{"title":"a\u0000","severity":"low"}`, wantStatus: 400, wantCode: "bad_request", wantMsg: []string{"NUL"}},
		{name: "NUL in a webhook description", method: "POST", path: "/v1/webhooks", token: f.webhooks, body: `{"url":"https://example.com/h","events":["case.opened"],"description":"\u0000"}`, wantStatus: 400, wantCode: "bad_request", wantMsg: []string{"NUL"}},
		{name: "body over 1 MiB", method: "POST", path: cases, token: f.socWrite, body: huge, wantStatus: 413, wantCode: "payload_too_large", wantMsg: []string{"larger than 1048576 bytes"}},
		{name: "wrong Content-Type", method: "POST", path: cases, body: `{"title":"a","severity":"low"}`,
			header: map[string]string{"Authorization": "Bearer " + f.socWrite, "Content-Type": "text/plain"}, wantStatus: 415, wantCode: "unsupported_media_type", wantMsg: []string{"application/json", "text/plain"}},
		{name: "form Content-Type", method: "POST", path: "/v1/webhooks", body: `url=https://example.com`,
			header: map[string]string{"Authorization": "Bearer " + f.webhooks, "Content-Type": "application/x-www-form-urlencoded"}, wantStatus: 415, wantCode: "unsupported_media_type"},

		// List parameters.
		{name: "bad cursor", method: "GET", path: cases + "?cursor=not-a-cursor", token: f.socRead, wantStatus: 400, wantCode: "invalid_cursor", wantMsg: []string{"cursor"}},
		{name: "cursor from another list", method: "GET", path: "/v1/devices?cursor=" + f.casesCursor, token: f.devices, wantStatus: 400, wantCode: "invalid_cursor"},
		{name: "cursor from cases on webhooks", method: "GET", path: "/v1/webhooks?cursor=" + f.casesCursor, token: f.webhooks, wantStatus: 400, wantCode: "invalid_cursor"},
		{name: "cursor from another webhook's deliveries", method: "GET", path: "/v1/webhooks/" + f.webhookB + "/deliveries?cursor=" + f.deliveriesCursor, token: f.webhooks, wantStatus: 400, wantCode: "invalid_cursor"},
		{name: "cursor with another order", method: "GET", path: cases + "?order=asc&cursor=" + f.casesCursor, token: f.socRead, wantStatus: 400, wantCode: "invalid_cursor"},
		{name: "cursor with another filter", method: "GET", path: cases + "?status=open&cursor=" + f.casesCursor, token: f.socRead, wantStatus: 400, wantCode: "invalid_cursor"},
		{name: "cursor with another since", method: "GET", path: cases + "?since=2026-01-01T00:00:00Z&cursor=" + f.casesCursor, token: f.socRead, wantStatus: 400, wantCode: "invalid_cursor"},
		{name: "cursor with another limit", method: "GET", path: cases + "?limit=5&cursor=" + f.casesCursor, token: f.socRead, wantStatus: 200},
		{name: "deliveries cursor on its own list", method: "GET", path: "/v1/webhooks/" + f.webhookA + "/deliveries?cursor=" + f.deliveriesCursor, token: f.webhooks, wantStatus: 200},
		{name: "bad since", method: "GET", path: cases + "?since=yesterday", token: f.socRead, wantStatus: 400, wantCode: "bad_request", wantMsg: []string{"since", "RFC 3339"}},
		{name: "since without time", method: "GET", path: "/v1/devices?since=2026-01-02", token: f.devices, wantStatus: 400, wantCode: "bad_request", wantMsg: []string{"since"}},
		{name: "limit 0", method: "GET", path: cases + "?limit=0", token: f.socRead, wantStatus: 400, wantCode: "bad_request", wantMsg: []string{"limit", "1 to 200"}},
		{name: "limit 201", method: "GET", path: "/v1/webhooks?limit=201", token: f.webhooks, wantStatus: 400, wantCode: "bad_request", wantMsg: []string{"limit"}},
		{name: "limit not a number", method: "GET", path: "/v1/devices?limit=ten", token: f.devices, wantStatus: 400, wantCode: "bad_request", wantMsg: []string{`"ten"`}},
		{name: "bad order", method: "GET", path: cases + "?order=newest", token: f.socRead, wantStatus: 400, wantCode: "bad_request", wantMsg: []string{"asc or desc"}},
		{name: "unknown filter", method: "GET", path: cases + "?colour=red", token: f.socRead, wantStatus: 400, wantCode: "bad_request", wantMsg: []string{`"colour"`}},
		{name: "filter of another list", method: "GET", path: "/v1/devices?severity=high", token: f.devices, wantStatus: 400, wantCode: "bad_request", wantMsg: []string{`"severity"`}},
		{name: "repeated parameter", method: "GET", path: cases + "?limit=1&limit=2", token: f.socRead, wantStatus: 400, wantCode: "bad_request", wantMsg: []string{"given 2 times"}},
		{name: "NUL in a filter", method: "GET", path: "/v1/devices?site=%00", token: f.devices, wantStatus: 400, wantCode: "bad_request", wantMsg: []string{`"site"`}},
		{name: "invalid UTF-8 in a filter", method: "GET", path: "/v1/devices?site=%FF", token: f.devices, wantStatus: 400, wantCode: "bad_request", wantMsg: []string{"UTF-8"}},

		// Routing.
		{name: "unknown route", method: "GET", path: "/v1/nope", token: f.all, wantStatus: 404, wantCode: "not_found", wantMsg: []string{"/v1/nope"}},
		{name: "unknown route without token", method: "GET", path: "/nope", wantStatus: 404, wantCode: "not_found"},
		{name: "wrong method", method: "DELETE", path: "/v1/org", token: f.all, wantStatus: 405, wantCode: "method_not_allowed", wantMsg: []string{"DELETE"}, wantHeader: map[string]string{"Allow": "GET"}},
		{name: "wrong method on a two-method route", method: "PUT", path: cases, token: f.all, body: `{}`, wantStatus: 405, wantCode: "method_not_allowed", wantHeader: map[string]string{"Allow": "GET, POST"}},
		{name: "POST to ping", method: "POST", path: "/v1/ping", token: f.all, wantStatus: 405, wantCode: "method_not_allowed", wantHeader: map[string]string{"Allow": "GET"}},

		// Authentication and scopes.
		{name: "missing token", method: "GET", path: "/v1/ping", wantStatus: 401, wantCode: "unauthorized", wantMsg: []string{"Authorization"}},
		{name: "malformed token", method: "GET", path: "/v1/ping", token: "hunter2", wantStatus: 401, wantCode: "unauthorized", wantMsg: []string{"malformed"}},
		{name: "basic scheme", method: "GET", path: "/v1/ping", header: map[string]string{"Authorization": "Basic " + f.org}, wantStatus: 401, wantCode: "unauthorized"},
		{name: "well-formed unknown token", method: "GET", path: "/v1/org", token: f.unknown, wantStatus: 401, wantCode: "unauthorized", wantMsg: []string{"invalid token"}},
		{name: "wrong secret", method: "GET", path: "/v1/org", token: f.wrongSecret, wantStatus: 401, wantCode: "unauthorized", wantMsg: []string{"invalid token"}},
		{name: "revoked token", method: "GET", path: "/v1/org", token: f.revoked, wantStatus: 401, wantCode: "unauthorized", wantMsg: []string{"revoked"}},
		{name: "missing token on a body route", method: "POST", path: cases, body: `{`, wantStatus: 401, wantCode: "unauthorized"},
		{name: "read scope on a write route", method: "POST", path: cases, token: f.socRead, body: `{"title":"a","severity":"low"}`, wantStatus: 403, wantCode: "invalid_scope", wantMsg: []string{"soc:write"}},
		{name: "write scope on a read route", method: "GET", path: cases, token: f.socWrite, wantStatus: 403, wantCode: "invalid_scope", wantMsg: []string{"soc:read"}},
		{name: "org scope on devices", method: "GET", path: "/v1/devices", token: f.org, wantStatus: 403, wantCode: "invalid_scope", wantMsg: []string{"devices:read"}},
		{name: "scope checked before the body", method: "POST", path: "/v1/webhooks", token: f.org, body: `{`, wantStatus: 403, wantCode: "invalid_scope", wantMsg: []string{"webhooks:write"}},
	}
}

func (r biRequest) send(t *testing.T, s *servertest.Server) *servertest.Response {
	t.Helper()
	if r.header != nil {
		return biSend(t, s, r.method, r.path, r.header, r.body)
	}
	var body any
	if r.body != "" || r.emptyBody {
		body = r.body
	}
	return s.Do(r.method, r.path, r.token, body)
}

func TestBadInput(t *testing.T) {
	biBackends(t, nil, func(t *testing.T, s *servertest.Server) {
		f := biSetup(t, s)
		for _, tc := range biRequests(f) {
			t.Run(tc.name, func(t *testing.T) {
				r := tc.send(t, s)
				e := biCheck(t, r)
				if r.Status != tc.wantStatus || e.Error.Code != tc.wantCode {
					t.Fatalf("got %d %q (%s); want %d %q", r.Status, e.Error.Code, r.Body, tc.wantStatus, tc.wantCode)
				}
				for _, part := range tc.wantMsg {
					if !strings.Contains(e.Error.Message, part) {
						t.Errorf("got message %q; want it to contain %q", e.Error.Message, part)
					}
				}
				for h, want := range tc.wantHeader {
					if got := r.Header.Get(h); got != want {
						t.Errorf("got %s %q; want %q", h, got, want)
					}
				}
				if r.Status == http.StatusUnauthorized && r.Header.Get("WWW-Authenticate") == "" {
					t.Errorf("got no WWW-Authenticate on a 401; want one")
				}
			})
		}
	})
}

// TestBadInputNever5xx sends the whole table, then junk bodies and junk list parameters to
// every /v1 route with a token holding every scope: no answer may be a 5xx, and every error
// must be the complete error body.
func TestBadInputNever5xx(t *testing.T) {
	bodies := []string{
		"", " ", "{", "}", "null", "true", "0", "-1e999", `""`, "[]", `[{}]`, "{}", `{"a":1}`,
		`{"title":null,"severity":null,"status":null,"note":null,"url":null,"events":null}`,
		`{"title":[],"severity":{},"status":1,"note":false,"url":1,"events":[1]}`,
		`{"title":"` + strings.Repeat("é", 5000) + `","severity":"low"}`,
		`{"url":"http://` + strings.Repeat("a", 3000) + `","events":["case.opened"]}`,
		`{"url":"javascript:alert(1)","events":["case.opened"]}`,
		`{"status":"resolved","note":"` + strings.Repeat("n", 20000) + `"}`,
		"{\"title\":\"\xff\xfe\",\"severity\":\"low\"}",
		`{"title":"\ud800","severity":"low"}`,
		strings.Repeat("[", 100000) + strings.Repeat("]", 100000),
		`{"title":"a","title":"b","severity":"low"}`,
		`{"title":"\u0000","severity":"low"}`, `{"note":"a\u0000"}`,
		`{"url":"https://example.com/","events":["case.opened"],"description":"\u0000"}`,
	}
	queries := []string{
		"?limit=-99999999999999999999", "?limit=%00", "?order=%FF", "?since=0000-01-01T00:00:00Z",
		"?since=9999-12-31T23:59:59.999999999Z", "?since=2026-01-02T15:04:05%2B23:59", "?cursor=%00",
		"?cursor=" + strings.Repeat("A", 10000), "?status=%FF&severity=%00&source=x&event=y&site=z",
		"?%00=1", "?a=%zz", "?" + strings.Repeat("x=1&", 1000),
	}
	biBackends(t, nil, func(t *testing.T, s *servertest.Server) {
		f := biSetup(t, s)
		for _, tc := range biRequests(f) {
			t.Run(tc.name, func(t *testing.T) { biCheck(t, tc.send(t, s)) })
		}
		ids := strings.NewReplacer(":delivery", f.deliveryA)
		for _, rt := range s.Routes() {
			if !strings.HasPrefix(rt.Path, "/v1/") {
				continue
			}
			path := rt.Path
			switch {
			case rt.Method == "DELETE":
				path = strings.ReplaceAll(path, ":id", "wh_missing")
			case strings.HasPrefix(path, "/v1/soc/cases/"):
				path = strings.ReplaceAll(path, ":id", f.caseID)
			default:
				path = strings.ReplaceAll(path, ":id", f.webhookA)
			}
			path = ids.Replace(path)
			for i, b := range bodies {
				t.Run(fmt.Sprintf("%s %s body %d", rt.Method, rt.Path, i), func(t *testing.T) {
					biCheck(t, s.Do(rt.Method, path, f.all, b))
				})
			}
			for i, q := range queries {
				t.Run(fmt.Sprintf("%s %s query %d", rt.Method, rt.Path, i), func(t *testing.T) {
					var body any
					if rt.Method == "POST" || rt.Method == "PATCH" {
						body = "{}"
					}
					biCheck(t, s.Do(rt.Method, path+q, f.all, body))
				})
			}
		}
	})
}

// biScopes says which scope each /v1 route needs ("" for any valid token). A route missing
// here fails the test: a new route must be added with its scope.
var biScopes = map[string]string{
	"GET /v1/ping":                              "",
	"GET /v1/org":                               auth.ScopeOrgRead,
	"GET /v1/devices":                           auth.ScopeDevicesRead,
	"GET /v1/soc/cases":                         auth.ScopeSOCRead,
	"GET /v1/soc/cases/:id":                     auth.ScopeSOCRead,
	"POST /v1/soc/cases":                        auth.ScopeSOCWrite,
	"PATCH /v1/soc/cases/:id":                   auth.ScopeSOCWrite,
	"POST /v1/webhooks":                         auth.ScopeWebhooksWrite,
	"GET /v1/webhooks":                          auth.ScopeWebhooksWrite,
	"GET /v1/webhooks/:id":                      auth.ScopeWebhooksWrite,
	"DELETE /v1/webhooks/:id":                   auth.ScopeWebhooksWrite,
	"GET /v1/webhooks/:id/deliveries":           auth.ScopeWebhooksWrite,
	"GET /v1/webhooks/:id/deliveries/:delivery": auth.ScopeWebhooksWrite,
	"POST /v1/webhooks/:id/deliveries/:delivery/redeliver": auth.ScopeWebhooksWrite,
}

func TestScopeMatrix(t *testing.T) {
	biBackends(t, nil, func(t *testing.T, s *servertest.Server) {
		var routes []string
		for _, rt := range s.Routes() {
			if strings.HasPrefix(rt.Path, "/v1/") {
				routes = append(routes, rt.Method+" "+rt.Path)
			}
		}
		for r := range biScopes {
			if !slices.Contains(routes, r) {
				t.Errorf("route %s in biScopes is not served; want the table to match the routes", r)
			}
		}
		project := s.ProjectKey("payments")
		for _, r := range routes {
			scope, ok := biScopes[r]
			if !ok {
				t.Errorf("route %s has no scope in biScopes; add it", r)
				continue
			}
			method, path, _ := strings.Cut(r, " ")
			path = strings.NewReplacer(":id", "x_missing", ":delivery", "x_missing").Replace(path)
			var body any
			if method == "POST" || method == "PATCH" {
				body = "{}"
			}
			if scope == "" {
				for _, sc := range auth.APIScopes {
					t.Run(r+" with "+sc, func(t *testing.T) {
						if got := s.Do(method, path, s.Key(sc), body); got.Status != http.StatusOK {
							t.Fatalf("got %d (%s); want 200 for any valid token", got.Status, got.Body)
						}
					})
				}
				t.Run(r+" with a project key", func(t *testing.T) {
					if got := s.Do(method, path, project, body); got.Status != http.StatusOK {
						t.Fatalf("got %d (%s); want 200 for any valid token", got.Status, got.Body)
					}
				})
				continue
			}
			t.Run(r+" with "+scope, func(t *testing.T) {
				got := s.Do(method, path, s.Key(scope), body)
				biCheck(t, got)
				if got.Status == http.StatusUnauthorized || got.Status == http.StatusForbidden {
					t.Fatalf("got %d (%s); want neither 401 nor 403 with exactly the scope %s", got.Status, got.Body, scope)
				}
			})
			others := slices.DeleteFunc(slices.Clone(auth.APIScopes), func(s string) bool { return s == scope })
			for _, tc := range []struct{ name, token string }{
				{name: "every other scope", token: s.Key(others...)},
				{name: "a project key", token: project},
			} {
				t.Run(r+" with "+tc.name, func(t *testing.T) {
					got := s.Do(method, path, tc.token, body)
					e := biCheck(t, got)
					if got.Status != http.StatusForbidden || e.Error.Code != "invalid_scope" || !strings.Contains(e.Error.Message, scope) {
						t.Fatalf("got %d %q %q; want 403 invalid_scope naming %s", got.Status, e.Error.Code, e.Error.Message, scope)
					}
				})
			}
		}
	})
}

func TestRateLimit(t *testing.T) {
	limited := func(c *config.Config) { c.RateLimit, c.RateBurst = 1, 3 }
	biBackends(t, limited, func(t *testing.T, s *servertest.Server) {
		tok, other := s.Key(auth.ScopeOrgRead), s.Key(auth.ScopeOrgRead)
		// Burst 3 at 1/s: the bucket refills one request a second, far slower than these
		// requests follow each other on loopback.
		tests := []struct {
			name          string
			token         string
			wantStatus    int
			wantRemaining string
		}{
			{name: "1st", token: tok, wantStatus: 200, wantRemaining: "2"},
			{name: "2nd", token: tok, wantStatus: 200, wantRemaining: "1"},
			{name: "3rd", token: tok, wantStatus: 200, wantRemaining: "0"},
			{name: "4th is limited", token: tok, wantStatus: 429, wantRemaining: "0"},
			{name: "another token has its own budget", token: other, wantStatus: 200, wantRemaining: "2"},
			{name: "failed attempt 1", token: "ewk_bad", wantStatus: 401},
			{name: "failed attempt 2", token: "ewk_bad", wantStatus: 401},
			{name: "failed attempt 3", token: "ewk_bad", wantStatus: 401},
			{name: "failed attempt 4 is limited", token: "ewk_bad", wantStatus: 429, wantRemaining: "0"},
			{name: "unknown well-formed token is limited too", token: func() string { _, t, _ := auth.NewToken(); return t }(), wantStatus: 429, wantRemaining: "0"},
			{name: "a valid token from that address still works", token: other, wantStatus: 200, wantRemaining: "1"},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				r := s.Do("GET", "/v1/org", tc.token, nil)
				e := biCheck(t, r)
				if r.Status != tc.wantStatus {
					t.Fatalf("got %d (%s); want %d", r.Status, r.Body, tc.wantStatus)
				}
				if got := r.Header.Get("X-RateLimit-Remaining"); got != tc.wantRemaining {
					t.Fatalf("got X-RateLimit-Remaining %q; want %q", got, tc.wantRemaining)
				}
				if tc.wantRemaining != "" && r.Header.Get("X-RateLimit-Limit") != "3" {
					t.Fatalf("got X-RateLimit-Limit %q; want \"3\"", r.Header.Get("X-RateLimit-Limit"))
				}
				if r.Status != http.StatusTooManyRequests {
					return
				}
				if e.Error.Code != "rate_limited" {
					t.Fatalf("got code %q; want rate_limited", e.Error.Code)
				}
				retry, err := strconv.Atoi(r.Header.Get("Retry-After"))
				if err != nil || retry < 1 {
					t.Fatalf("got Retry-After %q; want an integer >= 1", r.Header.Get("Retry-After"))
				}
				if reset, err := strconv.Atoi(r.Header.Get("X-RateLimit-Reset")); err != nil || reset < retry {
					t.Fatalf("got X-RateLimit-Reset %q; want an integer >= Retry-After %d", r.Header.Get("X-RateLimit-Reset"), retry)
				}
			})
		}
	})
}
