// Package namemodel is the statistical evidence behind aigw/detect's person names: a character
// n-gram model that tells how much a word looks like a personal name (from names of many
// origins) rather than an ordinary word (from word lists of several languages), and a compact
// set of ordinary words. It is trained offline by cmd/genmodel from the data in data/ and
// shipped as a binary file; nothing is fetched at run time.
package namemodel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

const (
	tableBits = 16
	minN      = 2
	maxN      = 5
	scale     = 1024 // int16 units per unit of logit
	magic     = "NMv2"
	epochs    = 8
)

// Model scores folded words (lower case, diacritics and apostrophes removed; see Fold).
type Model struct {
	bias  int16
	w     []int16  // hashed n-gram → logistic-regression weight, in 1/scale
	words []uint32 // sorted fingerprints of ordinary words
}

// ngrams calls f with the hash of every n-gram (minN..maxN) of "^w$".
func ngrams(w []byte, f func(h uint32)) {
	var buf [68]byte
	if len(w) > 64 {
		w = w[:64]
	}
	b := buf[:0]
	b = append(b, '^')
	b = append(b, w...)
	b = append(b, '$')
	for n := minN; n <= maxN; n++ {
		for i := 0; i+n <= len(b); i++ {
			f(hash(b[i:i+n], uint32(n)) & (1<<tableBits - 1))
		}
	}
}

func hash(b []byte, seed uint32) uint32 {
	h := uint32(2166136261) ^ seed*16777619
	for _, c := range b {
		h ^= uint32(c)
		h *= 16777619
	}
	return h
}

// Train fits a logistic regression over hashed character n-grams that separates names from
// words (folded; the classes are weighted to count equally), and keeps dict as the set of
// ordinary words that IsWord answers. Training is deterministic.
func Train(names, words, dict []string) *Model {
	type ex struct {
		w string
		y float64
		k float64 // class weight
	}
	exs := make([]ex, 0, len(names)+len(words))
	for _, w := range names {
		exs = append(exs, ex{w, 1, float64(len(words)) / float64(max(1, len(names)))})
	}
	for _, w := range words {
		exs = append(exs, ex{w, 0, 1})
	}
	r := rand.New(rand.NewPCG(1, 2))
	wt := make([]float64, 1<<tableBits)
	bias := 0.0
	var hs []uint32
	for ep := 0; ep < epochs; ep++ {
		r.Shuffle(len(exs), func(i, j int) { exs[i], exs[j] = exs[j], exs[i] })
		lr := 0.2 / (1 + float64(ep))
		for _, e := range exs {
			hs = hs[:0]
			z := bias
			ngrams([]byte(e.w), func(h uint32) { hs = append(hs, h); z += wt[h] })
			p := 1 / (1 + math.Exp(-z))
			g := lr * e.k * (e.y - p) / math.Sqrt(float64(len(hs)))
			g = max(-1, min(1, g))
			bias += g * 0.1
			for _, h := range hs {
				wt[h] += g
			}
		}
	}
	m := &Model{w: make([]int16, 1<<tableBits), bias: q16(bias)}
	for i, v := range wt {
		m.w[i] = q16(v)
	}
	seen := map[uint32]bool{}
	for _, w := range dict {
		h := hash([]byte(w), 0)
		if !seen[h] {
			seen[h] = true
			m.words = append(m.words, h)
		}
	}
	slices.Sort(m.words)
	return m
}

func q16(v float64) int16 { return int16(max(-32767, min(32767, math.Round(v*scale)))) }

// NameLLR returns the model's log-odds that the folded word is a name rather than an ordinary
// word (classes weighted equally): positive looks like a name.
func (m *Model) NameLLR(w []byte) float64 {
	sum := int(m.bias)
	ngrams(w, func(h uint32) { sum += int(m.w[h]) })
	return float64(sum) / scale
}

// IsWord reports whether the folded word is in the ordinary-word set.
func (m *Model) IsWord(w []byte) bool {
	_, ok := slices.BinarySearch(m.words, hash(w, 0))
	return ok
}

// MarshalBinary encodes the model.
func (m *Model) MarshalBinary() ([]byte, error) {
	b := make([]byte, 0, len(magic)+10+2*len(m.w)+4*len(m.words))
	b = append(b, magic...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(m.w)))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(m.words)))
	b = binary.LittleEndian.AppendUint16(b, uint16(m.bias))
	for _, v := range m.w {
		b = binary.LittleEndian.AppendUint16(b, uint16(v))
	}
	for _, w := range m.words {
		b = binary.LittleEndian.AppendUint32(b, w)
	}
	return b, nil
}

// Unmarshal decodes a model written by MarshalBinary.
func Unmarshal(b []byte) (*Model, error) {
	if len(b) < len(magic)+10 || string(b[:len(magic)]) != magic {
		return nil, errors.New("namemodel: not a model file")
	}
	b = b[len(magic):]
	nl, nw := binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[4:])
	bias := int16(binary.LittleEndian.Uint16(b[8:]))
	b = b[10:]
	if nl != 1<<tableBits || uint64(len(b)) != 2*uint64(nl)+4*uint64(nw) {
		return nil, fmt.Errorf("namemodel: bad sizes %d, %d for %d bytes", nl, nw, len(b))
	}
	m := &Model{bias: bias, w: make([]int16, nl), words: make([]uint32, nw)}
	for i := range m.w {
		m.w[i] = int16(binary.LittleEndian.Uint16(b[2*i:]))
	}
	b = b[2*nl:]
	for i := range m.words {
		m.words[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	if !slices.IsSorted(m.words) {
		return nil, errors.New("namemodel: word set not sorted")
	}
	return m, nil
}
