package guard

import (
	"slices"
	"unicode"
	"unicode/utf8"
)

// matcher finds many literal words in one left-to-right pass (Aho-Corasick), so the cost of a
// keyword list is linear in the text whatever the number of words. Written here rather than
// imported: the Go libraries found (cloudflare/ahocorasick, petar-dambovaliev/aho-corasick)
// are unmaintained since 2021 and fold ASCII only, and this needs about 150 lines.
//
// With fold set, words and text are compared after simple Unicode case folding (foldRune),
// and match offsets still refer to the original text.
type matcher struct {
	fold   bool
	root   [256]int32 // dense transitions of the root
	nodes  []acNode
	words  []acWord
	maxLen int // longest word, in (folded) bytes
}

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
	return m
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
	if !m.fold {
		s := int32(0)
		for i := 0; i < len(text); i++ {
			s = m.step(s, text[i])
			if m.hit(s) && !m.emit(s, i+1, func(n int) int { return i + 1 - n }, f) {
				return
			}
		}
		return
	}
	// Folded bytes can be more or fewer than the original ones ('K' KELVIN SIGN folds to
	// "k"), so a ring remembers which original offset produced each of the last maxLen
	// folded bytes.
	ringSize := 1
	for ringSize < m.maxLen {
		ringSize <<= 1
	}
	var small [64]int
	var ring []int
	if ringSize <= len(small) {
		ring = small[:ringSize]
	} else {
		ring = make([]int, ringSize)
	}
	mask := ringSize - 1
	var enc [utf8.UTFMax]byte
	s, fp := int32(0), 0 // state, folded position
	for i := 0; i < len(text); {
		c := text[i]
		var bs []byte
		size := 1
		if c < utf8.RuneSelf {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			enc[0] = c
			bs = enc[:1]
		} else {
			var r rune
			r, size = utf8.DecodeRuneInString(text[i:])
			if r == utf8.RuneError && size == 1 {
				enc[0] = c // invalid UTF-8: the raw byte
				bs = enc[:1]
			} else {
				bs = enc[:utf8.EncodeRune(enc[:], foldRune(r))]
			}
		}
		for _, b := range bs {
			ring[fp&mask] = i
			fp++
			s = m.step(s, b)
			if m.hit(s) && !m.emit(s, i+size, func(n int) int { return ring[(fp-n)&mask] }, f) {
				return
			}
		}
		i += size
	}
}

// hit reports whether a word ends in state s.
func (m *matcher) hit(s int32) bool { return len(m.nodes[s].out) > 0 || m.nodes[s].dict >= 0 }

// emit reports the words ending in state s; start maps a word's folded length to its start.
func (m *matcher) emit(s int32, end int, start func(n int) int, f func(id, start, end int) bool) bool {
	for n := s; n > 0; n = m.nodes[n].dict {
		for _, w := range m.nodes[n].out {
			word := m.words[w]
			if !f(word.id, start(word.len), end) {
				return false
			}
		}
	}
	return true
}

// foldRune maps r to one representative of its simple case-folding orbit, so that 'K', 'k'
// and 'K' (KELVIN SIGN) all fold to 'k', and 'ſ' to 's'.
func foldRune(r rune) rune {
	return unicode.ToLower(unicode.ToUpper(r))
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
