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

	// Unknown paths and methods answer the error body too.
	for _, x := range []struct {
		method, path string
		status       int
		code         string
	}{
		{"GET", "/v1/nope", 404, "not_found"},
		{"GET", "/sd-wan/v1/sites", 404, "not_found"},
		{"PUT", "/v1/org", 405, "method_not_allowed"},
	} {
		r := s.Do(x.method, x.path, all, nil)
		if r.Status != x.status || r.Err(t).Error.Code != x.code {
			t.Errorf("%s %s: %d %s; the document says %d %s", x.method, x.path, r.Status, r.Body, x.status, x.code)
		}
	}

	// Every documented success status was seen at least once.
	for _, p := range doc.Paths.Keys() {
		for method, o := range doc.Paths.Value(p).Operations() {
			for code := range o.Responses.Map() {
				if code[0] == '2' && !c.covered[method+" "+p+" "+code] {
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
}
