package detect

import "strings"

// Names known from the structure of data exports (detect12, study set 18): a reader takes the
// whole value of "cn: Constanza Reyes Bravo", "FN:Yasmin Haddad", "ATTENDEE;CN=Edgars Kalniņš:",
// "member: cn=Ifeoma Eze,ou=Staff" or of a CSV cell under "last_name" ("bin Rosli") for a
// person because the key or the column says so, whatever the words are; and the keys
// themselves ("objectClass:", "dn:", "uid:", "cn=") are attribute names, never people.
//
//   - exportKey: a directory, card or calendar attribute name (a closed class of LDIF, vCard
//     and iCalendar keys) or a camelCase identifier starting in lower case, at a line start
//     before ':' or ';', or a DN component's key before '=': no name starts there.
//   - nameCell: the value of a key that names a person (the LDIF/vCard/iCalendar name keys,
//     a "key: value" line or a quoted field whose key personKey accepts, a delimited cell
//     under a name header) is one name when its words are name-shaped: capitalised words,
//     lower-case particles ("bin", "binti", "van der", "da"), initials, or all lower-case
//     words the model takes for names; no digits, at most one ordinary word and not first,
//     no non-name word. The value ends at the line end, or at the delimiter of its kind.
//
// Streaming: the key and the header are before the value; the value's end is read forward,
// but only to the first delimiter or line end, which SafePrefix already waits for before it
// passes a capitalised run (capRunClosed). A lower-case word that starts a name cell is held
// (nameCellStart).

// exportKeys are attribute names of LDIF (RFC 4519, inetOrgPerson), vCard (RFC 6350) and
// iCalendar (RFC 5545) records that may be misread as words of a name.
var exportKeys = map[string]bool{
	"dn": true, "cn": true, "sn": true, "uid": true, "ou": true, "dc": true, "o": true, "l": true,
	"st": true, "c": true, "gn": true, "mail": true, "member": true, "memberuid": true, "gecos": true,
	"fn": true, "n": true, "org": true, "tel": true, "adr": true, "email": true, "bday": true,
	"nickname": true, "rev": true, "prodid": true, "version": true, "begin": true, "end": true,
	"method": true, "organizer": true, "attendee": true, "summary": true, "description": true,
	"location": true, "dtstart": true, "dtend": true, "dtstamp": true, "rrule": true, "status": true,
	"title": true, "manager": true, "changetype": true, "objectclass": true, "givenname": true,
	"displayname": true, "initials": true, "kind": true, "categories": true, "url": true,
}

// exportNameKeys are the keys among them whose value is a person's name (or a part of it).
var exportNameKeys = map[string]bool{
	"cn": true, "sn": true, "gn": true, "givenname": true, "displayname": true, "gecos": true,
	"fn": true, "n": true, "organizer": false, "attendee": false,
}

// exportKey reports whether the word text[s:e] is an attribute name of an export record: at a
// line start before ':' or ';' ("objectClass: inetOrgPerson", "ATTENDEE;CN=..."), or a DN
// component's key before '=' ("member: cn=Ifeoma Eze,ou=Staff").
func exportKey(text string, s, e int) bool {
	if e >= len(text) || e-s > 16 {
		return false
	}
	c := text[e]
	switch {
	case c == '=':
		if s > 0 && text[s-1] != ' ' && text[s-1] != ',' && text[s-1] != ':' && text[s-1] != '\n' {
			return false
		}
	case c == ':' || c == ';':
		if s > 0 && text[s-1] != '\n' {
			return false
		}
	default:
		return false
	}
	var buf [16]byte
	lw, ok := lowerInto(buf[:0:len(buf)], text[s:e])
	if !ok {
		return false
	}
	if exportKeys[string(lw)] {
		return c != '=' || dnKey(string(lw))
	}
	// a camelCase identifier: "postalAddress", "telephoneNumber"
	if c != ':' || !isLower(text[s]) {
		return false
	}
	for i := s + 1; i < e; i++ {
		if isUpper(text[i]) && isLower(text[i-1]) {
			return true
		}
	}
	return false
}

// dnKey reports whether k (lower case) is the key of a DN component.
func dnKey(k string) bool {
	switch k {
	case "cn", "ou", "dc", "uid", "o", "l", "st", "c":
		return true
	}
	return false
}

// cellKind tells how a name cell's value ends.
const (
	cellLine  = iota // the line end: "cn: Ana Lima"
	cellParam        // ',', ';' or ':' too: "CN=Ana Lima:mailto:", "cn=Ana Lima,ou=..."
	cellDelim        // the row's delimiter: a CSV/TSV cell
	cellParts        // ';' too: vCard "N:Lima;Ana;;;"
)

// nameCellStart reports whether a person's name value may start at s, and how it ends
// (cellKind) and with which delimiter: after a name key's ':' or '=', or at a delimited cell
// under a name header. It reads only before s (and the cell for its header's column).
func (d nameDetector) nameCellStart(text string, s int) (kind int, delim byte, ok bool) {
	if s == 0 {
		return 0, 0, false
	}
	p := s
	if text[p-1] == ' ' {
		p--
	}
	if p == 0 {
		return 0, 0, false
	}
	switch c := text[p-1]; {
	case c == '=':
		ks := p - 1
		for ks > 0 && isAlpha(text[ks-1]) && p-1-ks < 3 {
			ks--
		}
		if p-1-ks != 2 || lowerASCII(text[ks]) != 'c' || lowerASCII(text[ks+1]) != 'n' || ks > 0 && strings.IndexByte(";,: \n", text[ks-1]) < 0 {
			return 0, 0, false
		}
		return cellParam, 0, true
	case c == ':':
		ks, ke := lineKey(text, p-1)
		if ks < 0 {
			return 0, 0, false
		}
		var buf [16]byte
		if lw, ok := lowerInto(buf[:0:len(buf)], text[ks:ke]); ok && exportKeys[string(lw)] {
			if !exportNameKeys[string(lw)] {
				return 0, 0, false
			}
			if string(lw) == "n" {
				return cellParts, 0, true
			}
			return cellLine, 0, true
		}
		if !shortPersonKey(text[ks:ke]) {
			return 0, 0, false
		}
		return cellLine, 0, true
	case c == ';' && p == s && vcardNLine(text, p-1):
		return cellParts, 0, true // "N:Haddad;Yasmin;;;"
	case isDelimiter(c) || c == '\n':
		ce := s
		for ce < len(text) && !isDelimiter(text[ce]) && text[ce] != '\n' && text[ce] != '\r' && ce-s <= columnMaxCell {
			ce++
		}
		if ce-s > columnMaxCell {
			return 0, 0, false
		}
		for ce > s && text[ce-1] == ' ' {
			ce--
		}
		if c == '\n' && (ce >= len(text) || !isDelimiter(text[ce])) {
			return 0, 0, false
		}
		if p != s && c != '|' {
			return 0, 0, false // "Ana, Lima": a blank after a comma is prose, not a CSV cell
		}
		if !shortPersonKey(columnHeader(text, s, ce)) {
			return 0, 0, false
		}
		if c == '\n' {
			c = text[ce]
		}
		return cellDelim, c, true
	}
	return 0, 0, false
}

// vcardNLine reports whether the ';' at text[i] separates the parts of a vCard "N:" value:
// the line starts with "N:" and holds no other ':' before i.
func vcardNLine(text string, i int) bool {
	ls := i
	for ls > 0 && text[ls-1] != '\n' && i-ls <= columnMaxCell {
		ls--
	}
	if ls > 0 && text[ls-1] != '\n' || i-ls < 2 || text[ls] != 'N' || text[ls+1] != ':' {
		return false
	}
	return strings.IndexByte(text[ls+2:i], ':') < 0
}

// nameCellPending reports whether SafePrefix must hold the word at s: a name cell starts there
// (nameCellStart) and its line has not ended, or nameCell finds a name in it.
func (d nameDetector) nameCellPending(text string, s int) bool {
	if _, _, ok := d.nameCellStart(text, s); !ok {
		return false
	}
	if i := strings.IndexByte(text[s:], '\n'); i < 0 || i > 4*columnMaxCell {
		return i < 0
	}
	return d.nameCell(text, s) > 0
}

// lineKey returns the key before the ':' at text[colon] when it starts its line (after
// indentation and a YAML "- "): up to three words of letters, digits, '_' and '-', or a vCard
// key with parameters ("TEL;TYPE=cell", whose key is "TEL"); or -1.
func lineKey(text string, colon int) (int, int) {
	ks := colon
	for ks > 0 && text[ks-1] != '\n' && colon-ks <= columnMaxCell {
		ks--
	}
	if colon-ks > columnMaxCell {
		return -1, -1
	}
	for ks < colon && text[ks] == ' ' {
		ks++
	}
	if ks+1 < colon && text[ks] == '-' && text[ks+1] == ' ' {
		ks += 2
	}
	ke := colon
	if k := strings.IndexByte(text[ks:colon], ';'); k > 0 {
		ke = ks + k // vCard parameters
	}
	if ke == ks || !isAlpha(text[ks]) {
		return -1, -1
	}
	words := 1
	for i := ks; i < ke; i++ {
		c := text[i]
		switch {
		case c == ' ':
			if words++; words > 3 || text[i-1] == ' ' {
				return -1, -1
			}
		case isAlnum(c) || c == '_' || c == '-' || c == '"' || c == '\'':
		default:
			return -1, -1
		}
	}
	return ks, ke
}

// nameCellParticles are lower-case words that start or join a family name in a name cell.
var nameCellParticles = map[string]bool{
	"bin": true, "binti": true, "bint": true, "ibn": true, "van": true, "der": true, "den": true,
	"de": true, "da": true, "das": true, "do": true, "dos": true, "du": true, "del": true,
	"della": true, "di": true, "la": true, "le": true, "von": true, "zu": true, "ter": true,
	"ten": true, "al": true, "el": true, "ap": true, "y": true, "e": true, "af": true,
}

// capParticle reports whether the capitalised word w is a particle that starts a family name
// ("El", "De", "Lo", "Van", "Bin", "Al", "Ní", "Ó").
func capParticle(w string) bool {
	var buf [8]byte
	lw, ok := lowerInto(buf[:0:len(buf)], w)
	if !ok {
		return false
	}
	switch string(lw) {
	case "lo", "li", "ní", "ó", "nic", "mac", "ua", "uí":
		return true
	}
	return nameCellParticles[string(lw)]
}

// particleBefore returns the start of a capitalised particle written just before the word at
// b ("Dos Santos", "Ní Chonaill", "Van Dijk"), or -1.
func particleBefore(text string, b int) int {
	if b < 3 || text[b-1] != ' ' {
		return -1
	}
	p := b - 1
	for p > 0 && b-1-p < 8 && isLetterAt(text, p-1) || p > 0 && b-1-p < 8 && !utf8RuneStart(text[p-1]) {
		p--
	}
	if p == b-1 || !capParticle(text[p:b-1]) || !isCapWord(text[p:b-1]) {
		return -1
	}
	return p
}

// nameCell returns the end of a person's name that fills the whole value starting at s (see
// the file comment), or -1.
func (d nameDetector) nameCell(text string, s int) int {
	kind, delim, ok := d.nameCellStart(text, s)
	if !ok || exportKey(text, s, wordEnd(text, s)) {
		return -1 // "ATTENDEE;CN=..." under "ATTENDEE;..." is a key, not a cell of a column
	}
	end, words, ordinary, lower, capital, places := -1, 0, 0, 0, 0, 0
	var ws [5]nameWord // the capitalised words, for the organisation and place vetoes
	nw := 0
	j := s
	for words < 5 {
		if j >= len(text) || !isLetterAt(text, j) {
			return -1
		}
		we := wordEnd(text, j)
		w := text[j:we]
		switch {
		case we-j == 1 && we < len(text) && text[we] == '.' && isUpper(text[j]): // an initial
			we++
			capital++
		case nameCellParticles[w]:
			// a particle: "bin Rosli", "van der Meulen"
		case isCapWord(w) && words+1 < 5 && we+1 < len(text) && text[we] == ' ' && isUpper(text[we+1]) && capParticle(w):
			// a capitalised particle before the family name: "El Idrissi", "De Santis", "Lo Russo"
		case isCapWord(w):
			f := d.flags(w)
			if f&gzNotName != 0 && f&(gzFirst|gzLast) == 0 && f&gzPlace == 0 || roleWord(w) {
				return -1 // "Helpdesk", "Reception"
			}
			ws[nw] = nameWord{j, we, f}
			nw++
			if f&gzPlace != 0 && f&(gzFirst|gzLast) == 0 {
				places++ // "Albuquerque Neto": many family names are places
			}
			if f&gzWord != 0 && f&(gzFirst|gzLast) == 0 {
				if capital == 0 {
					return -1 // an ordinary word first: "Front Desk Tablet", "Printer Sala"
				}
				ordinary++
			}
			capital++
		case allCaps(w):
			if nameFlags(w)&(gzFirst|gzLast) == 0 && (we-j < 4 || !d.capsNameWord(w) || !strings.ContainsAny(w, "AEIOUY")) {
				return -1 // "TBD", "TBC", "NN"
			}
			capital++
		case isLower(w[0]) || w[0] >= 0x80:
			if !d.layoutWordOK(w) || strings.IndexByte(w, '-') >= 0 {
				return -1 // "unassigned", "vpn-users"
			}
			lower++
		default:
			return -1
		}
		words++
		end = we
		if we < len(text) && text[we] == ' ' && we+1 < len(text) && isLetterAt(text, we+1) {
			j = we + 1
			continue
		}
		break
	}
	if end < 0 || ordinary > 1 || capital == 0 && lower == 0 || lower > 0 && capital > 0 {
		return -1
	}
	if lower > 0 && kind == cellParam {
		return -1
	}
	if places > 0 && places+ordinary >= capital {
		return -1 // places only: "Lisbon", "New Lisbon"
	}
	if nw > 0 && (d.placeLike(text, ws[:nw]) || orgName(text, ws[:nw])) {
		return -1 // "Acme Holdings", "Morgan Stanley"
	}
	// The value must end here.
	k := end
	for k < len(text) && text[k] == ' ' {
		k++
	}
	if k == len(text) {
		return -1 // the value may go on (a stream): decided once its end is known
	}
	switch c := text[k]; {
	case c == '\n' || c == '\r':
	case kind == cellParam && (c == ',' || c == ';' || c == ':') && k == end:
	case kind == cellParts && c == ';' && k == end:
	case kind == cellDelim && c == delim:
	default:
		return -1
	}
	return end
}

// nameCellVeto reports whether the value starting at s fills a name key or column but is no
// name: capitalised ordinary words only ("Display name: Front Desk Tablet", "FN:Reception
// Desk") or one lower-case identifier joined by '-' or '_' ("name: billing-api"). The run is
// then decided as no name.
func (d nameDetector) nameCellVeto(text string, s int) bool {
	kind, _, ok := d.nameCellStart(text, s)
	if !ok || kind == cellParam {
		return false
	}
	j, words, role := s, 0, false
	for ; words < 4 && j < len(text) && isLetterAt(text, j); words++ {
		we := wordEnd(text, j)
		w := text[j:we]
		if isLower(w[0]) {
			// one identifier: "billing-api", "search_indexer"
			k := we
			for k < len(text) && (isAlnum(text[k]) || text[k] == '-' || text[k] == '_') {
				k++
			}
			if words > 0 || k == we && strings.IndexByte(w, '-') < 0 || k < len(text) && text[k] != '\n' && text[k] != '\r' {
				return false
			}
			return !d.layoutWordOK(w) || k > we
		}
		if words == 0 && isCapWord(w) && roleWord(w) {
			role = true // "cn: Helpdesk Transilvania Soft": a role, as role mailboxes name them
		} else if f := d.flags(w); !isCapWord(w) || role && f&gzFirst != 0 || !role && (f&gzWord == 0 || f&(gzFirst|gzLast|gzProbable) != 0) {
			return false
		}
		if we >= len(text) || text[we] != ' ' {
			j = we
			words++
			break
		}
		j = we + 1
	}
	return words > 0 && (j >= len(text) || text[j] == '\n' || text[j] == '\r')
}

// numberedLabel reports whether the one-word run text[s:e] starts a line as the label of a
// numbered or dated thing before ':': "Sun 7 Dec: Morag", "Pista 1: Ainhoa / Leire", "Court
// 2:". A person is not written with a number between the name and the colon.
func numberedLabel(text string, s, e int) bool {
	if j := skipBlanksBack(text, s); j > 0 && text[j-1] != '\n' {
		return false
	}
	if e+1 >= len(text) || text[e] != ' ' || !isDigit(text[e+1]) {
		return false
	}
	k := e + 1
	for k < len(text) && k-e <= 3 && isDigit(text[k]) {
		k++
	}
	if k < len(text) && text[k] == '.' {
		k++
	}
	if k+1 < len(text) && text[k] == ' ' && isLetterAt(text, k+1) {
		we := wordEnd(text, k+1)
		if we-k-1 > 9 {
			return false
		}
		k = we // a month: "7 Dec"
		if k < len(text) && text[k] == '.' {
			k++
		}
	}
	return k < len(text) && text[k] == ':'
}

// alignedHeader returns the header of the column that text[s:e] fills in a table aligned with
// blanks ("Sail  Boat             Helm"): the run starts a line or follows two blanks or a tab,
// ends at two blanks, a tab or the line end, and the lines above it (up to alignedMaxLines, in
// one block without an empty line) have a cell starting at the same column; the topmost of
// them is the header. It returns "" otherwise.
func alignedHeader(text string, s, e int) string {
	if e < len(text) && text[e] != '\n' && text[e] != '\r' && text[e] != '\t' && !strings.HasPrefix(text[e:], "  ") {
		return ""
	}
	ls := s
	for ls > 0 && text[ls-1] != '\n' && s-ls < alignedMaxCol {
		ls--
	}
	if ls > 0 && text[ls-1] != '\n' || ls == 0 {
		return ""
	}
	if ls != s && text[s-1] != '\t' && !(s-ls >= 2 && text[s-1] == ' ' && text[s-2] == ' ') {
		return ""
	}
	if strings.IndexByte(text[ls:s], '\t') >= 0 {
		return "" // tabs do not align by bytes
	}
	if ls == s && (e >= len(text) || text[e] != ' ') {
		return "" // the line holds one cell: no row of a table
	}
	col := runeCount(text[ls:s])
	header := ""
	for n, le := 0, ls-1; n < alignedMaxLines && le > 0; n++ {
		pls := le
		for pls > 0 && text[pls-1] != '\n' && le-pls < 2*alignedMaxCol {
			pls--
		}
		if pls > 0 && text[pls-1] != '\n' || pls == le {
			break // a long line, or an empty one: the block ends
		}
		cs := runeOffset(text[pls:le], col)
		if cs < 0 {
			break
		}
		cs += pls
		if !(cs == pls || cs-pls >= 2 && text[cs-1] == ' ' && text[cs-2] == ' ') || cs >= le || text[cs] == ' ' {
			break
		}
		ce := cs
		for ce < le && !(text[ce] == ' ' && (ce+1 >= le || text[ce+1] == ' ')) {
			ce++
		}
		if ce-cs > columnMaxCell || strings.Count(text[cs:ce], " ") > 2 {
			break // a title, not a header cell
		}
		header = text[cs:ce]
		le = pls - 1
	}
	return header
}

const (
	alignedMaxLines = 16
	alignedMaxCol   = 160
)

// runeOffset returns the byte offset of the col-th rune of s, or -1.
func runeOffset(s string, col int) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < 0x80 || s[i] >= 0xC0 {
			if n == col {
				return i
			}
			n++
		}
	}
	return -1
}

// cellHeader returns the header of the column that the run text[s:e] fills, in a delimited or
// an aligned table, or "".
func cellHeader(text string, s, e int) string {
	if h := columnHeader(text, s, e); h != "" {
		return h
	}
	if barCell(text, s, e) {
		if h := paddedCellHeader(text, s, e); h != "" {
			return h
		}
	}
	return alignedHeader(text, s, e)
}

// thingColumn reports whether the run text[s:e] fills a column whose header names things
// ("Boat", "Horse", "Club", "station_name", "Reparto"): no person, whatever its words.
func thingColumn(text string, s, e int) bool {
	h := cellHeader(text, s, e)
	return h != "" && len(h) <= shortHeader && headerHas(h, thingHeaders)
}

// shortHeader bounds the headers and keys this file reads: headerHas allocates for longer ones
// (its lower-case copy no longer fits the stack buffer of a string conversion), and headers
// are short.
const shortHeader = 24

// shortPersonKey is personKey for a key or header of at most shortHeader bytes.
func shortPersonKey(k string) bool { return len(k) <= shortHeader && personKey(k) }

// columnPeers classes the cells of the same column in the rows above a delimited cell
// text[s:e] that has no header naming its column: names by their words (every word a known or
// probable name, no ordinary word), and things (an ordinary word, a place, a digit). At most
// columnPeerRows rows within columnPeerBytes bytes are read.
func (d nameDetector) columnPeers(text string, s, e int) (names, things int) {
	dl := cellDelimiter(text, s, e)
	if dl == 0 {
		return 0, 0
	}
	ls := s
	for ls > 0 && text[ls-1] != '\n' && s-ls < columnPeerBytes {
		ls--
	}
	if ls == 0 || text[ls-1] != '\n' {
		return 0, 0
	}
	col := 0
	for i := ls; i < s; i++ {
		if text[i] == dl {
			col++
		}
	}
	le := ls - 1
	for r := 0; r < columnPeerRows && le > 0 && s-le < columnPeerBytes; r++ {
		pls := le
		for pls > 0 && text[pls-1] != '\n' && s-pls < columnPeerBytes {
			pls--
		}
		if pls > 0 && text[pls-1] != '\n' {
			break
		}
		// the cell at col
		i, c := pls, 0
		for i < le && c < col {
			if text[i] == dl {
				c++
			}
			i++
		}
		if c != col || !containsByte(text[pls:le], dl) {
			break
		}
		j := i
		for j < le && text[j] != dl && text[j] != '\r' {
			j++
		}
		switch d.cellClass(text[i:j]) {
		case 'n':
			names++
		case 't':
			things++
		}
		le = pls - 1
	}
	return names, things
}

const (
	columnPeerRows  = 4
	columnPeerBytes = 128 // aigw/guard's streamContext: a windowed scan sees the same rows
)

// cellClass classes a cell by its words: 'n' one to four capitalised words, one of them at
// least a known or probable name and none an ordinary word, a non-name or a place (as
// listPeers counts names); 't' a cell with an ordinary word, a
// non-name, a place or a digit; 0 other cells.
func (d nameDetector) cellClass(cell string) byte {
	cell = strings.TrimSpace(cell)
	if cell == "" {
		return 0
	}
	words, known := 0, false
	for i := 0; i < len(cell); {
		if isDigit(cell[i]) {
			return 't'
		}
		if !isLetterAt(cell, i) {
			i++
			continue
		}
		we := wordEnd(cell, i)
		w := cell[i:we]
		f := d.flags(w)
		switch {
		case f&(gzNotName|gzPlace) != 0 && f&(gzFirst|gzLast) == 0, f&gzWord != 0 && f&(gzFirst|gzLast) == 0:
			return 't'
		case !isCapWord(w):
			return 0
		}
		known = known || f&(gzFirst|gzLast|gzProbable) != 0
		words++
		i = we
	}
	if words == 0 || words > 4 || !known {
		return 0
	}
	return 'n'
}

// roleWord reports whether w is a role word of the role mailboxes ("Helpdesk", "Support",
// "Reception", "Kundeservice"): a team, not a person.
func roleWord(w string) bool {
	var buf [32]byte
	k, ok := foldInto(buf[:0:len(buf)], w)
	return ok && roleMailboxes[string(k)]
}

// ownListThings reports whether the items of the run's own list on its line (from the line
// start ls, after a label's ": ") before s are things and none is a name ("Venues: Colombo,
// Kandy"): then names of other lines above (a rota's rows) lend it no evidence.
func (d nameDetector) ownListThings(text string, ls, s int) bool {
	names, things := d.itemsBefore(text, ls, s)
	return things > 0 && names == 0
}

func utf8RuneStart(c byte) bool { return c < 0x80 || c >= 0xC0 }

// keyedRowCell reports whether the run text[s:e] is an item of a row's cell whose leading
// cells are keys: a rank, a time, a date, a room ("1  Birhanu Tesfaye Gebremedhin   ETH",
// "za 6 dec  10:00–13:00  Sanne Bosma & Mo el Idrissi", "ti 19–20   B 12   Nieminen / Aaltonen",
// "Pista 2  Begoña Aranguren / Sergi Puigdomènech  4-6"). The text before the cell on its line
// holds a digit and at most one word of more than three letters (before a number: "Pista 2",
// "Week 50"), and ends with two blanks or a tab; the run starts the cell or follows a joiner
// ("&", "/", "+") within it, and ends at a joiner, two blanks, a tab, a bracket or the line
// end. Only what is before the run and the byte after it are read.
func keyedRowCell(text string, s, e int) bool {
	ls := s
	for ls > 0 && text[ls-1] != '\n' && s-ls < alignedMaxCol {
		ls--
	}
	if ls > 0 && text[ls-1] != '\n' {
		return false
	}
	// the cell's start: two blanks or a tab before it
	cs := s
	for cs > ls {
		if text[cs-1] == '\t' || cs-2 >= ls && text[cs-1] == ' ' && text[cs-2] == ' ' {
			break
		}
		cs--
	}
	if cs == ls {
		return false
	}
	// inside the cell before the run: earlier items and joiners only
	for i := cs; i < s; i++ {
		if isDigit(text[i]) || text[i] == '(' || text[i] == ':' {
			return false
		}
	}
	if cs < s {
		j := skipBlanksBack(text, s)
		if j <= cs || strings.IndexByte("&/+", text[j-1]) < 0 {
			return false
		}
	}
	// the keys before the cell
	digit, long := false, 0
	for i := ls; i < cs; {
		c := text[i]
		if isDigit(c) {
			digit = true
		}
		if !isLetterAt(text, i) {
			i++
			continue
		}
		we := wordEnd(text, i)
		if runeCount(text[i:we]) > 3 {
			long++
			if we+1 >= cs || text[we] != ' ' || !isDigit(text[we+1]) {
				return false // a word that is no key: the row is prose or a table of other things
			}
		}
		i = we
	}
	if !digit || long > 1 {
		return false
	}
	if e >= len(text) {
		return false
	}
	switch text[e] {
	case '\n', '\r', '\t', '&', '/', '+', '(':
		return true // not ',': "Erdenebat, Tuvshin" is one name, family first (namelist.go)
	case ' ':
		return e+1 < len(text) && strings.IndexByte(" &/+(\t", text[e+1]) >= 0
	}
	return false
}

// firstItemCue reports whether the run ws (text[s:e]) is an early item of a list whose LATER
// items on the same line are names by their words: the first item of "Panel: Rasmus, Dariusz,
// Leilani and Kiri" has no earlier item to lend it evidence (listCue reads backwards only).
// The run is a list item (namelist.go), no word of it is an ordinary word, a non-name or a
// place, and among the items after it up to the line's end or a full stop, within
// firstItemAhead bytes of s, at least two are names by their words (cellClass) and none is a
// thing.
func (d nameDetector) firstItemCue(text string, s, e int, ws []nameWord) bool {
	if len(ws) > 3 || !noWords(ws) || len(ws) == 1 && ws[0].e-ws[0].s < 3 {
		return false
	}
	for _, w := range ws {
		if w.flags&(gzNotName|gzPlace) != 0 {
			return false
		}
	}
	if !inlineItemStart(text, s) || !listItemAfter(text, e) || e >= len(text) || text[e] == '\n' || text[e] == '.' || text[e] == ')' {
		return false
	}
	// an inline list: a separator or a conjunction after the run, not blanks (columns)
	switch c := text[e]; {
	case c == ',' && rowStart(text, s):
		return false // "Erdenebat, Tuvshin (2311)": a family name first (namelist.go)
	case strings.IndexByte(",;/&|", c) >= 0:
	case c == ' ' && e+1 < len(text) && isLetterAt(text, e+1) && isListConj(text[e+1:wordEnd(text, e+1)]):
	default:
		return false
	}
	ls := s
	for ls > 0 && text[ls-1] != '\n' && s-ls < listWindow {
		ls--
	}
	if csvRow(text, ls, s) || addressNumber(text, ls, s) || delimitedRow(text, ls) {
		return false
	}
	lim := min(len(text), s+firstItemAhead)
	names, things := d.itemsBefore(text, ls, s)
	for i := e; i < lim; {
		c := text[i]
		if c == '\n' || c == '.' && (i+1 == len(text) || text[i+1] == ' ' || text[i+1] == '\n') {
			break
		}
		if !isLetterAt(text, i) || i > 0 && isWordByte(text[i-1]) || !listItemBefore(text, i) {
			i++
			continue
		}
		// an item: to the next separator, conjunction or the line's end
		j := i
		for j < lim && strings.IndexByte(",;/&|\n()", text[j]) < 0 && !(text[j] == '.' && (j+1 == len(text) || text[j+1] == ' ' || text[j+1] == '\n')) {
			if text[j] == ' ' && j+1 < lim && isLetterAt(text, j+1) {
				if w := text[j+1 : wordEnd(text, j+1)]; isListConj(w) {
					break
				}
			}
			j++
		}
		if j >= lim && lim < len(text) {
			break // cut by the bound: not known
		}
		switch d.cellClass(text[i:j]) {
		case 'n':
			names++
		case 't':
			things++
		}
		i = j
		if j < len(text) && text[j] != '\n' && text[j] != '.' {
			i++
		}
	}
	return names >= 2 && things == 0
}

// itemsBefore classes the items of the run's own inline list on its line before s (from ls,
// after a label's ":"): names by their words and things (cellClass).
func (d nameDetector) itemsBefore(text string, ls, s int) (names, things int) {
	for i := ls; i < s; {
		if !isLetterAt(text, i) || i > 0 && isWordByte(text[i-1]) || !listItemBefore(text, i) {
			i++
			for i < s && !utf8RuneStart(text[i]) {
				i++
			}
			continue
		}
		j := i
		for j < s && text[j] != ',' && text[j] != ';' && text[j] != '/' && text[j] != '&' && text[j] != '|' && text[j] != ':' {
			j++
		}
		if j < s && text[j] == ':' {
			names, things = 0, 0 // a label: the list starts after it
			i = j + 1
			continue
		}
		switch d.cellClass(text[i:j]) {
		case 'n':
			names++
		case 't':
			things++
		}
		i = j + 1
	}
	return names, things
}

// firstItemAhead bounds how far after a run's start firstItemCue reads; SafePrefix holds a
// word at a list item until its line has ended or this much text follows (firstItemPending).
const firstItemAhead = 2 * listWindow

func isListConj(w string) bool {
	for _, c := range listConj {
		if w == c {
			return true
		}
	}
	return false
}

// firstItemPending reports whether SafePrefix must hold the capitalised word text[cs:ce]: it
// starts a list item whose line has not ended yet within firstItemAhead bytes, so later items
// may still make it a name (firstItemCue).
func (d nameDetector) firstItemPending(text string, cs, ce int) bool {
	if len(text) >= cs+firstItemAhead || !inlineItemStart(text, cs) {
		return false
	}
	if f := d.flags(text[cs:ce]); f&(gzNotName|gzPlace) != 0 || f&gzWord != 0 && f&(gzFirst|gzLast) == 0 {
		return false // firstItemCue never takes it
	}
	return strings.IndexByte(text[ce:], '\n') < 0
}

// inlineItemStart reports whether an item of an inline list may start at s: after a
// separator (",", ";", "/", "&", "|", ":") or a conjunction, not at a line start or after
// blanks (rows and columns are read by the rules of namelist.go).
func inlineItemStart(text string, s int) bool {
	j := s
	if j > 0 && text[j-1] == ' ' {
		j--
	}
	if j == 0 {
		return false
	}
	if strings.IndexByte(",;/&|:", text[j-1]) >= 0 {
		return true
	}
	return j < s && isListConj(wordEndingAt(text, j))
}

// delimitedRow reports whether the line starting at ls is a row of a table delimited by ';',
// '|' or tabs: two of one of them on the line ("Apellidos;Nombre;DNI;Puesto"), read up to
// firstItemAhead bytes.
func delimitedRow(text string, ls int) bool {
	semi, bar, tab := 0, 0, 0
	for i := ls; i < len(text) && i-ls < firstItemAhead && text[i] != '\n'; i++ {
		switch text[i] {
		case ';':
			semi++
		case '|':
			bar++
		case '\t':
			tab++
		}
	}
	return semi >= 2 || bar >= 2 || tab >= 2
}

// barCell reports whether text[s:e] is padded by blanks between '|' delimiters ("| Ana Lima |"):
// paddedCellHeader is for such tables; ", " is prose, not a padded CSV cell.
func barCell(text string, s, e int) bool {
	i := s
	for k := 0; k < 2 && i > 0 && text[i-1] == ' '; k++ {
		i--
	}
	j := e
	for k := 0; k < 2 && j < len(text) && text[j] == ' '; k++ {
		j++
	}
	return i > 0 && text[i-1] == '|' || j < len(text) && text[j] == '|'
}

// particlePending reports whether SafePrefix must hold the capitalised particle text[cs:ce]
// that starts a row: it may start a family name written first ("Dos Santos, Jéssica"), decided
// once the line has ended or familyCommaAhead bytes follow (familyCommaBefore).
func (d nameDetector) particlePending(text string, cs, ce int) bool {
	if !capParticle(text[cs:ce]) || !rowStart(text, cs) {
		return false
	}
	if strings.IndexByte(text[ce:], '\n') < 0 && len(text)-ce < familyCommaAhead {
		return true
	}
	// the line is known: "Particle Family, Given"
	if ce+1 >= len(text) || text[ce] != ' ' || !isLetterAt(text, ce+1) {
		return false
	}
	fe := wordEnd(text, ce+1)
	gs := fe + 2
	if gs >= len(text) || text[fe] != ',' || text[fe+1] != ' ' || !isLetterAt(text, gs) {
		return false
	}
	ge := wordEnd(text, gs)
	return isCapWord(text[gs:ge]) && d.familyCommaBefore(text, nameWord{gs, ge, d.flags(text[gs:ge])}) == cs
}
