package gateway

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/semaphore"

	"github.com/edgewan/edgewan/aigw/detect"
	"github.com/edgewan/edgewan/aigw/document"
	"github.com/edgewan/edgewan/aigw/guard"
	"github.com/edgewan/edgewan/aigw/provider"
	"github.com/edgewan/edgewan/coreapi/apierr"
	"github.com/edgewan/edgewan/coreapi/event"
	"github.com/edgewan/edgewan/coreapi/ids"
	"github.com/edgewan/edgewan/coreapi/page"
)

// Options configure the gateway.
type Options struct {
	Models       *provider.Router // the models the gateway may call
	AuditKeyFile string           // key sealing opted-in raw inputs; created on first use
	Notify       func()           // wakes the webhook dispatcher after events were stored
	OnAudit      func()           // told after audit records were committed (wakes the SIEM streamer)
	Registerer   prometheus.Registerer
	Now          func() time.Time
	ProjectTTL   time.Duration // how long a project's compiled policy is cached; default 5s
	// MaxInflightBytes bounds the request body bytes handled at once (limits.go); 0 means
	// DefaultMaxInflightBytes.
	MaxInflightBytes int64

	Documents       DocumentStore   // document capture (documents.go); nil answers 503
	DocumentOptions DocumentOptions // limits, asynchronous processing, destinations
	Proposals       ProposalStore   // Automatic mode (proposals.go); nil answers 503
	ProposalOptions ProposalOptions // schedule and thresholds
}

// Service runs the AI gateway.
type Service struct {
	store  Store
	o      Options
	engine *detect.Engine
	audit  *auditWriter
	seal   *sealer

	mu     sync.Mutex
	guards map[string]*cachedGuard // project -> compiled active policy

	inflight    *semaphore.Weighted // request body bytes being handled (limits.go)
	inflightCap int64

	extractor    *document.Extractor // documents.go
	docOpts      DocumentOptions
	docWake      chan struct{}
	extractSlots chan struct{}
	propOpts     ProposalOptions // proposals.go
	mDocs        *prometheus.CounterVec
	mPages       *prometheus.CounterVec
	mExtract     prometheus.Histogram

	mOverhead  prometheus.Histogram
	mRedacted  *prometheus.CounterVec
	mBlocked   *prometheus.CounterVec
	mUpstreams *prometheus.CounterVec
}

type cachedGuard struct {
	project  *Project
	guard    *guard.Guard
	policyID string
	version  int
	loaded   time.Time
}

// New returns a Service; Start begins writing the audit log, Close flushes it.
func New(ctx context.Context, st Store, o Options) (*Service, error) {
	if o.Models == nil {
		return nil, errors.New("gateway.New: no models")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Notify == nil {
		o.Notify = func() {}
	}
	if o.OnAudit == nil {
		o.OnAudit = func() {}
	}
	if o.ProjectTTL <= 0 {
		o.ProjectTTL = 5 * time.Second
	}
	engine, err := detect.New(detect.Options{})
	if err != nil {
		return nil, err
	}
	seal, err := loadSealer(o.AuditKeyFile)
	if err != nil {
		return nil, err
	}
	if err := rotateAuditKey(ctx, st, o.AuditKeyFile, seal); err != nil {
		return nil, err
	}
	last, err := st.MaxAuditSeq(ctx)
	if err != nil {
		return nil, err
	}
	s := &Service{store: st, o: o, engine: engine, seal: seal, audit: newAuditWriter(st, last, o.Notify), guards: map[string]*cachedGuard{},
		mOverhead: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "edgewan_aigw_overhead_seconds", Help: "Gateway time per request, excluding the model's own time.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1},
		}),
		mRedacted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edgewan_aigw_redactions_total", Help: "Entities found by the gateway, by type and action.",
		}, []string{"type", "action"}),
		mBlocked: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edgewan_aigw_blocked_total", Help: "Requests refused by a block rule, by kind of rule.",
		}, []string{"kind"}),
		mUpstreams: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edgewan_aigw_model_calls_total", Help: "Model calls by model that answered and outcome.",
		}, []string{"model", "outcome"}),
	}
	if o.Registerer != nil {
		o.Registerer.MustRegister(s.mOverhead, s.mRedacted, s.mBlocked, s.mUpstreams)
	}
	s.inflight, s.inflightCap = newInflight(o.MaxInflightBytes)
	s.initDocuments()
	s.initProposals()
	go s.audit.run()
	return s, nil
}

// Close stops taking requests' audit records and commits those queued.
func (s *Service) Close() { s.audit.close() }

// Caller is who makes a request: the key's ID and project, and whether it may administer.
type Caller struct {
	KeyID   string
	Project string
	Admin   bool
}

func (s *Service) checkProject(c Caller, project string) error {
	if project == "" {
		return apierr.BadRequest("project is required")
	}
	if project != c.Project {
		return apierr.New(http.StatusForbidden, apierr.CodeForbidden, "this key is not scoped to project %q", project)
	}
	return nil
}

// guardFor returns the project's compiled active policy (cached for ProjectTTL).
func (s *Service) guardFor(ctx context.Context, project string) (*cachedGuard, error) {
	now := time.Now() // a duration (the cache's age): never o.Now, which a clock step moves
	s.mu.Lock()
	cg := s.guards[project]
	s.mu.Unlock()
	if cg != nil && now.Sub(cg.loaded) < s.o.ProjectTTL {
		return cg, nil
	}
	p, err := s.store.EnsureProject(ctx, project, func() []byte {
		k := make([]byte, 32)
		_, _ = rand.Read(k)
		return k
	})
	if err != nil {
		return nil, err
	}
	pol, pid, ver := guard.DefaultPolicy(), "default", 0
	if p.PolicyID != "" {
		got, err := s.store.GetPolicy(ctx, p.PolicyID)
		if err != nil {
			return nil, err
		}
		for _, v := range got.Versions {
			if v.Version == p.PolicyVersion {
				if v.Quarantine != nil { // fail closed: never the default policy in its place
					return nil, apierr.New(http.StatusServiceUnavailable, apierr.CodeUnavailable,
						"project %s's policy %s v%d is quarantined (%s): its requests are refused until a valid version is published", project, p.PolicyID, v.Version, v.Quarantine.Reason)
				}
				if pol, err = guard.ParsePolicy(v.Content); err != nil {
					return nil, fmt.Errorf("gateway: stored policy %s v%d: %w", p.PolicyID, v.Version, err)
				}
				pid, ver = p.PolicyID, v.Version
			}
		}
	}
	if cg != nil && cg.policyID == pid && cg.version == ver {
		cg = &cachedGuard{project: p, guard: cg.guard, policyID: pid, version: ver, loaded: now}
	} else {
		g, err := guard.New(pol, s.engine, p.HashKey)
		if err != nil {
			return nil, fmt.Errorf("gateway: compiling policy %s v%d: %w", pid, ver, err)
		}
		cg = &cachedGuard{project: p, guard: g, policyID: pid, version: ver, loaded: now}
	}
	s.mu.Lock()
	s.guards[project] = cg
	s.mu.Unlock()
	return cg, nil
}

func (s *Service) forget(project string) {
	s.mu.Lock()
	delete(s.guards, project)
	s.mu.Unlock()
}

// nonNil keeps empty lists as [] in JSON.
func nonNil[T any](xs []T) []T {
	if xs == nil {
		return []T{}
	}
	return xs
}

func convRedactions(where string, rs []guard.Redaction) []Redaction {
	out := make([]Redaction, len(rs))
	for i, r := range rs {
		out[i] = Redaction{Type: r.Type, Subtype: r.Subtype, Action: string(r.Action), Placeholder: r.Replacement, Start: r.Start, End: r.End, Score: r.Score, Where: where}
	}
	return out
}

func convFindings(where string, fs []guard.Finding) []Finding {
	out := make([]Finding, len(fs))
	for i, f := range fs {
		out[i] = Finding{Rule: f.Rule, Kind: f.Kind, Detail: f.Detail, Where: where}
	}
	return out
}

// SanitizeRequest is the body of POST /sanitize.
type SanitizeRequest struct {
	Project string `json:"project"`
	Text    string `json:"text"`
}

// SanitizeResponse answers POST /sanitize.
type SanitizeResponse struct {
	RequestID  string      `json:"request_id"`
	Text       string      `json:"text"`
	Redactions []Redaction `json:"redactions"`
	Blocked    bool        `json:"blocked"`
	Findings   []Finding   `json:"findings"`
	Policy     PolicyRef   `json:"policy"`
	// RedactionsOmitted counts the redactions not listed (MaxListedRedactions).
	RedactionsOmitted int `json:"redactions_omitted,omitempty"`
}

// PolicyRef names the policy version that was applied.
type PolicyRef struct {
	ID      string `json:"id"`
	Version int    `json:"version"`
}

// MaxText bounds one text the gateway reads (a policy's max_input_bytes may be lower).
const MaxText = 512 << 10

func checkText(field, text string) error {
	if len(text) > MaxText {
		return apierr.New(http.StatusRequestEntityTooLarge, apierr.CodeTooLarge, "%s is %d bytes; the limit is %d", field, len(text), MaxText)
	}
	if !utf8.ValidString(text) {
		return apierr.BadRequest("%s is not valid UTF-8", field)
	}
	if strings.IndexByte(text, 0) >= 0 {
		return apierr.BadRequest("%s must not contain NUL characters", field)
	}
	return nil
}

// Sanitize redacts and policy-checks text without calling a model. A fired block rule is
// reported (blocked: true), not refused: sanitizing is a check.
func (s *Service) Sanitize(ctx context.Context, c Caller, requestID string, req SanitizeRequest) (*SanitizeResponse, error) {
	start := time.Now()
	if err := s.checkProject(c, req.Project); err != nil {
		return nil, err
	}
	if err := checkText("text", req.Text); err != nil {
		return nil, err
	}
	cg, err := s.guardFor(ctx, req.Project)
	if err != nil {
		return nil, err
	}
	res := cg.guard.NewSession().Input(req.Text)
	reds := convRedactions("input", res.Redactions)
	out := &SanitizeResponse{RequestID: requestID, Text: res.Text,
		Blocked: res.Blocked, Findings: convFindings("input", res.Findings), Policy: PolicyRef{cg.policyID, cg.version}}
	input, _ := json.Marshal(map[string]string{"text": res.Text})
	rec := s.record(c, cg, requestID, "sanitize", "", input, req.Text, "", reds, out.Findings, res.Blocked, http.StatusOK, start)
	if err := s.commit(ctx, rec); err != nil {
		return nil, err
	}
	out.Redactions, out.RedactionsOmitted = listRedactions(reds)
	s.mOverhead.Observe(time.Since(start).Seconds())
	return out, nil
}

// record builds an audit record; the raw input is sealed only when the project opted in.
func (s *Service) record(c Caller, cg *cachedGuard, id, kind, model string, input json.RawMessage, raw, output string,
	reds []Redaction, finds []Finding, blocked bool, status int, start time.Time) *Record {
	now := s.o.Now().UTC().Truncate(time.Microsecond)
	r := &Record{ID: id, Project: cg.project.ID, KeyID: c.KeyID, Kind: kind, Model: model, Input: input, Output: storable(output),
		Redactions: reds, Findings: finds, PolicyID: cg.policyID, PolicyVersion: cg.version, Blocked: blocked, Status: status,
		LatencyMs: float64(time.Since(start).Microseconds()) / 1000, CreatedAt: now, UpdatedAt: now}
	if cg.project.StoreRawInput && raw != "" {
		r.RawInputEnc = s.seal.Seal(id, []byte(cutText(raw, AuditMaxRaw)))
	}
	return r
}

// storable replaces NUL characters, which PostgreSQL's text columns refuse. Inputs with one
// are refused (checkText), but a model may answer with one: its audit record must still be
// written, and not fail the records committed with it.
func storable(text string) string { return strings.ReplaceAll(text, "\x00", "\uFFFD") }

// commit writes the audit record with the events it raises and counts it.
func (s *Service) commit(ctx context.Context, r *Record) error {
	var evs []*event.Envelope
	at := r.CreatedAt // the controller's clock (record)
	if at.IsZero() {
		at = s.o.Now()
	}
	if len(r.Redactions) > 0 {
		entities := map[string]int{}
		actions := map[string]int{}
		for _, x := range r.Redactions {
			entities[x.Type]++
			actions[x.Action]++
			s.mRedacted.WithLabelValues(x.Type, x.Action).Inc()
		}
		ev, err := event.NewAt(event.RedactionApplied, map[string]any{"request_id": r.ID, "project": r.Project, "kind": r.Kind,
			"entities": entities, "actions": actions, "policy": r.PolicyID, "policy_version": r.PolicyVersion}, at)
		if err == nil {
			evs = append(evs, ev)
		}
	}
	if r.Blocked {
		rules := make([]map[string]string, 0, len(r.Findings))
		for _, f := range r.Findings {
			rules = append(rules, map[string]string{"rule": f.Rule, "kind": f.Kind, "where": f.Where})
			s.mBlocked.WithLabelValues(f.Kind).Inc()
		}
		ev, err := event.NewAt(event.RequestBlocked, map[string]any{"request_id": r.ID, "project": r.Project, "kind": r.Kind,
			"model": r.Model, "rules": rules, "policy": r.PolicyID, "policy_version": r.PolicyVersion}, at)
		if err == nil {
			evs = append(evs, ev)
		}
	}
	r.bound() // after the events, which count every redaction
	if err := s.audit.write(ctx, r, evs); err != nil {
		return fmt.Errorf("gateway: audit log: %w", err)
	}
	s.o.OnAudit()
	return nil
}

// ChatRequest is the body of POST /chat.
type ChatRequest struct {
	Project     string             `json:"project"`
	Model       string             `json:"model"`
	Messages    []provider.Message `json:"messages"`
	Stream      bool               `json:"stream"`
	MaxTokens   int                `json:"max_tokens"`
	Temperature *float64           `json:"temperature"`
	// Set by the OpenAI-compatible endpoint: top_p, stop, seed, ...; tools (messages may then
	// carry tool calls and tool results).
	Sampling          provider.Sampling `json:"-"`
	Tools             json.RawMessage   `json:"-"`
	ToolChoice        json.RawMessage   `json:"-"`
	ParallelToolCalls *bool             `json:"-"`
	ResponseFormat    json.RawMessage   `json:"-"`
}

// ChatResponse answers POST /chat.
type ChatResponse struct {
	RequestID    string      `json:"request_id"`
	Output       string      `json:"output"`
	Model        string      `json:"model"`
	Redactions   []Redaction `json:"redactions"`
	Blocked      bool        `json:"blocked"`
	FinishReason string      `json:"finish_reason,omitempty"`
	Usage        *Usage      `json:"usage,omitempty"`
	Policy       PolicyRef   `json:"policy"`
	// RedactionsOmitted counts the redactions not listed (MaxListedRedactions).
	RedactionsOmitted int `json:"redactions_omitted,omitempty"`
	// ToolCalls are the model's tool calls, arguments checked (OpenAI-compatible endpoint).
	ToolCalls []provider.ToolCall `json:"-"`
	// More are the choices after the first, checked as it is (OpenAI's n).
	More []Choice `json:"-"`
}

// MaxChoices bounds OpenAI's n: the choices of one answer, each checked like an answer.
const MaxChoices = 128

// Choice is one more answer to a request with several choices.
type Choice struct {
	Output       string
	FinishReason string
	ToolCalls    []provider.ToolCall
}

// Usage counts tokens as the model reported them.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

// prepared is a chat request after its input checks.
type prepared struct {
	cg    *cachedGuard
	sess  *guard.Session
	req   provider.Request
	reds  []Redaction
	finds []Finding
	input json.RawMessage
	raw   string
}

var validRoles = []string{provider.RoleSystem, provider.RoleUser, provider.RoleAssistant}

// prepare validates a chat request and applies the input checks. It returns a *Blocked error
// (already audited) when a block rule fired.
func (s *Service) prepare(ctx context.Context, c Caller, requestID, kind string, req ChatRequest, start time.Time) (*prepared, error) {
	if err := s.checkProject(c, req.Project); err != nil {
		return nil, err
	}
	if req.Model == "" {
		return nil, apierr.BadRequest("model is required; GET /ai-gateway/v1/models lists them")
	}
	if !s.o.Models.Has(req.Model) {
		return nil, apierr.BadRequest("unknown model %q; known: %s", req.Model, strings.Join(s.o.Models.Models(), ", "))
	}
	if len(req.Messages) == 0 || len(req.Messages) > 1000 {
		return nil, apierr.BadRequest("messages must hold 1 to 1000 messages")
	}
	if req.MaxTokens < 0 || req.MaxTokens > 1_000_000 {
		return nil, apierr.BadRequest("max_tokens must be 0 to 1000000")
	}
	if t := req.Temperature; t != nil && (*t < 0 || *t > 2) {
		return nil, apierr.BadRequest("temperature must be 0 to 2")
	}
	for i, m := range req.Messages {
		if !slices.Contains(validRoles, m.Role) && (m.Role != provider.RoleTool || m.ToolCallID == "") {
			return nil, apierr.BadRequest("messages[%d].role must be system, user or assistant; got %q", i, m.Role)
		}
		if err := checkText(fmt.Sprintf("messages[%d].content", i), m.Content); err != nil {
			return nil, err
		}
		for j, tc := range m.ToolCalls {
			if err := checkText(fmt.Sprintf("messages[%d].tool_calls[%d].function.arguments", i, j), tc.Function.Arguments); err != nil {
				return nil, err
			}
		}
	}
	cg, err := s.guardForModel(ctx, req.Project, req.Model)
	if err != nil {
		return nil, err
	}
	p := &prepared{cg: cg, sess: cg.guard.NewSession(),
		req: provider.Request{Model: req.Model, MaxTokens: req.MaxTokens, Temperature: req.Temperature, Sampling: req.Sampling,
			Tools: req.Tools, ToolChoice: req.ToolChoice, ParallelToolCalls: req.ParallelToolCalls, ResponseFormat: req.ResponseFormat,
			Messages: make([]provider.Message, len(req.Messages))}}
	var raw strings.Builder
	blocked := false
	for i, m := range req.Messages {
		where := fmt.Sprintf("input[%d]", i)
		res := p.sess.Input(m.Content)
		p.req.Messages[i] = provider.Message{Role: m.Role, Content: res.Text, ToolCallID: m.ToolCallID}
		p.reds = append(p.reds, convRedactions(where, res.Redactions)...)
		p.finds = append(p.finds, convFindings(where, res.Findings)...)
		blocked = blocked || res.Blocked
		raw.WriteString(m.Role + ": " + m.Content + "\n")
		// A tool call's arguments and a tool's result are text like any other: checked and
		// redacted, so nothing reaches the model through them unchecked.
		for j, tc := range m.ToolCalls {
			where := fmt.Sprintf("input[%d].tool_calls[%d]", i, j)
			res := p.sess.InputJSON(tc.Function.Arguments)
			tc.Function.Arguments = res.Text
			p.req.Messages[i].ToolCalls = append(p.req.Messages[i].ToolCalls, tc)
			p.reds = append(p.reds, convRedactions(where, res.Redactions)...)
			p.finds = append(p.finds, convFindings(where, res.Findings)...)
			blocked = blocked || res.Blocked
			raw.WriteString("tool_call " + tc.Function.Name + ": " + tc.Function.Arguments + "\n")
		}
	}
	p.input, _ = json.Marshal(p.req.Messages)
	p.raw = raw.String()
	if blocked {
		rec := s.record(c, cg, requestID, kind, req.Model, p.input, p.raw, "", p.reds, p.finds, true, http.StatusUnprocessableEntity, start)
		if err := s.commit(ctx, rec); err != nil {
			return nil, err
		}
		return nil, blockedError(p.finds, "the request")
	}
	return p, nil
}

// guardForModel returns the project's policy after checking it allows model.
func (s *Service) guardForModel(ctx context.Context, project, model string) (*cachedGuard, error) {
	cg, err := s.guardFor(ctx, project)
	if err != nil {
		return nil, err
	}
	if err := cg.guard.CheckModel(model); err != nil {
		return nil, apierr.Invalid("model %q is not allowed by project %s's policy (%s v%d)", model, project, cg.policyID, cg.version)
	}
	return cg, nil
}

func blockedError(fs []Finding, what string) error {
	names := make([]string, 0, len(fs))
	for _, f := range fs {
		n := f.Rule + " (" + f.Kind + ", " + f.Where + ")"
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return apierr.New(http.StatusUnprocessableEntity, apierr.CodeBlocked, "%s was blocked by the project's policy: %s", what, strings.Join(names, "; "))
}

func upstreamError(err error) error {
	var ue *provider.UpstreamError
	switch {
	case errors.Is(err, provider.ErrInvalidRequest):
		return apierr.BadRequest("%v", err)
	case errors.As(err, &ue), errors.Is(err, context.DeadlineExceeded):
		return apierr.New(http.StatusBadGateway, apierr.CodeUpstream, "the model failed: %v", err)
	}
	return err
}

// Chat redacts the input, applies the block rules, calls the model (with fallbacks), checks
// and redacts the output, and writes the audit record.
func (s *Service) Chat(ctx context.Context, c Caller, requestID, kind string, req ChatRequest) (*ChatResponse, error) {
	start := time.Now()
	p, err := s.prepare(ctx, c, requestID, kind, req, start)
	if err != nil {
		return nil, err
	}
	upStart := time.Now()
	resp, err := s.o.Models.Chat(ctx, p.req)
	upTime := time.Since(upStart)
	if err != nil {
		s.mUpstreams.WithLabelValues(req.Model, "error").Inc()
		rec := s.record(c, p.cg, requestID, kind, req.Model, p.input, p.raw, "", p.reds, p.finds, false, http.StatusBadGateway, start)
		if cerr := s.commit(ctx, rec); cerr != nil {
			return nil, cerr
		}
		return nil, upstreamError(err)
	}
	s.mUpstreams.WithLabelValues(resp.Model, "ok").Inc()
	// Every choice is checked alike, in one session: one placeholder numbering, one output
	// size limit for the whole answer.
	var reds []Redaction
	var outFinds []Finding
	var logged strings.Builder
	blocked := false
	check := func(where, content string, tcs []provider.ToolCall) Choice {
		out := p.sess.Output(content)
		reds = append(reds, convRedactions(where, out.Redactions)...)
		outFinds = append(outFinds, convFindings(where, out.Findings)...)
		blocked = blocked || out.Blocked
		if where != "output" {
			logged.WriteString("\n" + where + ": ")
		}
		logged.WriteString(out.Text)
		calls := make([]provider.ToolCall, len(tcs))
		for j, tc := range tcs {
			w := fmt.Sprintf("%s.tool_calls[%d]", where, j)
			res := p.sess.Output(tc.Function.Arguments)
			tc.Function.Arguments = res.Text
			calls[j] = tc
			reds = append(reds, convRedactions(w, res.Redactions)...)
			outFinds = append(outFinds, convFindings(w, res.Findings)...)
			blocked = blocked || res.Blocked
			logged.WriteString("\ntool_call " + tc.Function.Name + ": " + res.Text)
		}
		return Choice{Output: out.Text, ToolCalls: calls}
	}
	first := check("output", resp.Content, resp.ToolCalls)
	more := make([]Choice, len(resp.More))
	for i, c := range resp.More {
		more[i] = check(fmt.Sprintf("output.choices[%d]", i+1), c.Content, c.ToolCalls)
		more[i].FinishReason = c.FinishReason
	}
	reds = append(p.reds, reds...)
	finds := append(p.finds, outFinds...)
	status := http.StatusOK
	if blocked {
		status = http.StatusUnprocessableEntity
	}
	rec := s.record(c, p.cg, requestID, kind, resp.Model, p.input, p.raw, logged.String(), reds, finds, blocked, status, start)
	if err := s.commit(ctx, rec); err != nil {
		return nil, err
	}
	s.mOverhead.Observe((time.Since(start) - upTime).Seconds())
	if blocked {
		return nil, blockedError(outFinds, "the model's answer")
	}
	// With a reversible policy the caller gets its own values back; the audit record keeps
	// the placeholders (logged above).
	restore := func(c *Choice) {
		c.Output = p.sess.Restore(c.Output, false)
		for j := range c.ToolCalls {
			c.ToolCalls[j].Function.Arguments = p.sess.Restore(c.ToolCalls[j].Function.Arguments, true)
		}
	}
	restore(&first)
	for i := range more {
		restore(&more[i])
	}
	listed, omitted := listRedactions(reds)
	return &ChatResponse{RequestID: requestID, Output: first.Output, Model: resp.Model, Redactions: listed, RedactionsOmitted: omitted, FinishReason: resp.FinishReason, ToolCalls: first.ToolCalls, More: more,
		Usage: &Usage{PromptTokens: resp.Usage.PromptTokens, CompletionTokens: resp.Usage.CompletionTokens}, Policy: PolicyRef{p.cg.policyID, p.cg.version}}, nil
}

// StreamSink receives a streamed answer: safe text and tool call pieces as they become safe,
// then the end.
type StreamSink interface {
	Delta(text string) error
	// ToolCall sends a piece of tool call index: its ID and name with its first piece, then
	// pieces of its arguments, checked as text is.
	ToolCall(index int, id, name, args string) error
	Done(r *ChatResponse) error
}

var errStreamBlocked = errors.New("gateway: output blocked")

// checkedStream is one streamed text of an answer (its content, or one tool call's
// arguments): checked over a sliding window (guard.StreamRedactor), then, with a reversible
// policy, its placeholders restored. It can be closed when the model moves on (to a tool
// call), which releases its held tail at once; if more of it comes, a new window of the same
// session (one placeholder numbering for the whole request) takes it.
type checkedStream struct {
	sess    *guard.Session
	json    bool // tool call arguments: restored values are JSON-escaped
	sr      *guard.StreamRedactor
	rs      *guard.Restorer
	sent    strings.Builder // the checked text, as logged (placeholders kept)
	reds    []guard.Redaction
	finds   []guard.Finding
	blocked bool
}

// write adds a piece and returns what can be sent now.
func (t *checkedStream) write(piece string) string {
	if t.sr == nil {
		t.sr, t.rs = t.sess.Stream(), t.sess.Restorer(t.json)
	}
	safe := t.sr.Write(piece)
	if t.sr.Blocked() {
		t.blocked = true
		return ""
	}
	t.sent.WriteString(safe)
	return t.rs.Write(safe)
}

// close ends the text (for now) and returns its rest; it may set blocked.
func (t *checkedStream) close() string {
	if t.sr == nil {
		return ""
	}
	rest := t.sr.Flush()
	t.blocked = t.blocked || t.sr.Blocked()
	t.sent.WriteString(rest)
	rest = t.rs.Write(rest) + t.rs.Flush()
	t.reds = append(t.reds, t.sr.Redactions()...)
	t.finds = append(t.finds, t.sr.Findings()...)
	t.sr, t.rs = nil, nil
	if t.blocked {
		return ""
	}
	return rest
}

// toolStream is one streamed tool call.
type toolStream struct {
	id, name string
	checkedStream
}

// ChatStream is Chat streaming the answer: the output, and each tool call's arguments, are
// redacted over a sliding window, so no entity split across chunks escapes; a block rule on
// the output stops the stream. The model streams its text, then its tool calls one after the
// other: when it moves on, the part before is over and its held tail goes out then, so the
// parts reach the caller in order (as the Messages API's content blocks need). Errors before
// the first delta are returned (the handler answers them as usual); after it they end the
// stream.
func (s *Service) ChatStream(ctx context.Context, c Caller, requestID, kind string, req ChatRequest, sink StreamSink) error {
	start := time.Now()
	n := max(req.Sampling.N, 1)
	cs, _ := sink.(ChoiceSink)
	if n > 1 && cs == nil {
		return apierr.BadRequest("n above 1 is not supported with stream on this endpoint")
	}
	p, err := s.prepare(ctx, c, requestID, kind, req, start)
	if err != nil {
		return err
	}
	// One set of parts per choice; choice 0 goes to sink's own methods.
	choices := make([]*choiceParts, n)
	for i := range choices {
		choices[i] = &choiceParts{text: &checkedStream{sess: p.sess}, cur: -1}
	}
	delta := func(choice int, text string) error {
		if choice == 0 {
			return sink.Delta(text)
		}
		return cs.ChoiceDelta(choice, text)
	}
	toolCall := func(choice, index int, id, name, args string) error {
		if choice == 0 {
			return sink.ToolCall(index, id, name, args)
		}
		return cs.ChoiceToolCall(choice, index, id, name, args)
	}
	release := func(choice int) error { // ends the current part of a choice
		ch := choices[choice]
		t, send := ch.text, func(x string) error { return delta(choice, x) }
		if ch.cur >= 0 {
			k := ch.cur
			t, send = &ch.tools[k].checkedStream, func(x string) error { return toolCall(choice, k, "", "", x) }
		}
		rest := t.close()
		if t.blocked {
			return errStreamBlocked
		}
		if rest == "" {
			return nil
		}
		return send(rest)
	}
	p.req.OnToolCall = func(d provider.ToolCallDelta) error {
		ch := choices[d.Choice] // the provider checked the indexes
		if d.Index != ch.cur {
			if err := release(d.Choice); err != nil {
				return err
			}
			ch.cur = d.Index
		}
		if d.Index == len(ch.tools) { // a new call: its ID and name (the application's own function names) go at once
			ch.tools = append(ch.tools, &toolStream{id: d.ID, name: d.Name, checkedStream: checkedStream{sess: p.sess, json: true}})
			if err := toolCall(d.Choice, d.Index, d.ID, d.Name, ""); err != nil {
				return err
			}
		}
		t := ch.tools[d.Index]
		safe := t.write(d.Arguments)
		if t.blocked {
			return errStreamBlocked
		}
		if safe == "" {
			return nil
		}
		return toolCall(d.Choice, d.Index, "", "", safe)
	}
	onText := func(choice int, piece string) error {
		ch := choices[choice]
		if ch.cur != -1 {
			if err := release(choice); err != nil {
				return err
			}
			ch.cur = -1
		}
		safe := ch.text.write(piece)
		if ch.text.blocked {
			return errStreamBlocked
		}
		if safe == "" {
			return nil
		}
		return delta(choice, safe)
	}
	if n > 1 {
		p.req.OnChoice = onText
	}
	upStart := time.Now()
	resp, err := s.o.Models.Stream(ctx, p.req, func(piece string) error { return onText(0, piece) })
	upTime := time.Since(upStart)
	for i := range choices {
		if err == nil {
			err = release(i)
		}
	}
	blocked := errors.Is(err, errStreamBlocked)
	model := req.Model
	if resp != nil {
		model = resp.Model
	}
	var reds []Redaction
	var outFinds []Finding
	var logged strings.Builder
	out := make([]Choice, n)
	for i, ch := range choices {
		where := "output"
		if i > 0 {
			where = fmt.Sprintf("output.choices[%d]", i)
			logged.WriteString("\n" + where + ": ")
		}
		ch.text.close() // collects the redactions and findings of every part, also after an error
		blocked = blocked || ch.text.blocked
		reds = append(reds, convRedactions(where, ch.text.reds)...)
		outFinds = append(outFinds, convFindings(where, ch.text.finds)...)
		logged.WriteString(ch.text.sent.String())
		out[i] = Choice{Output: p.sess.Restore(ch.text.sent.String(), false), ToolCalls: make([]provider.ToolCall, len(ch.tools))}
		for k, t := range ch.tools {
			t.close()
			blocked = blocked || t.blocked
			w := fmt.Sprintf("%s.tool_calls[%d]", where, k)
			reds = append(reds, convRedactions(w, t.reds)...)
			outFinds = append(outFinds, convFindings(w, t.finds)...)
			out[i].ToolCalls[k] = provider.ToolCall{ID: t.id, Type: "function", Function: provider.FunctionCall{Name: t.name, Arguments: p.sess.Restore(t.sent.String(), true)}}
			logged.WriteString("\ntool_call " + t.name + ": " + t.sent.String())
		}
		if i > 0 && resp != nil && i-1 < len(resp.More) {
			out[i].FinishReason = resp.More[i-1].FinishReason
		}
	}
	reds = append(p.reds, reds...)
	finds := append(p.finds, outFinds...)
	status := http.StatusOK
	switch {
	case blocked:
		status = http.StatusUnprocessableEntity
	case err != nil:
		status = http.StatusBadGateway
		s.mUpstreams.WithLabelValues(model, "error").Inc()
	default:
		s.mUpstreams.WithLabelValues(model, "ok").Inc()
	}
	rec := s.record(c, p.cg, requestID, kind, model, p.input, p.raw, logged.String(), reds, finds, blocked, status, start)
	if cerr := s.commit(ctx, rec); cerr != nil {
		return cerr
	}
	s.mOverhead.Observe((time.Since(start) - upTime).Seconds())
	switch {
	case blocked:
		return blockedError(outFinds, "the model's answer")
	case err != nil:
		return upstreamError(err)
	}
	listed, omitted := listRedactions(reds)
	return sink.Done(&ChatResponse{RequestID: requestID, Output: out[0].Output, Model: model, Redactions: listed, RedactionsOmitted: omitted, FinishReason: resp.FinishReason,
		ToolCalls: out[0].ToolCalls, More: out[1:], Usage: &Usage{PromptTokens: resp.Usage.PromptTokens, CompletionTokens: resp.Usage.CompletionTokens}, Policy: PolicyRef{p.cg.policyID, p.cg.version}})
}

// choiceParts are the streamed parts of one choice: its text and its tool calls, and which of
// them the model is streaming (-1 the text, else a tool call's index).
type choiceParts struct {
	text  *checkedStream
	tools []*toolStream
	cur   int
}

// ChoiceSink is a StreamSink that also takes the choices after the first (OpenAI's n).
type ChoiceSink interface {
	ChoiceDelta(choice int, text string) error
	ChoiceToolCall(choice, index int, id, name, args string) error
}

// Models lists the models the caller's project may use: the configured ones its policy allows.
func (s *Service) Models(ctx context.Context, c Caller) ([]string, error) {
	cg, err := s.guardFor(ctx, c.Project)
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, m := range s.o.Models.Models() {
		if cg.guard.AllowModel(m) {
			out = append(out, m)
		}
	}
	return out, nil
}

// ---- policies ----

// CreatePolicyRequest is the body of POST /policies.
type CreatePolicyRequest struct {
	Project     string          `json:"project"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Content     json.RawMessage `json:"content"`
	Comment     string          `json:"comment"`
}

// AddVersionRequest is the body of POST /policies/{id}/versions.
type AddVersionRequest struct {
	Content json.RawMessage `json:"content"`
	Comment string          `json:"comment"`
}

// PublishRequest is the body of POST /policies/{id}/publish.
type PublishRequest struct {
	Version int    `json:"version"`
	Comment string `json:"comment"`
}

// TestRequest is the body of POST /policies/{id}/test.
type TestRequest struct {
	Text    string `json:"text"`
	Version int    `json:"version"` // 0: the latest version
	Output  bool   `json:"output"`  // check it as a model's answer instead of an input
}

// TestResponse answers a policy test: what the version would do to the text.
type TestResponse struct {
	Policy     PolicyRef   `json:"policy"`
	Text       string      `json:"text"`
	Redactions []Redaction `json:"redactions"`
	Blocked    bool        `json:"blocked"`
	Findings   []Finding   `json:"findings"`
	// RedactionsOmitted counts the redactions not listed (MaxListedRedactions).
	RedactionsOmitted int `json:"redactions_omitted,omitempty"`
	// Weakens lists the default protections this version turns off or weakens (empty when
	// none): guard.Weakens.
	Weakens []string `json:"weakens"`
}

func canonicalPolicy(content json.RawMessage) (json.RawMessage, error) {
	if len(content) == 0 || string(content) == "null" {
		return nil, apierr.BadRequest("content is required")
	}
	p, err := guard.ParsePolicy(content)
	if err != nil {
		return nil, apierr.BadRequest("policy content: %v", err)
	}
	return json.Marshal(p)
}

func (s *Service) requireAdmin(c Caller) error {
	if !c.Admin {
		return apierr.New(http.StatusForbidden, apierr.CodeInvalidScope, "this key lacks the scope aigw:admin required to change the project's policies and settings")
	}
	return nil
}

// projectPolicy returns a policy of the caller's project (another project's is not found).
func (s *Service) projectPolicy(ctx context.Context, c Caller, id string) (*Policy, error) {
	p, err := s.store.GetPolicy(ctx, id)
	if err != nil {
		return nil, err
	}
	if p.Project != c.Project {
		return nil, apierr.NotFound("policy %q not found", id)
	}
	return p, nil
}

// CreatePolicy creates a policy of the caller's project, with a first draft if content is given.
func (s *Service) CreatePolicy(ctx context.Context, c Caller, req CreatePolicyRequest) (*Policy, error) {
	if err := s.requireAdmin(c); err != nil {
		return nil, err
	}
	if req.Project == "" {
		req.Project = c.Project
	}
	if err := s.checkProject(c, req.Project); err != nil {
		return nil, err
	}
	if strings.TrimSpace(req.Name) == "" || len(req.Name) > 200 || len(req.Description) > 2000 || len(req.Comment) > 2000 {
		return nil, apierr.BadRequest("name (1-200 characters) is required; description and comment are limited to 2000")
	}
	now := s.o.Now().UTC().Truncate(time.Microsecond)
	p := &Policy{ID: ids.New("aipol"), Project: req.Project, Name: strings.TrimSpace(req.Name), Description: req.Description, CreatedAt: now, UpdatedAt: now}
	var v *Version
	if len(req.Content) > 0 && string(req.Content) != "null" {
		content, err := canonicalPolicy(req.Content)
		if err != nil {
			return nil, err
		}
		v = &Version{Version: 1, Status: VersionDraft, Content: content, Comment: req.Comment, CreatedBy: c.KeyID, CreatedAt: now}
	}
	if _, err := s.guardFor(ctx, req.Project); err != nil { // the project exists from here on
		return nil, err
	}
	if err := s.store.CreatePolicy(ctx, p, v); err != nil {
		return nil, err
	}
	return s.store.GetPolicy(ctx, p.ID)
}

// AddVersion adds a draft version.
func (s *Service) AddVersion(ctx context.Context, c Caller, id string, req AddVersionRequest) (*Version, error) {
	if err := s.requireAdmin(c); err != nil {
		return nil, err
	}
	if _, err := s.projectPolicy(ctx, c, id); err != nil {
		return nil, err
	}
	if len(req.Comment) > 2000 {
		return nil, apierr.BadRequest("comment is limited to 2000 characters")
	}
	content, err := canonicalPolicy(req.Content)
	if err != nil {
		return nil, err
	}
	v := &Version{Status: VersionDraft, Content: content, Comment: req.Comment, CreatedBy: c.KeyID, CreatedAt: s.o.Now().UTC().Truncate(time.Microsecond)}
	if err := s.store.AddVersion(ctx, id, v); err != nil {
		return nil, err
	}
	return v, nil
}

// Publish makes a version the project's active policy, with a change record.
func (s *Service) Publish(ctx context.Context, c Caller, id string, req PublishRequest, diff func(a, b json.RawMessage) []string) (*Change, error) {
	if err := s.requireAdmin(c); err != nil {
		return nil, err
	}
	if len(req.Comment) > 2000 {
		return nil, apierr.BadRequest("comment is limited to 2000 characters")
	}
	p, err := s.projectPolicy(ctx, c, id)
	if err != nil {
		return nil, err
	}
	var v, prev *Version
	for _, x := range p.Versions {
		if x.Version == req.Version {
			v = x
		}
	}
	if v == nil {
		return nil, apierr.Invalid("policy %s has no version %d", id, req.Version)
	}
	if v.Quarantine != nil {
		return nil, apierr.Invalid("version %d of policy %s is quarantined and cannot be published: %s", req.Version, id, v.Quarantine.Reason)
	}
	cg, err := s.guardFor(ctx, p.Project)
	if err != nil {
		return nil, err
	}
	var prevContent json.RawMessage
	if cg.policyID != "default" {
		if active, err := s.store.GetPolicy(ctx, cg.policyID); err == nil {
			for _, x := range active.Versions {
				if x.Version == cg.version {
					prev = x
				}
			}
		}
	}
	if prev != nil {
		prevContent = prev.Content
	} else {
		prevContent, _ = json.Marshal(guard.DefaultPolicy())
	}
	now := s.o.Now().UTC().Truncate(time.Microsecond)
	ch := &Change{ID: ids.New("chg"), Kind: "ai_policy.published", Actor: c.KeyID, Target: id, Project: p.Project, Version: v.Version,
		Comment: req.Comment, CreatedAt: now, UpdatedAt: now, Diff: diff(prevContent, v.Content)}
	if pol, err := guard.ParsePolicy(v.Content); err == nil {
		for _, w := range guard.Weakens(pol) { // said on every publish, not only when it changes
			ch.Diff = append(ch.Diff, "weakens a default protection: "+w)
		}
	}
	if prev != nil && cg.policyID == id {
		ch.FromVersion = prev.Version
	}
	if err := s.store.ActivatePolicy(ctx, p.Project, id, v.Version, ch); err != nil {
		return nil, err
	}
	s.forget(p.Project)
	return ch, nil
}

// GetPolicy returns a policy of the caller's project.
func (s *Service) GetPolicy(ctx context.Context, c Caller, id string) (*Policy, error) {
	return s.projectPolicy(ctx, c, id)
}

// ListPolicies lists the caller's project's policies.
func (s *Service) ListPolicies(ctx context.Context, c Caller, p page.Params) ([]*Policy, error) {
	return s.store.ListPolicies(ctx, p, c.Project)
}

// ListChanges lists the caller's project's change records.
func (s *Service) ListChanges(ctx context.Context, c Caller, p page.Params) ([]*Change, error) {
	return s.store.ListChanges(ctx, p, c.Project)
}

// TestPolicy runs a version on sample text: no model call, no audit record.
func (s *Service) TestPolicy(ctx context.Context, c Caller, id string, req TestRequest) (*TestResponse, error) {
	p, err := s.projectPolicy(ctx, c, id)
	if err != nil {
		return nil, err
	}
	if err := checkText("text", req.Text); err != nil {
		return nil, err
	}
	var v *Version
	for _, x := range p.Versions {
		if (req.Version == 0 && (v == nil || x.Version > v.Version)) || x.Version == req.Version {
			v = x
		}
	}
	if v == nil {
		return nil, apierr.Invalid("policy %s has no version %d", id, req.Version)
	}
	pol, err := guard.ParsePolicy(v.Content)
	if err != nil {
		return nil, err
	}
	cg, err := s.guardFor(ctx, p.Project)
	if err != nil {
		return nil, err
	}
	g, err := guard.New(pol, s.engine, cg.project.HashKey)
	if err != nil {
		return nil, apierr.Invalid("policy %s v%d does not compile: %v", id, v.Version, err)
	}
	sess := g.NewSession()
	where, res := "input", guard.Result{}
	if req.Output {
		where, res = "output", sess.Output(req.Text)
	} else {
		res = sess.Input(req.Text)
	}
	out := &TestResponse{Policy: PolicyRef{id, v.Version}, Text: res.Text,
		Blocked: res.Blocked, Findings: convFindings(where, res.Findings), Weakens: nonNil(guard.Weakens(pol))}
	out.Redactions, out.RedactionsOmitted = listRedactions(convRedactions(where, res.Redactions))
	return out, nil
}

// ---- projects and logs ----

// ProjectUpdate is the body of PATCH /projects/{id}.
type ProjectUpdate struct {
	StoreRawInput *bool `json:"store_raw_input"`
}

// GetProject returns the caller's project.
func (s *Service) GetProject(ctx context.Context, c Caller, id string) (*Project, error) {
	if err := s.checkProject(c, id); err != nil {
		return nil, err
	}
	cg, err := s.guardFor(ctx, id)
	if err != nil {
		return nil, err
	}
	p := *cg.project
	return &p, nil
}

// UpdateProject changes the caller's project's settings.
func (s *Service) UpdateProject(ctx context.Context, c Caller, id string, u ProjectUpdate) (*Project, error) {
	if err := s.requireAdmin(c); err != nil {
		return nil, err
	}
	p, err := s.GetProject(ctx, c, id)
	if err != nil {
		return nil, err
	}
	if u.StoreRawInput == nil {
		return nil, apierr.BadRequest("nothing to change: give store_raw_input")
	}
	p.StoreRawInput, p.UpdatedAt = *u.StoreRawInput, s.o.Now().UTC().Truncate(time.Microsecond)
	if err := s.store.UpdateProject(ctx, p); err != nil {
		return nil, err
	}
	s.forget(id)
	return p, nil
}

// ListLogs lists the caller's project's audit records.
func (s *Service) ListLogs(ctx context.Context, c Caller, p page.Params, f LogFilter) ([]*Record, error) {
	if f.Project == "" {
		f.Project = c.Project
	}
	if err := s.checkProject(c, f.Project); err != nil {
		return nil, err
	}
	if f.Entity != "" && !slices.Contains(detect.Types(), f.Entity) {
		return nil, apierr.BadRequest("entity must be one of %s; got %q", strings.Join(detect.Types(), ", "), f.Entity)
	}
	switch f.Kind {
	case "", "sanitize", "chat", "openai":
	default:
		return nil, apierr.BadRequest("kind must be sanitize, chat or openai; got %q", f.Kind)
	}
	return s.store.ListRecords(ctx, p, f)
}

// GetLog returns one audit record; its raw input (if stored) is opened for admin keys only.
func (s *Service) GetLog(ctx context.Context, c Caller, id string) (*Record, error) {
	r, err := s.store.GetRecord(ctx, id)
	if err != nil {
		return nil, err
	}
	if r.Project != c.Project {
		return nil, apierr.NotFound("audit record %q not found", id)
	}
	if r.RawInputEnc != "" && c.Admin {
		raw, err := s.seal.Open(r.ID, r.RawInputEnc)
		if err != nil {
			return nil, fmt.Errorf("gateway: opening the raw input of %s: %w", id, err)
		}
		r.RawInput = string(raw)
	}
	return r, nil
}
