package detect

import (
	"unicode"
	"unicode/utf8"
)

// Byte classes. Bytes >= 0x80 belong to multi-byte UTF-8 sequences (or are invalid UTF-8,
// which is treated as opaque bytes); scanners treat them as letters when deciding word bounds.

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isUpper(c byte) bool { return c >= 'A' && c <= 'Z' }
func isLower(c byte) bool { return c >= 'a' && c <= 'z' }
func isAlpha(c byte) bool { return isUpper(c) || isLower(c) }
func isAlnum(c byte) bool { return isDigit(c) || isAlpha(c) }
func isHex(c byte) bool   { return isDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'f') }

// isWordByte reports whether c can be part of a word (ASCII letter, digit, underscore, or any
// non-ASCII byte).
func isWordByte(c byte) bool { return isAlnum(c) || c == '_' || c >= 0x80 }

func lowerASCII(c byte) byte {
	if isUpper(c) {
		return c + 'a' - 'A'
	}
	return c
}

// numLeftOK reports whether a number may start at i: it is not glued to a word or to a longer
// number such as "12.4111..." or "9-123".
func numLeftOK(text string, i int) bool {
	if i == 0 {
		return true
	}
	c := text[i-1]
	if isWordByte(c) && !(c >= utf8.RuneSelf && gluedRuneOK(utf8.DecodeLastRuneInString(text[:i]))) {
		return false
	}
	if (c == '.' || c == '-' || c == '/' || c == ',' && commaJoinsNumber(text, i-1)) && i >= 2 && isDigit(text[i-2]) {
		return false
	}
	return true
}

// commaJoinsNumber reports whether the ',' at c, between digits, belongs to one number (a
// thousands group "1,234", "1,234.50" or a decimal "3,5") rather than separating fields of a
// CSV row ("(404) 555-0172,1983-02-11,431-90-2216").
func commaJoinsNumber(text string, c int) bool {
	b := c
	for b > 0 && c-b < 4 && isDigit(text[b-1]) {
		b--
	}
	if b >= 2 && (text[b-1] == '-' || text[b-1] == '/' || text[b-1] == ':') && isDigit(text[b-2]) {
		return false // a date, an SSN or a time ends before it: "1968-05-07,319 04 5562"
	}
	k := digitsAt(text, c+1)
	switch n := k - (c + 1); {
	case n == 0:
		return false
	case n <= 2:
		return true
	case n == 3:
		return k == len(text) || text[k] != '-' && text[k] != '/' && text[k] != ':' &&
			!(text[k] == ' ' && k+1 < len(text) && isDigit(text[k+1]))
	}
	return false
}

// numRightOK reports whether a number may end at j (exclusive).
func numRightOK(text string, j int) bool {
	if j >= len(text) {
		return true
	}
	c := text[j]
	if isWordByte(c) && !(c >= utf8.RuneSelf && gluedRuneOK(utf8.DecodeRuneInString(text[j:]))) {
		return false
	}
	if (c == '.' || c == '-' || c == '/' || c == ',' && commaJoinsNumber(text, j)) && j+1 < len(text) && isDigit(text[j+1]) {
		return false
	}
	return true
}

// digitsAt returns the end of the run of ASCII digits starting at i.
func digitsAt(text string, i int) int {
	for i < len(text) && isDigit(text[i]) {
		i++
	}
	return i
}

// atoi parses a short run of ASCII digits; the caller guarantees they are digits.
func atoi(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		n = n*10 + int(s[i]-'0')
	}
	return n
}

// runeAt decodes the rune at i; invalid UTF-8 yields (utf8.RuneError, 1).
func runeAt(text string, i int) (rune, int) {
	c := text[i]
	if c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(text[i:])
}

func isLetterAt(text string, i int) bool {
	c := text[i]
	if c < utf8.RuneSelf {
		return isAlpha(c)
	}
	r, _ := utf8.DecodeRuneInString(text[i:])
	return r != utf8.RuneError && unicode.IsLetter(r)
}

// wordEnd returns the end of the word starting at i: letters, with inner apostrophes and
// hyphens ("O'Brien", "Jean-Luc") and a trailing run of digits not allowed.
func wordEnd(text string, i int) int {
	j := i
	for j < len(text) {
		c := text[j]
		if c < utf8.RuneSelf {
			if isAlpha(c) {
				j++
				continue
			}
			if (c == '\'' || c == '-') && j > i && j+1 < len(text) && isLetterAt(text, j+1) {
				j++
				continue
			}
			break
		}
		r, n := utf8.DecodeRuneInString(text[j:])
		if r == '’' && j > i && j+n < len(text) && isLetterAt(text, j+n) {
			j += n
			continue
		}
		if r == utf8.RuneError || !unicode.IsLetter(r) && !unicode.Is(unicode.Mn, r) {
			break
		}
		j += n
	}
	return j
}

// nextWord returns the bounds of the first word at or after i, or (-1, -1).
func nextWord(text string, i int) (int, int) {
	for i < len(text) {
		if isLetterAt(text, i) {
			// A word must not continue a digit/underscore token such as "abc123def".
			return i, wordEnd(text, i)
		}
		if text[i] < utf8.RuneSelf {
			i++
		} else {
			_, n := utf8.DecodeRuneInString(text[i:])
			i += n
		}
	}
	return -1, -1
}

// lowerInto writes the lower-case form of s into buf and returns it; ok is false when it does
// not fit (callers then treat the word as unknown).
func lowerInto(buf []byte, s string) ([]byte, bool) {
	b := buf[:0]
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if len(b) == cap(b) {
				return b, false
			}
			b = append(b, lowerASCII(c))
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		r = unicode.ToLower(r)
		if len(b)+utf8.RuneLen(r) > cap(b) || r == utf8.RuneError {
			return b, false
		}
		b = utf8.AppendRune(b, r)
		i += n
	}
	return b, true
}

// isCapWord reports whether w starts with an upper-case letter and is not all upper case
// (unless it is a single letter).
func isCapWord(w string) bool {
	if w == "" {
		return false
	}
	r, n := runeAt(w, 0)
	if !unicode.IsUpper(r) {
		return false
	}
	if n == len(w) {
		return true
	}
	for i := n; i < len(w); {
		r, m := runeAt(w, i)
		if unicode.IsLower(r) {
			return true
		}
		i += m
	}
	return false
}

// isSpaceByte reports ASCII whitespace.
func isSpaceByte(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// gluedRuneOK reports whether a number may touch the rune r: punctuation and symbols
// ("电话：+86 ...", "№ 27"), and the letters of scripts written without spaces between words and
// numbers (Chinese, Japanese, Korean, Thai: "订单号20261118"), but no letter of a script that
// separates words.
func gluedRuneOK(r rune, _ int) bool {
	if r == utf8.RuneError {
		return false
	}
	if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.Is(unicode.Mn, r) {
		return true
	}
	switch classOf(r) {
	case scHan, scKana, scHangul, scThai:
		return true
	}
	return false
}
