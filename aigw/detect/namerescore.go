package detect

import (
	_ "embed"
	"encoding/binary"
	"errors"
	"math"
	"sync"
	"unicode"
	"unicode/utf8"
)

// The learned part of name detection: an averaged perceptron over features of each run of
// capitalised words that the name rules score (the rules' verdict, the words' gazetteer
// classes, the name model's log-odds, word shapes, the words and punctuation around the run and
// its place in a CSV or TSV row), trained on the generated corpora and hand-written sets 1-4
// (TestNameRescorerReproducible in namerescore_test.go writes namerescorer.bin). The words of
// the run themselves are not features: their identity and affixes would memorise the training
// names, where the name model's log-odds carry over to names it has not seen. It does not
// replace the rules: it moves their score across the threshold only when it is confident the
// other way (combine), so a rule's clear evidence stands and weak evidence in a context that
// names people in the training text can reach the threshold.
//
// Streaming: the features look only at the rules' verdict (not their score, which text that
// follows can still raise), the run, everything before it, and after it at most the next byte,
// the class of the byte after a space, and a complete lower-case word — which SafePrefix's
// capRunClosed already requires to be known before it passes a capitalised word. SafePrefix
// passes a run only when both the rules alone and the rules with the rescorer score it under
// the threshold; then the rules' verdict, the features, the probability and the combined score
// are those of any longer text (FuzzSafePrefix found the case where a veto of a score that later
// rose broke this, when the exact score was a feature).
//
//go:embed namerescorer.bin
var nameRescorerBin []byte

const (
	rescoreBits     = 16
	rescoreSize     = 1 << rescoreBits
	rescoreMaxFeats = 40
	rescoreMagic    = "NRS1"

	// A rule score at or over the threshold falls under it when the model's probability is
	// under rescoreVeto; one under it rises over it when the probability is over rescoreAccept.
	// Chosen on the dev split and on hand-written sets 1-4, each scored by a model trained
	// without it (leave one set out: docs/benchmarks.md); never on set 5.
	rescoreVeto   = 0.2
	rescoreAccept = 0.8
)

// nameFeats holds the hashed features of one candidate; it lives on the stack.
type nameFeats struct {
	h [rescoreMaxFeats]uint32
	n int
}

const (
	fnvOffset = 2166136261
	fnvPrime  = 16777619
)

func (f *nameFeats) push(h uint32) {
	if f.n < len(f.h) {
		f.h[f.n] = h
		f.n++
	}
}

// addInt adds the feature (kind, v).
func (f *nameFeats) addInt(kind byte, v int) {
	h := uint32(fnvOffset)
	h = (h ^ uint32(kind)) * fnvPrime
	for i := 0; i < 4; i++ {
		h = (h ^ uint32(byte(v>>(8*i)))) * fnvPrime
	}
	f.push(h)
}

// addStr adds the feature (kind, s in ASCII lower case).
func (f *nameFeats) addStr(kind byte, s string) {
	h := uint32(fnvOffset)
	h = (h ^ uint32(kind)) * fnvPrime
	h = (h ^ 0xff) * fnvPrime
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(lowerASCII(s[i]))) * fnvPrime
	}
	f.push(h)
}

// nameRescorer holds the perceptron's averaged weights and the logistic scale fitted on the
// training margins.
type nameRescorer struct {
	w            []float32
	scale        float64
	veto, accept float64 // rescoreVeto, rescoreAccept (tests vary them)
}

var (
	nameRescorerOnce sync.Once
	nameRescorerDef  *nameRescorer
)

// defaultNameRescorer returns the embedded model.
func defaultNameRescorer() *nameRescorer {
	nameRescorerOnce.Do(func() {
		r, err := unmarshalNameRescorer(nameRescorerBin)
		if err != nil {
			panic("detect: embedded name rescorer: " + err.Error()) // build-time invariant
		}
		nameRescorerDef = r
	})
	return nameRescorerDef
}

// marshal encodes the weights as int16 with one float64 step: magic, step, scale, weights.
func (r *nameRescorer) marshal() []byte {
	var maxAbs float64
	for _, v := range r.w {
		maxAbs = max(maxAbs, math.Abs(float64(v)))
	}
	step := maxAbs / 32767
	if step == 0 {
		step = 1
	}
	b := make([]byte, 0, 4+16+2*len(r.w))
	b = append(b, rescoreMagic...)
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(step))
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(r.scale))
	for _, v := range r.w {
		b = binary.LittleEndian.AppendUint16(b, uint16(int16(math.Round(float64(v)/step))))
	}
	return b
}

func unmarshalNameRescorer(b []byte) (*nameRescorer, error) {
	if len(b) != 4+16+2*rescoreSize || string(b[:4]) != rescoreMagic {
		return nil, errors.New("not a name rescorer of this version")
	}
	step := math.Float64frombits(binary.LittleEndian.Uint64(b[4:]))
	r := &nameRescorer{w: make([]float32, rescoreSize), scale: math.Float64frombits(binary.LittleEndian.Uint64(b[12:])),
		veto: rescoreVeto, accept: rescoreAccept}
	for i := range r.w {
		r.w[i] = float32(float64(int16(binary.LittleEndian.Uint16(b[20+2*i:]))) * step)
	}
	return r, nil
}

func (r *nameRescorer) margin(f *nameFeats) float64 {
	var m float64
	for _, h := range f.h[:f.n] {
		m += float64(r.w[h&(rescoreSize-1)])
	}
	return m
}

// prob returns the model's probability that the candidate is a person's name.
func (r *nameRescorer) prob(f *nameFeats) float64 {
	return 1 / (1 + math.Exp(-r.scale*r.margin(f)))
}

// combine moves the rule score across DefaultMinScore only when the model is confident. A run
// that a cue confirmed (a title before it; "my name is", a field label, an e-mail after it: the
// rules' maximum score) is never vetoed: those cues are the rules' evidence that carries over best.
func (r *nameRescorer) combine(rule, p float64, titled bool) float64 {
	switch {
	case rule >= DefaultMinScore && rule < nameMaxScore && !titled && p < r.veto:
		return DefaultMinScore - 0.05
	case rule < DefaultMinScore && p > r.accept:
		return DefaultMinScore + 0.05 + 0.25*(p-r.accept)/(1-r.accept)
	}
	return rule
}

// wordClass sums up gazetteer and model flags: 0 none, 1 given, 2 family, 3 both, 4 probable,
// 5 ordinary word; +8 when ambiguous.
func wordClass(f uint8) int {
	c := 0
	switch {
	case f&gzFirst != 0 && f&gzLast != 0:
		c = 3
	case f&gzFirst != 0:
		c = 1
	case f&gzLast != 0:
		c = 2
	case f&gzProbable != 0:
		c = 4
	case f&gzWord != 0:
		c = 5
	}
	if f&gzAmbiguous != 0 {
		c += 8
	}
	return c
}

// wordShape codes a word's form: length bucket, all capitals, inner hyphen or apostrophe,
// non-ASCII letters.
func wordShape(w string) int {
	n := utf8.RuneCountInString(w)
	s := 0
	switch {
	case n == 1:
		s = 0
	case n <= 3:
		s = 1
	case n <= 6:
		s = 2
	case n <= 9:
		s = 3
	default:
		s = 4
	}
	if allCaps(w) {
		s |= 8
	}
	for i := 0; i < len(w); i++ {
		switch c := w[i]; {
		case c == '-' || c == '\'':
			s |= 16
		case c >= utf8.RuneSelf:
			s |= 32
		}
	}
	return s
}

// prevWord returns the word that ends before s on the same line, skipping up to 8 blanks and
// at most one punctuation byte (returned as p, 0 when none), or ok false at the start of a
// line. It looks at most 8+1+8+32 bytes back, so scoring stays linear in the text.
func prevWord(text string, s int) (ws, we int, p byte, ok bool) {
	j := skipBlanks8(text, s)
	if j == 0 || text[j-1] == '\n' || text[j-1] == '\r' {
		return 0, 0, 0, false
	}
	if c := text[j-1]; c < utf8.RuneSelf && !isAlpha(c) && !isDigit(c) {
		p = c
		j = skipBlanks8(text, j-1)
	}
	we = j
	for j > 0 && we-j < 32 {
		r, n := utf8.DecodeLastRuneInString(text[:j])
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' && r != '-' {
			break
		}
		j -= n
	}
	return j, we, p, true
}

// skipBlanks8 returns the position before at most 8 spaces and tabs that end at s.
func skipBlanks8(text string, s int) int {
	j := s
	for j > 0 && s-j < 8 && (text[j-1] == ' ' || text[j-1] == '\t') {
		j--
	}
	return j
}

// features computes the candidate's features into f; ws are its words and rule the rules'
// score.
func (d nameDetector) features(f *nameFeats, text string, ws []nameWord, rule float64, titled bool) {
	start, end := ws[0].s, ws[len(ws)-1].e
	first, last := text[ws[0].s:ws[0].e], text[ws[len(ws)-1].s:ws[len(ws)-1].e]
	// The rules' verdict, not their score: a run's score can still rise with text that follows
	// it ("B B" before "(0000@"), but once SafePrefix may pass it (capRunClosed) its side of
	// DefaultMinScore is fixed, and so are these features and the model's probability.
	above := 0
	if rule >= DefaultMinScore {
		above = 1
	}
	f.addInt('b', 0)
	f.addInt('r', above)
	f.addInt('n', len(ws))
	if titled {
		f.addInt('t', 1)
	}
	cf, cl := wordClass(ws[0].flags), wordClass(ws[len(ws)-1].flags)
	f.addInt('F', cf)
	f.addInt('L', cl)
	f.addInt('P', cf<<8|cl|len(ws)<<16)
	f.addInt('s', wordShape(first))
	f.addInt('S', wordShape(last))
	f.addInt('m', d.llrBucket(first))
	if len(ws) > 1 {
		f.addInt('M', d.llrBucket(last))
	}
	// Left context.
	ps, pe, p, ok := prevWord(text, start)
	switch {
	case !ok:
		f.addInt('l', 0)
		f.addInt('K', above) // line start with the rules' verdict
	case pe > ps:
		f.addStr('p', text[ps:pe])
		f.addInt('c', int(p))
		f.addInt('C', int(p)<<8|cf)
		if qs, qe, _, ok := prevWord(text, ps); ok && qe > qs {
			f.addStr('q', text[qs:qe])
		}
	default:
		f.addInt('c', int(p))
		f.addInt('C', int(p)<<8|cf)
	}
	// Place in the line: cells before it in a CSV or TSV row (within 256 bytes, for linear time).
	commas, tabs := 0, 0
	for j := start - 1; j >= 0 && start-j <= 256 && text[j] != '\n'; j-- {
		switch text[j] {
		case ',':
			commas++
		case '\t', '|':
			tabs++
		}
	}
	f.addInt('k', min(commas, 3)<<4|min(tabs, 3))
	// Right context: what capRunClosed requires to be known (see the comment at the top).
	if end >= len(text) {
		f.addInt('e', 0)
		return
	}
	c := text[end]
	f.addInt('a', int(c))
	if c != ' ' || end+1 >= len(text) {
		return
	}
	k := end + 1
	nc := text[k]
	switch {
	case isLower(nc):
		if ne := wordEnd(text, k); wordDone(text, ne) {
			f.addStr('z', text[k:ne])
		}
	case isUpper(nc):
		f.addInt('A', 'A')
	case isDigit(nc):
		f.addInt('A', '0')
	default:
		f.addInt('A', int(nc))
	}
}

// llrBucket returns the name model's log-odds for w, rounded and clamped to [-6, 6], or 99
// for a word too long to fold.
func (d nameDetector) llrBucket(w string) int {
	var buf [64]byte
	k, ok := foldInto(buf[:0:len(buf)], w)
	if !ok || len(k) < 2 {
		return 99
	}
	return int(max(-6, min(6, math.Round(d.model.NameLLR(k)))))
}

// rescore returns the candidate's score after the learned model, and records the features
// when training.
func (d nameDetector) rescore(text string, ws []nameWord, rule float64, titled bool) float64 {
	if d.rescorer == nil && d.record == nil {
		return rule
	}
	var f nameFeats
	d.features(&f, text, ws, rule, titled)
	if d.record != nil {
		g := f // g escapes to the recorder; f stays on the stack
		d.record(ws[0].s, ws[len(ws)-1].e, g.h[:g.n])
	}
	if d.rescorer == nil {
		return rule
	}
	return d.rescorer.combine(rule, d.rescorer.prob(&f), titled)
}
