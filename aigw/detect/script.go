package detect

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Names written in non-Latin scripts. Each script has its own evidence, all of it read from the
// language's grammar rather than from lists of names: introductions, honorifics and field labels
// before the name (меня зовут, κ., السيد, שמי, श्री, คุณ, 이름:, 姓名：), honorifics after it
// (先生, さん, 様, 님, 팀장), and the shapes of East Slavic names (patronymics, initials). The only
// name lists are the closed classes of common Chinese and Korean family names, which decide
// where a name starts in text written without spaces.
//
// Every rule reads at most 128 bytes before the name and two space-separated words after its
// first word, so that scriptInert (SafePrefix) can decide a word from a bounded window.

type scriptClass uint8

const (
	scNone scriptClass = iota
	scCyrillic
	scGreek
	scArabic
	scHebrew
	scDevanagari
	scThai
	scHangul
	scHan
	scKana
)

func classOf(r rune) scriptClass {
	switch {
	case r < 0x370:
		return scNone
	case r <= 0x3FF || r >= 0x1F00 && r <= 0x1FFF:
		if unicode.IsLetter(r) || unicode.Is(unicode.Mn, r) {
			return scGreek
		}
	case r >= 0x400 && r <= 0x52F:
		if unicode.IsLetter(r) || unicode.Is(unicode.Mn, r) {
			return scCyrillic
		}
	case r >= 0x590 && r <= 0x5FF:
		if unicode.IsLetter(r) || unicode.Is(unicode.Mn, r) {
			return scHebrew
		}
	case r >= 0x600 && r <= 0x6FF || r >= 0x750 && r <= 0x77F:
		if unicode.IsLetter(r) || unicode.Is(unicode.Mn, r) {
			return scArabic
		}
	case r >= 0x900 && r <= 0x97F:
		if unicode.IsLetter(r) || unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Mc, r) {
			return scDevanagari
		}
	case r >= 0xE00 && r <= 0xE7F:
		if unicode.IsLetter(r) || unicode.Is(unicode.Mn, r) {
			return scThai
		}
	case r >= 0xAC00 && r <= 0xD7A3 || r >= 0x1100 && r <= 0x11FF || r >= 0x3130 && r <= 0x318F:
		return scHangul
	case r >= 0x3041 && r <= 0x30FF && r != 0x30A0:
		return scKana
	case r >= 0x4E00 && r <= 0x9FFF || r >= 0x3400 && r <= 0x4DBF || r >= 0xF900 && r <= 0xFAFF || r == 0x3005:
		return scHan
	}
	return scNone
}

func classAt(text string, i int) (scriptClass, int) {
	if i < 0 || i >= len(text) || text[i] < 0xCD {
		return scNone, 1
	}
	r, n := utf8.DecodeRuneInString(text[i:])
	return classOf(r), n
}

// classBefore returns the class of the rune ending at i and its start.
func classBefore(text string, i int) (scriptClass, int) {
	if i <= 0 {
		return scNone, i
	}
	r, n := utf8.DecodeLastRuneInString(text[:i])
	return classOf(r), i - n
}

// scriptWordEnd returns the end of the run of class c starting at i; Cyrillic and Greek words
// keep inner hyphens and apostrophes ("Ім'я", "Римский-Корсаков").
func scriptWordEnd(text string, i int, c scriptClass) int {
	j := i
	for j < len(text) {
		k, n := classAt(text, j)
		if k == c {
			j += n
			continue
		}
		if (c == scCyrillic || c == scGreek) && j > i && (text[j] == '-' || text[j] == '\'') {
			if k2, _ := classAt(text, j+1); k2 == c {
				j++
				continue
			}
		}
		if c == scCyrillic && j > i && strings.HasPrefix(text[j:], "’") {
			if k2, _ := classAt(text, j+3); k2 == c {
				j += 3
				continue
			}
		}
		break
	}
	return j
}

// scriptNames appends the person names in non-Latin scripts found in text.
func scriptNames(text string, out []Entity) []Entity {
	for i := 0; i < len(text); {
		if text[i] < 0xCD {
			i++
			continue
		}
		c, n := classAt(text, i)
		if c == scNone {
			i += n
			continue
		}
		if c == scHan || c == scKana {
			e := i
			for e < len(text) {
				k, m := classAt(text, e)
				if k != scHan && k != scKana {
					break
				}
				e += m
			}
			out = cjkNames(text, i, e, out)
			i = e
			continue
		}
		e := scriptWordEnd(text, i, c)
		if k, _ := classBefore(text, i); k == c {
			i = e // inside a word (after a hyphen, say)
			continue
		}
		var end int
		switch c {
		case scCyrillic, scGreek:
			var s int
			s, end = casedName(text, i, e, c)
			if end > 0 {
				out = append(out, Entity{Type: TypePerson, Start: s, End: end, Score: nameStrongFloor + nameContextBoost})
				for end > 0 && listCue(text, s, c) { // "Присутствовали: А, Б, В"
					ns := nextListItem(text, end, c)
					if ns < 0 {
						break
					}
					_, ne := casedRun(text, ns, scriptWordEnd(text, ns, c), c, 3)
					if ne <= ns {
						break
					}
					out = append(out, Entity{Type: TypePerson, Start: ns, End: ne, Score: nameStrongFloor + nameContextBoost})
					end = ne
				}
			}
		case scHangul:
			var s int
			s, end = hangulName(text, i, e)
			if end > 0 {
				out = append(out, Entity{Type: TypePerson, Start: s, End: end, Score: nameStrongFloor + nameContextBoost})
			}
		case scThai:
			out = appendThai(text, i, e, out)
		default: // Arabic, Hebrew, Devanagari: no capitals, so only a cue before the name
			if end = uncasedName(text, i, c); end > 0 {
				out = append(out, Entity{Type: TypePerson, Start: i, End: end, Score: nameStrongFloor + nameContextBoost})
			}
		}
		if end > e {
			i = end
		} else {
			i = e
		}
	}
	return shapeNames(text, runNames(text, out)) // scriptshape.go
}

// ---- cues before a name ----

type cueKind uint8

const (
	cueNone cueKind = iota
	cueTitle
	cueIntro
	cueLabel
	cueList
)

var scriptCues = map[scriptClass]map[string]cueKind{
	scCyrillic: {
		"меня зовут": cueIntro, "зовут": cueIntro, "мене звати": cueIntro, "звати": cueIntro,
		"в лице": cueIntro, "уважаемый": cueTitle, "уважаемая": cueTitle, "дорогой": cueTitle,
		"дорогая": cueTitle, "шановний": cueTitle, "шановна": cueTitle, "г-н": cueTitle,
		"г-жа": cueTitle, "г-на": cueTitle, "г-ну": cueTitle, "г-ном": cueTitle, "г-жи": cueTitle,
		"г-же": cueTitle, "г-жой": cueTitle, "господин": cueTitle, "госпожа": cueTitle,
		"господина": cueTitle, "господину": cueTitle, "пан": cueTitle, "пані": cueTitle,
		"пане": cueTitle, "д-р": cueTitle, "доктор": cueTitle, "проф.": cueTitle,
		"имя": cueLabel, "фамилия": cueLabel, "фио": cueLabel, "ф.и.о.": cueLabel,
		"ім'я": cueLabel, "ім’я": cueLabel, "прізвище": cueLabel, "піб": cueLabel, "име": cueLabel,
		"ответственный": cueLabel, "ответственная": cueLabel, "відповідальний": cueLabel,
		"контакт": cueLabel, "контактное лицо": cueLabel, "контактна особа": cueLabel,
		"клиент": cueLabel, "клієнт": cueLabel, "пациент": cueLabel, "пациентка": cueLabel,
		"пацієнт": cueLabel, "заявитель": cueLabel, "заявник": cueLabel, "получатель": cueLabel,
		"отримувач": cueLabel, "отправитель": cueLabel, "відправник": cueLabel,
		"арендатор": cueLabel, "арендодатель": cueLabel, "орендар": cueLabel,
		"орендодавець": cueLabel, "наниматель": cueLabel, "сотрудник": cueLabel,
		"працівник": cueLabel, "менеджер": cueLabel, "секретарь": cueLabel, "секретар": cueLabel,
		"председатель": cueLabel, "голова": cueLabel, "докладчик": cueLabel, "исполнитель": cueLabel,
		"виконавець": cueLabel, "автор": cueLabel, "покупатель": cueLabel, "продавец": cueLabel,
		"подписал": cueLabel, "подписано": cueLabel, "составил": cueLabel, "водитель": cueLabel,
		"присутствовали": cueList, "присутствуют": cueList, "участники": cueList,
		"присутні": cueList, "учасники": cueList, "отсутствовали": cueList,
	},
	scGreek: {
		"κ.": cueTitle, "κ": cueTitle, "κα": cueTitle, "κα.": cueTitle, "κος": cueTitle,
		"κύριος": cueTitle, "κύριε": cueTitle, "κυρία": cueTitle, "κυρίου": cueTitle,
		"κυρίας": cueTitle, "αγαπητέ": cueTitle, "αγαπητή": cueTitle, "δρ": cueTitle,
		"δρ.": cueTitle, "ονομάζομαι": cueIntro, "λέγομαι": cueIntro, "με λένε": cueIntro,
		"όνομα": cueLabel, "επώνυμο": cueLabel, "ονοματεπώνυμο": cueLabel, "πελάτης": cueLabel,
		"ασθενής": cueLabel, "υπεύθυνος": cueLabel, "υπεύθυνη": cueLabel, "επαφή": cueLabel,
		"παραλήπτης": cueLabel, "αποστολέας": cueLabel, "ενοικιαστής": cueLabel,
		"εκμισθωτής": cueLabel, "αιτών": cueLabel, "αιτούσα": cueLabel, "παρόντες": cueList,
	},
	scArabic: {
		"السيد": cueTitle, "السيدة": cueTitle, "للسيد": cueTitle, "للسيدة": cueTitle,
		"والسيد": cueTitle, "والسيدة": cueTitle, "الأستاذ": cueTitle, "الأستاذة": cueTitle,
		"الاستاذ": cueTitle, "الاستاذة": cueTitle, "الدكتور": cueTitle, "الدكتورة": cueTitle,
		"د.": cueTitle, "المهندس": cueTitle, "المهندسة": cueTitle, "الشيخ": cueTitle,
		"عزيزي": cueTitle, "عزيزتي": cueTitle, "اسمي": cueIntro, "اسمى": cueIntro, "معك": cueIntro,
		"الاسم": cueLabel, "اسم": cueLabel, "الاسم الكامل": cueLabel, "اسم العميل": cueLabel,
		"العميل": cueLabel, "المريض": cueLabel, "المريضة": cueLabel, "المستأجر": cueLabel,
		"المؤجر": cueLabel, "الموظف": cueLabel, "اسم الموظف": cueLabel, "مقدم الطلب": cueLabel,
		"المسؤول": cueLabel, "المستلم": cueLabel, "المرسل": cueLabel, "المؤمن له": cueLabel,
		// Persian and Urdu name labels (scriptshape.go's area)
		"نام": cueLabel, "نام خانوادگی": cueLabel, "نام و نام خانوادگی": cueLabel, "نام پدر": cueLabel,
		"ولدیت": cueLabel, "والد کا نام": cueLabel, "درخواست گزار": cueLabel, "نام بیمار": cueLabel,
		"گیرنده": cueLabel, "فرستنده": cueLabel, "متقاضی": cueLabel, "بیمار": cueLabel,
	},
	scHebrew: {
		"מר": cueTitle, "מרת": cueTitle, "גב'": cueTitle, "גב׳": cueTitle, "גברת": cueTitle,
		"ד\"ר": cueTitle, "ד״ר": cueTitle, "פרופ'": cueTitle, "פרופ׳": cueTitle, "עו\"ד": cueTitle,
		"עו״ד": cueTitle, "לכבוד": cueTitle, "שמי": cueIntro, "קוראים לי": cueIntro,
		"שם": cueLabel, "שם מלא": cueLabel, "שם העובד": cueLabel, "שם העובדת": cueLabel,
		"שם הלקוח": cueLabel, "שם פרטי": cueLabel, "שם משפחה": cueLabel, "לקוח": cueLabel,
		"לקוחה": cueLabel, "מטופל": cueLabel, "מטופלת": cueLabel, "שוכר": cueLabel,
		"משכיר": cueLabel, "איש קשר": cueLabel, "אחראי": cueLabel, "עובד": cueLabel,
	},
	scDevanagari: {
		"मेरा नाम": cueIntro, "मेरा नाम है": cueIntro, "श्री": cueTitle, "श्रीमती": cueTitle,
		"सुश्री": cueTitle, "स्व.": cueTitle, "स्वर्गीय": cueTitle, "कुमारी": cueTitle, "डॉ.": cueTitle, "डॉ": cueTitle, "डॉक्टर": cueTitle,
		"प्रिय": cueTitle, "आदरणीय": cueTitle, "नाम": cueLabel, "पूरा नाम": cueLabel,
		"ग्राहक": cueLabel, "मरीज": cueLabel, "मरीज़": cueLabel, "आवेदक": cueLabel,
	},
	scHangul: {
		"저는": cueIntro, "제 이름은": cueIntro, "이름은": cueIntro, "이름": cueLabel,
		"성명": cueLabel, "담당자": cueLabel, "예약자": cueLabel, "고객명": cueLabel,
		"환자": cueLabel, "환자명": cueLabel, "보호자": cueLabel, "작성자": cueLabel,
		"신청인": cueLabel, "수신": cueLabel, "발신": cueLabel, "참석자": cueLabel,
	},
}

var cueMaxLen = func() int {
	m := 0
	for _, cs := range scriptCues {
		for c := range cs {
			m = max(m, len(c))
		}
	}
	return m
}()

// cueBefore returns the kind of cue that ends just before s (after spaces; a label needs ':',
// '：', '—', '–' or '-' between), for names in script c.
func cueBefore(text string, s int, c scriptClass) cueKind {
	j := skipSpacesBack(text, s)
	label := false
	for _, sep := range [...]string{":", "：", "—", "–", "-"} {
		if strings.HasSuffix(text[:j], sep) {
			j = skipSpacesBack(text, j-len(sep))
			label = true
			break
		}
	}
	if j == s && s > 0 && !label { // a cue is a word of its own
		return cueNone
	}
	cs := scriptCues[c]
	for k := max(0, j-cueMaxLen); k < j; k++ {
		if !utf8.RuneStart(text[k]) || !cueBoundary(text, k) {
			continue
		}
		if kind, ok := lookupFold(cs, text[k:j]); ok {
			if kind == cueLabel || kind == cueList {
				if label {
					return kind
				}
				continue
			}
			return kind
		}
	}
	return cueNone
}

func skipSpacesBack(text string, j int) int {
	for j > 0 {
		if text[j-1] == ' ' || text[j-1] == '\t' {
			j--
			continue
		}
		if strings.HasSuffix(text[:j], "\u3000") {
			j -= 3
			continue
		}
		break
	}
	return j
}

// cueBoundary reports whether a cue may start at k: not inside a word.
func cueBoundary(text string, k int) bool {
	if k == 0 {
		return true
	}
	r, _ := utf8.DecodeLastRuneInString(text[:k])
	return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.Is(unicode.Mn, r) && !unicode.Is(unicode.Mc, r)
}

// foldedIn reports whether w, its case folded, is in m; it allocates nothing.
func foldedIn(m map[string]bool, w string) bool {
	var buf [64]byte
	b := buf[:0]
	for _, r := range w {
		r = unicode.ToLower(r)
		if r == utf8.RuneError || len(b)+utf8.RuneLen(r) > len(buf) {
			return false
		}
		b = utf8.AppendRune(b, r)
	}
	return m[string(b)]
}

// lookupFold looks w up in m, folding the case of Cyrillic and Greek letters.
func lookupFold(m map[string]cueKind, w string) (cueKind, bool) {
	if k, ok := m[w]; ok {
		return k, true
	}
	var buf [64]byte
	b := buf[:0]
	for _, r := range w {
		if r == utf8.RuneError {
			return 0, false
		}
		r = unicode.ToLower(r)
		if len(b)+utf8.RuneLen(r) > len(buf) {
			return 0, false
		}
		b = utf8.AppendRune(b, r)
	}
	k, ok := m[string(b)]
	return k, ok
}

// closingAbove reports whether the line before the one starting at ls is a closing formula
// ("С уважением,", "Με εκτίμηση,").
func closingAbove(text string, ls int) bool {
	if ls < 2 || text[ls-1] != '\n' {
		return false
	}
	pe := ls - 1
	ps := strings.LastIndexByte(text[:pe], '\n') + 1
	if pe-ps > 64 {
		return false
	}
	line := strings.TrimRight(strings.TrimSpace(text[ps:pe]), ",!.")
	for _, c := range scriptClosings {
		if strings.EqualFold(line, c) {
			return true
		}
	}
	return false
}

var scriptClosings = []string{"с уважением", "с наилучшими пожеланиями", "всего доброго",
	"спасибо", "з повагою", "дякую", "με εκτίμηση", "με φιλικούς χαιρετισμούς", "ευχαριστώ",
	"مع التحية", "مع خالص التحية", "وتفضلوا بقبول فائق الاحترام", "בברכה", "תודה", "धन्यवाद",
	"सादर", "감사합니다", "드림"}

// ---- Cyrillic and Greek ----

func capitalAt(text string, i int) bool {
	r, _ := utf8.DecodeRuneInString(text[i:])
	return unicode.IsUpper(r)
}

// casedWord reports whether text[s:e] is a capitalised word (not all capitals, unless one
// letter).
func casedWord(text string, s, e int) bool {
	if s >= e || !capitalAt(text, s) {
		return false
	}
	_, n := utf8.DecodeRuneInString(text[s:])
	if s+n == e {
		return false // one letter: an article ("Η"), a preposition ("В")
	}
	for _, r := range text[s+n : e] {
		if unicode.IsUpper(r) {
			return false
		}
	}
	return true
}

// initialAt returns the end of an initial at i ("А.", "А.В.", "Е. П." counts as two).
func initialAt(text string, i int, c scriptClass) int {
	k, n := classAt(text, i)
	if k != c || !capitalAt(text, i) || i+n >= len(text) || text[i+n] != '.' {
		return -1
	}
	if k2, _ := classAt(text, i+n+1); k2 == c {
		if initialAt(text, i+n+1, c) < 0 {
			return -1 // "Т.е" is no initial
		}
	}
	return i + n + 1
}

// casedRun returns the run of up to max capitalised words and initials of script c starting at
// s (a word ending at e), joined by single spaces: its end and number of words.
func casedRun(text string, s, e int, c scriptClass, maxWords int) (int, int) {
	if ie := initialAt(text, s, c); ie > 0 {
		e = ie
	} else if !casedWord(text, s, e) {
		return 0, -1
	}
	n := 1
	for n < maxWords+2 {
		j := e
		if j < len(text) && text[j] == ' ' {
			j++
		}
		if ie := initialAt(text, j, c); ie > 0 {
			e = ie
			continue // initials do not count as words
		}
		if j == e || j >= len(text) {
			break
		}
		if k, _ := classAt(text, j); k != c {
			break
		}
		we := scriptWordEnd(text, j, c)
		if !casedWord(text, j, we) || n == maxWords {
			break
		}
		e = we
		n++
	}
	return n, e
}

// casedName finds a name starting at the word text[s:e] (Cyrillic or Greek): after a cue, or a
// run with a patronymic or initials.
func casedName(text string, s, e int, c scriptClass) (int, int) {
	if initialAt(text, s, c) < 0 && !casedWord(text, s, e) {
		return 0, -1
	}
	if cueBefore(text, s, c) != cueNone || closingAbove(text, s) || dashSignature(text, s) {
		if foldedIn(casedRoles, text[s:e]) {
			return 0, -1 // "Уважаемый Клиент", "Исполнитель: Компания Альфа"
		}
		_, end := casedRun(text, s, e, c, 3)
		return s, end
	}
	// Shapes: Surname Given Patronymic, Given Patronymic [Surname], Surname I. O., I. O. Surname.
	var ws [4][2]int
	n := 0
	for j, we := s, e; n < 4; {
		if ie := initialAt(text, j, c); ie > 0 {
			ws[n] = [2]int{j, ie}
			n++
			j = ie
		} else if casedWord(text, j, we) {
			ws[n] = [2]int{j, we}
			n++
			j = we
		} else {
			break
		}
		if j < len(text) && text[j] == ' ' {
			j++
		} else if text[j-1] != '.' { // "А.В." has no space between initials
			break
		}
		if k, _ := classAt(text, j); k != c {
			break
		}
		we = scriptWordEnd(text, j, c)
	}
	isInit := func(i int) bool { return text[ws[i][1]-1] == '.' }
	for p := 0; p < n; p++ {
		if isInit(p) || !patronymic(text[ws[p][0]:ws[p][1]]) {
			continue
		}
		// the word starting at s must be the given name (p == 1) or a family name before it
		// (p == 2)
		if p == 1 && !isInit(0) || p == 2 && !isInit(0) && !isInit(1) && surnameShape(text[ws[0][0]:ws[0][1]]) {
			end := ws[p][1]
			if p+1 < n && !isInit(p+1) && !patronymic(text[ws[p+1][0]:ws[p+1][1]]) {
				end = ws[p+1][1]
			}
			return s, end
		}
	}
	if n >= 2 && !isInit(0) && isInit(1) && runeCount(text[ws[0][0]:ws[0][1]]) >= 3 { // "Смирнов А. В."
		end := ws[1][1]
		if n >= 3 && isInit(2) {
			end = ws[2][1]
		}
		return s, end
	}
	if c == scCyrillic && n >= 1 && !isInit(0) {
		if end := cyrillicKnownName(text, s, ws[:n]); end > 0 {
			return s, end
		}
	}
	if isInit(0) { // "А. В. Смирнов"
		for p := 1; p < n; p++ {
			if !isInit(p) {
				if runeCount(text[ws[p][0]:ws[p][1]]) >= 3 {
					return s, ws[p][1]
				}
				break
			}
		}
	}
	return 0, -1
}

// casedRoles are Cyrillic and Greek nouns that follow the same cues as names: roles addressed in
// letters and organisations in fields.
var casedRoles = map[string]bool{"клиент": true, "покупатель": true, "пользователь": true,
	"коллега": true, "коллеги": true, "партнёр": true, "партнер": true, "абонент": true,
	"заказчик": true, "директор": true, "пациент": true, "компания": true, "служба": true,
	"отдел": true, "фирма": true, "банк": true, "магазин": true, "завод": true, "группа": true,
	"центр": true, "управление": true, "министерство": true, "департамент": true, "общество": true,
	"корпорация": true, "агентство": true, "фонд": true, "администрация": true, "товарищество": true,
	"клієнт": true, "користувач": true, "компанія": true, "служба підтримки": true, "відділ": true,
	"πελάτη": true, "πελάτης": true, "συνάδελφε": true, "εταιρεία": true, "τμήμα": true,
	"υπηρεσία": true}

// dashSignature reports a name after a dash that ends a line ("— Игорь К."), the signature of a
// review or a quotation.
func dashSignature(text string, s int) bool {
	j := skipSpacesBack(text, s)
	if j == s || !(strings.HasSuffix(text[:j], "—") || strings.HasSuffix(text[:j], "–")) {
		return false
	}
	// after the end of a sentence on the same line, not a dialogue line ("— Привет")
	k := skipSpacesBack(text, j-3)
	if k == 0 || !strings.ContainsAny(text[k-1:k], ".!?)\"") && !strings.HasSuffix(text[:k], "»") && !strings.HasSuffix(text[:k], "”") {
		return false
	}
	e := strings.IndexByte(text[s:], '\n')
	if e < 0 {
		e = len(text) - s
	}
	return e <= 40 && strings.Count(text[s:s+e], " ") <= 2
}

func runeCount(s string) int { return utf8.RuneCountInString(s) }

var patronymicEndings = []string{"ович", "овича", "овичу", "овичем", "евич", "евича", "евичу",
	"евичем", "ьич", "ьича", "овна", "овны", "овне", "овну", "овной", "евна", "евны", "евне",
	"евну", "евной", "ична", "ичны", "ичне", "ичну", "ичной", "івна", "івни", "івні", "івну",
	"івною", "ївна", "ївни", "ївні", "ївну", "йович", "йовича", "ійович"}

func patronymic(w string) bool { return endsWithAny(w, 6, patronymicEndings) }

// startsWithAny reports whether s starts with one of the prefixes.
func startsWithAny(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// endsWithAny reports whether w has at least minRunes letters and one of the endings.
func endsWithAny(w string, minRunes int, endings []string) bool {
	if runeCount(w) < minRunes {
		return false
	}
	for _, suf := range endings {
		if strings.HasSuffix(w, suf) {
			return true
		}
	}
	return false
}

var surnameEndings = []string{"ов", "ова", "ев", "ева", "ёв", "ёва", "ин", "ина", "ын", "ына",
	"ский", "ская", "цкий", "цкая", "енко", "ук", "юк", "чук", "ян", "дзе", "швили", "ых", "их",
	"ко", "ич", "ський", "ська", "цький", "цька"}

func surnameShape(w string) bool { return endsWithAny(w, 4, surnameEndings) }

// listCue reports whether the name at s follows a label that introduces a list of people
// ("Присутствовали:").
func listCue(text string, s int, c scriptClass) bool { return cueBefore(text, s, c) == cueList }

// nextListItem returns the start of the next item after a list item ending at e (", ", " и ").
func nextListItem(text string, e int, c scriptClass) int {
	for _, sep := range [...]string{", ", " и ", " та ", " και "} {
		if strings.HasPrefix(text[e:], sep) {
			j := e + len(sep)
			if k, _ := classAt(text, j); k == c {
				return j
			}
		}
	}
	return -1
}

// ---- Arabic, Hebrew, Devanagari ----

var uncasedStops = map[string]bool{
	// Arabic
	"من": true, "في": true, "إلى": true, "الى": true, "على": true, "عن": true, "مع": true,
	"و": true, "أو": true, "ثم": true, "قد": true, "هو": true, "هي": true, "كان": true,
	"ولد":  true, // Urdu "son of": two names (scriptshape.go)
	"كانت": true, "التي": true, "الذي": true, "هذا": true, "هذه": true, "يوم": true, "عند": true,
	"بعد": true, "قبل": true, "لدى": true, "رقم": true,
	// Hebrew
	"ואני": true, "אני": true, "את": true, "של": true, "על": true, "עם": true, "הוא": true,
	"היא": true, "זה": true, "זו": true, "כי": true, "אבל": true, "גם": true, "רק": true,
	"כבר": true, "מבית": true, "לא": true,
	// Devanagari
	"है": true, "हैं": true, "ने": true, "को": true, "से": true, "का": true, "की": true, "के": true,
	"और": true, "में": true, "पर": true, "जी": true, "था": true, "थी": true, "हूँ": true, "हूं": true,
	"भी": true, "तो": true, "जो": true, "ही": true,
	// roles and organisations after the same cues: "عزيزي العميل", "السيد الرئيس", "לכבוד חברת",
	// "आदरणीय महोदय"
	"العميل": true, "العملاء": true, "المستخدم": true, "الزبون": true, "المشترك": true,
	"الرئيس": true, "المدير": true, "المديرة": true, "الوزير": true, "الوزيرة": true,
	"النائب": true, "السفير": true, "المحافظ": true, "العميد": true, "الرئيسة": true,
	"حضرة": true, "شركة": true, "חברת": true, "משרד": true, "מחלקת": true, "הנהלת": true,
	"ועד": true, "עיריית": true, "לקוח": true, "לקוחה": true, "महोदय": true, "महोदया": true,
	"मित्र": true, "साथी": true, "सर": true, "मैडम": true, "ग्राहक": true,
}

// uncasedName returns the end of a name starting at s in a script without capitals (Arabic,
// Hebrew, Devanagari), or -1: it needs a cue before it and runs over up to three words (two
// after a title) until a function word, punctuation or another script.
func uncasedName(text string, s int, c scriptClass) int {
	kind := cueBefore(text, s, c)
	intro := false
	if kind == cueNone && c == scArabic {
		// "أنا يوسف من عمّان": "I am X from Y"
		j := skipSpacesBack(text, s)
		if j < s && strings.HasSuffix(text[:j], "أنا") && cueBoundary(text, j-len("أنا")) {
			kind, intro = cueIntro, true
		}
	}
	if kind == cueNone {
		return -1
	}
	maxWords := 3
	if kind == cueTitle && c != scDevanagari { // Hindi names after a title are often three words
		maxWords = 2
	}
	end, n := -1, 0
	j := s
	for n < maxWords {
		if k, _ := classAt(text, j); k != c {
			break
		}
		we := scriptWordEnd(text, j, c)
		w := text[j:we]
		if n == 0 && c == scDevanagari && we+1 < len(text) && text[we] == '.' && runeCount(w) <= 3 {
			return -1 // an abbreviated title ("डॉ. नीरज मिश्रा", "स्व. राम अवध"): the name follows it
		}
		if uncasedStops[w] || c == scHebrew && n > 0 && (strings.HasPrefix(w, "ו") || strings.HasPrefix(w, "ה")) && runeCount(w) > 2 {
			break
		}
		if n > 0 && c == scArabic && kind == cueTitle && !strings.HasPrefix(w, "ال") && !uncasedEnds(text, we, c) {
			break // "السيد أحمد يقول": the second word is a family name only as "al-..." or last
		}
		end, n = we, n+1
		if we >= len(text) || text[we] != ' ' {
			break
		}
		j = we + 1
	}
	if intro && (end < 0 || !strings.HasPrefix(text[end:], " من ")) {
		return -1
	}
	return end
}

// uncasedEnds reports whether the name can end at e: punctuation, a line end or a stop word.
func uncasedEnds(text string, e int, c scriptClass) bool {
	if e >= len(text) || text[e] != ' ' {
		return true
	}
	j := e + 1
	if k, _ := classAt(text, j); k != c {
		return true
	}
	return uncasedStops[text[j:scriptWordEnd(text, j, c)]]
}

// ---- Thai ----

var thaiTitles = []string{"นางสาว", "น.ส.", "นาย", "นาง", "ดร.", "คุณ"}

var thaiStops = map[string]bool{"โทร": true, "ที่": true, "และ": true, "ได้": true, "จะ": true,
	"ครับ": true, "ค่ะ": true, "คะ": true, "เบอร์": true, "อีเมล": true}

// thaiName returns the end of the Thai name after a title glued to it ("คุณสมชาย"), or -1.
func thaiName(text string, s, e int) int {
	for _, t := range thaiTitles {
		if !strings.HasPrefix(text[s:], t) || !cueBoundary(text, s) {
			continue
		}
		ns := s + len(t)
		if ns >= e || thaiCompound(t, text[ns:e]) {
			return -1
		}
		if k := runeCount(text[ns:e]); k < 2 || k > 15 || !thaiChunkEnds(text, e) {
			return -1
		}
		end := e
		if t != "คุณ" && e+1 < len(text) && text[e] == ' ' {
			if k, _ := classAt(text, e+1); k == scThai {
				ne := scriptWordEnd(text, e+1, scThai)
				if w := text[e+1 : ne]; !thaiStops[w] && runeCount(w) >= 3 && runeCount(w) <= 15 && thaiChunkEnds(text, ne) {
					end = ne
				}
			}
		}
		return end
	}
	return -1
}

// thaiCompounds are words that begin with a title's letters: "คุณภาพ" (quality), "นายก" (mayor,
// prime minister), "นางพยาบาล" (nurse), and kinship terms after คุณ.
var thaiCompounds = map[string][]string{
	"คุณ": {"ภาพ", "ค่า", "สมบัติ", "ธรรม", "ประโยชน์", "ลักษณะ", "ครู", "หมอ", "พ่อ", "แม่", "ป้า", "ลุง", "ยาย", "ตา", "ปู่", "ย่า", "น้า", "อา"},
	"นาย": {"ก", "จ้าง", "หน้า", "ทุน", "พล", "อำเภอ", "ทหาร", "ร้อย", "สถานี", "ด่าน", "ประตู", "ช่าง", "ห้าง", "งาน", "ตำรวจ"},
	"นาง": {"พยาบาล", "แบบ", "งาม", "ฟ้า", "เอก", "สนม", "กำนัล", "รำ"},
}

func thaiCompound(title, rest string) bool {
	for _, p := range thaiCompounds[title] {
		if strings.HasPrefix(rest, p) {
			return true
		}
	}
	return false
}

func thaiChunkEnds(text string, e int) bool {
	if e >= len(text) {
		return true
	}
	k, _ := classAt(text, e)
	return k != scThai
}

func appendThai(text string, s, e int, out []Entity) []Entity {
	end := thaiName(text, s, e)
	if end < 0 {
		return out
	}
	for _, t := range thaiTitles {
		if strings.HasPrefix(text[s:], t) {
			return append(out, Entity{Type: TypePerson, Start: s + len(t), End: end, Score: nameStrongFloor + nameContextBoost})
		}
	}
	return out
}

// ---- Korean ----

var koreanSurnames = map[string]bool{}

func init() {
	for _, s := range strings.Fields("김 이 박 최 정 강 조 윤 장 임 한 오 서 신 권 황 안 송 류 유 전 홍 고 문 양 손 배 백 허 남 심 노 하 곽 성 차 주 우 구 민 진 나 지 엄 채 원 천 방 공 현 함 변 염 여 추 도 소 석 선 설 마 길 연 위 표 명 기 반 왕 금 옥 육 인 맹 제 모 탁 국 어 은 편 용 예 경 봉 사 부 황보 남궁 제갈 선우 독고 사공") {
		koreanSurnames[s] = true
	}
	for _, s := range strings.Fields("王 李 张 張 刘 劉 陈 陳 杨 楊 黄 黃 赵 趙 吴 吳 周 徐 孙 孫 马 馬 朱 胡 郭 何 高 林 罗 羅 郑 鄭 梁 谢 謝 宋 唐 许 許 韩 韓 冯 馮 邓 鄧 曹 彭 曾 肖 蕭 田 董 袁 潘 于 蒋 蔣 蔡 余 杜 叶 葉 程 苏 蘇 魏 吕 呂 丁 任 沈 姚 卢 盧 姜 崔 钟 鍾 谭 譚 陆 陸 汪 范 範 金 石 廖 贾 賈 夏 韦 韋 付 傅 方 白 邹 鄒 孟 熊 秦 邱 江 尹 薛 闫 閻 段 雷 侯 龙 龍 史 陶 黎 贺 賀 顾 顧 毛 郝 龚 龔 邵 万 萬 钱 錢 严 嚴 覃 武 戴 莫 孔 向 汤 湯 欧阳 歐陽 司马 司馬 诸葛 諸葛 上官 东方 東方") {
		hanSurnames[s] = true
	}
}

// koreanTitles follow a name, glued or as the next word: "김서연님", "박지훈 팀장".
var koreanTitles = strings.Fields("고객님 선생님 교수님 팀장님 과장님 부장님 대리님 사장님 대표님 원장님 실장님 이사님 차장님 " +
	"님 씨 선생 교수 팀장 과장 부장 대리 사원 주임 차장 실장 이사 대표 사장 원장 회장 변호사 기자 작가 감독 선수")

var koreanParticles = strings.Fields("께서 에게 한테 이랑 께 이 가 은 는 을 를 의 과 와 도 만 랑")

// koreanRoles are nouns that take the same honorifics as names ("고객님", "선생님").
var koreanRoles = map[string]bool{"고객": true, "선생": true, "교수": true, "사장": true,
	"부장": true, "과장": true, "차장": true, "대표": true, "팀장": true, "실장": true, "이사": true,
	"원장": true, "회장": true, "기사": true, "손님": true, "여러분": true, "주인": true,
	"사모": true, "선배": true, "후배": true, "동생": true, "담당자": true, "관리자": true,
	"상담원": true, "간호사": true, "의사": true, "어머": true, "아버": true, "부모": true,
	"사용자": true, "전무": true, "전문가": true, "방문자": true, "신청자": true, "구매자": true,
	"도우미": true, "강사": true, "안내원": true, "조교": true, "지도교수": true, "배송기사": true,
	"마음": true, "주민": true, "이용자": true, "수강생": true, "학부모": true, "보호자": true}

func koreanNameWord(w string) bool {
	n := runeCount(w)
	if n < 2 || n > 4 || koreanRoles[w] {
		return false
	}
	_, k := utf8.DecodeRuneInString(w)
	return koreanSurnames[w[:k]] || n >= 3 && 2*k <= len(w) && koreanSurnames[w[:2*k]] // "랩00": not two Hangul first
}

func trimKoreanSuffix(w string, list []string) (string, bool) {
	for _, p := range list {
		if len(w) > len(p) && strings.HasSuffix(w, p) {
			return w[:len(w)-len(p)], true
		}
	}
	return w, false
}

// hangulName finds a Korean name in the word text[s:e].
func hangulName(text string, s, e int) (int, int) {
	w := text[s:e]
	// a title glued to the name, maybe with a particle: "박혜진님께"
	for _, cand := range [2]string{w, func() string { v, _ := trimKoreanSuffix(w, koreanParticles); return v }()} {
		if n, ok := trimKoreanSuffix(cand, koreanTitles); ok && koreanNameWord(n) {
			return s, s + len(n)
		}
	}
	if koreanNameWord(w) {
		// a title as the next word: "박지훈 팀장", "이민준 고객님"
		if e+1 < len(text) && text[e] == ' ' {
			if k, _ := classAt(text, e+1); k == scHangul {
				nw := text[e+1 : scriptWordEnd(text, e+1, scHangul)]
				v, _ := trimKoreanSuffix(nw, koreanParticles)
				for _, t := range koreanTitles {
					if nw == t || v == t {
						return s, e
					}
				}
			}
		}
		if cueBefore(text, s, scHangul) == cueLabel {
			return s, e
		}
	}
	// "저는 이민준입니다", "제 이름은 이민준이에요"
	if cueBefore(text, s, scHangul) == cueIntro {
		for _, cop := range [...]string{"입니다", "이에요", "예요", "이라고", "라고", "이고", "이며"} {
			if n := strings.TrimSuffix(w, cop); len(n) < len(w) && koreanNameWord(n) {
				return s, s + len(n)
			}
		}
	}
	return 0, -1
}

// ---- Chinese and Japanese ----

var hanSurnames = map[string]bool{}

// cjkTitles follow a name. Japanese ones (kana, 様, 氏, 殿) need two characters of name before
// them; Chinese ones a family name of the closed class.
var cjkTitles = []struct {
	t        string
	japanese bool
}{
	{"先生", false}, {"女士", false}, {"小姐", false}, {"老师", false}, {"老師", false},
	{"总经理", false}, {"經理", false}, {"经理", false}, {"医生", false}, {"醫生", false},
	{"教授", false}, {"律师", false}, {"律師", false}, {"主任", false}, {"同学", false},
	{"同學", false}, {"太太", false},
	{"同志", false}, {"牧師", false}, {"牧师", false}, {"姊妹", false}, {"弟兄", false},
	{"さん", true}, {"様", true}, {"さま", true}, {"氏", true}, {"くん", true}, {"ちゃん", true},
	{"殿", true}, {"先輩", true},
}

// cjkRoles are nouns that take a title like a name ("患者様", "担当者さん", "ユーザー様").
var cjkRoles = map[string]bool{"患者": true, "担当": true, "担当者": true, "会員": true,
	"利用者": true, "店員": true, "運転手": true, "大家": true, "社員": true, "生徒": true,
	"学生": true, "先輩": true, "後輩": true, "看護師": true, "医者": true, "職員": true,
	"旦那": true, "親御": true, "奥": true, "皆": true, "客": true, "神": true, "王": true,
	"お客": true, "各位": true, "仕": true, "同": true, "模": true, "多": true, "異": true,
	"ユーザー": true, "メンバー": true, "ゲスト": true, "オーナー": true, "スタッフ": true,
	"ドライバー": true, "ファン": true, "パパ": true, "ママ": true, "ファミリー": true,
	"お母": true, "お父": true, "お兄": true, "お姉": true, "赤": true, "子供": true,
	"取引先": true, "店長": true, "社長": true, "部長": true, "課長": true, "先生": true,
	"監督": true, "駅員": true, "王子": true, "王女": true, "姫": true, "ワン": true, "ネコ": true,
	"苦労": true, "世話": true, "馳走": true, "疲れ": true}

// cjkOrgEndings end the names of organisations, shops and departments, which take 様 and さん.
var cjkOrgEndings = []string{"会社", "社", "店", "屋", "所", "院", "部", "課", "局", "協会", "大学", "銀行",
	"学校", "病院", "公司", "集团", "中心", "银行", "医院"}

// cjkLabels are field labels before a name ("姓名：", "氏名：", "担当者："); japanese ones
// accept any short name, Chinese ones a family name of the closed class.
var cjkLabels = map[string]bool{"姓名": false, "联系人": false, "聯絡人": false, "联络人": false,
	"客户": false, "客戶": false, "收件人": false, "寄件人": false, "负责人": false, "負責人": false,
	"经办人": false, "申请人": false, "病人": false, "患者": false, "联系人姓名": false,
	"氏名": true, "名前": true, "お名前": true, "担当者": true, "担当": true, "投稿者": true,
	"申請者": true, "予約者": true, "代表者": true, "患者氏名": true, "ご担当者": true}

// cjkBoundary are characters that often come just before a Chinese name ("请李娜", "和王明").
const cjkBoundary = "的给和与跟向对是请由让被在找叫问把将致及或为于同"

// cjkNames finds names in the run of Han and kana characters text[s:e].
func cjkNames(text string, s, e int, out []Entity) []Entity {
	emitted := -1
	emit := func(a, b int) {
		if a >= b || a < emitted {
			return
		}
		out = append(out, Entity{Type: TypePerson, Start: a, End: b, Score: nameStrongFloor + nameContextBoost})
		emitted = b
	}
	// a label or introduction before the run
	if ns, ne, ok := cjkCued(text, s, e); ok {
		emit(ns, ne)
	}
	for i := s; i < e; {
		_, n := utf8.DecodeRuneInString(text[i:])
		for _, t := range cjkTitles {
			if !strings.HasPrefix(text[i:], t.t) || t.t == "氏" && strings.HasPrefix(text[i+len(t.t):], "名") {
				continue
			}
			a, b := cjkBeforeTitle(text, s, i, t.japanese)
			if b > 0 && a >= emitted {
				emit(a, b)
			}
			break
		}
		i += n
	}
	// "と申します": a Japanese self-introduction
	if k := strings.Index(text[s:e], "と申します"); k > 0 {
		j := s + k
		a := j
		for a > s {
			c, st := classBefore(text, a)
			if c != scHan && c != scKana || c == scKana && !isKatakana(text, st) {
				break // a hiragana particle ends the name: "営業の田中と申します"
			}
			a = st
		}
		if m := runeCount(text[a:j]); m >= 2 && m <= 6 {
			emit(a, j)
		}
	}
	return out
}

// cjkCued returns a name right after a label ("姓名：王建国") or an introduction ("我叫张伟")
// at the start of the run text[s:e], or within it for introductions.
func cjkCued(text string, s, e int) (int, int, bool) {
	// label: the run before ':' or '：' just before s ends with a label word
	j := skipSpacesBack(text, s)
	sep := ""
	for _, x := range [...]string{"：", ":"} {
		if strings.HasSuffix(text[:j], x) {
			sep = x
		}
	}
	if sep != "" {
		le := j - len(sep)
		for lb := le; lb > 0 && le-lb <= 15; {
			c, st := classBefore(text, lb)
			if c != scHan && c != scKana {
				break
			}
			lb = st
			if japanese, ok := cjkLabels[text[lb:le]]; ok {
				ne := cjkValueEnd(text, s, e)
				if ne > e && (!japanese || fieldWordAt(text, e+1)) {
					ne = e // a Chinese name has no space ("会员：孙建华 手机"); "担当: 高橋 直通 090-..."
				}
				if ne < 0 {
					return 0, 0, false
				}
				m := runeCount(text[s:ne])
				if japanese && (m >= 2 && m <= 8 || m == 1 && jpOneKanjiSurnames[text[s:ne]]) || !japanese && m >= 2 && m <= 4 && hanSurnameAt(text, s) {
					return s, ne, true
				}
				return 0, 0, false
			}
		}
	}
	for _, intro := range [...]string{"我叫", "我是", "名叫", "私は"} {
		k := strings.Index(text[s:e], intro)
		if k < 0 {
			continue
		}
		ns := s + k + len(intro)
		if intro == "我是" || intro == "私は" {
			continue // too often "I am a student": only the forms that name
		}
		if ns >= e || !hanSurnameAt(text, ns) {
			continue
		}
		ne := ns
		for m := 0; m < 3 && ne < e; m++ {
			c, n := classAt(text, ne)
			if c != scHan {
				break
			}
			ne += n
		}
		if runeCount(text[ns:ne]) >= 2 {
			return ns, ne, true
		}
	}
	return 0, 0, false
}

// cjkValueEnd returns the end of a field value starting at s: Han or kana, with one space
// between family and given name, a title at its end left out.
func cjkValueEnd(text string, s, e int) int {
	end := e
	// one space inside ("中村 健太"), then the value ends
	if end+1 < len(text) && text[end] == ' ' {
		if c, _ := classAt(text, end+1); c == scHan || c == scKana {
			ne := end + 1
			for ne < len(text) {
				c, n := classAt(text, ne)
				if c != scHan && c != scKana {
					break
				}
				ne += n
			}
			end = ne
		}
	}
	for _, t := range cjkTitles {
		if strings.HasSuffix(text[s:end], t.t) {
			end -= len(t.t)
			break
		}
	}
	if end <= s {
		return -1
	}
	return end
}

func hanSurnameAt(text string, i int) bool {
	_, n := utf8.DecodeRuneInString(text[i:])
	if hanSurnames[text[i:i+n]] {
		return true
	}
	if i+n < len(text) {
		_, m := utf8.DecodeRuneInString(text[i+n:])
		return hanSurnames[text[i:i+n+m]]
	}
	return false
}

// cjkBeforeTitle returns the name ending just before the title at t, within the run starting
// at rs.
func cjkBeforeTitle(text string, rs, t int, japanese bool) (int, int) {
	end := t
	j := t
	// the characters of the same kind (Han, or katakana) before the title
	c, st := classBefore(text, j)
	if c != scHan && c != scKana {
		return 0, -1
	}
	kata := c == scKana && isKatakana(text, st)
	if c == scKana && !kata {
		return 0, -1 // hiragana before a title is a particle or a word
	}
	n := 0
	for j > rs && n < 10 {
		c2, st2 := classBefore(text, j)
		if c2 != c || c2 == scKana && !isKatakana(text, st2) {
			break
		}
		j, n = st2, n+1
	}
	name := text[j:end]
	if r, _ := utf8.DecodeLastRuneInString(text[:j]); r == 'お' || r == 'ご' || strings.HasPrefix(name, "御") {
		return 0, -1 // an honorific prefix makes a noun polite, never a name: "ご苦労様", "お得意様"
	}
	for _, suf := range cjkOrgEndings {
		if strings.HasSuffix(name, suf) {
			return 0, -1 // "ABC株式会社様", "八百屋さん"
		}
	}
	delimited := j == rs || !sameKind(text, j)
	if kata {
		if !japanese || cjkRoles[name] || n < 2 {
			return 0, -1
		}
		return j, end
	}
	if delimited && n <= 4 {
		if japanese {
			if cjkRoles[name] {
				return 0, -1
			}
			if n >= 2 {
				return j, end
			}
			return 0, -1
		}
		if hanSurnameAt(text, j) {
			return j, end
		}
	}
	if japanese {
		return 0, -1
	}
	// Chinese without a delimiter: a family name after a boundary character, longest first
	best := -1
	for k := 3; k >= 1; k-- {
		a := end
		ok := true
		for m := 0; m < k; m++ {
			c2, st2 := classBefore(text, a)
			if c2 != scHan || st2 < j {
				ok = false
				break
			}
			a = st2
		}
		if !ok || !hanSurnameAt(text, a) {
			continue
		}
		if a == rs {
			return a, end
		}
		if r, _ := utf8.DecodeLastRuneInString(text[:a]); strings.ContainsRune(cjkBoundary, r) {
			return a, end
		}
		if best < 0 && k >= 2 { // a family name alone needs a boundary: "担任の先生" is no 任
			best = a
		}
	}
	if best >= 0 && !cjkRoles[text[best:end]] {
		return best, end
	}
	return 0, -1
}

func isKatakana(text string, i int) bool {
	r, _ := utf8.DecodeRuneInString(text[i:])
	return r >= 0x30A1 && r <= 0x30FF
}

// sameKind reports whether the character before j is a Han character (the run goes on).
func sameKind(text string, j int) bool {
	c, _ := classBefore(text, j)
	return c == scHan
}

// hasScriptRune reports whether w holds a letter of a script scriptNames reads.
func hasScriptRune(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] >= 0xCD {
			if c, _ := classAt(w, i); c != scNone {
				return true
			}
			if r, _ := utf8.DecodeRuneInString(w[i:]); shapeRune(r) {
				return true // Georgian, Armenian, Ethiopic (scriptshape.go)
			}
		}
	}
	return false
}

// scriptInert reports whether no name of scriptNames can start in the word text[t:u] whatever
// follows text: the two words after it must be complete, and scriptNames on a window around
// them must find no name starting in the word.
func scriptInert(text string, t, u int) bool {
	for k := t; k < u; {
		if addrScriptStart(text[k:u]) {
			return false
		}
		_, n := utf8.DecodeRuneInString(text[k:])
		k += n
	}
	j := u
	ahead := 2
	if k, _ := shapeAt(text, t); k == shArabic || k == shDevanagari {
		ahead = 5 // scriptshape.go's items and particles read up to five words ahead
	}
	for n := 0; n < ahead; n++ {
		for j < len(text) && isSpaceByte(text[j]) {
			j++
		}
		for j < len(text) && !isSpaceByte(text[j]) {
			j++
		}
		if j >= len(text) {
			return false
		}
	}
	ws := max(0, t-160)
	for ws > 0 && !utf8.RuneStart(text[ws]) {
		ws--
	}
	var buf [16]Entity
	for _, x := range scriptNames(text[ws:j], buf[:0]) {
		if x.Start+ws >= t && x.Start+ws < u {
			return false
		}
	}
	return true
}

// cyrillicKnownName returns the end of a name starting at the first of the capitalised words
// ws when the gazetteer knows it in transliteration: a given name followed by a family name
// ("Дмитрий Орлов"), a family name followed by a given name ("Орлов Дмитрий"), or a given name
// alone after a lower-case word of its sentence ("курьер Алексей привёз"): Russian, Ukrainian
// and Belarusian capitalise only proper nouns there, and the gazetteer tells a person's given
// name from a place.
func cyrillicKnownName(text string, s int, ws [][2]int) int {
	for _, w := range ws {
		if text[w[1]-1] == '.' {
			return -1 // initials: casedName's own rule
		}
	}
	f0 := cyrillicFlags(text[ws[0][0]:ws[0][1]])
	given0 := f0&gzFirst != 0 && f0&(gzAmbiguous|gzNotName) == 0 || f0 == 0 && cyrillicInflectedGiven(text[ws[0][0]:ws[0][1]])
	if len(ws) >= 2 {
		w1 := text[ws[1][0]:ws[1][1]]
		f1 := cyrillicFlags(w1)
		if given0 && (f1&gzLast != 0 || surnameShape(w1) || patronymic(w1)) && f1&gzNotName == 0 {
			end := ws[1][1]
			if len(ws) >= 3 {
				if w2 := text[ws[2][0]:ws[2][1]]; cyrillicFlags(w2)&gzLast != 0 || surnameShape(w2) {
					end = ws[2][1]
				}
			}
			return end
		}
		if (f0&gzLast != 0 || surnameShape(text[ws[0][0]:ws[0][1]])) && f0&gzNotName == 0 &&
			f1&gzFirst != 0 && f1&(gzAmbiguous|gzNotName) == 0 {
			return ws[1][1]
		}
	}
	if given0 && len(ws) == 1 {
		// after a lower-case word of the same sentence
		j := s - 1
		if j > 0 && text[j] == ' ' {
			if k, st := classBefore(text, j); k == scCyrillic {
				ps := st
				for {
					k2, st2 := classBefore(text, ps)
					if k2 != scCyrillic {
						break
					}
					ps = st2
				}
				if r, _ := utf8.DecodeRuneInString(text[st:]); unicode.IsLower(r) && !cyrPlaceNouns[text[ps:j]] {
					return ws[0][1]
				}
			}
		}
	}
	return -1
}

// cyrillicInflectedGiven reports whether w is a known given name in an oblique case: its case
// ending replaced by a nominative one is in the gazetteer as a given name and nothing else
// ("Ирины", "Алексею", "Дмитрием").
func cyrillicInflectedGiven(w string) bool {
	for _, end := range [...]string{"ой", "ей", "ою", "ом", "ем", "ём", "ы", "и", "у", "ю", "е", "а", "я"} {
		stem, ok := strings.CutSuffix(w, end)
		if !ok || runeCount(stem) < 3 {
			continue
		}
		for _, nom := range [...]string{"а", "я", "й", "ий", ""} {
			var buf [64]byte
			for v := 0; v < 3; v++ {
				b, ok := translitCyrillic(buf[:0:len(buf)], stem+nom, v)
				if !ok {
					break
				}
				if f := gazetteer[string(b)]; f&gzFirst != 0 && f&(gzAmbiguous|gzNotName|gzLast) == 0 {
					return true
				}
			}
		}
	}
	return false
}

// cyrillicFlags returns the gazetteer flags of a Cyrillic word in its common transliterations
// ("Алексей": aleksey, alexei; "Дмитрий": dmitriy, dmitry).
func cyrillicFlags(w string) uint8 {
	var buf [64]byte
	for v := 0; v < 3; v++ {
		b, ok := translitCyrillic(buf[:0:len(buf)], w, v)
		if !ok {
			return 0
		}
		if f := gazetteer[string(b)]; f != 0 {
			return f
		}
	}
	return 0
}

// cyrPlaceNouns before a capitalised word make it a place, a street or a business named after
// a person ("проспект Мира", "кафе Маша").
var cyrPlaceNouns = map[string]bool{"улица": true, "улице": true, "улицу": true, "проспект": true,
	"проспекте": true, "площадь": true, "площади": true, "переулок": true, "бульвар": true,
	"шоссе": true, "набережная": true, "город": true, "города": true, "городе": true, "село": true,
	"станция": true, "станции": true, "метро": true, "река": true, "реки": true, "озеро": true,
	"компания": true, "компании": true, "завод": true, "кафе": true, "ресторан": true,
	"ресторане": true, "магазин": true, "магазине": true, "гостиница": true, "отель": true,
	"театр": true, "музей": true, "аэропорт": true, "вулиця": true, "вулиці": true, "місто": true,
	"пароход": true, "судно": true, "теплоход": true, "собака": true, "кошка": true, "кот": true,
	"пёс": true, "премия": true, "премии": true, "фонд": true, "имени": true}

var cyrLatin = map[rune]string{
	'а': "a", 'б': "b", 'в': "v", 'г': "g", 'д': "d", 'е': "e", 'ё': "e", 'ж': "zh", 'з': "z",
	'и': "i", 'й': "y", 'к': "k", 'л': "l", 'м': "m", 'н': "n", 'о': "o", 'п': "p", 'р': "r",
	'с': "s", 'т': "t", 'у': "u", 'ф': "f", 'х': "kh", 'ц': "ts", 'ч': "ch", 'ш': "sh",
	'щ': "shch", 'ъ': "", 'ы': "y", 'ь': "", 'э': "e", 'ю': "yu", 'я': "ya", 'і': "i", 'ї': "yi",
	'є': "ye", 'ґ': "g", 'ў': "u",
}

// translitCyrillic appends the lower-case Latin form of w in variant v: 0 the common one
// (BGN-like), 1 with й as i, х as h and кс as x, 2 with a final -ий as -y. ok is false for a
// letter outside the table or when buf is full.
func translitCyrillic(buf []byte, w string, v int) ([]byte, bool) {
	prev := rune(0)
	for i, r := range w {
		r = unicode.ToLower(r)
		if r == '-' || r == '\'' || r == '’' {
			continue
		}
		lat, ok := cyrLatin[r]
		if !ok {
			return buf, false
		}
		switch {
		case v == 1 && r == 'й':
			lat = "i"
		case v == 1 && r == 'х':
			lat = "h"
		case v == 1 && r == 'с' && prev == 'к':
			buf, lat = buf[:len(buf)-1], "x"
		case v == 2 && r == 'и' && (w[i:] == "ий" || w[i:] == "ИЙ"):
			lat = ""
		}
		if len(buf)+len(lat) > cap(buf) {
			return buf, false
		}
		buf = append(buf, lat...)
		prev = r
	}
	return buf, len(buf) > 0
}
