// Package guard applies a project's policy to the text passing through the AI gateway: entity
// actions, block rules, the model allow-list and output checks, for whole texts and streams.
// It is pure logic: no I/O.
package guard

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"strings"

	"github.com/edgewan/edgewan/aigw/detect"
)

// Finding kinds: which sort of block rule fired.
const (
	KindRegex           = "regex"
	KindKeyword         = "keyword"
	KindEntity          = "entity"
	KindPromptInjection = "prompt_injection"
	KindMaxSize         = "max_size"
)

// Finding is a block rule that fired. Detail never quotes the user's text: it gives byte
// offsets, the policy's own keyword, or the heuristics that matched.
type Finding struct {
	Rule   string `json:"rule"`   // pattern or keyword rule name, "entities.<type>", "prompt_injection", "max_input_bytes", "max_output_bytes"
	Kind   string `json:"kind"`   // one of the Kind constants
	Detail string `json:"detail"` // what matched, and where
}

// Redaction is one entity found in a text and what was done with it. It does not hold the
// original value; Start and End locate it in the text given to Input or Output (or in the
// whole stream, for a StreamRedactor).
type Redaction struct {
	Type        string  `json:"type"`
	Subtype     string  `json:"subtype,omitempty"`
	Action      Action  `json:"action"`
	Replacement string  `json:"replacement,omitempty"` // placeholder, mask or hash; empty for allow
	Start       int     `json:"start"`
	End         int     `json:"end"`
	Score       float64 `json:"score"`
}

// Result is the outcome of checking one text.
type Result struct {
	// Text is the text with the entity actions applied; it is what may be forwarded (unless
	// Blocked) and what audit logs may store. Empty when a size limit refused the text
	// before it was read.
	Text       string      `json:"text"`
	Redactions []Redaction `json:"redactions"` // never nil, so that JSON shows []
	// Blocked is true when a block rule fired: refuse the request (HTTP 422) or stop the
	// response.
	Blocked  bool      `json:"blocked"`
	Findings []Finding `json:"findings,omitempty"`
}

// Guard is a compiled policy. It is safe for concurrent use; per-request state lives in a
// Session.
type Guard struct {
	policy    Policy // with defaults
	engine    *detect.Engine
	key       []byte
	patterns  []pattern
	keywords  []KeywordRule
	kwWords   []kwWord  // matcher ids below len(kwWords); the ids above are patterns' literals
	literals  *matcher  // keywords and the patterns' required literals, in one folded pass
	injection *injector // nil when disabled
}

type pattern struct {
	name     string
	re       *regexp.Regexp
	filtered bool // runs only when one of its required literals occurs
}

type kwWord struct {
	rule  int
	word  string
	exact bool // case-sensitive: the folded match must also be equal
}

// MinHashKeyLen is the shortest hash key New accepts for a policy that hashes.
const MinHashKeyLen = 16

// New compiles p. engine finds the entities; nil builds one for p (all types, p's MinScore).
// An engine shared between policies must be built with a MinScore no higher than theirs
// (0.01 is fine): the guard drops entities below the policy's MinScore itself, and because
// the engine resolves overlaps greedily by score, filtering afterwards gives the same
// entities as an engine built with that threshold. hashKey is the project's secret for the
// hash action, at least MinHashKeyLen bytes when the policy hashes; it is copied.
func New(p Policy, engine *detect.Engine, hashKey []byte) (*Guard, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("guard.New: %w", err)
	}
	p = p.withDefaults()
	p.Entities = maps.Clone(p.Entities) // the caller may reuse its map
	if engine == nil {
		var err error
		if engine, err = detect.New(detect.Options{MinScore: p.MinScore}); err != nil {
			return nil, fmt.Errorf("guard.New: %w", err)
		}
	}
	g := &Guard{policy: p, engine: engine, key: append([]byte(nil), hashKey...)}
	if g.usesHash() && len(hashKey) < MinHashKeyLen {
		return nil, fmt.Errorf("guard.New: the policy hashes entities but the hash key has %d bytes (want >= %d)", len(hashKey), MinHashKeyLen)
	}
	g.keywords = p.Block.Keywords
	var words []string
	var ids []int
	for i, r := range p.Block.Keywords {
		for _, w := range r.Words {
			words, ids = append(words, w), append(ids, len(g.kwWords))
			g.kwWords = append(g.kwWords, kwWord{rule: i, word: w, exact: !r.CaseInsensitive})
		}
	}
	for _, r := range p.Block.Patterns {
		re, err := compilePattern(r.Regex)
		if err != nil { // Validate compiled it already
			return nil, fmt.Errorf("guard.New: block pattern %q: %w", r.Name, err)
		}
		lits := requiredLiterals(r.Regex)
		for _, l := range lits {
			words, ids = append(words, l), append(ids, len(g.kwWords)+len(g.patterns))
		}
		g.patterns = append(g.patterns, pattern{r.Name, re, lits != nil})
	}
	g.literals = newMatcher(words, ids, true)
	if p.Block.PromptInjection {
		g.injection = newInjector(p.Block.PromptInjectionThreshold)
	}
	return g, nil
}

// Policy returns a copy of the compiled policy, with defaults filled in.
func (g *Guard) Policy() Policy {
	p := g.policy
	p.Entities = maps.Clone(p.Entities)
	return p
}

// action returns the action for an entity type.
func (g *Guard) action(typ string) Action {
	if a, ok := g.policy.Entities[typ]; ok {
		return a
	}
	return g.policy.DefaultAction
}

func (g *Guard) usesHash() bool {
	if g.policy.DefaultAction == ActionHash {
		return true
	}
	for _, a := range g.policy.Entities {
		if a == ActionHash {
			return true
		}
	}
	return false
}

// AllowModel reports whether the policy's allow-list admits model: an empty list admits every
// model, an entry ending in '*' admits every name with that prefix, others must be equal.
func (g *Guard) AllowModel(model string) bool {
	if len(g.policy.Models) == 0 {
		return true
	}
	for _, m := range g.policy.Models {
		if p, ok := strings.CutSuffix(m, "*"); ok && strings.HasPrefix(model, p) || m == model {
			return true
		}
	}
	return false
}

// ErrModelNotAllowed is returned by CheckModel for a model outside the allow-list.
var ErrModelNotAllowed = errors.New("model not allowed by the project's policy")

// CheckModel returns ErrModelNotAllowed (wrapped, naming the model) unless AllowModel(model).
func (g *Guard) CheckModel(model string) error {
	if !g.AllowModel(model) {
		return fmt.Errorf("guard: %q: %w", model, ErrModelNotAllowed)
	}
	return nil
}

// blockRules appends the findings of the pattern and keyword rules on text; off is added to
// the offsets they report.
func (g *Guard) blockRules(text string, off int, findings []Finding) []Finding {
	var maybe, fired []bool // per pattern: a required literal occurs; per keyword rule: fired
	nk := len(g.kwWords)
	g.literals.find(text, func(id, start, end int) bool {
		if id >= nk {
			if maybe == nil {
				maybe = make([]bool, len(g.patterns))
			}
			maybe[id-nk] = true
			return true
		}
		w := g.kwWords[id]
		r := g.keywords[w.rule]
		if fired != nil && fired[w.rule] || w.exact && text[start:end] != w.word ||
			!r.Substring && !wholeWord(text, start, end) {
			return true
		}
		if fired == nil {
			fired = make([]bool, len(g.keywords))
		}
		fired[w.rule] = true
		findings = append(findings, Finding{Rule: r.Name, Kind: KindKeyword,
			Detail: fmt.Sprintf("word %q at bytes %d-%d", w.word, off+start, off+end)})
		return true
	})
	for i, p := range g.patterns {
		if p.filtered && (maybe == nil || !maybe[i]) {
			continue
		}
		if loc := p.re.FindStringIndex(text); loc != nil {
			findings = append(findings, Finding{Rule: p.name, Kind: KindRegex,
				Detail: fmt.Sprintf("match at bytes %d-%d", off+loc[0], off+loc[1])})
		}
	}
	return findings
}
