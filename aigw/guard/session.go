package guard

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/edgewan/edgewan/aigw/detect"
)

// Session holds one request's state: placeholder numbering shared by all its texts (every
// chat message, then the response) and the running input and output sizes. Within a session
// the same value (after normalize) always gets the same placeholder or hash, and placeholders
// of a type are numbered 1, 2, ... in order of first appearance. A Session is not safe for
// concurrent use.
type Session struct {
	g        *Guard
	seen     map[string]string // type + "\x00" + normalized value -> placeholder or hash
	counts   map[string]int    // placeholders issued per type
	inBytes  int
	outBytes int
	grown    int             // bytes replacements added over the values they replaced
	ents     []detect.Entity // scratch
	// With Policy.Reversible: placeholder -> original value, for the placeholders issued for
	// input texts (restore.go). Memory only, for this request.
	originals map[string]string
	maxPH     int  // the longest placeholder in originals
	input     bool // Input is running: its placeholders may be restored
	jsonIn    bool // InputJSON is running: values are JSON string content, stored unescaped
}

// NewSession starts the checks of one request.
func (g *Guard) NewSession() *Session {
	return &Session{g: g}
}

// Input checks one input text (a chat message, a document, the text to sanitize): it applies
// the entity actions and every block rule. The size limit counts all inputs of the session
// and is checked before the text is read: an oversized text yields an empty Text.
func (s *Session) Input(text string) Result {
	s.input = true
	defer func() { s.input = false }()
	g := s.g
	s.inBytes += len(text)
	if limit := g.policy.Block.MaxInputBytes; limit > 0 && s.inBytes > limit {
		return tooLarge("max_input_bytes", "input", s.inBytes, limit)
	}
	var r Result
	var hits []entityHit
	r.Text, r.Redactions, hits = s.redactText(text)
	r.Findings = appendEntityFindings(r.Findings, hits)
	r.Findings = g.blockRules(text, 0, r.Findings)
	if g.injection != nil {
		if sc := g.injection.score(text); sc.score >= g.injection.threshold {
			r.Findings = append(r.Findings, Finding{Rule: "prompt_injection", Kind: KindPromptInjection,
				Detail: sc.detail(g.injection.threshold)})
		}
	}
	r.Blocked = len(r.Findings) > 0
	return r
}

// Output checks a model response: the entity actions apply unless the policy's output checks
// skip them, block rules (patterns, keywords, entities whose action is block) only with
// Output.Block, and the size limit counts all outputs of the session.
func (s *Session) Output(text string) Result {
	g := s.g
	o := g.policy.Output
	s.outBytes += len(text)
	if o.MaxOutputBytes > 0 && s.outBytes > o.MaxOutputBytes {
		return tooLarge("max_output_bytes", "output", s.outBytes, o.MaxOutputBytes)
	}
	r := Result{Text: text, Redactions: []Redaction{}}
	var hits []entityHit
	if !o.SkipEntities {
		r.Text, r.Redactions, hits = s.redactText(text)
	}
	if o.Block {
		r.Findings = appendEntityFindings(r.Findings, hits)
		r.Findings = g.blockRules(text, 0, r.Findings)
	}
	r.Blocked = len(r.Findings) > 0
	return r
}

func tooLarge(rule, what string, n, limit int) Result {
	return Result{Blocked: true, Redactions: []Redaction{}, Findings: []Finding{{Rule: rule, Kind: KindMaxSize,
		Detail: fmt.Sprintf("%s of %d bytes exceeds the limit of %d", what, n, limit)}}}
}

// scan returns the entities of text that reach the policy's MinScore. The slice is reused by
// the next call.
func (s *Session) scan(text string) []detect.Entity {
	ents := s.g.engine.AppendScan(s.ents[:0], text)
	k := 0
	for _, e := range ents {
		if e.Score >= s.g.policy.MinScore {
			ents[k] = e
			k++
		}
	}
	s.ents = ents[:k]
	return s.ents
}

// redactText scans text and applies the entity actions.
func (s *Session) redactText(text string) (string, []Redaction, []entityHit) {
	ents := s.scan(text)
	if len(ents) == 0 {
		return text, []Redaction{}, nil
	}
	var b strings.Builder
	b.Grow(len(text) + 16*len(ents))
	reds := make([]Redaction, 0, len(ents))
	var hits []entityHit
	last := 0
	for _, e := range ents {
		b.WriteString(text[last:e.Start])
		red, hit := s.redact(e, 0)
		reds = append(reds, red)
		hits = appendHit(hits, red, hit)
		if red.Action == ActionAllow {
			b.WriteString(e.Text)
		} else {
			b.WriteString(red.Replacement)
		}
		last = e.End
	}
	b.WriteString(text[last:])
	return b.String(), reds, hits
}

// redact decides the replacement of one entity; base is added to its offsets. hit reports
// that the entity's action is block.
func (s *Session) redact(e detect.Entity, base int) (Redaction, bool) {
	a := s.g.action(e.Type)
	red := Redaction{Type: e.Type, Subtype: e.Subtype, Action: a, Start: base + e.Start, End: base + e.End, Score: e.Score}
	switch a {
	case ActionAllow:
	case ActionMask:
		red.Replacement = mask(e.Type, e.Subtype, e.Text)
	default: // redact, block, hash
		red.Replacement = s.replacement(e.Type, e.Text, a)
	}
	if g := len(red.Replacement) - len(e.Text); g > 0 {
		if s.grown+g > s.growthBudget() {
			red.Replacement = maskAll(e.Text)
		} else {
			s.grown += g
		}
	}
	if a == ActionRedact && s.input && s.g.policy.Reversible && strings.HasPrefix(red.Replacement, "[") {
		s.remember(red.Replacement, e.Text)
	}
	return red, a == ActionBlock
}

// Growth bounds what replacements may add to a session's texts: MaxGrowthBase bytes plus
// 1/MaxGrowthDiv of the texts' size. A placeholder is longer than a short value ("a@b.co"
// becomes "[EMAIL_74512]"), so a text made of nothing but entities would otherwise grow
// about 2-3 times, and the redaction cost and the response size with it. Past the budget,
// values are masked in place ('*' for every non-space character): still hidden, no longer
// numbered, and no longer than the value.
const (
	MaxGrowthBase = 4 << 10
	MaxGrowthDiv  = 4
)

func (s *Session) growthBudget() int { return MaxGrowthBase + (s.inBytes+s.outBytes)/MaxGrowthDiv }

// maskAll replaces every non-space character of a value with '*'.
func maskAll(text string) string {
	return maskWith(text, make([]bool, len(text)), func(r rune) bool { return !unicode.IsSpace(r) })
}

// replacement returns the placeholder or hash of a value, issuing a new one on first sight.
func (s *Session) replacement(typ, text string, a Action) string {
	norm := normalize(typ, text)
	key := typ + "\x00" + norm
	if r, ok := s.seen[key]; ok {
		return r
	}
	if s.seen == nil {
		s.seen = map[string]string{}
		s.counts = map[string]int{}
	}
	var r string
	if a == ActionHash {
		r = hashTag(s.g.key, typ, norm)
	} else {
		s.counts[typ]++
		r = placeholder(typ, s.counts[typ])
	}
	s.seen[key] = r
	return r
}

// entityHit counts the entities of one type whose action is block.
type entityHit struct {
	typ        string
	n          int
	start, end int // the first one
}

func appendHit(hits []entityHit, red Redaction, hit bool) []entityHit {
	if !hit {
		return hits
	}
	for i := range hits {
		if hits[i].typ == red.Type {
			hits[i].n++
			return hits
		}
	}
	return append(hits, entityHit{red.Type, 1, red.Start, red.End})
}

func appendEntityFindings(findings []Finding, hits []entityHit) []Finding {
	for _, h := range hits {
		findings = append(findings, Finding{Rule: "entities." + h.typ, Kind: KindEntity,
			Detail: fmt.Sprintf("%d %s (first at bytes %d-%d)", h.n, h.typ, h.start, h.end)})
	}
	return findings
}
