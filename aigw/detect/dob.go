package detect

import "strings"

// dobDetector finds calendar dates (numeric "1985-03-12", "12/03/1985", "12.03.85" and written
// "12 March 1985", "March 12th, 1985", "12. März 1985", "12 de marzo de 1985", "12-Mar-1985")
// that are valid days between 1900 and 2029. A date alone scores below the default threshold;
// a birth word near it ("born", "DOB", "date of birth", "geboren", "né le", ...) makes it a date
// of birth, and a business word ("invoice", "due", "meeting") keeps it out.
type dobDetector struct{}

const (
	dateScore      = 0.3
	dateShortScore = 0.2 // two-digit year
)

var dobContext = &contextRule{
	pos: newKeywords("born", "birth", "date of birth", "birthdate", "birthday", "birth date", "dob",
		"d.o.b", "b.", "geboren", "geb.", "geburtsdatum", "geburtstag", "né", "née", "né le",
		"naissance", "nacido", "nacida", "nacimiento", "nato", "nata", "nascita", "nascimento",
		"nasceu", "geboortedatum", "age", "aged",
		// Portuguese, Turkish, Hungarian, Polish, Czech, Romanian, Nordic, Finnish,
		// Icelandic, Indonesian, Vietnamese
		"nascido", "nascida", "doğum", "dogum", "doğum tarihi", "születési", "született", "szül.",
		"urodzenia", "urodzony", "urodzona", "ur.", "narození", "narozen", "narozena", "nar.",
		"născut", "născută", "nașterii", "nasterii", "födelsedatum", "född", "fødselsdato", "født",
		"fødd", "syntymäaika", "syntynyt", "fæðingardagur", "fæddur", "fædd", "lahir",
		"kelahiran", "ngày sinh", "sinh ngày",
		// Cyrillic and Greek: "дата рождения", "дата народження", "ημερομηνία γέννησης"
		"рождения", "родился", "родилась", "народження", "народився", "народилася", "γέννησης",
		"γεννήθηκε",
		// other scripts: Chinese, Japanese, Korean, Arabic, Hebrew, Hindi, Thai
		"生年月日", "出生日期", "出生", "生日", "誕生日", "생년월일", "생일", "تاريخ الميلاد", "مواليد",
		"תאריך לידה", "נולד", "נולדה", "जन्म तिथि", "जन्मतिथि", "जन्म", "วันเกิด",
		// abbreviated form labels and more languages (ids17): "Fecha de nac.", "Dt. nasc.",
		// Tagalog, Croatian, Slovak, Estonian, Lithuanian, Latvian, Catalan, Afrikaans,
		// Swahili, Russian "г.р.", Arabic, Persian, Bengali, Japanese "生まれ", Korean "출생"
		"nac.", "f. nac", "fec. nac", "nasc.", "dt. nasc", "kapanganakan", "ipinanganak",
		"rođen", "rođena", "rođenja", "narodenia", "narodený", "narodená", "sünniaeg",
		"sündinud", "gimimo", "gimęs", "dzimšanas", "dzimis", "naixement", "nascut", "nascuda",
		"gebore", "kuzaliwa", "alizaliwa", "г.р.", "рожд", "народж", "الولادة", "تاریخ تولد",
		"تولد", "জন্ম", "生まれ", "출생"),
	neg: newKeywords("invoice", "order", "ordered", "due", "shipped", "delivered", "delivery",
		"meeting", "expires", "expiry", "expiration", "exp", "created", "updated", "issued",
		"since", "released", "release", "deadline", "appointment", "scheduled", "paid", "payment",
		"effective", "valid", "posted", "modified", "login", "logged", "timestamp", "version",
		"build", "published", "signed", "starts", "start", "ends", "until", "from", "on call",
		"vom", "rechnung", "facture", "factura", "fattura",
		// an obituary's other dates: "born 4 June 1938, died 16 November 2026"
		"died", "death", "deceased", "passed away", "funeral", "buried",
		// other events of a life with a count of years beside them, as an age has (ids17):
		// "joined 2001-03-12 (25 yrs of service)"
		"joined", "hired", "hire date", "employed", "service", "tenure", "anniversary", "married",
		"wedding", "enrolled", "admitted", "admission", "founded", "established", "member since"),
	boost:   0.55,
	penalty: 0.2,
	notHead: newKeywords("age", "aged"),
	head: newKeywords("dob", "d.o.b", "birth", "born", "birthdate", "birthday", "geburtsdatum",
		"geb.", "naissance", "nacimiento", "nascita", "nascimento", "geboortedatum", "lahir",
		"doğum", "生年月日", "出生日期", "생년월일"),
}

// months maps lower-case month names and abbreviations in English, German, French, Spanish,
// Italian, Portuguese and Dutch to their number.
var months = map[string]int{
	"january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4, "apr": 4,
	"may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8, "september": 9,
	"sep": 9, "sept": 9, "october": 10, "oct": 10, "november": 11, "nov": 11, "december": 12, "dec": 12,
	"januar": 1, "jänner": 1, "februar": 2, "märz": 3, "maerz": 3, "mai": 5, "juni": 6, "juli": 7,
	"oktober": 10, "okt": 10, "dezember": 12, "dez": 12,
	"janvier": 1, "février": 2, "fevrier": 2, "mars": 3, "avril": 4, "juin": 6, "juillet": 7,
	"août": 8, "aout": 8, "septembre": 9, "octobre": 10, "novembre": 11, "décembre": 12, "decembre": 12,
	"enero": 1, "febrero": 2, "marzo": 3, "abril": 4, "mayo": 5, "junio": 6, "julio": 7,
	"agosto": 8, "septiembre": 9, "setiembre": 9, "octubre": 10, "noviembre": 11, "diciembre": 12,
	"gennaio": 1, "febbraio": 2, "aprile": 4, "maggio": 5, "giugno": 6, "luglio": 7,
	"settembre": 9, "ottobre": 10, "dicembre": 12,
	"janeiro": 1, "fevereiro": 2, "março": 3, "maio": 5, "junho": 6, "julho": 7, "setembro": 9,
	"outubro": 10, "dezembro": 12,
	"januari": 1, "februari": 2, "maart": 3, "mei": 5, "augustus": 8,
	// Indonesian, Swedish, Norwegian, Danish, Romanian, Turkish, Polish and Czech (genitive)
	"maret": 3, "desember": 12, "agustus": 8, "nopember": 11,
	"maj": 5, "augusti": 8,
	"ianuarie": 1, "februarie": 2, "martie": 3, "aprilie": 4, "iunie": 6, "iulie": 7,
	"septembrie": 9, "octombrie": 10, "noiembrie": 11, "decembrie": 12,
	"ocak": 1, "şubat": 2, "subat": 2, "mart": 3, "nisan": 4, "mayıs": 5, "mayis": 5,
	"haziran": 6, "temmuz": 7, "ağustos": 8, "agustos": 8, "eylül": 9, "eylul": 9, "ekim": 10,
	"kasım": 11, "kasim": 11, "aralık": 12, "aralik": 12,
	"stycznia": 1, "lutego": 2, "marca": 3, "kwietnia": 4, "maja": 5, "czerwca": 6,
	"lipca": 7, "sierpnia": 8, "września": 9, "października": 10, "listopada": 11, "grudnia": 12,
	"ledna": 1, "února": 2, "března": 3, "dubna": 4, "května": 5, "června": 6, "července": 7,
	"srpna": 8, "září": 9, "října": 10, "listopadu": 11, "prosince": 12,
}

func (dobDetector) Detect(text string, out []Entity) []Entity {
	return asciiDetect(text, out, detectDates)
}

func detectDates(text string, out []Entity) []Entity {
	n0 := len(out)
	out = numericDates(text, out)
	out = cjkDates(text, out)
	out = writtenDates(text, out)
	out = romanDates(text, out)
	out = compactDates(text, out)
	for k := n0; k < len(out); k++ {
		if y := spanYear(text[out[k].Start:out[k].End]); y > 0 && ageBeside(text, out[k].End, y) {
			out[k].Score = max(out[k].Score, dobAgeScore)
		}
	}
	return out
}

// cjkDates finds dates written with the year, month and day characters of Chinese and Japanese
// (1979年5月3日) and Korean (1979년 5월 3일).
func cjkDates(text string, out []Entity) []Entity {
	for _, u := range [...]struct{ y, m, d, sp string }{{"年", "月", "日", ""}, {"년", "월", "일", " "}} {
		from := 0
		for {
			k := strings.Index(text[from:], u.y)
			if k < 0 {
				break
			}
			y := from + k
			from = y + len(u.y)
			i := y
			for i > 0 && y-i < 4 && isDigit(text[i-1]) {
				i--
			}
			year := 0
			switch {
			case y-i == 4 && numLeftOK(text, i):
				year = atoi(text[i:y])
			case u.y == "年":
				year, i = eraYear(text, y) // "昭和58年"
			}
			if year == 0 {
				continue
			}
			j := from
			if u.sp != "" && strings.HasPrefix(text[j:], u.sp) {
				j += len(u.sp)
			}
			ms := j
			a := digitsAt(text, j)
			if a == j || a-j > 2 || !strings.HasPrefix(text[a:], u.m) {
				continue
			}
			j = a + len(u.m)
			if u.sp != "" && strings.HasPrefix(text[j:], u.sp) {
				j += len(u.sp)
			}
			b := digitsAt(text, j)
			if b == j || b-j > 2 || !strings.HasPrefix(text[b:], u.d) {
				continue
			}
			if !validDate(year, atoi(text[ms:a]), atoi(text[j:b])) {
				continue
			}
			out = append(out, Entity{Type: TypeDateOfBirth, Start: i, End: b + len(u.d), Score: dateScore})
		}
	}
	return out
}

func validDate(y, m, d int) bool {
	if y < 1900 || y > 2029 || m < 1 || m > 12 || d < 1 {
		return false
	}
	if y == 1900 && m == 1 && d == 1 {
		return false // the default date of systems and forms ("DOB: 1900-01-01"), no birth date
	}
	days := [13]int{0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}[m]
	if m == 2 && y%4 == 0 && (y%100 != 0 || y%400 == 0) {
		days = 29
	}
	return d <= days
}

// numericDates finds Y-M-D, D/M/Y, M/D/Y and D.M.Y with '-', '/' or '.' used consistently.
func numericDates(text string, out []Entity) []Entity {
	for i := 0; i < len(text); {
		if !isDigit(text[i]) {
			i++
			continue
		}
		a := digitsAt(text, i)
		if !numLeftOK(text, i) || a-i > 4 || a+1 >= len(text) {
			i = a
			continue
		}
		sep := text[a]
		if sep != '-' && sep != '/' && sep != '.' {
			i = a
			continue
		}
		b := digitsAt(text, a+1)
		if b == a+1 || b-a-1 > 2 || b+1 >= len(text) || text[b] != sep {
			i = a
			continue
		}
		c := digitsAt(text, b+1)
		if c == b+1 || !numRightOK(text, c) {
			i = a
			continue
		}
		x, y, z := atoi(text[i:a]), atoi(text[a+1:b]), atoi(text[b+1:c])
		lx, lz := a-i, c-b-1
		score, ok := 0.0, false
		switch {
		case lx == 4 && lz <= 2:
			ok = validDate(x, y, z)
			score = dateScore
		case lx <= 2 && lz == 4:
			ok = validDate(z, y, x) || validDate(z, x, y)
			score = dateScore
		case lx <= 2 && lz == 2 && (lx == 2 || b-a-1 == 2) && !(sep == '.' && lx == 1):
			// Two-digit year: "03/12/85", "3/12/85"; not "2.1.27", which is a version.
			ok = validDate(1900+z, y, x) || validDate(1900+z, x, y)
			score = dateShortScore
		}
		if !ok {
			i = a
			continue
		}
		end := c
		if sep == '.' && lx == 4 && end < len(text) && text[end] == '.' {
			end++ // Hungarian "1979.09.23."
		}
		end = yearSuffix(text, end, lz == 4)
		out = append(out, Entity{Type: TypeDateOfBirth, Start: i, End: end, Score: score})
		i = end
	}
	return spacedDates(text, out)
}

// yearSuffix returns the end of a Polish " r." ("roku") written after a year ending at e.
func yearSuffix(text string, e int, year bool) int {
	if year && strings.HasPrefix(text[e:], " r.") && (e+3 == len(text) || !isAlpha(text[e+3])) {
		return e + 3
	}
	return e
}

// spacedDates finds dates written with ". " between their parts: day first "3. 6. 1982"
// (Czech, Slovak, German) and year first "1985. 03. 12." (Hungarian, with its final dot).
func spacedDates(text string, out []Entity) []Entity {
	for i := 0; i+8 < len(text); {
		if !isDigit(text[i]) {
			i++
			continue
		}
		a := digitsAt(text, i)
		if !numLeftOK(text, i) || a-i > 4 || !strings.HasPrefix(text[a:], ". ") {
			i = a
			continue
		}
		b := digitsAt(text, a+2)
		if b == a+2 || b-a-2 > 2 || !strings.HasPrefix(text[b:], ". ") {
			i = a
			continue
		}
		c := digitsAt(text, b+2)
		if c == b+2 {
			i = a
			continue
		}
		x, y, z := atoi(text[i:a]), atoi(text[a+2:b]), atoi(text[b+2:c])
		end := c
		ok := false
		switch {
		case a-i <= 2 && c-b-2 == 4 && numRightOK(text, c):
			ok = validDate(z, y, x)
			end = yearSuffix(text, end, true)
		case a-i == 4 && c-b-2 <= 2 && c < len(text) && text[c] == '.':
			ok = validDate(x, y, z)
			end++
		}
		if !ok {
			i = a
			continue
		}
		out = append(out, Entity{Type: TypeDateOfBirth, Start: i, End: end, Score: dateScore})
		i = end
	}
	return out
}

// writtenDates finds dates with a month name, anchored on the month word.
func writtenDates(text string, out []Entity) []Entity {
	var buf [32]byte
	for i := 0; i < len(text); {
		ws, we := nextWord(text, i)
		if ws < 0 {
			break
		}
		i = we
		if we-ws < 3 || we-ws > 24 || !digitNear(text, ws, we) {
			continue
		}
		lw, ok := lowerInto(buf[:0:len(buf)], text[ws:we])
		if !ok {
			continue
		}
		if string(lw) == "tháng" {
			if s, e := vietDate(text, ws, we); s >= 0 {
				out = append(out, Entity{Type: TypeDateOfBirth, Start: s, End: e, Score: dateScore})
				i = e
			}
			continue
		}
		m, ok := months[string(lw)]
		if !ok {
			continue
		}
		// Lower-case English "may", "mar", "dec" are ordinary words; a capital or a number on
		// both sides is needed anyway, so a month word only counts next to a day and a year.
		after := we
		if after < len(text) && text[after] == '.' {
			after++
		}
		if s, d := dayBefore(text, ws); s >= 0 {
			// "12 March 1985", "12. März 1985", "12 de marzo de 1985", "12-Mar-1985"
			if y, e := yearAfter(text, after, true); e > 0 && validDate(y, m, d) {
				out = append(out, Entity{Type: TypeDateOfBirth, Start: s, End: e, Score: dateScore})
				i = e
				continue
			}
		}
		if s, e := yearFirstDate(text, ws, after, m); s >= 0 {
			out = append(out, Entity{Type: TypeDateOfBirth, Start: s, End: e, Score: dateScore})
			i = e
			continue
		}
		// "March 12, 1985", "March 12th 1985"
		j := after
		n := 0
		for j < len(text) && text[j] == ' ' && n < 2 {
			j++
			n++
		}
		if n == 0 || j >= len(text) || !isDigit(text[j]) {
			continue
		}
		de := digitsAt(text, j)
		if de-j > 2 {
			continue
		}
		d := atoi(text[j:de])
		de = skipOrdinal(text, de)
		if de < len(text) && text[de] == ',' {
			de++
		}
		if y, e := yearAfter(text, de, false); e > 0 && validDate(y, m, d) {
			out = append(out, Entity{Type: TypeDateOfBirth, Start: ws, End: e, Score: dateScore})
			i = e
		}
	}
	return out
}

// skipOrdinal skips "st", "nd", "rd", "th", "er" or "º" after a day number.
func skipOrdinal(text string, j int) int {
	if j+2 <= len(text) {
		switch text[j : j+2] {
		case "st", "nd", "rd", "th", "er", "º":
			if j+2 == len(text) || !isAlpha(text[j+2]) {
				return j + 2
			}
		}
	}
	return j
}

// dayBefore finds a day number written before the month word at ws and returns its start and
// value, or (-1, 0).
func dayBefore(text string, ws int) (int, int) {
	j := ws
	// Separator between day and month: " ", "-", "/", ". ", " de ".
	if j > 0 && (text[j-1] == '-' || text[j-1] == '/') {
		j--
	} else {
		n := 0
		for j > 0 && text[j-1] == ' ' && n < 2 {
			j--
			n++
		}
		if n == 0 {
			return -1, 0
		}
		if j >= 3 && (text[j-2:j] == "de" || text[j-2:j] == "of") && text[j-3] == ' ' {
			j -= 3 // "12 de marzo", "11th of Nov"
			if j >= 4 && text[j-3:j] == "day" && text[j-4] == ' ' {
				j -= 4 // "the 12th day of March, 1985" (certificates, affidavits)
			}
		}
		if j > 0 && text[j-1] == '.' {
			j--
		}
	}
	// Ordinal suffix.
	if j >= 2 {
		switch text[j-2 : j] {
		case "st", "nd", "rd", "th", "er", "º":
			j -= 2
		}
	}
	e := j
	for j > 0 && isDigit(text[j-1]) && e-j < 3 {
		j--
	}
	if j == e || e-j > 2 || !numLeftOK(text, j) {
		return -1, 0
	}
	return j, atoi(text[j:e])
}

// yearAfter finds a four-digit year after the month ("March 1985", "marzo de 1985", "Mar-1985")
// and returns it with its end, or (0, -1). With short, a two-digit year after '-' counts too
// ("12-Mar-85").
func yearAfter(text string, j int, short bool) (int, int) {
	if j < len(text) && (text[j] == '-' || text[j] == '/') {
		j++
	} else {
		if j < len(text) && text[j] == ',' {
			j++
		}
		n := 0
		for j < len(text) && text[j] == ' ' && n < 2 {
			j++
			n++
		}
		if n == 0 {
			return 0, -1
		}
		if j+3 <= len(text) && text[j:j+3] == "de " {
			j += 3
		}
	}
	e := digitsAt(text, j)
	if short && e-j == 2 && j > 0 && text[j-1] == '-' && numRightOK(text, e) {
		return 1900 + atoi(text[j:e]), e // "12-Mar-85": a two-digit year only in this compact form
	}
	if e-j != 4 || !numRightOK(text, e) {
		return 0, -1
	}
	return atoi(text[j:e]), e
}
