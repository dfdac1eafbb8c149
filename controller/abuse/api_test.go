package abuse

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/edgewan/edgewan/coreapi/auth"
	"github.com/edgewan/edgewan/coreapi/openapi"
)

// apiSlow is the property's latency bound: no refusal may take longer.
const apiSlow = time.Second

var pathParam = regexp.MustCompile(`\{[^}]+\}`)

// apiOp is one operation of the OpenAPI document.
type apiOp struct {
	Method, Path string // Path as documented: /v1/soc/cases/{id}
	Op           *openapi3.Operation
	Public       bool   // security: []
	Scope        string // x-required-scope
	ProjectKey   bool   // x-project-key: true
}

func loadOps(t *testing.T) []apiOp {
	t.Helper()
	raw, err := openapi.JSON()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := openapi3.NewLoader().LoadFromData(raw)
	if err != nil {
		t.Fatalf("loading the OpenAPI document: %v", err)
	}
	var ops []apiOp
	for _, p := range doc.Paths.Keys() {
		for method, op := range doc.Paths.Value(p).Operations() {
			o := apiOp{Method: method, Path: p, Op: op}
			o.Public = op.Security != nil && len(*op.Security) == 0
			o.Scope, _ = op.Extensions["x-required-scope"].(string)
			o.ProjectKey, _ = op.Extensions["x-project-key"].(bool)
			ops = append(ops, o)
		}
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].Path+ops[i].Method < ops[j].Path+ops[j].Method })
	return ops
}

// apiTally counts what the property is about.
type apiTally struct {
	tried, fivexx, slow, badBody, wrongStatus int
	failures                                  []string
}

func (a *apiTally) fail(format string, args ...any) {
	if len(a.failures) < 200 {
		a.failures = append(a.failures, fmt.Sprintf(format, args...))
	}
}

// apiCase is one hostile request and what the answer must be.
type apiCase struct {
	name    string
	path    string // with its parameters filled in, and a query when any
	token   string
	body    []byte // nil: none
	ctype   string // "" with a body: application/json
	want    []int  // allowed statuses; nil: any 4xx
	any2xx  bool   // the input may be valid after all: a 2xx is fine (never a 5xx)
	headers []string
}

// TestAPIAbuse calls every documented operation with each wrong kind of credential and each
// wrong kind of input. The property: a 4xx with the error body, never a 5xx, never over 1 s.
func TestAPIAbuse(t *testing.T) {
	t.Parallel() // with the faults' outages
	c := newCtl(t, "")
	apiScopes := slices.DeleteFunc(slices.Clone(auth.AllScopes), func(s string) bool { return strings.HasPrefix(s, "aigw:") })
	// Keys first: the CLI and the server share the SQLite file, so mint them before it runs.
	_, admin := c.Key("", apiScopes...)
	revokedID, revoked := c.Key("", apiScopes...)
	c.Revoke(revokedID)
	_, project := c.Key("abuse", "aigw:admin")
	_, projectNoAdmin := c.Key("abuse")
	_, otherProject := c.Key("other", "aigw:admin")
	scopeKeys := map[string]string{} // scope -> a key with every API scope but that one
	for _, s := range apiScopes {
		rest := slices.DeleteFunc(slices.Clone(apiScopes), func(x string) bool { return x == s })
		if len(rest) == 0 {
			continue
		}
		_, scopeKeys[s] = c.Key("", rest...)
	}
	c.Start()

	// Real resources for the path parameters, so validation is reached past the lookups.
	var site, pol, hook, kase, aipol struct{ ID string }
	c.JSON("POST", "/sd-wan/v1/sites", admin, map[string]any{"name": "abuse-site"}, &site)
	c.JSON("POST", "/sd-wan/v1/policies", admin, map[string]any{"name": "abuse-policy", "type": "steering"}, &pol)
	c.JSON("POST", "/v1/webhooks", admin, map[string]any{"url": "http://127.0.0.1:9/hook", "events": []string{"case.opened"}}, &hook)
	c.JSON("POST", "/v1/soc/cases", admin, map[string]any{"title": "abuse"}, &kase)
	c.JSON("POST", "/ai-gateway/v1/policies", project, map[string]any{"name": "abuse-ai"}, &aipol)
	ids := map[string]string{
		"/v1/soc/cases/{id}":            kase.ID,
		"/v1/webhooks/{id}":             hook.ID,
		"/sd-wan/v1/sites/{id}":         site.ID,
		"/sd-wan/v1/policies/{id}":      pol.ID,
		"/ai-gateway/v1/policies/{id}":  aipol.ID,
		"/ai-gateway/v1/projects/{id}":  "abuse",
		"/ai-gateway/v1/proposals/{id}": "prp_00000000000000000000",
	}
	fill := func(p string, bad string) string {
		return pathParam.ReplaceAllStringFunc(p, func(param string) string {
			if bad != "" {
				return bad
			}
			prefix := p[:strings.Index(p, param)+len(param)]
			for k, v := range ids {
				if strings.HasSuffix(prefix, k) || prefix == k {
					return v
				}
			}
			return "unk_00000000000000000000"
		})
	}

	var tally apiTally
	ops := loadOps(t)
	run := func(o apiOp, cs apiCase) {
		tally.tried++
		hdr := slices.Clone(cs.headers)
		if cs.ctype != "" {
			hdr = append(hdr, "Content-Type", cs.ctype)
		}
		r := c.Do(strings.ToUpper(o.Method), cs.path, cs.token, cs.body, hdr...)
		if r.Err == nil && r.Took > apiSlow {
			// A scheduling hiccup on a loaded machine does not repeat; a slow path does.
			r = c.Do(strings.ToUpper(o.Method), cs.path, cs.token, cs.body, hdr...)
		}
		what := fmt.Sprintf("%s %s [%s]", strings.ToUpper(o.Method), o.Path, cs.name)
		switch {
		case r.Err != nil:
			tally.fivexx++ // no answer at all is worse than a 5xx
			tally.fail("%s: no answer: %v", what, r.Err)
			return
		case r.Status >= 500:
			tally.fivexx++
			tally.fail("%s: %d %.300s", what, r.Status, r.Body)
		case r.Status/100 == 2 && cs.any2xx:
		case cs.want != nil && !slices.Contains(cs.want, r.Status):
			tally.wrongStatus++
			tally.fail("%s: status %d, want one of %v: %.300s", what, r.Status, cs.want, r.Body)
		case cs.want == nil && r.Status/100 != 4:
			tally.wrongStatus++
			tally.fail("%s: status %d, want a 4xx: %.300s", what, r.Status, r.Body)
		}
		if r.Took > apiSlow {
			tally.slow++
			tally.fail("%s: took %v", what, r.Took)
		}
		if r.Status >= 400 {
			if msg := checkErrorBody(r); msg != "" {
				tally.badBody++
				tally.fail("%s: %d: %s", what, r.Status, msg)
			}
		}
	}

	for _, o := range ops {
		keyFor := admin
		if o.ProjectKey {
			keyFor = project
		}
		good := fill(o.Path, "")
		if o.Method == "delete" {
			good = fill(o.Path, "unk_00000000000000000000") // keep the fixtures for the other operations
		}
		// Wrong credentials.
		if !o.Public {
			creds := []apiCase{
				{name: "no token", token: "", want: []int{401}},
				{name: "malformed token", token: "not-a-token", want: []int{401}},
				{name: "unknown key", token: "ewk_0123456789abcdef0123_" + strings.Repeat("A", 43), want: []int{401}},
				{name: "revoked key", token: revoked, want: []int{401}},
				{name: "basic auth", headers: []string{"Authorization", "Basic YWRtaW46YWRtaW4="}, want: []int{401}},
				{name: "token with non-ASCII", headers: []string{"Authorization", "Bearer " + admin[:10] + "\xff" + admin[11:]}, want: []int{400, 401}},
				{name: "token twice", headers: []string{"Authorization", "Bearer " + admin + " " + admin}, want: []int{401}},
			}
			if o.ProjectKey {
				creds = append(creds, apiCase{name: "API key on the gateway", token: admin, want: []int{403}})
				// Another project's key on this project's resources; on a collection it
				// sees its own project, which is right.
				if strings.Contains(o.Path, "{") && !strings.Contains(o.Path, "proposals/") &&
					!strings.Contains(o.Path, "logs/") && !strings.Contains(o.Path, "documents/") {
					creds = append(creds, apiCase{name: "wrong project", token: otherProject, want: []int{403, 404}})
				}
				if o.Scope == "aigw:admin" {
					creds = append(creds, apiCase{name: "wrong scope", token: projectNoAdmin, want: []int{403}})
				}
			} else if o.Path != "/v1/ping" {
				creds = append(creds, apiCase{name: "project key on the API", token: project, want: []int{403}})
				if o.Scope != "" {
					creds = append(creds, apiCase{name: "wrong scope", token: scopeKeys[o.Scope], want: []int{403}})
				}
			}
			for _, cs := range creds {
				cs.path = good
				if o.Op.RequestBody != nil {
					cs.body = validBody(o)
				}
				run(o, cs)
			}
		}
		// Wrong input, with the right credential.
		tok := keyFor
		if o.Public {
			tok = ""
		}
		for _, cs := range inputCases(o, good) {
			cs.token = tok
			run(o, cs)
		}
		if strings.Contains(o.Path, "{") {
			for name, bad := range map[string]string{
				"path: invalid UTF-8": "%FF%FE", "path: 4 KiB id": strings.Repeat("a", 4096),
				"path: traversal": "..%2F..%2Fetc", "path: NUL": "a%00b", "path: unicode": "%E2%80%AEevil",
			} {
				run(o, apiCase{name: name, path: fill(o.Path, bad), token: tok, body: validBodyIf(o)})
			}
		}
	}
	// The edges of the HTTP server itself.
	for _, cs := range []struct {
		name string
		hdr  []string
		path string
	}{
		{"1 MiB query string", nil, "/v1/ping?q=" + strings.Repeat("a", 1<<20)},
		{"1 MiB header", []string{"X-Big", strings.Repeat("a", 1<<20)}, "/v1/ping"},
	} {
		run(apiOp{Method: "get", Path: "/v1/ping"}, apiCase{name: cs.name, path: cs.path, token: admin, headers: cs.hdr, want: []int{414, 431}})
	}

	figures.add(t, "api", "requests tried %d, 5xx %d, >1s %d, wrong status %d, bad error body %d (operations %d)",
		tally.tried, tally.fivexx, tally.slow, tally.wrongStatus, tally.badBody, len(ops))
	for _, f := range tally.failures {
		t.Error(f)
	}
	if !c.Running() {
		t.Errorf("the controller exited during the API abuse:\n%s", c.Log())
	}
}

// checkErrorBody says what is wrong with an error answer, or "".
func checkErrorBody(r resp) string {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return fmt.Sprintf("Content-Type %q, want application/json: %.200q", ct, r.Body)
	}
	raw := map[string]json.RawMessage{}
	if err := json.Unmarshal(r.Body, &raw); err != nil {
		return fmt.Sprintf("not JSON: %v: %.200q", err, r.Body)
	}
	var detail map[string]*string
	if err := json.Unmarshal(raw["error"], &detail); err != nil || detail == nil {
		return fmt.Sprintf("no error object: %.200s", r.Body)
	}
	for _, k := range []string{"code", "message", "request_id"} {
		if v := detail[k]; v == nil || *v == "" {
			return fmt.Sprintf("error.%s missing: %.200s", k, r.Body)
		}
	}
	if h := r.Header.Get("X-Request-Id"); h == "" || h != *detail["request_id"] {
		return fmt.Sprintf("X-Request-Id %q, body's request_id %q", h, *detail["request_id"])
	}
	return ""
}

// validBody is a body the operation could accept: the schema's example, or its required
// properties with plausible values.
func validBody(o apiOp) []byte {
	b, _ := json.Marshal(sample(bodySchema(o), 0))
	return b
}

func validBodyIf(o apiOp) []byte {
	if o.Op.RequestBody == nil {
		return nil
	}
	return validBody(o)
}

func bodySchema(o apiOp) *openapi3.Schema {
	if o.Op.RequestBody == nil || o.Op.RequestBody.Value == nil {
		return nil
	}
	mt := o.Op.RequestBody.Value.Content.Get("application/json")
	if mt == nil || mt.Schema == nil {
		return nil
	}
	return mt.Schema.Value
}

// props are a schema's properties, through allOf.
func props(s *openapi3.Schema) map[string]*openapi3.Schema {
	out := map[string]*openapi3.Schema{}
	if s == nil {
		return out
	}
	for _, a := range s.AllOf {
		for k, v := range props(a.Value) {
			out[k] = v
		}
	}
	for k, v := range s.Properties {
		out[k] = v.Value
	}
	return out
}

func schemaType(s *openapi3.Schema) string {
	if s == nil {
		return ""
	}
	if s.Type != nil && len(*s.Type) > 0 {
		return (*s.Type)[0]
	}
	for _, a := range s.AllOf {
		if t := schemaType(a.Value); t != "" {
			return t
		}
	}
	return ""
}

func nullable(s *openapi3.Schema) bool {
	if s == nil {
		return true
	}
	return s.Nullable
}

func sample(s *openapi3.Schema, depth int) any {
	if s == nil || depth > 6 {
		return nil
	}
	if s.Example != nil {
		return s.Example
	}
	if len(s.Enum) > 0 {
		return s.Enum[0]
	}
	for _, a := range s.AllOf {
		if v := sample(a.Value, depth+1); v != nil && schemaType(s) != "object" {
			return v
		}
	}
	switch schemaType(s) {
	case "object":
		m := map[string]any{}
		req := slices.Clone(s.Required)
		for _, a := range s.AllOf {
			req = append(req, a.Value.Required...)
		}
		ps := props(s)
		for _, k := range req {
			m[k] = sample(ps[k], depth+1)
		}
		if len(m) == 0 && s.MinProps > 0 {
			for k, v := range ps {
				m[k] = sample(v, depth+1)
				break
			}
		}
		return m
	case "array":
		if s.Items != nil {
			return []any{sample(s.Items.Value, depth+1)}
		}
		return []any{}
	case "string":
		switch s.Format {
		case "date-time":
			return time.Now().UTC().Format(time.RFC3339)
		case "uri":
			return "https://example.com/x"
		}
		return "abuse"
	case "integer", "number":
		if s.Min != nil {
			return *s.Min
		}
		return 1
	case "boolean":
		return true
	}
	return "abuse"
}

// wrongType is a value of another JSON type than s wants.
func wrongType(s *openapi3.Schema) any {
	switch schemaType(s) {
	case "string":
		return 12345
	case "integer", "number":
		return "12"
	case "boolean":
		return "true"
	case "array":
		return map[string]any{"a": 1}
	case "object":
		return []any{1, 2}
	}
	return []any{map[string]any{}}
}

// inputCases are the hostile inputs for o at path (its parameters filled in).
func inputCases(o apiOp, path string) []apiCase {
	var out []apiCase
	if s := bodySchema(o); s != nil {
		base, _ := sample(s, 0).(map[string]any)
		with := func(k string, v any) []byte {
			m := map[string]any{}
			for bk, bv := range base {
				m[bk] = bv
			}
			m[k] = v
			b, _ := json.Marshal(m)
			return b
		}
		first := ""
		for k := range base {
			if first == "" || k < first {
				first = k
			}
		}
		baseJSON, _ := json.Marshal(base)
		out = append(out,
			apiCase{name: "malformed JSON", body: []byte(`{"name": "x",`)},
			apiCase{name: "trailing garbage", body: append(slices.Clone(baseJSON), []byte(` {"x":1}`)...)},
			apiCase{name: "JSON null", body: []byte(`null`)},
			apiCase{name: "JSON array", body: []byte(`[]`)},
			apiCase{name: "JSON string", body: []byte(`"x"`)},
			apiCase{name: "empty body", body: []byte{}},
			apiCase{name: "text/plain", body: baseJSON, ctype: "text/plain", want: []int{400, 415}},
			apiCase{name: "unknown field", body: with("zz_not_a_field", 1)},
			apiCase{name: "deep nesting", body: []byte(`{"zz":` + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + `}`)},
			apiCase{name: "2 MiB string", body: with(firstOr(first, "name"), strings.Repeat("a", 2<<20)), want: []int{400, 413}},
			apiCase{name: "1 MiB string", body: with(firstOr(first, "name"), strings.Repeat("é", 1<<19))},
			apiCase{name: "NUL escape", body: with(firstOr(first, "name"), "a\u0000b")},
		)
		if first != "" {
			dup := append([]byte(`{"`+first+`":`), mustJSON(base[first])...)
			dup = append(dup, ',')
			dup = append(dup, baseJSON[1:]...)
			out = append(out, apiCase{name: "duplicate key " + first, body: dup})
			// Invalid UTF-8 inside a string value: raw bytes, not an escape.
			bad := bytes.Replace(with(first, "INVALIDUTF8"), []byte("INVALIDUTF8"), []byte{0xff, 0xfe, 'a'}, 1)
			out = append(out, apiCase{name: "invalid UTF-8", body: bad})
		}
		for k, ps := range props(s) {
			if ps != nil && ps.ReadOnly {
				continue
			}
			out = append(out, apiCase{name: "wrong type " + k, body: with(k, wrongType(ps))})
			if !nullable(ps) {
				// A list given null is the empty list (as absent): encoding/json's reading,
				// harmless, and what a nullable list (PolicyContent.rules) needs anyway.
				list := schemaType(ps) == "array"
				out = append(out, apiCase{name: "null " + k, body: with(k, nil), any2xx: list})
			}
			switch schemaType(ps) {
			case "integer", "number":
				out = append(out,
					apiCase{name: "huge number " + k, body: bytes.Replace(with(k, 0), []byte(`":0`), []byte(`":1e400`), 1)},
					apiCase{name: "negative " + k, body: with(k, -1), any2xx: ps.Min == nil || *ps.Min < 0})
			case "string":
				if ps.MaxLength != nil {
					out = append(out, apiCase{name: "over maxLength " + k, body: with(k, strings.Repeat("a", int(*ps.MaxLength)+1))})
				}
				if len(ps.Enum) > 0 || ps.Format == "date-time" {
					out = append(out, apiCase{name: "out of set " + k, body: with(k, "zz-not-a-value")})
				}
			}
		}
	}
	for _, pr := range o.Op.Parameters {
		p := pr.Value
		if p == nil || p.In != "query" {
			continue
		}
		var ps *openapi3.Schema
		if p.Schema != nil {
			ps = p.Schema.Value
		}
		typed := ps != nil && (len(ps.Enum) > 0 || schemaType(ps) == "integer" || schemaType(ps) == "number" ||
			ps.Format == "date-time" || p.Name == "cursor")
		q := func(v string) string {
			return path + "?" + url.QueryEscape(p.Name) + "=" + v
		}
		for _, v := range []struct{ name, raw string }{
			{"not a value", "zz-not-a-value"}, {"negative", "-1"}, {"huge number", "1e400"},
			{"overflow", "99999999999999999999999"}, {"invalid UTF-8", "%FF%FE"}, {"NUL", "a%00b"},
			{"4 KiB", strings.Repeat("a", 4096)}, {"SQL", url.QueryEscape("' OR 1=1--")},
		} {
			cs := apiCase{name: "query " + p.Name + ": " + v.name, path: q(v.raw), body: validBodyIf(o)}
			if !typed || (v.name == "negative" && ps.Min == nil && p.Name != "cursor") {
				cs.any2xx = true // a free-text value may be valid: only no 5xx and the error body
			}
			if v.name == "invalid UTF-8" || v.name == "NUL" {
				cs.any2xx = false // never a valid value
				if !typed {
					cs.any2xx = true
				}
			}
			out = append(out, cs)
		}
		out = append(out, apiCase{name: "query " + p.Name + " twice", path: q("1") + "&" + p.Name + "=2", body: validBodyIf(o), any2xx: true})
	}
	out = append(out, apiCase{name: "unknown query parameter", path: path + "?zz_unknown=1", body: validBodyIf(o), any2xx: true})
	for i := range out {
		if out[i].path == "" {
			out[i].path = path
		}
		if out[i].ctype == "" && out[i].body != nil {
			out[i].ctype = "application/json"
		}
	}
	return out
}

func firstOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
