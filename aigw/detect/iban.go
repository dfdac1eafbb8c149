package detect

// ibanDetector finds International Bank Account Numbers: a country code, two check digits and
// the national account number, printed continuously or in groups of four. The length must match
// the country's and the mod-97 check (ISO 7064) must give 1.
type ibanDetector struct{}

const ibanScore = 0.95

var ibanContext = &contextRule{
	pos:   newKeywords("iban", "bank", "account", "konto", "compte", "cuenta", "conto", "rekening", "transfer", "wire", "sepa", "bic", "swift"),
	boost: 0.04,
}

// ibanLengths maps a country code to the length of its IBANs (SWIFT IBAN registry).
var ibanLengths = map[[2]byte]int{
	{'A', 'D'}: 24, {'A', 'E'}: 23, {'A', 'L'}: 28, {'A', 'T'}: 20, {'A', 'Z'}: 28, {'B', 'A'}: 20,
	{'B', 'E'}: 16, {'B', 'G'}: 22, {'B', 'H'}: 22, {'B', 'I'}: 27, {'B', 'R'}: 29, {'B', 'Y'}: 28,
	{'C', 'H'}: 21, {'C', 'R'}: 22, {'C', 'Y'}: 28, {'C', 'Z'}: 24, {'D', 'E'}: 22, {'D', 'J'}: 27,
	{'D', 'K'}: 18, {'D', 'O'}: 28, {'E', 'E'}: 20, {'E', 'G'}: 29, {'E', 'S'}: 24, {'F', 'I'}: 18,
	{'F', 'K'}: 18, {'F', 'O'}: 18, {'F', 'R'}: 27, {'G', 'B'}: 22, {'G', 'E'}: 22, {'G', 'I'}: 23,
	{'G', 'L'}: 18, {'G', 'R'}: 27, {'G', 'T'}: 28, {'H', 'N'}: 28, {'H', 'R'}: 21, {'H', 'U'}: 28,
	{'I', 'E'}: 22, {'I', 'L'}: 23, {'I', 'Q'}: 23, {'I', 'S'}: 26, {'I', 'T'}: 27, {'J', 'O'}: 30,
	{'K', 'W'}: 30, {'K', 'Z'}: 20, {'L', 'B'}: 28, {'L', 'C'}: 32, {'L', 'I'}: 21, {'L', 'T'}: 20,
	{'L', 'U'}: 20, {'L', 'V'}: 21, {'L', 'Y'}: 25, {'M', 'C'}: 27, {'M', 'D'}: 24, {'M', 'E'}: 22,
	{'M', 'K'}: 19, {'M', 'N'}: 20, {'M', 'R'}: 27, {'M', 'T'}: 31, {'M', 'U'}: 30, {'N', 'I'}: 28,
	{'N', 'L'}: 18, {'N', 'O'}: 15, {'O', 'M'}: 23, {'P', 'K'}: 24, {'P', 'L'}: 28, {'P', 'S'}: 29,
	{'P', 'T'}: 25, {'Q', 'A'}: 29, {'R', 'O'}: 24, {'R', 'S'}: 22, {'R', 'U'}: 33, {'S', 'A'}: 24,
	{'S', 'C'}: 31, {'S', 'D'}: 18, {'S', 'E'}: 24, {'S', 'I'}: 19, {'S', 'K'}: 24, {'S', 'M'}: 27,
	{'S', 'O'}: 23, {'S', 'T'}: 25, {'S', 'V'}: 28, {'T', 'L'}: 23, {'T', 'N'}: 24, {'T', 'R'}: 26,
	{'U', 'A'}: 29, {'V', 'A'}: 22, {'V', 'G'}: 24, {'X', 'K'}: 20, {'Y', 'E'}: 30,
}

func (ibanDetector) Detect(text string, out []Entity) []Entity {
	var buf [34]byte
	for i := 0; i+4 <= len(text); i++ {
		if !isUpper(text[i]) || !isUpper(text[i+1]) || !isDigit(text[i+2]) || !isDigit(text[i+3]) {
			continue
		}
		if i > 0 && isWordByte(text[i-1]) {
			continue
		}
		want, ok := ibanLengths[[2]byte{text[i], text[i+1]}]
		if !ok {
			continue
		}
		// Collect exactly want characters, allowing one space or hyphen between them.
		n, j := 0, i
		for j < len(text) && n < want {
			c := text[j]
			if isUpper(c) || isDigit(c) {
				buf[n] = c
				n++
				j++
				continue
			}
			if (c == ' ' || c == '-') && n >= 4 && j+1 < len(text) && (isUpper(text[j+1]) || isDigit(text[j+1])) {
				j++
				continue
			}
			break
		}
		if n != want || (j < len(text) && isWordByte(text[j])) || !ibanMod97(buf[:n]) {
			continue
		}
		out = append(out, Entity{Type: TypeIBAN, Start: i, End: j, Score: ibanScore})
		i = j - 1
	}
	return out
}

// ibanMod97 moves the first four characters to the end, maps letters to 10-35 and checks that
// the number is 1 mod 97, without building the number.
func ibanMod97(s []byte) bool {
	r := 0
	add := func(c byte) {
		if isDigit(c) {
			r = (r*10 + int(c-'0')) % 97
		} else {
			r = (r*100 + int(c-'A') + 10) % 97
		}
	}
	for _, c := range s[4:] {
		add(c)
	}
	for _, c := range s[:4] {
		add(c)
	}
	return r == 1
}
