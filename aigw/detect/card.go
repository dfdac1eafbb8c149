package detect

// cardDetector finds payment card numbers: 13 to 19 digits, optionally grouped by one or two
// spaces, a hyphen or a dot used consistently ("4111.1111.1111.1111", "3787  805886  09884"),
// that pass the Luhn check and start with a known brand prefix (IIN range) of a
// length that brand issues.
type cardDetector struct{}

const (
	cardScore          = 0.9  // Luhn, brand and length agree, standard grouping
	cardOddGroupsScore = 0.75 // the same, grouped unusually ("41 1111 11111 111 11")
)

var cardContext = &contextRule{
	pos: newKeywords("card", "cards", "credit", "debit", "visa", "mastercard", "master card", "amex",
		"american express", "discover", "jcb", "diners", "unionpay", "maestro", "cc", "ccn", "pan",
		"card number", "card no", "payment", "pay with", "charge", "kreditkarte", "carte", "tarjeta",
		"carta", "cartão",
		// networks of one country or trade, and the word "card" of more languages
		"rupay", "troy", "uatp", "elo", "hipercard", "verve", "dankort", "mir", "bc card", "cabal",
		"kart", "karta", "karty", "kartu", "karte", "kaart", "kort", "kortti", "kortin", "kártya",
		"thẻ", "карта", "карты", "картка", "картки", "κάρτα", "κάρτας", "بطاقة", "البطاقة",
		"כרטיס", "कार्ड", "카드", "カード", "卡号", "银联", "信用卡", "บัตร"),
	neg: newKeywords("order", "invoice", "tracking", "ref", "reference", "isbn", "serial", "sku",
		"imei", "account id", "customer id", "transaction id", "ticket",
		// Loyalty and membership numbers are card-shaped and may pass Luhn: "CLUBCARD 6340 ...".
		"clubcard", "loyalty", "membership", "member", "rewards", "points card", "library card"),
	boost:   0.08,
	penalty: 0.3, // an oddly grouped number (0.75) after such a word is not reported
}

// cardBrand returns the brand of a card number from its issuer prefix and length, or "".
func cardBrand(d []byte) string {
	n := len(d)
	p := func(k int) int { // the first k digits as a number
		v := 0
		for i := 0; i < k && i < n; i++ {
			v = v*10 + int(d[i]-'0')
		}
		return v
	}
	switch {
	case d[0] == '4' && (n == 13 || n == 16 || n == 19):
		return "visa"
	case (p(2) >= 51 && p(2) <= 55 || p(4) >= 2221 && p(4) <= 2720) && n == 16:
		return "mastercard"
	case (p(2) == 34 || p(2) == 37) && n == 15:
		return "amex"
	case (p(4) == 6011 || p(3) >= 644 && p(3) <= 649 || p(2) == 65 ||
		p(6) >= 622126 && p(6) <= 622925) && n >= 16 && n <= 19:
		return "discover"
	case p(4) >= 3528 && p(4) <= 3589 && n >= 16 && n <= 19:
		return "jcb"
	case (p(3) >= 300 && p(3) <= 305 || p(2) == 36 || p(2) == 38 || p(2) == 39) && n >= 14 && n <= 19:
		return "diners"
	case p(2) == 62 && n >= 16 && n <= 19:
		return "unionpay"
	case (p(2) == 50 || p(2) >= 56 && p(2) <= 69) && n >= 12 && n <= 19:
		return "maestro"
	case p(4) >= 2200 && p(4) <= 2204 && n >= 16 && n <= 19:
		return "mir"
	}
	return ""
}

// cardBrandCued returns the brand of a card number of a network whose issuer range other
// numbers share too often to report it without a card word near it (cardCued): RuPay and
// UnionPay 81-82, Troy 9792, BC Card 94 and UATP (airline cards, 15 digits from 1), or "".
func cardBrandCued(d []byte) string {
	n := len(d)
	switch {
	case n == 16 && d[0] == '8' && (d[1] == '1' || d[1] == '2'):
		return "rupay"
	case n == 16 && d[0] == '9' && d[1] == '7' && d[2] == '9' && d[3] == '2':
		return "troy"
	case n == 16 && d[0] == '9' && d[1] == '4':
		return "bccard"
	case n == 15 && d[0] == '1':
		return "uatp"
	}
	return ""
}

// cardCued reports whether a card word stands before or after text[s:e] (the context window).
func cardCued(text string, s, e int) bool {
	return hasKeyword(text, s, e, cardContext.pos)
}

// luhn reports whether the digits pass the Luhn (mod 10) check.
func luhn(d []byte) bool {
	sum := 0
	double := false
	for i := len(d) - 1; i >= 0; i-- {
		v := int(d[i] - '0')
		if double {
			v *= 2
			if v > 9 {
				v -= 9
			}
		}
		sum += v
		double = !double
	}
	return sum%10 == 0
}

func (cardDetector) Detect(text string, out []Entity) []Entity {
	return asciiDetect(text, out, detectCards)
}

func detectCards(text string, out []Entity) []Entity {
	var digits [19]byte
	var glen [19]int // group lengths of the current window
	for i := 0; i < len(text); {
		if !isDigit(text[i]) {
			i++
			continue
		}
		if !numLeftOK(text, i) || (i > 0 && text[i-1] == '+') { // "+4915..." is a phone number
			i = digitsAt(text, i)
			continue
		}
		// The run: digit groups joined by one separator, used consistently.
		var sep cardSep
		if e := digitsAt(text, i); e+1 < len(text) && (text[e] == ' ' || text[e] == '-' || text[e] == '.') {
			sep = cardSep{text[e], 1}
			if text[e] == ' ' && e+2 < len(text) && text[e+1] == ' ' {
				sep.n = 2
			}
			if !sep.at(text, e) || sep.n == 2 && columnGap(text, e+2) {
				sep = cardSep{}
			}
		}
		list := restDigits(text, i, sep) > 19 // long enough to hold more than one number
		// Windows start at the run start, or at any group of a list. Each spans at most 19
		// digits, so the work per group is bounded.
		g := i
		for {
			nd, ng, h := 0, 0, g
			best, bestGroups := -1, 0
			var bestBrand string
			for {
				e := digitsAt(text, h)
				if nd+(e-h) > 19 {
					break
				}
				nd += copy(digits[nd:], text[h:e])
				glen[ng] = e - h
				ng++
				sk := sep.skip(text, e)
				if sk > 0 && text[e] != sep.c && !allFours(glen[:ng]) {
					sk = 0 // only a number grouped 4-4-... goes on after a line break
				}
				more := sk > 0
				// A window ends the run, or is followed by a long enough rest (a list of cards):
				// "5451 6996 2862 3133" is one number, not the card "6996 2862 3133". A line
				// break may end it or continue it ("4111 1111\n1111 1111" in OCR text).
				ends := !more && numRightOK(text, e) || more && list && restDigits(text, e+sk, sep) >= 12 ||
					more && shortTail(text, e+sk) && standardCardGroups(glen[:ng]) ||
					more && text[e] != sep.c && standardCardGroups(glen[:ng])
				if nd >= 12 && ends && luhn(digits[:nd]) {
					b := cardBrand(digits[:nd])
					if b == "" {
						if b = cardBrandCued(digits[:nd]); b != "" && !cardCued(text, g, e) {
							b = ""
						}
					}
					if b != "" {
						best, bestGroups, bestBrand = e, ng, b
					}
				}
				if !more {
					break
				}
				h = e + sk
			}
			if best >= 0 {
				score := cardOddGroupsScore
				if standardCardGroups(glen[:bestGroups]) {
					score = cardScore
				}
				out = append(out, Entity{Type: TypeCreditCard, Subtype: bestBrand, Start: g, End: best, Score: score})
				i = best
				break
			}
			e := digitsAt(text, g)
			sk := sep.skip(text, e)
			if sk > 0 && list {
				g = e + sk
				continue
			}
			for sk > 0 && text[e] == sep.c { // skip the rest of the run on this line
				e = digitsAt(text, e+sk)
				sk = sep.skip(text, e)
			}
			i = e
			break
		}
	}
	return out
}

// standardCardGroups reports whether the group lengths are a layout issuers print: one block,
// 4-4-4-4 (with a last group of 1-4), or Amex/Diners 4-6-4/5.
func standardCardGroups(gl []int) bool {
	if len(gl) == 1 {
		return true
	}
	if len(gl) == 3 && gl[0] == 4 && gl[1] == 6 && (gl[2] == 4 || gl[2] == 5) {
		return true
	}
	for i := 0; i < len(gl)-1; i++ {
		if gl[i] != 4 {
			return false
		}
	}
	return gl[len(gl)-1] <= 4
}

// columnGap reports whether the two spaces before the digit group at j part columns rather
// than join groups: the group is followed by one space and a digit, so the number there is
// grouped by single spaces, and the group before the gap belongs to another column ("13:41␣␣4233
// 1083 9284 8778" in a settlement slip: the time, then the card).
func columnGap(text string, j int) bool {
	e := digitsAt(text, j)
	return e+1 < len(text) && text[e] == ' ' && isDigit(text[e+1])
}

// cardSep is the separator between the digit groups of a card number: n copies of c (n 0: none).
type cardSep struct {
	c byte
	n int
}

// at reports whether the separator starts at e and a digit follows it.
func (s cardSep) at(text string, e int) bool {
	if s.n == 0 || e+s.n >= len(text) {
		return false
	}
	for k := 0; k < s.n; k++ {
		if text[e+k] != s.c {
			return false
		}
	}
	return isDigit(text[e+s.n])
}

// skip returns the length of the separator at e, or 0: the separator itself, or a line break
// between two four-digit groups of a number grouped by spaces ("4111 1111\n1111 1111", a card
// that OCR or a narrow column wrapped).
func (s cardSep) skip(text string, e int) int {
	if s.at(text, e) {
		return s.n
	}
	if s.c != ' ' || e < 4 || e >= len(text) || digitsAt(text, e-4) != e || e > 4 && isDigit(text[e-5]) {
		return 0
	}
	k := e
	if text[k] == '\r' {
		k++
	}
	if k+5 > len(text) || text[k] != '\n' || digitsAt(text, k+1) != k+5 {
		return 0
	}
	return k + 1 - e
}

// restDigits counts the digits of the run that continues at j with separator sep, stopping
// past 20.
func restDigits(text string, j int, sep cardSep) int {
	n := 0
	for n <= 20 {
		e := digitsAt(text, j)
		n += e - j
		if k := sep.skip(text, e); k > 0 {
			j = e + k
			continue
		}
		break
	}
	return n
}

func allFours(gl []int) bool {
	for _, n := range gl {
		if n != 4 {
			return false
		}
	}
	return true
}

// shortTail reports whether the digit group at j is the run's last and has two or three
// digits that end the number ("4111 1111 1111 1111 123" with its security code, a table's
// "3566  1585  3071  3664  64,20 €" with the amount in the next column, "... 1111 12/27" with the
// expiry date): a 16-digit card in 4-4-4-4 is then the card, not part of a longer number.
func shortTail(text string, j int) bool {
	e := digitsAt(text, j)
	if e-j < 2 || e-j > 3 {
		return false
	}
	return e == len(text) || !isDigit(text[e]) && (text[e] != ' ' && text[e] != '.' && text[e] != '-' || e+1 >= len(text) || !isDigit(text[e+1]))
}
