package detect

import "strings"

// Dates of birth as more of the world writes them (ids17): month names of more languages
// (moreMonths, Arabic and Hebrew too), Vietnamese "8 tháng 3 năm 1990", Hungarian year-first "1989. május 14.", Roman
// month numerals "21.XI.1983", the airline and military "14MAR79", Japanese era years
// "昭和58年2月14日", and an age written beside a date ("2/14/1951 (75 y/o)") as evidence that it
// is a birth date.

// moreMonths lists month names (genitive where dates use it) of more languages, January first.
// Words already in months keep their number there.
var moreMonths = [...][12]string{
	{"января", "февраля", "марта", "апреля", "мая", "июня", "июля", "августа", "сентября", "октября", "ноября", "декабря"},
	{"січня", "лютого", "березня", "квітня", "травня", "червня", "липня", "серпня", "вересня", "жовтня", "листопада", "грудня"},
	{"ιανουαρίου", "φεβρουαρίου", "μαρτίου", "απριλίου", "μαΐου", "ιουνίου", "ιουλίου", "αυγούστου", "σεπτεμβρίου", "οκτωβρίου", "νοεμβρίου", "δεκεμβρίου"},
	{"tammikuuta", "helmikuuta", "maaliskuuta", "huhtikuuta", "toukokuuta", "kesäkuuta", "heinäkuuta", "elokuuta", "syyskuuta", "lokakuuta", "marraskuuta", "joulukuuta"},
	{"január", "február", "március", "április", "május", "június", "július", "augusztus", "szeptember", "október", "november", "december"},
	{"enero", "pebrero", "marso", "abril", "mayo", "hunyo", "hulyo", "agosto", "setyembre", "oktubre", "nobyembre", "disyembre"},
	{"januar", "februar", "marts", "april", "maj", "juni", "juli", "august", "september", "oktober", "november", "desember"},
	{"siječnja", "veljače", "ožujka", "travnja", "svibnja", "lipnja", "srpnja", "kolovoza", "rujna", "listopada", "studenoga", "prosinca"},
	{"januára", "februára", "marca", "apríla", "mája", "júna", "júla", "augusta", "septembra", "októbra", "novembra", "decembra"},
	{"januari", "februari", "mac", "april", "mei", "jun", "julai", "ogos", "september", "oktober", "november", "disember"},
	{"gener", "febrer", "març", "abril", "maig", "juny", "juliol", "agost", "setembre", "octubre", "novembre", "desembre"},
	{"jaanuar", "veebruar", "märts", "aprill", "mai", "juuni", "juuli", "august", "september", "oktoober", "november", "detsember"},
	{"janúar", "febrúar", "mars", "apríl", "maí", "júní", "júlí", "ágúst", "september", "október", "nóvember", "desember"},
	{"januarie", "februarie", "maart", "april", "mei", "junie", "julie", "augustus", "september", "oktober", "november", "desember"},
	{"januar", "februar", "mart", "april", "maj", "jun", "jul", "avgust", "septembar", "oktobar", "novembar", "decembar"},
	{"jan.", "febr", "márc", "ápr", "máj", "jún", "júl", "aug", "szept", "okt", "nov", "dec"},
	{"يناير", "فبراير", "مارس", "أبريل", "مايو", "يونيو", "يوليو", "أغسطس", "سبتمبر", "أكتوبر", "نوفمبر", "ديسمبر"},
	{"ينایر", "فبرایر", "مارس", "ابريل", "مايو", "يونيه", "يوليه", "اغسطس", "سبتمبر", "اكتوبر", "نوفمبر", "ديسمبر"},
	{"ינואר", "פברואר", "מרץ", "אפריל", "מאי", "יוני", "יולי", "אוגוסט", "ספטמבר", "אוקטובר", "נובמבר", "דצמבר"},
	{"בינואר", "בפברואר", "במרץ", "באפריל", "במאי", "ביוני", "ביולי", "באוגוסט", "בספטמבר", "באוקטובר", "בנובמבר", "בדצמבר"},
}

func init() {
	for _, l := range moreMonths {
		for k, w := range l {
			w = strings.TrimSuffix(w, ".")
			if _, ok := months[w]; !ok {
				months[w] = k + 1
			}
		}
	}
}

// vietDate finds "8 tháng 3 năm 1990" around the word "tháng" at ws..we: the day before it,
// the month number after it, then "năm" and the year. It returns the span or (-1, -1).
func vietDate(text string, ws, we int) (int, int) {
	s, d := dayBefore(text, ws)
	if s < 0 || we >= len(text) || text[we] != ' ' {
		return -1, -1
	}
	ms := we + 1
	me := digitsAt(text, ms)
	if me == ms || me-ms > 2 || !strings.HasPrefix(text[me:], " năm ") {
		return -1, -1
	}
	ys := me + len(" năm ")
	ye := digitsAt(text, ys)
	if ye-ys != 4 || !numRightOK(text, ye) || !validDate(atoi(text[ys:ye]), atoi(text[ms:me]), d) {
		return -1, -1
	}
	return s, ye
}

// yearFirstDate finds the Hungarian "1989. május 14." (and "1989. máj. 14-én") around the
// month word at ws..after (after is past a dot that ends an abbreviation): the year and ". "
// before it, the day and its dot after it. It returns the span or (-1, -1).
func yearFirstDate(text string, ws, after, m int) (int, int) {
	if ws < 6 || text[ws-1] != ' ' || text[ws-2] != '.' {
		return -1, -1
	}
	ye := ws - 2
	ys := ye
	for ys > 0 && ye-ys < 4 && isDigit(text[ys-1]) {
		ys--
	}
	if ye-ys != 4 || !numLeftOK(text, ys) || after >= len(text) || text[after] != ' ' {
		return -1, -1
	}
	ds := after + 1
	de := digitsAt(text, ds)
	if de == ds || de-ds > 2 || de >= len(text) || text[de] != '.' && text[de] != '-' {
		return -1, -1
	}
	if !validDate(atoi(text[ys:ye]), m, atoi(text[ds:de])) {
		return -1, -1
	}
	if text[de] == '.' {
		de++
	}
	return ys, de
}

// romanMonths are the month numerals of "21.XI.1983" (Polish, Czech, Russian, Italian use).
var romanMonths = [...]string{"I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X", "XI", "XII"}

// romanDates finds day, Roman month and year joined by '.', '-', '/' or a space, the same on
// both sides: "21.XI.1983", "3 IX 1979", "07-IV-1990".
func romanDates(text string, out []Entity) []Entity {
	for i := 0; i+6 < len(text); i++ {
		c := text[i]
		if c != 'I' && c != 'V' && c != 'X' || i < 2 || !isDigit(text[i-2]) {
			continue
		}
		sep := text[i-1]
		if sep != '.' && sep != '-' && sep != '/' && sep != ' ' {
			continue
		}
		j := i
		for j < len(text) && j-i < 4 && (text[j] == 'I' || text[j] == 'V' || text[j] == 'X') {
			j++
		}
		m := 0
		for k, r := range romanMonths {
			if r == text[i:j] {
				m = k + 1
			}
		}
		if m == 0 || j+5 > len(text) || text[j] != sep {
			continue
		}
		ds := i - 1
		for ds > 0 && i-1-ds < 2 && isDigit(text[ds-1]) {
			ds--
		}
		ye := digitsAt(text, j+1)
		if ye-j-1 != 4 || !numLeftOK(text, ds) || !numRightOK(text, ye) {
			continue
		}
		if !validDate(atoi(text[j+1:ye]), m, atoi(text[ds:i-1])) {
			continue
		}
		e := yearSuffix(text, ye, true)
		out = append(out, Entity{Type: TypeDateOfBirth, Start: ds, End: e, Score: dateScore})
		i = e
	}
	return out
}

// compactDate reports the end of an airline or military date "14MAR79", "03JUN1975" starting
// at i (one or two digits, an English month abbreviation in capitals, a two- or four-digit
// year), or -1.
func compactDate(text string, i int) int {
	a := digitsAt(text, i)
	if a == i || a-i > 2 || a+5 > len(text) || !numLeftOK(text, i) {
		return -1
	}
	for k := a; k < a+3; k++ {
		if !isUpper(text[k]) {
			return -1
		}
	}
	var b [3]byte
	for k := range b {
		b[k] = lowerASCII(text[a+k])
	}
	m, ok := months[string(b[:])]
	if !ok || m == 0 {
		return -1
	}
	ye := digitsAt(text, a+3)
	y := 0
	switch ye - a - 3 {
	case 2:
		y = 1900 + atoi(text[a+3:ye])
		if y < 1930 {
			y += 100
		}
	case 4:
		y = atoi(text[a+3 : ye])
	default:
		return -1
	}
	if !numRightOK(text, ye) || !validDate(y, m, atoi(text[i:a])) {
		return -1
	}
	return ye
}

// compactDates finds the dates of compactDate.
func compactDates(text string, out []Entity) []Entity {
	for i := 0; i < len(text); {
		if !isDigit(text[i]) {
			i++
			continue
		}
		if e := compactDate(text, i); e > 0 {
			out = append(out, Entity{Type: TypeDateOfBirth, Start: i, End: e, Score: dateScore})
			i = e
			continue
		}
		i = digitsAt(text, i)
	}
	return out
}

// eraYear returns the Western year of a Japanese era year written just before y (the byte
// where "年" starts: "昭和58", "平成元"), with where it starts, or (0, -1).
func eraYear(text string, y int) (int, int) {
	i := y
	for i > 0 && y-i < 2 && isDigit(text[i-1]) {
		i--
	}
	n := atoi(text[i:y])
	if i == y {
		if !strings.HasSuffix(text[:y], "元") {
			return 0, -1
		}
		i -= len("元")
		n = 1
	}
	for _, e := range [...]struct {
		name string
		base int
	}{{"明治", 1867}, {"大正", 1911}, {"昭和", 1925}, {"平成", 1988}, {"令和", 2018}} {
		if strings.HasSuffix(text[:i], e.name) && n >= 1 && n <= 64 {
			return e.base + n, i - len(e.name)
		}
	}
	return 0, -1
}

// ageWords follow the number of an age written beside a date: "(75 y/o)", "75 yrs", "39 ans".
var ageWords = newKeywords("y/o", "yo", "y.o.", "yrs", "yr", "years", "year old", "j.", "jahre",
	"ans", "años", "anos", "anni", "jaar", "år", "lat", "let", "éves", "yaşında", "yaş", "tuổi",
	"tahun", "taon", "лет", "года", "歳", "岁", "세")

// ageBeside reports whether an age consistent with year (born that year, aged now between 2000
// and 2035) is written right after a date that ends at e: "2/14/1951 (75 y/o)", "1964-09-18,
// 62 yrs", "12.03.1985 (39 J.)", "(age 75)" is a context word already. The look-ahead is
// bounded (16 bytes), and a stream holds a date's digits anyway until the line goes on.
func ageBeside(text string, e, year int) bool {
	j := e
	for k := 0; k < 3 && j < len(text) && (text[j] == ' ' || text[j] == '(' || text[j] == ',' || text[j] == '-'); k++ {
		j++
	}
	a := digitsAt(text, j)
	if a == j || a-j > 3 {
		return false
	}
	age := atoi(text[j:a])
	if age > 120 || year+age < 2000 || year+age > 2035 {
		return false
	}
	if a < len(text) && text[a] == ')' && j > e && text[j-1] == '(' {
		return true // "(75)"
	}
	k := a
	if k < len(text) && text[k] == ' ' {
		k++
	}
	if k >= len(text) {
		return false
	}
	for _, kw := range ageWords.first[lowerASCII(text[k])] {
		if k+len(kw) <= len(text) && matchKeyword(text, k, kw) {
			return true
		}
	}
	return false
}

// spanYear returns the four-digit year inside a date span, or 0.
func spanYear(s string) int {
	for i := 0; i < len(s); {
		if !isDigit(s[i]) {
			i++
			continue
		}
		e := digitsAt(s, i)
		if e-i == 4 {
			return atoi(s[i:e])
		}
		i = e
	}
	return 0
}

// dobAgeScore is the score of a date with a consistent age beside it: a birth date even
// without a birth word.
const dobAgeScore = 0.6

// digitNear reports whether a digit stands within 12 bytes before the word text[ws:we] or 5
// after it: every written date has its day or year there ("12th day of March", "März 1985",
// "Mar. 5"), so other words skip the month lookup.
func digitNear(text string, ws, we int) bool {
	for i := max(0, ws-12); i < ws; i++ {
		if isDigit(text[i]) {
			return true
		}
	}
	for i := we; i < len(text) && i < we+5; i++ {
		if isDigit(text[i]) {
			return true
		}
	}
	return false
}
