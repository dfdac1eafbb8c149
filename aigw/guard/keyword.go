package guard

import (
	"slices"
	"unicode"
	"unicode/utf8"
)

// matcher finds many literal words in one left-to-right pass (Aho-Corasick), so the cost of a
// keyword list is linear in the text whatever the number of words. Written here rather than
// imported: cloudflare/ahocorasick has no case folding and petar-dambovaliev/aho-corasick folds
// ASCII only (last changed 2021); Unicode folding with true offsets needs its own loop anyway.
//
// With fold set, words and text are compared after simple Unicode case folding (foldRune, the
// equivalence of regexp's (?i)), and match offsets still refer to the original text.
//
// Bytes that occur in no word share one class, so a complete transition table (a DFA: one
// lookup per byte) stays small: states x classes entries, built when that is at most
// maxDFACells; larger word lists walk failure links instead.
type matcher struct {
	fold    bool
	root    [256]int32 // transitions of the root
	nodes   []acNode
	words   []acWord
	maxLen  int // longest word, in (folded) bytes
	class   [256]uint8
	classes int
	dfa     []int32 // state*classes + class -> state; nil when too large
	hits    []bool  // per state: a word ends here or on its failure chain
}

const maxDFACells = 1 << 20

type acNode struct {
	edges []acEdge // sorted by byte; unused for the root
	fail  int32    // longest proper suffix that is also a prefix in the trie
	dict  int32    // nearest node on the fail chain that ends a word; -1 if none
	out   []int32  // words ending exactly here
}

type acEdge struct {
	b  byte
	to int32
}

type acWord struct {
	id  int // caller's identifier
	len int // bytes, folded
}

// newMatcher builds a matcher for words; ids[i] is reported when words[i] matches.
func newMatcher(words []string, ids []int, fold bool) *matcher {
	m := &matcher{fold: fold, nodes: []acNode{{dict: -1}}}
	for i, w := range words {
		if fold {
			w = foldString(w)
		}
		if w == "" {
			continue
		}
		s := int32(0)
		for j := 0; j < len(w); j++ {
			next := m.child(s, w[j])
			if next < 0 {
				next = int32(len(m.nodes))
				m.nodes = append(m.nodes, acNode{dict: -1})
				m.addEdge(s, w[j], next)
			}
			s = next
		}
		m.nodes[s].out = append(m.nodes[s].out, int32(len(m.words)))
		m.words = append(m.words, acWord{id: ids[i], len: len(w)})
		m.maxLen = max(m.maxLen, len(w))
	}
	// Breadth-first: fail links of depth-1 nodes point at the root.
	queue := make([]int32, 0, len(m.nodes))
	for b := range 256 {
		if c := m.root[b]; c != 0 {
			m.nodes[c].fail = 0
			queue = append(queue, c)
		}
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		for _, e := range m.nodes[s].edges {
			f := m.nodes[s].fail
			for f != 0 && m.child(f, e.b) < 0 {
				f = m.nodes[f].fail
			}
			fc := m.child(f, e.b)
			if fc < 0 || fc == e.to {
				fc = 0
			}
			n := &m.nodes[e.to]
			n.fail = fc
			if len(m.nodes[fc].out) > 0 {
				n.dict = fc
			} else {
				n.dict = m.nodes[fc].dict
			}
			queue = append(queue, e.to)
		}
	}
	m.hits = make([]bool, len(m.nodes))
	for i := range m.nodes {
		m.hits[i] = len(m.nodes[i].out) > 0 || m.nodes[i].dict >= 0
	}
	m.buildDFA()
	return m
}

// buildDFA fills the byte classes and, when small enough, the complete transition table.
func (m *matcher) buildDFA() {
	var used [256]bool
	for i := range m.nodes {
		for _, e := range m.nodes[i].edges {
			used[e.b] = true
		}
	}
	for b := range 256 {
		if m.root[b] != 0 {
			used[b] = true
		}
	}
	m.classes = 1 // class 0: bytes in no word
	var rep []byte
	rep = append(rep, 0)
	for b := range 256 {
		if used[b] && m.classes < 256 {
			m.class[b] = uint8(m.classes)
			rep = append(rep, byte(b))
			m.classes++
		}
	}
	if len(m.nodes)*m.classes > maxDFACells || m.classes >= 256 {
		return
	}
	m.dfa = make([]int32, len(m.nodes)*m.classes)
	for s := range m.nodes {
		for c := 1; c < m.classes; c++ {
			m.dfa[s*m.classes+c] = m.slowStep(int32(s), rep[c])
		}
	}
}

func (m *matcher) child(s int32, b byte) int32 {
	if s == 0 {
		if c := m.root[b]; c != 0 {
			return c
		}
		return -1
	}
	edges := m.nodes[s].edges
	i, ok := slices.BinarySearchFunc(edges, b, func(e acEdge, b byte) int { return int(e.b) - int(b) })
	if !ok {
		return -1
	}
	return edges[i].to
}

func (m *matcher) addEdge(s int32, b byte, to int32) {
	if s == 0 {
		m.root[b] = to
		return
	}
	n := &m.nodes[s]
	i, _ := slices.BinarySearchFunc(n.edges, b, func(e acEdge, b byte) int { return int(e.b) - int(b) })
	n.edges = slices.Insert(n.edges, i, acEdge{b, to})
}

// step is the automaton's transition on b from s.
func (m *matcher) step(s int32, b byte) int32 {
	if m.dfa != nil {
		return m.dfa[int(s)*m.classes+int(m.class[b])]
	}
	return m.slowStep(s, b)
}

func (m *matcher) slowStep(s int32, b byte) int32 {
	for s != 0 {
		if c := m.child(s, b); c >= 0 {
			return c
		}
		s = m.nodes[s].fail
	}
	return m.root[b]
}

// find calls f for every occurrence of every word in text (overlapping ones included), in
// order of their end, with byte offsets into text; f returns false to stop.
func (m *matcher) find(text string, f func(id, start, end int) bool) {
	if len(m.words) == 0 {
		return
	}
	s := int32(0)
	var enc [utf8.UTFMax]byte
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf || !m.fold {
			if m.fold && 'a' <= c && c <= 'z' {
				c -= 'a' - 'A' // foldRune of an ASCII letter is upper case
			}
			if m.dfa != nil {
				s = m.dfa[int(s)*m.classes+int(m.class[c])]
			} else {
				s = m.slowStep(s, c)
			}
			i++
			if m.hits[s] && !m.emit(text, s, i, f) {
				return
			}
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		bs := enc[:1]
		if r == utf8.RuneError && size == 1 {
			enc[0] = c // invalid UTF-8: the raw byte
		} else {
			bs = enc[:utf8.EncodeRune(enc[:], foldRune(r))]
		}
		for k, b := range bs {
			s = m.step(s, b)
			// A word ends at a rune's end: its folded form is whole runes, and UTF-8 is
			// prefix-free.
			if k == len(bs)-1 && m.hits[s] && !m.emit(text, s, i+size, f) {
				return
			}
		}
		i += size
	}
}

// start returns where a word of n folded bytes that ends at end begins in text. Folding can
// change a rune's length ('K' KELVIN SIGN, 3 bytes, folds to "K"), so it walks back rune by
// rune; only matches pay for it.
func (m *matcher) start(text string, end, n int) int {
	if !m.fold {
		return end - n
	}
	i := end
	for n > 0 && i > 0 {
		r, size := utf8.DecodeLastRuneInString(text[:i])
		if r == utf8.RuneError && size <= 1 {
			n--
		} else {
			n -= utf8.RuneLen(foldRune(r))
		}
		i -= size
	}
	return i
}

// emit reports the words ending at end, in state s.
func (m *matcher) emit(text string, s int32, end int, f func(id, start, end int) bool) bool {
	for n := s; n > 0; n = m.nodes[n].dict {
		for _, w := range m.nodes[n].out {
			word := m.words[w]
			if !f(word.id, m.start(text, end, word.len), end) {
				return false
			}
		}
	}
	return true
}

// foldRune maps r to the smallest rune of its simple case-folding orbit (the equivalence
// regexp's (?i) uses), so that 'k', 'K' and 'K' (KELVIN SIGN) all fold to 'K', and 'ſ' to 'S'.
func foldRune(r rune) rune {
	if r < utf8.RuneSelf {
		if 'a' <= r && r <= 'z' {
			r -= 'a' - 'A'
		}
		return r
	}
	m := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		m = min(m, f)
	}
	return m
}

func foldString(s string) string {
	b := make([]byte, 0, len(s))
	for _, r := range s {
		b = utf8.AppendRune(b, foldRune(r))
	}
	return string(b)
}

// isWordRuneAt reports whether the rune starting at i is a letter, digit or '_'.
func isWordRuneAt(text string, i int) bool {
	c := text[i]
	if c < utf8.RuneSelf {
		return c == '_' || '0' <= c && c <= '9' || 'a' <= c|0x20 && c|0x20 <= 'z'
	}
	r, _ := utf8.DecodeRuneInString(text[i:])
	return r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r))
}

// isWordRuneBefore reports whether the rune ending at i is a letter, digit or '_'.
func isWordRuneBefore(text string, i int) bool {
	if i <= 0 {
		return false
	}
	r, n := utf8.DecodeLastRuneInString(text[:i])
	if r == utf8.RuneError && n <= 1 {
		return false
	}
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r)
}

// wholeWord reports whether text[start:end] is not glued to a word character at either end
// where the match itself begins or ends with one.
func wholeWord(text string, start, end int) bool {
	if start >= end {
		return false
	}
	if isWordRuneAt(text, start) && isWordRuneBefore(text, start) {
		return false
	}
	if end < len(text) && isWordRuneBefore(text, end) && isWordRuneAt(text, end) {
		return false
	}
	return true
}
