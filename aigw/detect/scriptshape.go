package detect

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Names whose script or grammar gives them a shape of their own, found without a list of names:
//
//   - Georgian family names end in -შვილი or -ძე (strong: the word alone is a name, and its case
//     endings -ს, -მ, -სთან are not part of the span), or in -ია, -უა, -ავა, -ანი (weak: only
//     after a given name, as a whole item between a label, a list marker or a comma and a
//     boundary). The given name is the word before, unless it is a title, a role or a word in
//     the genitive (-ს): "ბორის პაიჭაძის სახელობის" (a hall named after someone) is no name.
//   - Armenian family names end in -յան or -յանց; a capitalised word before or after is the given
//     name. The genitive -ի ("Պետրոսյանի անվան", named after) and abstract nouns in -ության are not.
//   - Greek family names end in -πουλος/-πούλου, -ίδης/-ίδου, -άκης, -ιάδης, -όγλου (strong), or
//     -ίδη, -άκη, -ίου (with a capitalised given name next to it); the given name may come first
//     or second, or be an initial ("Λ. Μαυρίδη", "Παπαδοπούλου Αικ."). Not after a street word,
//     not before a company form (Α.Ε.), not months or saints (Νοεμβρίου, Αγίου).
//   - Ethiopic (Amharic, Tigrinya) names are a given and a father's name: after a title (አቶ, ወ/ሮ,
//     ዶ/ር, ዲያቆን) or as the whole value of a label or list item ("1. ሳምሶን ተኽለ", "Guest: ሄኖክ ታደሰ").
//   - Arabic-script names (Arabic, Persian, Urdu) are joined by nasab and kunya particles ("سامي بن
//     يوسف", "يوسف أبو زيد", "حسن عبد الكريم"); a whole list item or label value whose last word
//     is an Arabic nisba ("عمر الحسيني") or carries a Persian family-name suffix (-ی, -زاده,
//     -پور, -نژاد) is a name; Persian and Urdu titles (آقای, خانم, جناب, شادروان, حاجی) cue one.
//   - Devanagari names after a role noun (सरपंच, सचिव) and lists of two- or three-word items
//     after a label.
//   - Chat speakers of these scripts after a time stamp or repeated from an earlier line.
//
// Places, organisations and streets are kept out by their own shape: the first word of an item
// (بنك, دانشگاه, Πανεπιστήμιο), a label of a place (آدرس, ከተማ), a genitive or street word before.
// Every rule reads at most runBack bytes before the name and five words after its first word,
// the window scriptInert gives SafePrefix.

type shapeKind uint8

const (
	shNone shapeKind = iota
	shGeorgian
	shArmenian
	shEthiopic
	shGreek
	shArabic
	shDevanagari
)

func shapeOf(r rune) shapeKind {
	switch {
	case r < 0x370:
		return shNone
	case r >= 0x10D0 && r <= 0x10FF || r >= 0x1C90 && r <= 0x1CBF:
		if unicode.IsLetter(r) {
			return shGeorgian
		}
	case r >= 0x531 && r <= 0x587:
		if unicode.IsLetter(r) {
			return shArmenian
		}
	case r >= 0x1200 && r <= 0x135F || r >= 0x1380 && r <= 0x139F || r >= 0x2D80 && r <= 0x2DDF:
		if unicode.IsLetter(r) || unicode.Is(unicode.Mn, r) {
			return shEthiopic
		}
	}
	switch classOf(r) {
	case scGreek:
		return shGreek
	case scArabic:
		return shArabic
	case scDevanagari:
		return shDevanagari
	}
	return shNone
}

// shapeRune reports whether r is a letter of a script only this file reads.
func shapeRune(r rune) bool {
	k := shapeOf(r)
	return k == shGeorgian || k == shArmenian || k == shEthiopic
}

func shapeAt(text string, i int) (shapeKind, int) {
	if i < 0 || i >= len(text) || text[i] < 0xCD {
		return shNone, 1
	}
	r, n := utf8.DecodeRuneInString(text[i:])
	return shapeOf(r), n
}

func shapeBefore(text string, i int) (shapeKind, int) {
	if i <= 0 {
		return shNone, i
	}
	r, n := utf8.DecodeLastRuneInString(text[:i])
	return shapeOf(r), i - n
}

// shapeWordEnd returns the end of the word of kind k at i: a hyphen between letters joins
// (Georgian, Armenian, Greek double names), a zero-width non-joiner too (Persian "رضایی‌نژاد").
func shapeWordEnd(text string, i int, k shapeKind) int {
	j := i
	for j < len(text) {
		c, n := shapeAt(text, j)
		if c == k {
			j += n
			continue
		}
		if j > i && text[j] == '-' && k != shArabic && k != shEthiopic {
			if c2, _ := shapeAt(text, j+1); c2 == k {
				j++
				continue
			}
		}
		if j > i && k == shArabic && strings.HasPrefix(text[j:], "\u200c") {
			if c2, _ := shapeAt(text, j+3); c2 == k {
				j += 3
				continue
			}
		}
		break
	}
	return j
}

// shapePrev returns the word of kind k that ends one space before s, or -1.
func shapePrev(text string, s int, k shapeKind) (int, int) {
	if s < 2 || text[s-1] != ' ' {
		return -1, -1
	}
	pe := s - 1
	if c, _ := shapeBefore(text, pe); c != k {
		return -1, -1
	}
	ps := pe
	for ps > 0 && s-ps < runBack {
		c, st := shapeBefore(text, ps)
		if c != k && !(ps > 0 && text[ps-1] == '-' && ps-1 > 0) {
			break
		}
		if c != k { // a hyphen inside the word
			if c2, _ := shapeBefore(text, ps-1); c2 != k {
				break
			}
			ps--
			continue
		}
		ps = st
	}
	if ps == pe {
		return -1, -1
	}
	return ps, pe
}

// shapeNext returns the word of kind k that starts one space after e, or -1.
func shapeNext(text string, e int, k shapeKind) (int, int) {
	if e+1 >= len(text) || text[e] != ' ' {
		return -1, -1
	}
	if c, _ := shapeAt(text, e+1); c != k {
		return -1, -1
	}
	return e + 1, shapeWordEnd(text, e+1, k)
}

// itemStart reports whether a whole item may start at s: at a line start after a list marker
// ("1. ", "۱. ", "- "), after a label's colon, a comma of a list, a dash, a slash or a column gap.
// It returns 0 for none, 1 for a list marker or separator, 2 for a label's colon.
func itemStart(text string, s int) int {
	j := s
	gap := 0
	for j > 0 && s-j < 64 && (text[j-1] == ' ' || text[j-1] == '\t') {
		if text[j-1] == '\t' {
			gap += 2
		}
		j--
		gap++
	}
	if j == 0 || text[j-1] == '\n' {
		return 0 // a bare line start: headings look the same
	}
	if gap >= 2 && j > 0 && text[j-1] != ':' {
		return 1 // a column of a table
	}
	r, n := utf8.DecodeLastRuneInString(text[:j])
	switch r {
	case ':', '：', '፦':
		return 2
	case ',', '،', '፣', '/', '—', '–', '·', '•', ';', '؛', '|':
		return 1
	case '.', ')', '-':
		k := j - n
		if r == '-' {
			if k == 0 || text[k-1] == '\n' {
				return 1
			}
			return 0
		}
		d := 0
		for k > 0 && d < 4 {
			r2, m := utf8.DecodeLastRuneInString(text[:k])
			if !unicode.IsDigit(r2) {
				break
			}
			k -= m
			d++
		}
		if d > 0 && d <= 3 && (k == 0 || text[k-1] == '\n' || text[k-1] == ' ' && k-1 > 0 && text[k-2] == '\n') {
			return 1
		}
	}
	return 0
}

// itemEnd reports whether an item may end at e: a line end, punctuation, a bracket, a dash, a
// slash or a column gap (the end of the text too, so that SafePrefix holds such a word).
func itemEnd(text string, e int) bool {
	if e >= len(text) {
		return true
	}
	j := e
	if text[j] == ' ' {
		j++
		if j >= len(text) {
			return true
		}
		if text[j] == ' ' || text[j] == '\t' {
			return true
		}
	}
	r, _ := utf8.DecodeRuneInString(text[j:])
	switch r {
	case '\n', '\r', '\t', ',', '،', '፣', '።', '.', ';', '؛', ')', '(', ':', '：', '፦', '—', '–', '|', '·', '-', '!', '?', '؟', '"', '«', '»', '।':
		return true
	case '/':
		return j > e // " / Henok", not "ወ/ሮ"
	}
	return false
}

// emitShape appends a name found by the rules of this file.
func emitShape(out []Entity, s, e int) []Entity {
	return append(out, Entity{Type: TypePerson, Start: s, End: e, Score: nameStrongFloor + nameContextBoost})
}

// shapeNames appends the names of the rules above; scriptNames calls it after runNames.
func shapeNames(text string, out []Entity) []Entity {
	for i := 0; i < len(text); {
		if text[i] < 0xCD {
			i++
			continue
		}
		k, n := shapeAt(text, i)
		if k == shNone {
			c, _ := classAt(text, i)
			if c == scHangul { // a chat speaker after a time stamp: "[오후 3:12] 민지: ..."
				e := scriptWordEnd(text, i, scHangul)
				if ls := lineStartWithin(text, i, 40); (ls == 0 || text[ls-1] == '\n') && runeCount(text[i:e]) >= 2 && runeCount(text[i:e]) <= 4 {
					if p, stamped := skipStamp(text, ls, len(text)); stamped && p == i && strings.HasPrefix(text[e:], ": ") && e+2 < len(text) && !isDigit(text[e+2]) {
						out = emitShape(out, i, e)
					}
				}
				i = e
				continue
			}
			if c == scHan {
				e := i
				for e < len(text) {
					r, m := utf8.DecodeRuneInString(text[e:])
					if !isHan(r) {
						break
					}
					e += m
				}
				if e == i { // a Han-class character outside the basic block ("々")
					i += n
					continue
				}
				out = zhItemNames(text, i, e, out)
				i = e
				continue
			}
			i += n
			continue
		}
		e := shapeWordEnd(text, i, k)
		if c, _ := shapeBefore(text, i); c == k {
			i = e
			continue
		}
		s, end := shapeLabelValue(text, i, k)
		switch k {
		case shGeorgian:
			if s < 0 {
				s, end = georgianName(text, i, e)
			}
		case shArmenian:
			if s < 0 {
				s, end = armenianName(text, i, e)
			}
		case shGreek:
			s, end = greekName(text, i, e)
		case shEthiopic:
			if s < 0 {
				s, end = ethiopicName(text, i, e)
			}
		case shArabic:
			s, end = arabicName(text, i, e)
		case shDevanagari:
			s, end = devanagariName(text, i, e)
		}
		if s < 0 {
			s, end = shapeSpeaker(text, i, e, k)
		}
		if s >= 0 && end > s {
			out = emitShape(out, s, end)
		}
		i = e
	}
	return out
}

// ---- Georgian ----

// georgianNotGiven are titles, roles and function words that stand before a family name
// without being a given name.
var georgianNotGiven = map[string]bool{
	"ბატონი": true, "ქალბატონი": true, "ბატონ": true, "ქალბატონ": true, "რექტორი": true,
	"თავმჯდომარე": true, "მდივანი": true, "მსაჯი": true, "დირექტორი": true, "მინისტრი": true,
	"პრეზიდენტი": true, "მფლობელი": true, "მწვრთნელი": true, "ექიმი": true, "მასწავლებელი": true,
	"პროფესორი": true, "დოქტორი": true, "მოადგილე": true, "წევრი": true, "მერი": true,
	"და": true, "ან": true, "თუ": true, "რომ": true, "ეს": true, "ის": true, "ჩვენი": true,
	"თქვენი": true, "მისი": true, "მათი": true, "ახალი": true, "ძველი": true, "ქუჩა": true,
	"გამზირი": true, "კომპანია": true, "შპს": true, "სს": true, "სსიპ": true, "ააიპ": true,
	"ბრძანება": true, "ფინალი": true, "ჟიური": true, "გუნდი": true, "კლუბი": true,
}

// georgianKin are nouns in -შვილი that are no family names (daughter, son, grandchild).
var georgianKin = []string{"ქალიშვილ", "ვაჟიშვილ", "შვილიშვილ", "შვილი"}

// georgianSurname returns the end of the family name in the word text[s:e] (before a case
// ending) and whether its ending is a strong one, or -1.
func georgianSurname(text string, s, e int) (int, bool) {
	w := text[s:e]
	if strings.HasSuffix(w, "შვილი") {
		for _, k := range georgianKin {
			if strings.HasPrefix(w, k) {
				return -1, false
			}
		}
		stem := w[:len(w)-len("შვილი")]
		if runeCount(stem) >= 3 && !strings.HasSuffix(stem, "ს") {
			return e, true
		}
		return -1, false
	}
	for _, c := range [...]string{"", "ს", "მ", "სთან", "ზე", "საც", "მაც"} {
		if strings.HasSuffix(w, "ძე"+c) && runeCount(w)-runeCount(c) >= 5 {
			return e - len(c), true
		}
	}
	if runeCount(w) >= 5 {
		for _, c := range [...]string{"ცია", "სია", "ემია", "ორია", "ერია", "დია"} {
			if strings.HasSuffix(w, c) {
				return -1, false // nouns: "ფედერაცია", "კომისია", "აკადემია", "მედია"
			}
		}
		for _, c := range [...]string{"ია", "უა", "ავა", "ანი"} {
			if strings.HasSuffix(w, c) {
				return e, false
			}
		}
	}
	return -1, false
}

// georgianGiven reports whether the word text[s:e] may be a given name before a family name.
func georgianGiven(text string, s, e int) bool {
	w := text[s:e]
	n := runeCount(w)
	if n < 2 || n > 10 || georgianNotGiven[w] {
		return false
	}
	for _, c := range [...]string{"ს", "ში", "ზე", "დან", "თან", "ით", "ად", "და"} { // "და": a verb's past
		if strings.HasSuffix(w, c) {
			return false // a case form: a genitive or a place
		}
	}
	return true
}

// georgianName finds a Georgian name whose family name is the word text[s:e].
func georgianName(text string, s, e int) (int, int) {
	end, strong := georgianSurname(text, s, e)
	if end < 0 {
		return -1, -1
	}
	ps, pe := shapePrev(text, s, shGeorgian)
	given := ps >= 0 && georgianGiven(text, ps, pe)
	switch {
	case given && strong:
		return ps, end
	case given:
		if itemStart(text, ps) > 0 || georgianNotGiven[prevWordOf(text, ps, shGeorgian)] {
			if itemEnd(text, end) {
				return ps, end
			}
		}
		return -1, -1
	case strong:
		return s, end
	}
	return -1, -1
}

// prevWordOf returns the word of kind k one space before s, or "".
func prevWordOf(text string, s int, k shapeKind) string {
	ps, pe := shapePrev(text, s, k)
	if ps < 0 {
		return ""
	}
	return text[ps:pe]
}

// ---- Armenian ----

var armenianNotGiven = map[string]bool{"Տեր": true, "Տիկին": true, "Պարոն": true, "Դոկտոր": true,
	"Սուրբ": true, "Սբ": true, "Հայր": true, "Տիար": true, "Օրիորդ": true}

// armenianCased reports whether text[s:e] is a capitalised Armenian word (not all capitals).
func armenianCased(text string, s, e int) bool {
	r, n := utf8.DecodeRuneInString(text[s:])
	if r < 0x531 || r > 0x556 || s+n >= e {
		return false
	}
	for _, r := range text[s+n : e] {
		if r >= 0x531 && r <= 0x556 {
			return false
		}
	}
	return true
}

// armenianSurname returns the end of the family name in text[s:e] before a dative or an
// article, or -1.
func armenianSurname(text string, s, e int) int {
	if !armenianCased(text, s, e) {
		return -1
	}
	w := text[s:e]
	for _, c := range [...]string{"", "ին", "ը", "ն"} {
		b := strings.TrimSuffix(w, c)
		if len(b) == len(w) && c != "" {
			continue
		}
		if strings.HasSuffix(b, "ության") || runeCount(b) < 5 {
			return -1
		}
		if strings.HasSuffix(b, "յան") || strings.HasSuffix(b, "յանց") {
			return e - len(c)
		}
	}
	return -1
}

// armenianStreetWords after a family-name shape make it a street's name ("Աբովյան փողոց").
var armenianStreetWords = []string{" փողոց", " պողոտա", " փ.", " պող.", " հրապարակ", " թաղամաս", " նրբանցք", " փողոցում", " պողոտայում"}

func armenianName(text string, s, e int) (int, int) {
	end := armenianSurname(text, s, e)
	if end < 0 || end == e && startsWithAny(text[e:], armenianStreetWords) {
		return -1, -1
	}
	if ps, pe := shapePrev(text, s, shArmenian); ps >= 0 && armenianCased(text, ps, pe) && !armenianNotGiven[text[ps:pe]] && armenianSurname(text, ps, pe) < 0 {
		return ps, end
	}
	if end == e {
		if ns, ne := shapeNext(text, e, shArmenian); ns >= 0 && armenianCased(text, ns, ne) && armenianSurname(text, ns, ne) < 0 && itemEnd(text, ne) {
			return s, ne // family name first: "Մանուկյան Գևորգ"
		}
	}
	return s, end
}

// ---- Greek ----

// greekFold writes the lower-case form of w without accents into buf.
func greekFold(w string, buf []byte) []byte {
	buf = buf[:0]
	for _, r := range w {
		r = unicode.ToLower(r)
		switch r {
		case 'ά':
			r = 'α'
		case 'έ':
			r = 'ε'
		case 'ή':
			r = 'η'
		case 'ί', 'ϊ', 'ΐ':
			r = 'ι'
		case 'ό':
			r = 'ο'
		case 'ύ', 'ϋ', 'ΰ':
			r = 'υ'
		case 'ώ':
			r = 'ω'
		}
		buf = utf8.AppendRune(buf, r)
	}
	if n := len(buf); n >= 2 && buf[n-2] == 0xCF && buf[n-1] == 0x83 {
		buf[n-1] = 0x82 // a final Σ in capitals folds to "ς"
	}
	return buf
}

var greekStrong = []string{"πουλος", "πουλου", "ιδης", "ιδου", "ακης", "ιαδης", "ογλου", "ιαδου"}
var greekMedium = []string{"ιδη", "ακη", "ακου", "ιου", "ελλης", "ουδης", "ιωτης", "ιωτη", "οπουλο"}

// greekNotName are capitalised words next to a family-name shape that are not names: months in
// the genitive, saints, days, streets.
var greekNotName = map[string]bool{
	"ιανουαριου": true, "φεβρουαριου": true, "μαρτιου": true, "απριλιου": true, "μαιου": true,
	"ιουνιου": true, "ιουλιου": true, "αυγουστου": true, "σεπτεμβριου": true, "οκτωβριου": true,
	"νοεμβριου": true, "δεκεμβριου": true, "αγιου": true, "αγιος": true, "αγια": true, "αγιας": true,
	"οσιου": true, "κυριακη": true, "δευτερα": true, "τριτη": true, "τεταρτη": true, "πεμπτη": true,
	"παρασκευη": true, "σαββατο": true, "οδος": true, "οδου": true, "λεωφορος": true,
	"λεωφορου": true, "πλατεια": true, "πλατειας": true, "ναος": true, "ιερος": true, "ιερου": true,
}

// greekShape returns 2 for a strong family-name ending, 1 for a medium one, 0 for none.
func greekShape(text string, s, e int) int {
	if !casedWord(text, s, e) || runeCount(text[s:e]) < 5 {
		return 0
	}
	var b [96]byte
	f := greekFold(text[s:e], b[:0])
	if greekNotName[string(f)] || strings.HasSuffix(string(f), "ειου") {
		return 0
	}
	for _, x := range greekStrong {
		if strings.HasSuffix(string(f), x) {
			return 2
		}
	}
	for _, x := range greekMedium {
		if strings.HasSuffix(string(f), x) {
			return 1
		}
	}
	return 0
}

// greekGiven reports whether the word text[s:e] may be the given name next to a family name.
func greekGiven(text string, s, e int, medium bool) bool {
	if !casedWord(text, s, e) || runeCount(text[s:e]) < 3 || greekShape(text, s, e) > 0 {
		return false
	}
	var b [96]byte
	f := string(greekFold(text[s:e], b[:0]))
	if greekNotName[f] || strings.HasSuffix(f, "ων") {
		return false
	}
	if medium {
		for _, x := range [...]string{"ος", "ης", "α", "η", "ω", "ουλα"} {
			if strings.HasSuffix(f, x) && !strings.HasSuffix(f, "ιας") {
				return true
			}
		}
		return false
	}
	return true
}

// greekAbbrev returns the end of an abbreviated given name at s ("Αικ.", "Σπ.", "Λ."), or -1.
func greekAbbrev(text string, s int) int {
	j := s
	n := 0
	for j < len(text) {
		c, m := shapeAt(text, j)
		if c != shGreek {
			break
		}
		j += m
		n++
	}
	if n == 0 || n > 4 || j >= len(text) || text[j] != '.' || !capitalAt(text, s) {
		return -1
	}
	return j + 1
}

// greekCapsRow returns the end of a name in capitals that is a whole row or list item, a family
// name of a strong ending and a given name of a nominative shape in either order
// ("ΠΑΠΑΔΟΠΟΥΛΟΣ ΓΕΩΡΓΙΟΣ"), or -1. Company forms after it (Α.Ε.) are items of their own.
func greekCapsRow(text string, s, e int) int {
	ns, ne := shapeNext(text, e, shGreek)
	if ns < 0 || !allCaps(text[s:e]) || !allCaps(text[ns:ne]) || runeCount(text[s:e]) < 3 || runeCount(text[ns:ne]) < 3 {
		return -1
	}
	if !(itemStart(text, s) > 0 || s == 0 || text[s-1] == '\n') || !itemEnd(text, ne) {
		return -1
	}
	var b1, b2 [96]byte
	f1, f2 := string(greekFold(text[s:e], b1[:0])), string(greekFold(text[ns:ne], b2[:0]))
	strong := func(f string) bool { return endsWithAny(f, 5, greekStrong) }
	given := func(f string) bool {
		return !greekNotName[f] && !strong(f) && endsWithAny(f, 3, []string{"ος", "ης", "ας", "α", "η"}) && !strings.HasSuffix(f, "ιας")
	}
	if strong(f1) && given(f2) || given(f1) && strong(f2) {
		return ne
	}
	return -1
}

func greekName(text string, s, e int) (int, int) {
	if end := greekCapsRow(text, s, e); end > 0 {
		return s, end
	}
	if ie := greekAbbrev(text, s); ie > 0 && ie < len(text) && text[ie] == ' ' { // "Λ. Μαυρίδη"
		if c, _ := shapeAt(text, ie+1); c == shGreek {
			ne := shapeWordEnd(text, ie+1, shGreek)
			if greekShape(text, ie+1, ne) > 0 && runeCount(text[s:ie]) == 2 {
				return s, ne
			}
		}
	}
	sh := greekShape(text, s, e)
	if sh == 0 {
		return -1, -1
	}
	if ps, pe := shapePrev(text, s, shGreek); ps >= 0 {
		var b [96]byte
		if greekNotName[string(greekFold(text[ps:pe], b[:0]))] {
			return -1, -1 // "οδός Παπαδοπούλου", "Αγίου Δημητρίου"
		}
		if greekGiven(text, ps, pe, sh == 1) {
			return ps, e
		}
	}
	if strings.HasPrefix(text[e:], " Α.Ε") || strings.HasPrefix(text[e:], " ΑΕ") || strings.HasPrefix(text[e:], " &") || strings.HasPrefix(text[e:], " Ο.Ε") {
		return -1, -1
	}
	if e+1 < len(text) && text[e] == ' ' {
		if ae := greekAbbrev(text, e+1); ae > 0 {
			return s, ae // "Παπαδοπούλου Αικ."
		}
	}
	if ns, ne := shapeNext(text, e, shGreek); ns >= 0 && greekGiven(text, ns, ne, sh == 1) && itemEnd(text, ne) {
		return s, ne // family name first: "Γεωργίου Νικόλαος"
	}
	if sh == 2 {
		return s, e
	}
	return -1, -1
}

// ---- Ethiopic ----

var ethiopicTitles = []string{"አቶ", "ወ/ሮ", "ወ/ሪት", "ወ/ት", "ዶ/ር", "ዶክተር", "ዲያቆን", "ቄስ", "ኣቶ",
	"ወይዘሮ", "ወይዘሪት", "ፕሮፌሰር", "ሻምበል", "ሻለቃ", "ኮሎኔል", "ሼህ", "ቀሲስ", "መጋቢ", "ኢንጂነር", "ወ/ሮ.", "ሓው", "ሓብቲ"}

// ethiopicNotName are label values of two words that name places and times, not people.
var ethiopicPlaceLabels = []string{"ቦታ", "አድራሻ", "ከተማ", "ስብሰባ", "ቀን", "ሰዓት", "ሀገር", "ክልል", "ወረዳ", "ቀበሌ"}

func ethiopicName(text string, s, e int) (int, int) {
	j := skipSpacesBack(text, s)
	titled := false
	if j < s {
		for _, t := range ethiopicTitles {
			if strings.HasSuffix(text[:j], t) {
				if k := j - len(t); k == 0 || text[k-1] == ' ' || text[k-1] == '\n' || text[k-1] == '(' {
					titled = true
					break
				}
			}
		}
	}
	ns, ne := shapeNext(text, e, shEthiopic)
	if titled {
		if ns >= 0 {
			return s, ne
		}
		return s, e
	}
	if ns < 0 || !itemEnd(text, ne) {
		return -1, -1
	}
	switch itemStart(text, s) {
	case 0:
		return -1, -1
	default:
		ls := lineStartWithin(text, s, runBack)
		for _, p := range ethiopicPlaceLabels {
			if strings.Contains(text[ls:s], p) {
				return -1, -1
			}
		}
	}
	return s, ne
}

// ---- Arabic script ----

// arabicOrgNouns start the names of organisations and places in Arabic, Persian and Urdu.
var arabicOrgNouns = map[string]bool{
	"بنك": true, "بانک": true, "بینک": true, "مستشفى": true, "بیمارستان": true, "ہسپتال": true,
	"شركة": true, "شرکت": true, "کمپنی": true, "دانشگاه": true, "جامعة": true, "یونیورسٹی": true,
	"مسجد": true, "مدرسة": true, "مدرسه": true, "دبیرستان": true, "اسکول": true, "خیابان": true,
	"شارع": true, "سڑک": true, "فندق": true, "هتل": true, "ہوٹل": true, "میدان": true, "ساحة": true,
	"حي": true, "محلہ": true, "بزرگراه": true, "بلوار": true, "کوچه": true, "وزارة": true,
	"وزارت": true, "سازمان": true, "مرکز": true, "مركز": true, "دانشکده": true, "كلية": true,
	"کالج": true, "شهرداری": true, "بلدية": true, "مدينة": true, "شهر": true, "شہر": true,
	"فرودگاه": true, "مطار": true, "جامع": true, "مجمع": true, "اداره": true, "دفتر": true,
	"مكتب": true, "سوق": true, "بازار": true, "مطعم": true, "رستوران": true, "مرکزی": true,
}

// arabicStops end a name in running text.
var arabicStops = map[string]bool{
	"را": true, "که": true, "از": true, "و": true, "به": true, "در": true, "با": true, "این": true,
	"آن": true, "است": true, "بود": true, "سے": true, "کی": true, "کا": true, "کے": true, "نے": true,
	"کو": true, "میں": true, "ہے": true, "اور": true, "صاحب": true, "پر": true, "تک": true,
	"من": true, "في": true, "على": true, "إلى": true, "الى": true, "عن": true, "مع": true,
	"قال": true, "يوم": true, "الساعة": true, "هو": true, "هي": true, "لا": true, "ما": true,
	"کہ": true, "بھی": true, "ہیں": true, "تھا": true, "هم": true, "هر": true, "برای": true,
	"ساعت": true, "روز": true, "فردا": true, "امروز": true, "دوباره": true, "لطفا": true,
}

// arabicTitles cue a name in Persian and Urdu (Arabic ones are script.go's cues).
var arabicTitles = map[string]bool{
	"آقای": true, "آقا": true, "خانم": true, "جناب": true, "دکتر": true, "مهندس": true,
	"شادروان": true, "مرحوم": true, "مرحومه": true, "حاجی": true, "حاج": true, "استاد": true,
	"سرکار": true, "الأخ": true, "الأخت": true, "الاخ": true, "الاخت": true, "الحاج": true,
	"الحاجة": true, "بیگم": true,
}

// persianRoles follow a title without being a name ("جناب چیئرمین صاحب").
var persianRoles = map[string]bool{"چیئرمین": true, "صدر": true, "مدیر": true, "رئیس": true,
	"وزیر": true, "سرپرست": true, "مسئول": true, "ناظم": true, "پرنسپل": true}

var arabicPlaceLabels = []string{"آدرس", "نشانی", "عنوان", "العنوان", "پتہ", "المدينة", "شهر", "شہر",
	"مکان", "المكان", "الموقع", "محل", "بارات", "موضوع", "الموضوع"}

// shapeWordAt returns the word of kind k at s and its end, or -1.
func shapeWordAt(text string, s int, k shapeKind) (string, int) {
	if c, _ := shapeAt(text, s); c != k {
		return "", -1
	}
	e := shapeWordEnd(text, s, k)
	return text[s:e], e
}

func arabicWordAt(text string, s int) (string, int) { return shapeWordAt(text, s, shArabic) }

// arabicNisba reports an Arabic nisba ("الحسيني", "الشمري") or a Persian family-name suffix.
func arabicNisba(w string) bool {
	n := runeCount(w)
	if strings.HasPrefix(w, "ال") && n >= 5 && (strings.HasSuffix(w, "ي") || strings.HasSuffix(w, "ی")) {
		return true
	}
	if strings.HasPrefix(w, "ال") {
		return false
	}
	for _, x := range [...]string{"زاده", "پور", "نژاد", "\u200cنژاد", "\u200cزاده", "\u200cپور"} {
		if strings.HasSuffix(w, x) && n >= 5 {
			return true
		}
	}
	return n >= 4 && (strings.HasSuffix(w, "یی") || strings.HasSuffix(w, "ی") && !strings.HasSuffix(w, "ای"))
}

// ابن ("son") is left out: "ابن أخيه" is a nephew.
func arabicParticle(w string) bool { return w == "بن" || w == "بنت" }

func arabicKunya(w string) bool { return w == "أبو" || w == "ابو" || w == "أبي" }

func arabicName(text string, s, e int) (int, int) {
	w := text[s:e]
	if arabicStops[w] || arabicOrgNouns[w] || arabicParticle(w) {
		return -1, -1
	}
	ps, pe := shapePrev(text, s, shArabic)
	prev := ""
	if ps >= 0 {
		prev = text[ps:pe]
	}
	// a Persian or Urdu title before: "آقای موسوی"، "شادروان حسین رضایی را"; a father after ولد
	if arabicTitles[prev] && !persianRoles[w] || prev == "ولد" || prev == "ولدِ" {
		end, n := e, 1
		for n < 3 {
			nw, ne := "", -1
			if end < len(text) && text[end] == ' ' {
				nw, ne = arabicWordAt(text, end+1)
			}
			if ne < 0 || arabicStops[nw] || arabicTitles[nw] {
				break
			}
			end, n = ne, n+1
		}
		if n == 3 && !itemEnd(text, end) {
			return -1, -1
		}
		return s, end
	}
	if strings.HasPrefix(w, "ال") || arabicTitles[w] || arabicStops[prev] && prev != "" && itemStart(text, s) == 0 {
		return -1, -1
	}
	// the words of the name from s: up to four, joined by particles
	var ends [5]int
	n := 0
	evidence := false
	j := s
	for n < 5 {
		nw, ne := arabicWordAt(text, j)
		if ne < 0 || arabicStops[nw] && n > 0 {
			break
		}
		if n > 0 && arabicTitles[nw] {
			break
		}
		if arabicOrgNouns[nw] {
			return -1, -1 // "وأعلن بنك الراجحي": an organisation in the item
		}
		ends[n] = ne
		n++
		if part := text[j:ne]; !evidence && n >= 3 && (arabicParticle(part) || arabicKunya(part) || part == "عبد") {
			// two words before the particle: the first is no part of the name ("يسكن محمود عبد
			// الرحمن") unless an item starts there or the second is "al-..." ("فاطمة الزهراء بن علي")
			if n >= 4 || itemStart(text, s) == 0 && !strings.HasPrefix(text[ends[0]+1:], "ال") {
				return -1, -1
			}
		}
		switch {
		case n > 1 && (arabicParticle(text[j:ne]) || arabicKunya(text[j:ne])):
			evidence = evidence || ne+1 < len(text) && text[ne] == ' '
		case n == 1 && arabicKunya(text[j:ne]) && itemStart(text, s) > 0:
			evidence = true // "المشرف: أبو أحمد"
		case n > 1 && text[j:ne] == "عبد":
			if ne+1 < len(text) && strings.HasPrefix(text[ne+1:], "ال") {
				evidence = true
			}
		}
		if ne >= len(text) || text[ne] != ' ' {
			break
		}
		j = ne + 1
	}
	if n < 2 {
		return -1, -1
	}
	start := itemStart(text, s)
	if start > 0 {
		ls := lineStartWithin(text, s, runBack)
		for _, p := range arabicPlaceLabels {
			if strings.Contains(text[ls:s], p) {
				return -1, -1
			}
		}
	}
	// the name ends at a boundary after two to four words
	for k := n; k >= 2; k-- {
		end := ends[k-1]
		if k == 5 && !evidence {
			continue
		}
		nw := ""
		if end+1 < len(text) && text[end] == ' ' {
			nw = nextArabicWord(text, end+1)
		}
		if nw == "ولد" || nw == "ولدِ" {
			return s, end // "شاہد محمود ولد عبدالمجید": a son of someone
		}
		if !itemEnd(text, end) && !arabicStops[nw] && !(evidence && strings.HasPrefix(nw, "و") && runeCount(nw) >= 4) {
			continue
		}
		last := text[lastWordStart(text, s, end):end]
		if arabicParticle(last) || arabicKunya(last) || last == "عبد" {
			continue
		}
		if evidence && (start > 0 || prev == "" || arabicOrgNouns[prev] == false) {
			return s, end
		}
		if start > 0 && arabicNisba(last) && k <= 3 {
			return s, end
		}
	}
	return -1, -1
}

func nextArabicWord(text string, s int) string {
	w, _ := arabicWordAt(text, s)
	return w
}

// lastWordStart returns the start of the last space-separated word of text[s:e].
func lastWordStart(text string, s, e int) int {
	if k := strings.LastIndexByte(text[s:e], ' '); k >= 0 {
		return s + k + 1
	}
	return s
}

// ---- Devanagari ----

var devanagariRoles = map[string]bool{
	"सरपंच": true, "सचिव": true, "अध्यक्ष": true, "प्रधान": true, "उपाध्यक्ष": true,
	"कोषाध्यक्ष": true, "निदेशक": true, "प्रबंधक": true, "अधिकारी": true, "शिक्षक": true,
	"शिक्षिका": true, "प्रधानाचार्य": true, "पार्षद": true, "विधायक": true, "सांसद": true,
	"मंत्री": true, "मुखिया": true, "लेखपाल": true, "पटवारी": true, "थानाध्यक्ष": true,
	"कलेक्टर": true, "जिलाधिकारी": true, "संयोजक": true, "प्रभारी": true, "कप्तान": true,
}

var devanagariStops = map[string]bool{
	"ने": true, "को": true, "की": true, "का": true, "के": true, "से": true, "में": true, "और": true,
	"जी": true, "सर": true, "है": true, "हैं": true, "द्वारा": true, "भी": true, "तथा": true,
	"एवं": true, "या": true, "पर": true, "था": true, "थी": true, "मोबाइल": true, "फोन": true,
	"आयु": true, "उम्र": true, "पता": true, "गांव": true, "ग्राम": true, "जिला": true,
}

// devanagariPlaceParts end the words of place names: "इंदिरा नगर", "रामपुर", "गाजियाबाद".
var devanagariPlaceParts = []string{"नगर", "पुर", "गंज", "बाद", "मार्ग", "रोड", "चौक", "कॉलोनी", "विहार", "कलां", "खुर्द", "पुरम", "गढ़"}

func devaWordAt(text string, s int) (string, int) { return shapeWordAt(text, s, shDevanagari) }

// devaRun returns the end of two or three name words from s (the third only when an item ends
// after it), or -1.
func devaRun(text string, s int) int {
	end, n := -1, 0
	j := s
	for n < 3 {
		w, we := devaWordAt(text, j)
		if we < 0 || devanagariStops[w] || devanagariRoles[w] {
			break
		}
		for _, p := range devanagariPlaceParts {
			if strings.HasSuffix(w, p) {
				return -1
			}
		}
		n++
		if n == 3 && !itemEnd(text, we) {
			break
		}
		end = we
		if we+1 >= len(text) || text[we] != ' ' {
			break
		}
		j = we + 1
	}
	if n < 2 {
		return -1
	}
	return end
}

func devanagariName(text string, s, e int) (int, int) {
	w := text[s:e]
	if devanagariStops[w] || devanagariRoles[w] {
		return -1, -1
	}
	// a role before: "सरपंच सुनीता देवी", "पंचायत सचिव: अजय कुमार सिंह"
	j := skipSpacesBack(text, s)
	if j > 0 && text[j-1] == ':' {
		j = skipSpacesBack(text, j-1)
	}
	if j < s {
		if c, ps := shapeBefore(text, j); c == shDevanagari {
			for ps > 0 {
				c2, p2 := shapeBefore(text, ps)
				if c2 != shDevanagari {
					break
				}
				ps = p2
			}
			if devanagariRoles[text[ps:j]] {
				if end := devaRun(text, s); end > 0 {
					return s, end
				}
			}
		}
	}
	// items of a list after a label: "बाकी है: रामप्रसाद यादव, कमला बाई, मोहन लाल वर्मा।"
	k := itemStart(text, s)
	if k == 0 {
		return -1, -1
	}
	end := devaRun(text, s)
	if end < 0 || runeCount(text[s:end]) < 5 || !itemEnd(text, end) {
		return -1, -1
	}
	if k == 2 {
		if !strings.HasPrefix(text[end:], ", ") {
			return -1, -1 // one value after a label: a subject, a place
		}
		ne := devaRun(text, end+2)
		if ne < 0 && end+2 < len(text) || ne > 0 && sharesWord(text[s:end], text[end+2:ne]) {
			return -1, -1 // "आधार कार्ड, राशन कार्ड": things of one kind
		}
		return s, end
	}
	// a later item: the one before it is a name item of the same list
	if r, _ := utf8.DecodeLastRuneInString(text[:skipSpacesBack(text, s)]); r != ',' {
		return -1, -1
	}
	ps := skipSpacesBack(text, s) - 1 // the comma
	for q := ps - 1; q > 0 && ps-q < runBack; q-- {
		switch text[q] {
		case ',':
			if sharesWord(strings.TrimSpace(text[q+1:ps]), text[s:end]) {
				return -1, -1
			}
			ps = q // an earlier item: the list goes on back to its label
		case ':':
			if sharesWord(strings.TrimSpace(text[q+1:ps]), text[s:end]) {
				return -1, -1 // "आधार कार्ड, राशन कार्ड": things of one kind
			}
			return s, end
		case '\n':
			return -1, -1
		}
	}
	return -1, -1
}

// ---- chat speakers ----

// shapeSpeaker returns a chat speaker of one or two words of kind k at a line start before ':'
// and a message: after a time stamp, or when the same speaker starts an earlier line.
func shapeSpeaker(text string, s, e int, k shapeKind) (int, int) {
	ls := lineStartWithin(text, s, 40)
	if ls > 0 && text[ls-1] != '\n' {
		return -1, -1 // not near a line start
	}
	p, stamped := skipStamp(text, ls, len(text))
	if p != s {
		return -1, -1
	}
	end := e
	if ns, ne := shapeNext(text, e, k); ns >= 0 && ne < len(text) && text[ne] == ':' {
		end = ne
	}
	if end >= len(text) || text[end] != ':' || end+2 >= len(text) || text[end+1] != ' ' {
		return -1, -1
	}
	m := end + 2
	if isDigit(text[m]) || text[m] == '+' {
		return -1, -1
	}
	if k == shGreek && !casedWord(text, s, e) || k == shArabic && arabicTitles[text[s:e]] {
		return -1, -1
	}
	if stamped {
		return s, end
	}
	name := text[s : end+1]
	for q := ls - 1; q > 0 && s-q < runBack; {
		pl := lineStartWithin(text, q, runBack)
		if strings.HasPrefix(text[pl:q], name+" ") {
			return s, end
		}
		q = pl - 1
	}
	return -1, -1
}

// sharesWord reports whether the items a and b have a word in common.
func sharesWord(a, b string) bool {
	for a != "" {
		w := a
		if k := strings.IndexByte(a, ' '); k >= 0 {
			w, a = a[:k], a[k+1:]
		} else {
			a = ""
		}
		for r := b; r != ""; {
			v := r
			if k := strings.IndexByte(r, ' '); k >= 0 {
				v, r = r[:k], r[k+1:]
			} else {
				r = ""
			}
			if v == w {
				return true
			}
		}
	}
	return false
}

// lineStartWithin returns the start of the line holding s, or s-max when it starts further back
// (every rule's look-back is bounded: TestLinearTime).
func lineStartWithin(text string, s, max int) int {
	lo := s - max
	if lo < 0 {
		lo = 0
	}
	if k := strings.LastIndexByte(text[lo:s], '\n'); k >= 0 {
		return lo + k + 1
	}
	return lo
}

// ---- Chinese items ----

// zhItemNames appends the Chinese names of the whole Han run text[s:e] when it is an item: of a
// list whose items, separated by "、", are all names of two or three characters, one of three
// at least ("王子涵、李沐阳、陈思琪"); or of a row, before a note in brackets ("黃冠霖（資訊工程學系
// 三年級）", "刘伟（主治）" in a column), with nothing but a line start, a column gap or a label
// before it. Lines with kana are Japanese and left to script.go.
func zhItemNames(text string, s, e int, out []Entity) []Entity {
	n := runeCount(text[s:e])
	if n < 2 || n > 3 || !zhName(text[s:e]) {
		return out
	}
	ls := lineStartWithin(text, s, runBack)
	le := e + strings.IndexByte(text[e:min(len(text), e+runBack)], '\n')
	if le < e {
		le = min(len(text), e+runBack)
	}
	for _, r := range text[ls:le] {
		if isKana(r) {
			return out
		}
	}
	before, _ := utf8.DecodeLastRuneInString(text[:s])
	after, _ := utf8.DecodeRuneInString(text[e:])
	if s == 0 {
		before = '\n'
	}
	if after == '（' || after == '(' {
		gap := s >= 2 && (text[s-2:s] == "  " || text[s-1] == '\t')
		if before == '\n' && n == 3 || gap || before == '：' || before == '、' {
			return emitShape(out, s, e)
		}
		return out
	}
	if before != '、' && after != '、' {
		return out
	}
	// the whole list, from its first item: each a whole Han run that is a name
	items, three := 0, false
	first := s
	for {
		q, _ := hanItemBack(text, first)
		if q < 0 || s-q > runBack {
			break
		}
		first = q
	}
	for p := first; p < len(text) && p-s < runBack; {
		q := p
		for q < len(text) {
			r, m := utf8.DecodeRuneInString(text[q:])
			if !isHan(r) {
				break
			}
			q += m
		}
		c := runeCount(text[p:q])
		if c < 2 || c > 3 || !zhName(text[p:q]) {
			return out
		}
		items++
		three = three || c == 3
		if !strings.HasPrefix(text[q:], "、") {
			break
		}
		p = q + len("、")
	}
	if items >= 2 && three {
		return emitShape(out, s, e)
	}
	return out
}

// hanItemBack returns the start of the Han run that ends just before a "、" ending at p, or -1.
func hanItemBack(text string, p int) (int, int) {
	if !strings.HasSuffix(text[:p], "、") {
		return -1, -1
	}
	q := p - len("、")
	e := q
	for q > 0 {
		r, m := utf8.DecodeLastRuneInString(text[:q])
		if !isHan(r) {
			break
		}
		q -= m
	}
	if q == e {
		return -1, -1
	}
	return q, e
}

// shapeLabels are the field labels for a person's name in the scripts only this file reads
// (script.go's cues cover the others): the value after the label and ':' is a name.
var shapeLabels = map[shapeKind][]string{
	shGeorgian: {"სახელი", "გვარი", "სახელი და გვარი", "სახელი, გვარი", "მომხმარებელი", "განმცხადებელი",
		"პაციენტი", "მიმღები", "გამგზავნი", "საკონტაქტო პირი", "ხელმომწერი"},
	shArmenian: {"Անուն", "Ազգանուն", "Անուն Ազգանուն", "Անուն, ազգանուն", "Անուն ազգանուն", "Դիմող",
		"Հիվանդ", "Ստացող", "Ուղարկող", "Կոնտակտային անձ", "անուն", "ազգանուն"},
	shEthiopic: {"ስም", "ሙሉ ስም", "የአባት ስም", "ስም እና የአባት ስም", "አመልካች", "ተቀባይ", "ላኪ", "ታካሚ", "ስምን ኣቦን"},
}

// shapeLabelValue returns a name of one to three words of kind k at s after a name label and a
// colon ("სახელი, გვარი: ...", "Անուն Ազգանուն՝ ...", "ሙሉ ስም፦ ..."), or -1.
func shapeLabelValue(text string, s int, k shapeKind) (int, int) {
	labels := shapeLabels[k]
	if labels == nil {
		return -1, -1
	}
	j := skipSpacesBack(text, s)
	found := false
	for _, sep := range [...]string{":", "：", "፦", "՝", "-", "—"} {
		if strings.HasSuffix(text[:j], sep) {
			j, found = skipSpacesBack(text, j-len(sep)), true
			break
		}
	}
	if !found || j == s {
		return -1, -1
	}
	ok := false
	for _, l := range labels {
		if strings.HasSuffix(text[:j], l) {
			if b := j - len(l); b == 0 || !isLetterBefore(text, b) {
				ok = true
				break
			}
		}
	}
	if !ok {
		return -1, -1
	}
	end := shapeWordEnd(text, s, k)
	for n := 1; n < 3 && !itemEnd(text, end); n++ {
		ns, ne := shapeNext(text, end, k)
		if ns < 0 {
			break
		}
		end = ne
	}
	if !itemEnd(text, end) {
		return -1, -1
	}
	return s, end
}
