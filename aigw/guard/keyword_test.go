package guard

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// naiveFind is the reference for matcher.find: every occurrence of every word, by brute force.
func naiveFind(words []string, text string, fold bool) []string {
	var out []string
	for id, w := range words {
		for i := 0; i < len(text); i++ {
			for j := i + 1; j <= len(text); j++ {
				a, b := text[i:j], w
				if fold {
					a, b = foldString(a), foldString(b)
				}
				if a == b {
					out = append(out, fmt.Sprintf("%d@%d-%d", id, i, j))
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

func matcherFind(m *matcher, text string) []string {
	var out []string
	m.find(text, func(id, start, end int) bool {
		out = append(out, fmt.Sprintf("%d@%d-%d", id, start, end))
		return true
	})
	slices.Sort(out)
	return out
}

func TestMatcher(t *testing.T) {
	tests := []struct {
		name  string
		words []string
		text  string
		fold  bool
		want  []string
	}{
		{"overlapping", []string{"he", "she", "his", "hers"}, "ushers", false, []string{"0@2-4", "1@1-4", "3@2-6"}},
		{"case sensitive", []string{"Secret"}, "secret Secret", false, []string{"0@7-13"}},
		{"ascii fold", []string{"Secret"}, "SECRET secret", true, []string{"0@0-6", "0@7-13"}},
		{"kelvin sign folds to k", []string{"kit"}, "\u212Ait", true, []string{"0@0-5"}},
		{"long s folds to s", []string{"ss"}, "ſS", true, []string{"0@0-3"}},
		{"non-ascii fold", []string{"straße"}, "STRASSE Straße STRAẞE", true, []string{"0@16-24", "0@8-15"}},
		{"invalid utf-8 is opaque", []string{"ab"}, "\xffab\xfe", true, []string{"0@1-3"}},
		{"duplicate words", []string{"x", "x"}, "x", false, []string{"0@0-1", "1@0-1"}},
		{"no words", nil, "anything", false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ids := make([]int, len(tt.words))
			for i := range ids {
				ids[i] = i
			}
			got := matcherFind(newMatcher(tt.words, ids, tt.fold), tt.text)
			if !slices.Equal(got, tt.want) {
				t.Errorf("find(%q) = %v; want %v", tt.text, got, tt.want)
			}
		})
	}
}

// TestMatcherRandom compares the automaton with brute force on random words and texts over a
// small alphabet (so that matches and failure transitions are frequent).
func TestMatcherRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "b", "A", "B", "é", "É", " ", "\xff"}
	gen := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		return b.String()
	}
	for _, fold := range []bool{false, true} {
		t.Run(fmt.Sprintf("fold=%v", fold), func(t *testing.T) {
			for range 300 {
				words := make([]string, 1+rng.IntN(6))
				ids := make([]int, len(words))
				for i := range words {
					words[i] = strings.ToValidUTF8(gen(1+rng.IntN(4)), "a")
					ids[i] = i
				}
				text := gen(rng.IntN(40))
				m := newMatcher(words, ids, fold)
				want := naiveFind(words, text, fold)
				if got := matcherFind(m, text); !slices.Equal(got, want) {
					t.Fatalf("words %q text %q: got %v; want %v", words, text, got, want)
				}
				m.dfa = nil // the failure-link walk used for large word lists
				if got := matcherFind(m, text); !slices.Equal(got, want) {
					t.Fatalf("without DFA: words %q text %q: got %v; want %v", words, text, got, want)
				}
			}
		})
	}
}

func TestWholeWord(t *testing.T) {
	tests := []struct {
		text       string
		start, end int
		want       bool
	}{
		{"the bomb here", 4, 8, true},
		{"bombastic", 0, 4, false},
		{"a-bomb.", 2, 6, true},
		{"xbomb", 1, 5, false},
		{"c++ rocks", 0, 3, true},
		{"abc++", 2, 5, false},
		{"Müllerbomb", 7, 11, false},
		{"über", 0, 5, true},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			if got := wholeWord(tt.text, tt.start, tt.end); got != tt.want {
				t.Errorf("wholeWord(%q, %d, %d) = %v; want %v", tt.text, tt.start, tt.end, got, tt.want)
			}
		})
	}
}

func TestRequiredLiterals(t *testing.T) {
	tests := []struct {
		expr string
		want []string
	}{
		{`(?i)\bproject\s+falcon\b`, []string{"project"}},
		{`(?i)\bproject\s+(?:falcon|osprey|kestrel)\b`, []string{"project"}},
		{`\b[a-z0-9-]+\.corp\.example\.net\b`, []string{".corp.example.net"}},
		{`arn:aws:iam::\d{12}:`, []string{"arn:aws:iam::"}},
		{`(?:secret|confidential)-\d+`, []string{"confidential", "secret"}},
		{`(?:ab)+x`, []string{"ab"}},
		{`(?:abc)?\d+`, nil},
		{`a|\d`, nil},
		{`\d{3}-\d{2}`, nil},
		{`x`, nil}, // too short to help
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			var got []string // folded literals are upper case
			for _, l := range requiredLiterals(tt.expr) {
				got = append(got, strings.ToLower(l))
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("requiredLiterals(%q) = %q; want %q", tt.expr, got, tt.want)
			}
		})
	}
}

// TestPrefilterKeepsMatches checks that patterns with and without a prefilter find the same
// texts, including case variants the prefilter must not miss.
func TestPrefilterKeepsMatches(t *testing.T) {
	exprs := []string{`(?i)\bproject\s+falcon\b`, `(?i)straße\s+\d+`, `KEY-[0-9]{4}`, `(?i)k\w+n`}
	texts := []string{"PROJECT  Falcon", "project falcon", "STRASSE 5", "STRAẞE 12", "Straße 1", "key-1234", "KEY-1234", "\u212Aelvin", "nothing here"}
	for _, e := range exprs {
		g := newGuard(t, Policy{Block: BlockRules{Patterns: []PatternRule{{Name: "p", Regex: e}}}})
		re := regexp.MustCompile(e)
		for _, text := range texts {
			got := len(g.blockRules(text, 0, nil)) > 0
			if want := re.MatchString(text); got != want {
				t.Errorf("pattern %q on %q: blocked %v; want %v", e, text, got, want)
			}
		}
	}
}
