package detect

// ssnDetector finds US Social Security numbers written AAA-GG-SSSS, AAA GG SSSS, AAA.GG.SSSS
// or as nine digits. Numbers the SSA never issues are rejected: area 000, 666 or 900-999, group 00, serial
// 0000, and a few numbers published as examples.
type ssnDetector struct{}

const (
	ssnDashScore  = 0.85 // 123-45-6789: the canonical layout
	ssnSpaceScore = 0.45 // 123 45 6789, 123.45.6789: needs a context word
	ssnPlainScore = 0.3  // 123456789: needs a context word
)

var ssnContext = &contextRule{
	pos: newKeywords("ssn", "ssns", "ss#", "ssn#", "social security", "social sec", "soc sec",
		"soc. sec.", "soc.sec.", "ss no", "ss no.", "ss-no",
		"social-security", "taxpayer", "tin", "itin", "tax id", "sozialversicherungsnummer",
		"s.s.n", "s.s.#", "s.s. no", "ss #", "soc sec #", "socsec", "social sec. no",
		"my social", "his social", "her social", "social #", "social no", "ss number",
		// the US number named in other languages: "número de Seguro Social", "numéro de
		// sécurité sociale", "Sozialversicherungsnummer", "社会保障番号", "사회보장번호"
		"seguro social", "segurança social", "seguridad social", "sécurité sociale",
		"securite sociale", "previdenza sociale", "an sinh xã hội", "社会保障番号", "社会安全号码",
		"社會安全號碼", "사회보장번호", "социального страхования"),
	head: newKeywords("social", "ss", "ssno", "ss no", "soc sec no", "sozialversicherung"),
	neg: newKeywords("order", "invoice", "tracking", "ref", "reference", "routing", "account",
		"acct", "phone", "tel", "fax", "zip", "isbn", "serial", "sku", "part", "ticket", "case",
		"po", "id", "number of", "total", "amount", "$", "€"),
	boost:   0.45,
	penalty: 0.4,
}

// ssnValid reports whether area, group and serial are in issued ranges.
func ssnValid(area, group, serial int) bool {
	if area == 0 || area == 666 || area >= 900 || group == 0 || serial == 0 {
		return false
	}
	switch area*1000000 + group*10000 + serial {
	case 78051120, 219099999, 123456789: // Woolworth wallet card, SSA advertisement, "123-45-6789"
		return false
	}
	return true
}

func (ssnDetector) Detect(text string, out []Entity) []Entity {
	return asciiDetect(text, out, detectSSNs)
}

func detectSSNs(text string, out []Entity) []Entity {
	for i := 0; i < len(text); {
		if !isDigit(text[i]) {
			i++
			continue
		}
		run := digitsAt(text, i)
		if !numLeftOK(text, i) {
			i = run
			continue
		}
		switch {
		case run-i == 9 && numRightOK(text, run):
			if ssnValid(atoi(text[i:i+3]), atoi(text[i+3:i+5]), atoi(text[i+5:i+9])) {
				out = append(out, Entity{Type: TypeSSN, Start: i, End: run, Score: ssnPlainScore})
			}
		case run-i == 3 && run+8 <= len(text) && (text[run] == '-' || text[run] == ' ' || text[run] == '.'):
			sep := text[run]
			g := run + 1
			if digitsAt(text, g) != g+2 || text[g+2] != sep {
				break
			}
			s := g + 3
			end := s + 4
			if digitsAt(text, s) != end || !numRightOK(text, end) {
				break
			}
			if !ssnValid(atoi(text[i:run]), atoi(text[g:g+2]), atoi(text[s:end])) {
				break
			}
			score := ssnDashScore
			if sep != '-' {
				score = ssnSpaceScore
			}
			out = append(out, Entity{Type: TypeSSN, Start: i, End: end, Score: score})
			i = end
			continue
		}
		i = run
	}
	return out
}
