package namemodel

import (
	"unicode"
	"unicode/utf8"
)

// Fold appends the folded form of s to buf: lower case, Latin diacritics removed, apostrophes,
// hyphens and periods dropped. ok is false when it does not fit in buf's capacity. The model is
// trained on and queried with folded words.
func Fold(buf []byte, s string) ([]byte, bool) {
	b := buf[:0]
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			if c == '\'' || c == '-' || c == '.' {
				continue
			}
			if len(b) == cap(b) {
				return b, false
			}
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			b = append(b, c)
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		if r == '’' {
			continue
		}
		r = unicode.ToLower(r)
		rep := foldRune(r)
		if rep == "" {
			if r == utf8.RuneError || len(b)+utf8.RuneLen(r) > cap(b) {
				return b, false
			}
			b = utf8.AppendRune(b, r)
			continue
		}
		if len(b)+len(rep) > cap(b) {
			return b, false
		}
		b = append(b, rep...)
	}
	return b, true
}

// FoldString is Fold for callers that do not mind allocating (training, tests).
func FoldString(s string) string {
	b, _ := Fold(make([]byte, 0, 4*len(s)+4), s)
	return string(b)
}

// foldRune maps a lower-case Latin letter with a diacritic to its ASCII base, or returns "".
func foldRune(r rune) string {
	switch r {
	case 'à', 'á', 'â', 'ã', 'ä', 'å', 'ā', 'ă', 'ą', 'ạ', 'ả', 'ấ', 'ầ', 'ẩ', 'ẫ', 'ậ', 'ắ', 'ằ', 'ẳ', 'ẵ', 'ặ':
		return "a"
	case 'æ':
		return "ae"
	case 'ç', 'ć', 'č', 'ĉ':
		return "c"
	case 'ď', 'đ', 'ð':
		return "d"
	case 'è', 'é', 'ê', 'ë', 'ē', 'ė', 'ę', 'ě', 'ẹ', 'ẻ', 'ẽ', 'ế', 'ề', 'ể', 'ễ', 'ệ':
		return "e"
	case 'ğ', 'ĝ':
		return "g"
	case 'ì', 'í', 'î', 'ï', 'ī', 'ı', 'į', 'ỉ', 'ĩ', 'ị':
		return "i"
	case 'ł', 'ľ', 'ĺ', 'ļ':
		return "l"
	case 'ñ', 'ń', 'ň', 'ņ':
		return "n"
	case 'ò', 'ó', 'ô', 'õ', 'ö', 'ø', 'ō', 'ő', 'ơ', 'ọ', 'ỏ', 'ố', 'ồ', 'ổ', 'ỗ', 'ộ', 'ớ', 'ờ', 'ở', 'ỡ', 'ợ':
		return "o"
	case 'œ':
		return "oe"
	case 'ŕ', 'ř':
		return "r"
	case 'ś', 'š', 'ş', 'ș':
		return "s"
	case 'ß':
		return "ss"
	case 'ť', 'ţ', 'ț':
		return "t"
	case 'þ':
		return "th"
	case 'ù', 'ú', 'û', 'ü', 'ū', 'ů', 'ű', 'ų', 'ư', 'ụ', 'ủ', 'ũ', 'ứ', 'ừ', 'ử', 'ữ', 'ự':
		return "u"
	case 'ý', 'ÿ', 'ỳ', 'ỵ', 'ỷ', 'ỹ':
		return "y"
	case 'ź', 'ż', 'ž':
		return "z"
	}
	return ""
}
