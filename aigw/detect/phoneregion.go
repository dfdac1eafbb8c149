package detect

import (
	"strings"
	"unicode/utf8"

	"github.com/nyaruka/phonenumbers"
)

// A national number ("0722 456 789", "42 630 11 25", "551 2345") can be validated only for its
// country. The text usually says which country it is from: the country codes of its other
// numbers, the country-code TLDs of its e-mail addresses and links, its script, letters that
// only some languages use, and currency signs. phoneHints collects those regions near the
// number, in that order; they are only parse hints: a number still has to be valid for one.

const maxPhoneHints = 8

type phoneHints struct {
	n       int
	regions [maxPhoneHints]string
}

func (h *phoneHints) add(r string) {
	if r == "" || h.n == maxPhoneHints {
		return
	}
	for _, x := range h.regions[:h.n] {
		if x == r {
			return
		}
	}
	h.regions[h.n] = r
	h.n++
}

// ccTLDRegions maps country-code top-level domains to regions (".uk" is GB). Domains that are
// used as generic ones (.co, .io, .me, .tv, .ai) are left out unless a second-level domain
// names the country (".com.co").
var ccTLDRegions = map[string]string{
	"jp": "JP", "br": "BR", "tr": "TR", "hu": "HU", "pl": "PL", "pt": "PT", "is": "IS", "uk": "GB",
	"ke": "KE", "th": "TH", "il": "IL", "mx": "MX", "ar": "AR", "eg": "EG", "ng": "NG", "za": "ZA",
	"in": "IN", "id": "ID", "vn": "VN", "kr": "KR", "au": "AU", "cz": "CZ", "ro": "RO", "gr": "GR",
	"nl": "NL", "be": "BE", "ch": "CH", "at": "AT", "se": "SE", "no": "NO", "dk": "DK", "fi": "FI",
	"ie": "IE", "ca": "CA", "de": "DE", "fr": "FR", "it": "IT", "es": "ES", "nz": "NZ", "sg": "SG",
	"my": "MY", "ph": "PH", "pk": "PK", "bd": "BD", "lk": "LK", "cl": "CL", "pe": "PE", "ec": "EC",
	"uy": "UY", "ve": "VE", "ma": "MA", "tn": "TN", "dz": "DZ", "gh": "GH", "ug": "UG", "tz": "TZ",
	"rw": "RW", "et": "ET", "sa": "SA", "ae": "AE", "qa": "QA", "kw": "KW", "jo": "JO", "lb": "LB",
	"ru": "RU", "ua": "UA", "by": "BY", "kz": "KZ", "sk": "SK", "si": "SI", "hr": "HR", "rs": "RS",
	"bg": "BG", "lt": "LT", "lv": "LV", "ee": "EE", "cn": "CN", "hk": "HK", "tw": "TW", "lu": "LU",
}

// letterRegions are letters written by few languages, and where those are spoken; a currency
// sign is as telling.
func letterRegions(r rune) (string, string) {
	switch {
	case r >= 0x3040 && r <= 0x30ff: // hiragana, katakana
		return "JP", ""
	case r >= 0xac00 && r <= 0xd7a3:
		return "KR", ""
	case r >= 0x0e00 && r <= 0x0e7f:
		return "TH", ""
	case r >= 0x0590 && r <= 0x05ff:
		return "IL", ""
	case r >= 0x0370 && r <= 0x03ff:
		return "GR", ""
	case r >= 0x0900 && r <= 0x097f:
		return "IN", ""
	case urduLetter(r):
		return "PK", ""
	case persianLetter(r):
		return "IR", "PK"
	case traditionalHan(r):
		return "TW", "HK"
	case r >= 0x10a0 && r <= 0x10ff: // Georgian
		return "GE", ""
	case r >= 0x0530 && r <= 0x058f: // Armenian
		return "AM", ""
	case r >= 0x1200 && r <= 0x137f: // Ethiopic: Amharic, Tigrinya
		return "ET", "ER"
	}
	switch r {
	case 'ő', 'ű', 'Ő', 'Ű':
		return "HU", ""
	case 'ł', 'Ł', 'ś', 'ź', 'ż', 'Ż', 'ą', 'ę', 'ń':
		return "PL", ""
	case 'ã', 'õ':
		return "BR", "PT"
	case 'ğ', 'ı', 'İ', 'ş', 'Ş':
		return "TR", ""
	case 'ð', 'þ', 'Þ', 'Ð':
		return "IS", ""
	case 'ř', 'ů', 'ě', 'Ř':
		return "CZ", ""
	case 'ș', 'ț', 'ă', 'Ș', 'Ț':
		return "RO", ""
	case 'ø', 'Ø', 'æ', 'Æ':
		return "NO", "DK"
	case 'å', 'Å':
		return "SE", "NO"
	case 'ơ', 'ư', 'đ', 'Đ', 'ạ', 'ả', 'ấ', 'ầ', 'ậ', 'ễ', 'ệ', 'ố', 'ộ', 'ớ', 'ờ', 'ợ', 'ứ', 'ữ', 'ự':
		return "VN", ""
	case '₺':
		return "TR", ""
	case '₹':
		return "IN", ""
	case '₦':
		return "NG", ""
	case '₩':
		return "KR", ""
	case '฿':
		return "TH", ""
	case '₪':
		return "IL", ""
	case '₫':
		return "VN", ""
	case '₱':
		return "PH", ""
	case '₾':
		return "GE", ""
	case '֏':
		return "AM", ""
	}
	return "", ""
}

// currencyWords name a country's money in Latin letters ("Ksh2,350.00", "R$ 120", "Rp 50.000").
var currencyWords = [...]struct{ word, region string }{
	{"Ksh", "KE"}, {"KES", "KE"}, {"M-PESA", "KE"}, {"M-Pesa", "KE"}, {"mpesa", "KE"}, {"Mpesa", "KE"}, {"R$", "BR"}, {"Rp", "ID"}, {"IDR", "ID"},
	{"PLN", "PL"}, {"HUF", "HU"}, {"CZK", "CZ"}, {"Kč", "CZ"}, {"RON", "RO"},
	{"NGN", "NG"}, {"ZAR", "ZA"}, {"EGP", "EG"}, {"VND", "VN"}, {"THB", "TH"}, {"INR", "IN"},
	{"MXN", "MX"}, {"ARS", "AR"}, {"COP", "CO"}, {"AUD", "AU"}, {"SEK", "SE"},
	{"NOK", "NO"}, {"DKK", "DK"}, {"ISK", "IS"}, {"RM", "MY"}, {"MYR", "MY"}, {"FCFA", "SN"},
	{"CFA", "SN"}, {"S/", "PE"}, {"PKR", "PK"}, {"Rs", "IN"}, {"AED", "AE"}, {"SAR", "SA"},
	{"ETB", "ET"}, {"ብር", "ET"}, {"IRR", "IR"}, {"تومان", "IR"}, {"SGD", "SG"}, {"S$", "SG"},
	{"JMD", "JM"}, {"J$", "JM"}, {"CLP", "CL"}, {"PHP", "PH"}, {"GEL", "GE"}, {"درهم", "AE"},
}

// compute fills h from text, the surroundings of one number (phoneHintBefore, phoneHintAfter);
// it runs only when a national number of another region needs it.
func (h *phoneHints) compute(text string) {
	h.n = 0
	// Country codes of the text's international numbers.
	for i := 0; i+2 < len(text); i++ {
		if text[i] != '+' || !isDigit(text[i+1]) || i > 0 && isAlnum(text[i-1]) {
			continue
		}
		cc := 0
		for k := i + 1; k < len(text) && k <= i+3 && isDigit(text[k]); k++ {
			cc = cc*10 + int(text[k]-'0')
			if r := phonenumbers.GetRegionCodeForCountryCode(cc); r != "ZZ" && r != "" {
				h.add(r)
				break
			}
		}
	}
	// Country-code TLDs of e-mail addresses and links: the last label of the domain after '@'
	// or "://", and a second-level country domain (".com.co").
	for i := 0; i < len(text); i++ {
		var j int
		switch {
		case text[i] == '@':
			j = i + 1
		case text[i] == ':' && strings.HasPrefix(text[i:], "://"):
			j = i + 3
		default:
			continue
		}
		k := j
		for k < len(text) && (isAlnum(text[k]) || text[k] == '-' || text[k] == '.') {
			k++
		}
		dom := strings.TrimRight(text[j:k], ".")
		if d := strings.LastIndexByte(dom, '.'); d > 0 {
			tld := dom[d+1:]
			if r, ok := ccTLDRegions[tld]; ok {
				h.add(r)
			} else if tld == "co" && strings.HasSuffix(dom[:d], ".com") {
				h.add("CO")
			}
		}
		i = k - 1
	}
	h.addPlaces(text)
	for _, w := range currencyWords {
		if k := strings.Index(text, w.word); k >= 0 && (k == 0 || !isAlpha(text[k-1])) &&
			(k+len(w.word) == len(text) || !isAlpha(text[k+len(w.word)])) {
			h.add(w.region)
		}
	}
	// Scripts, letters and currency signs; scripts written in many countries (Arabic, Han)
	// after the letters of one country's alphabet (Persian, Urdu) and after language words.
	arabic, han := false, false
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(text[i:])
		i += n
		switch {
		case r >= 0x0600 && r <= 0x06ff && !persianLetter(r) && !urduLetter(r):
			arabic = true
			continue
		case r >= 0x4e00 && r <= 0x9fff && !traditionalHan(r):
			han = true
			continue
		}
		a, b := letterRegions(r)
		h.add(a)
		h.add(b)
	}
	h.addLanguages(text)
	if arabic { // the largest numbering plans first
		h.add("EG")
		h.add("SA")
		h.add("AE")
	}
	if han { // Japanese written in kanji, or Chinese
		h.add("JP")
		h.add("CN")
	}
}

// persianLetter and urduLetter are letters of the Arabic script that Arabic does not use.
func persianLetter(r rune) bool {
	switch r {
	case 'پ', 'چ', 'ژ', 'گ', 'ک', 'ی', '۰', '۱', '۲', '۳', '۴', '۵', '۶', '۷', '۸', '۹':
		return true
	}
	return false
}

func urduLetter(r rune) bool {
	switch r {
	case 'ٹ', 'ڈ', 'ڑ', 'ں', 'ہ', 'ے', 'ۓ', 'ھ':
		return true
	}
	return false
}

// traditionalHan are frequent characters written differently in simplified Chinese and in
// Japanese: Traditional Chinese, so Taiwan or Hong Kong.
func traditionalHan(r rune) bool {
	switch r {
	case '號', '經', '區', '臺', '灣', '們', '這', '會', '與', '說', '體', '門', '樓', '機', '務':
		return true
	}
	return false
}
