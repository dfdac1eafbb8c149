package guard

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/edgewan/edgewan/aigw/detect"
)

// Action is what a policy does with a detected entity.
type Action string

// Actions. See README.md for the replacement formats.
const (
	ActionRedact Action = "redact" // typed placeholder numbered per session: [EMAIL_1]
	ActionMask   Action = "mask"   // same shape, characters replaced by '*' except a per-type part kept
	ActionHash   Action = "hash"   // [EMAIL:<12 hex of HMAC-SHA256>], equal values hash equal in a project
	ActionBlock  Action = "block"  // refuse the request (and redact the entity in what is logged)
	ActionAllow  Action = "allow"  // leave the text as it is but report the entity
)

var actions = []Action{ActionRedact, ActionMask, ActionHash, ActionBlock, ActionAllow}

// Defaults applied by Validate to zero fields, and limits it enforces.
const (
	DefaultMinScore                 = detect.DefaultMinScore
	DefaultPromptInjectionThreshold = 1.0
	DefaultStreamWindow             = 128     // bytes held back from the end of a stream
	MinStreamWindow                 = 64      // smaller windows leak the start of long IBANs (README.md)
	MaxStreamWindow                 = 1 << 16 // larger windows only add latency
	maxRegexLen                     = 4096
)

// Policy is the content of one version of a project's policy. Decode it with ParsePolicy,
// which rejects unknown fields and layers the policy over DefaultPolicy: a field the JSON does
// not give keeps its default, so a policy that only adds a rule keeps every default
// protection, and a protection goes off only when the policy says so (Weakens lists which).
// The protective fields have no omitempty: the stored (canonical) form states them, so
// reading it back never turns a protection on or off.
type Policy struct {
	// Entities maps an entity type (detect.Types) to its action; types not listed get
	// DefaultAction. Entries merge with the defaults' (credit_card: mask, secret: block).
	Entities map[string]Action `json:"entities"`
	// DefaultAction applies to types not in Entities; "" means redact.
	DefaultAction Action `json:"default_action"`
	// MinScore drops detections scoring below it; 0 means DefaultMinScore (0.5).
	MinScore float64 `json:"min_score"`
	// Block holds the rules that refuse a request.
	Block BlockRules `json:"block"`
	// Models is the allow-list of model names; a trailing '*' matches any suffix
	// ("claude-*"). Empty allows every model configured for the project.
	Models []string `json:"models,omitempty"`
	// Output holds the checks applied to model responses.
	Output OutputChecks `json:"output"`
	// Reversible restores the values behind placeholders in the model's answer
	// (de-anonymisation, restore.go): the model sees [EMAIL_1], the caller gets the address
	// back. Only placeholders issued for this request's input are restored. Off by default.
	Reversible bool `json:"reversible,omitempty"`
}

// BlockRules refuse a request when one of them fires. Entity-triggered blocking is the
// "block" action in Policy.Entities.
type BlockRules struct {
	// Patterns are RE2 regular expressions matched against the original text.
	Patterns []PatternRule `json:"patterns,omitempty"`
	// Keywords are word lists matched as whole words (or anywhere, with Substring).
	Keywords []KeywordRule `json:"keywords,omitempty"`
	// PromptInjection enables the prompt-injection heuristics (README.md); on by default.
	PromptInjection bool `json:"prompt_injection"`
	// PromptInjectionThreshold is the score at which the heuristics block; 0 means 1.0.
	PromptInjectionThreshold float64 `json:"prompt_injection_threshold,omitempty"`
	// MaxInputBytes limits the total size of a request's input texts; 0 means no limit
	// (the gateway's own limit of 512 KiB per text still applies). 256 KiB by default.
	MaxInputBytes int `json:"max_input_bytes"`
}

// PatternRule blocks text that matches Regex (RE2 syntax, so matching is linear in the text).
type PatternRule struct {
	Name  string `json:"name"`
	Regex string `json:"regex"`
}

// KeywordRule blocks text containing any of Words.
type KeywordRule struct {
	Name  string   `json:"name"`
	Words []string `json:"words"`
	// CaseInsensitive matches with simple Unicode case folding.
	CaseInsensitive bool `json:"case_insensitive,omitempty"`
	// Substring matches words inside longer words too; by default a keyword must not be
	// preceded or followed by a letter, digit or underscore.
	Substring bool `json:"substring,omitempty"`
}

// OutputChecks configures what is done to model responses.
type OutputChecks struct {
	// SkipEntities leaves entities in responses as they are (and so no entity can block a
	// response); by default the entity actions apply to responses as they do to input (a
	// "block" entity is redacted; it blocks the response only with Block).
	SkipEntities bool `json:"skip_entities"`
	// Block applies the pattern, keyword and entity block rules to responses (in a stream,
	// patterns and keywords see a sliding window of at least 128 bytes, and text in which no
	// entity can start is no longer sent early; see README.md).
	Block bool `json:"block"`
	// MaxOutputBytes limits the size of a response; 0 means no limit.
	MaxOutputBytes int `json:"max_output_bytes"`
	// StreamWindow is how many bytes a streamed response holds back where an entity may start
	// (README.md, Streaming); 0 means DefaultStreamWindow.
	StreamWindow int `json:"stream_window,omitempty"`
}

// DefaultPolicy is the policy of a new project: every entity redacted except card numbers
// (masked, keeping the last four digits) and secrets (the request is refused), prompt-injection
// heuristics on, inputs up to 256 KiB, entity actions applied to responses.
func DefaultPolicy() Policy {
	return Policy{
		Entities: map[string]Action{
			detect.TypeCreditCard: ActionMask,
			detect.TypeSecret:     ActionBlock,
		},
		DefaultAction: ActionRedact,
		MinScore:      DefaultMinScore,
		Block: BlockRules{
			PromptInjection:          true,
			PromptInjectionThreshold: DefaultPromptInjectionThreshold,
			MaxInputBytes:            256 << 10,
		},
		Output: OutputChecks{StreamWindow: DefaultStreamWindow},
	}
}

// ParsePolicy decodes a policy from JSON over DefaultPolicy, refusing unknown fields and
// trailing data, and validates it. A field the JSON leaves out keeps its default; entities
// merge with the default entities ("entities": null keeps them too). The returned policy has
// its defaults filled in.
func ParsePolicy(data []byte) (Policy, error) {
	p := DefaultPolicy()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return Policy{}, fmt.Errorf("guard.ParsePolicy: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Policy{}, errors.New("guard.ParsePolicy: trailing data after the policy object")
	}
	if p.Entities == nil { // "entities": null replaced the default map
		p.Entities = DefaultPolicy().Entities
	}
	if err := p.Validate(); err != nil {
		return Policy{}, err
	}
	return p.withDefaults(), nil
}

// Validate reports every problem in p, joined, each naming the field or rule at fault.
func (p Policy) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("guard: "+format, args...))
	}
	types := detect.Types()
	for _, t := range sortedKeys(p.Entities) {
		if !slices.Contains(types, t) {
			bad("entities: unknown entity type %q (known: %s)", t, strings.Join(types, ", "))
		}
		if !validAction(p.Entities[t]) {
			bad("entities.%s: unknown action %q (want one of %s)", t, p.Entities[t], actionList())
		}
	}
	if p.DefaultAction != "" && !validAction(p.DefaultAction) {
		bad("default_action: unknown action %q (want one of %s)", p.DefaultAction, actionList())
	}
	if p.MinScore < 0 || p.MinScore > 1 {
		bad("min_score: %v outside [0, 1]", p.MinScore)
	}
	b := p.Block
	names := map[string]bool{}
	for i, r := range b.Patterns {
		where := fmt.Sprintf("block.patterns[%d] %q", i, r.Name)
		switch {
		case r.Name == "":
			bad("block.patterns[%d]: name is empty", i)
		case names[r.Name]:
			bad("%s: duplicate rule name", where)
		}
		names[r.Name] = true
		if _, err := compilePattern(r.Regex); err != nil {
			bad("%s: %v", where, err)
		}
	}
	for i, r := range b.Keywords {
		where := fmt.Sprintf("block.keywords[%d] %q", i, r.Name)
		switch {
		case r.Name == "":
			bad("block.keywords[%d]: name is empty", i)
		case names[r.Name]:
			bad("%s: duplicate rule name", where)
		}
		names[r.Name] = true
		if len(r.Words) == 0 {
			bad("%s: no words", where)
		}
		for j, w := range r.Words {
			if strings.TrimSpace(w) == "" || !utf8.ValidString(w) {
				bad("%s: words[%d] is empty or not UTF-8", where, j)
			}
		}
	}
	if b.PromptInjectionThreshold < 0 {
		bad("block.prompt_injection_threshold: %v is negative", b.PromptInjectionThreshold)
	}
	if b.MaxInputBytes < 0 {
		bad("block.max_input_bytes: %d is negative", b.MaxInputBytes)
	}
	for i, m := range p.Models {
		if m == "" || strings.Contains(strings.TrimSuffix(m, "*"), "*") {
			bad("models[%d] %q: empty, or '*' not at the end", i, m)
		}
	}
	o := p.Output
	if o.MaxOutputBytes < 0 {
		bad("output.max_output_bytes: %d is negative", o.MaxOutputBytes)
	}
	if o.StreamWindow != 0 && (o.StreamWindow < MinStreamWindow || o.StreamWindow > MaxStreamWindow) {
		bad("output.stream_window: %d outside [%d, %d]", o.StreamWindow, MinStreamWindow, MaxStreamWindow)
	}
	return errors.Join(errs...)
}

// withDefaults returns p with zero fields replaced by their defaults.
func (p Policy) withDefaults() Policy {
	if p.DefaultAction == "" {
		p.DefaultAction = ActionRedact
	}
	if p.MinScore == 0 {
		p.MinScore = DefaultMinScore
	}
	if p.Block.PromptInjectionThreshold == 0 {
		p.Block.PromptInjectionThreshold = DefaultPromptInjectionThreshold
	}
	if p.Output.StreamWindow == 0 {
		p.Output.StreamWindow = DefaultStreamWindow
	}
	return p
}

// compilePattern compiles a block pattern, refusing patterns that match the empty string
// (they would block every request).
func compilePattern(expr string) (*regexp.Regexp, error) {
	if expr == "" {
		return nil, errors.New("regex is empty")
	}
	if len(expr) > maxRegexLen {
		return nil, fmt.Errorf("regex longer than %d bytes", maxRegexLen)
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, err
	}
	if re.MatchString("") {
		return nil, fmt.Errorf("regex %q matches the empty string", expr)
	}
	return re, nil
}

func validAction(a Action) bool { return slices.Contains(actions, a) }

func actionList() string {
	s := make([]string, len(actions))
	for i, a := range actions {
		s[i] = string(a)
	}
	return strings.Join(s, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
