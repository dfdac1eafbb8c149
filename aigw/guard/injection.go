package guard

import (
	"encoding/base64"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// injectionRule is one prompt-injection heuristic. Rules are tried only when one of their
// triggers (lower-case literals, matched case-insensitively anywhere) occurs, so ordinary text
// costs one pass of a keyword automaton. A match preceded by a negation ("don't forget the
// previous instructions") does not count.
type injectionRule struct {
	name     string
	weight   float64
	triggers []string
	expr     string // RE2, compiled case-insensitively; "" means a trigger alone is a match
}

// injectionRules are the heuristics and their weights. A text's score is the sum of the
// weights of the distinct rules that match it (in the text itself or in a base64 blob in it);
// the policy's threshold (default 1.0) blocks. Rules of weight >= 1 block alone; the others
// need company. Listed in README.md.
var injectionRules = []injectionRule{
	{"ignore_instructions", 1.0, []string{"ignore", "disregard", "forget", "override", "bypass", "skip"},
		`\b(?:ignore|disregard|forget|override|bypass|skip)\s+` +
			`(?:(?:all|any|every|each)\s+(?:of\s+)?(?:(?:the|your|these|those|its|this)\s+)?(?:(?:` + priorWords + `)\s+)*` +
			`|(?:(?:the|your|these|those|its|this)\s+)?(?:(?:` + priorWords + `)\s+)+)` +
			`(?:` + ruleNouns + `)\b`},
	{"ignore_everything_above", 1.0, []string{"ignore", "disregard", "forget"},
		`\b(?:ignore|disregard|forget)\s+(?:everything|anything|all|what)\s+(?:that\s+)?(?:above|before|prior|previously|earlier|you\s+(?:were|have\s+been|'ve\s+been)\s+(?:told|given))`},
	{"ignore_your_rules", 1.0, []string{"your"},
		`\b(?:ignore|disregard|forget|override|bypass|abandon|drop)\s+(?:all\s+(?:of\s+)?)?your\s+(?:\w+\s+){0,2}(?:` + ruleNouns + `|system\s+prompt|programming|training|restrictions|ethics|morals|filters)\b`},
	{"override_system_prompt", 0.6, []string{"system prompt", "system message", "guardrail", "content polic", "safety"},
		`\b(?:ignore|disregard|forget|override|bypass|overwrite|circumvent|get\s+around)\b[^.\n]{0,40}?\b(?:system\s+(?:prompt|message)|guardrails?|safety\s+(?:rules|guidelines|filters|measures)|content\s+polic(?:y|ies))`},
	{"reveal_your_prompt", 1.0, []string{"prompt", "system message", "instructions"},
		`\b(?:reveal|show|print|output|display|repeat|leak|dump|disclose|tell|give|share|write\s+out|what\s+(?:is|are|was|were))\s+(?:me\s+|us\s+)?your\s+(?:(?:full|entire|exact|complete|original|initial|hidden|secret|verbatim|current|real)\s+)*(?:system\s+(?:prompt|message)|(?:initial|original|hidden|secret)\s+(?:prompt|instructions)|pre-?prompt|prompt|instructions)\b`},
	{"reveal_the_prompt", 0.6, []string{"prompt", "system message"},
		`\b(?:reveal|show|print|output|display|repeat|leak|dump|disclose|what\s+(?:is|are|was|were))\s+(?:me\s+|us\s+)?the\s+(?:(?:full|entire|exact|complete|original|initial|hidden|secret|verbatim)\s+)*(?:system\s+(?:prompt|message)|(?:initial|hidden|secret)\s+(?:prompt|instructions)|pre-?prompt)\b`},
	{"repeat_text_above", 0.8, []string{"above", "before this"},
		`\b(?:repeat|print|output|echo|recite|copy)\s+(?:all\s+|everything\s+|verbatim\s+)?(?:(?:of\s+)?the\s+(?:text|words|content|lines|messages?|instructions)\s+)?(?:above|before\s+this)\b`},
	{"starts_with_you_are", 0.5, []string{"you are"},
		`\b(?:starting|beginning|begin|start)\s+with\s+["'“‘]?you\s+are\b`},
	{"dan_persona", 1.0, []string{"dan", "stan", "dude", "aim", "jailbr", "evil"},
		`\b(?:you\s+are|you're|act\s+as|pretend\s+to\s+be|become|roleplay\s+as|role-play\s+as)\s+(?:now\s+)?(?:an?\s+)?(?:dan|stan|dude|aim|evil\s*(?:bot|ai|gpt)|jailbroken\s+\w+)\b`},
	{"do_anything_now", 1.0, []string{"do anything now"}, ``},
	{"jailbreak_mode", 1.0, []string{"mode"},
		`\b(?:(?:god|jailbreak|jailbroken|unrestricted|unfiltered|uncensored|dan|evil|chaos)\s+mode\b|(?:enable|activate|enter|switch\s+to|turn\s+on)\s+(?:the\s+)?(?:god|jailbreak|unrestricted|unfiltered|uncensored|dan|evil)\s+mode\b)`},
	{"developer_mode", 0.5, []string{"developer mode", "dev mode"},
		`\b(?:developer|dev)\s+mode\s+(?:is\s+)?(?:enabled|activated|on|engaged)\b|\b(?:enable|activate|enter|simulate)\s+(?:the\s+)?(?:developer|dev)\s+mode\b`},
	{"pretend_no_rules", 1.0, []string{"pretend", "imagine", "act as if", "assume"},
		`\b(?:pretend|imagine|act\s+as\s+if|act\s+like|assume)\s+(?:that\s+)?you\s+(?:are|have|were|had)\s+(?:no|not\s+bound\s+by|free\s+(?:of|from)|without|zero)\s+(?:any\s+)?(?:\w+\s+)?(?:restrictions|filters|rules|guidelines|limits|limitations|censorship|boundaries|ethics|morals|guardrails)\b`},
	{"no_longer_bound", 0.8, []string{"no longer"},
		`\byou\s+are\s+no\s+longer\s+(?:an?\s+)?(?:ai|assistant|chatbot|language\s+model|bound|restricted|limited|constrained|chatgpt|claude|gpt)\b`},
	{"unrestricted_persona", 0.8, []string{"act as", "you are now", "behave as"},
		`\b(?:act|behave|respond)\s+(?:as|like)\s+(?:an?\s+)?(?:unfiltered|unrestricted|uncensored|amoral|unethical|jailbroken)\b|\byou\s+are\s+now\s+(?:an?\s+)?(?:unfiltered|unrestricted|uncensored|amoral|unethical|jailbroken|free)\b`},
	{"without_restrictions", 0.3, []string{"restriction", "filter", "censor", "guardrail", "limitation"},
		`\b(?:without|no|free\s+(?:of|from)|remove|removing|disable|disabling)\s+(?:any\s+|all\s+|your\s+)?(?:ethical\s+|moral\s+|safety\s+|content\s+)?(?:restrictions|filters|filtering|censorship|limitations|guardrails)\b`},
	{"system_role_token", 1.0, []string{"<|im_start|>system", "<<sys>>", "<|system|>", "<|start_header_id|>system"}, ``},
	{"chat_template_token", 0.6, []string{"<|im_start|>", "<|im_end|>", "<|endoftext|>", "[inst]", "[/inst]", "<|eot_id|>", "<|start_header_id|>", "<|user|>", "<|assistant|>"}, ``},
	{"role_marker", 0.5, []string{"system", "assistant", "admin", "developer"},
		`(?m)^[ \t]*(?:#{1,4}\s*)?\[?(?:system|assistant|admin|developer)\]?\s*:|\[(?:system|admin)\s+(?:message|override|instruction)s?\]`},
	{"new_instructions", 0.5, []string{"instructions"},
		`\b(?:new|updated|real|actual|revised|true|secret|hidden)\s+(?:system\s+)?instructions\s*:`},
	{"from_now_on", 0.4, []string{"from now on"},
		`\bfrom\s+now\s+on,?\s+(?:you\s+(?:will|must|are|shall|can|should)|act|respond|answer|behave|ignore)\b`},
	{"stay_in_character", 0.3, []string{"in character"},
		`\b(?:stay|remain|keep)\s+in\s+character\b`},
}

const (
	priorWords = `previous|prior|above|preceding|earlier|foregoing|former|original|initial|old|existing|system|developer|safety|hidden|given`
	ruleNouns  = `instructions?|prompts?|rules|guidelines|directions|directives|commands|guardrails|constraints|context|programming|orders|restrictions`
	// negation before a match voids it: "don't forget the previous instructions".
	negation = `(?:\b(don't|dont|don’t|do\s+not|never|not\s+to|shouldn't|should\s+not|won't|will\s+not|can't|cannot)\s+)?`
	// base64 blobs: runs this long are decoded and scored too (one level, bounded).
	b64MinLen   = 24
	b64MaxBlobs = 8
	b64MaxLen   = 8192
)

// injector scores texts with injectionRules.
type injector struct {
	threshold float64
	triggers  *matcher
	res       []*regexp.Regexp // per rule; nil: the trigger is the match
}

func newInjector(threshold float64) *injector {
	in := &injector{threshold: threshold, res: make([]*regexp.Regexp, len(injectionRules))}
	var words []string
	var ids []int
	for i, r := range injectionRules {
		if r.expr != "" {
			in.res[i] = regexp.MustCompile(`(?i)` + negation + `(?:` + r.expr + `)`)
		}
		for _, t := range r.triggers {
			words = append(words, t)
			ids = append(ids, i)
		}
	}
	in.triggers = newMatcher(words, ids, true)
	return in
}

// injectionScore is the outcome of scoring one text.
type injectionScore struct {
	score float64
	rules []string
}

// score returns the text's score and the names of the rules that matched.
func (in *injector) score(text string) injectionScore {
	var hit uint64 // rules matched; len(injectionRules) <= 64
	in.scan(text, &hit)
	blobs := 0
	forEachBase64(text, func(blob string) bool {
		if dec, ok := decodeBase64Text(blob); ok {
			in.scan(dec, &hit)
		}
		blobs++
		return blobs < b64MaxBlobs
	})
	var s injectionScore
	for i, r := range injectionRules {
		if hit&(1<<i) != 0 {
			s.score += r.weight
			s.rules = append(s.rules, r.name)
		}
	}
	return s
}

// scan sets the bits of the rules matching text.
func (in *injector) scan(text string, hit *uint64) {
	var tried uint64
	in.triggers.find(text, func(rule, _, _ int) bool {
		bit := uint64(1) << rule
		if tried&bit != 0 {
			return true
		}
		tried |= bit
		re := in.res[rule]
		if re == nil {
			*hit |= bit
			return true
		}
		for _, m := range re.FindAllStringSubmatchIndex(text, -1) {
			if m[2] < 0 { // no negation before it
				*hit |= bit
				break
			}
		}
		return true
	})
}

// detail renders a score for a block finding.
func (s injectionScore) detail(threshold float64) string {
	return fmt.Sprintf("score %.2f >= %.2f: %s", s.score, threshold, strings.Join(s.rules, ", "))
}

// forEachBase64 calls f with each run of at least b64MinLen base64 characters (standard or
// URL alphabet, optional padding) until f returns false.
func forEachBase64(text string, f func(string) bool) {
	for i := 0; i < len(text); {
		if !isB64(text[i]) {
			i++
			continue
		}
		j := i
		lower, other := false, false // plain words and numbers are not worth decoding
		for j < len(text) && isB64(text[j]) {
			c := text[j]
			lower = lower || 'a' <= c && c <= 'z'
			other = other || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
			j++
		}
		for j < len(text) && text[j] == '=' {
			j++
		}
		if j-i >= b64MinLen && j-i <= b64MaxLen && lower && other && !f(text[i:j]) {
			return
		}
		i = j
	}
}

func isB64(c byte) bool {
	return isASCIIAlnum(c) || c == '+' || c == '/' || c == '-' || c == '_'
}

// decodeBase64Text decodes blob and reports whether it is mostly printable text.
func decodeBase64Text(blob string) (string, bool) {
	blob = strings.TrimRight(blob, "=")
	enc := base64.RawStdEncoding
	if strings.ContainsAny(blob, "-_") {
		enc = base64.RawURLEncoding
	}
	if len(blob)%4 == 1 { // not a whole number of bytes: drop the extra character
		blob = blob[:len(blob)-1]
	}
	dec, err := enc.DecodeString(blob)
	if err != nil || !utf8.Valid(dec) {
		return "", false
	}
	printable := 0
	for _, c := range dec {
		if c >= 0x20 && c < 0x7f || c == '\n' || c == '\t' || c >= 0x80 {
			printable++
		}
	}
	return string(dec), printable*10 >= len(dec)*9
}
