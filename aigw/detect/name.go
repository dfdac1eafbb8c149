package detect

import "strings"

// nameDetector finds person names without a statistical model. Runs of capitalised words are
// scored from the embedded gazetteer (given name followed by a family name is strong; either
// alone is weak) and from their context: a title ("Dr.", "Mrs", "Herr"), a phrase that
// introduces a name ("my name is", "je m'appelle", "me llamo", "ich heiße"), a greeting ("Dear",
// "Hi"), or a signature line after a closing ("Best regards,"). With a title or an introducing
// phrase, names missing from the gazetteer are found too. Titles are not part of the span.
type nameDetector struct{}

const (
	nameFullScore      = 0.85 // known given name + known family name
	nameFirstScore     = 0.6  // known given name + unknown capitalised word
	nameLastScore      = 0.45 // unknown capitalised word + known family name
	nameFirstOnlyScore = 0.35
	nameLastOnlyScore  = 0.3
	nameUnknownScore   = 0.1
	nameAmbiguousScore = 0.15 // "Will", "Grace" alone
	nameTitledFloor    = 0.7
	nameStrongFloor    = 0.75
	nameContextBoost   = 0.15
	nameWeakBoost      = 0.25
	nameMaxScore       = 0.9
	nameMaxWords       = 4
)

var nameTitles = map[string]bool{
	"mr": true, "mrs": true, "ms": true, "miss": true, "mx": true, "dr": true, "prof": true,
	"professor": true, "sir": true, "dame": true, "lady": true, "lord": true, "herr": true,
	"frau": true, "mme": true, "mlle": true, "madame": true, "monsieur": true, "sr": true,
	"sra": true, "srta": true, "señor": true, "señora": true, "senor": true, "senora": true,
	"señorita": true, "dona": true, "doña": true, "dott": true, "dottssa": true, "sig": true,
	"signor": true, "signora": true, "capt": true, "captain": true, "rev": true, "reverend": true,
	"judge": true, "officer": true, "detective": true, "sgt": true, "sergeant": true, "lt": true,
	"col": true, "agent": true, "nurse": true, "dhr": true, "mevr": true, "pan": true, "pani": true,
}

// Phrases just before a name. Strong ones introduce a name ("my name is"); medium ones
// introduce a name or an adjective ("I'm", "this is"); weak ones often precede a name.
var (
	nameStrong = []string{"my name is", "my name's", "name is", "name", "named", "called",
		"je m'appelle", "je m’appelle", "m'appelle", "me llamo", "mi nombre es", "mein name ist",
		"ich heiße", "ich heisse", "mi chiamo", "il mio nome è", "meu nome é", "me chamo",
		"chamo-me", "mijn naam is", "ik heet", "full name", "patient", "cardholder",
		"account holder", "signed", "signed by", "nom", "nombre", "nome", "vorname", "nachname",
		"prénom", "apellido", "surname", "last name", "first name", "given name", "family name",
		"attn", "attention", "c/o", "contact person", "ansprechpartner", "sincerely", "regards"}
	nameMedium = []string{"i am", "i'm", "i’m", "this is", "it's", "it’s", "je suis", "soy",
		"ich bin", "sono", "eu sou", "ik ben", "here is", "meet"}
	nameWeak = []string{"dear", "hi", "hello", "hey", "thanks", "thank you", "cheers", "contact",
		"with", "by", "from", "to", "cc", "ask", "tell", "met", "spoke", "talked", "emailed",
		"according to", "manager", "colleague", "friend", "wife", "husband", "son", "daughter",
		"mother", "father", "brother", "sister", "client", "customer", "employee", "tenant",
		"applicant", "candidate", "student", "liebe", "lieber", "hallo", "bonjour", "cher", "chère",
		"hola", "querido", "querida", "estimado", "estimada", "ciao", "caro", "cara", "olá",
		"beste", "geachte", "and", "und", "et", "y", "e", "or", "mr", "mrs", "ms", "doctor", "for",
		"about", "assigned", "owner", "approved by", "reviewed by", "written by", "reported by",
		"call", "ping", "email", "text", "message", "invite", "remind", "ask", "tell", "thank"}
	// nameGreetings followed by a name and ',', '!' or a line break: "Dear Anna,", "Hi Zoltán!"
	nameGreetings = []string{"dear", "hi", "hello", "hey", "bonjour", "hallo", "hola", "ciao",
		"liebe", "lieber", "cher", "chère", "querido", "querida", "estimado", "estimada", "olá",
		"caro", "cara", "geachte", "beste", "good morning", "morning", "thanks", "thank you"}
	nameClosings = []string{"regards", "best", "thanks", "thank you", "cheers", "sincerely",
		"yours", "cordially", "respectfully", "warmly", "grüße", "grüßen", "gruß", "gruesse",
		"cordialement", "salutations", "saludos", "atentamente", "saluti", "groet", "groeten",
		"atenciosamente", "abraços", "abrazos", "--", "—", "best wishes", "take care"}
)

// nameParticlesLower join parts of a name: "Ludwig van Beethoven", "Maria de la Cruz".
var nameParticlesLower = map[string]bool{
	"van": true, "von": true, "de": true, "der": true, "den": true, "da": true, "di": true,
	"del": true, "della": true, "du": true, "le": true, "la": true, "dos": true, "das": true,
	"bin": true, "ibn": true, "al": true, "el": true, "ter": true, "ten": true, "zu": true, "y": true,
}

// nameBreakers after a run mean it names an organisation or a place: "Ford Motor", "Baker Street".
var nameBreakers = map[string]bool{
	"inc": true, "ltd": true, "llc": true, "gmbh": true, "corp": true, "corporation": true,
	"company": true, "co": true, "university": true, "college": true, "school": true,
	"institute": true, "hospital": true, "clinic": true, "bank": true, "group": true,
	"foundation": true, "street": true, "st": true, "avenue": true, "ave": true, "road": true,
	"rd": true, "boulevard": true, "blvd": true, "lane": true, "drive": true, "court": true,
	"way": true, "place": true, "square": true, "hall": true, "center": true, "centre": true,
	"park": true, "station": true, "airport": true, "hotel": true, "museum": true, "church": true,
	"county": true, "city": true, "valley": true, "river": true, "lake": true, "island": true,
	"beach": true, "mountain": true, "bridge": true, "partners": true, "associates": true,
	"holdings": true, "labs": true, "systems": true, "technologies": true, "foods": true,
	"motors": true, "motor": true, "airlines": true, "stadium": true, "arena": true, "library": true,
	"award": true, "prize": true, "medal": true, "act": true, "law": true, "effect": true,
	"syndrome": true, "disease": true, "theorem": true, "method": true, "test": true,
}

type nameWord struct {
	s, e  int
	flags uint8
}

func (nameDetector) Detect(text string, out []Entity) []Entity {
	for i := 0; i < len(text); {
		s, e := nextWord(text, i)
		if s < 0 {
			break
		}
		i = e
		if !isCapWord(text[s:e]) || (s > 0 && (isDigit(text[s-1]) || strings.IndexByte("_@/\\#$%&=+.", text[s-1]) >= 0)) {
			continue
		}
		titled := false
		if isTitle(text[s:e]) && !streetAbbrev(text, s, e) {
			ne := e
			if ne < len(text) && text[ne] == '.' {
				ne++
			}
			ns := space(text, ne)
			if ns < 0 || !isLetterAt(text, ns) {
				continue
			}
			s, e = ns, wordEnd(text, ns)
			if !isCapWord(text[s:e]) {
				continue
			}
			titled = true
		}
		if start, end, score := nameSpan(text, s, e, titled); end > 0 {
			out = append(out, Entity{Type: TypePerson, Start: start, End: end, Score: score})
			i = end
		} else if titled {
			i = e
		}
	}
	return out
}

func isTitle(w string) bool {
	var buf [16]byte
	lw, ok := lowerInto(buf[:0:len(buf)], w)
	return ok && nameTitles[string(lw)]
}

// stripPossessive returns the end of a word without a trailing "'s".
func stripPossessive(text string, s, e int) (int, bool) {
	w := text[s:e]
	if strings.HasSuffix(w, "'s") && e-s > 3 {
		return e - 2, true
	}
	if strings.HasSuffix(w, "’s") && e-s > 5 {
		return e - 4, true
	}
	return e, false
}

func nameFlags(w string) uint8 {
	f := lookupName(w)
	if f == 0 {
		if k := strings.IndexByte(w, '-'); k > 0 { // "Smith-Jones", "Marie-Hélène"
			f = lookupName(w[:k])&(gzFirst|gzLast) | lookupName(w[k+1:])&gzLast
		}
	}
	return f
}

// nameSpan scores the run of capitalised words starting with text[s:e] and returns its span, or
// end -1.
func nameSpan(text string, s, e int, titled bool) (int, int, float64) {
	var words [nameMaxWords]nameWord
	n := 0
	e, stop := stripPossessive(text, s, e)
	f := nameFlags(text[s:e])
	if f&gzNotName != 0 {
		return 0, -1, 0
	}
	words[0] = nameWord{s, e, f}
	n = 1
	breaker := false
	j := e
	for !stop && n < nameMaxWords {
		// Initial: "John F. Kennedy"
		k := space(text, j)
		if k < 0 || !isLetterAt(text, k) {
			break
		}
		we := wordEnd(text, k)
		if we-k == 1 && isUpper(text[k]) && we < len(text) && text[we] == '.' {
			if ns := space(text, we+1); ns > 0 && isLetterAt(text, ns) && isCapWord(text[ns:wordEnd(text, ns)]) {
				j = we + 1
				continue
			}
			break
		}
		// Particles: "van der", "de la".
		p := k
		for nameParticlesLower[text[p:we]] {
			ns := space(text, we)
			if ns < 0 || !isLetterAt(text, ns) {
				break
			}
			p = ns
			we = wordEnd(text, ns)
		}
		w := text[p:we]
		if !isCapWord(w) {
			break
		}
		we, stop = stripPossessive(text, p, we)
		f := nameFlags(text[p:we])
		if f&(gzFirst|gzLast) == 0 && words[n-1].flags&gzLast != 0 && words[n-1].flags&gzFirst == 0 {
			break // "Jakob Stevenson Blocked": an unknown word after a family name starts something else
		}
		if f&gzNotName != 0 {
			var buf [16]byte
			if lw, ok := lowerInto(buf[:0:len(buf)], text[p:we]); ok && nameBreakers[string(lw)] {
				breaker = true
			}
			break
		}
		words[n] = nameWord{p, we, f}
		n++
		j = we
	}
	if breaker || (j+2 < len(text) && text[j:j+2] == " &") {
		return 0, -1, 0
	}
	// Drop leading words before the first known given name: "Contact John Smith".
	first := 0
	for first < n && words[first].flags&gzFirst == 0 {
		first++
	}
	if first == n {
		first = 0
	} else if first > 0 && !titled && !precededBy(text, words[0].s, nameStrong) {
		copy(words[:], words[first:n])
		n -= first
	}
	start, end := words[0].s, words[n-1].e
	fw, lw := words[0].flags, words[n-1].flags
	var score float64
	switch {
	case n >= 2 && fw&gzFirst != 0 && lw&gzLast != 0:
		score = nameFullScore
		if fw&gzAmbiguous != 0 && lw&gzAmbiguous != 0 {
			score = nameFirstScore
		}
	case n >= 2 && fw&gzFirst != 0:
		score = nameFirstScore
		if fw&gzAmbiguous != 0 {
			score = nameLastScore
		}
	case n >= 2 && lw&gzLast != 0:
		score = nameLastScore
	case n == 1 && fw&gzAmbiguous != 0:
		score = nameAmbiguousScore
	case n == 1 && fw&gzFirst != 0:
		score = nameFirstOnlyScore
	case n == 1 && fw&gzLast != 0:
		score = nameLastOnlyScore
	default:
		score = nameUnknownScore
	}
	switch {
	case titled:
		score = max(score, nameTitledFloor) + nameContextBoost
	case precededBy(text, start, nameStrong):
		score = max(score, nameStrongFloor) + nameContextBoost
	case precededBy(text, start, nameGreetings) && closesGreeting(text, end):
		score = max(score, nameStrongFloor) + nameContextBoost
	case signatureLine(text, start, end):
		score = max(score, nameStrongFloor) + nameContextBoost
	case precededBy(text, start, nameMedium):
		if n >= 2 || fw&gzFirst != 0 && fw&gzAmbiguous == 0 {
			score = max(score, nameTitledFloor) + nameContextBoost
		}
	case precededBy(text, start, nameWeak):
		if score >= nameLastOnlyScore {
			score += nameWeakBoost
		}
	}
	return start, end, min(score, nameMaxScore)
}

// closesGreeting reports whether a greeting's name ends at e: followed by ',', '!', ':' or a
// line break.
func closesGreeting(text string, e int) bool {
	return e == len(text) || strings.IndexByte(",!:\n\r", text[e]) >= 0
}

// precededBy reports whether one of the phrases ends just before s, allowing spaces and one
// ':' or ',' in between ("Name: John", "Thanks, Anna").
func precededBy(text string, s int, phrases []string) bool {
	j := s
	for k := 0; j > 0 && k < 2 && (text[j-1] == ' ' || text[j-1] == '\t'); k++ {
		j--
	}
	if j == s {
		return false
	}
	if j > 0 && (text[j-1] == ':' || text[j-1] == ',') {
		j--
		for k := 0; j > 0 && k < 2 && text[j-1] == ' '; k++ {
			j--
		}
	}
	for _, p := range phrases {
		if j >= len(p) && matchKeyword(text, j-len(p), p) {
			return true
		}
	}
	return false
}

// signatureLine reports whether text[s:e] stands alone at the start of a line that follows a
// closing line such as "Best regards," or "--".
func signatureLine(text string, s, e int) bool {
	j := s
	for j > 0 && (text[j-1] == ' ' || text[j-1] == '\t') {
		j--
	}
	if j == 0 || text[j-1] != '\n' {
		return false
	}
	k := e
	for k < len(text) && (text[k] == ' ' || text[k] == '\t') {
		k++
	}
	if k < len(text) && text[k] != '\n' && text[k] != '\r' && text[k] != ',' && text[k] != '|' {
		return false
	}
	// Previous non-empty line, at most 48 bytes.
	le := j - 1
	for le > 0 && (text[le-1] == '\n' || text[le-1] == '\r' || text[le-1] == ' ') && j-le < 4 {
		le--
	}
	// The closing ends the previous line: "Best regards," or "... thanks again. Cheers,".
	ls := max(0, le-32)
	for k := le - 1; k >= ls; k-- {
		if text[k] == '\n' {
			ls = k + 1
			break
		}
	}
	line := text[ls:le]
	for p := 0; p < len(line); p++ {
		for _, c := range nameClosings {
			if p+len(c) <= len(line) && matchKeyword(line, p, c) {
				return true
			}
		}
	}
	return false
}

// streetAbbrev reports whether the title-like word text[s:e] ("Dr", "St") follows a capitalised
// word without a period, as in "Spring Dr Apt 4": a street type, not a title.
func streetAbbrev(text string, s, e int) bool {
	if e < len(text) && text[e] == '.' || s < 2 || text[s-1] != ' ' {
		return false
	}
	k := s - 1
	for k > 0 && isAlpha(text[k-1]) {
		k--
	}
	return k < s-1 && isCapWord(text[k:s-1]) && !precededBy(text, s, nameGreetings) && !precededBy(text, s, nameWeak)
}
