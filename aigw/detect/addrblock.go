package detect

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
	"unsafe"
)

// Address blocks and units of more countries (addr12). A letter, a form or a signature writes
// an address over lines: the street on one, the locality and postal code on the next one or
// two ("41 Leinster Road,\nRathmines, Dublin 6, D06 K2P9", "Lindenstraße 42a\n48143 Münster",
// "Flat 2/1, 48 Hyndland Road\nGlasgow\nG11 5PU"). The line breaks play the part of the ", "
// that a one-line address has, so the locality rules of address.go and addrworld.go are run on
// the next lines read that way: whatever shape of locality and postal code they know on one
// line, they know on several. Units are written after the house number in the way of each
// country ("Storgatan 14 B lgh 1102", "ul. Kościuszki 17 m. 4", "Hämeenpuisto 31 A 9",
// "Kirkeveien 64 H0203", "Nørrebrogade 188, 3. th.", "Strada Horea 14, ap. 3").

const (
	blockLines   = 3   // locality lines read after the street's line
	blockLineMax = 64  // a longer line is prose, not an address line
	blockBufMax  = 200 // bytes of the lines read as one
)

// blockLocality returns the end of a locality with a postal code or state written on the lines
// after a street that ends its line at e (after an optional comma), or -1. The next lines,
// each short and not blank, are read as one line joined by ", ".
func blockLocality(text string, e int) int {
	// Only a line that ends with a comma asks to be continued: some writers label the street
	// line of a letter's block alone ("Hauptstraße 5\n10115 Berlin"; set 7 does), and the
	// comma is the writer's own sign that the next line is the same address.
	if e >= len(text) || text[e] != ',' {
		return -1
	}
	k := e + 1
	for k < len(text) && (text[k] == ' ' || text[k] == '\t' || text[k] == '\r') {
		k++
	}
	if k >= len(text) || text[k] != '\n' {
		return -1
	}
	var buf [blockBufMax]byte
	var pos [blockBufMax]int32 // the text offset of each byte of buf
	n := 0
	put := func(c byte, p int) bool {
		if n == len(buf) {
			return false
		}
		buf[n], pos[n] = c, int32(p)
		n++
		return true
	}
	for line := 0; line < blockLines && k < len(text) && text[k] == '\n'; line++ {
		s := k + 1
		for s < len(text) && (text[s] == ' ' || text[s] == '\t') {
			s++
		}
		// Look no further than a line may be long: the scan stays linear in the text.
		lim := min(len(text), s+blockLineMax+2)
		le := strings.IndexByte(text[s:lim], '\n')
		switch {
		case le >= 0:
			le += s
		case lim == len(text):
			le = len(text)
		default:
			le = lim // too long: the check below stops here
		}
		t := le
		for t > s && (text[t-1] == ' ' || text[t-1] == '\t' || text[t-1] == '\r' || text[t-1] == ',') {
			t--
		}
		if t == s || t-s > blockLineMax || strings.IndexAny(text[s:t], ":@|\t") >= 0 {
			break // a blank line, prose, or a field ("Tel: ...", "VAT No: ...")
		}
		if !put(',', k) || !put(' ', k) {
			break
		}
		full := true
		for p := s; p < t; p++ {
			if !put(text[p], p) {
				full = false
				break
			}
		}
		if !full {
			break
		}
		k = le
	}
	if n == 0 {
		return -1
	}
	// The bytes of buf live on this stack frame and the callee only returns offsets into them.
	b := unsafe.String(&buf[0], n)
	le := localityAfter(b, 0)
	if le <= 2 || !blockCodeShaped(b[:le]) {
		return -1
	}
	return int(pos[le-1]) + 1
}

// blockCodeShaped reports whether the locality b, read from lines after a street, holds a postal
// code of a shape that numbers on the lines of a letter or an invoice do not have: letters and
// digits mixed ("D06 K2P9", "G11 5PU", "V6G 1M8"), digit groups ("1100-053", "582 23"), a state
// before the code ("Preston VIC 3072") or a code before the city ("48143 Münster"). A bare number
// after a word ("Springfield\nVAT 1234567", "London\n2024", "Order 4412345") is not taken: on a
// single line those rules read a district's code, but the next lines of a street are as often
// an account, an order or a year.
func blockCodeShaped(b string) bool {
	// the last token with a digit
	for te := len(b); te > 0; {
		ts := te
		for ts > 0 && b[ts-1] != ' ' && b[ts-1] != ',' {
			ts--
		}
		if strings.IndexFunc(b[ts:te], func(r rune) bool { return r >= '0' && r <= '9' }) >= 0 {
			return codeStrong(b, ts, te)
		}
		te = ts
		for te > 0 && (b[te-1] == ' ' || b[te-1] == ',') {
			te--
		}
	}
	return false
}

// codeStrong reports whether the token b[cs:ce] (with a digit) is a postal code of a strong shape
// in its place (blockCodeShaped).
func codeStrong(b string, cs, ce int) bool {
	tok := b[cs:ce]
	if strings.ContainsAny(tok, "-/") || strings.IndexFunc(tok, func(r rune) bool { return r >= 'A' && r <= 'Z' }) >= 0 {
		return true
	}
	// the word before: a state code, or the first digit group of a split code ("582 23")
	p := cs - 1
	for p > 0 && b[p-1] != ' ' && b[p-1] != ',' {
		p--
	}
	if p >= 0 && p < cs-1 {
		prev := b[p : cs-1]
		if usStates[prev] || allDigits(prev) {
			return true
		}
	}
	// a city after the code: "48143 Münster", "3025 AJ Rotterdam"
	k := ce + 1
	if k+3 < len(b) && b[ce] == ' ' && isUpper(b[k]) && isUpper(b[k+1]) && b[k+2] == ' ' {
		k += 3
	}
	if k < len(b) && b[k-1] == ' ' && isLetterAt(b, k) && isCapWord(b[k:wordEnd(b, k)]) {
		return true
	}
	return false
}

// unitWordsAfter are the lower-case words of a flat or staircase written after the house number
// (Polish "m.", Swedish "lgh", Romanian "ap.", "bl.", "sc.", "et.", French "app.", Portuguese
// "casa", Czech "byt", English "apt", "unit", "flat").
var unitWordsAfter = []string{"m. ", "lgh ", "lgh. ", "ap. ", "app. ", "apt ", "apt. ", "bl. ", "sc. ",
	"et. ", "casa ", "byt ", "lok. ", "unit ", "flat ", "suite ", "piso "}

// unitAfterNumber extends a house number ending at e with the unit written after it, or returns
// e: a staircase letter and flat number (" A 9", " B"), a Norwegian flat code (" H0203"), a flat
// word and number (" m. 4", " lgh 1102", ", ap. 3"), a Danish floor and side (", 3. th.",
// ", st. tv."), a Dutch letter suffix ("118-B"). A staircase letter may be followed by one more
// unit ("14 B lgh 1102"); no more is read.
func unitAfterNumber(text string, e int) int {
	if e+2 < len(text) && text[e] == '-' && isUpper(text[e+1]) && !isWordByte(text[e+2]) {
		e += 2 // "Schiedamseweg 118-B"
	}
	if u := staircase(text, e); u > e {
		return unitWordAfter(text, u)
	}
	return unitWordAfter(text, e)
}

// staircase returns the end of a staircase or entrance letter, with the flat number after it,
// after the house number ending at e ("Hämeenpuisto 31 A 9", "Storgatan 14 B"), or e.
func staircase(text string, e int) int {
	j := e + 1
	if j >= len(text) || text[e] != ' ' || !isUpper(text[j]) || j+1 < len(text) && isWordByte(text[j+1]) {
		return e
	}
	u := j + 1
	if u+1 < len(text) && text[u] == ' ' && isDigit(text[u+1]) {
		if d := digitsAt(text, u+1); d-u-1 <= 4 && numRightOK(text, d) {
			return d
		}
	}
	if unitEnds(text, u) {
		return u
	}
	return e
}

// unitWordAfter returns the end of a flat word and number, a Norwegian flat code or a Danish
// floor and side after e, or e.
func unitWordAfter(text string, e int) int {
	j := e
	comma := j < len(text) && text[j] == ','
	if comma {
		j++
	}
	if j+2 >= len(text) || text[j] != ' ' {
		return e
	}
	j++
	// A Norwegian flat code: a letter and four digits ("H0203").
	if !comma && isUpper(text[j]) && digitsAt(text, j+1) == j+5 && numRightOK(text, j+5) {
		return j + 5
	}
	for _, w := range unitWordsAfter {
		if strings.HasPrefix(text[j:], w) {
			if ue := unitID(text, j+len(w)); ue > 0 {
				return ue
			}
			return e
		}
	}
	// A Danish floor and side: ", 3. th.", ", 2. tv.", ", st. mf.", ", 1. sal".
	if comma {
		f := j
		if d := digitsAt(text, j); d > j && d-j <= 2 && d < len(text) && text[d] == '.' {
			f = d + 1
		} else if strings.HasPrefix(text[j:], "st.") || strings.HasPrefix(text[j:], "kl.") {
			f = j + 3
		}
		if f > j {
			for _, side := range [...]string{" th.", " tv.", " mf.", " sal"} {
				if strings.HasPrefix(text[f:], side) {
					return f + len(side)
				}
			}
		}
	}
	return e
}

// unitEnds reports whether the unit ending at u is followed by what follows a street: a comma, a
// line end, the end of the text or a unit word.
func unitEnds(text string, u int) bool {
	if u >= len(text) || text[u] == ',' || text[u] == '\n' || text[u] == '\r' {
		return true
	}
	if text[u] != ' ' {
		return false
	}
	for _, w := range unitWordsAfter {
		if strings.HasPrefix(text[u+1:], w) {
			return true
		}
	}
	return false
}

// streetNumberAfterType extends a street ending with its English type at e with the number that
// follows the type in Singapore, Malaysia and New Zealand ("Bedok North Avenue 3, #08-112",
// "Jurong West Street 42,", "State Highway 2, RD 3"): one to three digits before a comma or a
// line end.
func streetNumberAfterType(text string, e int) int {
	j := space(text, e)
	if j < 0 || !isDigit(text[j]) {
		return e
	}
	d := digitsAt(text, j)
	if d-j > 3 || d >= len(text) || text[d] != ',' && text[d] != '\n' {
		return e
	}
	return d
}

// fourDigitEnd returns the end of a four-digit postal code at j where the address visibly ends
// (at the end of the text or before punctuation or a line break), or -1: elsewhere four digits
// after a word may be a year.
func fourDigitEnd(text string, j int) int {
	d := digitsAt(text, j)
	if d-j != 4 || d < len(text) && strings.IndexByte(".,;)\n\r\"", text[d]) < 0 {
		return -1
	}
	if d+1 < len(text) && (text[d] == '.' || text[d] == ',') && isDigit(text[d+1]) {
		return -1
	}
	return d
}

// secondUnit extends a unit that starts an address with a second one before the comma: the
// block after a lot ("Lot 12 Blk 7, Camella Homes"), or returns u.
func secondUnit(text string, u int) int {
	s := space(text, u)
	if s < 0 || !isUpper(text[s]) {
		return u
	}
	we := wordEnd(text, s)
	if we-s > 5 || !unitStartWord(text[s:we]) {
		return u
	}
	t := space(text, we)
	if t < 0 {
		return u
	}
	if ue := unitID(text, t); ue > 0 && ue < len(text) && text[ue] == ',' {
		return ue
	}
	return u
}

// unitStartWord reports whether w names a block, lot or phase that may follow another unit.
func unitStartWord(w string) bool {
	switch w {
	case "Blk", "Block", "Lot", "Phase", "Bldg", "Tower":
		return true
	}
	return false
}

// chainHasStreetWord reports whether a word of a street type (streetWords) stands in
// text[s:e]: "No. 27, Jalan Bunga Raya 3, ..." is a street address whatever its country.
func chainHasStreetWord(text string, s, e int) bool {
	for i := s; i < e; {
		if !isLetterAt(text, i) {
			i++
			continue
		}
		we := wordEnd(text, i)
		if we > e {
			break
		}
		if isUpper(text[i]) && streetKind(text, i, we) != 0 {
			return true
		}
		i = we
	}
	return false
}

// blockFirst matches a Singapore block written before its number ("Blk 512 Bedok North Avenue
// 3, #08-112, Singapore 460512") at the word text[i:we], or -1.
func blockFirst(text string, i, we int) (int, float64) {
	if w := text[i:we]; w != "Blk" && w != "Block" && w != "BLK" {
		return -1, 0
	}
	n := we
	if n < len(text) && text[n] == '.' {
		n++
	}
	n = space(text, n)
	if n < 0 || !isDigit(text[n]) {
		return -1, 0
	}
	return addressAt(text, n)
}

// hashUnitFirst matches a Canadian unit written before the house number with '#' and a dash
// ("#305 - 1718 Nelson Street", "#12-450 Main St") at i, or -1.
func hashUnitFirst(text string, i int) (int, float64) {
	ue := unitID(text, i+1)
	if ue < 0 || !isDigit(text[i+1]) {
		return -1, 0
	}
	n := ue
	switch {
	case strings.HasPrefix(text[n:], " - "):
		n += 3
	case strings.HasPrefix(text[n:], "-"):
		n++
	default:
		return -1, 0
	}
	if n >= len(text) || !isDigit(text[n]) {
		return -1, 0
	}
	return addressAt(text, n)
}

// sectorCode returns the end of a sector code of a letter, a hyphen and numbers ("F-7/3",
// "G-11/2", "I-8") at j, or -1.
func sectorCode(text string, j int) int {
	if j+2 >= len(text) || !isUpper(text[j]) || text[j+1] != '-' || !isDigit(text[j+2]) {
		return -1
	}
	e := digitsAt(text, j+2)
	if e-j-2 > 2 {
		return -1
	}
	if e+1 < len(text) && text[e] == '/' && isDigit(text[e+1]) {
		e = digitsAt(text, e+1)
	}
	if e < len(text) && isWordByte(text[e]) {
		return -1
	}
	return e
}

// romanNumeral reports whether w is a roman numeral of a street named after a ruler or pope
// ("Jana Pawła II", "Rama IV", "Gulberg III").
func romanNumeral(w string) bool {
	if len(w) == 0 || len(w) > 4 {
		return false
	}
	for i := 0; i < len(w); i++ {
		if w[i] != 'I' && w[i] != 'V' && w[i] != 'X' {
			return false
		}
	}
	return true
}

// laneOf returns the start of the street that a lane starting at the word text[i:we] belongs to
// ("Jl. Gatot Subroto Gg. Mawar No. 7": the lane "Gg." off the road "Jl."), or i: up to three
// capitalised words and a street type written before the name stand right before the lane.
func laneOf(text string, i, we int) int {
	if streetKind(text, i, we)&stPrefix == 0 {
		return i
	}
	j := i
	for n := 0; n < 4; n++ {
		if j < 2 || text[j-1] != ' ' || text[j-2] == ' ' {
			return i
		}
		e := j - 1
		if text[e-1] == '.' {
			e--
		}
		s := e
		for s > 0 && isAlpha(text[s-1]) || s > 0 && text[s-1] >= 0x80 {
			s--
		}
		if s == e || e-s > 20 || s > 0 && !isSpaceByte(text[s-1]) && text[s-1] != ':' && text[s-1] != ',' {
			return i
		}
		if n > 0 && streetKind(text, s, e)&stPrefix != 0 {
			return s // the road's type: "Jl.", "Jalan"
		}
		if !isCapWord(text[s:e]) {
			return i
		}
		j = s
	}
	return i
}

// bracketedProvince returns the end of a province written in brackets after a city ending at ce
// (" (Québec)", " (QC)"), or -1.
func bracketedProvince(text string, ce int) int {
	if ce+3 >= len(text) || text[ce] != ' ' || text[ce+1] != '(' || !isLetterAt(text, ce+2) {
		return -1
	}
	we := wordEnd(text, ce+2)
	if we >= len(text) || text[we] != ')' || !isCapWord(text[ce+2:we]) && !usStates[text[ce+2:we]] {
		return -1
	}
	return we + 1
}

// streetPreposition reports whether w is a capitalised preposition that begins German and Dutch
// street names ("Am Wiesengrund 7", "Op de Berg 3"): a capitalised word before it names the
// building or venue, not the street.
func streetPreposition(w string) bool {
	switch w {
	case "Am", "An", "Auf", "Im", "Zum", "Zur", "Unter", "Hinter", "Op", "Aan", "Bij":
		return true
	}
	return false
}

// numberedWordBefore reports whether the word ending at e names something numbered ("Sector",
// "Phase", "Block", "Road", "Street", "Phường"): four digits after it are its number, not a
// postal code.
func numberedWordBefore(text string, e int) bool {
	s := e
	for s > 0 && (isAlpha(text[s-1]) || text[s-1] >= 0x80) {
		s--
	}
	w := text[s:e]
	return slices.Contains(chainWords, w) || districtWords[w] || unitStartWord(w) || streetKind(text, s, e) != 0
}

// caselessWord reports whether w is written in a script without capitals (Devanagari, Bengali,
// Tamil, ...): a part of an address chain there cannot show itself by a capital
// ("मकान नं. 112, सेक्टर 14, इंदिरा नगर, लखनऊ 226016").
func caselessWord(w string) bool {
	r, _ := utf8.DecodeRuneInString(w)
	return r >= 0x0900 && r <= 0x0dff // the Indic scripts
}

// markedWordEnd returns the end of the word at i in a script whose vowel signs and viramas are
// combining marks (Devanagari "सेक्टर"): letters and marks.
func markedWordEnd(text string, i int) int {
	for i < len(text) {
		r, n := utf8.DecodeRuneInString(text[i:])
		if !unicode.IsLetter(r) && !unicode.Is(unicode.M, r) {
			break
		}
		i += n
	}
	return i
}

// unitChainStartAt reports whether an Indian, Pakistani or Malaysian unit-first chain may start at
// i ("House No. 112-B, ...", "No. 27, Jalan ...", "H.No. 5-9-22, ..."), or the text ends inside
// its start words: SafePrefix holds the word.
func unitChainStartAt(text string, i int) bool {
	for _, st := range unitChainStarts {
		if strings.HasPrefix(text[i:], st.p) || strings.HasPrefix(st.p, text[i:]) {
			return true
		}
	}
	return false
}
