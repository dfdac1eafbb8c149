package detect

import "strings"

// Titles, honorifics and kinship terms of address of many languages (detect13, study sets 12
// and 19). Each is a closed class of its language and is the evidence: the capitalised words
// after it are a person, and the title is outside the span ("Kagawad Rolando Pascual", "Sis.
// Marcia Grant-Lindo", "Puan Rosnah Ismail"). Three kinds:
//
//   - moreTitles: words that are titles and not given names; they join nameTitles and act
//     exactly like "Mr" or "Dr" (chained: "Det Sgt Leanne Whitfield").
//   - kinTitles: kinship terms of address that are titles before a name in their language but
//     are also given names or words elsewhere (Tagalog "Tito", "Lola", "Ate"; Akan "Nana";
//     Spanish and Portuguese "don", "seu"). One counts as a title only before a single name
//     word that ends the run ("Lola Pacing reminds", "Tito Rodel at"), and, when the gazetteer
//     knows it as a given name, only when that word is no known family name ("Lola Montez"
//     stays a full name).
//   - postTitles: honorifics written after the name, as a word (Turkish "Kemal Bey", "Ayşe
//     Hanım", Urdu "Sahib") or a suffix (Japanese "Watanabe-san", Hindi "Sharma-ji", Korean
//     "Min-ji-ssi"): they end the span and count as a title.
var moreTitles = []string{
	// Christian congregations: "Sis. Marcia", "Bro. Everton", "Deacon Reid", "Msgr. Liam"
	"bro", "sis", "cllrs", "messrs", "deacon", "deaconess", "evang", "evangelist", "msgr", "monsignor", "apostle",
	"prophet", "prophetess", "pfarrer", "pfarrerin", "ks", "ds", "dominee", "padre",
	// Police, courts, military (British abbreviations): "Det Sgt", "Insp.", "Supt"
	"det", "insp", "inspector", "supt", "superintendent", "sheriff", "cpl", "corporal",
	// Nigeria: "Alhaji Musa", "Engr. Chukwudi", "Barr. Ifeoma"
	"alhaji", "alhaja", "alh", "engr", "barr", "mallam",
	// Ghana, Kenya, Tanzania: "Opanin Yaw", "Maame Akosua", "Mzee Kilonzo", "Bw. Peter"
	"opanin", "maame", "togbe", "mzee", "bw", "bwana",
	// Malay and Indonesian: "Encik Zulkifli", "Puan Rosnah", "Haji Abdul", "Datuk Kamarul"
	"encik", "puan", "cik", "haji", "hajah", "hajjah", "hj", "hjh", "datuk", "dato",
	"datin", "ustaz", "ustazah", "cikgu",
	// South Asia: "Shri Vinod", "Smt. Meena", "Pandit Hariom"
	"shri", "smt", "shrimati", "pandit", "swami",
	// Arabic: "Sheikh Hamdan"
	"sheikh", "sheikha", "shaikh",
	// Tagalog: "Kagawad Rolando", "Kapitan Ernesto", "Mang Isko", "Aling Nena"
	"kagawad", "kapitan", "mang", "aling", "manong", "manang", "gng",
	// Afrikaans: "Oom Koos", "Tannie Marie", "mnr."
	"oom", "tannie", "mnr", "mev",
	// Indonesian letters: "Saudara Bagus", "Sdr. Bagus"
	"saudara", "saudari", "sdr", "sdri",
	// A family named in a list of donors or guests, outside the span: "Familie Van der
	// Heijden-Bakker", "Familia Quispe Huamán" (ordinary words after it are a thing, as after an
	// office title: "Familia Real")
	"familie", "familia", "famille", "famiglia", "família",
}

// capOnlyTitles are titles only when capitalised: in lower case they are words of another
// language (Danish and Norwegian "det").
var capOnlyTitles = map[string]bool{"det": true}

var kinTitles = map[string]bool{
	"nana": true, "don": true, "seu": true, "auntie": true, "aunty": true, "uncle": true,
	"teta": true, "tía": true, "tío": true, "tia": true, "tio": true, "nonna": true,
	"nonno": true, "oma": true, "opa": true, "mama": true, "baba": true,
}

// tlKinTitles are Tagalog kinship titles ("Tito Rodel", "Lola Pacing", "Ate Joy"): given names
// or words in other languages, so they count only in Tagalog text (tlContext).
var tlKinTitles = map[string]bool{"tito": true, "tita": true, "lolo": true, "lola": true,
	"kuya": true, "ate": true}

// kinLowerOK are the kinship titles written in lower case before a name ("don Anselmo", "seu
// Zé", "dona Cida"); the others are ordinary words in lower case ("we ate").
var kinLowerOK = map[string]bool{"don": true, "seu": true}

var postTitles = map[string]bool{"bey": true, "hanım": true, "hanim": true, "efendi": true,
	"sahib": true, "sahab": true, "saheb": true}

var postTitleSuffixes = []string{"-san", "-sama", "-kun", "-chan", "-sensei", "-ji", "-ssi",
	"-nim"}

var moreTitleSet = map[string]bool{}

func init() {
	for _, t := range moreTitles {
		nameTitles[t] = true
		moreTitleSet[t] = true
		addLowerCue(t)
	}
	for t := range tlArticles {
		addLowerCue(t)
	}
	addLowerCue("is mise")
}

// titleAt reports whether the word text[s:e] is a title before a name. The titles of
// nameTitles that are also street types ("Spring Dr Apt 4") are no titles after a capitalised
// word; those of this file and kinship titles are no street types ("Team Mang Isko", "Det Sgt").
func (d nameDetector) titleAt(text string, s, e int) bool {
	if isTitle(text[s:e]) {
		if !streetAbbrev(text, s, e) {
			return true
		}
		if w, _ := wordJustBefore(text, s); w != "" && isTitle(w) {
			return true // "Det Sgt": a title after a title is no street type
		}
		var buf [16]byte
		lw, ok := lowerInto(buf[:0:len(buf)], text[s:e])
		return ok && moreTitleSet[string(lw)]
	}
	return d.kinTitleAt(text, s, e) || tlArticleAt(text, s, e)
}

// kinTitleAt reports whether the word text[s:e] is a kinship title before a name (see
// kinTitles): a single capitalised name word follows it and ends the run.
func (d nameDetector) kinTitleAt(text string, s, e int) bool {
	var buf [16]byte
	lw, ok := lowerInto(buf[:0:len(buf)], text[s:e])
	if !ok || isLower(text[s]) && !kinLowerOK[string(lw)] {
		return false
	}
	if tlKinTitles[string(lw)] {
		if !tlContext(text, s) {
			return false
		}
	} else if !kinTitles[string(lw)] {
		return false
	}
	ns := space(text, e)
	if ns < 0 || !isLetterAt(text, ns) {
		return false
	}
	ne := wordEnd(text, ns)
	if ne-ns < 2 || !isCapWord(text[ns:ne]) || isTitle(text[ns:ne]) {
		return false // "Lola A. Costantini": an initial continues a full name
	}
	ne, _ = stripPossessive(text, ns, ne)
	given := lookupName(text[s:e])&gzFirst != 0
	if k := space(text, ne); given && k > 0 && isLetterAt(text, k) && isCapWord(text[k:wordEnd(text, k)]) {
		return false // "Lola Brightwater": a title that is also a given name starts a full name
	}
	if s >= 4 && strings.EqualFold(text[s-4:s], "the ") || s > 0 && strings.IndexByte("\"'(", text[s-1]) >= 0 ||
		s >= 3 && text[s-3:s] == "“" {
		return false // "the Don Bradman Cup", a shop called "Don Lucho"
	}
	if given && d.flags(text[ns:ne])&(gzFirst|gzLast) != 0 {
		return false // "Lola Montez", "Lola Barry": a given name and a known name
	}
	return true
}

// isPostTitle reports whether w is a post-name honorific word ("Bey" in "Kemal Bey").
func isPostTitle(w string) bool {
	var buf [16]byte
	lw, ok := lowerInto(buf[:0:len(buf)], w)
	return ok && postTitles[string(lw)]
}

// isKinTitle reports whether w is one of kinTitles, whatever follows it (SafePrefix is
// conservative: the word after it may be scored as titled).
func isKinTitle(w string) bool {
	var buf [16]byte
	lw, ok := lowerInto(buf[:0:len(buf)], w)
	return ok && (kinTitles[string(lw)] || tlKinTitles[string(lw)] || tlArticles[string(lw)])
}

// titleSuffix returns the end of the name in a word with a post-name honorific suffix
// ("Watanabe-san" -> "Watanabe"), or e and false.
func titleSuffix(text string, s, e int) (int, bool) {
	for _, suf := range postTitleSuffixes {
		if e-s > len(suf)+1 && strings.EqualFold(text[e-len(suf):e], suf) {
			return e - len(suf), true
		}
	}
	return e, false
}

// tlArticles are the Tagalog articles of personal names ("si Marites", "kay Dindo", "nina
// Tito Rodel"): like a title, they say that a name follows and are outside its span. They are
// words of other languages too (Spanish "si", "ni"), so they count only in Tagalog text: one
// more Tagalog function word (phoneplaces.go's languageWords) in the tlWindow bytes before.
var tlArticles = map[string]bool{"si": true, "ni": true, "kay": true, "sina": true, "nina": true,
	"kina": true}

// tlWindow bounds the look-back for Tagalog function words (guard's stream context is 128).
const tlWindow = 120

// tlArticleAt reports whether text[s:e] is a Tagalog personal article in Tagalog text.
func tlArticleAt(text string, s, e int) bool {
	if e-s > 4 {
		return false
	}
	var buf [4]byte
	lw, ok := lowerInto(buf[:0:len(buf)], text[s:e])
	return ok && tlArticles[string(lw)] && tlContext(text, s)
}

// tlContext reports whether a Tagalog function word (phoneplaces.go's languageWords, not an
// article) comes in the tlWindow bytes before s: the text is Tagalog.
func tlContext(text string, s int) bool {
	for i := max(0, s-tlWindow); i < s; {
		if !isAlpha(text[i]) {
			i++
			continue
		}
		j := i
		for j < s && isAlpha(text[j]) {
			j++
		}
		if j-i <= 7 && (i == 0 || text[i-1] < 0x80) && (j >= len(text) || text[j] < 0x80) {
			var wb [8]byte
			if w, ok := lowerInto(wb[:0:len(wb)], text[i:j]); ok && languageWords[string(w)]&langTL != 0 && !tlArticles[string(w)] {
				return true
			}
		}
		i = j
	}
	return false
}

// languageWord reports whether w is a function word of phoneplaces.go's languageWords
// (Tagalog "ang", "sa", Malay "dengan", ...): never a name in lower case ("si rochelle ang
// bagong principal").
func languageWord(w string) bool {
	var buf [16]byte
	lw, ok := lowerInto(buf[:0:len(buf)], w)
	_, found := languageWords[string(lw)]
	return ok && found
}

// Heads of organisations and institutions named after people (set 12's "Klinikum Dr. Erler
// gGmbH", "Université Cheikh Anta Diop"): added to namerunning.go's vetoes.
var (
	moreHeadsBefore = []string{"klinikum", "klinik", "poliklinik", "praxis", "université",
		"universite", "universität", "universitat", "university", "aéroport", "aeropuerto",
		"aeroporto", "flughafen", "trophée", "trofeo", "troféu", "memorial", "coupe", "copa",
		"premio", "prémio", "prix", "stade", "stadion", "estádio", "lycée", "gimnasio", "liceum",
		// Malay and Indonesian places and buildings: "Taman Melawati", "Masjid Jamek"
		"taman", "jalan", "jln", "masjid", "surau", "sekolah", "pusat", "dewan", "balai", "pasar",
		"bukit", "sungai", "pulau", "gunung", "lorong", "persiaran", "lebuh", "kota"}
	moreHeadsAfter = []string{"ggmbh", "gmbh", "kg", "ohg", "ug", "field", "stadium", "arena",
		"airport", "university", "trophy", "foundation", "clinic", "hospital"}
	// lowerHeadsBefore are written in lower case before the name in French, Spanish, Italian
	// and Portuguese: "le trophée Suzanne-Lenglen", "el trofeo Memorial ...", "lycée Victor-Hugo".
	lowerHeadsBefore = map[string]bool{"trophée": true, "trofeo": true, "troféu": true,
		"coupe": true, "copa": true, "prix": true, "premio": true, "prémio": true, "stade": true,
		"estadio": true, "estádio": true, "stadio": true, "lycée": true, "collège": true,
		"rue": true, "boulevard": true, "salle": true,
		"calle": true, "avenida": true, "rua": true, "praça": true,
		"piazza": true, "hôpital": true, "hospital": true, "colegio": true, "escuela": true,
		"escola": true, "liceo": true, "scuola": true, "memorial": true, "fundación": true,
		"fundação": true, "fondation": true, "université": true, "universidad": true}
)

func init() {
	for _, w := range []string{"familie", "familia", "famille", "famiglia", "família"} {
		roleTitles[w] = true
	}
	for _, w := range moreHeadsBefore {
		headsBefore[w] = true
	}
	for _, w := range moreHeadsAfter {
		headsAfter[w] = true
	}
}

// lowerHeadBefore reports whether a lower-case head of lowerHeadsBefore comes just before s
// ("le trophée Suzanne-Lenglen").
func lowerHeadBefore(text string, s int) bool {
	w, _ := wordJustBefore(text, s)
	return w != "" && isLower(w[0]) && lowerWordIn(w, lowerHeadsBefore)
}

// actionVerbs after a run of two name-like words make it a person in reports and commentary
// (set 12's "Chukwuemeka Obiora levelled", "Referee Ndubuisi Okpara booked"): verbs whose
// subject is a person acting. Teams and places before them ("Ashford Town scored") have an
// ordinary word or a place in the run, which the condition of actionAfter excludes.
var actionVerbs = []string{"scored", "scores", "levelled", "leveled", "equalised", "equalized",
	"netted", "headed", "struck", "booked", "crashed", "sniped", "finished", "finishes", "saved",
	"saves", "won", "edged", "resigned", "retired", "came", "went", "picked", "kept", "missed",
	"bowled", "batted", "caught", "clocked", "praised", "warned", "proposed", "seconded",
	"chaired", "led", "presented", "welcomed", "hosted", "celebrated", "fired", "converted",
	"kicked", "tackled", "dived", "sprinted", "urged", "claimed", "denied", "argued", "reminds",
	"joins", "drags", "shoots", "sin-binned", "dismissed", "conceded", "delivered", "opened",
	"received", "thanked", "announced", "described", "wants", "needs", "shakes"}

// actionAfter reports whether a verb of actionVerbs follows the run ws, ending at e, of two
// or three words, each a known or probable name and none an ordinary word, a place or a
// non-name.
func (d nameDetector) actionAfter(text string, e int, ws []nameWord) bool {
	if len(ws) < 2 || !followedBy(text, e, actionVerbs) {
		return false
	}
	named := false
	for i, w := range ws {
		if w.flags&(gzNotName|gzPlace) != 0 || w.flags&gzAmbiguous != 0 && (i > 0 || w.flags&gzFirst == 0) ||
			w.flags&gzWord != 0 && w.flags&(gzFirst|gzLast) == 0 {
			return false
		}
		named = named || w.flags&(gzFirst|gzLast|gzProbable) != 0
	}
	return named
}

// sportRoles are positions and officials of sports: before a run, like roleNouns ("halfback
// Cam Roigard", "Chiefs lock Josh Lord", "Referee Ndubuisi Okpara").
var sportRoles = []string{"halfback", "fullback", "winger", "flanker", "lock", "prop", "hooker",
	"scrum-half", "fly-half", "centre", "center", "batter", "batsman", "batswoman", "bowler",
	"wicketkeeper", "wicket-keeper", "opener", "spinner", "seamer", "raider", "forward",
	"substitute", "replacement", "referee", "umpire", "linesman", "pitcher", "catcher",
	"shortstop", "quarterback", "setter", "libero", "playmaker", "full-back", "wing-back",
	"left-back", "right-back", "centre-back", "debutant", "skipper", "homeowner", "resident",
	"parishioner", "chief", "elder", "raider", "all-rounder"}

func init() {
	for _, w := range sportRoles {
		roleNounSet[w] = true
	}
}

// capRoleBefore reports whether a capitalised role noun starts the sentence or the line just
// before s: "Referee Ben O'Keeffe sin-binned", "Homeowner Gloria Esposito asked". (Mid-sentence
// a capitalised role is part of a job title: "Consultant Rheumatologist".)
func capRoleBefore(text string, s int) bool {
	w, k := wordJustBefore(text, s)
	if w == "" || !isCapWord(w) || k != s-len(w)-1 || !lowerWordIn(w, roleNounSet) {
		return false
	}
	j := k
	for j > 0 && (text[j-1] == ' ' || text[j-1] == '\t') && k-j < 4 {
		j--
	}
	return j == 0 || text[j-1] == '\n' || j < k && strings.IndexByte(".!?", text[j-1]) >= 0
}

// headBeforeTitle reports whether a capitalised head of headsBefore comes before the title that
// ends just before s: "Hospital Dr. Sótero del Río", "Klinik Dr. Hassan" name institutions.
func headBeforeTitle(text string, s int) bool {
	tw, tk := wordJustBefore(text, s)
	if tw == "" || !isTitle(tw) {
		return false
	}
	w, _ := wordJustBefore(text, tk)
	return w != "" && isCapWord(w) && lowerWordIn(w, headsBefore)
}

// actionSubject reports whether the one-word run text[s:e] starts a line or a sentence and a
// verb of actionVerbs follows it: a family name or a name-like word alone acting in a report
// ("Humphries shakes his head", "Sukhjeet finishes a lovely move").
func actionSubject(text string, s, e int) bool {
	return sentenceStartAt(text, s) && followedBy(text, e, actionVerbs)
}

// weekdays are abbreviated weekdays in English ("Sun" is also a family name).
var weekdays = map[string]bool{"mon": true, "tue": true, "tues": true, "wed": true, "thu": true,
	"thur": true, "thurs": true, "fri": true, "sat": true, "sun": true}

// weekdayDate reports whether the one-word run text[s:e] is an abbreviated weekday before a
// day of the month ("Sun 7 Dec:", "Sat 14/12"): a date in a rota, not the family name Sun.
func weekdayDate(text string, s, e int) bool {
	if !lowerWordIn(text[s:e], weekdays) || e+2 >= len(text) || text[e] != ' ' {
		return false
	}
	d := digitsAt(text, e+1)
	return d > e+1 && d-e-1 <= 2 && d < len(text) && (text[d] == ' ' || text[d] == '/' || text[d] == '.' || isAlpha(text[d]))
}
