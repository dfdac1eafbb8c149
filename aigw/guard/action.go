package guard

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/netip"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/edgewan/edgewan/aigw/detect"
)

// hashHexLen is how many hex digits of the HMAC a hash replacement shows (48 bits: collisions
// within one project stay unlikely up to millions of distinct values).
const hashHexLen = 12

// tag is the upper-case type used in placeholders: "email" -> "EMAIL".
func tag(typ string) string {
	if t, ok := tags[typ]; ok {
		return t
	}
	return strings.ToUpper(typ)
}

var tags = func() map[string]string {
	m := map[string]string{}
	for _, t := range detect.Types() {
		m[t] = strings.ToUpper(t)
	}
	return m
}()

// placeholder renders a redaction: "[EMAIL_3]".
func placeholder(typ string, n int) string {
	return "[" + tag(typ) + "_" + strconv.Itoa(n) + "]"
}

// hashTag renders a hash replacement: "[EMAIL:0123456789ab]", keyed per project so equal
// values hash equal within a project and cannot be compared across projects.
func hashTag(key []byte, typ, norm string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(norm))
	var sum [sha256.Size]byte
	return "[" + tag(typ) + ":" + hex.EncodeToString(m.Sum(sum[:0]))[:hashHexLen] + "]"
}

// normalize maps equivalent spellings of a value to one key, so "John@Example.com" and
// "john@example.com" get the same placeholder and hash: e-mail addresses, names and
// addresses ignore case, numbers keep only their digits (and a phone's leading '+'), IBANs and
// MAC addresses ignore separators and case, IP addresses use their canonical form; every type
// collapses runs of white space.
func normalize(typ, text string) string {
	switch typ {
	case detect.TypePhone, detect.TypeCreditCard, detect.TypeSSN:
		var b strings.Builder
		b.Grow(len(text))
		for i := 0; i < len(text); i++ {
			if c := text[i]; '0' <= c && c <= '9' || c == '+' && b.Len() == 0 {
				b.WriteByte(c)
			}
		}
		return b.String()
	case detect.TypeIBAN, detect.TypeMAC:
		var b strings.Builder
		b.Grow(len(text))
		for i := 0; i < len(text); i++ {
			c := text[i]
			switch {
			case !isASCIIAlnum(c):
				continue
			case typ == detect.TypeIBAN && 'a' <= c && c <= 'z':
				c -= 'a' - 'A'
			case typ == detect.TypeMAC && 'A' <= c && c <= 'Z':
				c += 'a' - 'A'
			}
			b.WriteByte(c)
		}
		return b.String()
	case detect.TypeIP:
		if a, err := netip.ParseAddr(text); err == nil {
			return a.String()
		}
		return strings.ToLower(text)
	case detect.TypeEmail, detect.TypePerson, detect.TypeStreetAddress:
		return strings.ToLower(collapseSpace(text))
	default:
		return collapseSpace(text)
	}
}

// collapseSpace replaces each run of white space by one space.
func collapseSpace(s string) string {
	if !strings.ContainsAny(s, "\t\n\r\v\f  ") {
		return s
	}
	return strings.Join(strings.Fields(s), " ")
}

// maskedTypes with the part each keeps; the rest of every letter and digit becomes '*' (see
// mask). Keeping a few characters lets people recognise a value ("the card ending 1111")
// without exposing it.
//
//	credit_card, ssn       last 4 digits              **** **** **** 1111, ***-**-6789
//	phone                  leading '+', last 4 digits  +* (***) ***-2671
//	iban                   country code, last 4       DE** **** **** **** **30 00
//	email                  domain                     ********@example.com
//	url                    scheme and host            https://example.com/*****?**=***
//	ip_address             first octet or group       192.***.*.**
//	mac_address            vendor prefix (OUI)        00:1A:2B:**:**:**
//	person                 first letter of each word  J*** S****
//	secret (vendor tokens) first 4 characters         ghp_************************************
//	others, passwords      nothing
//
// Separators and punctuation keep their place, except in secrets, where every non-space
// character is masked. If a rule would leave the value unchanged, every non-space character
// is masked: a masked value never equals the original.
func mask(typ, subtype, text string) string {
	keep := make([]bool, len(text)) // per byte offset: keep the rune starting there
	switch typ {
	case detect.TypeCreditCard, detect.TypeSSN:
		keepLastDigits(text, keep, 4)
	case detect.TypePhone:
		keepLastDigits(text, keep, 4)
		if i := strings.IndexByte(text, '+'); i >= 0 {
			keep[i] = true
		}
	case detect.TypeIBAN:
		n := 0
		for i := 0; i < len(text) && n < 2; i++ {
			if isASCIIAlnum(text[i]) {
				keep[i] = true
				n++
			}
		}
		keepLast(text, keep, 4, isASCIIAlnum)
	case detect.TypeEmail:
		if at := strings.LastIndexByte(text, '@'); at >= 0 {
			for i := at; i < len(text); i++ {
				keep[i] = true
			}
		}
	case detect.TypeURL:
		maskURL(text, keep)
	case detect.TypeIP:
		for i := 0; i < len(text) && text[i] != '.' && text[i] != ':'; i++ {
			keep[i] = true
		}
	case detect.TypeMAC:
		n := 0
		for i := 0; i < len(text) && n < 6; i++ {
			if isASCIIAlnum(text[i]) {
				keep[i] = true
				n++
			}
		}
	case detect.TypePerson:
		word := false
		for i, r := range text {
			l := unicode.IsLetter(r)
			if l && !word {
				keep[i] = true
			}
			word = l || r == '\'' || r == '-' || r == '.'
		}
	case detect.TypeSecret:
		if vendorPrefixed[subtype] && utf8.RuneCountInString(text) >= 16 {
			for i := 0; i < 4; i++ {
				keep[i] = true
			}
		}
		return maskWith(text, keep, func(r rune) bool { return !unicode.IsSpace(r) })
	}
	out := maskWith(text, keep, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || r == utf8.RuneError })
	if out == text {
		out = maskWith(text, make([]bool, len(text)), func(r rune) bool { return !unicode.IsSpace(r) })
	}
	if out == text { // only white space: not a detector output, but never return the value
		out = "*"
	}
	return out
}

// vendorPrefixed secret subtypes start with a vendor marker ("ghp_", "AKIA", "eyJh") that
// tells the reader what kind of credential it was.
var vendorPrefixed = map[string]bool{
	"aws_access_key": true, "github_token": true, "gitlab_token": true, "slack_token": true,
	"stripe_key": true, "openai_key": true, "anthropic_key": true, "google_api_key": true,
	"sendgrid_key": true, "npm_token": true, "huggingface_token": true, "jwt": true,
}

// maskWith replaces every rune for which masked is true by '*', except runes starting at a
// kept offset.
func maskWith(text string, keep []bool, masked func(rune) bool) string {
	var b strings.Builder
	b.Grow(len(text))
	for i := 0; i < len(text); {
		r, n := utf8.DecodeRuneInString(text[i:])
		switch {
		case keep[i]:
			b.WriteString(text[i : i+n])
		case masked(r):
			b.WriteByte('*')
		default:
			b.WriteString(text[i : i+n])
		}
		i += n
	}
	return b.String()
}

func isASCIIAlnum(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c|0x20 && c|0x20 <= 'z'
}

func keepLastDigits(text string, keep []bool, n int) {
	keepLast(text, keep, n, func(c byte) bool { return '0' <= c && c <= '9' })
}

// keepLast marks the last n bytes of text for which ok is true.
func keepLast(text string, keep []bool, n int, ok func(byte) bool) {
	for i := len(text) - 1; i >= 0 && n > 0; i-- {
		if ok(text[i]) {
			keep[i] = true
			n--
		}
	}
}

// maskURL keeps the scheme and host (and port) and masks user information, path, query and
// fragment; a URL with nothing after its host keeps only the last label of the host.
func maskURL(text string, keep []bool) {
	hs := 0 // host start
	if i := strings.Index(text, "://"); i >= 0 {
		hs = i + 3
	}
	for i := 0; i < hs; i++ {
		keep[i] = true
	}
	he := len(text) // host end
	if i := strings.IndexAny(text[hs:], "/?#"); i >= 0 {
		he = hs + i
	}
	if at := strings.LastIndexByte(text[hs:he], '@'); at >= 0 {
		hs += at + 1 // user information stays masked
	}
	host := text[hs:he]
	if c := strings.LastIndexByte(host, ':'); c > strings.LastIndexByte(host, ']') {
		host = host[:c] // without the port
	}
	for i := hs; i < he; i++ {
		keep[i] = true
	}
	if strings.Trim(text[he:], "/?#") == "" { // nothing else to hide: mask the host but its TLD
		for i := hs; i < hs+strings.LastIndexByte(host, '.'); i++ {
			keep[i] = false
		}
	}
}
