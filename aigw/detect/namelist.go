package detect

import (
	"strings"
	"unicode/utf8"
)

// Evidence for person names from the structure of lists, rosters and tables (detect10, study
// set 15): a reader takes "Tuisova" in "13 Radradra, 12 Botia, 11 Tuisova" for a person because
// the items before it in the same list are names, not because of a cue word. A run that the
// rules leave under the threshold becomes a name when
//
//   - it is a list item: it starts a line (after an optional marker such as "3.", "14 ", "-9"),
//     or follows a separator (",", ";", "/", "&", "|", ":", a tab, two spaces, "↔") or a
//     conjunction ("and", "und", "et", "y", "og", "och", "en", "és"), and it ends at one (or at a
//     number, a parenthesis, a full stop or a line end);
//   - none of its words is an ordinary word of the model's word set (unless also a known name),
//     a non-name or a place of the gazetteer;
//   - among the list items that end within listWindow bytes before it, at least listMinPeers are
//     names by their words alone (every word a known or probable name, none an ordinary word or
//     a non-name), or one is and another has no word known either way, and such items are more
//     than twice the other items ("Leeds, Bradford", "Milo Chair, oak").
//
// Streaming: the evidence is only the items before the run, and the run's own end, which
// SafePrefix already waits for (capRunClosed); the window is shorter than guard's 128 bytes of
// rescanned text, so a windowed scan decides as a whole scan does.

// listWindow is how far before a run its list's earlier items are read.
const listWindow = 120

// listMinPeers is how many earlier items must be names.
const listMinPeers = 2

// listConj are conjunctions that join the last item of a list.
// "bt", "vs" and "def" join the two sides of a result: "Kvitová bt Ostapenko 6-3 7-5".
var listConj = []string{"and", "und", "et", "y", "e", "og", "och", "en", "és", "ja", "i", "bt", "vs", "def", "beat"}

// listCue reports whether the run ws (text[s:e]) is an item of a list whose earlier items are
// names.
func (d nameDetector) listCue(text string, s, e int, ws []nameWord) bool {
	if len(ws) > 3 || !noWords(ws) {
		return false
	}
	for _, w := range ws {
		if w.flags&(gzNotName|gzPlace) != 0 {
			return false
		}
	}
	if !listItemBefore(text, s) || !listItemAfter(text, e) {
		return false
	}
	if len(ws) == 1 && ws[0].e-ws[0].s < 3 {
		return false // "Bd 1" (board 1), "No 4"
	}
	ls := s
	for ls > 0 && text[ls-1] != '\n' && s-ls < listWindow {
		ls--
	}
	if addressNumber(text, ls, s) {
		return false // "Carrera 7 # 71-21, Torre B, Oficina 1204": parts of an address
	}
	if csvRow(text, ls, s) {
		return false // the cells of a CSV row are columns of different things (column.go reads them)
	}
	lineStart := ls == 0 || text[ls-1] == '\n'
	if lineStart && d.ownListThings(text, ls, s) {
		return false // "Venues: Colombo, Kandy" under "Speakers: ..." (structure.go)
	}
	names, unknown, things := d.listPeers(text, ls, s, s-ls < listMarkerLen && lineStart && bareLine(text, e))
	if names+unknown <= 2*things {
		return false
	}
	if names >= listMinPeers || names >= 1 && unknown >= 1 {
		return true
	}
	// a list of names no word of which is known ("15 Volavola, 14 Nayacalevu, 13 Radradra"): the
	// run itself must look like a name
	return unknown >= 3 && things == 0 && ws[len(ws)-1].flags&(gzFirst|gzLast|gzProbable) != 0
}

// lineShape classes a line by how it starts, so that rows of one table or list can be told
// from the lines around them: 'L' a short label and ": " ("Mon: ", "Sopranos: "), 'M' a
// number marker and blanks ("9-11  ", "-8  ", "14 "), 0 other lines or no line start. (CSV
// rows are not rows of one list: their cells are columns of different things.)
func lineShape(text string, ls int) byte {
	if ls > 0 && text[ls-1] != '\n' {
		return 0
	}
	end := ls
	for end < len(text) && text[end] != '\n' && end-ls < listWindow {
		end++
	}
	line := text[ls:end]
	if c := strings.Index(line, ": "); c > 0 && c <= 24 && isLetterAt(line, 0) && !strings.ContainsAny(line[:c], ",;.()[]") {
		return 'L'
	}
	if line != "" && (isDigit(line[0]) || len(line) > 1 && (line[0] == '-' || line[0] == '+') && isDigit(line[1])) {
		i := 1
		for i < len(line) && i < listMarkerLen && strings.IndexByte("0123456789.:)'-", line[i]) >= 0 {
			i++
		}
		if i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			return 'M'
		}
	}
	return 0
}

// listMarkerLen bounds a line's list marker ("14.3 ", "-9  ", "9-11  ").
const listMarkerLen = 8

// addressNumber reports whether text[ls:s], the start of a line before a run, holds a number
// of an address after its marker: three or more digits, or digits joined by "/" or "#" ("99/12
// Sukhumvit Soi 24", "Carrera 7 # 71-21").
func addressNumber(text string, ls, s int) bool {
	for i := min(ls+listMarkerLen, s); i < s; i++ {
		c := text[i]
		if c == '#' || c == '/' && i > 0 && isDigit(text[i-1]) {
			return true
		}
		if isDigit(c) && (i == ls || !isDigit(text[i-1])) {
			j := i
			for j < s && isDigit(text[j]) {
				j++
			}
			if j-i >= 3 {
				return true
			}
		}
	}
	return false
}

// bareLine reports whether nothing but blanks, digits, punctuation and short words in
// parentheses follows e on its line: the line is one list item ("4. Dinh Bao Chau", "Tiny
// Robot Games", "-8  Højgaard (DEN)"), not a sentence.
func bareLine(text string, e int) bool {
	for i := e; i < len(text) && text[i] != '\n'; i++ {
		if isLetterAt(text, i) && (i == 0 || !isLetterAt(text, i-1)) {
			we := wordEnd(text, i)
			if we-i > 3 || !allCaps(text[i:we]) && we-i > 2 {
				return false
			}
			i = we - 1
		}
	}
	return true
}

// listPeers counts the list items that end in the listWindow bytes before s: items that are
// names by their words, and other items.
// Items on lines above count when their line starts as the run's line does (lineShape: rows
// of one rota or table), or when the run is a whole line (vertical) and they are whole lines
// too, and then only as names or other items: a signature block ("Cordialmente,", a name, a
// role) is no roster.
func (d nameDetector) listPeers(text string, ls, s int, vertical bool) (names, unknown, things int) {
	lo := max(0, s-listWindow)
	shape := lineShape(text, ls)
	if !vertical && shape == 0 {
		lo = max(lo, ls)
	}
	pls := -1 // the start of the line being read, once known
	peerShape := byte(0)
	if shape != 0 {
		for p := lo; p > 0 && lo-p < listWindow; p-- {
			if text[p-1] == '\n' {
				pls, peerShape = p, lineShape(text, p)
				break
			}
		}
		if lo == 0 {
			pls, peerShape = 0, lineShape(text, 0)
		}
	}
	for lo > 0 && lo < s && !utf8.RuneStart(text[lo]) {
		lo++
	}
	i := lo
	if i > 0 && isLetterAt(text, i) {
		i = wordEnd(text, i) // a word cut by the window
	}
	for i < s {
		if i > 0 && text[i-1] == '\n' && i != pls {
			pls, peerShape = i, lineShape(text, i)
		}
		if !isLetterAt(text, i) || i > 0 && isWordByte(text[i-1]) {
			_, n := utf8.DecodeRuneInString(text[i:])
			i += max(n, 1)
			continue
		}
		we := wordEnd(text, i)
		if we <= i {
			i++
			continue
		}
		if !isCapWord(text[i:we]) || !listItemBefore(text, i) {
			i = we
			continue
		}
		// the run: up to three capitalised words joined by single spaces
		name, thing, known := true, false, false
		re, k := we, 0
		for w := i; ; {
			f := d.flags(text[w:re])
			if f&(gzNotName|gzPlace) != 0 || f&gzWord != 0 && f&(gzFirst|gzLast) == 0 {
				name, thing = false, true
			} else if f&(gzFirst|gzLast|gzProbable) != 0 {
				known = true
			}
			k++
			if k == 4 || re+1 >= s || text[re] != ' ' || !isLetterAt(text, re+1) {
				break
			}
			ne := wordEnd(text, re+1)
			if !isCapWord(text[re+1 : ne]) {
				break
			}
			w, re = re+1, ne
		}
		if re <= s && k <= 3 && listItemAfter(text, re) && (i >= ls || shape != 0 && pls >= 0 && peerShape == shape || vertical && bareLine(text, re) && !(name && !known)) {
			switch {
			case thing:
				things++
			case name && known:
				names++
			case name:
				unknown++ // no word known either way: "Volavola"
			}
		}
		i = re
	}
	return names, unknown, things
}

// listItemBefore reports whether a list item may start at s: at a line start after an
// optional marker, or after a separator or a conjunction.
func listItemBefore(text string, s int) bool {
	j := s
	blanks := 0
	for j > 0 && (text[j-1] == ' ' || text[j-1] == '\t') {
		if text[j-1] == '\t' {
			blanks += 2
		}
		blanks++
		j--
	}
	if j == 0 || text[j-1] == '\n' || blanks >= 2 && j < s {
		return true
	}
	if strings.IndexByte(",;/&|:", text[j-1]) >= 0 || strings.HasSuffix(text[:j], "↔") {
		return true
	}
	if blanks == 1 {
		w := wordEndingAt(text, j)
		for _, c := range listConj {
			if w == c {
				return true
			}
		}
	}
	// a marker: "3. ", "14 ", "-9  ", "62' ", "9-11  "
	m := j
	for m > 0 && j-m < 8 && strings.IndexByte("0123456789.)'-*+", text[m-1]) >= 0 {
		m--
	}
	if m == j || isDigit(text[j-1]) && blanks == 0 {
		return false
	}
	m = skipBlanksBack(text, m)
	return m == 0 || text[m-1] == '\n' || strings.IndexByte(",;/&|", text[m-1]) >= 0
}

// listItemAfter reports whether a list item may end at e.
func listItemAfter(text string, e int) bool {
	if e >= len(text) {
		return true
	}
	switch c := text[e]; c {
	case ',', ';', '/', '&', '|', ')', '\n', '\t', '\r':
		return true
	case '.':
		return e+1 == len(text) || text[e+1] == ' ' || text[e+1] == '\n'
	case ' ':
		if e+1 == len(text) {
			return false
		}
		switch n := text[e+1]; {
		case strings.IndexByte("(&/|- \t", n) >= 0 || isDigit(n):
			return true
		case strings.HasPrefix(text[e+1:], "↔"):
			return true
		}
		w := text[e+1 : wordEnd(text, e+1)]
		if len(w) > 1 && e+1+len(w) < len(text) && text[e+1+len(w)] == ' ' {
			// not the one-letter "y", "e", "i" after a word: "Apellido y nombre:"
			for _, c := range listConj {
				if w == c {
					return true
				}
			}
		}
	}
	return false
}

// rowStart reports whether a row of a table or a line of a list starts at s: at a line start
// after an optional marker, after a tab, two spaces or a spaced dash (" - ", " – ": the second
// player of a pairing).
func rowStart(text string, s int) bool {
	j := skipBlanksBack(text, s)
	if j == 0 || text[j-1] == '\n' {
		return true
	}
	if s-j >= 2 || text[s-1] == '\t' {
		return true
	}
	if s-j == 1 && j >= 2 && text[j-2] == ' ' && (text[j-1] == '-') {
		return true
	}
	if s-j == 1 && strings.HasSuffix(text[:j], " –") {
		return true
	}
	// a marker: "3. ", "12) "
	m := j
	for m > 0 && j-m < 4 && strings.IndexByte("0123456789.)", text[m-1]) >= 0 {
		m--
	}
	return m < j && (m == 0 || text[m-1] == '\n') && !isDigit(text[j-1])
}

// familyCommaBefore returns the start of a family name written first before the one-word run
// w, as rows of attendance lists, pairings and results write it ("Mwale, Tiwonge - present",
// "Bd 2  Ismailov, Rauf (2276)"), or -1. The family name starts a row, the given name ends an
// item and no further ", Capitalised" item follows on the line (a list of family names: "Subs:
// Baptiste, Wojcik, Lemaire"); both are name-shaped and one is a known or probable name.
func (d nameDetector) familyCommaBefore(text string, w nameWord) int {
	s := w.s
	if s < 4 || text[s-1] != ' ' || text[s-2] != ',' {
		return -1
	}
	if w.flags&(gzNotName|gzPlace|gzAmbiguous) != 0 || w.flags&gzWord != 0 && w.flags&gzFirst == 0 || w.e-w.s < 2 {
		return -1
	}
	e := s - 2
	b := e
	for b > 0 && (isAlpha(text[b-1]) || text[b-1] >= utf8.RuneSelf || text[b-1] == '-' || text[b-1] == '\'') {
		b--
	}
	if b == e || !isCapWord(text[b:e]) || allCaps(text[b:e]) {
		return -1
	}
	start := b
	if pb := particleBefore(text, b); pb >= 0 && rowStart(text, pb) {
		start = pb // "Dos Santos, Jéssica", "Ní Chonaill, Róisín" (structure.go)
	} else if !rowStart(text, b) {
		return -1
	}
	f := d.flags(text[b:e])
	if f&(gzNotName|gzPlace|gzAmbiguous) != 0 || f&gzWord != 0 && f&gzLast == 0 || e-b < 2 {
		return -1
	}
	if f&(gzLast|gzProbable) == 0 {
		return -1 // the first word must look like a family name: not "Aigerim, Bruno" (two given names)
	}
	if !listItemAfter(text, w.e) || w.e+2 < len(text) && text[w.e] == ',' && text[w.e+1] == ' ' && isUpper(text[w.e+2]) {
		return -1
	}
	return start
}

// familyCommaPending reports whether the word text[cs:ce] may still become the family name
// of a familyCommaBefore pair: it starts a row and ", " follows it, and the line has not
// ended within familyCommaAhead bytes. SafePrefix holds it until then.
func familyCommaPending(text string, cs, ce int) bool {
	if ce >= len(text) || text[ce] != ',' || !rowStart(text, cs) {
		return false
	}
	if i := strings.IndexByte(text[ce:], '\n'); i >= 0 {
		return false // decided: the whole line is known
	}
	return len(text)-ce < familyCommaAhead
}

// familyCommaAhead bounds how long SafePrefix holds a row's first word.
const familyCommaAhead = 48

// initialsRun scores a run that starts with initials at a list item ("J. R. Okafor", "T.
// Mensah", a scorecard's "A. Brathwaite"): one to three capital letters with full stops, then
// one or two capitalised words that are name-shaped (no ordinary word, non-name or place), at
// least one of three or more letters, ending an item. It returns the run's end, or -1.
func (d nameDetector) initialsRun(text string, s int) int {
	if !listItemBefore(text, s) {
		return -1
	}
	j, k := s, 0
	for k < 3 && j+2 < len(text) && isUpper(text[j]) && text[j+1] == '.' && (j+2 == len(text) || !isLetterAt(text, j+2)) {
		j += 2
		if j < len(text) && text[j] == ' ' {
			j++
		}
		k++
	}
	if k == 0 || j >= len(text) || !isLetterAt(text, j) {
		return -1
	}
	e, words, long := j, 0, false
	for words < 2 && j < len(text) && isLetterAt(text, j) {
		we := wordEnd(text, j)
		w := text[j:we]
		if !isCapWord(w) || allCaps(w) {
			break
		}
		f := d.flags(w)
		if f&(gzNotName|gzPlace) != 0 || f&gzWord != 0 && f&(gzFirst|gzLast) == 0 {
			return -1
		}
		long = long || we-j >= 3
		e, words = we, words+1
		if we+1 >= len(text) || text[we] != ' ' || !isLetterAt(text, we+1) || !isUpper(text[we+1]) {
			break
		}
		j = we + 1
	}
	if words == 0 || !long || !listItemAfter(text, e) {
		return -1
	}
	return e
}

// initialsAfter returns the end of initials written after a family name that starts a list
// item ("Tanaka H.", "Brennan P. J."), or -1: one or two capital letters with full stops that
// end the item.
func initialsAfter(text string, s, e int) int {
	if !listItemBefore(text, s) {
		return -1
	}
	j, k := e, 0
	for k < 2 && j+2 < len(text) && text[j] == ' ' && isUpper(text[j+1]) && text[j+2] == '.' && (j+3 == len(text) || !isLetterAt(text, j+3)) {
		j += 3
		k++
	}
	if k == 0 {
		return -1
	}
	if j < len(text) && !listItemAfter(text, j) {
		return -1
	}
	return j
}

// listPending reports whether SafePrefix must hold the capitalised word text[cs:ce] for the
// evidence of this file: an initial that may start an initialsRun, or the first word of a row
// that may become a family name written first (familyCommaPending).
func (d nameDetector) listPending(text string, cs, ce int) bool {
	if ce-cs == 1 && ce < len(text) && text[ce] == '.' && listItemBefore(text, cs) {
		return true
	}
	if ce-cs >= 3 && allCaps(text[cs:ce]) && listItemBefore(text, cs) && d.lowerWordOK(text[cs:ce]) {
		return true // a family name in capitals that may start a capsRowSpan
	}
	if f := d.flags(text[cs:ce]); f&(gzLast|gzProbable) == 0 || f&(gzNotName|gzPlace|gzAmbiguous) != 0 ||
		f&gzWord != 0 && f&gzLast == 0 {
		return false // not a family name of familyCommaBefore
	}
	if familyCommaPending(text, cs, ce) {
		return true
	}
	// the line is known: the next word decides whether this one starts its name
	if ns := ce + 2; ce+2 < len(text) && text[ce] == ',' && text[ce+1] == ' ' && isLetterAt(text, ns) {
		ne := wordEnd(text, ns)
		return isCapWord(text[ns:ne]) && d.familyCommaBefore(text, nameWord{ns, ne, d.flags(text[ns:ne])}) == cs
	}
	return false
}

// capsRowSpan returns the end of a name in a list item or a row that starts with a family name
// in capitals, followed by a given name in capitals or capitalised: "KOVALENKO Oksana (UA)",
// "MBEKI THANDO       22:00-06:00", or -1. Both words must look like names to the gazetteer or
// the model (lowerWordOK, or a known or probable given name); in capitals both, the row must
// start there and the item end at blanks, a parenthesis or the line end.
func (d nameDetector) capsRowSpan(text string, s, e int) int {
	if e-s < 3 || !allCaps(text[s:e]) || !listItemBefore(text, s) || !d.capsNameWord(text[s:e]) {
		return -1
	}
	if e+1 >= len(text) || text[e] != ' ' || !isLetterAt(text, e+1) {
		return -1
	}
	ns := e + 1
	ne := wordEnd(text, ns)
	w := text[ns:ne]
	switch {
	case ne-ns < 2:
		return -1
	case allCaps(w):
		if !d.capsNameWord(w) || !rowStart(text, s) || ne < len(text) && !(strings.HasPrefix(text[ne:], "  ") ||
			text[ne] == '\t' || text[ne] == '\n' || strings.HasPrefix(text[ne:], " (")) {
			return -1
		}
	case isCapWord(w):
		f := d.flags(w)
		if f&(gzFirst|gzProbable) == 0 || f&(gzNotName|gzPlace|gzAmbiguous) != 0 || f&gzWord != 0 && f&gzFirst == 0 {
			return -1
		}
	default:
		return -1
	}
	if !listItemAfter(text, ne) {
		return -1
	}
	return ne
}

// capsNameWord reports whether w, in capitals, looks like a name and like no ordinary word
// ("GRACE CHURCH" is a building; "THANDO" and "KARLSSON" are names).
func (d nameDetector) capsNameWord(w string) bool {
	return d.lowerWordOK(w) && nameFlags(w)&gzAmbiguous == 0 && d.modelFlags(w, -1e9) != gzWord
}

// subjectVerbs after a single word that starts a sentence make it a person's given name when the
// model takes it for a name and the gazetteer does not know it ("Kasimir will bring the
// projector", "Wairimu said she can"). A known given name alone stays under the threshold, as
// TestScan requires ("Michael said it works.").
// Not "is" or "was": things are subjects of those too ("Evensong is in the chapel").
var subjectVerbs = []string{"will", "has", "had", "said", "says", "told", "asked", "wrote",
	"joined", "leaves", "left", "covers"}

// sentenceSubject reports whether the one-word run text[s:e] starts a line or a sentence and a
// verb of subjectVerbs follows it.
func sentenceSubject(text string, s, e int) bool {
	return sentenceStartAt(text, s) && followedBy(text, e, subjectVerbs)
}

// sentenceStartAt reports whether s starts a line or a sentence (not after an initial "J.").
func sentenceStartAt(text string, s int) bool {
	j := skipBlanksBack(text, s)
	if j < s && j >= 3 && text[j-1] == '"' {
		j-- // a quotation ends the sentence before: `... early." Alvarez scored`
	}
	return j == 0 || text[j-1] == '\n' || j < s && j >= 2 && strings.IndexByte(".!?;", text[j-1]) >= 0 && !isUpper(text[j-2])
}

// csvRow reports whether the line holding s (from ls) is a CSV row: two commas before s with no
// blank after them ("Pham Thi Mai,Ho Chi Minh City,45 Lê Lợi, Phường Bến Nghé, Quận 1").
func csvRow(text string, ls, s int) bool {
	commas := 0
	for i := ls; i < s; i++ {
		if text[i] == ',' && i+1 < len(text) && text[i+1] != ' ' {
			commas++
		}
	}
	return commas >= 2
}
