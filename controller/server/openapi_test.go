package server_test

// The OpenAPI document (coreapi/openapi/openapi.yaml) against the running controller: the
// routes it registers, the scopes it enforces, and the statuses, bodies and headers it answers.
// Helpers here are prefixed "oa" so they do not collide with other tests of the package.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/edgewan/edgewan/controller/config"
	"github.com/edgewan/edgewan/controller/sdwan"
	"github.com/edgewan/edgewan/controller/server/servertest"
	"github.com/edgewan/edgewan/coreapi/auth"
	"github.com/edgewan/edgewan/coreapi/openapi"
	"github.com/edgewan/edgewan/coreapi/org"
	"github.com/edgewan/edgewan/coreapi/webhook"
)

func oaLoad(t *testing.T) *openapi3.T {
	t.Helper()
	raw, err := openapi.JSON()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := openapi3.NewLoader().LoadFromData(raw)
	if err != nil {
		t.Fatalf("loading the OpenAPI document: %v", err)
	}
	return doc
}

var oaDocParam = regexp.MustCompile(`\{([^}/]+)\}`)

// oaGinPath turns a document path (/v1/soc/cases/{id}) into a gin route path (/v1/soc/cases/:id).
func oaGinPath(p string) string { return oaDocParam.ReplaceAllString(p, ":$1") }

// TestOpenAPIMatchesRoutes is the drift test: the document's operations are exactly the
// controller's registered routes.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	doc := oaLoad(t)
	s := servertest.Start(t, servertest.Options{})

	routes := map[string]bool{}
	for _, r := range s.Routes() {
		routes[r.Method+" "+r.Path] = true
	}
	documented := map[string]bool{}
	for _, p := range doc.Paths.Keys() {
		for method := range doc.Paths.Value(p).Operations() {
			documented[strings.ToUpper(method)+" "+oaGinPath(p)] = true
		}
	}
	var missing, stale []string
	for r := range routes {
		if !documented[r] {
			missing = append(missing, r)
		}
	}
	for d := range documented {
		if !routes[d] {
			stale = append(stale, d)
		}
	}
	sort.Strings(missing)
	sort.Strings(stale)
	if len(missing) > 0 || len(stale) > 0 {
		var b strings.Builder
		b.WriteString("coreapi/openapi/openapi.yaml disagrees with the controller's routes")
		if len(missing) > 0 {
			b.WriteString("\nroutes the controller serves that the document lacks (add them to paths):")
			for _, r := range missing {
				b.WriteString("\n  " + r)
			}
		}
		if len(stale) > 0 {
			b.WriteString("\ndocument operations with no route (remove them, or register the route):")
			for _, d := range stale {
				b.WriteString("\n  " + d)
			}
		}
		b.WriteString("\n(gin :param paths correspond to {param} in the document)")
		t.Fatal(b.String())
	}
	if len(routes) < 10 {
		t.Fatalf("only %d routes registered: %v", len(routes), routes)
	}
}

// TestOpenAPIServed checks GET /openapi.json over HTTPS without a token.
func TestOpenAPIServed(t *testing.T) {
	s := servertest.Start(t, servertest.Options{})
	if !strings.HasPrefix(s.URL, "https://") {
		t.Fatalf("the test server is not HTTPS: %s", s.URL)
	}
	r := s.Do("GET", "/openapi.json", "", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("GET /openapi.json: %d %s", r.Status, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("GET /openapi.json: Content-Type %q; want application/json", ct)
	}
	want, err := openapi.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var got, exp any
	r.JSON(t, &got)
	if err := json.Unmarshal(want, &exp); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, exp) {
		t.Fatal("GET /openapi.json does not serve the embedded document")
	}
	served, err := openapi3.NewLoader().LoadFromData(r.Body)
	if err != nil {
		t.Fatalf("the served document does not load: %v", err)
	}
	if err := served.Validate(context.Background()); err != nil {
		t.Fatalf("the served document is not valid: %v", err)
	}
}

// oaFill substitutes a value for every {param} of a document path.
func oaFill(p string, vals map[string]string) string {
	return oaDocParam.ReplaceAllStringFunc(p, func(m string) string {
		if v, ok := vals[m[1:len(m)-1]]; ok {
			return v
		}
		return "x_nope"
	})
}

// TestOpenAPIScopes checks each operation's x-required-scope against the server: without a
// token 401; with every scope but the required one 403 invalid_scope naming it; with only it,
// neither 401 nor 403. An operation without x-required-scope accepts any key, even an AI
// gateway key. Requests carry no body and unknown IDs, so nothing is changed.
func TestOpenAPIScopes(t *testing.T) {
	doc := oaLoad(t)
	s := servertest.Start(t, servertest.Options{})
	project := s.ProjectKey("oa-project")
	for _, p := range doc.Paths.Keys() {
		for method, o := range doc.Paths.Value(p).Operations() {
			path := oaFill(p, nil)
			name := method + " " + p
			noAuth := o.Security != nil && len(*o.Security) == 0
			r := s.Do(method, path, "", nil)
			if noAuth {
				if r.Status == http.StatusUnauthorized {
					t.Errorf("%s: documented as needing no token, answered 401", name)
				}
				continue
			}
			if r.Status != http.StatusUnauthorized {
				t.Errorf("%s without a token: %d; want 401", name, r.Status)
			}
			scope, _ := o.Extensions["x-required-scope"].(string)
			if scope == "" {
				if r := s.Do(method, path, project, nil); r.Status == http.StatusUnauthorized || r.Status == http.StatusForbidden {
					t.Errorf("%s has no x-required-scope, but an AI gateway key got %d %s", name, r.Status, r.Body)
				}
				continue
			}
			var others []string
			for _, sc := range auth.AllScopes {
				if sc != scope {
					others = append(others, sc)
				}
			}
			r = s.Do(method, path, s.Key(others...), nil)
			if r.Status != http.StatusForbidden {
				t.Errorf("%s with every scope but %s: %d %s; want 403", name, scope, r.Status, r.Body)
			} else if e := r.Err(t); e.Error.Code != "invalid_scope" || !strings.Contains(e.Error.Message, scope) {
				t.Errorf("%s with every scope but %s: error %+v; want invalid_scope naming %s", name, scope, e.Error, scope)
			}
			if r := s.Do(method, path, s.Key(scope), nil); r.Status == http.StatusUnauthorized || r.Status == http.StatusForbidden {
				t.Errorf("%s with only %s: %d %s; the document says that scope is enough", name, scope, r.Status, r.Body)
			}
		}
	}
}

// oaChecker checks responses against the document.
type oaChecker struct {
	t       *testing.T
	doc     *openapi3.T
	s       *servertest.Server
	mu      sync.Mutex
	covered map[string]bool // "METHOD /doc/path STATUS"
}

// oaOperation finds the operation of a document path.
func (c *oaChecker) operation(method, docPath string) *openapi3.Operation {
	c.t.Helper()
	item := c.doc.Paths.Value(docPath)
	if item == nil {
		c.t.Fatalf("the document has no path %s", docPath)
	}
	o := item.GetOperation(method)
	if o == nil {
		c.t.Fatalf("the document has no operation %s %s", method, docPath)
	}
	return o
}

// oaUndocumented lists the properties of v that schema s does not declare, recursively.
func oaUndocumented(at string, s *openapi3.Schema, v any) []string {
	if s == nil {
		return nil
	}
	var out []string
	switch v := v.(type) {
	case map[string]any:
		// A oneOf (policy content: steering or QoS) is documented by the branch the value matches.
		for _, alt := range s.OneOf {
			if alt.Value.VisitJSON(v, openapi3.VisitAsResponse()) == nil {
				return oaUndocumented(at, alt.Value, v)
			}
		}
		props := map[string]*openapi3.SchemaRef{}
		open := s.AdditionalProperties.Has != nil && *s.AdditionalProperties.Has || s.AdditionalProperties.Schema != nil
		for _, sub := range append([]*openapi3.SchemaRef{{Value: s}}, s.AllOf...) {
			for k, p := range sub.Value.Properties {
				props[k] = p
			}
		}
		for k, val := range v {
			p, ok := props[k]
			if !ok {
				if !open {
					out = append(out, at+"."+k)
				}
				continue
			}
			out = append(out, oaUndocumented(at+"."+k, p.Value, val)...)
		}
	case []any:
		if s.Items != nil {
			for i, val := range v {
				out = append(out, oaUndocumented(fmt.Sprintf("%s[%d]", at, i), s.Items.Value, val)...)
			}
		}
	}
	return out
}

// validate checks value against a schema: valid, and with no undocumented properties.
func (c *oaChecker) validate(what string, s *openapi3.SchemaRef, value any) {
	c.t.Helper()
	if err := s.Value.VisitJSON(value, openapi3.VisitAsResponse(), openapi3.EnableFormatValidation(), openapi3.MultiErrors()); err != nil {
		c.t.Errorf("%s does not match its schema: %v", what, err)
	}
	if extra := oaUndocumented("$", s.Value, value); len(extra) > 0 {
		sort.Strings(extra)
		c.t.Errorf("%s has properties the document does not declare: %v", what, extra)
	}
}

// check checks a response to method docPath against the document and returns it.
func (c *oaChecker) check(method, docPath string, r *servertest.Response) *servertest.Response {
	c.t.Helper()
	method = strings.ToUpper(method)
	name := fmt.Sprintf("%s %s %d", method, docPath, r.Status)
	c.mu.Lock()
	c.covered[name] = true
	c.mu.Unlock()
	resp := c.operation(method, docPath).Responses.Status(r.Status)
	if resp == nil {
		c.t.Errorf("%s: the document does not declare status %d for this operation (body %s)", name, r.Status, r.Body)
		return r
	}
	for h, ref := range resp.Value.Headers {
		if ref.Value.Required && r.Header.Get(h) == "" {
			c.t.Errorf("%s: the required header %s is missing", name, h)
		}
	}
	for _, h := range []string{"Location", "Cache-Control", "WWW-Authenticate", "Retry-After", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
		if r.Header.Get(h) != "" && resp.Value.Headers[h] == nil {
			c.t.Errorf("%s: the response carries %s, which the document does not declare", name, h)
		}
	}
	mt := resp.Value.Content.Get("application/json")
	if mt == nil {
		if len(r.Body) != 0 {
			c.t.Errorf("%s: the document declares no body, got %s", name, r.Body)
		}
		return r
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		c.t.Errorf("%s: Content-Type %q; the document says application/json", name, ct)
	}
	var v any
	if err := json.Unmarshal(r.Body, &v); err != nil {
		c.t.Errorf("%s: body is not JSON: %v: %s", name, err, r.Body)
		return r
	}
	c.validate(name+" body", mt.Schema, v)
	if r.Status >= 400 {
		r.Err(c.t) // complete and matching X-Request-Id
	}
	return r
}

// do sends a request (token may be ""), checks the response and returns it.
func (c *oaChecker) do(method, docPath, path, token string, body any) *servertest.Response {
	c.t.Helper()
	return c.check(method, docPath, c.s.Do(method, path, token, body))
}

// raw sends a request with an explicit Content-Type and body.
func (c *oaChecker) raw(method, docPath, path, token, contentType string, body []byte) *servertest.Response {
	c.t.Helper()
	req, err := http.NewRequest(method, c.s.URL+path, bytes.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.s.Client.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return c.check(method, docPath, &servertest.Response{Status: resp.StatusCode, Header: resp.Header, Body: b})
}

func (c *oaChecker) want(r *servertest.Response, status int) {
	c.t.Helper()
	if r.Status != status {
		c.t.Fatalf("got %d %s; want %d", r.Status, r.Body, status)
	}
}

type oaDelivered struct {
	header http.Header
	body   []byte
}

// TestOpenAPIConformance exercises every operation, successes and errors, and checks each
// response against the document: the status is declared, the body matches the schema with no
// undocumented property, and the required headers are present. It also checks webhook
// deliveries against EventEnvelope, CaseEventData and the documented X-Service-* headers.
func TestOpenAPIConformance(t *testing.T) {
	doc := oaLoad(t)
	s := servertest.Start(t, servertest.Options{})
	c := &oaChecker{t: t, doc: doc, s: s, covered: map[string]bool{}}
	all := s.Key(auth.AllScopes...)

	var mu sync.Mutex
	var got []oaDelivered
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, oaDelivered{r.Header.Clone(), b})
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(recv.Close)

	// Operations outside the families.
	c.want(c.do("GET", "/healthz", "/healthz", "", nil), 200)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if r := c.do("GET", "/readyz", "/readyz", "", nil); r.Status == 200 || time.Now().After(deadline) {
			c.want(r, 200)
			break
		}
	}
	c.want(c.do("GET", "/openapi.json", "/openapi.json", "", nil), 200)

	// Core.
	c.want(c.do("GET", "/v1/ping", "/v1/ping", all, nil), 200)
	c.want(c.do("GET", "/v1/ping", "/v1/ping", s.ProjectKey("oa-project"), nil), 200)
	c.want(c.do("GET", "/v1/ping", "/v1/ping", "", nil), 401)
	c.want(c.do("GET", "/v1/ping", "/v1/ping", "ewk_not_a_token", nil), 401)
	c.want(c.do("GET", "/v1/org", "/v1/org", all, nil), 200)
	c.want(c.do("GET", "/v1/org", "/v1/org", s.Key("soc:read"), nil), 403)

	now := time.Now().UTC().Truncate(time.Microsecond)
	for _, d := range []*org.Device{
		{ID: "dev_oa1", SiteID: "site_oa", Name: "r1", Serial: "SN1", Status: org.DeviceOnline, Version: "1.2.3", LastSeen: now, CreatedAt: now, UpdatedAt: now},
		{ID: "dev_oa2", SiteID: "site_oa", Name: "r2", Status: org.DevicePending, CreatedAt: now, UpdatedAt: now.Add(time.Second)},
	} {
		if err := s.Store.PutDevice(context.Background(), d); err != nil {
			t.Fatal(err)
		}
	}
	r := c.do("GET", "/v1/devices", "/v1/devices?limit=1&order=asc&site=site_oa", all, nil)
	c.want(r, 200)
	var devPage struct {
		NextCursor *string `json:"next_cursor"`
	}
	r.JSON(t, &devPage)
	if devPage.NextCursor == nil {
		t.Fatal("devices: no next_cursor on a first page of 1 of 2")
	}
	c.want(c.do("GET", "/v1/devices", "/v1/devices?limit=1&order=asc&site=site_oa&cursor="+*devPage.NextCursor, all, nil), 200)
	c.want(c.do("GET", "/v1/devices", "/v1/devices?cursor=bogus", all, nil), 400)
	c.want(c.do("GET", "/v1/devices", "/v1/devices?limit=500", all, nil), 400)
	c.want(c.do("GET", "/v1/devices", "/v1/devices?colour=red", all, nil), 400)

	// Webhooks: register one for the case events.
	r = c.do("POST", "/v1/webhooks", "/v1/webhooks", all, map[string]any{
		"url": recv.URL + "/hook", "events": []string{"case.opened", "case.updated", "case.closed"}, "description": "oa",
	})
	c.want(r, 201)
	var wh webhook.Webhook
	r.JSON(t, &wh)
	if loc := r.Header.Get("Location"); loc != "/v1/webhooks/"+wh.ID {
		t.Errorf("webhook Location %q", loc)
	}
	c.want(c.do("POST", "/v1/webhooks", "/v1/webhooks", all, map[string]any{"url": "ftp://x", "events": []string{"case.opened"}}), 400)
	c.want(c.do("POST", "/v1/webhooks", "/v1/webhooks", all, map[string]any{"url": "https://x.example", "events": []string{"nope"}}), 400)

	// SOC cases.
	r = c.do("POST", "/v1/soc/cases", "/v1/soc/cases", all, map[string]any{"title": "oa case", "description": "d", "severity": "high"})
	c.want(r, 201)
	var cs struct{ ID string }
	r.JSON(t, &cs)
	caseDoc, casePath := "/v1/soc/cases/{id}", "/v1/soc/cases/"+cs.ID
	c.want(c.do("POST", "/v1/soc/cases", "/v1/soc/cases", all, map[string]any{"title": "minimal"}), 201)
	c.want(c.do("POST", "/v1/soc/cases", "/v1/soc/cases", all, map[string]any{"titel": "typo"}), 400)
	c.want(c.do("POST", "/v1/soc/cases", "/v1/soc/cases", all, `{"title": `), 400)
	c.want(c.do("POST", "/v1/soc/cases", "/v1/soc/cases", all, `null`), 400)
	c.want(c.do("POST", "/v1/soc/cases", "/v1/soc/cases", all, map[string]any{"title": "x", "severity": "extreme"}), 400)
	c.want(c.raw("POST", "/v1/soc/cases", "/v1/soc/cases", all, "text/plain", []byte(`{"title":"x"}`)), 415)
	big := append([]byte(`{"title":"`), bytes.Repeat([]byte("a"), 1<<20)...)
	c.want(c.raw("POST", "/v1/soc/cases", "/v1/soc/cases", all, "application/json", append(big, `"}`...)), 413)
	c.want(c.do("POST", "/v1/soc/cases", "/v1/soc/cases", s.Key("soc:read"), map[string]any{"title": "x"}), 403)

	c.want(c.do("GET", "/v1/soc/cases", "/v1/soc/cases", all, nil), 200)
	c.want(c.do("GET", "/v1/soc/cases", "/v1/soc/cases?status=open&severity=high&source=manual&limit=1", all, nil), 200)
	c.want(c.do("GET", "/v1/soc/cases", "/v1/soc/cases?status=closed", all, nil), 400)
	c.want(c.do("GET", caseDoc, casePath, all, nil), 200)
	c.want(c.do("GET", caseDoc, "/v1/soc/cases/case_nope", all, nil), 404)
	c.want(c.do("PATCH", caseDoc, casePath, all, map[string]any{"status": "investigating", "note": "looking"}), 200)
	c.want(c.do("PATCH", caseDoc, casePath, all, map[string]any{"status": "resolved", "severity": "low", "title": "oa case, done"}), 200)
	c.want(c.do("PATCH", caseDoc, casePath, all, map[string]any{}), 400)
	c.want(c.do("PATCH", caseDoc, casePath, all, map[string]any{"status": "closed"}), 400)
	c.want(c.do("PATCH", caseDoc, "/v1/soc/cases/case_nope", all, map[string]any{"note": "x"}), 404)
	c.want(c.raw("PATCH", caseDoc, casePath, all, "text/xml", []byte(`<note/>`)), 415)

	// Deliveries of the case events: 2 case.opened, 1 case.updated, 1 case.closed.
	deliveries := func() []oaDelivered {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
	for deadline := time.Now().Add(15 * time.Second); len(deliveries()) < 4; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("got %d webhook deliveries; want 4", len(deliveries()))
		}
	}
	envelope := doc.Components.Schemas["EventEnvelope"]
	caseData := doc.Components.Schemas["CaseEventData"]
	types := map[string]int{}
	for i, d := range deliveries() {
		what := fmt.Sprintf("delivery %d", i)
		var v map[string]any
		if err := json.Unmarshal(d.body, &v); err != nil {
			t.Fatalf("%s: body is not JSON: %s", what, d.body)
		}
		c.validate(what+" envelope", envelope, v)
		c.validate(what+" case event data", caseData, v["data"])
		types[v["type"].(string)]++
		if ct := d.header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: Content-Type %q", what, ct)
		}
		for name, h := range doc.Components.Headers {
			if !strings.HasPrefix(name, "X-Service-") {
				continue
			}
			val := d.header.Get(name)
			if val == "" {
				t.Errorf("%s: the documented header %s is missing", what, name)
				continue
			}
			if err := h.Value.Schema.Value.VisitJSON(val); err != nil {
				t.Errorf("%s: header %s=%q does not match its schema: %v", what, name, val, err)
			}
		}
		if d.header.Get("X-Service-Event-Id") != v["id"] || d.header.Get("X-Service-Event-Type") != v["type"] {
			t.Errorf("%s: X-Service-Event-Id/-Type do not match the envelope", what)
		}
		if want := webhook.Sign(wh.Secret, d.body); d.header.Get("X-Service-Signature") != want {
			t.Errorf("%s: X-Service-Signature is not the HMAC-SHA256 of the body keyed with the secret", what)
		}
		ts := d.header.Get("X-Service-Timestamp")
		if !webhook.Verify(wh.Secret, d.body, d.header.Get("X-Service-Signature"), d.header.Get("X-Service-Signature-V2"), ts, time.Minute, time.Now()) {
			t.Errorf("%s: X-Service-Signature-V2 does not verify as documented", what)
		}
	}
	if types["case.opened"] != 2 || types["case.updated"] != 1 || types["case.closed"] != 1 {
		t.Errorf("delivered event types %v; want 2 case.opened, 1 case.updated, 1 case.closed", types)
	}

	// Webhook reads, deliveries, redelivery, deletion.
	whDoc, whPath := "/v1/webhooks/{id}", "/v1/webhooks/"+wh.ID
	c.want(c.do("GET", "/v1/webhooks", "/v1/webhooks", all, nil), 200)
	c.want(c.do("GET", "/v1/webhooks", "/v1/webhooks?event=case.closed", all, nil), 200)
	c.want(c.do("GET", "/v1/webhooks", "/v1/webhooks?event=nope", all, nil), 400)
	c.want(c.do("GET", "/v1/webhooks", "/v1/webhooks?limit=1&limit=2", all, nil), 400)
	c.want(c.do("GET", whDoc, whPath, all, nil), 200)
	c.want(c.do("GET", whDoc, "/v1/webhooks/wh_nope", all, nil), 404)

	dlvDoc := "/v1/webhooks/{id}/deliveries"
	var dl struct {
		Data []webhook.Delivery `json:"data"`
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		r = c.do("GET", dlvDoc, whPath+"/deliveries?status=succeeded", all, nil)
		c.want(r, 200)
		r.JSON(t, &dl)
		if len(dl.Data) == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d succeeded deliveries recorded; want 4", len(dl.Data))
		}
	}
	first := dl.Data[0]
	c.want(c.do("GET", dlvDoc, whPath+"/deliveries?event_id="+first.EventID+"&order=asc", all, nil), 200)
	c.want(c.do("GET", dlvDoc, whPath+"/deliveries?status=lost", all, nil), 400)
	c.want(c.do("GET", dlvDoc, "/v1/webhooks/wh_nope/deliveries", all, nil), 404)
	oneDoc := "/v1/webhooks/{id}/deliveries/{delivery}"
	c.want(c.do("GET", oneDoc, whPath+"/deliveries/"+first.ID, all, nil), 200)
	c.want(c.do("GET", oneDoc, whPath+"/deliveries/dlv_nope", all, nil), 404)
	redoDoc := "/v1/webhooks/{id}/deliveries/{delivery}/redeliver"
	c.want(c.do("POST", redoDoc, whPath+"/deliveries/"+first.ID+"/redeliver", all, nil), 202)
	c.want(c.do("POST", redoDoc, whPath+"/deliveries/dlv_nope/redeliver", all, nil), 404)
	c.want(c.do("GET", whDoc, whPath, s.Key("soc:write"), nil), 403)
	c.want(c.do("DELETE", whDoc, whPath, all, nil), 204)
	c.want(c.do("DELETE", whDoc, whPath, all, nil), 404)

	// SD-WAN.
	c.sdwanFamily(all)

	// Unknown paths and methods answer the error body too.
	for _, x := range []struct {
		method, path string
		status       int
		code         string
	}{
		{"GET", "/v1/nope", 404, "not_found"},
		{"GET", "/sd-wan/v1/nope", 404, "not_found"},
		{"PUT", "/v1/org", 405, "method_not_allowed"},
		{"PUT", "/sd-wan/v1/sites", 405, "method_not_allowed"},
	} {
		r := s.Do(x.method, x.path, all, nil)
		if r.Status != x.status || r.Err(t).Error.Code != x.code {
			t.Errorf("%s %s: %d %s; the document says %d %s", x.method, x.path, r.Status, r.Body, x.status, x.code)
		}
	}

	// Every documented success status was seen at least once; for SD-WAN every documented
	// status but 429 (TestOpenAPIRateLimited) and 500.
	for _, p := range doc.Paths.Keys() {
		for method, o := range doc.Paths.Value(p).Operations() {
			for code := range o.Responses.Map() {
				all := strings.HasPrefix(p, "/sd-wan/v1/") && code != "429" && code != "500"
				if (code[0] == '2' || all) && !c.covered[method+" "+p+" "+code] {
					t.Errorf("%s %s %s: documented but never answered in this test", method, p, code)
				}
			}
		}
	}
}

// TestOpenAPIRateLimited checks the documented 429s and rate-limit headers.
func TestOpenAPIRateLimited(t *testing.T) {
	doc := oaLoad(t)
	s := servertest.Start(t, servertest.Options{Config: func(cfg *config.Config) {
		cfg.RateLimit, cfg.RateBurst = 0.5, 1
	}})
	c := &oaChecker{t: t, doc: doc, s: s, covered: map[string]bool{}}
	tok := s.Key("org:read")

	r := c.do("GET", "/v1/org", "/v1/org", tok, nil)
	c.want(r, 200)
	for _, h := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
		if r.Header.Get(h) == "" {
			t.Errorf("with rate limiting on, a 200 lacks %s", h)
		}
	}
	c.want(c.do("GET", "/v1/org", "/v1/org", tok, nil), 429)

	// Failed authentications spend the client address's budget.
	c.want(c.do("GET", "/v1/ping", "/v1/ping", "", nil), 401)
	c.want(c.do("GET", "/v1/ping", "/v1/ping", "", nil), 429)

	// SD-WAN: each key its own bucket, with the same headers.
	sd := s.Key("sdwan:read")
	r = c.do("GET", "/sd-wan/v1/sites", "/sd-wan/v1/sites", sd, nil)
	c.want(r, 200)
	for _, h := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
		if r.Header.Get(h) == "" {
			t.Errorf("with rate limiting on, an SD-WAN 200 lacks %s", h)
		}
	}
	c.want(c.do("GET", "/sd-wan/v1/sites", "/sd-wan/v1/sites", sd, nil), 429)
	// The claim has no key: it spends the address's budget, which the failed authentications
	// above have used up.
	claim := map[string]string{"claim_token": "ewc_nope"}
	c.want(c.do("POST", "/sd-wan/v1/claim", "/sd-wan/v1/claim", "", claim), 429)

	// And claims alone use it up.
	s2 := servertest.Start(t, servertest.Options{Config: func(cfg *config.Config) {
		cfg.RateLimit, cfg.RateBurst = 0.5, 1
	}})
	c2 := &oaChecker{t: t, doc: doc, s: s2, covered: map[string]bool{}}
	c2.want(c2.do("POST", "/sd-wan/v1/claim", "/sd-wan/v1/claim", "", claim), 401)
	r = c2.do("POST", "/sd-wan/v1/claim", "/sd-wan/v1/claim", "", claim)
	c2.want(r, 429)
	if r.Err(t).Error.Code != "rate_limited" {
		t.Errorf("claim over the limit: %s", r.Body)
	}
}

// sdwanFamily exercises every SD-WAN operation, its successes and each error status it documents,
// and checks that the request schemas accept exactly what the handlers accept at the
// boundaries the schemas can express.
func (c *oaChecker) sdwanFamily(all string) {
	t, s := c.t, c.s
	t.Helper()
	read, write := s.Key(auth.ScopeSDWANRead), s.Key(auth.ScopeSDWANWrite)

	// Sites: pre-stage one with transports and a pinned serial, and a minimal one.
	sitesDoc, siteDoc := "/sd-wan/v1/sites", "/sd-wan/v1/sites/{id}"
	r := c.do("POST", sitesDoc, sitesDoc, write, map[string]any{
		"name": "OA Branch", "role": "branch", "serial": "SN-OA-1", "claim_ttl": "72h",
		"location": map[string]any{"address": "1 rue de la Paix", "city": "Lyon", "country": "FR", "lat": 45.76, "lon": 4.83},
		"segments": []string{"corporate", "guest"},
		"transports": []map[string]any{
			{"name": "mpls", "kind": "mpls", "interface": "eth1", "gateway": "198.18.1.1", "probe_targets": []string{"198.18.100.1"}, "bandwidth_kbps": 20000, "cost": 10},
			{"name": "inet", "kind": "broadband", "interface": "eth2", "gateway": "198.18.2.1", "probe_targets": []string{"198.18.100.1"}, "bandwidth_kbps": 100000, "cost": 1},
		},
	})
	c.want(r, 201)
	var site sdwan.Site
	r.JSON(t, &site)
	if loc := r.Header.Get("Location"); loc != "/sd-wan/v1/sites/"+site.ID {
		t.Errorf("site Location %q", loc)
	}
	if cc := r.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("site creation Cache-Control %q; the document says no-store", cc)
	}
	if site.Status != sdwan.SitePending || !strings.HasPrefix(site.Claim, "ewc_") || len(site.Transports) != 2 ||
		site.ClaimExpiresAt.Sub(site.CreatedAt) != 72*time.Hour {
		t.Fatalf("created site: %s", r.Body)
	}
	sitePath := "/sd-wan/v1/sites/" + site.ID
	var kiosk sdwan.Site
	r = c.do("POST", sitesDoc, sitesDoc, all, map[string]any{"name": "OA Kiosk"})
	c.want(r, 201)
	r.JSON(t, &kiosk)
	if kiosk.Role != "branch" || !slices.Equal(kiosk.Segments, []string{"corporate"}) ||
		kiosk.ClaimExpiresAt.Sub(kiosk.CreatedAt) != 7*24*time.Hour {
		t.Errorf("the documented defaults (role branch, segments [corporate], claim_ttl 168h) were not applied: %s", r.Body)
	}
	kioskPath := "/sd-wan/v1/sites/" + kiosk.ID
	c.want(c.do("POST", sitesDoc, sitesDoc, all, map[string]any{"name": "OA Branch"}), 409)
	c.want(c.do("POST", sitesDoc, sitesDoc, all, map[string]any{"name": "OA Twice", "transports": []map[string]any{
		{"name": "a", "interface": "eth1"}, {"name": "a", "interface": "eth2"}}}), 400)
	c.want(c.do("POST", sitesDoc, sitesDoc, all, map[string]any{"name": "OA Days", "claim_ttl": "7d"}), 201)    // days are accepted
	c.want(c.do("POST", sitesDoc, sitesDoc, all, map[string]any{"name": "OA Days 2", "claim_ttl": "91d"}), 400) // over 90 days
	c.want(c.do("POST", sitesDoc, sitesDoc, all, map[string]any{"name": "OA Long", "claim_ttl": "2161h"}), 400)
	c.want(c.do("POST", sitesDoc, sitesDoc, all, map[string]any{"name": "  "}), 400)
	c.want(c.do("POST", sitesDoc, sitesDoc, read, map[string]any{"name": "x"}), 403)

	c.want(c.do("GET", siteDoc, sitePath, read, nil), 200)
	if r := c.do("GET", siteDoc, sitePath, read, nil); strings.Contains(string(r.Body), "claim_token") {
		t.Errorf("GET shows the claim token: %s", r.Body)
	}
	c.want(c.do("GET", siteDoc, "/sd-wan/v1/sites/site_nope", read, nil), 404)

	// Lists and filters: two pending branch sites, one per page.
	r = c.do("GET", sitesDoc, "/sd-wan/v1/sites?status=pending&role=branch&limit=1&order=asc", read, nil)
	c.want(r, 200)
	var sitePage struct {
		Data       []sdwan.Site `json:"data"`
		NextCursor *string      `json:"next_cursor"`
	}
	r.JSON(t, &sitePage)
	if len(sitePage.Data) != 1 || sitePage.NextCursor == nil {
		t.Fatalf("sites: first page of 1 of 2: %s", r.Body)
	}
	c.want(c.do("GET", sitesDoc, "/sd-wan/v1/sites?status=pending&role=branch&limit=1&order=asc&cursor="+*sitePage.NextCursor, read, nil), 200)
	c.want(c.do("GET", sitesDoc, "/sd-wan/v1/sites?status=happy", read, nil), 400)
	c.want(c.do("GET", sitesDoc, "/sd-wan/v1/sites?role=spoke", read, nil), 400)
	c.want(c.do("GET", sitesDoc, "/sd-wan/v1/sites?colour=red", read, nil), 400)
	c.want(c.do("GET", sitesDoc, "/sd-wan/v1/sites?cursor=bogus", read, nil), 400)

	// PATCH.
	c.want(c.do("PATCH", siteDoc, sitePath, write, map[string]any{"name": "OA Branch Lyon", "segments": []string{"corporate", "iot"}, "location": map[string]any{"city": "Lyon"}}), 200)
	c.want(c.do("PATCH", siteDoc, sitePath, write, map[string]any{}), 400)
	c.want(c.do("PATCH", siteDoc, sitePath, write, map[string]any{"role": "spoke"}), 400)
	c.want(c.do("PATCH", siteDoc, sitePath, write, map[string]any{"name": "OA Kiosk"}), 409)
	c.want(c.do("PATCH", siteDoc, "/sd-wan/v1/sites/site_nope", write, map[string]any{"name": "x"}), 404)

	// Transports.
	trsDoc, trsPath := "/sd-wan/v1/sites/{id}/transports", sitePath+"/transports"
	r = c.do("POST", trsDoc, trsPath, write, map[string]any{"name": "lte", "kind": "lte", "interface": "wwan0", "probe_targets": []string{"198.18.100.1"}})
	c.want(r, 201)
	var tr sdwan.Transport
	r.JSON(t, &tr)
	if loc := r.Header.Get("Location"); loc != trsPath+"/"+tr.ID {
		t.Errorf("transport Location %q; the document says %s/{transport ID}", loc, trsPath)
	}
	if tr.Status != sdwan.TransportUnknown || tr.SiteID != site.ID {
		t.Errorf("new transport: %s", r.Body)
	}
	c.want(c.do("POST", trsDoc, trsPath, write, map[string]any{"name": "lte", "interface": "wwan1"}), 409)
	c.want(c.do("POST", trsDoc, trsPath, write, map[string]any{"name": "x", "interface": "eth0", "gateway": "not-ip"}), 400)
	c.want(c.do("POST", trsDoc, trsPath, write, map[string]any{"name": "x", "interface": "a/b"}), 400)
	c.want(c.do("POST", trsDoc, "/sd-wan/v1/sites/site_nope/transports", write, map[string]any{"name": "x", "interface": "e"}), 404)
	r = c.do("GET", trsDoc, trsPath+"?order=asc", read, nil)
	c.want(r, 200)
	var trs struct{ Data []sdwan.Transport }
	r.JSON(t, &trs)
	if len(trs.Data) != 3 {
		t.Errorf("got %d transports; want 3", len(trs.Data))
	}
	c.want(c.do("GET", trsDoc, trsPath+"?kind=lte", read, nil), 400) // no filters
	c.want(c.do("GET", trsDoc, "/sd-wan/v1/sites/site_nope/transports", read, nil), 404)

	// Health.
	healthDoc, healthPath := "/sd-wan/v1/sites/{id}/health", sitePath+"/health"
	r = c.do("GET", healthDoc, healthPath+"?window=1h", read, nil)
	c.want(r, 200)
	var hl sdwan.Health
	r.JSON(t, &hl)
	if hl.Site != site.ID || hl.Window != "1h" || len(hl.Transports) != 3 {
		t.Errorf("health: %s", r.Body)
	}
	r = c.do("GET", healthDoc, healthPath, read, nil)
	c.want(r, 200)
	r.JSON(t, &hl)
	if def := c.operation("GET", healthDoc).Parameters.GetByInAndName("query", "window").Schema.Value.Default; hl.Window != def {
		t.Errorf("health without window: window %q; the document's default is %v", hl.Window, def)
	}
	c.want(c.do("GET", healthDoc, healthPath+"?window=7d", read, nil), 200)
	c.want(c.do("GET", healthDoc, healthPath+"?window=1d12h", read, nil), 200)
	for _, w := range []string{"30s", "31d", "-5m", "0", "abc"} {
		c.want(c.do("GET", healthDoc, healthPath+"?window="+w, read, nil), 400)
	}
	c.want(c.do("GET", healthDoc, healthPath+"?since=2026-01-01T00:00:00Z", read, nil), 400)
	c.want(c.do("GET", healthDoc, "/sd-wan/v1/sites/site_nope/health", read, nil), 404)

	// Zero-touch claim: no bearer token; the pinned serial must match; the token works once.
	claimDoc := "/sd-wan/v1/claim"
	claimErr := func(r *servertest.Response, code string) {
		t.Helper()
		c.want(r, 401)
		if got := r.Err(t).Error.Code; got != code {
			t.Errorf("claim: error code %q; want %q", got, code)
		}
		if r.Header.Get("WWW-Authenticate") != "" {
			t.Errorf("claim: a 401 with WWW-Authenticate; the document says none")
		}
	}
	claimErr(c.do("POST", claimDoc, claimDoc, "", map[string]string{"claim_token": site.Claim, "serial": "SN-OTHER"}), sdwan.CodeClaimSerial)
	claimErr(c.do("POST", claimDoc, claimDoc, "", map[string]string{"claim_token": site.Claim}), sdwan.CodeClaimSerial)
	r = c.do("POST", claimDoc, claimDoc, "", map[string]string{"claim_token": site.Claim, "serial": "SN-OA-1", "hostname": "oa-r1", "version": "1.0.0"})
	c.want(r, 200)
	var claimed sdwan.ClaimResult
	r.JSON(t, &claimed)
	if claimed.Site.ID != site.ID || claimed.Site.Status != sdwan.SiteOffline || claimed.Site.DeviceID != claimed.Device ||
		claimed.MQTT.Username != claimed.Device || claimed.MQTT.Password == "" {
		t.Errorf("claim result: %s", r.Body)
	}
	claimErr(c.do("POST", claimDoc, claimDoc, "", map[string]string{"claim_token": site.Claim, "serial": "SN-OA-1"}), sdwan.CodeClaimUsed)
	claimErr(c.do("POST", claimDoc, claimDoc, "", map[string]string{"claim_token": "ewc_nope"}), sdwan.CodeClaimUnknown)
	claimErr(c.do("POST", claimDoc, claimDoc, "", map[string]string{"claim_token": "not-a-claim-token"}), sdwan.CodeClaimUnknown)
	claimErr(c.do("POST", claimDoc, claimDoc, all, map[string]string{"claim_token": "ewc_nope"}), sdwan.CodeClaimUnknown) // a bearer token changes nothing
	c.want(c.do("POST", claimDoc, claimDoc, "", `{"claim_token":1}`), 400)
	c.want(c.do("POST", claimDoc, claimDoc, "", map[string]string{"claim_token": kiosk.Claim, "hostname": strings.Repeat("h", 256)}), 400)
	c.want(c.do("PATCH", siteDoc, sitePath, write, map[string]any{"serial": "SN-OA-2"}), 409) // claimed: the serial is fixed
	c.want(c.do("GET", "/v1/devices", "/v1/devices?site="+site.ID, all, nil), 200)

	// Policies: a steering policy with a first version, a QoS policy, an empty one.
	polsDoc, polDoc := "/sd-wan/v1/policies", "/sd-wan/v1/policies/{id}"
	v1 := map[string]any{
		"classes": []map[string]any{{"name": "voice", "max_latency_ms": 150, "max_loss_pct": 1, "max_jitter_ms": 30}, {"name": "bulk"}},
		"rules": []map[string]any{
			{"name": "sip", "class": "voice", "application": "sip"},
			{"name": "ef", "class": "voice", "dscp": []int{46}},
			{"name": "erp", "class": "bulk", "destinations": []string{"10.20.0.0/16"}, "sources": []string{"10.1.0.0/16"}, "protocol": "tcp", "ports": []string{"443", "8000-8099"}, "fwmark": 7},
		},
		"paths":         map[string][]string{"voice": {"mpls", "inet"}, "bulk": {"inet", "mpls"}},
		"default_class": "bulk",
	}
	r = c.do("POST", polsDoc, polsDoc, write, map[string]any{"name": "oa-standard", "type": "steering", "description": "voice on mpls", "content": v1, "comment": "first"})
	c.want(r, 201)
	var pol sdwan.Policy
	r.JSON(t, &pol)
	if loc := r.Header.Get("Location"); loc != "/sd-wan/v1/policies/"+pol.ID {
		t.Errorf("policy Location %q", loc)
	}
	if len(pol.Versions) != 1 || pol.Versions[0].Status != sdwan.VersionDraft || pol.PublishedVersion != 0 {
		t.Fatalf("created policy: %s", r.Body)
	}
	polPath := "/sd-wan/v1/policies/" + pol.ID
	qos := map[string]any{"transports": []map[string]any{{"transport": "mpls", "rate_kbps": 20000, "classes": []map[string]any{
		{"class": "voice", "rate_kbps": 2000, "ceil_kbps": 4000, "priority": 0}, {"class": "bulk", "rate_kbps": 10000, "ceil_kbps": 20000, "priority": 7}}}}}
	r = c.do("POST", polsDoc, polsDoc, write, map[string]any{"name": "oa-shaping", "type": "qos", "content": qos})
	c.want(r, 201)
	var qpol sdwan.Policy
	r.JSON(t, &qpol)
	c.want(c.do("POST", polsDoc, polsDoc, write, map[string]any{"name": "oa-empty", "type": "steering"}), 201)
	c.want(c.do("POST", polsDoc, polsDoc, write, map[string]any{"name": "oa-standard", "type": "qos"}), 409)
	c.want(c.do("POST", polsDoc, polsDoc, write, map[string]any{"name": "x", "type": "firewall"}), 400)
	c.want(c.do("POST", polsDoc, polsDoc, write, map[string]any{"name": "x", "type": "steering", "content": map[string]any{"classes": []any{}}}), 400)
	c.want(c.do("POST", polsDoc, polsDoc, write, map[string]any{"name": "x", "type": "steering", "content": qos}), 400) // content of the other type

	verDoc, verPath := "/sd-wan/v1/policies/{id}/versions", polPath+"/versions"
	paths2 := map[string][]string{"voice": {"inet", "mpls"}, "bulk": {"inet", "mpls"}}
	v2 := maps.Clone(v1)
	v2["paths"] = paths2
	r = c.do("POST", verDoc, verPath, write, map[string]any{"content": v2, "comment": "prefer inet"})
	c.want(r, 201)
	var ver sdwan.Version
	r.JSON(t, &ver)
	if ver.Version != 2 || ver.Status != sdwan.VersionDraft || r.Header.Get("Location") != "" {
		t.Errorf("added version: %s (Location %q)", r.Body, r.Header.Get("Location"))
	}
	c.want(c.do("POST", verDoc, verPath, write, map[string]any{"content": map[string]any{"classes": []map[string]any{{"name": "a"}}, "paths": map[string]any{"b": []string{"x"}}}}), 400)
	c.want(c.do("POST", verDoc, verPath, write, map[string]any{"comment": "no content"}), 400)
	c.want(c.do("POST", verDoc, "/sd-wan/v1/policies/pol_nope/versions", write, map[string]any{"content": v1}), 404)

	// Publish: refused (422) when a site lacks a named transport, the version or the sites are
	// missing; then version 1, then version 2 with its diff, and the QoS policy.
	pubDoc, pubPath := "/sd-wan/v1/policies/{id}/publish", polPath+"/publish"
	r = c.do("POST", pubDoc, pubPath, write, map[string]any{"version": 1, "sites": []string{site.ID, kiosk.ID}})
	c.want(r, 422)
	if msg := r.Err(t).Error.Message; !strings.Contains(msg, kiosk.ID) || !strings.Contains(msg, "inet") || !strings.Contains(msg, "mpls") {
		t.Errorf("422 does not name the site and the missing transports: %s", msg)
	}
	c.want(c.do("POST", pubDoc, pubPath, write, map[string]any{"version": 9, "sites": []string{site.ID}}), 422)
	c.want(c.do("POST", pubDoc, pubPath, write, map[string]any{"version": 1}), 422)
	c.want(c.do("POST", pubDoc, pubPath, write, map[string]any{"version": 1, "sites": []string{"site_nope"}}), 422)
	c.want(c.do("POST", pubDoc, pubPath, write, map[string]any{"version": 1, "sites": []string{site.ID}, "comment": strings.Repeat("c", 2001)}), 400)
	c.want(c.do("POST", pubDoc, "/sd-wan/v1/policies/pol_nope/publish", write, map[string]any{"version": 1, "sites": []string{site.ID}}), 404)
	if r := c.do("GET", polDoc, polPath, read, nil); !strings.Contains(string(r.Body), `"published_version":0`) {
		t.Errorf("a refused publish changed the policy: %s", r.Body)
	}

	r = c.do("POST", pubDoc, pubPath, write, map[string]any{"version": 1, "sites": []string{site.ID, site.ID}, "comment": "first"})
	c.want(r, 202)
	var pub sdwan.PublishResult
	r.JSON(t, &pub)
	if pub.Change.Kind != "policy.published" || pub.Change.Version != 1 || pub.Change.FromVersion != 0 || !slices.Equal(pub.Change.Sites, []string{site.ID}) ||
		len(pub.Rollout) != 1 || pub.Rollout[0].State != sdwan.RolloutPending || pub.Rollout[0].ChangeID != pub.Change.ID || len(pub.Change.Diff) == 0 {
		t.Fatalf("publish: %s", r.Body)
	}
	for _, l := range pub.Change.Diff {
		if !strings.HasPrefix(l, "+ ") {
			t.Errorf("a first publish's diff adds every leaf; got %q", l)
		}
	}
	r = c.do("POST", pubDoc, pubPath, write, map[string]any{"version": 2}) // the sites already running it
	c.want(r, 202)
	r.JSON(t, &pub)
	want := []string{`~ paths.voice: ["mpls","inet"] -> ["inet","mpls"]`}
	if pub.Change.FromVersion != 1 || !slices.Equal(pub.Change.Diff, want) {
		t.Errorf("diff %q; want %q", pub.Change.Diff, want)
	}
	c.want(c.do("POST", pubDoc, "/sd-wan/v1/policies/"+qpol.ID+"/publish", write, map[string]any{"version": 1, "sites": []string{site.ID}}), 202)

	r = c.do("GET", polDoc, polPath, read, nil)
	c.want(r, 200)
	r.JSON(t, &pol)
	if pol.PublishedVersion != 2 || pol.Versions[0].Status != sdwan.VersionSuperseded || pol.Versions[1].Status != sdwan.VersionPublished ||
		len(pol.Rollout) != 1 || pol.Rollout[0].Version != 2 {
		t.Errorf("policy after publishing version 2: %s", r.Body)
	}
	c.want(c.do("GET", polDoc, "/sd-wan/v1/policies/pol_nope", read, nil), 404)
	c.want(c.do("GET", polsDoc, polsDoc, read, nil), 200)
	c.want(c.do("GET", polsDoc, "/sd-wan/v1/policies?type=steering&limit=1", read, nil), 200)
	c.want(c.do("GET", polsDoc, "/sd-wan/v1/policies?type=firewall", read, nil), 400)

	chDoc := "/sd-wan/v1/changes"
	r = c.do("GET", chDoc, "/sd-wan/v1/changes?target="+pol.ID, read, nil)
	c.want(r, 200)
	var changes struct{ Data []sdwan.Change }
	r.JSON(t, &changes)
	if len(changes.Data) != 2 || changes.Data[0].Version != 2 || changes.Data[0].Actor == "" {
		t.Errorf("changes: %s", r.Body)
	}
	c.want(c.do("GET", chDoc, "/sd-wan/v1/changes?order=asc&limit=1", read, nil), 200)
	c.want(c.do("GET", chDoc, "/sd-wan/v1/changes?policy="+pol.ID, read, nil), 400)

	// Request schemas agree with the handlers: a body the schema refuses is a 400, and one it
	// accepts is not.
	agree := func(docPath, path, schema string, ok int, body map[string]any) {
		t.Helper()
		raw, _ := json.Marshal(body)
		var v any
		_ = json.Unmarshal(raw, &v)
		verr := c.doc.Components.Schemas[schema].Value.VisitJSON(v, openapi3.VisitAsRequest(), openapi3.MultiErrors())
		r := c.do("POST", docPath, path, write, body)
		switch {
		case verr == nil && r.Status != ok:
			t.Errorf("%s accepts %s; the server answered %d %s", schema, raw, r.Status, r.Body)
		case verr != nil && r.Status != 400:
			t.Errorf("%s refuses %s (%v); the server answered %d, not 400", schema, raw, verr, r.Status)
		}
	}
	for _, b := range []map[string]any{
		{"name": "t1", "interface": "eth5"},
		{"name": "t-2_x", "kind": "5g", "interface": "wwan1", "gateway": "2001:db8::1", "probe_targets": []string{"198.18.0.1", "2001:db8::2"}, "bandwidth_kbps": 100000000, "cost": 1000000},
		{"name": strings.Repeat("a", 64), "interface": "e"},
		{"name": "Bad", "interface": "eth5"},
		{"name": "-x", "interface": "eth5"},
		{"name": strings.Repeat("a", 65), "interface": "eth5"},
		{"name": "t3", "kind": "pigeon", "interface": "eth5"},
		{"name": "t3"},
		{"name": "t3", "interface": ""},
		{"name": "t3", "interface": "a234567890123456"},
		{"name": "t3", "interface": "eth5", "probe_targets": []string{"1.1.1.1", "1.1.1.2", "1.1.1.3", "1.1.1.4", "1.1.1.5", "1.1.1.6", "1.1.1.7", "1.1.1.8", "1.1.1.9"}},
		{"name": "t3", "interface": "eth5", "bandwidth_kbps": -1},
		{"name": "t3", "interface": "eth5", "bandwidth_kbps": 100000001},
		{"name": "t3", "interface": "eth5", "cost": 1000001},
		{"name": "t3", "interface": "eth5", "colour": "red"},
	} {
		agree(trsDoc, kioskPath+"/transports", "TransportCreateRequest", 201, b)
	}
	for _, b := range []map[string]any{
		{"name": "OA agree 1", "role": "datacenter", "segments": []string{}, "location": map[string]any{"lat": -90, "lon": 180}},
		{"name": "OA agree 2", "serial": strings.Repeat("s", 128), "segments": []string{"a", "b-c", "d_0"}},
		{"name": ""},
		{"role": "hub"},
		{"name": "x", "role": "spoke"},
		{"name": "x", "segments": []string{"Guest"}},
		{"name": "x", "segments": []string{"a", "a"}},
		{"name": "OA agree 3", "segments": oaSegments(32)},
		{"name": "x", "segments": oaSegments(33)},
		{"name": "x", "location": map[string]any{"lat": 90.5}},
		{"name": "x", "location": map[string]any{"country": strings.Repeat("c", 101)}},
		{"name": "x", "location": map[string]any{"zip": "69001"}},
		{"name": "x", "serial": strings.Repeat("s", 129)},
		{"name": strings.Repeat("n", 201)},
	} {
		agree(sitesDoc, sitesDoc, "SiteCreateRequest", 201, b)
	}
	steer := func(mod func(m map[string]any)) map[string]any {
		m := map[string]any{"classes": []map[string]any{{"name": "a"}}, "paths": map[string]any{"a": []string{"mpls"}}}
		mod(m)
		return map[string]any{"content": m}
	}
	rule := func(r map[string]any) func(map[string]any) {
		return func(m map[string]any) { r["class"] = "a"; m["rules"] = []map[string]any{r} }
	}
	for _, b := range []map[string]any{
		steer(func(map[string]any) {}),
		steer(rule(map[string]any{"dscp": []int{0, 63}, "protocol": "udp", "ports": []string{"1", "65535", "10000-20000"}, "application": "zoom", "fwmark": 4294967295})),
		steer(func(m map[string]any) { m["rules"] = nil }),
		steer(func(m map[string]any) {
			m["classes"] = []map[string]any{{"name": "a", "max_latency_ms": 0.5, "max_loss_pct": 100, "max_jitter_ms": 1e6}}
		}),
		steer(rule(map[string]any{"dscp": []int{64}})),
		steer(rule(map[string]any{"dscp": []int{-1}})),
		steer(rule(map[string]any{"protocol": "gre"})),
		steer(rule(map[string]any{"protocol": "tcp", "ports": []string{"https"}})),
		steer(rule(map[string]any{"application": "quake"})),
		steer(rule(map[string]any{"fwmark": -1})),
		steer(rule(map[string]any{"dscp": []int{46}, "colour": "red"})),
		steer(func(m map[string]any) { m["classes"] = []map[string]any{} }),
		steer(func(m map[string]any) {
			cl := make([]map[string]any, 17)
			for i := range cl {
				cl[i] = map[string]any{"name": fmt.Sprintf("c%d", i)}
			}
			m["classes"] = cl
		}),
		steer(func(m map[string]any) { m["classes"] = []map[string]any{{"name": "a", "max_loss_pct": 101}} }),
		steer(func(m map[string]any) { m["classes"] = []map[string]any{{"name": "a", "max_latency_ms": -1}} }),
		steer(func(m map[string]any) { m["classes"] = []map[string]any{{"name": "A"}} }),
		steer(func(m map[string]any) { m["paths"] = map[string]any{} }),
		steer(func(m map[string]any) { m["paths"] = map[string]any{"a": []string{}} }),
		steer(func(m map[string]any) { m["paths"] = map[string]any{"a": []string{"mpls", "mpls"}} }),
		steer(func(m map[string]any) { m["paths"] = map[string]any{"a": []string{"MPLS"}} }),
		steer(func(m map[string]any) { m["default_class"] = "A" }),
		steer(func(m map[string]any) { delete(m, "paths") }),
		steer(func(m map[string]any) { m["surprise"] = 1 }),
		{"comment": "no content"},
		{"content": nil},
	} {
		agree(verDoc, verPath, "PolicyVersionRequest", 201, b)
	}
	qosVer := "/sd-wan/v1/policies/" + qpol.ID + "/versions"
	shape := func(mod func(tr, cl map[string]any)) map[string]any {
		cl := map[string]any{"class": "a", "rate_kbps": 100, "ceil_kbps": 100}
		tr := map[string]any{"transport": "mpls", "rate_kbps": 100, "classes": []map[string]any{cl}}
		mod(tr, cl)
		return map[string]any{"content": map[string]any{"transports": []map[string]any{tr}}}
	}
	for _, b := range []map[string]any{
		shape(func(tr, cl map[string]any) {}),
		shape(func(tr, cl map[string]any) { tr["rate_kbps"] = 100000000; cl["priority"] = 7 }),
		shape(func(tr, cl map[string]any) { cl["priority"] = 8 }),
		shape(func(tr, cl map[string]any) { cl["priority"] = -1 }),
		shape(func(tr, cl map[string]any) { cl["rate_kbps"] = 0 }),
		shape(func(tr, cl map[string]any) { tr["rate_kbps"] = 0 }),
		shape(func(tr, cl map[string]any) { tr["rate_kbps"] = 100000001 }),
		shape(func(tr, cl map[string]any) { tr["classes"] = []any{} }),
		shape(func(tr, cl map[string]any) { delete(cl, "ceil_kbps") }),
		shape(func(tr, cl map[string]any) { tr["transport"] = "Mpls" }),
		shape(func(tr, cl map[string]any) { cl["weight"] = 1 }),
		{"content": map[string]any{"transports": []any{}}},
	} {
		agree(verDoc, qosVer, "PolicyVersionRequest", 201, b)
	}

	// Decommission: 204, then the site can no longer change or be claimed.
	c.want(c.do("DELETE", siteDoc, kioskPath, write, nil), 204)
	c.want(c.do("DELETE", siteDoc, kioskPath, write, nil), 204)
	c.want(c.do("DELETE", siteDoc, "/sd-wan/v1/sites/site_nope", write, nil), 404)
	r = c.do("GET", siteDoc, kioskPath, read, nil)
	c.want(r, 200)
	r.JSON(t, &kiosk)
	if kiosk.Status != sdwan.SiteDecommissioned {
		t.Errorf("after DELETE the site's status is %q", kiosk.Status)
	}
	c.want(c.do("PATCH", siteDoc, kioskPath, write, map[string]any{"name": "OA Kiosk 2"}), 409)
	c.want(c.do("POST", trsDoc, kioskPath+"/transports", write, map[string]any{"name": "lte", "interface": "wwan0"}), 409)
	claimErr(c.do("POST", claimDoc, claimDoc, "", map[string]string{"claim_token": kiosk.Claim}), sdwan.CodeClaimUsed) // a decommissioned site's token is reuse
	c.want(c.do("POST", pubDoc, "/sd-wan/v1/policies/"+qpol.ID+"/publish", write, map[string]any{"version": 1, "sites": []string{kiosk.ID}}), 422)
	c.want(c.do("GET", sitesDoc, "/sd-wan/v1/sites?status=decommissioned", read, nil), 200)

	// Every operation: 401 without a token (the claim: its own 401 codes, above), 403 without
	// its scope, 415 and 413 for a body.
	ids := map[string]string{"/sd-wan/v1/sites/{id}": site.ID, "/sd-wan/v1/policies/{id}": pol.ID}
	for _, p := range c.doc.Paths.Keys() {
		if !strings.HasPrefix(p, "/sd-wan/v1/") {
			continue
		}
		vals := map[string]string{}
		for prefix, id := range ids {
			if strings.HasPrefix(p, prefix) {
				vals["id"] = id
			}
		}
		path := oaFill(p, vals)
		for method, o := range c.doc.Paths.Value(p).Operations() {
			tokenless := o.Security != nil && len(*o.Security) == 0
			if !tokenless {
				c.want(c.do(method, p, path, "", nil), 401)
				scope, _ := o.Extensions["x-required-scope"].(string)
				var others []string
				for _, sc := range auth.AllScopes {
					if sc != scope {
						others = append(others, sc)
					}
				}
				c.want(c.do(method, p, path, s.Key(others...), nil), 403)
			}
			if o.RequestBody == nil {
				continue
			}
			c.want(c.raw(method, p, path, all, "text/plain", []byte(`{}`)), 415)
			size := 1 << 20
			if tokenless {
				size = 16 << 10
			}
			c.want(c.raw(method, p, path, all, "application/json", append(append([]byte(`{"name":"`), bytes.Repeat([]byte("a"), size)...), `"}`...)), 413)
		}
	}
}

// oaSegments returns n distinct segment names.
func oaSegments(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("seg%d", i)
	}
	return out
}
