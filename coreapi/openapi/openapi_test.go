package openapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/edgewan/edgewan/controller/sdwan"
	"github.com/edgewan/edgewan/coreapi/auth"
	"github.com/edgewan/edgewan/coreapi/event"
	"github.com/edgewan/edgewan/coreapi/openapi"
	"github.com/edgewan/edgewan/coreapi/org"
	"github.com/edgewan/edgewan/coreapi/page"
	"github.com/edgewan/edgewan/coreapi/ratelimit"
	"github.com/edgewan/edgewan/coreapi/rest"
	"github.com/edgewan/edgewan/coreapi/soc"
	"github.com/edgewan/edgewan/coreapi/webhook"
	"github.com/edgewan/edgewan/telemetry/rollup"
)

// unauthenticated are the operations outside the API families: they need no token.
var unauthenticated = map[string]bool{"/healthz": true, "/readyz": true, "/openapi.json": true}

// families are the path prefixes of the API families served today.
var families = []string{"/v1/", "/sd-wan/v1/"}

// tokenless are the family operations that take no bearer token: their credential is in the
// body (an agent's one-time claim token), they answer 401 with their own codes and no
// WWW-Authenticate, and the client address's budget rate-limits them.
var tokenless = map[string]bool{"POST /sd-wan/v1/claim": true}

// noLocation are the 201s that carry no Location, because what they create has no path of
// its own; the operation's description must say so.
var noLocation = map[string]bool{"POST /sd-wan/v1/policies/{id}/versions": true}

func family(path string) string {
	for _, f := range families {
		if strings.HasPrefix(path, f) {
			return f
		}
	}
	return ""
}

func load(t *testing.T) *openapi3.T {
	t.Helper()
	raw, err := openapi.JSON()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := openapi3.NewLoader().LoadFromData(raw)
	if err != nil {
		t.Fatalf("loading the document: %v", err)
	}
	return doc
}

func TestOpenAPIDocumentIsValid(t *testing.T) {
	doc := load(t)
	if doc.OpenAPI != "3.0.3" {
		t.Errorf("openapi is %q; the document is written for 3.0.3", doc.OpenAPI)
	}
	err := doc.Validate(context.Background(),
		openapi3.EnableExamplesValidation(),
		openapi3.EnableSchemaDefaultsValidation(),
		openapi3.EnableSchemaPatternValidation(),
		openapi3.EnableMultiError())
	if err != nil {
		t.Fatalf("the document is not valid OpenAPI 3.0.3:\n%v", err)
	}
	if doc.Paths.Len() == 0 {
		t.Fatal("the document has no paths")
	}
}

// op is one operation of the document.
type op struct {
	path, method string
	*openapi3.Operation
}

func (o op) String() string { return o.method + " " + o.path }

func operations(doc *openapi3.T) []op {
	var ops []op
	for _, path := range doc.Paths.InMatchingOrder() {
		for method, o := range doc.Paths.Value(path).Operations() {
			ops = append(ops, op{path, method, o})
		}
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].String() < ops[j].String() })
	return ops
}

func requiredScope(o op) string {
	s, _ := o.Extensions["x-required-scope"].(string)
	return s
}

func TestOpenAPIOperationsAreComplete(t *testing.T) {
	doc := load(t)
	if len(doc.Security) != 1 || len(doc.Security[0]) != 1 {
		t.Fatalf("the document's default security must be exactly the bearer scheme; it is %v", doc.Security)
	}
	if _, ok := doc.Security[0]["bearer"]; !ok {
		t.Fatalf("the document's default security is not bearer: %v", doc.Security)
	}
	ids := map[string]string{}
	for _, o := range operations(doc) {
		t.Run(o.String(), func(t *testing.T) {
			if o.OperationID == "" {
				t.Error("no operationId")
			} else if other, dup := ids[o.OperationID]; dup {
				t.Errorf("operationId %q is also used by %s", o.OperationID, other)
			}
			ids[o.OperationID] = o.String()
			if strings.TrimSpace(o.Summary) == "" {
				t.Error("no summary")
			}
			if len(o.Tags) == 0 {
				t.Error("no tag")
			}
			has := func(status int) bool { return o.Responses.Status(status) != nil }
			need := func(statuses ...int) {
				for _, st := range statuses {
					if !has(st) {
						t.Errorf("does not declare the %d response", st)
					}
				}
			}
			if o.Responses.Default() != nil {
				t.Error("declares a default response; declare the statuses the handler returns")
			}
			need(500) // rest.Recovery turns any panic into a 500 error body

			if unauthenticated[o.path] {
				if o.Security == nil || len(*o.Security) != 0 {
					t.Error("needs no token, so must declare security: []")
				}
				if has(401) || has(403) || has(429) {
					t.Error("needs no token but declares 401, 403 or 429")
				}
				return
			}
			if family(o.path) == "" {
				t.Errorf("%s is neither an unauthenticated operation nor in an API family %v", o.path, families)
			}
			need(401, 429)

			scope := requiredScope(o)
			if tokenless[o.String()] {
				if o.Security == nil || len(*o.Security) != 0 {
					t.Error("takes no bearer token, so must declare security: []")
				}
				if scope != "" || has(403) {
					t.Error("takes no bearer token, so has no x-required-scope and no 403")
				}
				if !strings.Contains(o.Description, "Needs no token") {
					t.Error(`description does not say "Needs no token"`)
				}
			} else if o.Security != nil {
				t.Error("overrides security; every family operation but the tokenless ones uses the document's bearer default")
			}
			// SD-WAN: reads need sdwan:read, writes sdwan:write (controller/sdwan.Register).
			if family(o.path) == "/sd-wan/v1/" && !tokenless[o.String()] {
				want := auth.ScopeSDWANWrite
				if o.method == "GET" {
					want = auth.ScopeSDWANRead
				}
				if scope != want {
					t.Errorf("x-required-scope %q; SD-WAN %s operations need %s", scope, o.method, want)
				}
			}
			switch {
			case tokenless[o.String()]:
			case o.path == "/v1/ping":
				if scope != "" || has(403) {
					t.Error("GET /v1/ping accepts any valid key: it has no x-required-scope and no 403")
				}
				if !strings.Contains(o.Description, "Scope: any") {
					t.Error(`description does not say "Scope: any"`)
				}
			case scope == "":
				t.Error("no x-required-scope")
			default:
				if !slices.Contains(auth.AllScopes, scope) {
					t.Errorf("x-required-scope %q is not a scope the server knows (%v)", scope, auth.AllScopes)
				}
				if !strings.Contains(o.Description, "Scope `"+scope+"`") {
					t.Errorf("description does not name the scope as \"Scope `%s`\"", scope)
				}
				need(403)
			}

			if o.RequestBody != nil {
				need(400, 413, 415) // rest.Decode's refusals
				mt := o.RequestBody.Value.Content.Get("application/json")
				if len(o.RequestBody.Value.Content) != 1 || mt == nil {
					t.Error("a request body must be application/json only")
				}
				if !o.RequestBody.Value.Required {
					t.Error("the request body must be required (an empty body is a 400)")
				}
			} else if has(413) || has(415) {
				t.Error("declares 413 or 415 without a request body")
			}

			var names []string
			for _, p := range o.Parameters {
				names = append(names, p.Value.Name)
			}
			if slices.Contains(names, "cursor") {
				for _, want := range []string{"since", "limit", "cursor", "order"} {
					if !slices.Contains(names, want) {
						t.Errorf("a list operation must take the list parameter %s", want)
					}
				}
				need(400) // bad list parameters
			}
			if strings.Contains(o.path, "{") {
				need(404)
			}
		})
	}
}

// TestOpenAPIResponsesAreConsistent checks every response: X-Request-Id always, the error body
// for every error, JSON content only.
func TestOpenAPIResponsesAreConsistent(t *testing.T) {
	doc := load(t)
	errBody := doc.Components.Schemas["ErrorBody"]
	if errBody == nil {
		t.Fatal("components/schemas has no ErrorBody")
	}
	for _, o := range operations(doc) {
		for code, r := range o.Responses.Map() {
			name := o.String() + " " + code
			if r.Value.Headers["X-Request-Id"] == nil {
				t.Errorf("%s: does not declare the X-Request-Id header (every response carries it)", name)
			}
			status, err := strconv.Atoi(code)
			if err != nil {
				t.Errorf("%s: status must be a number", name)
				continue
			}
			for ct := range r.Value.Content {
				if ct != "application/json" {
					t.Errorf("%s: content type %s; the API answers JSON only", name, ct)
				}
			}
			if status == 204 && len(r.Value.Content) != 0 {
				t.Errorf("%s: a 204 has no body", name)
			}
			if status >= 400 {
				mt := r.Value.Content.Get("application/json")
				if mt == nil || mt.Schema == nil || mt.Schema.Value != errBody.Value {
					t.Errorf("%s: an error response must have the ErrorBody schema", name)
				}
				if !strings.HasPrefix(r.Ref, "#/components/responses/") {
					t.Errorf("%s: error responses use the reusable components/responses", name)
				}
			}
			if status == 429 && r.Value.Headers["Retry-After"] == nil {
				t.Errorf("%s: a 429 carries Retry-After", name)
			}
			if status == 401 && !tokenless[o.String()] && r.Value.Headers["WWW-Authenticate"] == nil {
				t.Errorf("%s: a 401 carries WWW-Authenticate", name)
			}
			if status == 401 && tokenless[o.String()] {
				// Its 401 refuses the body's credential, with its own codes and no challenge.
				if r.Ref != "#/components/responses/ClaimRejected" || r.Value.Headers["WWW-Authenticate"] != nil {
					t.Errorf("%s: a tokenless 401 is the ClaimRejected response, without WWW-Authenticate", name)
				}
			}
			if status == 201 && noLocation[o.String()] {
				if r.Value.Headers["Location"] != nil {
					t.Errorf("%s: the handler sends no Location here; do not declare one", name)
				}
				if !strings.Contains(o.Description, "no `Location`") {
					t.Errorf("%s: the description does not say why there is no `Location`", name)
				}
			} else if status == 201 && r.Value.Headers["Location"] == nil {
				t.Errorf("%s: a 201 carries Location", name)
			}
		}
	}
}

func enum(t *testing.T, doc *openapi3.T, schema string) []string {
	t.Helper()
	s := doc.Components.Schemas[schema]
	if s == nil {
		t.Fatalf("components/schemas has no %s", schema)
	}
	var out []string
	for _, v := range s.Value.Enum {
		out = append(out, v.(string))
	}
	return out
}

// TestOpenAPIEnumsMatchCode compares the document's enumerations with the code's lists.
func TestOpenAPIEnumsMatchCode(t *testing.T) {
	doc := load(t)
	for _, c := range []struct {
		schema string
		code   []string
	}{
		{"EventType", event.Types},
		{"Scope", auth.AllScopes},
		{"CaseStatus", soc.Statuses},
		{"CaseSeverity", soc.Severities},
		{"CaseSource", []string{soc.SourceManual, soc.SourceSystem}},
		{"DeviceStatus", org.DeviceStatuses},
		{"DeliveryStatus", []string{webhook.StatusPending, webhook.StatusDelivering, webhook.StatusSucceeded, webhook.StatusFailed}},
		{"SiteStatus", sdwan.SiteStatuses},
		{"SiteRole", sdwan.Roles},
		{"TransportKind", sdwan.TransportKinds},
		{"TransportStatus", []string{sdwan.TransportUnknown, sdwan.TransportUp, sdwan.TransportDegraded, sdwan.TransportDown}},
		{"PolicyType", []string{sdwan.TypeSteering, sdwan.TypeQoS}},
		{"VersionStatus", []string{sdwan.VersionDraft, sdwan.VersionPublished, sdwan.VersionSuperseded}},
		{"RolloutState", []string{sdwan.RolloutPending, sdwan.RolloutApplied, sdwan.RolloutFailed}},
		{"Application", slices.Sorted(maps.Keys(sdwan.Applications))},
	} {
		if got := enum(t, doc, c.schema); !slices.Equal(got, c.code) {
			t.Errorf("components/schemas/%s enum is %v; the code has %v", c.schema, got, c.code)
		}
	}

	// The application table gives each application's protocol and ports as the code maps them.
	apps := doc.Components.Schemas["Application"].Value.Description
	for name, a := range sdwan.Applications {
		if row := fmt.Sprintf("| `%s` | %s | %s |", name, a.Protocol, strings.Join(a.Ports, ", ")); !strings.Contains(apps, row) {
			t.Errorf("the Application table lacks the row %q", row)
		}
	}

	// The health window's documented range is the one rollup.ParseWindow accepts.
	var window *openapi3.Parameter
	for _, p := range doc.Paths.Value("/sd-wan/v1/sites/{id}/health").Get.Parameters {
		if p.Value.Name == "window" {
			window = p.Value
		}
	}
	if window == nil {
		t.Fatal("GET /sd-wan/v1/sites/{id}/health has no window parameter")
	}
	var lo, hi string
	if _, err := fmt.Sscanf(window.Description[strings.Index(window.Description, "from "):], "from %s to %s", &lo, &hi); err != nil {
		t.Fatalf(`the window parameter's description does not say "from MIN to MAX": %v`, err)
	}
	hi = strings.TrimRight(hi, ",.")
	if d, err := rollup.ParseWindow(lo); err != nil || d != rollup.MinWindow {
		t.Errorf("window: the document's minimum %q is not rollup.MinWindow (%v)", lo, rollup.MinWindow)
	}
	if d, err := rollup.ParseWindow(hi); err != nil || d != rollup.MaxWindow {
		t.Errorf("window: the document's maximum %q is not rollup.MaxWindow (%v)", hi, rollup.MaxWindow)
	}
	if _, err := rollup.ParseWindow(window.Schema.Value.Default.(string)); err != nil {
		t.Errorf("window: the default %v is not a valid window: %v", window.Schema.Value.Default, err)
	}

	if got := doc.Components.Parameters["limit"].Value.Schema.Value; *got.Max != page.MaxLimit || got.Default != float64(page.DefaultLimit) {
		t.Errorf("limit parameter: maximum %v default %v; the code has %d and %d", *got.Max, got.Default, page.MaxLimit, page.DefaultLimit)
	}
	if !strings.Contains(doc.Info.Description, strconv.Itoa(rest.DefaultMaxBody)) {
		t.Errorf("info.description does not give the body limit, %d bytes", rest.DefaultMaxBody)
	}

	// Every header the code sends is in components/headers.
	for _, h := range []string{
		rest.HeaderRequestID, ratelimit.HeaderLimit, ratelimit.HeaderRemaining, ratelimit.HeaderReset, ratelimit.HeaderRetry,
		webhook.HeaderSignature, webhook.HeaderTimestamp, webhook.HeaderSigned, webhook.HeaderEventID,
		webhook.HeaderEventType, webhook.HeaderDelivery, webhook.HeaderAttempt, "Cache-Control",
	} {
		if doc.Components.Headers[h] == nil {
			t.Errorf("components/headers has no %s", h)
		}
		if strings.HasPrefix(h, "X-Service-") && !strings.Contains(doc.Info.Description, "`"+h+"`") {
			t.Errorf("info.description does not describe the webhook delivery header %s", h)
		}
	}
}

// TestOpenAPIErrorCodesMatchCode reads the Code* constants of coreapi/apierr and checks the
// document lists each one.
func TestOpenAPIErrorCodesMatchCode(t *testing.T) {
	doc := load(t)
	f, err := parser.ParseFile(token.NewFileSet(), "../apierr/apierr.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var codes []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if !strings.HasPrefix(n.Name, "Code") || i >= len(vs.Values) {
					continue
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					v, _ := strconv.Unquote(lit.Value)
					codes = append(codes, v)
				}
			}
		}
	}
	if len(codes) < 10 {
		t.Fatalf("found only %d error codes in apierr.go: %v", len(codes), codes)
	}
	// The claim's codes (controller/sdwan) are listed too, and by its 401 response.
	claimCodes := []string{sdwan.CodeClaimUnknown, sdwan.CodeClaimUsed, sdwan.CodeClaimExpired, sdwan.CodeClaimSerial}
	codes = append(codes, claimCodes...)
	rejected := doc.Components.Responses["ClaimRejected"]
	if rejected == nil {
		t.Fatal("components/responses has no ClaimRejected")
	}
	for _, c := range claimCodes {
		if !strings.Contains(*rejected.Value.Description, "`"+c+"`") {
			t.Errorf("components/responses/ClaimRejected does not list the claim error code %s", c)
		}
	}
	detail := doc.Components.Schemas["ErrorDetail"].Value.Properties["code"].Value.Description
	for _, c := range codes {
		if !strings.Contains(detail, c) {
			t.Errorf("ErrorDetail.code's description does not list the error code %s", c)
		}
		if !strings.Contains(doc.Info.Description, "`"+c+"`") {
			t.Errorf("info.description's error table does not list the error code %s", c)
		}
	}
}

var timeType = reflect.TypeOf(time.Time{})

// jsonFields lists a struct's JSON fields and whether each is always present.
func jsonFields(t reflect.Type) map[string]bool {
	out := map[string]bool{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero")
	}
	return out
}

func field(t reflect.Type, name string) reflect.StructField {
	for i := range t.NumField() {
		f := t.Field(i)
		if n, _, _ := strings.Cut(f.Tag.Get("json"), ","); n == name {
			return f
		}
	}
	panic(name)
}

// schemaType is the OpenAPI type a Go type marshals to.
func schemaType(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == timeType:
		return "string"
	case t == reflect.TypeOf(json.RawMessage{}):
		return "object" // event data must be a JSON object (event.New)
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Struct, reflect.Map:
		return "object"
	}
	return t.Kind().String()
}

// TestOpenAPISchemasMatchStructs compares each resource schema with the Go type the handlers
// marshal: the same properties, of the same types, required exactly when always present.
// Request schemas are compared by properties and types only: what is required there is the
// services' validation, described in the document.
func TestOpenAPISchemasMatchStructs(t *testing.T) {
	doc := load(t)
	for _, c := range []struct {
		schema   string
		typ      any
		request  bool
		excluded []string // fields the schema leaves out on purpose
		always   []string // omitempty fields that are always set in this schema's responses
	}{
		{schema: "ErrorBody", typ: rest.ErrorBody{}},
		{schema: "ErrorDetail", typ: rest.ErrorDetail{}},
		{schema: "Org", typ: org.Org{}},
		{schema: "Device", typ: org.Device{}},
		{schema: "Case", typ: soc.Case{}},
		{schema: "Note", typ: soc.Note{}},
		{schema: "Webhook", typ: webhook.Webhook{}, excluded: []string{"secret"}},      // only in the creation response
		{schema: "WebhookCreated", typ: webhook.Webhook{}, always: []string{"secret"}}, // Create sets it
		{schema: "Delivery", typ: webhook.Delivery{}},
		{schema: "EventEnvelope", typ: event.Envelope{}},
		{schema: "DeviceList", typ: page.Envelope[*org.Device]{}},
		{schema: "CaseList", typ: page.Envelope[*soc.Case]{}},
		{schema: "WebhookList", typ: page.Envelope[*webhook.Webhook]{}},
		{schema: "DeliveryList", typ: page.Envelope[*webhook.Delivery]{}},
		{schema: "CaseCreateRequest", typ: soc.CreateRequest{}, request: true},
		{schema: "CaseUpdateRequest", typ: soc.UpdateRequest{}, request: true},
		{schema: "WebhookCreateRequest", typ: webhook.CreateRequest{}, request: true},

		// SD-WAN. A site has three views: in lists (no transports), in detail (GET, PATCH,
		// the claim: with transports), and at creation (with the claim token).
		{schema: "Site", typ: sdwan.Site{}, excluded: []string{"transports", "claim_token", "claim_expires_at"}},
		{schema: "SiteDetail", typ: sdwan.Site{}, excluded: []string{"claim_token", "claim_expires_at"}, always: []string{"transports"}},
		{schema: "SiteCreated", typ: sdwan.Site{}, always: []string{"claim_token", "claim_expires_at"}}, // transports: only when given
		{schema: "Transport", typ: sdwan.Transport{}},
		{schema: "SiteHealth", typ: sdwan.Health{}},
		{schema: "TransportHealth", typ: sdwan.TransportHealth{}},
		{schema: "SLAHealth", typ: sdwan.SLAHealth{}},
		{schema: "ClaimResult", typ: sdwan.ClaimResult{}},
		{schema: "MQTTAccess", typ: sdwan.MQTTAccess{}},
		{schema: "Policy", typ: sdwan.Policy{}},
		{schema: "PolicyVersion", typ: sdwan.Version{}},
		{schema: "Rollout", typ: sdwan.Rollout{}},
		{schema: "Change", typ: sdwan.Change{}},
		{schema: "PublishResult", typ: sdwan.PublishResult{}},
		{schema: "SiteList", typ: page.Envelope[*sdwan.Site]{}},
		{schema: "TransportList", typ: page.Envelope[*sdwan.Transport]{}},
		{schema: "PolicyList", typ: page.Envelope[*sdwan.Policy]{}},
		{schema: "ChangeList", typ: page.Envelope[*sdwan.Change]{}},
		{schema: "Location", typ: sdwan.Location{}, request: true}, // also in responses: every field optional
		{schema: "SiteCreateRequest", typ: sdwan.CreateSiteRequest{}, request: true},
		{schema: "SiteUpdateRequest", typ: sdwan.UpdateSiteRequest{}, request: true},
		{schema: "TransportCreateRequest", typ: sdwan.CreateTransportRequest{}, request: true},
		{schema: "ClaimRequest", typ: sdwan.ClaimRequest{}, request: true},
		{schema: "PolicyCreateRequest", typ: sdwan.CreatePolicyRequest{}, request: true},
		{schema: "PolicyVersionRequest", typ: sdwan.AddVersionRequest{}, request: true},
		{schema: "PublishRequest", typ: sdwan.PublishRequest{}, request: true},
		// Policy content: decoded strictly (unknown fields refused), also returned as stored.
		{schema: "SteeringContent", typ: sdwan.SteeringContent{}, request: true},
		{schema: "SLAClass", typ: sdwan.SLAClass{}, request: true},
		{schema: "MatchRule", typ: sdwan.MatchRule{}, request: true},
		{schema: "QoSContent", typ: sdwan.QoSContent{}, request: true},
		{schema: "QoSTransport", typ: sdwan.QoSTransport{}, request: true},
		{schema: "QoSClass", typ: sdwan.QoSClass{}, request: true},
	} {
		t.Run(c.schema, func(t *testing.T) {
			ref := doc.Components.Schemas[c.schema]
			if ref == nil {
				t.Fatalf("components/schemas has no %s", c.schema)
			}
			s := ref.Value
			typ := reflect.TypeOf(c.typ)
			fields := jsonFields(typ)
			for _, x := range c.excluded {
				delete(fields, x)
			}
			for _, x := range c.always {
				fields[x] = true
			}
			for name, always := range fields {
				p := s.Properties[name]
				if p == nil {
					t.Errorf("%s.%s is not in the schema", typ, name)
					continue
				}
				ft := field(typ, name).Type
				want := schemaType(ft)
				got := ""
				if p.Value.Type != nil && len(*p.Value.Type) == 1 {
					got = (*p.Value.Type)[0]
				} else if len(p.Value.AllOf) == 1 && p.Value.AllOf[0].Value.Type != nil {
					got = (*p.Value.AllOf[0].Value.Type)[0]
				}
				if got != want {
					t.Errorf("%s is %q in the schema; the Go field marshals to %q", name, got, want)
				}
				if ft == timeType && p.Value.Format != "date-time" {
					t.Errorf("%s is a time: format date-time", name)
				}
				if c.request {
					continue
				}
				if req := slices.Contains(s.Required, name); req != always {
					t.Errorf("%s: required is %v in the schema; the Go field is always present: %v", name, req, always)
				}
			}
			for name := range s.Properties {
				if _, ok := fields[name]; !ok {
					t.Errorf("the schema has %s; %s has no such JSON field", name, typ)
				}
			}
			if c.request && (s.AdditionalProperties.Has == nil || *s.AdditionalProperties.Has) {
				t.Error("request bodies refuse unknown fields: additionalProperties must be false")
			}
		})
	}
}
