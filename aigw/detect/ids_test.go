package detect

import "testing"

// TestIDForms checks cards, SSNs and dates of birth in the forms and layouts ids17 added
// (card.go, ssn.go, dob.go, dobworld.go, aligned.go), and look-alikes that must stay out.
func TestIDForms(t *testing.T) {
	e := newEngine(t, Options{})
	for _, tc := range []struct {
		name, text, typ, want string // want "" means no entity of typ
	}{
		// cards: networks whose ranges need a card word, layouts
		{"rupay 82 with cue", "कार्ड नंबर: 8201 7360 9924 2892", TypeCreditCard, "8201 7360 9924 2892"},
		{"rupay 82 without cue", "ref 8201 7360 9924 2892", TypeCreditCard, ""},
		{"troy after number", "9792 3499 8503 3509 numaralı Troy kartınızdan", TypeCreditCard, "9792 3499 8503 3509"},
		{"uatp with cue", "FOP: UATP 188773552874477 / PAX", TypeCreditCard, "188773552874477"},
		{"uatp-like order number", "order 188773552874477 shipped", TypeCreditCard, ""},
		{"bc card", "BC카드 9410-9697-0299-0715 승인", TypeCreditCard, "9410-9697-0299-0715"},
		{"mir", "Карта «Мир»: 2201 1456 6847 8593", TypeCreditCard, "2201 1456 6847 8593"},
		{"amount in next column", "21/11   3566  1585  3071  3664  64,20 €", TypeCreditCard, "3566  1585  3071  3664"},
		{"security code after", "card 4241 3196 5532 2555 123 exp", TypeCreditCard, "4241 3196 5532 2555"},
		{"one block and expiry", "card 4241319655322555 12/27", TypeCreditCard, "4241319655322555"},
		{"four more digits: not a card", "ref 4241 3196 5532 2555 0927", TypeCreditCard, ""},
		{"wrapped by OCR", "Card number: 4241 3196\n5532 2555", TypeCreditCard, "4241 3196\n5532 2555"},
		{"card line then a year line", "4241 3196 5532 2555\n2026 statement", TypeCreditCard, "4241 3196 5532 2555"},
		{"phone line then a card line", "reach me at 310 681 2314\n6011-1295-6120-8126 (Amex corporate)", TypeCreditCard, "6011-1295-6120-8126"},
		{"arabic-indic digits", "رقم البطاقة: ٤٢٤١ ٣١٩٦ ٥٥٣٢ ٢٥٥٥", TypeCreditCard, "٤٢٤١ ٣١٩٦ ٥٥٣٢ ٢٥٥٥"},
		{"masked", "Card: **** **** **** 0042", TypeCreditCard, ""},
		{"after a time column", "N.  ORA    CARTA                 IMPORTO\n01  09:12  4241 3196 5532 2555     18,50", TypeCreditCard, "4241 3196 5532 2555"},
		{"amex after a time column", "02  19:07  3714 496353 98431      92,00", TypeCreditCard, "3714 496353 98431"},
		{"two-space groups stay one number", "ref 3787  805886  09884", TypeCreditCard, "3787  805886  09884"},
		// SSNs
		{"spanish cue", "número de Seguro Social (EE.UU.): 538 17 4402", TypeSSN, "538 17 4402"},
		{"dotted abbreviation", "S.S.N.: 402.88.1175", TypeSSN, "402.88.1175"},
		{"label line above", "Social Security Number\n412 66 0193", TypeSSN, "412 66 0193"},
		{"social column", "\"member\",\"social\"\n\"Ahmad Karimi\",\"610447218\"", TypeSSN, "610447218"},
		{"aligned column", "Name            SSN\nMarisol Vega    587 44 1026", TypeSSN, "587 44 1026"},
		{"csv after a date", "dob,ssn\n1968-05-07,319 04 5562", TypeSSN, "319 04 5562"},
		{"spoken cue", "ok my social is 412660193 and dob 2/14/1951", TypeSSN, "412660193"},
		{"social media is no cue", "our social media id 412660193", TypeSSN, ""},
		{"account: no SSN", "Account 441 27 8890 is closed.", TypeSSN, ""},
		// dates of birth
		{"aligned manifest", "No  Surname   Sex  Date of birth   Nat\n01  FALEOLO   M    03 JUN 1975     TO", TypeDateOfBirth, "03 JUN 1975"},
		{"aligned age column", "No  Horse     Age-Wt   Jockey\n1   MISTER    4-10-12  P. Tierney", TypeDateOfBirth, ""},
		{"aligned date of birth and age", "Name        DOB (Age)\nAna Lima    1986-09-22", TypeDateOfBirth, "1986-09-22"},
		{"padded cells", "No | Nama | Tanggal Lahir | Agama\n1 | BUDI | 12-04-1978 | ISLAM", TypeDateOfBirth, "12-04-1978"},
		{"russian", "Дата рождения: 12 марта 1985 г.", TypeDateOfBirth, "12 марта 1985"},
		{"greek", "Ημερομηνία γέννησης: 9 Ιουλίου 1982", TypeDateOfBirth, "9 Ιουλίου 1982"},
		{"finnish", "Syntymäaika: 12. maaliskuuta 1994", TypeDateOfBirth, "12. maaliskuuta 1994"},
		{"tagalog month", "DATE OF BIRTH: 15 Oktubre 2003", TypeDateOfBirth, "15 Oktubre 2003"},
		{"hungarian year first", "Született: 1989. május 14.", TypeDateOfBirth, "1989. május 14."},
		{"vietnamese", "Ngày sinh: ngày 8 tháng 3 năm 1990", TypeDateOfBirth, "8 tháng 3 năm 1990"},
		{"roman month", "Data ur.: 21.XI.1983", TypeDateOfBirth, "21.XI.1983"},
		{"airline", "PAX KIM MR / DOB 14MAR79 / FLT", TypeDateOfBirth, "14MAR79"},
		{"japanese era", "生年月日：昭和58年2月14日", TypeDateOfBirth, "昭和58年2月14日"},
		{"era of hire date", "入社日：平成17年4月1日", TypeDateOfBirth, ""},
		{"age beside", "client Harold Benson, 2/14/1951 (75 y/o), lives alone", TypeDateOfBirth, "2/14/1951"},
		{"age that does not fit", "visit 2/14/1951 (12 yrs)", TypeDateOfBirth, ""},
		{"years of service", "joined 2001-03-12 (25 yrs of service)", TypeDateOfBirth, ""},
		{"certificate", "was born on the 12th day of March, 1985", TypeDateOfBirth, "12th day of March, 1985"},
		{"compact two-digit year", "DOB 12-Mar-85", TypeDateOfBirth, "12-Mar-85"},
		{"spanish abbreviation", "Fecha de nac.: 12/12/1985", TypeDateOfBirth, "12/12/1985"},
		{"label line above", "Date of Birth\n04/17/2008", TypeDateOfBirth, "04/17/2008"},
		{"arabic-indic digits", "تاريخ الميلاد: ١٢/٠٣/١٩٨٥", TypeDateOfBirth, "١٢/٠٣/١٩٨٥"},
		{"issue date", "Дата выдачи паспорта: 15.04.2005", TypeDateOfBirth, ""},
		{"arabic month", "تاريخ الميلاد: 12 مارس 1985", TypeDateOfBirth, "12 مارس 1985"},
		{"hebrew month", "תאריך לידה: 12 במרץ 1985", TypeDateOfBirth, "12 במרץ 1985"},
		{"a header row is no label line", "id|name|phone\n4316250114|Maricel Dewi|", TypePhone, ""},
		{"dot leaders", "Date of birth ......... 12/03/1985", TypeDateOfBirth, "12/03/1985"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := scanType(e, tc.text, tc.typ); got != tc.want {
				t.Errorf("%s in %q = %q; want %q", tc.typ, tc.text, got, tc.want)
			}
		})
	}
}

// scanType returns the text of the last entity of typ that e finds in text, or "".
func scanType(e *Engine, text, typ string) string {
	got := ""
	for _, x := range e.Scan(text) {
		if x.Type == typ {
			got = x.Text
		}
	}
	return got
}
