package detect

import (
	"strings"
	"unicode/utf8"
)

// Romanised names written family name first, the family name in capitals: "TANAKA Hiroshi",
// "KIM Min-jun", "NGUYEN Van An", "ZHANG Wei" — the form of passports, manifests, conference
// programmes and East Asian business cards. The capitals alone are no evidence (acronyms come
// before capitalised words too: "IBM Research", "KAIST Daejeon"), so one of two more is needed:
//
//   - the given name has the hyphenated two-syllable shape of Korean and Chinese romanisation
//     ("Min-jun", "Seo-yeon", "Xiao-ling": each part two to five lower-case letters), or
//   - the word in capitals looks like a name to the gazetteer or the name model and like no
//     ordinary word (capsNameWord), and the first given word is a known or probable given name.
//
// The run is one to three capitalised words (Vietnamese and Chinese middle names) and must end
// there: at punctuation, a bracket, a column gap, the line end or a lower-case word; a
// capitalised word after it that is an organisation or place word ("University") breaks it.
// Unlike capsRowSpan (namelist.go) it needs no list item: "Panel chaired by ZHANG Wei with ...".
// It reads at most three words after the capitals, which familyFirstPending holds in SafePrefix.

// familyFirstSpan returns the end of a name whose family name in capitals is text[s:e], or -1.
func (d nameDetector) familyFirstSpan(text string, s, e int) int {
	n := e - s
	if n < 2 || n > 12 || !allCaps(text[s:e]) || strings.ContainsAny(text[s:e], "'-’") {
		return -1
	}
	if j := skipBlanksBack(text, s); j == s && s > 0 && text[s-1] != '\n' && text[s-1] != '(' {
		return -1 // glued to something before it
	}
	if ps := prevWordStart(text, s); ps >= 0 && allCaps(text[ps:s-1]) {
		return -1 // a heading in capitals: "ASIAN SEMICONDUCTOR FORUM"
	}
	end, words := e, 0
	hyphenated, givenKnown := false, false
	for words < 3 {
		if end+1 >= len(text) || text[end] != ' ' || !isLetterAt(text, end+1) {
			break
		}
		ns := end + 1
		ne := wordEnd(text, ns)
		w := text[ns:ne]
		if !isCapWord(w) || allCaps(w) || isTitle(w) {
			break
		}
		var lb [32]byte
		if lw, ok := lowerInto(lb[:0:len(lb)], w); ok && nameBreakers[string(lw)] {
			return -1 // "KIM Dong Publishing" is no name
		}
		if words == 0 {
			hyphenated = romanisedSyllables(w)
			f := d.flags(w)
			givenKnown = f&(gzFirst|gzProbable) != 0 && f&(gzNotName|gzPlace) == 0
		}
		end, words = ne, words+1
	}
	if words == 0 {
		return -1
	}
	var fb [16]byte
	fl, _ := lowerInto(fb[:0:len(fb)], text[s:e])
	viet := vietFamilies[string(fl)] && n >= 2 && hasVowel(text[s:e]) // "NGUYEN Van An", "LE Thi Hoa"
	if !hyphenated && !viet && !(givenKnown && n >= 3 && hasVowel(text[s:e]) && d.capsNameWord(text[s:e])) {
		return -1
	}
	if end < len(text) {
		switch c := text[end]; {
		case c == ' ' && end+1 < len(text) && isLetterAt(text, end+1) && !isLower(text[end+1]) && !allCaps(text[end+1:wordEnd(text, end+1)]):
			return -1 // more capitalised words: a title, an organisation
		case c == '\'' || c == '@' || isDigit(c):
			return -1
		}
	}
	return end
}

// romanisedSyllables reports whether w is two syllables joined by a hyphen, the first
// capitalised: "Min-jun", "Ji-hoon", "Seo-yeon".
func romanisedSyllables(w string) bool {
	a, b, ok := strings.Cut(w, "-")
	if !ok || len(a) < 2 || len(a) > 5 || len(b) < 2 || len(b) > 5 {
		return false
	}
	for i := 1; i < len(a); i++ {
		if !isLower(a[i]) {
			return false
		}
	}
	for i := 0; i < len(b); i++ {
		if !isLower(b[i]) {
			return false
		}
	}
	return true
}

// prevWordStart returns the start of the word that ends one space before s, or -1.
func prevWordStart(text string, s int) int {
	if s < 2 || text[s-1] != ' ' || !isLetterBefore(text, s-1) {
		return -1
	}
	k := s - 1
	for k > 0 && s-k < 40 {
		r, n := utf8.DecodeLastRuneInString(text[:k])
		if r == ' ' || r == '\n' || r == '\t' || r < utf8.RuneSelf && !isAlpha(byte(r)) {
			break
		}
		k -= n
	}
	return k
}

func isLetterBefore(text string, i int) bool {
	if i <= 0 {
		return false
	}
	r, _ := utf8.DecodeLastRuneInString(text[:i])
	return r >= utf8.RuneSelf || isAlpha(byte(r))
}

// familyFirstPending reports whether SafePrefix must hold the word in capitals text[cs:ce]:
// it starts a familyFirstSpan, or the words after it that decide one have not all arrived.
func (d nameDetector) familyFirstPending(text string, cs, ce int) bool {
	if ce-cs < 2 || ce-cs > 12 || !allCaps(text[cs:ce]) {
		return false
	}
	if d.familyFirstSpan(text, cs, ce) > 0 {
		return true
	}
	end := ce
	for words := 0; words < 3; words++ {
		if end >= len(text) || end+1 >= len(text) && text[end] == ' ' {
			return true // the next word may still come
		}
		if text[end] != ' ' || !isLetterAt(text, end+1) {
			return false
		}
		ne := wordEnd(text, end+1)
		if ne >= len(text) {
			return true // the word may go on
		}
		if w := text[end+1 : ne]; !isCapWord(w) || allCaps(w) {
			return false
		}
		end = ne
	}
	return end+1 >= len(text)
}

// hasVowel reports whether the word in capitals w has a vowel: acronyms often have none ("RN",
// "DPD", "TJ"), family names always do.
func hasVowel(w string) bool {
	for _, r := range w {
		switch r {
		case 'A', 'E', 'I', 'O', 'U', 'Y', 'Á', 'É', 'Í', 'Ó', 'Ú', 'Ô', 'Ơ', 'Ư', 'Â', 'Ă', 'Ê':
			return true
		}
	}
	return false
}

// Vietnamese names are written family name first in title case: "Nguyễn Đức Minh", "Trần Thị
// Mai Anh", "Nguyen Duc Minh". The family name is one of a closed class (these sixteen cover
// nine in ten Vietnamese), the rest one to three syllables; the name model knows few of them.
// As for Chinese and Korean family names in script.go, the closed class only says where a name
// may start: the run must be a whole item (a row or list item, a label's value, after a
// Vietnamese kinship title such as "cô", "anh", "chị") and end at its boundary, and a place or
// street word before or after it (TP., đường, Phường; City, Lake) keeps places out ("Hồ Chí
// Minh", "45 Lê Lợi").
var vietFamilies = map[string]bool{
	"nguyễn": true, "nguyen": true, "trần": true, "tran": true, "lê": true, "le": true,
	"phạm": true, "pham": true, "hoàng": true, "hoang": true, "huỳnh": true, "huynh": true,
	"phan": true, "vũ": true, "vu": true, "võ": true, "vo": true, "đặng": true, "dang": true,
	"bùi": true, "bui": true, "đỗ": true, "do": true, "hồ": true, "ho": true, "ngô": true,
	"ngo": true, "dương": true, "duong": true, "lý": true, "ly": true,
}

// vietTitles stand before a Vietnamese name without a colon.
var vietTitles = []string{"cô", "thầy", "anh", "chị", "ông", "bà", "em", "bác", "chú"}

// vietPlaceWords before or after a run make it a place or a street.
var vietPlaceWords = map[string]bool{"tp": true, "tp.": true, "thành": true, "phố": true, "đường": true,
	"phường": true, "quận": true, "tỉnh": true, "huyện": true, "xã": true, "số": true, "city": true,
	"street": true, "road": true, "lake": true, "district": true, "ward": true, "province": true}

// vietSpan returns the end of a Vietnamese name whose family name is text[s:e], or -1.
func (d nameDetector) vietSpan(text string, s, e int) int {
	var b [16]byte
	f, ok := lowerInto(b[:0:len(b)], text[s:e])
	if !ok || !vietFamilies[string(f)] || !isCapWord(text[s:e]) || allCaps(text[s:e]) {
		return -1
	}
	end, words, marks := e, 0, !asciiOnly(text[s:e])
	for words < 3 {
		if end+1 >= len(text) || text[end] != ' ' || !isLetterAt(text, end+1) {
			break
		}
		ne := wordEnd(text, end+1)
		w := text[end+1 : ne]
		if !isCapWord(w) || allCaps(w) || runeCount(w) > 6 {
			break
		}
		var lb [16]byte
		if lw, ok := lowerInto(lb[:0:len(lb)], w); ok && vietPlaceWords[string(lw)] {
			return -1
		}
		marks = marks || !asciiOnly(w)
		end, words = ne, words+1
	}
	if words == 0 || words == 1 && !marks || !listItemAfter(text, end) {
		return -1 // "Le Monde", "Do Not": one plain word is too little
	}
	if end < len(text) && text[end] == ' ' && end+1 < len(text) && isLetterAt(text, end+1) && isCapWord(text[end+1:wordEnd(text, end+1)]) {
		return -1
	}
	// where it stands: a row or list item, a label's value, or after a kinship title
	ps := prevWordStart(text, s)
	if ps >= 0 {
		var lb [16]byte
		if lw, ok := lowerInto(lb[:0:len(lb)], strings.TrimSuffix(text[ps:s-1], ".")); ok && vietPlaceWords[string(lw)] {
			return -1
		}
		for _, t := range vietTitles {
			if text[ps:s-1] == t {
				return end
			}
		}
	}
	if j := skipBlanksBack(text, s); j > 0 && isDigit(text[j-1]) && j == s-1 {
		return -1 // a house number: "45 Lê Lợi"
	}
	if !listItemBefore(text, s) {
		return -1
	}
	return end
}

func asciiOnly(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
