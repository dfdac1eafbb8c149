package guard

import (
	"encoding/base64"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// injectionRule is one prompt-injection heuristic. Its triggers are the words a match starts
// with (lower-case literals, found case-insensitively in one pass of a keyword automaton for
// all rules); the expression then runs anchored at each trigger that starts a word, over at
// most injectionReach bytes, so ordinary text costs little more than that one pass. A match
// right after a negation ("don't forget the previous instructions") does not count.
type injectionRule struct {
	name      string
	weight    float64
	triggers  []string
	expr      string // RE2, case-insensitive, anchored at the trigger; "" means the trigger alone
	lineStart bool   // the trigger must begin its line (after spaces, '#' or '[')
}

// injectionRules are the heuristics and their weights. A text's score is the sum of the
// weights of the distinct rules that match it (in the text itself or in a base64 blob in it);
// the policy's threshold (default 1.0) blocks. Rules of weight >= 1 block alone; the others
// need company. Listed in README.md.
var injectionRules = []injectionRule{
	{"ignore_instructions", 1.0, ignoreVerbs,
		`(?:ignore|disregard|forget|override|bypass|skip)\s+` +
			`(?:(?:all|any|every|each)\s+(?:of\s+)?(?:(?:the|your|these|those|its|this)\s+)?(?:(?:` + priorWords + `)\s+)*` +
			`|(?:(?:the|your|these|those|its|this)\s+)?(?:(?:` + priorWords + `)\s+)+)` +
			`(?:` + ruleNouns + `)\b`, false},
	{"ignore_everything_above", 1.0, ignoreVerbs,
		`(?:ignore|disregard|forget)\s+(?:everything|anything|all|what)\s+(?:that\s+)?(?:above|before|prior|previously|earlier|you\s+(?:were|have\s+been|'ve\s+been)\s+(?:told|given))`, false},
	{"ignore_your_rules", 1.0, append([]string{"abandon", "drop"}, ignoreVerbs...),
		`(?:ignore|disregard|forget|override|bypass|abandon|drop)\s+(?:all\s+(?:of\s+)?)?your\s+(?:\w+\s+){0,2}(?:` + ruleNouns + `|system\s+prompt|programming|training|ethics|morals|filters)\b`, false},
	{"override_system_prompt", 0.6, append([]string{"overwrite", "circumvent", "get"}, ignoreVerbs...),
		`(?:ignore|disregard|forget|override|bypass|overwrite|circumvent|get\s+around)\b[^.\n]{0,40}?\b(?:system\s+(?:prompt|message)|guardrails?|safety\s+(?:rules|guidelines|filters|measures)|content\s+polic(?:y|ies))`, false},
	{"reveal_your_prompt", 1.0, revealVerbs,
		`(?:` + revealExpr + `|tell|give|share|write\s+out)\s+(?:me\s+|us\s+)?your\s+(?:(?:full|entire|exact|complete|original|initial|hidden|secret|verbatim|current|real)\s+)*(?:system\s+(?:prompt|message)|(?:initial|original|hidden|secret)\s+(?:prompt|instructions)|pre-?prompt|prompt|instructions)\b`, false},
	{"reveal_the_prompt", 0.6, revealVerbs,
		`(?:` + revealExpr + `)\s+(?:me\s+|us\s+)?the\s+(?:(?:full|entire|exact|complete|original|initial|hidden|secret|verbatim)\s+)*(?:system\s+(?:prompt|message)|(?:initial|hidden|secret)\s+(?:prompt|instructions)|pre-?prompt)\b`, false},
	{"repeat_text_above", 0.8, []string{"repeat", "print", "output", "echo", "recite", "copy"},
		`(?:repeat|print|output|echo|recite|copy)\s+(?:all\s+|everything\s+|verbatim\s+)?(?:(?:of\s+)?the\s+(?:text|words|content|lines|messages?|instructions)\s+)?(?:above|before\s+this)\b`, false},
	{"starts_with_you_are", 0.5, []string{"starting", "beginning", "begin", "start"},
		`(?:starting|beginning|begin|start)\s+with\s+["'“‘]?you\s+are\b`, false},
	{"dan_persona", 1.0, []string{"you", "act", "pretend", "become", "roleplay", "role-play"},
		`(?:you\s+are|you're|act\s+as|pretend\s+to\s+be|become|roleplay\s+as|role-play\s+as)\s+(?:now\s+)?(?:an?\s+)?(?:dan|stan|dude|aim|evil\s*(?:bot|ai|gpt)|jailbroken\s+\w+)\b`, false},
	{"do_anything_now", 1.0, []string{"do anything now"}, ``, false},
	{"jailbreak_mode", 1.0, []string{"god", "jailbreak", "unrestricted", "unfiltered", "uncensored", "dan", "evil", "chaos", "enable", "activate", "enter", "switch", "turn"},
		`(?:(?:god|jailbreak|jailbroken|unrestricted|unfiltered|uncensored|dan|evil|chaos)\s+mode\b|(?:enable|activate|enter|switch\s+to|turn\s+on)\s+(?:the\s+)?(?:god|jailbreak|unrestricted|unfiltered|uncensored|dan|evil)\s+mode\b)`, false},
	{"developer_mode", 0.5, []string{"developer", "dev", "enable", "activate", "enter", "simulate"},
		`(?:developer|dev)\s+mode\s+(?:is\s+)?(?:enabled|activated|on|engaged)\b|(?:enable|activate|enter|simulate)\s+(?:the\s+)?(?:developer|dev)\s+mode\b`, false},
	{"pretend_no_rules", 1.0, []string{"pretend", "imagine", "act", "assume"},
		`(?:pretend|imagine|act\s+as\s+if|act\s+like|assume)\s+(?:that\s+)?you\s+(?:are|have|were|had)\s+(?:no|not\s+bound\s+by|free\s+(?:of|from)|without|zero)\s+(?:any\s+)?(?:\w+\s+)?(?:restrictions|filters|rules|guidelines|limits|limitations|censorship|boundaries|ethics|morals|guardrails)\b`, false},
	{"no_longer_bound", 0.8, []string{"you"},
		`you\s+are\s+no\s+longer\s+(?:an?\s+)?(?:ai|assistant|chatbot|language\s+model|bound|restricted|limited|constrained|chatgpt|claude|gpt)\b`, false},
	{"unrestricted_persona", 0.8, []string{"act", "behave", "respond", "you"},
		`(?:act|behave|respond)\s+(?:as|like)\s+(?:an?\s+)?(?:unfiltered|unrestricted|uncensored|amoral|unethical|jailbroken)\b|you\s+are\s+now\s+(?:an?\s+)?(?:unfiltered|unrestricted|uncensored|amoral|unethical|jailbroken)\b`, false},
	{"without_restrictions", 0.3, []string{"without", "no", "free", "remove", "removing", "disable", "disabling"},
		`(?:without|no|free\s+(?:of|from)|remove|removing|disable|disabling)\s+(?:any\s+|all\s+|your\s+)?(?:ethical\s+|moral\s+|safety\s+|content\s+)?(?:restrictions|filters|filtering|censorship|limitations|guardrails)\b`, false},
	{"system_role_token", 1.0, []string{"<|im_start|>system", "<<sys>>", "<|system|>", "<|start_header_id|>system"}, ``, false},
	{"chat_template_token", 0.6, []string{"<|im_start|>", "<|im_end|>", "<|endoftext|>", "[inst]", "[/inst]", "<|eot_id|>", "<|start_header_id|>", "<|user|>", "<|assistant|>"}, ``, false},
	{"role_marker", 0.5, []string{"system", "assistant", "admin", "developer"},
		`(?:system|assistant|admin|developer)\]?[ \t]*:`, true},
	{"role_tag", 0.5, []string{"[system", "[admin"},
		`\[(?:system|admin)\s+(?:message|override|instruction)s?\]`, false},
	{"new_instructions", 0.5, []string{"new", "updated", "real", "actual", "revised", "true", "secret", "hidden"},
		`(?:new|updated|real|actual|revised|true|secret|hidden)\s+(?:system\s+)?instructions\s*:`, false},
	{"from_now_on", 0.4, []string{"from"},
		`from\s+now\s+on,?\s+(?:you\s+(?:will|must|are|shall|can|should)|act|respond|answer|behave|ignore)\b`, false},
	{"stay_in_character", 0.3, []string{"stay", "remain", "keep"},
		`(?:stay|remain|keep)\s+in\s+character\b`, false},
}

var (
	ignoreVerbs = []string{"ignore", "disregard", "forget", "override", "bypass", "skip"}
	revealVerbs = []string{"reveal", "show", "print", "output", "display", "repeat", "leak", "dump", "disclose", "tell", "give", "share", "write", "what"}
)

const (
	priorWords = `previous|prior|above|preceding|earlier|foregoing|former|original|initial|old|existing|system|developer|safety|hidden|given`
	ruleNouns  = `instructions?|prompts?|rules|guidelines|directions|directives|commands|guardrails|constraints|context|programming|orders|restrictions`
	revealExpr = `reveal|show|print|output|display|repeat|leak|dump|disclose|what\s+(?:is|are|was|were)`
	// injectionReach bounds the length of a match.
	injectionReach = 128
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
			in.res[i] = regexp.MustCompile(`(?i)^(?:` + r.expr + `)`)
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
	in.triggers.find(text, func(rule, s, _ int) bool {
		bit := uint64(1) << rule
		if *hit&bit != 0 || isWordRuneAt(text, s) && isWordRuneBefore(text, s) {
			return true
		}
		r := &injectionRules[rule]
		if r.lineStart && !atLineStart(text, s) || negated(text, s) {
			return true
		}
		if re := in.res[rule]; re == nil || re.MatchString(text[s:min(len(text), s+injectionReach)]) {
			*hit |= bit
		}
		return true
	})
}

// atLineStart reports whether only spaces, tabs, '#' and '[' precede i on its line.
func atLineStart(text string, i int) bool {
	for i > 0 {
		switch text[i-1] {
		case '\n':
			return true
		case ' ', '\t', '#', '[':
			i--
		default:
			return false
		}
	}
	return true
}

// negations void a match that follows them: "don't forget the previous instructions".
var negations = []string{"don't", "dont", "don’t", "do not", "never", "not to", "shouldn't", "should not",
	"won't", "will not", "can't", "cannot", "must not", "mustn't"}

// negated reports whether text[:i] ends with a negation and white space.
func negated(text string, i int) bool {
	j := i
	for j > 0 && isSpace(text[j-1]) {
		j--
	}
	if j == i {
		return false
	}
	before := text[max(0, j-12):j]
	for _, n := range negations {
		if len(before) >= len(n) && strings.EqualFold(before[len(before)-len(n):], n) &&
			(len(before) == len(n) || !isWordRuneBefore(before, len(before)-len(n))) {
			return true
		}
	}
	return false
}

// detail renders a score for a block finding.
func (s injectionScore) detail(threshold float64) string {
	return fmt.Sprintf("score %.2f >= %.2f: %s", s.score, threshold, strings.Join(s.rules, ", "))
}

// forEachBase64 calls f with each run of at least b64MinLen base64 characters (standard or
// URL alphabet, optional padding) that mixes lower-case letters with upper-case letters or
// digits (plain words and numbers are not worth decoding), until f returns false.
func forEachBase64(text string, f func(string) bool) {
	for i := 0; i < len(text); {
		if b64Class[text[i]] == 0 {
			i++
			continue
		}
		j := i
		var seen uint8
		for j < len(text) && b64Class[text[j]] != 0 {
			seen |= b64Class[text[j]]
			j++
		}
		for j < len(text) && text[j] == '=' {
			j++
		}
		if j-i >= b64MinLen && j-i <= b64MaxLen && seen&b64Lower != 0 && seen&b64Other != 0 && !f(text[i:j]) {
			return
		}
		i = j
	}
}

const (
	b64Lower = 1 << iota // a-z
	b64Other             // A-Z, 0-9
	b64Punct             // + / - _
)

var b64Class = func() (t [256]uint8) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = b64Lower
		t[c-'a'+'A'] = b64Other
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = b64Other
	}
	for _, c := range "+/-_" {
		t[c] = b64Punct
	}
	return t
}()

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
