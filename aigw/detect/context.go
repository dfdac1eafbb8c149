package detect

import "strings"

// Context words: a keyword near a candidate raises (pos) or lowers (neg) its score. Only the
// nearest keyword counts, so "order 123, SSN 078-..." scores the SSN by "SSN", not "order".

const (
	ctxBefore = 48 // bytes searched before a candidate
	ctxAfter  = 24 // bytes searched after it
)

// contextRule holds the keywords of one type. Keywords are lower-case; they match ASCII
// case-insensitively at word bounds (a keyword that ends in punctuation needs no bound there).
// max caps the final score (zero means 1), so that a weaker type cannot outrank a validated one
// through context alone.
type contextRule struct {
	pos     *keywords
	neg     *keywords
	boost   float64
	penalty float64
	max     float64
	// head holds more words that label a table column or a field of the type, too broad for
	// prose ("social" heads a column of SSNs; in a sentence it is any social thing).
	head *keywords
	// notHead holds context words that do not label a column of the type: "Age" heads ages,
	// not dates of birth ("Age-Wt  5-11-7" in a race card), unless a head word is there too.
	notHead *keywords
}

// labelled reports whether text[s:e] is the value of a table column or a field whose header
// or key is one of r's words: a delimited table ("dob;ssn"), a padded one ("| Tanggal Lahir |"),
// a space-aligned one (alignedValueHeader), or a quoted or XML field ("social": "...").
func (r *contextRule) labelled(text string, s, e int) bool {
	has := func(h string) bool {
		if headerHas(h, r.notHead) {
			return headerHas(h, r.head) // "DOB / Age" still labels dates of birth; "Age-Wt" not
		}
		return headerHas(h, r.pos) || headerHas(h, r.head)
	}
	return has(columnHeader(text, s, e)) || has(paddedCellHeader(text, s, e)) ||
		has(alignedValueHeader(text, s, e)) || has(fieldKey(text, s, e))
}

// keywords holds lower-case keywords indexed by first byte, so that a context window is scanned
// once rather than once per keyword.
type keywords struct {
	first [256][]string
}

// newKeywords indexes list.
func newKeywords(list ...string) *keywords {
	k := &keywords{}
	for _, w := range list {
		k.first[w[0]] = append(k.first[w[0]], w)
	}
	return k
}

// apply returns score adjusted by the nearest keyword around text[start:end].
func (r *contextRule) apply(text string, start, end int, score float64) float64 {
	if r == nil {
		return score
	}
	p := nearestKeyword(text, start, end, r.pos)
	n := nearestKeyword(text, start, end, r.neg)
	switch {
	case !p.found && !n.found:
	case !n.found || p.found && p.closer(n):
		score += r.boost
	default:
		score -= r.penalty
	}
	if r.max > 0 && score > r.max {
		score = r.max
	}
	return clamp01(score)
}

func clamp01(f float64) float64 {
	if f < 0 {
		return 0
	}
	if f > 1 {
		return 1
	}
	return f
}

// keywordHit is the nearest keyword found: its weighted distance and length.
type keywordHit struct {
	found bool
	dist  int
	n     int
}

// closer reports whether h wins over o: nearer, or as near and longer ("part number" beats
// "number"), or a tie (h is the positive hit).
func (h keywordHit) closer(o keywordHit) bool {
	if h.dist != o.dist {
		return h.dist < o.dist
	}
	return h.n >= o.n
}

// hasKeyword reports whether any keyword occurs around text[start:end].
func hasKeyword(text string, start, end int, kws *keywords) bool {
	return nearestKeyword(text, start, end, kws).found
}

// hasKeywordBefore reports whether any keyword occurs in the window before text[start:].
func hasKeywordBefore(text string, start int, kws *keywords) bool {
	return nearestKeyword(text, start, -1, kws).found
}

// windowStart returns the start of the context window before pos: at most ctxBefore bytes, not
// crossing a line break (unless the line before ends with ':', as in "SSN:\n...") or the end
// of a sentence.
func windowStart(text string, pos int) int {
	lo := max(0, pos-ctxBefore)
	crossed := false
	for p := pos - 1; p >= lo; p-- {
		switch c := text[p]; {
		case c == '\n':
			if !crossed && (isBlank(text[p+1:pos]) && (lineEndsWithColon(text[lo:p]) || labelLine(text, lo, p)) || answersQuestion(text, p+1, pos)) {
				crossed = true
				continue
			}
			return p + 1
		case (c == '.' || c == '!' || c == '?') && p+1 < pos && text[p+1] == ' ' && sentenceEnd(text, p):
			return p + 1
		}
	}
	return lo
}

// answersQuestion reports whether text[s:pos] starts a line that answers the line above it: the
// line above ends with '?' and the answer starts the line, after at most a time stamp and the
// speaker's name ("Agent: ... confirm the date of birth?\nCustomer: March 3rd, 1978", "[09:15]
// bot: name?\n[09:15] user: keoni quispe"). A question and its answer are one exchange, so the
// question's words are the answer's context although a line break separates them.
func answersQuestion(text string, s, pos int) bool {
	if s < 2 || text[s-1] != '\n' || !speakerPrefix(text[s:pos]) {
		return false
	}
	for p := s - 2; p >= 0 && p >= s-2-ctxBefore; p-- {
		switch text[p] {
		case ' ', '\t', '\r':
			continue
		}
		return text[p] == '?'
	}
	return false
}

// speakerPrefix reports whether p is blank or the start of a chat line before its message: an
// optional "[time] ", then one word of at most 24 bytes (a name or a handle) and ": ".
func speakerPrefix(p string) bool {
	if isBlank(p) {
		return true
	}
	if p[0] == '[' {
		k := strings.IndexByte(p, ']')
		if k < 0 || k > 24 || k+1 >= len(p) || p[k+1] != ' ' {
			return false
		}
		p = p[k+2:]
	}
	k := strings.IndexByte(p, ':')
	if k < 1 || k > 24 || strings.TrimRight(p[k+1:], " \t") != "" || len(p)-k-1 > 2 {
		return false
	}
	return strings.IndexAny(p[:k], " \t\n") < 0
}

func isBlank(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isSpaceByte(s[i]) {
			return false
		}
	}
	return true
}

// labelLine reports whether the line ending at p (a line break) lies wholly after lo and is a
// form's label without a colon, its value on the next line ("Date of Birth\n04/17/2008",
// "Social Security Number\n412 66 0193"): at most five words, no digit, no cell delimiter,
// not ending a sentence or a clause.
func labelLine(text string, lo, p int) bool {
	s := p
	for s > lo && text[s-1] != '\n' {
		s--
	}
	if s == lo && s > 0 && text[s-1] != '\n' || isBlank(text[s:p]) {
		return false
	}
	gaps := 0 // between words
	for i := s; i < p; i++ {
		switch c := text[i]; {
		case isDigit(c), c == '\t', isDelimiter(c), c == '=':
			return false // a table's header row labels by column (labelled), not the line below
		}
		if text[i] == ' ' && i > s && text[i-1] != ' ' {
			gaps++
		}
	}
	for q := p - 1; q >= s; q-- {
		if c := text[q]; c != ' ' && c != '\r' && c != '\t' {
			if c == '.' || c == '!' || c == '?' || c == ',' || c == ';' {
				return false
			}
			break
		}
	}
	return gaps < 5
}

func lineEndsWithColon(s string) bool {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == ' ' || s[i] == '\t' || s[i] == '\r' {
			continue
		}
		return s[i] == ':'
	}
	return false
}

// windowEnd returns the end of the context window after pos: at most ctxAfter bytes, not
// crossing a line break or the end of a sentence, and stopping before a label such as
// "Invoice date:" that belongs to what follows it.
func windowEnd(text string, pos int) int {
	hi := min(len(text), pos+ctxAfter)
	for p := pos; p < hi; p++ {
		switch c := text[p]; {
		case c == '\n':
			return p
		case (c == '.' || c == '!' || c == '?') && p+1 < len(text) && text[p+1] == ' ' && sentenceEnd(text, p):
			return p
		case c == ':' && p > pos:
			q := p
			for q > pos && isAlpha(text[q-1]) {
				q--
			}
			return q
		}
	}
	return hi
}

// sentenceEnd reports whether the '.', '!' or '?' at p ends a sentence rather than an
// abbreviation such as "Tel." or "No.".
func sentenceEnd(text string, p int) bool {
	if text[p] != '.' {
		return true
	}
	if p >= 2 && text[p-1] == '.' && text[p-2] == '.' {
		return false // dot leaders of a form: "Date of birth .......... 12/03/1985"
	}
	k := p
	for k > 0 && isAlpha(text[k-1]) {
		k--
	}
	return p-k > 3 || p-k == 0
}

// nearestKeyword returns the nearest keyword within the context window around text[start:end]
// (before only when end < 0). Distances after the candidate count double: labels usually come
// first. The cost is bounded by the window size times the number of keywords.
func nearestKeyword(text string, start, end int, kws *keywords) keywordHit {
	var best keywordHit
	if kws == nil {
		return best
	}
	consider := func(d, n int) {
		h := keywordHit{true, d, n}
		if !best.found || h.closer(best) {
			best = h
		}
	}
	for p := windowStart(text, start); p < start; p++ {
		for _, kw := range kws.first[lowerASCII(text[p])] {
			if p+len(kw) <= start && matchKeyword(text, p, kw) {
				consider(start-(p+len(kw)), len(kw))
			}
		}
	}
	if end < 0 {
		return best
	}
	hi := windowEnd(text, end)
	for p := end; p < hi; p++ {
		for _, kw := range kws.first[lowerASCII(text[p])] {
			if p+len(kw) <= hi && matchKeyword(text, p, kw) {
				consider(2*(p-end)+1, len(kw))
			}
		}
	}
	return best
}

// matchKeyword reports whether kw occurs at text[p:] case-insensitively and at word bounds.
func matchKeyword(text string, p int, kw string) bool {
	if lowerASCII(text[p]) != kw[0] {
		return false
	}
	for i := 1; i < len(kw); i++ {
		if lowerASCII(text[p+i]) != kw[i] {
			return false
		}
	}
	if isAlnum(kw[0]) && p > 0 && isAlnum(text[p-1]) {
		return false
	}
	q := p + len(kw)
	if isAlnum(kw[len(kw)-1]) && q < len(text) && isAlpha(text[q]) {
		return false
	}
	return true
}
