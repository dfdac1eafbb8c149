package detect

import "strings"

// Layout evidence for names that are not capitalised prose. In a transcript the speaker slot
// ("DARIUSZ: ok let's start", "[14:02] aroha: is it open") and in a table the cell under a name
// header ("name | shirt size" / "ikaika palakiko | L") say "person" whatever the case of the
// words, as a title or "my name is" does. The words must still be name-like: known names, or
// words the name model does not know as ordinary words ("reception:", "HOST:", "unassigned"
// are words). Capitalised runs go through nameSpan and the rescorer; these rules only add
// lower-case and all-capitals runs, which the rules otherwise take only after a cue.

const layoutMaxWords = 3

// layoutSpan returns the end of a lower-case or all-capitals name starting with the word at s
// that fills a transcript's speaker slot or a name column's cell, or -1.
func (d nameDetector) layoutSpan(text string, s int) int {
	if !layoutPosition(text, s) {
		return -1
	}
	caps := allCaps(text[s:wordEnd(text, s)])
	end, n := -1, 0
	for j := s; n < layoutMaxWords; n++ {
		we := wordEnd(text, j)
		w := text[j:we]
		if w == "" || allCaps(w) != caps || !caps && !isLower(w[0]) && w[0] < 0x80 || !d.layoutWordOK(w) {
			return -1 // a word that is not name-like breaks the whole run
		}
		if caps && we-j <= 4 && nameFlags(w)&(gzFirst|gzLast) == 0 {
			return -1 // "IBAN:", "DOB:", "MRN:": short capitals are acronyms unless known names
		}
		end = we
		k := space(text, we)
		if k < 0 || !isLetterAt(text, k) {
			break
		}
		j = k
	}
	if end < 0 || end < len(text) && isLetterAt(text, end) {
		return -1
	}
	if speakerSlot(text, s, end) || n >= 1 && (listSlot(text, s, end) || caps && nameLine(text, s, end)) {
		return end
	}
	if headerHas(paddedCellHeader(text, s, end), nameHeaders) {
		return end
	}
	if d.record == nil && shortPersonKey(alignedHeader(text, s, end)) {
		return end // "SURNAME      FORENAME" / "OKONKWO      CHIDI" (structure.go)
	}
	return -1
}

// listSlot reports whether text[s:e] is the whole item of a list ("- marta kowalczyk
// (brownies)", "2. DEWI ANGGRAINI"), with another item on the line above or below. Only runs
// of two or more words come here: one lower-case word in a list is more often a thing.
func listSlot(text string, s, e int) bool {
	ls := listItemStart(text, s)
	if ls < 0 {
		return false
	}
	j := e
	for j < len(text) && text[j] == ' ' {
		j++
	}
	if j < len(text) && text[j] != '\n' && text[j] != '\r' && text[j] != '(' && text[j] != ',' && text[j] != '-' {
		return false
	}
	if ls == 0 || s-ls > layoutLookBack {
		return false
	}
	q := ls - 1
	for q > 0 && text[q-1] != '\n' && s-q <= layoutLookBack {
		q--
	}
	if q > 0 && text[q-1] != '\n' {
		return false
	}
	if listMarker(text, q) > 0 {
		return true
	}
	// The first item under a heading that ends with ':' ("who's in:").
	k := ls - 1
	for k > q && (text[k-1] == ' ' || text[k-1] == '\r') {
		k--
	}
	return k > q && text[k-1] == ':'
}

// listItemStart returns the start of the line when s follows a list marker at its start, or -1.
func listItemStart(text string, s int) int {
	ls := s
	for ls > 0 && text[ls-1] != '\n' && s-ls < 8 {
		ls--
	}
	if ls > 0 && text[ls-1] != '\n' {
		return -1
	}
	if m := listMarker(text, ls); m > 0 && m == s {
		return ls
	}
	return -1
}

// listMarker returns where the item text starts after a list marker at ls ("- ", "* ", "• ",
// "12. ", "3) "), or -1.
func listMarker(text string, ls int) int {
	j := ls
	for j < len(text) && text[j] == ' ' && j-ls < 4 {
		j++
	}
	switch {
	case strings.HasPrefix(text[j:], "- "), strings.HasPrefix(text[j:], "* "):
		j += 2
	case strings.HasPrefix(text[j:], "• "):
		j += len("• ")
	default:
		k := j
		for k < len(text) && isDigit(text[k]) && k-j < 3 {
			k++
		}
		if k == j || k+1 >= len(text) || text[k] != '.' && text[k] != ')' || text[k+1] != ' ' {
			return -1
		}
		j = k + 2
	}
	for j < len(text) && text[j] == ' ' {
		j++
	}
	return j
}

// paddedCellHeader is columnHeader for a cell that may be padded with blanks, as in
// "name | shirt size" tables.
func paddedCellHeader(text string, s, e int) string {
	for k := 0; k < 2 && s > 0 && text[s-1] == ' '; k++ {
		s--
	}
	for k := 0; k < 2 && e < len(text) && text[e] == ' '; k++ {
		e++
	}
	return columnHeader(text, s, e)
}

// layoutPending reports whether layoutSpan may find a name starting at s in text or in text
// with anything appended (SafePrefix): the run of name-like words from s is not closed yet, or
// it ends where a speaker's ':' or a cell's end may decide (what follows can still make the
// line a transcript's).
func (d nameDetector) layoutPending(text string, s int) bool {
	if !layoutPosition(text, s) {
		return false
	}
	caps := allCaps(text[s:wordEnd(text, s)])
	end := -1
	for j, n := s, 0; n < layoutMaxWords; n++ {
		we := wordEnd(text, j)
		if we >= len(text) {
			return true // the word may go on
		}
		w := text[j:we]
		if w == "" || allCaps(w) != caps || !caps && !isLower(w[0]) && w[0] < 0x80 || !d.layoutWordOK(w) {
			return false
		}
		end = we
		if we+1 >= len(text) {
			return true
		}
		k := space(text, we)
		if k < 0 || !isLetterAt(text, k) {
			break
		}
		j = k
	}
	if end < 0 {
		return false
	}
	for k := 0; k < 2 && end < len(text) && text[end] == ' '; k++ {
		end++
	}
	return end >= len(text) || text[end] == ':' || text[end] == '"' || text[end] == '(' || text[end] == '-' || text[end] == '\n' || text[end] == '\r' || isDelimiter(text[end])
}

// speakerSlot reports whether text[s:e] is the speaker of a transcript line: at a line's start
// (after an optional "[14:02] " or "00:00:03 " time), followed by ": " and a message with a
// lower-case word, with another speaker line just above (transcriptNear).
func speakerSlot(text string, s, e int) bool {
	if e+2 >= len(text) || text[e] != ':' || text[e+1] != ' ' || !proseMessage(text, e+2) {
		return false
	}
	ls := skipLineTime(text, s)
	return ls >= 0 && transcriptNear(text, ls, s)
}

// layoutLookBack bounds how far before a name its layout evidence may start: a stream
// (aigw/guard) rescans at most 128 bytes of text it has already sent, and must see the same
// evidence as a scan of the whole text. Evidence after the name's line is never used, since a
// stream sends a line once it has ended.
const layoutLookBack = 120

// transcriptNear reports whether a speaker line (speakerShape) starts in the layoutLookBack
// bytes before s, on one of the lines above the one starting at ls.
func transcriptNear(text string, ls, s int) bool {
	p := ls
	for p > 0 && s-p < layoutLookBack {
		q := p - 1
		for q > 0 && text[q-1] != '\n' {
			q--
		}
		if s-q > layoutLookBack {
			return false
		}
		if speakerShape(text, q) {
			return true
		}
		p = q
	}
	return false
}

// skipLineTime returns the start of the line that ends at s after an optional time stamp and
// blanks, or -1 when other text precedes s on its line.
func skipLineTime(text string, s int) int {
	j := s
	for j > 0 && (text[j-1] == ' ' || text[j-1] == '\t') && s-j < 4 {
		j--
	}
	if j > 0 && text[j-1] == ']' {
		k := j - 1
		for k > 0 && text[k-1] != '[' && text[k-1] != '\n' && j-k < 24 {
			k--
		}
		if k == 0 || text[k-1] != '[' {
			return -1
		}
		j = k - 1
	} else {
		k := j
		for k > 0 && (isDigit(text[k-1]) || text[k-1] == ':' || text[k-1] == '.') && j-k < 12 {
			k--
		}
		if k < j && (j-k < 4 || !isDigit(text[j-1]) || !containsByte(text[k:j], ':')) {
			return -1 // not a time such as "14:02" or "00:00:03"
		}
		j = k
	}
	for j > 0 && (text[j-1] == ' ' || text[j-1] == '\t') && s-j < 40 {
		j--
	}
	if j > 0 && text[j-1] != '\n' {
		return -1
	}
	return j
}

// speakerShape reports whether the line at ls starts (after an optional time) with one to
// three words, ": " and a message: any speaker, a person or a role ("Interviewer:", "HOST:").
func speakerShape(text string, ls int) bool {
	j := ls
	if j < len(text) && text[j] == '[' {
		for j < len(text) && text[j] != ']' && text[j] != '\n' && j-ls < 24 {
			j++
		}
		j++
	} else {
		for j < len(text) && (isDigit(text[j]) || text[j] == ':' || text[j] == '.') && j-ls < 12 {
			j++
		}
	}
	for j < len(text) && (text[j] == ' ' || text[j] == '\t') && j-ls < 40 {
		j++
	}
	for n := 0; n < layoutMaxWords; n++ {
		if j >= len(text) || !isLetterAt(text, j) {
			return false
		}
		j = wordEnd(text, j)
		if j+1 < len(text) && text[j] == ':' && text[j+1] == ' ' {
			return proseMessage(text, j+2)
		}
		if j >= len(text) || text[j] != ' ' {
			return false
		}
		j++
	}
	return false
}

// proseMessage reports whether a message with a lower-case word starts at m ("ok", "yes, loud
// and clear"), unlike an upper-case form value ("NIGERIAN", "GB82 WEST ...").
func proseMessage(text string, m int) bool {
	for j := m; j < len(text) && text[j] != '\n' && j-m < 200; {
		if !isLetterAt(text, j) {
			j++
			continue
		}
		if isLower(text[j]) {
			return true
		}
		j = wordEnd(text, j)
	}
	return false
}

// layoutPosition reports whether a word starting at s sits where layoutSpan may find a name:
// at a line's start (after an optional time) or after a cell delimiter. SafePrefix holds
// name-like lower-case and all-capitals words there.
func layoutPosition(text string, s int) bool {
	j := s
	for j > 0 && (text[j-1] == ' ' || text[j-1] == '"') && s-j < 4 {
		j--
	}
	if j == 0 || isDelimiter(text[j-1]) || text[j-1] == '\n' || listItemStart(text, s) >= 0 {
		return true
	}
	if s-j == 4 && text[j-1] == ' ' {
		return true // a cell of a table aligned with blanks (alignedHeader, structure.go)
	}
	return skipLineTime(text, s) >= 0
}

// layoutWordOK reports whether w is name-like (lowerWordOK), and when hyphenated, each part
// too: "mensah-bonsu" is, the handle "ops-bot" is not.
func (d nameDetector) layoutWordOK(w string) bool {
	if !d.lowerWordOK(w) {
		return false
	}
	for {
		k := strings.IndexByte(w, '-')
		if k < 0 {
			return w == "" || d.lowerWordOK(w) || len(w) < 2
		}
		if !d.lowerWordOK(w[:k]) {
			return false
		}
		w = w[k+1:]
	}
}

// nameLine reports whether the capitals text[s:e] (two or three name-like words) fill a line of
// their own, the first not an ambiguous name: the name line of a CV, a label or a prescription
// ("ADEBOLA OGUNLEYE"). Headings are ordinary words ("ANNUAL REPORT") or start with an
// ambiguous name ("GRACE CHURCH"). layoutPending already holds such a line.
func nameLine(text string, s, e int) bool {
	if s > 0 && text[s-1] != '\n' || e < len(text) && text[e] != '\n' && text[e] != '\r' {
		return false
	}
	return nameFlags(text[s:wordEnd(text, s)])&gzAmbiguous == 0
}
