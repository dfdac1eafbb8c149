package detect

import (
	"strings"
	"unicode/utf8"

	"github.com/nyaruka/phonenumbers"
)

// phoneDetector finds telephone numbers. A cheap scanner proposes digit groups joined by
// spaces, hyphens, dots, slashes and parentheses; libphonenumber (nyaruka/phonenumbers) then
// decides whether the digits form a valid number: with a leading "+" or "00" for any country,
// otherwise for the default region and, when a phone word is near, for a few other regions
// whose national format starts with a trunk "0".
type phoneDetector struct {
	region string
}

const (
	phoneIntlScore      = 0.85 // "+44 20 7946 0958"
	phoneFormattedScore = 0.75 // "(415) 555-2671", "415-555-2671"
	phoneFallbackScore  = 0.7  // valid in another region, with a phone word near
	phoneHintScore      = 0.6  // valid in a region the text points to, in groups
	phonePlainScore     = 0.4  // "4155552671": needs a phone word
	phoneMinDigits      = 7
	phoneMaxDigits      = 15
	phoneMaxGroups      = 8
	phoneMaxAttempts    = 3 // libphonenumber parses per candidate run
	// national numbers of other regions: parses per attempt for the text's hinted regions, and
	// in all with the fallback regions after a phone word
	phoneMaxHintParses     = 4
	phoneHintBefore        = 120 // bytes before a number searched for its country
	phoneHintAfter         = 60  // bytes after its start
	phoneMaxFallbackParses = 8
)

var phoneContext = &contextRule{
	pos: phoneWords,
	neg: newKeywords("order", "invoice", "tracking", "ref", "reference", "isbn", "serial", "sku",
		"part", "part no", "model", "product", "item", "code", "id", "account", "acct", "ticket",
		"case", "po", "batch", "lot", "version", "build", "transaction", "confirmation", "booking",
		"ssn", "iban", "card", "zip", "postcode", "amount", "total", "price", "order number",
		"part number", "case number", "account number", "tracking number", "serial number",
		"reference number", "invoice number", "ticket number", "model number", "card number",
		"confirmation number", "booking number", "order no", "social security", "routing number",
		// the same identifiers in other languages: a phone word such as "numero" or "nummer"
		// must not make "Laskun numero 2024-1187" (an invoice number) a phone
		"rechnung", "rechnungsnummer", "kundennummer", "bestellnummer", "auftragsnummer",
		"factura", "facture", "fattura", "pedido", "commande", "ordine", "lasku", "laskun",
		"tilaus", "faktura", "pesanan", "resi", "nik", "dni", "cnp", "aadhaar", "protocollo",
		"folio", "rut", "ruc", "nif", "nie", "cif", "rfc", "curp", "npwp", "uen", "bvn", "nuban",
		"ifsc", "gstin", "hkid", "nric"),
	boost:   0.2,
	penalty: 0.45,
	max:     0.88, // below a validated card, SSN or IBAN with context
}

var phoneWords = newKeywords("phone", "phones", "telephone", "tel", "tel.", "mobile", "mob", "cell",
	"cellphone", "call", "calls", "called", "calling", "text", "sms", "whatsapp", "fax", "landline",
	"ring", "dial", "ruf mich an", "anrufen", "erreichbar", "appelez", "appeler", "appelle",
	"joindre", "llámame", "llamar", "llame", "llamad", "llámanos", "llamanos", "llamen", "chiamami", "chiamare", "ligue", "ligar", "bel",
	"contact", "reach", "hotline", "number", "telefon", "telefono", "teléfono", "téléphone", "tél",
	"portable", "handy", "móvil", "movil", "cellulare", "celular", "telemóvel", "mobil", "nummer",
	"numéro", "número", "numero", "rufnummer", "gsm", "pbx", "hp", "tlf", "tlf.", "puh", "puh.",
	"sími", "farsími", "kom.", "mobiel", "cel.", "cep", "telefone", "điện thoại", "τηλ", "κιν",
	"nr tel", "wa", "ussd", "telp", "telp.", "hubungi", "celular", "fijo", "joignable", "rückruf", "rückrufnummer",
	"ტელ", "ტელეფონი", "Հեռ", "հեռ", "手机", "手機", "電話", "电话", "座机", "전화", "휴대폰", "연락처",
	"تلفن", "موبایل", "هاتف", "الجوال", "اتصل", "رابطہ", "فون", "ስልክ", "ይደውሉ", "टेलीफोन", "फोन",
	// "You can get me at ...": contact idioms whose verb is not a phone word.
	"get me at", "get me on", "find me at", "find me on", "catch me at", "catch me on",
	"ping me at", "ping me on", "get hold of me at", "get hold of me on",
	"callback", "call back", "rang", "ring me", "ring back",
	// Abbreviations of signatures and notices: Finnish "p." (puhelin), Swedish "tfn", "ph.".
	"ph", "ph.", "tfn", "tfn.", "mob.", "mobile no", "cel")

// phoneHeaderWords name a table's phone column ("phone", "mobile_no", "Telefon"); not words
// such as "contact" or "number" that head other columns too.
var phoneHeaderWords = newKeywords("phone", "telephone", "tel", "mobile", "cell", "cellphone", "fax",
	"msisdn", "whatsapp", "landline", "handy", "telefon", "telefono", "teléfono", "téléphone",
	"telefone", "celular", "móvil", "mobil", "puhelin", "gsm")

// phoneFallbackRegions are tried for national numbers when the default region rejects them and
// a phone word is near; min and max bound the digit count
// (trunk "0" included) so that most regions are skipped without parsing.
var phoneFallbackRegions = []struct {
	region   string
	min, max int
}{
	{"GB", 10, 11}, {"DE", 6, 14}, {"FR", 10, 10}, {"IT", 6, 11}, {"NL", 10, 10}, {"ES", 9, 9},
	{"AU", 10, 10}, {"IN", 11, 11}, {"CH", 10, 10}, {"AT", 7, 14}, {"BE", 9, 10},
	{"IE", 9, 10}, {"ZA", 10, 10}, {"KE", 10, 10}, {"NG", 11, 11}, {"JP", 10, 11}, {"KR", 9, 11},
	{"TR", 11, 11}, {"SE", 8, 10}, {"FI", 7, 11}, {"EG", 10, 11},
}

// nanp reports regions of the North American Numbering Plan, whose national numbers have ten
// digits (eleven with the leading 1); checking that first saves most libphonenumber parses.
func nanp(region string) bool {
	switch region {
	case "US", "CA", "PR", "AG", "AI", "AS", "BB", "BM", "BS", "DM", "DO", "GD", "GU", "JM", "KN",
		"KY", "LC", "MP", "MS", "SX", "TC", "TT", "VC", "VG", "VI":
		return true
	}
	return false
}

// phoneGroup is one digit group of a candidate.
type phoneGroup struct{ start, end, digits int }

func (d phoneDetector) Detect(text string, out []Entity) []Entity {
	if !needsPhoneNorm(text) {
		return d.detectASCII(text, out)
	}
	// Non-ASCII digits or spaces between digits (phonenorm.go): scan an ASCII copy and map
	// the spans back.
	norm, at := phoneNormalise(text)
	n := len(out)
	out = d.detectASCII(norm, out)
	for k := n; k < len(out); k++ {
		out[k].Start, out[k].End = at[out[k].Start], at[out[k].End]
	}
	return out
}

func (d phoneDetector) detectASCII(text string, out []Entity) []Entity {
	var groups [phoneMaxGroups]phoneGroup
	var hints phoneHints // reused: compute resets it
	for i := 0; i < len(text); {
		c := text[i]
		if !(isDigit(c) || (c == '+' || c == '(') && i+1 < len(text) && isDigit(text[i+1])) {
			i++
			continue
		}
		if c == '(' {
			// Only an area code in parentheses belongs to the number: "(415) 555-2671". Any
			// other '(' is punctuation around it: "(+1 602 783 1802)".
			if e := digitsAt(text, i+1); e == len(text) || text[e] != ')' {
				i++
				continue
			}
		}
		// Digits after "ABC-" are part of an identifier ("CLM-2025-004417", "ORD-2883").
		idPrefix := i > 1 && text[i-1] == '-' && isAlpha(text[i-2])
		if !numLeftOK(text, i) || (i > 0 && (text[i-1] == '+' || text[i-1] == '#')) || idPrefix {
			i = skipNumber(text, i)
			continue
		}
		ng, end := phoneGroups(text, i, &groups)
		total := 0
		for _, g := range groups[:ng] {
			total += g.digits
		}
		if total < phoneMinDigits {
			i = end
			continue
		}
		// Try the whole run, then shorter prefixes ending at group bounds ("call 415-555-2671
		// 24 hours"), longest first.
		found := false
		attempts := 0
		for last := ng - 1; last >= 0 && attempts < phoneMaxAttempts; last-- {
			nd := 0
			for _, g := range groups[:last+1] {
				nd += g.digits
			}
			if nd < phoneMinDigits {
				break
			}
			if nd > phoneMaxDigits+2 {
				continue
			}
			e := groups[last].end
			attempts++
			if score, ok := d.validate(text, i, e, last+1, nd, last == ng-1, &hints); ok {
				e = extensionEnd(text, e)
				out = append(out, Entity{Type: TypePhone, Start: i, End: e, Score: score})
				i = e
				found = true
				break
			}
		}
		if !found {
			i = end
		}
	}
	return out
}

// extensionEnd returns the end of an extension written after a phone number ending at e
// (" ext. 487", " x487", " extension 12", ", ext 9"), or e.
func extensionEnd(text string, e int) int {
	j := e
	if j < len(text) && text[j] == ',' {
		j++
	}
	if j >= len(text) || text[j] != ' ' {
		return e
	}
	j++
	k := j
	for k < len(text) && k-j < 24 && (isAlpha(text[k]) || text[k] >= utf8.RuneSelf) {
		k++
	}
	if !extensionWord(text[j:k]) {
		return e
	}
	if k < len(text) && text[k] == '.' {
		k++
	}
	if k < len(text) && text[k] == ' ' {
		k++
	}
	d := digitsAt(text, k)
	if d == k || d-k > 6 || !numRightOK(text, d) {
		return e
	}
	return d
}

// extensionWords introduce an extension in several languages: "ext. 12", "Durchwahl 15",
// "poste 221", "ramal 12", "anexo 5", "dahili 104", "wew. 31", "mellék 12", "toestel 2",
// "lokal 3", "linka 20", "anknytning 4", "内線 215", "내선 302", "שלוחה 3", "داخلي 12", "分機 215",
// "local 102" (the Philippines).
var extensionWords = [...]string{"ext", "extn", "extension", "x", "durchwahl", "dw", "poste", "int", "local", "loc",
	"分機", "分机", "轉", "转",
	"anexo", "ramal", "dahili", "wew", "mellék", "toestel", "tst", "lokal", "linka", "kl",
	"anknytning", "ankn", "lokaal", "interno", "interne", "内線", "内线", "분기", "내선", "שלוחה",
	"داخلي", "добавочный", "доб", "εσωτ"}

func extensionWord(w string) bool {
	for _, x := range extensionWords {
		if strings.EqualFold(w, x) {
			return true
		}
	}
	return false
}

// skipNumber returns the end of the digits (after an optional '+' or '(') at i.
func skipNumber(text string, i int) int {
	if !isDigit(text[i]) {
		i++
	}
	return digitsAt(text, i)
}

// phoneGroups splits the candidate at i into digit groups and returns the number of groups and
// the end of the candidate. Groups are joined by one of " ", "-", ".", "/", " - ", an area code
// in parentheses ("(415) 555", "+1 (415) 555") or a trunk prefix "(0)"; ". " ends a sentence,
// not a number.
func phoneGroups(text string, i int, groups *[phoneMaxGroups]phoneGroup) (int, int) {
	ng := 0
	j := i
	if text[j] == '+' {
		j++
	}
	open := false
	if text[j] == '(' {
		open = true
		j++
	}
	for ng < phoneMaxGroups {
		e := digitsAt(text, j)
		groups[ng] = phoneGroup{j, e, e - j}
		if ng == 0 {
			groups[ng].start = i
		}
		ng++
		k := e
		switch {
		case k >= len(text):
		case open && text[k] == ')':
			open = false
			k++
			if k < len(text) && (text[k] == ' ' || text[k] == '-') {
				k++
			}
		case text[k] == ' ' || text[k] == '-' || text[k] == '.' || text[k] == '/':
			sep := text[k]
			k++
			switch {
			case k >= len(text):
			case sep == ' ' && text[k] == '-' && k+1 < len(text) && text[k+1] == ' ':
				k += 2
			case sep == ' ' && text[k] == '/' && k+1 < len(text) && text[k+1] == ' ' && ng == 1 &&
				text[groups[0].start] == '0' && e-groups[0].start >= 2 && e-groups[0].start <= 5:
				k += 2 // "030 / 12345679": an area code, then the subscriber's number
			case sep == ' ' && text[k] == '(' && !open:
				open = true
				k++
			}
		case text[k] == '(' && !open && k+2 < len(text) && text[k+1] == '0' && text[k+2] == ')':
			k += 3 // "+44(0)20"
		}
		if k == e || k >= len(text) || !isDigit(text[k]) {
			return ng, e
		}
		j = k
	}
	return ng, groups[ng-1].end
}

// validate parses text[s:e] with libphonenumber and returns the score of a valid number.
func (d phoneDetector) validate(text string, s, e, groups, nd int, whole bool, hints *phoneHints) (float64, bool) {
	cand := text[s:e]
	if !numRightOK(text, e) && !(e < len(text) && text[e] == ')') {
		return 0, false
	}
	if e+1 < len(text) && text[e] == ':' && isDigit(text[e+1]) { // "2024-06-18 10:30"
		return 0, false
	}
	if !phoneShape(cand) || acronymNumber(text, s) {
		return 0, false
	}
	intl := cand[0] == '+' || (len(cand) > 2 && cand[0] == '0' && cand[1] == '0')
	if intl {
		num := cand
		if num[0] == '0' {
			num = "+" + num[2:]
		}
		if phoneValid(num, "ZZ") {
			return phoneIntlScore, true
		}
		return 0, false
	}
	plausible := true
	if nanp(d.region) {
		first := cand[0]
		if first == '(' {
			first = cand[1]
		}
		plausible = nd == 10 && first >= '2' || nd == 11 && first == '1'
	}
	if plausible && phoneValid(cand, d.region) {
		if groups == 1 {
			return phonePlainScore, true
		}
		return phoneFormattedScore, true
	}
	// A national number of another region. The text's own evidence of its country (other
	// numbers' country codes, ccTLDs, script, letters, currency: phoneregion.go) is tried
	// first; a number valid there and written in groups is a phone even without a phone word.
	// A phone word near it, or the column it fills in a table ("name,phone,postcode").
	word := hasKeyword(text, s, e, phoneWords) || shortPhoneCue(text, s)
	var hdr string
	if !word {
		hdr = columnHeader(text, s, e)
		word = headerHas(hdr, phoneHeaderWords)
	}
	parses := 0
	// Parses are dear (libphonenumber allocates): none for a run of digits without a phone
	// word, a prefix of a longer run, more digits than national numbers have, or a number
	// after a word such as "order" or "invoice".
	// One run of ten or eleven digits after a trunk "0" ("kwa JOSEPH MWANGI 0722483119") is
	// tried too, but only a mobile number counts: order and account numbers seldom start with
	// "0" and fit a country's mobile ranges.
	// In a table such a run needs a phone column (identifiers fill the other columns).
	trunkRun := groups == 1 && nd >= 10 && nd <= 11 && cand[0] == '0' && cand[1] != '0' &&
		!(s > 0 && isDelimiter(text[s-1]) || e < len(text) && isDelimiter(text[e]))
	// So is one run of 11-13 digits that starts with the country code of a hinted region
	// without its "+" (M-Pesa and WhatsApp exports: "kutoka kwa AKINYI ODERO 254733590214").
	ccRun := groups == 1 && nd >= 11 && nd <= 13 && cand[0] != '0' &&
		!(s > 0 && isDelimiter(text[s-1]) || e < len(text) && isDelimiter(text[e]))
	tryHints := whole && (nd <= 12 || ccRun) && (word || (groups > 1 || trunkRun || ccRun) && !hasKeyword(text, s, e, phoneContext.neg) &&
		!headerHas(hdr, phoneContext.neg)) // not in an "id" or "order" column
	if tryHints {
		// Only text near the number counts, so that a stream, which scans a window of the
		// text, decides as a scan of the whole text does (aigw/guard's streamContext of 128
		// bytes before an entity, MinStreamWindow of 64 after its start).
		hints.compute(text[max(0, s-phoneHintBefore):min(len(text), s+phoneHintAfter)])
	}
	for _, r := range hints.regions[:hints.n] {
		if r == d.region || parses == phoneMaxHintParses || !tryHints {
			continue
		}
		parses++
		if ccRun {
			if phoneCountryRun(cand, r) {
				return phoneHintScore, true
			}
			continue
		}
		switch {
		case word && phoneValid(cand, r):
			return phoneFallbackScore, true
		case groups > 1 && phoneValid(cand, r), groups == 1 && phoneMobile(cand, r):
			return phoneHintScore, true
		}
	}
	trunk := cand[0] == '0' || cand[0] == '(' && len(cand) > 1 && cand[1] == '0'
	// Without a phone word or a hint, a number in groups after a trunk "0" whose prefix is a
	// mobile prefix of a country (phonemobile.go) and that is a mobile number there: "Key
	// holder: Fraser 07812 446903", "Rider: 0917 552 0481", "(0733 118 402)".
	if !word && tryHints && trunk && cand[0] == '0' && groups > 1 && (nd == 10 || nd == 11) && lastGroupLen(cand) >= 3 {
		rs, n := trunkMobileRegions(cand)
		for _, r := range rs[:n] {
			if r != d.region && parses < phoneMaxFallbackParses {
				parses++
				if phoneMobile(cand, r) {
					return phoneHintScore, true
				}
			}
		}
	}
	// With a phone word before or after it ("Is 07700 900461 still the best number?"), a
	// national number of another region: with its trunk "0", or without it as mobile numbers
	// are often written where the trunk prefix is not dialled from mobiles ("9876543210").
	if (trunk || nd == 10 && groups <= 2) && word {
		n := nd
		if !trunk {
			n++ // ten digits in one or two groups: a mobile number without its trunk "0"
		}
		for _, r := range phoneFallbackRegions {
			if r.region != d.region && n >= r.min && n <= r.max && parses < phoneMaxFallbackParses {
				parses++
				if phoneValid(cand, r.region) {
					return phoneFallbackScore, true
				}
			}
		}
	}
	// Eight digits in two groups of four after a phone word: the numbering plans without a
	// trunk prefix and without area codes ("call 9123 4567").
	if word && !trunk && nd == 8 && groups == 2 {
		for _, r := range [...]string{"SG", "HK"} {
			if r != d.region && parses < phoneMaxFallbackParses {
				parses++
				if phoneValid(cand, r) {
					return phoneFallbackScore, true
				}
			}
		}
	}
	return 0, false
}

// acronymNumber reports whether "ACRONYM number" (or "no.", "#") and an optional ':' end just
// before s: "NHS number: 943 476 5919", "PPS no. 1234567", "SIN # 046 454 286". An acronym before
// "number" names an identifier scheme, and its numbers are identifiers even when they happen
// to be valid phone numbers; a phone acronym ("SMS number") is kept.
func acronymNumber(text string, s int) bool {
	j := s
	for k := 0; j > 0 && k < 2 && text[j-1] == ' '; k++ {
		j--
	}
	if j > 0 && text[j-1] == ':' {
		j--
	}
	for k := 0; j > 0 && k < 2 && text[j-1] == ' '; k++ {
		j--
	}
	bare := false
	switch {
	case j >= 6 && matchKeyword(text, j-6, "number"):
		j -= 6
	case j >= 3 && matchKeyword(text, j-3, "no."):
		j -= 3
	case j >= 1 && text[j-1] == '#':
		j--
	case text[s] != '+' && text[s] != '(':
		// A national identifier named by its acronym alone: "CPF 123.456.789-09", "NIP
		// 526-104-08-28", "PESEL 85010112345"; not a phone acronym ("TEL", "GSM", "PBX").
		bare = true
		j++
	default:
		return false
	}
	if j < 2 || text[j-1] != ' ' {
		return false
	}
	j--
	k := j
	for k > 0 && isUpper(text[k-1]) {
		k--
	}
	if n := j - k; n < 2 || n > 6 || bare && n < 3 || k > 0 && isWordByte(text[k-1]) {
		return false
	}
	if bare && (hasKeyword(text[:j], k, j, phoneWords) || lookupName(text[k:j])&(gzFirst|gzLast) != 0 ||
		k >= 2 && text[k-1] == ' ' && isUpper(text[k-2])) {
		return false // a name in capitals: "sent to JOSEPH KAMAU 0722 456 789"
	}
	return !hasKeywordBefore(text[:j], j, phoneWords)
}

// phoneCountryRun reports whether the digits s start with region's country code and, with a
// "+" before them, are one of its mobile numbers.
func phoneCountryRun(s, region string) bool {
	cc := phonenumbers.GetCountryCodeForRegion(region)
	if cc == 0 {
		return false
	}
	var buf [3]byte
	n := len(buf)
	for ; cc > 0 && n > 0; cc /= 10 {
		n--
		buf[n] = byte('0' + cc%10)
	}
	return strings.HasPrefix(s, string(buf[n:])) && phoneMobile("+"+s, region)
}

// phoneMobile reports whether s is a valid mobile number of region.
func phoneMobile(s, region string) bool {
	n, err := phonenumbers.Parse(s, region)
	if err != nil || !phonenumbers.IsValidNumber(n) {
		return false
	}
	switch phonenumbers.GetNumberType(n) {
	case phonenumbers.MOBILE, phonenumbers.FIXED_LINE_OR_MOBILE:
		return true
	}
	return false
}

func phoneValid(s, region string) bool {
	n, err := phonenumbers.Parse(s, region)
	return err == nil && phonenumbers.IsValidNumber(n)
}

// phoneShape rejects digit groupings that are dates, IPv4 addresses, OIDs and version numbers
// rather than phone numbers: a one-digit group is allowed only first or right after a country
// code, and dates such as 2024-06-18 or 18.06.2024 are not numbers to dial.
func phoneShape(c string) bool {
	var lens [phoneMaxGroups + 2]int
	var seps [phoneMaxGroups + 2]byte
	n := 0
	for i := 0; i < len(c) && n < len(lens); {
		if !isDigit(c[i]) {
			if n > 0 && seps[n-1] == 0 && (c[i] == '-' || c[i] == '.' || c[i] == '/' || c[i] == ' ') {
				seps[n-1] = c[i]
			}
			i++
			continue
		}
		j := digitsAt(c, i)
		lens[n] = j - i
		n++
		i = j
	}
	intl := c[0] == '+'
	for k := 0; k < n; k++ {
		trunk := k == 1 && c[0] == '0' && lens[0] <= 2 // "06 1 555 2030" (HU), "0 1 ..."
		if lens[k] == 1 && k > 1 || lens[k] == 1 && k == 1 && !intl && !trunk {
			return false
		}
	}
	dateSep := func(b byte) bool { return b == '-' || b == '.' || b == '/' }
	if n >= 3 && dateSep(seps[0]) && seps[0] == seps[1] && !intl {
		if lens[0] == 4 && lens[1] <= 2 && lens[2] <= 2 { // 2024-06-18
			return false
		}
		if lens[0] <= 2 && lens[1] <= 2 && lens[2] == 4 { // 18.06.2024
			return false
		}
		if lens[0] == 4 && lens[1] <= 2 && (c[0] == '1' && c[1] == '9' || c[0] == '2' && c[1] == '0') {
			return false // "RK/2026/11/0418": a year, a month and a serial number
		}
	}
	if n == 2 && !intl && lens[0] == 4 && (seps[0] == '-' || seps[0] == '/') && (c[0] == '1' && c[1] == '9' || c[0] == '2' && c[1] == '0') {
		return false // "2024-1187": a year and a serial number of an invoice, case or file
	}
	if n == 4 && !intl && seps[0] == '.' && seps[1] == '.' && seps[2] == '.' &&
		lens[0] <= 3 && lens[1] <= 3 && lens[2] <= 3 && lens[3] <= 3 { // 10.20.30.40
		return false
	}
	return true
}
