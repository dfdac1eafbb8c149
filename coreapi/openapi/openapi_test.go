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

	"github.com/edgewan/edgewan/aigw/detect"
	"github.com/edgewan/edgewan/aigw/gateway"
	"github.com/edgewan/edgewan/aigw/guard"
	"github.com/edgewan/edgewan/aigw/provider"
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
var families = []string{"/v1/", "/sd-wan/v1/", aigwFamily}

// aigwFamily is the AI gateway's prefix. Every operation there needs a project key (an API
// key is 403 forbidden), marked x-project-key; those that change a project's policies or
// settings also need its scope aigw:admin.
const aigwFamily = "/ai-gateway/v1/"

// tokenless are the family operations that take no bearer token: their credential is in the
// body (an agent's one-time claim token), they answer 401 with their own codes and no
// WWW-Authenticate, and the client address's budget rate-limits them.
var tokenless = map[string]bool{"POST /sd-wan/v1/claim": true}

// noLocation are the 201s that carry no Location, because what they create has no path of
// its own; the operation's description must say so.
var noLocation = map[string]bool{"POST /sd-wan/v1/policies/{id}/versions": true}

// no404 are the operations with a path parameter that never answer 404: a project exists for
// its keys from their first use, and another project's ID is 403 forbidden. The description
// must say "never a 404".
var no404 = map[string]bool{"GET /ai-gateway/v1/projects/{id}": true, "PATCH /ai-gateway/v1/projects/{id}": true,
	"GET /ai-gateway/v1/projects/{id}/proposals": true, "POST /ai-gateway/v1/projects/{id}/proposals": true}

// multipart are the operations whose request body is a multipart upload, not JSON.
var multipart = map[string]bool{"POST /ai-gateway/v1/documents": true}

// streaming are the operations whose 200 is JSON or, with "stream": true, server-sent events
// (text/event-stream), whose events the media type's x-sse-events maps to their data schemas.
var streaming = map[string]bool{"POST /ai-gateway/v1/chat": true, "POST /ai-gateway/v1/openai/chat/completions": true,
	"POST /ai-gateway/v1/anthropic/v1/messages": true}

// eventStreams are the operations whose 200 is only an event stream (no JSON alternative).
var eventStreams = map[string]bool{"GET /sd-wan/v1/stream": true}

// lenient are the operations that decode their body as OpenAI does, not with rest.Decode:
// unknown fields are ignored and the Content-Type is not checked (no 415). The description
// must say "the Content-Type is not checked".
var lenient = map[string]bool{"POST /ai-gateway/v1/openai/chat/completions": true, "POST /ai-gateway/v1/openai/embeddings": true,
	"POST /ai-gateway/v1/anthropic/v1/messages": true}

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

			projectKey, _ := o.Extensions["x-project-key"].(bool)
			if projectKey != (family(o.path) == aigwFamily) {
				t.Errorf("x-project-key is %v; it is true exactly for the AI gateway's operations", projectKey)
			}

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
			case family(o.path) == aigwFamily:
				// A project key, with aigw:admin for the operations that change policies or settings.
				if !strings.Contains(o.Description, "Needs a project key") {
					t.Error(`description does not say "Needs a project key"`)
				}
				switch scope {
				case "":
					if !strings.Contains(o.Description, "no scope") {
						t.Error(`needs no scope, and the description does not say "no scope"`)
					}
				case auth.ScopeAIGWAdmin:
					if !strings.Contains(o.Description, "Scope `"+scope+"`") {
						t.Errorf("description does not name the scope as \"Scope `%s`\"", scope)
					}
				default:
					t.Errorf("x-required-scope %q; an AI gateway operation needs no scope or %s", scope, auth.ScopeAIGWAdmin)
				}
				need(403) // an API key, another project, or the missing aigw:admin
				if r := o.Responses.Status(403); r != nil && r.Ref != "#/components/responses/GatewayForbidden" {
					t.Errorf("its 403 is %s; AI gateway operations use GatewayForbidden (forbidden and invalid_scope)", r.Ref)
				}
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

			if o.RequestBody != nil && multipart[o.String()] {
				if len(o.RequestBody.Value.Content) != 1 || o.RequestBody.Value.Content.Get("multipart/form-data") == nil {
					t.Error("an upload's request body must be multipart/form-data only")
				}
				need(400, 413, 415)
			} else if o.RequestBody != nil {
				mt := o.RequestBody.Value.Content.Get("application/json")
				if len(o.RequestBody.Value.Content) != 1 || mt == nil {
					t.Error("a request body must be application/json only")
				}
				if !o.RequestBody.Value.Required {
					t.Error("the request body must be required (an empty body is a 400)")
				}
				if lenient[o.String()] {
					need(400, 413)
					if has(415) {
						t.Error("decodes leniently and never answers 415, but declares it")
					}
					if !strings.Contains(o.Description, "the Content-Type is not checked") {
						t.Error(`decodes leniently; the description does not say "the Content-Type is not checked"`)
					}
					// Unknown fields are refused by name (TestOpenAPIOpenAIRequestMatchesCode).
				} else {
					need(400, 413, 415) // rest.Decode's refusals
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
			switch {
			case no404[o.String()]:
				if has(404) {
					t.Error("never answers 404, but declares it")
				}
				if !strings.Contains(o.Description, "never a 404") {
					t.Error(`the description does not say why it is "never a 404"`)
				}
			case strings.Contains(o.path, "{"):
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
			for ct, mt := range r.Value.Content {
				switch {
				case ct == "application/json":
				case ct == "text/event-stream" && status == 200 && (streaming[o.String()] || eventStreams[o.String()]):
					checkSSE(t, doc, name, mt)
				default:
					t.Errorf("%s: content type %s; the API answers JSON only (and event streams where documented)", name, ct)
				}
			}
			if status == 200 && streaming[o.String()] && (r.Value.Content.Get("text/event-stream") == nil || r.Value.Content.Get("application/json") == nil) {
				t.Errorf("%s: a streaming operation's 200 is application/json or text/event-stream", name)
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

// checkSSE checks a text/event-stream media type: x-sse-events maps each event name to the
// component schema of its data, and the description names each event and schema.
func checkSSE(t *testing.T, doc *openapi3.T, name string, mt *openapi3.MediaType) {
	t.Helper()
	events, ok := mt.Extensions["x-sse-events"].(map[string]any)
	if !ok || len(events) == 0 {
		t.Errorf("%s: the text/event-stream media type has no x-sse-events (event name -> data schema)", name)
		return
	}
	desc := ""
	if mt.Schema != nil && mt.Schema.Value != nil {
		desc = mt.Schema.Value.Description
	}
	for ev, sc := range events {
		schema, _ := sc.(string)
		ref := doc.Components.Schemas[schema]
		if ref == nil {
			t.Errorf("%s: x-sse-events names the schema %q for %s; components/schemas has no such schema", name, sc, ev)
			continue
		}
		// "message" is the SSE default: events sent without an event line.
		if ev != "message" && !strings.Contains(desc, "`"+ev+"`") {
			t.Errorf("%s: the stream's description does not name the event `%s`", name, ev)
		}
		// The description names the data schema, or each alternative of a oneOf.
		named := []string{schema}
		if len(ref.Value.OneOf) > 0 {
			named = nil
			for _, alt := range ref.Value.OneOf {
				named = append(named, strings.TrimPrefix(alt.Ref, "#/components/schemas/"))
			}
		}
		for _, n := range named {
			if !strings.Contains(desc, "`"+n+"`") {
				t.Errorf("%s: the stream's description does not name the data schema `%s`", name, n)
			}
		}
	}
	if done, ok := mt.Extensions["x-sse-done"].(string); ok && !strings.Contains(desc, done) {
		t.Errorf("%s: the stream's description does not give its last data line %s", name, done)
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
		// AI gateway. Its versions have the SD-WAN family's statuses.
		{"VersionStatus", []string{gateway.VersionDraft, gateway.VersionPublished, gateway.VersionSuperseded}},
		{"EntityType", detect.Types()},
		{"RedactionAction", []string{string(guard.ActionRedact), string(guard.ActionMask), string(guard.ActionHash), string(guard.ActionBlock), string(guard.ActionAllow)}},
		{"FindingKind", []string{guard.KindRegex, guard.KindKeyword, guard.KindEntity, guard.KindPromptInjection, guard.KindMaxSize}},
		{"MessageRole", []string{provider.RoleSystem, provider.RoleUser, provider.RoleAssistant}},
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
		webhook.HeaderEventType, webhook.HeaderDelivery, webhook.HeaderAttempt, "Cache-Control", "X-Accel-Buffering",
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
		shapes   []string // raw JSON fields documented as a oneOf of their shapes
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

		// AI gateway.
		{schema: "AIProject", typ: gateway.Project{}},
		{schema: "AIPolicy", typ: gateway.Policy{}},
		{schema: "AIPolicyVersion", typ: gateway.Version{}},
		{schema: "AIChange", typ: gateway.Change{}},
		{schema: "AIPolicyRef", typ: gateway.PolicyRef{}},
		{schema: "Redaction", typ: gateway.Redaction{}},
		{schema: "Finding", typ: gateway.Finding{}},
		{schema: "AuditRecord", typ: gateway.Record{}, always: []string{"policy"}, shapes: []string{"input"}}, // policy: an ID or "default"
		{schema: "SanitizeResult", typ: gateway.SanitizeResponse{}},
		{schema: "ChatResponse", typ: gateway.ChatResponse{}, always: []string{"usage"}}, // Chat and ChatStream always set it
		{schema: "ChatUsage", typ: gateway.Usage{}},
		{schema: "AIPolicyTestResult", typ: gateway.TestResponse{}},
		{schema: "AIPolicyList", typ: page.Envelope[*gateway.Policy]{}},
		{schema: "AIChangeList", typ: page.Envelope[*gateway.Change]{}},
		{schema: "AuditRecordList", typ: page.Envelope[*gateway.Record]{}},
		{schema: "ChatMessage", typ: gateway.ChatMessage{}, request: true},
		{schema: "AuditMessage", typ: provider.Message{}}, // the messages of audit records
		{schema: "SanitizeRequest", typ: gateway.SanitizeRequest{}, request: true},
		{schema: "ChatRequest", typ: gateway.ChatRequest{}, request: true},
		{schema: "AIPolicyCreateRequest", typ: gateway.CreatePolicyRequest{}, request: true},
		{schema: "AIPolicyVersionRequest", typ: gateway.AddVersionRequest{}, request: true},
		{schema: "AIPublishRequest", typ: gateway.PublishRequest{}, request: true},
		{schema: "AIPolicyTestRequest", typ: gateway.TestRequest{}, request: true},
		{schema: "AIProjectUpdateRequest", typ: gateway.ProjectUpdate{}, request: true},
		// Policy content: decoded strictly (guard.ParsePolicy), also returned as stored.
		{schema: "AIPolicyContent", typ: guard.Policy{}, request: true},
		{schema: "AIBlockRules", typ: guard.BlockRules{}, request: true},
		{schema: "AIPatternRule", typ: guard.PatternRule{}, request: true},
		{schema: "AIKeywordRule", typ: guard.KeywordRule{}, request: true},
		{schema: "AIOutputChecks", typ: guard.OutputChecks{}, request: true},
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
				if slices.Contains(c.shapes, name) {
					if ft != reflect.TypeOf(json.RawMessage{}) || len(p.Value.OneOf) < 2 {
						t.Errorf("%s: documented by its shapes, it must be raw JSON in Go and a oneOf in the schema", name)
					}
					want = ""
				}
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

// TestOpenAPIGatewayMatchesCode checks the AI gateway's documented defaults and limits against
// the code: the default policy, the policy content's entity types, defaults and bounds, and
// the text limit.
func TestOpenAPIGatewayMatchesCode(t *testing.T) {
	doc := load(t)
	content := doc.Components.Schemas["AIPolicyContent"].Value

	want, err := json.Marshal(guard.DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(content.Extensions["x-default-policy"])
	if err != nil {
		t.Fatal(err)
	}
	var g, w any
	_ = json.Unmarshal(got, &g)
	_ = json.Unmarshal(want, &w)
	if !reflect.DeepEqual(g, w) {
		t.Errorf("AIPolicyContent's x-default-policy is %s; guard.DefaultPolicy() is %s", got, want)
	}
	// The default policy is valid content.
	if err := content.VisitJSON(w); err != nil {
		t.Errorf("the default policy does not match AIPolicyContent: %v", err)
	}

	if names := slices.Sorted(maps.Keys(content.Properties["entities"].Value.Properties)); !slices.Equal(names, slices.Sorted(slices.Values(detect.Types()))) {
		t.Errorf("AIPolicyContent.entities has the properties %v; the entity types are %v", names, detect.Types())
	}
	num := func(f *float64) float64 {
		if f == nil {
			return -1
		}
		return *f
	}
	if d := content.Properties["min_score"].Value.Default; d != guard.DefaultMinScore {
		t.Errorf("min_score default %v; guard.DefaultMinScore is %v", d, guard.DefaultMinScore)
	}
	if d := content.Properties["default_action"].Value.Default; d != string(guard.ActionRedact) {
		t.Errorf("default_action default %v; the code's is %s", d, guard.ActionRedact)
	}
	block := doc.Components.Schemas["AIBlockRules"].Value
	if d := block.Properties["prompt_injection_threshold"].Value.Default; d != guard.DefaultPromptInjectionThreshold {
		t.Errorf("prompt_injection_threshold default %v; the code's is %v", d, guard.DefaultPromptInjectionThreshold)
	}
	win := doc.Components.Schemas["AIOutputChecks"].Value.Properties["stream_window"].Value
	if win.Default != float64(guard.DefaultStreamWindow) || num(win.Max) != guard.MaxStreamWindow || win.Not == nil ||
		num(win.Not.Value.Min) != 1 || num(win.Not.Value.Max) != guard.MinStreamWindow-1 {
		t.Errorf("stream_window: default %v, maximum %v, not %v; the code has default %d and 0 or %d-%d",
			win.Default, num(win.Max), win.Not, guard.DefaultStreamWindow, guard.MinStreamWindow, guard.MaxStreamWindow)
	}
	for _, v := range []int{0, guard.MinStreamWindow, guard.DefaultStreamWindow, guard.MaxStreamWindow} {
		if err := win.VisitJSON(float64(v)); err != nil {
			t.Errorf("stream_window refuses %d, which the code accepts: %v", v, err)
		}
	}
	for _, v := range []int{1, guard.MinStreamWindow - 1, guard.MaxStreamWindow + 1} {
		if err := win.VisitJSON(float64(v)); err == nil {
			t.Errorf("stream_window accepts %d, which the code refuses", v)
		}
	}

	// The text limit, and the bodies that carry one text.
	limit := strconv.Itoa(gateway.MaxText)
	for what, desc := range map[string]string{
		"info.description":              doc.Info.Description,
		"ChatMessage.content":           doc.Components.Schemas["ChatMessage"].Value.Properties["content"].Value.Description,
		"SanitizeRequest.text":          doc.Components.Schemas["SanitizeRequest"].Value.Properties["text"].Value.Description,
		"AIPolicyTestRequest.text":      doc.Components.Schemas["AIPolicyTestRequest"].Value.Properties["text"].Value.Description,
		"POST /sanitize":                doc.Paths.Value("/ai-gateway/v1/sanitize").Post.Description,
		"POST /policies/{id}/test":      doc.Paths.Value("/ai-gateway/v1/policies/{id}/test").Post.Description,
		"POST /chat":                    doc.Paths.Value("/ai-gateway/v1/chat").Post.Description,
		"POST /openai/chat/completions": doc.Paths.Value("/ai-gateway/v1/openai/chat/completions").Post.Description,
	} {
		if !strings.Contains(desc, limit+" bytes") {
			t.Errorf("%s does not give the text limit, %s bytes (gateway.MaxText)", what, limit)
		}
	}
	body := strconv.Itoa(gateway.MaxText + 4096) // the handlers' limit for one text and its JSON
	for _, p := range []string{"/ai-gateway/v1/sanitize", "/ai-gateway/v1/policies/{id}/test"} {
		if !strings.Contains(doc.Paths.Value(p).Post.Description, body+" bytes") {
			t.Errorf("POST %s does not give its body limit, %s bytes", p, body)
		}
	}
}

// goStructFields reads the JSON fields of a struct type declared in a Go file, with the
// OpenAPI type each marshals to, for unexported types a test cannot reflect on.
func goStructFields(t *testing.T, file, typeName string) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var st *ast.StructType
	ast.Inspect(f, func(n ast.Node) bool {
		if ts, ok := n.(*ast.TypeSpec); ok && ts.Name.Name == typeName {
			st, _ = ts.Type.(*ast.StructType)
		}
		return st == nil
	})
	if st == nil {
		t.Fatalf("%s declares no struct %s", file, typeName)
	}
	out := map[string]string{}
	for _, fl := range st.Fields.List {
		if fl.Tag == nil {
			continue
		}
		tag, _ := strconv.Unquote(fl.Tag.Value)
		name, _, _ := strings.Cut(reflect.StructTag(tag).Get("json"), ",")
		typ := fl.Type
		if s, ok := typ.(*ast.StarExpr); ok {
			typ = s.X
		}
		kind := ""
		switch x := typ.(type) {
		case *ast.Ident:
			kind = map[string]string{"string": "string", "bool": "boolean", "int": "integer", "int64": "integer", "float64": "number"}[x.Name]
		case *ast.ArrayType:
			kind = "array"
		case *ast.SelectorExpr:
			if x.Sel.Name == "RawMessage" {
				kind = "raw"
			}
		}
		out[name] = kind
	}
	return out
}

// TestOpenAPIOpenAIRequestMatchesCode reads the request and message fields the OpenAI-compatible
// endpoint uses (openaiUsed, openaiMessageFields in aigw/gateway/openai_request.go) and checks
// the schemas document exactly those, and refuse others (the endpoint refuses them by name).
func TestOpenAPIOpenAIRequestMatchesCode(t *testing.T) {
	doc := load(t)
	f, err := parser.ParseFile(token.NewFileSet(), "../../aigw/gateway/openai_request.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	lists := map[string][]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || len(vs.Names) != 1 || len(vs.Values) != 1 {
			return true
		}
		if lit, ok := vs.Values[0].(*ast.CompositeLit); ok {
			for _, e := range lit.Elts {
				if b, ok := e.(*ast.BasicLit); ok && b.Kind == token.STRING {
					v, _ := strconv.Unquote(b.Value)
					lists[vs.Names[0].Name] = append(lists[vs.Names[0].Name], v)
				}
			}
		}
		return true
	})
	for _, c := range []struct{ list, schema string }{
		{"openaiUsed", "OpenAIChatRequest"},
		{"openaiMessageFields", "OpenAIMessage"},
	} {
		s := doc.Components.Schemas[c.schema].Value
		fields := lists[c.list]
		if len(fields) == 0 {
			t.Fatalf("openai_request.go declares no list %s", c.list)
		}
		if got := slices.Sorted(maps.Keys(s.Properties)); !slices.Equal(got, slices.Sorted(slices.Values(fields))) {
			t.Errorf("%s documents %v; the gateway uses %v", c.schema, got, slices.Sorted(slices.Values(fields)))
		}
		if s.AdditionalProperties.Has == nil || *s.AdditionalProperties.Has {
			t.Errorf("%s: the gateway refuses unknown fields; additionalProperties must be false", c.schema)
		}
	}
}

// TestOpenAPIGatewayEventsMatchCode reads the event payloads the gateway builds (service.go,
// commit) and checks RedactionAppliedData and RequestBlockedData list exactly their keys, all
// required (they are always present).
func TestOpenAPIGatewayEventsMatchCode(t *testing.T) {
	doc := load(t)
	f, err := parser.ParseFile(token.NewFileSet(), "../../aigw/gateway/service.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	keys := func(lit *ast.CompositeLit) []string {
		var out []string
		for _, e := range lit.Elts {
			if kv, ok := e.(*ast.KeyValueExpr); ok {
				if b, ok := kv.Key.(*ast.BasicLit); ok && b.Kind == token.STRING {
					k, _ := strconv.Unquote(b.Value)
					out = append(out, k)
				}
			}
		}
		slices.Sort(out)
		return out
	}
	var commit *ast.FuncDecl
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Name.Name == "commit" {
			commit = fd
		}
	}
	if commit == nil {
		t.Fatal("service.go has no func commit, which builds the events")
	}
	payloads := map[string][]string{} // event constant -> keys of its data
	var rule []string                 // keys of a request.blocked rule
	ast.Inspect(commit, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.CallExpr:
			sel, ok := x.Fun.(*ast.SelectorExpr)
			if !ok || !(sel.Sel.Name == "New" && len(x.Args) == 2 || sel.Sel.Name == "NewAt" && len(x.Args) == 3) {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "event" {
				return true
			}
			typ, ok := x.Args[0].(*ast.SelectorExpr)
			lit, ok2 := x.Args[1].(*ast.CompositeLit)
			if ok && ok2 {
				payloads[typ.Sel.Name] = keys(lit)
			}
		case *ast.CompositeLit:
			if m, ok := x.Type.(*ast.MapType); ok {
				if v, ok := m.Value.(*ast.Ident); ok && v.Name == "string" && len(x.Elts) > 0 {
					rule = keys(x)
				}
			}
		}
		return true
	})
	schemaKeys := func(s *openapi3.Schema) ([]string, []string) {
		req := slices.Clone(s.Required)
		slices.Sort(req)
		return slices.Sorted(maps.Keys(s.Properties)), req
	}
	for constant, schema := range map[string]string{"RedactionApplied": "RedactionAppliedData", "RequestBlocked": "RequestBlockedData"} {
		code, ok := payloads[constant]
		if !ok {
			t.Errorf("service.go builds no event.%s payload", constant)
			continue
		}
		props, req := schemaKeys(doc.Components.Schemas[schema].Value)
		if !slices.Equal(props, code) || !slices.Equal(req, code) {
			t.Errorf("%s has properties %v, required %v; service.go builds %v", schema, props, req, code)
		}
	}
	rules := doc.Components.Schemas["RequestBlockedData"].Value.Properties["rules"].Value.Items.Value
	if props, req := schemaKeys(rules); !slices.Equal(props, rule) || !slices.Equal(req, rule) {
		t.Errorf("RequestBlockedData.rules items have properties %v, required %v; service.go builds %v", props, req, rule)
	}
	for _, ty := range []string{event.RedactionApplied, event.RequestBlocked} {
		if !strings.Contains(doc.Info.Description, "`"+ty+"`") {
			t.Errorf("info.description does not describe the payload of %s", ty)
		}
	}
}
