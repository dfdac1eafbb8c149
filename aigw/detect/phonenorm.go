package detect

import "unicode/utf8"

// Phone numbers are not always written in ASCII: full-width digits and hyphens in Chinese and
// Japanese forms ("０９０－１２３４－５６７８"), Arabic-Indic and Persian digits ("٠٥٠ ١٢٣ ٤٥٦٧",
// "۰۹۱۲ ۳۴۵ ۶۷۸۹"), and digit groups joined by a non-breaking or thin space ("06 12 34 56 78"
// with U+00A0, U+202F). The phone scanner reads bytes; a text holding any of these is scanned
// as a copy in which each such character is its ASCII equivalent, and the spans found are
// mapped back to the original bytes. Text without them costs one pass over its bytes and
// allocates nothing.

// phoneASCII returns the ASCII byte a phone scanner reads for r, or 0.
func phoneASCII(r rune) byte {
	switch {
	case r >= '０' && r <= '９': // full-width
		return byte('0' + r - '０')
	case r >= '٠' && r <= '٩': // Arabic-Indic
		return byte('0' + r - '٠')
	case r >= '۰' && r <= '۹': // Extended Arabic-Indic (Persian, Urdu)
		return byte('0' + r - '۰')
	}
	switch r {
	case '\u00a0', '\u2007', '\u2009', '\u202f', '\u3000': // no-break, figure, thin, narrow, ideographic
		return ' '
	case '－', '‐', '‑': // full-width hyphen, hyphen, non-breaking hyphen (not an en dash: ranges)
		return '-'
	case '（':
		return '('
	case '）':
		return ')'
	case '＋':
		return '+'
	}
	return 0
}

// phoneNormLead reports whether c can start the UTF-8 encoding of a rune phoneASCII maps.
func phoneNormLead(c byte) bool {
	return c == 0xc2 || c == 0xd9 || c == 0xdb || c == 0xe2 || c == 0xe3 || c == 0xef
}

// needsPhoneNorm reports whether text holds a digit that phoneASCII maps, or a space or hyphen
// it maps between two ASCII digits (elsewhere they change nothing for the scanner).
func needsPhoneNorm(text string) bool {
	for i := 0; i < len(text); i++ {
		if !phoneNormLead(text[i]) {
			continue
		}
		r, n := utf8.DecodeRuneInString(text[i:])
		b := phoneASCII(r)
		if b == 0 {
			continue
		}
		if isDigit(b) || i > 0 && isDigit(text[i-1]) && i+n < len(text) && isDigit(text[i+n]) {
			return true // a digit, or a space or hyphen between ASCII digits ("45\u00a0€" is not)
		}
		i += n - 1
	}
	return false
}

// phoneNormalise returns text with phoneASCII applied and, for each byte of the result and its
// end, the offset in text it comes from.
func phoneNormalise(text string) (string, []int) {
	b := make([]byte, 0, len(text))
	at := make([]int, 0, len(text)+1)
	for i := 0; i < len(text); {
		c := text[i]
		if phoneNormLead(c) {
			r, n := utf8.DecodeRuneInString(text[i:])
			if a := phoneASCII(r); a != 0 {
				b = append(b, a)
				at = append(at, i)
				i += n
				continue
			}
		}
		b = append(b, c)
		at = append(at, i)
		i++
	}
	at = append(at, len(text))
	return string(b), at
}
