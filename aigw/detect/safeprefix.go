package detect

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// SafePrefix returns how far into text[start:] no entity can start, whatever text is later
// appended to text: the start of the first word that is, or could still become, the start of
// an entity (or start itself), or len(text) when there is none. text[:start] is context that
// was already seen (a greeting, a title, a key before its value); entities that start there
// are not its concern. A stream can send text[start:p] before the rest arrives.
//
// The rules are word by word and conservative; a word is passed only when the text shows that
// no detector can start an entity in it (README.md, Streaming):
//   - the last word is never passed (it may grow), nor a word cut by start;
//   - a number passes only when it has one to four digits and a lower-case word that cannot
//     continue an address or a date follows it ("3 options", "in 2024, we", "1. first");
//   - a word must be letters (inner ' - ’ allowed) between ASCII punctuation or non-letter
//     symbols: a digit, '@', '=', '/', a '.' or ':' between letters, two ':' (numbers, e-mail
//     addresses, URLs, IP and MAC addresses, assignments) stop it, as do hex-letter groups
//     joined by '-' (a MAC address) and words of 16 bytes or more with an ASCII capital or a
//     hyphen (token shapes);
//   - a month name stops it unless the next four bytes are known and hold no digit (a date);
//   - a value after a key that names a secret ("password: don't") stops it;
//   - a capitalised word stops it when it is a title or a street word, when the run of
//     capitalised words it starts is not yet closed (by punctuation or a lower-case word that is
//     not a name particle), or when the name rules score that run at least the engine's
//     MinScore.
//
// It allocates nothing and reads text once, plus bounded look-back for context.
func (e *Engine) SafePrefix(text string, start int) int {
	if start < 0 {
		start = 0
	}
	if start >= len(text) {
		return len(text)
	}
	if start > 0 && !isSpaceByte(text[start-1]) {
		return start // the word began before start: not examined
	}
	i := start
	for {
		for i < len(text) && isSpaceByte(text[i]) {
			i++
		}
		if i == len(text) {
			return i
		}
		t := i
		for i < len(text) && !isSpaceByte(text[i]) {
			i++
		}
		if i == len(text) || !e.inertWord(text, t, i) {
			return t
		}
	}
}

// Symbols allowed around the letters of a word that can be passed.
const wordSymbols = "([{<\"'*_`#|~+-)]}>,.;:!?"

// inertWord reports whether no entity can start in the word text[t:u] (u is a white space
// byte), whatever follows text.
func (e *Engine) inertWord(text string, t, u int) bool {
	if isDigit(text[t]) {
		return smallNumber(text, t, u) && !assignedValue(text, t)
	}
	// Symbols, one run of letters (the core), symbols.
	cs, ce := -1, -1
	colons := 0
	for j := t; j < u; {
		c := text[j]
		if c < utf8.RuneSelf && !isAlpha(c) {
			if strings.IndexByte(wordSymbols, c) < 0 {
				return false
			}
			if c == ':' {
				colons++
			}
			j++
			continue
		}
		if isLetterAt(text, j) {
			if cs >= 0 {
				return false // a second run of letters: "a.b", "key:value", "and/or"
			}
			cs, ce = j, wordEnd(text, j)
			j = ce
			continue
		}
		r, n := utf8.DecodeRuneInString(text[j:u])
		if r == utf8.RuneError || unicode.IsDigit(r) {
			return false
		}
		j += n // a non-letter symbol: quotes, dashes, emoji
	}
	if colons > 1 {
		return false // "beef::", "::cafe" are IPv6 addresses
	}
	if strings.Contains(text[t:u], "-----") {
		return false // "-----BEGIN": a private key block
	}
	if assignedValue(text, t) {
		return false
	}
	if cs < 0 {
		return true
	}
	if e.names.nameCellPending(text, cs) {
		return false // the value of a name key or column (structure.go)
	}
	if hasScriptRune(text[t:u]) && !scriptInert(text, t, u) {
		return false // a name in another script (script.go)
	}
	core := text[cs:ce]
	if u-t >= 16 && strings.IndexFunc(core, func(r rune) bool { return r == '-' || r < utf8.RuneSelf && isUpper(byte(r)) }) >= 0 {
		return false // token shapes: "xoxb-...", "sk-ant-...", "AKIA..."
	}
	if hexHyphens(core) {
		return false // "aa-bb-cc-dd-ee-ff"
	}
	if monthWord(core) && !noDigitAfter(text, ce) {
		return false // "March 12, 1985", "may 3 1990"
	}
	r, _ := runeAt(core, 0)
	if !unicode.IsUpper(r) && !unicode.IsTitle(r) && ce < len(text) && text[ce] == '.' && streetStart(core) {
		return false // "ul. Długa 44/6": an abbreviated street type in lower case starts an address
	}
	if !unicode.IsUpper(r) && !unicode.IsTitle(r) {
		// A lower-case name may follow a title, an introducing phrase or a label.
		return !e.names.lowerWordOK(core) || !(precededBy(text, cs, nameStrong) || precededBy(text, cs, nameMedium) ||
			precededByLabel(text, cs) || precededByTitle(text, cs) || nameAnswer(text, cs) || e.names.layoutPending(text, cs) ||
			precededBy(text, cs, nameLowerWeak) && e.names.givenLower(core))
	}
	// A capitalised word: a name, or the start of a street address in layouts C and D.
	if isTitle(core) || streetStart(core) || unitChainStartAt(text, cs) || e.names.listPending(text, cs, ce) || e.names.familyFirstPending(text, cs, ce) ||
		e.names.firstItemPending(text, cs, ce) || e.names.particlePending(text, cs, ce) {
		return false // e.names.listPending: initials or a family name that may start a row's name (namelist.go)
	}
	if !isCapWord(core) {
		// All capitals ("API"): no street starts there, and a name only after a cue
		// ("NAME: ANAHERA VIRTANEN").
		// Nor a family name written first: "HALVORSEN, Ingrid".
		return !allCaps(core) || !e.names.lowerWordOK(core) || !(precededBy(text, cs, nameStrong) ||
			precededBy(text, cs, nameMedium) || precededByLabel(text, cs) || precededByTitle(text, cs) ||
			nameAnswer(text, cs) || e.names.layoutPending(text, cs) || e.names.capsFamilyMayStart(text, cs, ce) ||
			precededBy(text, cs, transferCues))
	}
	if numberMayFollow(text, ce) {
		return false // "Damrak 80, 1012 LP Amsterdam": an address without a street type
	}
	if e.names.sportNameAt(text, cs) {
		return false // cricket notation on its complete line made it a name ("Danish Mirza  c & b Rizvi  0")
	}
	if lookupName(core)&gzNotName != 0 {
		return true // the name rules never start a run at a non-name ("Here", "Monday")
	}
	if e.names.sportPending(text, cs) {
		return false // cricket notation may still follow on the line (namesport.go)
	}
	if !capRunClosed(text, ce) {
		return false
	}
	if e.names.vietSpan(text, cs, ce) > 0 {
		return false // a Vietnamese name written family name first (namefamily.go)
	}
	titled := titleBefore(text, cs)
	// The rules' verdict must be under the threshold too (namerescore.go); without a rescorer
	// the two detectors are the same, so the second is not run.
	ds, nd := [2]nameDetector{e.names, e.names}, 1
	if e.names.rescorer != nil {
		ds[1].rescorer, nd = nil, 2
	}
	for _, tt := range [2]bool{false, titled} {
		for _, d := range ds[:nd] {
			// an e-mail that may still follow the run would raise its score (emailFollows)
			if _, end, score := d.nameSpan(text, cs, ce, tt); end > 0 && (score >= e.minScore || emailMayFollow(text, end) || appositionPending(text, end) ||
				addressBlockPending(text, cs, end) || d.coordPending(text, end)) {
				return false
			}
		}
	}
	return true
}

// smallNumber reports whether the word text[t:u] is a number of one to four digits, alone or
// followed by '.', ',' or ')' ("3", "2024,", "1."), that cannot start an entity: what follows it
// is a line break, a tab, three spaces, or a lower-case word that is neither a month ("12
// March", "1. März"), nor "de" ("12 de marzo"), nor a French street type ("12 rue de la Paix",
// "8 bis avenue"). Longer numbers, and numbers followed by digits, capitals ("742 Evergreen
// Terrace") or symbols ("1 - 555"), are held: phone numbers, cards, SSNs, addresses and dates
// begin so.
func smallNumber(text string, t, u int) bool {
	d := digitsAt(text, t)
	if d-t > 4 || d < u-1 || d == u-1 && text[d] != '.' && text[d] != ',' && text[d] != ')' {
		return false
	}
	j := u
	for n := 0; n < 3; n++ {
		if j >= len(text) {
			return false
		}
		if text[j] != ' ' {
			break
		}
		j++
	}
	if j == u || j-u == 3 || isSpaceByte(text[j]) {
		return true // a tab or line break, or three spaces: nothing continues the number
	}
	if !isLower(text[j]) {
		return false
	}
	we := wordEnd(text, j)
	if !wordDone(text, we) {
		return false
	}
	w := text[j:we]
	return !monthWord(w) && w != "de" && w != "bis" && w != "ter" && streetKind(text, j, we) == 0
}

// assignedValue reports whether a word starting at t would be the value of an assignment to a
// secret-named key: up to two spaces after ':' or '=' after the key (detectAssignments).
func assignedValue(text string, t int) bool {
	i := t - 1
	for n := 0; n < 2 && i >= 0 && text[i] == ' '; n++ {
		i--
	}
	if i < 0 || (text[i] != ':' && text[i] != '=') {
		return false
	}
	k := i
	for k > 0 && i-k < 2 && (text[k-1] == ' ' || text[k-1] == '"' || text[k-1] == '\'') {
		k--
	}
	ie := k
	for k > 0 && ie-k < secretMaxIdentifier && (isAlnum(text[k-1]) || text[k-1] == '_' || text[k-1] == '-' || text[k-1] == '.' || text[k-1] >= 0x80) {
		k--
	}
	if k == ie {
		return false
	}
	sub, _ := secretKeyKind(text[k:ie])
	return sub != ""
}

// hexHyphens reports whether w is hex letters joined by hyphens.
func hexHyphens(w string) bool {
	if strings.IndexByte(w, '-') < 0 {
		return false
	}
	for i := 0; i < len(w); i++ {
		if c := w[i]; c != '-' && !isHex(c) {
			return false
		}
	}
	return true
}

func monthWord(w string) bool {
	if len(w) < 3 || len(w) > 24 {
		return false
	}
	var buf [32]byte
	lw, ok := lowerInto(buf[:0:len(buf)], w)
	if !ok {
		return true // unknown: treat as a month
	}
	_, ok = months[string(lw)]
	return ok || string(lw) == "tháng" // "8 tháng 3 năm 1990"
}

// noDigitAfter reports whether the four bytes after a month word are known and hold no digit:
// a date needs a day within ". " or two spaces ("March 12", "Mar. 5").
func noDigitAfter(text string, j int) bool {
	if j+4 > len(text) {
		return false
	}
	for k := j; k < j+4; k++ {
		if isDigit(text[k]) {
			return false
		}
	}
	return true
}

// streetStart reports whether the capitalised word can start a street address without a house
// number before it: a type before the name ("Via", "Calle"), a German or Dutch type word, or a
// compound street name ("Hauptstraße", "Keizersgracht").
func streetStart(w string) bool {
	var buf [16]byte
	if lw, ok := lowerInto(buf[:0:len(buf)], w); ok {
		if streetWords[string(lw)]&(stPrefix|stGerman|stFrench) != 0 || unitWords[string(lw)] {
			return true // "Calle ...", "Rue ...", "Flat 8, 262 Kingsway"
		}
		switch string(lw) {
		case "po", "p", "post", "postfach", "apartado", "casilla":
			return true // "PO Box 4674"
		}
	}
	for _, suf := range germanSuffixes {
		if suf = strings.TrimSuffix(suf, "."); len(w) > len(suf)+2 && hasSuffixFold(w, suf) {
			return true
		}
	}
	return false
}

// capRunClosed reports whether the run of capitalised words that continues after the word
// ending at we is complete in text, so that nameSpan, closesGreeting and signatureLine decide
// the same whatever is appended: it ends at punctuation, a line break, two spaces, or a
// lower-case word that is not a name particle. A street type word in the run ("Berliner
// Allee") or an initial ("John F.") counts as not closed.
func capRunClosed(text string, we int) bool {
	for n := 0; n <= nameMaxWords; n++ {
		if we >= len(text) {
			return false
		}
		if c := text[we]; c == ',' || c == ';' || c == '\t' {
			if _, more := citationScan(text, we); more {
				return false // "Okafor, C." (name.go) is not decided yet
			}
			return emailDecided(text, we) // "Obinna Eze,o.eze@..." (a CSV row)
		}
		if text[we] == ':' {
			return we+2 < len(text) // "Atieno: hi" (a chat speaker) needs ": " and a letter
		}
		if text[we] != ' ' {
			return knownAfterBlanks(text, we)
		}
		k := we + 1
		if k >= len(text) {
			return false
		}
		if isSpaceByte(text[k]) {
			return knownAfterBlanks(text, k)
		}
		if !utf8.FullRuneInString(text[k:]) {
			return false
		}
		if text[k] == '<' || text[k] == '(' {
			return emailDecided(text, k) // "Ana Lima <ana@...>" makes the run a name
		}
		if !isLetterAt(text, k) {
			return true // "&", a digit, a quote: not a word of the run
		}
		ne := wordEnd(text, k)
		done := wordDone(text, ne)
		r, _ := runeAt(text, k)
		if !unicode.IsUpper(r) && !unicode.IsTitle(r) {
			if !done {
				return false // a particle, or a verb such as "said" that raises the score
			}
			return !nameParticlesLower[text[k:ne]]
		}
		if !done || ne-k == 1 && text[ne] == '.' || streetKind(text, k, ne) != 0 {
			return false
		}
		we = ne
	}
	return false
}

// numberMayFollow reports whether a number follows the word ending at we after at most two more
// capitalised words (so that layout F of the address rules may start at the word), or the text
// ends before that is known.
func numberMayFollow(text string, we int) bool {
	for n := 0; n < 3; n++ {
		j := we
		comma := j < len(text) && text[j] == ','
		if comma {
			j++
		}
		if j+1 >= len(text) {
			return true
		}
		if text[j] != ' ' {
			return false
		}
		j++
		if isDigit(text[j]) {
			return true
		}
		if comma {
			return false // only the house number may follow a comma: "Rua Augusta, 274"
		}
		if !isLetterAt(text, j) {
			return false
		}
		if r, _ := runeAt(text, j); !unicode.IsUpper(r) {
			// a street type after the name, in lower case: "Váci út 76", "Karl Johans gate 14"
			te := wordEnd(text, j)
			if te >= len(text) {
				return stAfterPrefix(text[j:te])
			}
			return streetKind(text, j, te)&stAfter != 0
		}
		te := wordEnd(text, j)
		if te >= len(text) {
			return true
		}
		if !isCapWord(text[j:te]) {
			return false
		}
		we = te
	}
	return false
}

// emailDecided reports whether emailFollows can already tell, for the '<' or '(' at k, whether an
// e-mail address follows.
func emailDecided(text string, k int) bool {
	for j := k + 1; j < len(text) && j < k+65; j++ {
		if strings.IndexByte("@>) \n,;\t", text[j]) >= 0 {
			return true
		}
	}
	return len(text) >= k+65
}

// knownAfterBlanks reports whether a byte other than a space or tab follows j in text.
func knownAfterBlanks(text string, j int) bool {
	for j < len(text) && (text[j] == ' ' || text[j] == '\t') {
		j++
	}
	return j < len(text)
}

// wordDone reports whether the word ending at ne (wordEnd) cannot grow when text is appended:
// wordEnd looks one rune past an apostrophe or hyphen.
func wordDone(text string, ne int) bool {
	if ne >= len(text) {
		return false
	}
	if c := text[ne]; c < utf8.RuneSelf && c != '\'' && c != '-' {
		return true
	}
	return ne+8 <= len(text)
}

// titleBefore reports whether a title ("Dr.", "Mrs") and one space come just before s, so that
// the name detector scores the word at s as titled.
func titleBefore(text string, s int) bool {
	j := s - 1
	if j < 1 || text[j] != ' ' {
		return false
	}
	if text[j-1] == '.' {
		j--
	}
	k := j
	for k > 0 && k > j-16 && (isAlpha(text[k-1]) || text[k-1] >= utf8.RuneSelf) {
		k--
	}
	return k < j && (isTitle(text[k:j]) || isKinTitle(text[k:j]))
}
