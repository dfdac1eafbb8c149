package detect

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/edgewan/edgewan/aigw/detect/internal/namemodel"
)

// nameDetector finds person names. Runs of capitalised words are scored from lexical evidence
// and from their context. Lexical evidence per word: the embedded gazetteer (a known given name
// followed by a known family name is strong; either alone is weak), and for words it does not
// know, the name model (internal/namemodel): an ordinary word of its word set is no name, and a
// word whose character n-grams look like names of many origins is a probable name. Context: a
// title ("Dr.", "Mrs", "Herr"), a phrase that introduces a name ("my name is", "je m'appelle"),
// a field label ("Owner:", "Assignee:"), an e-mail address right after ("Ana Lima <ana@...>"), a
// greeting ("Dear"), a signature line after a closing ("Best regards,"), weaker words around
// ("with", "ask", "... said"). Place and organisation cues veto a run: "the" before it, a cue
// word in or after it ("The Lincoln Park branch", "Victoria Station"). After a title, an
// introducing phrase or a label, lower-case names are found too ("my name is keoni quispe").
// Titles are not part of the span.
type nameDetector struct {
	model    *namemodel.Model
	rescorer *nameRescorer // the learned part (namerescore.go); nil: the rules alone
	// record, when set, receives every scored candidate's features (training).
	record func(start, end int, feats []uint32)
	// nocoref is set while corefer scores an earlier mention, or coordinated a later one (no
	// nested search).
	nocoref bool
}

func newNameDetector(m *namemodel.Model) nameDetector {
	loadGazetteer()
	if m == nil {
		m = defaultNameModel()
	}
	return nameDetector{model: m, rescorer: defaultNameRescorer()}
}

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

	// The name model's log-odds above which a word it does not know as an ordinary word is a
	// probable name (the classes are weighted equally in training, so 0 is the even point).
	nameProbableLLR = 0.0

	nameFirstProbableScore = 0.75 // known given name + probable name
	nameCitationScore      = 0.7  // family name, comma, initials: "Okafor, C."
	nameProbableLastScore  = 0.6  // probable name + known family name
	nameBothProbableScore  = 0.55 // two or more probable names: "Thandiwe Mbeki"
	nameProbableOnlyScore  = 0.25
	nameUnknownPairScore   = 0.4 // capitalised words that are no ordinary words: a cue decides
)

// nameLabels are field labels followed by ':' and a person: "Owner: Anahera Virtanen".
var nameLabels = []string{"owner", "assignee", "assigned to", "reporter", "reported by",
	"requester", "requested by", "requestor", "author", "customer", "client", "contact",
	"employee", "candidate", "applicant", "tenant", "guest", "driver", "manager", "supervisor",
	"agent", "member", "recipient", "sender", "beneficiary", "holder", "from", "to", "cc", "bcc",
	"attendee", "participant", "student", "teacher", "doctor", "physician", "referred by",
	"submitted by", "approved by", "created by", "updated by", "opened by", "closed by",
	"lead", "contact name", "customer name", "owner name", "user name", "emergency contact",
	"next of kin", "spouse", "witness", "landlord", "passenger", "insured", "policyholder",
	"kunde", "kundin", "mitarbeiter", "client·e", "cliente", "titular", "destinataire",
	// roles of police, insurance and court forms
	"complainant", "claimant", "suspect", "victim", "defendant", "plaintiff", "respondent",
	"petitioner", "deceased", "accused", "informant", "caller", "reporting officer",
	"officer in charge", "lessee", "lessor", "payee", "guarantor", "executor", "next of kin name"}

// orgLabels are field labels whose value is an organisation, shop or place, never a person:
// "Employer: Harvey Norman", "Merchant: Tim Hortons". The label says what kind of name follows,
// as a title or "my name is" does for a person.
var orgLabels = []string{"employer", "company", "organisation", "organization", "org", "merchant",
	"vendor", "supplier", "store", "shop", "brand", "bank", "school", "university", "college",
	"firm", "agency", "carrier", "courier", "manufacturer", "retailer", "business", "hotel",
	"restaurant", "airline", "insurer", "hospital", "clinic", "practice", "branch", "site",
	"location", "venue", "product", "team", "department"}

// nameVerbs after a run suggest a person: "Dawit Alemu said", "... approved it".
var nameVerbs = []string{"said", "says", "wrote", "writes", "asked", "asks", "called", "calls",
	"replied", "answered", "approved", "reported", "mentioned", "confirmed", "joined", "left",
	"signed", "sent", "emailed", "thinks", "thought", "told", "agreed", "disagreed", "noted",
	"explained", "suggested", "requested", "complained", "will", "would", "has", "had", "is",
	"was", "and", "who", "from", "(", "'s", "’s"}

// placeCues are nouns that make a capitalised run a place, an organisation or a thing rather
// than a person when they follow it or end it: "The Lincoln Park branch", "Victoria Station".
var placeCues = map[string]bool{
	"branch": true, "office": true, "offices": true, "station": true, "store": true, "shop": true,
	"campus": true, "site": true, "location": true, "hospital": true, "clinic": true,
	"school": true, "university": true, "college": true, "academy": true, "park": true,
	"street": true, "road": true, "avenue": true, "boulevard": true, "lane": true, "square": true,
	"airport": true, "hotel": true, "inn": true, "restaurant": true, "cafe": true, "café": true,
	"bar": true, "pub": true, "mall": true, "market": true, "center": true, "centre": true,
	"building": true, "tower": true, "bridge": true, "museum": true, "library": true,
	"church": true, "cathedral": true, "temple": true, "mosque": true, "stadium": true,
	"arena": true, "county": true, "district": true, "city": true, "town": true, "village": true,
	"valley": true, "lake": true, "river": true, "mountain": true, "mount": true, "island": true,
	"beach": true, "bay": true, "heights": true, "hills": true, "springs": true, "falls": true,
	"creek": true, "harbor": true, "harbour": true, "port": true, "pier": true, "gardens": true,
	"zoo": true, "team": true, "cluster": true, "region": true, "warehouse": true, "depot": true,
	"plant": true, "factory": true, "lab": true, "labs": true, "project": true, "program": true,
	"programme": true, "platform": true, "service": true, "services": true, "app": true,
	"server": true, "fleet": true, "club": true, "kiosk": true, "lobby": true, "exhibit": true,
	"exhibition": true, "meetup": true, "show": true, "gala": true, "ballroom": true,
	"theater": true, "theatre": true, "cinema": true, "hall": true, "court": true, "terminal": true,
	"line": true, "bank": true, "group": true, "inc": true, "ltd": true, "llc": true,
	"corp": true, "company": true, "foundation": true, "institute": true, "association": true,
	"council": true, "ministry": true, "department": true, "agency": true, "bureau": true,
	"embassy": true, "consulate": true, "prison": true, "base": true, "farm": true, "farms": true,
	"ranch": true, "estate": true, "resort": true, "spa": true, "garage": true, "tunnel": true,
	"highway": true, "freeway": true, "national": true, "international": true,
	"edition": true, "model": true, "series": true, "pro": true, "plus": true, "max": true,
	"mini": true, "ultra": true, "cloud": true, "engine": true, "studio": true, "suite": true,
	"rollout": true, "migration": true, "pilot": true, "shipment": true, "account": true,
	// buildings, funds and works named after people: "the Lady Margaret Hall chapel"
	"chapel": true, "wing": true, "hospice": true, "room": true, "fund": true, "fellowship": true,
	"scholarship": true, "trophy": true, "lecture": true, "memorial": true, "collection": true,
	"tribute": true,
	// docks, cups, prizes and stops named after people (neg17): "Albert Dock", "the Bob
	// Paisley Cup", "Jack Petchey Award"
	"dock": true, "docks": true, "quay": true, "wharf": true, "marina": true, "cup": true,
	"shield": true, "stakes": true, "prize": true, "award": true, "medal": true, "stop": true,
}

var nameTitles = map[string]bool{
	"mr": true, "mrs": true, "ms": true, "miss": true, "mx": true, "dr": true, "prof": true,
	"professor": true, "sir": true, "dame": true, "lady": true, "lord": true, "herr": true,
	"frau": true, "mme": true, "mlle": true, "madame": true, "monsieur": true, "sr": true,
	"sra": true, "srta": true, "señor": true, "señora": true, "senor": true, "senora": true,
	"señorita": true, "dona": true, "doña": true, "dott": true, "dottssa": true, "sig": true,
	"signor": true, "signora": true, "capt": true, "captain": true, "rev": true, "reverend": true,
	"judge": true, "officer": true, "detective": true, "sgt": true, "sergeant": true, "lt": true,
	"col": true, "agent": true, "nurse": true, "dhr": true, "mevr": true, "pan": true, "pani": true,
	// Honorifics of other languages: Indonesian and Malay, Dutch, Turkish.
	"pak": true, "bapak": true, "bu": true, "ibu": true, "meneer": true, "mevrouw": true,
	"sayın": true,
	// Clergy: "Fr. Patrick", "Rabbi Cohen".
	"fr": true, "rabbi": true, "imam": true, "pastor": true,
}

// Phrases just before a name. Strong ones introduce a name ("my name is"); medium ones
// introduce a name or an adjective ("I'm", "this is"); weak ones often precede a name.
var (
	nameStrong = []string{"my name is", "my name's", "name is", "name", "named", "called",
		"je m'appelle", "je m’appelle", "m'appelle", "me llamo", "mi nombre es", "mein name ist",
		"ich heiße", "ich heisse", "mi chiamo", "il mio nome è", "meu nome é", "me chamo",
		"chamo-me", "mijn naam is", "ik heet", "full name", "patient", "cardholder",
		"account holder", "signed", "signed by", "née", "nee", "nom", "nombre", "nome", "vorname", "nachname",
		"prénom", "apellido", "surname", "last name", "first name", "given name", "family name",
		"attn", "attention", "c/o", "contact person", "ansprechpartner", "sincerely", "regards",
		// Other languages: Indonesian and Malay, Turkish, Polish, Vietnamese, Swedish,
		// Norwegian and Danish, Finnish, Swahili, Tagalog.
		"nama saya", "atas nama", "benim adım", "adım", "nazywam się", "mam na imię", "tên tôi là",
		"jag heter", "jeg heter", "mitt namn är", "mitt navn er", "mit navn er", "nimeni on",
		"jina langu ni", "ang pangalan ko ay",
		// herbarium and museum labels: the collector (legit) and the determiner (neg17)
		"leg.", "det.", "coll.", "leg. & det.", "legit", "collector", "collected by"}
	nameMedium = []string{"i am", "i'm", "i’m", "this is", "it's", "it’s", "je suis", "soy",
		"ich bin", "sono", "eu sou", "ik ben", "here is", "meet", "saya", "aku", "ben", "jestem",
		"tôi là", "jag är", "jeg er", "olen", "ako si", "mimi ni"}
	nameWeak = []string{"dear", "hi", "hello", "hey", "thanks", "thank you", "cheers", "contact",
		"with", "by", "from", "to", "cc", "ask", "tell", "met", "spoke", "talked", "emailed",
		"according to", "manager", "colleague", "friend", "wife", "husband", "son", "daughter",
		"mother", "father", "brother", "sister", "client", "customer", "employee", "tenant",
		"applicant", "candidate", "student", "liebe", "lieber", "hallo", "bonjour", "cher", "chère",
		"hola", "querido", "querida", "estimado", "estimada", "ciao", "caro", "cara", "olá",
		"beste", "geachte", "and", "und", "et", "y", "e", "or", "mr", "mrs", "ms", "doctor", "for",
		"about", "assigned", "owner", "approved by", "reviewed by", "written by", "reported by",
		"call", "ping", "email", "text", "message", "invite", "remind", "ask", "tell", "thank"}
	// nameLowerWeak are the weak cues that address or mention a person; after one, two
	// lower-case words may be a name when the first is a known given name ("pls ask tshepo
	// dlamini to sign"). Prepositions and conjunctions of nameWeak stay out ("with grafana
	// loki"): after them a lower-case word is far more often a thing.
	nameLowerWeak = []string{"ask", "tell", "call", "ping", "email", "text", "message", "invite",
		"remind", "thank", "thanks", "cc", "met", "spoke", "talked", "emailed", "hi", "hey",
		"hello", "dear"}
	// nameGreetings followed by a name and ',', '!' or a line break: "Dear Anna,", "Hi Zoltán!"
	nameGreetings = []string{"dear", "hi", "hello", "hey", "bonjour", "hallo", "hola", "ciao",
		"liebe", "lieber", "cher", "chère", "querido", "querida", "estimado", "estimada", "olá",
		"caro", "cara", "geachte", "beste", "good morning", "morning", "thanks", "thank you",
		"halo", "merhaba", "dzień dobry", "szanowny", "szanowna", "xin chào", "hej", "hei",
		"kia ora", "gentile", "egregio", "prezado", "prezada", "sehr geehrte", "sehr geehrter"}
	nameClosings = []string{"regards", "best", "thanks", "thank you", "cheers", "sincerely",
		"yours", "cordially", "respectfully", "warmly", "grüße", "grüßen", "gruß", "gruesse",
		"cordialement", "salutations", "saludos", "atentamente", "saluti", "groet", "groeten",
		"atenciosamente", "abraços", "abrazos", "--", "—", "best wishes", "take care",
		"pozdrawiam", "z poważaniem", "saygılarımla", "hormat saya", "salam", "terima kasih",
		"hälsningar", "hilsen", "terveisin"}
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

func (d nameDetector) Detect(text string, out []Entity) []Entity {
	n0 := len(out)
	for i := 0; i < len(text); {
		s, e := nextWord(text, i)
		if s < 0 {
			break
		}
		i = e
		// Not while training the rescorer (d.record): its candidates stay those it was built on.
		if d.record == nil && d.nameCellVeto(text, s) {
			// "Display name: Front Desk Tablet", "name: billing-api" (structure.go)
			for i < len(text) && text[i] != '\n' {
				i++
			}
			continue
		}
		if end := d.nameCell(text, s); d.record == nil && end > 0 && !tokenGoesOn(text, end) {
			// the whole value of a name key or column: "cn: Constanza Reyes Bravo", "bin Rosli" (structure.go)
			out = append(out, Entity{Type: TypePerson, Start: s, End: end, Score: nameStrongFloor + nameContextBoost})
			i = end
			continue
		}
		if s > 0 && (isDigit(text[s-1]) || strings.IndexByte("_@/\\#$%&=+.", text[s-1]) >= 0) || d.record == nil && exportKey(text, s, e) {
			continue // exportKey: "objectClass:", "dn:", "cn=" are attribute names (structure.go)
		}
		if c, _ := classAt(text, s); c != scNone {
			continue // a word of another script: its own rules (script.go)
		}
		if !isCapWord(text[s:e]) && !lowerTitle(text, s, e) && !d.kinTitleAt(text, s, e) && !(tlArticleAt(text, s, e) && capWordNext(text, e)) {
			if isLower(text[s]) || text[s] >= 0x80 || allCaps(text[s:e]) {
				end := d.lowerSpan(text, s, e)
				if end < 0 {
					end = d.layoutSpan(text, s)
				}
				if end < 0 {
					end = d.capsTransferSpan(text, s, e) // "sent to JOSEPH KAMAU 0722 ..." (namerunning.go)
				}
				if end < 0 {
					end = d.capsRowSpan(text, s, e) // "KOVALENKO Oksana (UA)" in a list (namelist.go)
				}
				if end < 0 && d.record == nil {
					end = d.familyFirstSpan(text, s, e) // "TANAKA Hiroshi", "KIM Min-jun" (namefamily.go)
				}
				if end > 0 && !tokenGoesOn(text, end) {
					out = append(out, Entity{Type: TypePerson, Start: s, End: end, Score: nameStrongFloor + nameContextBoost})
					i = end
				}
			}
			continue
		}
		titled := false
		if d.titleAt(text, s, e) {
			ne := e
			if ne < len(text) && text[ne] == '.' {
				ne++
			}
			ns := space(text, ne)
			if ns < 0 || !isLetterAt(text, ns) {
				continue
			}
			s, e = ns, wordEnd(text, ns)
			for c := 0; c < 3 && d.titleAt(text, s, e); c++ { // "Hon. Dr Amina", "dr hab. inż. Jan", "nina Tito Rodel"
				ne := e
				if ne < len(text) && text[ne] == '.' {
					ne++
				}
				if ns = space(text, ne); ns < 0 || !isLetterAt(text, ns) {
					break
				}
				s, e = ns, wordEnd(text, ns)
			}
			if !isCapWord(text[s:e]) || d.titleAt(text, s, e) {
				continue
			}
			titled = true
		}
		if !titled && e-s == 1 && e < len(text) && text[e] == '.' {
			if end := d.initialsRun(text, s); end > 0 && !tokenGoesOn(text, end) {
				// "J. R. Okafor", "T. Mensah" as list items (namelist.go)
				out = append(out, Entity{Type: TypePerson, Start: s, End: end, Score: nameTitledFloor})
				i = end
				continue
			}
		}
		initial := -1
		if titled && e-s == 1 && e+1 < len(text) && text[e] == '.' { // "Dr J. Otieno"
			if ns := space(text, e+1); ns > 0 && isLetterAt(text, ns) && isCapWord(text[ns:wordEnd(text, ns)]) {
				initial, s, e = s, ns, wordEnd(text, ns)
			}
		}
		// "Nguyễn Đức Minh" (namefamily.go); kept out of the rescorer's training (record), whose
		// candidates it would change
		if end := d.vietSpan(text, s, e); d.record == nil && end > 0 && !tokenGoesOn(text, end) {
			out = append(out, Entity{Type: TypePerson, Start: s, End: end, Score: nameStrongFloor + nameContextBoost})
			i = end
			continue
		}
		if start, end, score := d.nameSpan(text, s, e, titled); end > 0 && !tokenGoesOn(text, end) {
			if initial >= 0 {
				start = initial
			}
			out = append(out, Entity{Type: TypePerson, Start: start, End: end, Score: score})
			i = end
		} else if titled {
			i = e
		}
	}
	return d.dropThings(text, scriptNames(text, d.sportNames(text, out)), n0) // namething.go
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
func (d nameDetector) nameSpan(text string, s, e int, titled bool) (int, int, float64) {
	var words [nameMaxWords]nameWord
	n := 0
	e, stop := stripPossessive(text, s, e)
	post := false // a title after the name: "Kemal Bey", "Watanabe-san" (nametitles.go)
	if !stop {
		e, post = titleSuffix(text, s, e)
		stop = post
	}
	f := d.flags(text[s:e])
	if isPostTitle(text[s:e]) {
		return 0, -1, 0 // "Hanım" after "Ayşe": the title of the run before
	}
	if _, ne, core, ok := d.particleWord(text, s, e, true); ok && !stop {
		// "Ní Bhriain", "Ó Dálaigh": a Gaelic particle starts the family name (namerunning.go)
		e, stop = stripPossessive(text, s, ne)
		f = d.flags(text[core:e])
	}
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
		if d.titleAt(text, k, we) {
			break // a title after a particle or an initial starts the next run
		}
		// Capitalised particles: "Ó Dálaigh", "Nic Giolla Phádraig", "Dela Cruz" (namerunning.go).
		if ns, ne, core, ok := d.particleWord(text, k, we, false); ok {
			ne, stop = stripPossessive(text, ns, ne)
			words[n] = nameWord{ns, ne, d.flags(text[core:ne])}
			n++
			j = ne
			continue
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
		if isPostTitle(w) {
			post = true
			break
		}
		we, stop = stripPossessive(text, p, we)
		if !stop {
			we, post = titleSuffix(text, p, we)
			stop = post
		}
		f := d.flags(text[p:we])
		if f&(gzFirst|gzLast) == 0 && words[n-1].flags&gzLast != 0 && words[n-1].flags&gzFirst == 0 &&
			!(f&gzWord == 0 && (titled && we-p > 2 && !tokenGoesOn(text, we) || strongCue(text, words[0].s))) {
			// "Jakob Stevenson Blocked": an unknown word after a family name starts something
			// else; but after a cue, a word that is not an ordinary word may follow a family name
			// written first ("Patient: Nguyễn Thị Lan", "Név: Kovács Anna", "Tenant: Chen
			// Xiaoling", where the model does not find "Xiaoling" name-like).
			break
		}
		if f&gzNotName != 0 && f&gzPlace != 0 && (n == 1 || n == 2 && greetingWord(text[words[0].s:words[0].e])) &&
			d.placeSurname(text, words[n-1], p, we) {
			// "Olá Thiago Albuquerque,": many family names are places.
			words[n] = nameWord{p, we, f&^(gzNotName|gzPlace) | gzLast}
			n++
			j = we
			if d.placeThenFamily(text, we) {
				continue
			}
			break
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
	if breaker || (j+2 < len(text) && text[j:j+2] == " &" && !d.listCue(text, s, j, words[:n]) && (d.record != nil || !keyedRowCell(text, s, j))) {
		return 0, -1, 0 // "Johnson & Johnson"; but "Wed: Marisol & Ilkka" after other names (namelist.go)
	}
	// A greeting word starts a sentence with a capital in any language: "Olá Tiago Barros,",
	// "Merhaba Kerem Aksoy,". It is the name's cue, not its first word.
	for n > 1 && greetingWord(text[words[0].s:words[0].e]) {
		copy(words[:], words[1:n])
		n--
	}
	// Drop leading words before the first known given name: "Contact John Smith"; without
	// one, drop leading ordinary words: "Yesterday Thandiwe Mbeki".
	first := 0
	for first < n && words[first].flags&gzFirst == 0 {
		first++
	}
	if post && first == n {
		first = n - 1 // "Toplantıya Gülsüm Hanım": a title after the name takes one word without a known given name
	} else if first == n || !titled && !post && leadingWords(words[:first]) < first {
		// No known given name, or unknown words before it that are not ordinary words
		// ("Hiwot Somsak Egal"): drop only leading ordinary words.
		first = leadingWords(words[:n-1])
	}
	if first > 0 && !titled && (post || !strongCue(text, words[0].s)) {
		copy(words[:], words[first:n])
		n -= first
	}
	titled = titled || post
	// Drop trailing ordinary words: "Thandiwe Mbeki Today". But many family names are also
	// ordinary words (Doe, Gay, Nur, and Baker, King, Park when the gazetteer misses them): when
	// the run has started as a person and no family name has come yet, the first ordinary word
	// takes the family-name slot ("Bill to: Jane Doe", "Please call Mary Gay tomorrow").
	m := n
	for m > 1 && words[m-1].flags&(gzFirst|gzLast|gzProbable) == 0 && words[m-1].flags&gzWord != 0 {
		m--
	}
	if m < n && d.surnameSlot(text, words[:m+1], titled) {
		m++
	}
	n = m
	start, end := words[0].s, words[n-1].e
	// A family name written first before initials, as author lists and indexes write it:
	// "Okafor, C.", "Lee, J. K.", "Wang, X.Y.". Not a known given name alone ("Anna, I. think").
	cite, inverted := false, -1
	if !titled && words[0].flags&gzFirst != 0 && words[0].flags&gzAmbiguous == 0 {
		inverted = d.capsFamilyBefore(text, words[0].s)
	}
	if fw := words[0].flags; n == 1 && !stop && !titled && (fw&gzWord == 0 || fw&gzLast != 0) && (fw&gzFirst == 0 || fw&gzLast != 0) {
		if ce, _ := citationScan(text, end); ce > 0 {
			cite, end = true, ce
		}
	}
	if !titled && (d.placeLike(text, words[:n]) || orgName(text, words[:n]) || precededByOrgLabel(text, start) || possessiveBusiness(text, end)) {
		return 0, -1, 0
	}
	if !titled && d.record == nil && (n == 1 && numberedLabel(text, start, end) || thingColumn(text, start, end)) {
		// "Sun 7 Dec:", "Pista 1:"; a cell under "Boat", "Horse", "Club" (structure.go)
		return start, end, 0
	}
	if animalRun(text, start, end) || titled && placeCueAfter(text, end) {
		// "our dog Lady Penelope", "Patient: Biscuit (Labrador, ...)", "the Lady Margaret Hall chapel"
		return 0, -1, 0
	}
	fw, lw := words[0].flags, words[n-1].flags
	isF, isL := fw&gzFirst != 0, lw&gzLast != 0
	pF, pL := fw&gzProbable != 0, lw&gzProbable != 0
	if inverted >= 0 {
		// "HALVORSEN, Ingrid M.": a trailing initial belongs to the name.
		if end+2 < len(text) && text[end] == ' ' && isUpper(text[end+1]) && text[end+2] == '.' &&
			(end+3 == len(text) || !isLetterAt(text, end+3)) {
			end += 3
		}
		start = inverted
	}
	var score float64
	switch {
	case cite:
		score = nameCitationScore
	case inverted >= 0:
		score = max(nameFirstProbableScore, func() float64 {
			if isL || pL {
				return nameFullScore
			}
			return 0
		}())
	case n >= 2 && isF && isL:
		score = nameFullScore
		if fw&gzAmbiguous != 0 && lw&gzAmbiguous != 0 {
			score = nameLastScore // "Morgan Hill": both also common words or places
		}
	case n >= 2 && isF && pL:
		score = nameFirstProbableScore
		if fw&gzAmbiguous != 0 {
			score = nameLastScore
		}
	case n >= 2 && isF:
		score = nameFirstScore
		if fw&gzAmbiguous != 0 {
			score = nameLastScore
		}
	case n >= 2 && pF && isL:
		score = nameProbableLastScore
		if lw&gzAmbiguous != 0 {
			score = nameLastScore
		}
	case n >= 2 && pF && pL && noWords(words[:n]):
		score = nameBothProbableScore
	case n >= 2 && noWords(words[:n]):
		score = nameUnknownPairScore
	case n >= 2 && isL:
		score = nameLastScore
	case n == 1 && fw&gzAmbiguous != 0:
		score = nameAmbiguousScore
	case n == 1 && isF:
		score = nameFirstOnlyScore
	case n == 1 && fw&gzLast != 0:
		score = nameLastOnlyScore
	case n == 1 && pF:
		score = nameProbableOnlyScore
	default:
		score = nameUnknownScore
	}
	lexical := fw&(gzFirst|gzLast|gzProbable) != 0 || lw&(gzFirst|gzLast|gzProbable) != 0 || noWords(words[:n])
	switch {
	case titled:
		score = max(score, nameTitledFloor) + nameContextBoost
	case precededBy(text, start, nameStrong):
		score = max(score, nameStrongFloor) + nameContextBoost
	case lexical && precededByLabel(text, start) && !(n == 1 && proseFollows(text, end)):
		score = max(score, nameStrongFloor) + nameContextBoost
	case lexical && emailFollows(text, end):
		score = max(score, nameStrongFloor) + nameContextBoost
	case lexical && (headerHas(columnHeader(text, start, end), nameHeaders) || d.record == nil && shortPersonKey(cellHeader(text, start, end))):
		// a delimited, padded or aligned column under a name header (column.go, structure.go)
		score = max(score, nameStrongFloor) + nameContextBoost
	case lexical && personKey(fieldKey(text, start, end)):
		// The value of a name field in data: `"first_name": "Mirela"`, `<lastName>Leota</...`.
		score = max(score, nameStrongFloor) + nameContextBoost
	case nameAnswer(text, start) && !(end < len(text) && text[end] == ':'): // not the speaker
		score = max(score, nameStrongFloor) + nameContextBoost
	case n <= 3 && lexical && speakerLabel(text, start, end) &&
		(n <= 2 && (isF && fw&gzAmbiguous == 0 || pF) || n >= 2 && noWords(words[:n])):
		// A speaker is a known or probable given name, or two or three words none of which the
		// model knows as an ordinary word (names of cultures it has not seen: "Zola Yeshe: ...").
		score = max(score, nameStrongFloor) + nameContextBoost
		score = max(score, nameStrongFloor) + nameContextBoost
	case !allWords(words[:n]) && precededBy(text, start, nameGreetings) && closesGreeting(text, end):
		// Ordinary words alone are a role, not a name: "Dear Resident,", "Dear Hiring Manager,".
		score = max(score, nameStrongFloor) + nameContextBoost
	case !allWords(words[:n]) && signatureLine(text, start, end):
		score = max(score, nameStrongFloor) + nameContextBoost
	case precededBy(text, start, nameMedium):
		if n >= 2 || (isF || pF) && fw&gzAmbiguous == 0 {
			score = max(score, nameTitledFloor) + nameContextBoost
		}
	case precededBy(text, start, nameWeak) || n >= 2 && followedBy(text, end, nameVerbs):
		if score >= nameLastOnlyScore {
			score += nameWeakBoost
		}
	case n == 1 && isF && fw&gzAmbiguous == 0 && midSentence(text, start):
		score += nameWeakBoost // "did Calum send the lease?"
	}
	score = d.rescore(text, words[:n], min(score, nameMaxScore), titled)
	// Evidence of running text (namerunning.go), after the rescorer, which was trained without it.
	if d.orgPlaceRun(text, words[:n]) || titled && titledThing(text, start, words[:n]) {
		// organisations, places, buildings and things named after people: the run is decided (and
		// skipped, as before this check existed), but no name
		return start, end, 0
	}
	if score < nameTitledFloor && lexical && !allWords(words[:n]) && !capWordNext(text, end) && d.runningCue(text, start, end, words[:n]) {
		// apposition, a name label of another language, a repeated mention
		score = nameTitledFloor + nameContextBoost
	}
	if score < DefaultMinScore && lexical && !allWords(words[:n]) && d.listCue(text, start, end, words[:n]) {
		// an item of a list whose earlier items are names (namelist.go)
		score = nameTitledFloor
	}
	if score < DefaultMinScore && d.record == nil && noWords(words[:n]) && (n >= 2 || fw&(gzFirst|gzLast|gzProbable) != 0 && fw&gzAmbiguous == 0) &&
		!d.placeLike(text, words[:n]) && keyedRowCell(text, start, end) {
		// an item of a row keyed by a rank, a time, a date or a room (structure.go)
		score = nameTitledFloor
	}
	if score < DefaultMinScore && lexical && !allWords(words[:n]) {
		// a cell of a header-less table whose cells above in its column are names (structure.go)
		if names, things := d.columnPeers(text, start, end); names >= 1 && things == 0 {
			score = nameTitledFloor
		}
	}
	if score < DefaultMinScore && d.record == nil && lexical && !titled && d.firstItemCue(text, start, end, words[:n]) {
		// the first item of a list whose later items are names (structure.go)
		score = nameTitledFloor
	}
	if score < DefaultMinScore && n == 1 && !titled && fw&gzProbable != 0 && fw&(gzNotName|gzAmbiguous) == 0 &&
		sentenceSubject(text, start, end) {
		score = nameTitledFloor - nameContextBoost // "Kasimir will bring the projector" (namelist.go)
	}
	if score < DefaultMinScore && n == 1 && !titled && fw&(gzProbable|gzLast) != 0 && fw&(gzNotName|gzAmbiguous|gzWord) == 0 &&
		actionSubject(text, start, end) {
		score = nameTitledFloor - nameContextBoost // "Humphries shakes his head" (nametitles.go)
	}
	if n == 1 && !titled && inverted < 0 && !cite {
		if b := d.familyCommaBefore(text, words[0]); b >= 0 {
			// "Mwale, Tiwonge - present": a family name written first in a row (namelist.go)
			start, score = b, max(score, nameStrongFloor+nameContextBoost)
		} else if ie := initialsAfter(text, start, end); ie > 0 && noWords(words[:n]) && fw&(gzNotName|gzPlace) == 0 {
			// "Tanaka H.", "Brennan P. J." in an author list or a results table
			end, score = ie, max(score, nameTitledFloor)
		}
	}
	if score >= DefaultMinScore {
		end = hyphenBreak(text, end) // "Rosalind T. Amadi-\nWhitfield" (OCR, wrapped lines)
	}
	return start, end, min(score, nameMaxScore)
}

// flags returns the gazetteer flags of w, or for a word the gazetteer does not know, gzWord
// (an ordinary word), gzProbable (looks like a name to the model) or 0.
func (d nameDetector) flags(w string) uint8 {
	if f := nameFlags(w); f != 0 {
		return f
	}
	return d.modelFlags(w, nameProbableLLR)
}

func (d nameDetector) modelFlags(w string, minLLR float64) uint8 {
	var buf [64]byte
	k, ok := foldInto(buf[:0:len(buf)], w)
	if !ok || len(k) < 2 {
		return 0
	}
	if d.model.IsWord(k) {
		return gzWord
	}
	if d.model.NameLLR(k) > minLLR {
		return gzProbable
	}
	return 0
}

// surnameSlot reports whether the last of ws, an ordinary word, is the family name of a run
// that has started as a person: every word before it is a given name, the first an unambiguous
// known one ("Jane Doe") or, after a title, an introducing phrase or a field label, also a
// probable name ("Customer: Thandiwe Gay"); and the word is not a label ("Jane Status: open").
// Ordinary words that are never part of a name (function words, "Monday", "Team") are non-names
// of the gazetteer and have already ended the run; place and organisation cues veto it later.
func (d nameDetector) surnameSlot(text string, ws []nameWord, titled bool) bool {
	n := len(ws)
	if n < 2 || n > 3 {
		return false
	}
	if e := ws[n-1].e; e < len(text) && text[e] == ':' {
		return false
	}
	cued := titled || strongCue(text, ws[0].s) ||
		precededBy(text, ws[0].s, nameGreetings) && closesGreeting(text, ws[n-1].e)
	if f := ws[0].flags; !cued && (f&gzFirst == 0 || f&gzAmbiguous != 0) {
		return false
	}
	for _, w := range ws[:n-1] {
		// After a cue, a word the model knows as no ordinary word is as good as a given name:
		// the model has not seen every culture's names ("Patient: Tenzin Lwazi Lama").
		given := w.flags&gzFirst != 0 || cued && (w.flags&gzProbable != 0 || w.flags&gzWord == 0)
		if !given || w.flags&gzLast != 0 && w.flags&gzFirst == 0 {
			return false
		}
	}
	return true
}

// strongCue reports whether an introducing phrase or a field label ends just before s.
func strongCue(text string, s int) bool {
	return precededBy(text, s, nameStrong) || precededByLabel(text, s) || nameAnswer(text, s)
}

// nameAnswer reports whether s starts the answer to a question for a name on the line above
// ("bot: name?\nuser: keoni quispe is me", "what's the name on it?\nBinta: Raghav Wafula"): a
// question and its answer are one exchange, as a label and its value are.
func nameAnswer(text string, s int) bool {
	if s < 2 || text[s-1] != '\n' && (text[s-1] != ' ' || text[s-2] != ':') {
		return false
	}
	ls := s
	for ls > 0 && text[ls-1] != '\n' && s-ls < 40 {
		ls--
	}
	if ls == 0 || text[ls-1] != '\n' || !answersQuestion(text, ls, s) {
		return false
	}
	qs := ls - 1
	for qs > 0 && text[qs-1] != '\n' && ls-qs < 120 {
		qs--
	}
	q := text[qs : ls-1]
	for p := 0; p+4 <= len(q); p++ {
		if matchKeyword(q, p, "name") {
			return true
		}
	}
	return false
}

// dialogueNear reports whether the line before the line starting at ls is a chat line
// ("Hiwot: sure, what's the name on it?"), so that a name-like word before ": " at ls names a
// speaker too. Only the line before counts: what follows may not have been streamed yet, and
// SafePrefix must not pass a word that a later line could turn into a name.
func dialogueNear(text string, ls int) bool {
	if ls < 2 {
		return false
	}
	ps := ls - 1
	for ps > 0 && text[ps-1] != '\n' && ls-ps < 200 {
		ps--
	}
	return (ps == 0 || text[ps-1] == '\n') && chatLine(text, ps)
}

// chatLine reports whether the line at ls starts with a one-word speaker and a lower-case
// message: "Atieno: can you check the order?", "[09:15] user: hi".
func chatLine(text string, ls int) bool {
	k := ls
	for k < len(text) && k-ls < 40 && text[k] != '\n' {
		if text[k] == ':' && k+2 < len(text) && text[k+1] == ' ' && k > ls && text[k-1] != ' ' {
			if !speakerPrefix(text[ls:k+2]) || !isLower(text[k+2]) {
				return false
			}
			// A message is prose: its first word is followed by a space or punctuation, not
			// by "://", '=' or the end of the line as a field's value is ("source: http://...").
			we := wordEnd(text, k+2)
			return we < len(text) && strings.IndexByte(" ,!?", text[we]) >= 0
		}
		k++
	}
	return false
}

// leadingWords returns how many of ws, from the first, are ordinary words ("Yesterday",
// "Contact").
func leadingWords(ws []nameWord) int {
	k := 0
	for k < len(ws) && ws[k].flags&(gzFirst|gzLast|gzProbable) == 0 && ws[k].flags&gzWord != 0 {
		k++
	}
	return k
}

// greetingWord reports whether w is a one-word greeting of nameGreetings ("Olá", "Merhaba").
func greetingWord(w string) bool {
	var buf [16]byte
	lw, ok := lowerInto(buf[:0:len(buf)], w)
	return ok && greetingWords[string(lw)]
}

var greetingWords = map[string]bool{}

func init() {
	for _, g := range nameGreetings {
		if !strings.Contains(g, " ") {
			greetingWords[g] = true
		}
	}
}

// midSentence reports whether a capitalised word at s follows a lower-case word of its
// sentence directly (no punctuation between), so its capital marks a proper noun, and that word
// is not one that introduces places and things ("in", "at", "the", "our").
func midSentence(text string, s int) bool {
	ps, pe, p, ok := prevWord(text, s)
	if !ok || p != 0 || pe == ps || !isLower(text[ps]) {
		return false
	}
	var buf [16]byte
	lw, ok := lowerInto(buf[:0:len(buf)], text[ps:pe])
	return ok && !thingWords[string(lw)]
}

// animalNouns before a name, or in brackets after it, make it a pet, a horse or a ship.
var animalNouns = map[string]bool{
	"dog": true, "dogs": true, "puppy": true, "pup": true, "cat": true, "cats": true, "kitten": true,
	"rabbit": true, "bunny": true, "horse": true, "pony": true, "mare": true, "stallion": true,
	"gelding": true, "filly": true, "colt": true, "hamster": true, "parrot": true, "budgie": true,
	"tortoise": true, "turtle": true, "goldfish": true, "ferret": true, "pig": true, "goat": true,
	"beagle": true, "labrador": true, "retriever": true, "poodle": true, "terrier": true,
	"spaniel": true, "collie": true, "dachshund": true, "pug": true, "husky": true, "tabby": true,
	"ship": true, "vessel": true, "yacht": true, "boat": true, "ferry": true, "tanker": true,
	"trawler": true, "barge": true, "tug": true, "schooner": true, "steamer": true, "pet": true,
}

// animalRun reports whether an animal or vessel noun comes just before the run (a title
// between them allowed: "dog Lady Penelope") or opens a bracket after it ("Biscuit (Labrador").
func animalRun(text string, s, e int) bool {
	w, k := wordJustBefore(text, s)
	if isTitle(w) {
		w, k = wordJustBefore(text, k)
	}
	if w != "" && lowerWordIn(w, animalNouns) && (k+len(w) >= len(text) || text[k+len(w)] != '.') {
		return true // not after a sentence that ends with the noun: "their two dogs. Declan ..."
	}
	if strings.HasPrefix(text[e:], " (") && e+2 < len(text) && isLetterAt(text, e+2) {
		return completeWordIn(text, e+2, animalNouns)
	}
	return false
}

// wordJustBefore returns the word before s and its start when only spaces (or a title's '.')
// separate them: punctuation ends the search ("the cat. Anna said").
func wordJustBefore(text string, s int) (string, int) {
	j := s
	for k := 0; j > 0 && k < 2 && text[j-1] == ' '; k++ {
		j--
	}
	if j == s {
		return "", s
	}
	if j > 0 && text[j-1] == '.' {
		j--
	}
	w := wordEndingAt(text, j)
	return w, j - len(w)
}

// completeWordIn reports whether the word at j is in m and cannot grow (a byte follows it).
func completeWordIn(text string, j int, m map[string]bool) bool {
	we := wordEnd(text, j)
	return we < len(text) && lowerWordIn(text[j:we], m)
}

// theEndsAt reports whether the word "the" or "The" ends at j.
func theEndsAt(text string, j int) bool {
	return j >= 3 && (text[j-3:j] == "the" || text[j-3:j] == "The") && (j == 3 || !isWordByte(text[j-4]))
}

func lowerWordIn(w string, m map[string]bool) bool {
	var buf [24]byte
	lw, ok := lowerInto(buf[:0:len(buf)], w)
	return ok && m[string(lw)]
}

// placeCueAfter reports whether a lower-case place noun follows the run: after a title it makes
// the run a building or an institution named after a person ("Lady Margaret Hall chapel").
func placeCueAfter(text string, e int) bool {
	if e+1 >= len(text) || text[e] != ' ' || !isLower(text[e+1]) {
		return false
	}
	return completeWordIn(text, e+1, placeCues)
}

// businessNouns after a possessive name make it a shop or a restaurant: "Maria's Kitchen",
// "Gordon Ramsay's Savoy Grill".
var businessNouns = map[string]bool{
	"kitchen": true, "grill": true, "diner": true, "bakery": true, "trattoria": true, "bistro": true,
	"pizzeria": true, "deli": true, "tavern": true, "brewery": true, "pub": true, "bar": true,
	"cafe": true, "café": true, "restaurant": true, "salon": true, "barbers": true, "boutique": true,
	"emporium": true, "burgers": true, "bagels": true, "pies": true, "donuts": true, "steakhouse": true,
	"tearoom": true, "bookshop": true, "bookstore": true, "store": true, "shop": true, "market": true,
	"garage": true, "pharmacy": true, "florist": true, "patisserie": true, "creamery": true,
	"cantina": true, "taqueria": true, "noodles": true, "pizza": true, "chippy": true, "inn": true,
	"hotel": true, "tavola": true, "bakehouse": true, "smokehouse": true, "oyster": true,
}

// possessiveBusiness reports whether "'s" and up to three capitalised words ending in a
// business noun follow the run ending at e.
func possessiveBusiness(text string, e int) bool {
	j := afterPossessive(text, e)
	if j < 0 {
		return false
	}
	for n := 0; n < 3 && j < len(text) && isUpper(text[j]); n++ {
		we := wordEnd(text, j)
		if completeWordIn(text, j, businessNouns) {
			return true
		}
		if we >= len(text) || text[we] != ' ' {
			break
		}
		j = we + 1
	}
	return false
}

// afterPossessive returns where the word after "'s " or "’s " at e starts, or -1.
func afterPossessive(text string, e int) int {
	switch {
	case strings.HasPrefix(text[e:], "'s "):
		return e + 3
	case strings.HasPrefix(text[e:], "’s "):
		return e + 5
	}
	return -1
}

// thingWords before a capitalised word make it a place or a thing rather than a person.
var thingWords = map[string]bool{
	"in": true, "at": true, "near": true, "via": true, "into": true, "across": true,
	"around": true, "outside": true, "inside": true, "towards": true, "toward": true, "of": true,
	"on": true, "the": true, "a": true, "an": true, "this": true, "that": true, "our": true,
	"your": true, "their": true, "its": true, "his": true, "her": true, "my": true, "visit": true,
	"visiting": true, "using": true, "use": true, "run": true, "install": true, "hurricane": true,
	"storm": true, "typhoon": true, "cyclone": true, "project": true, "operation": true,
	"codename": true, "model": true, "brand": true,
}

// allWords reports whether every word of ws is an ordinary word and no known name.
func allWords(ws []nameWord) bool {
	for _, w := range ws {
		if w.flags&gzWord == 0 || w.flags&(gzFirst|gzLast|gzProbable) != 0 {
			return false
		}
	}
	return true
}

// noWords reports whether none of the words is an ordinary word.
func noWords(ws []nameWord) bool {
	for _, w := range ws {
		if w.flags&gzWord != 0 && w.flags&(gzFirst|gzLast) == 0 {
			return false
		}
	}
	return true
}

// placeLike reports whether the run names a place, organisation or thing: "the" just before
// it, a cue word right after it ("Jackson Heights station") or inside it after the first word
// ("Lincoln Park", "Victoria Station"); a cue word that is also a family name after an
// unambiguous given name, or after a probable name that a label or phrase introduces, is kept
// ("Jane Park", "Customer: Thandiwe Park").
func (d nameDetector) placeLike(text string, ws []nameWord) bool {
	s, e := ws[0].s, ws[len(ws)-1].e
	if k := s - 1; k > 2 && text[k] == ' ' && theEndsAt(text, k) {
		return true
	}
	var buf [24]byte
	for i := 1; i < len(ws); i++ {
		lw, ok := lowerInto(buf[:0:len(buf)], text[ws[i].s:ws[i].e])
		if !ok || !placeCues[string(lw)] {
			continue
		}
		f0 := ws[0].flags
		if ws[i].flags&gzLast != 0 && (f0&gzFirst != 0 && f0&gzAmbiguous == 0 || f0&gzProbable != 0 && strongCue(text, s)) {
			continue
		}
		return true
	}
	if t := space(text, e); t > 0 && isLetterAt(text, t) {
		te := wordEnd(text, t)
		if lw, ok := lowerInto(buf[:0:len(buf)], text[t:te]); ok && placeCues[string(lw)] {
			return true
		}
		if isCapWord(text[t:te]) && streetKind(text, t, te) != 0 {
			return true // a street named after a person: "Cecil Rhodes Drive", "Nelson Mandela Way"
		}
	}
	return false
}

// orgNames are organisations, brands and places named like people (folded, words joined by a
// space): "Morgan Stanley", "Johns Hopkins".
var orgNames = map[string]bool{}

func init() {
	for _, p := range strings.Split(`morgan stanley|goldman sachs|johns hopkins|charles schwab|wells fargo|
merrill lynch|lehman brothers|dow jones|harley davidson|rolls royce|mercedes benz|hewlett packard|
ernst young|walt disney|warner bros|louis vuitton|calvin klein|ralph lauren|tommy hilfiger|
hugo boss|estee lauder|marks spencer|john lewis|aston martin|tim hortons|grafana loki|
morgan hill|jackson hole|kaiser permanente|booz allen|jack daniels|ben jerry|dolce gabbana|
paul smith|ted baker|william hill|victoria beckham|hilton garden|ritz carlton|marriott bonvoy|
bank austria|john deere|sherwin williams|baker hughes|allen overy|clifford chance|
freshfields bruckhaus|slaughter may|skadden arps|cleveland clinic|mayo clinic|
carnegie mellon|johns hopkins university|morgan chase|jp morgan|charles river|
florence nightingale|james webb`, "|") {
		orgNames[strings.TrimSpace(p)] = true
	}
}

// orgName reports whether the words form a known organisation or brand name, or its first two
// words do ("Morgan Stanley Wealth").
func orgName(text string, ws []nameWord) bool {
	if len(ws) < 2 {
		return false
	}
	var buf [64]byte
	b := buf[:0]
	for i, w := range ws[:2] {
		if i > 0 {
			b = append(b, ' ')
		}
		k, ok := foldInto(b[len(b):cap(b)], text[w.s:w.e])
		if !ok {
			return false
		}
		b = b[:len(b)+len(k)]
	}
	return orgNames[string(b)]
}

// speakerLabel reports whether text[s:e] names the speaker of a chat line: at the start of a
// line (after an optional "[09:15] " or "00:01:20 " time), followed by ": " and a message that
// starts with a lower-case letter ("Atieno: can you check it?"), unlike a field label and its
// value ("Telefon: 030 1234567"); or with a capital when the lines around are a chat or a
// transcript ("Interviewer: Can you ...?" / "Kofi Mensah-Bonsu: I led ...").
func speakerLabel(text string, s, e int) bool {
	if e+2 >= len(text) || text[e] != ':' || text[e+1] != ' ' {
		return false
	}
	ls := skipLineTime(text, s)
	if ls < 0 {
		return false
	}
	// A capital after ": " is a field and its value, unless the lines around are a chat.
	return isLower(text[e+2]) || isUpper(text[e+2]) && (dialogueNear(text, lineStart(text, s)) ||
		proseMessage(text, e+2) && transcriptNear(text, ls, s))
}

// proseFollows reports whether a sentence goes on after e on the same line: a lower-case word
// after a space, or a word after ", ", ". ", "! " or "? ". After a chat role such as
// "Agent:" or "Client:" a single capitalised word is then the first word of a message ("Agent:
// Good day, ...", "Client: Howzit. My card ..."), not a name that fills the field.
func proseFollows(text string, e int) bool {
	j := e
	if j < len(text) && strings.IndexByte(",.!?", text[j]) >= 0 {
		j++
		if j < len(text) && text[j] == ' ' && j+1 < len(text) && isLetterAt(text, j+1) {
			return true
		}
		return false
	}
	return j+1 < len(text) && text[j] == ' ' && isLower(text[j+1])
}

// precededByOrgLabel reports whether a label of an organisation ("Employer:") ends just
// before s.
func precededByOrgLabel(text string, s int) bool { return labelBefore(text, s, orgLabels) }

// capsFieldValue reports whether the upper-case word text[s:e] alone fills a name field
// ("SURNAME: MCALLISTER"): a name phrase before it, the line ends after it, and it has four
// letters or more (not "TBD", nor "Patient DOB:") and is no ordinary word (as lower-case names
// after a strong cue: the field is the evidence).
func (d nameDetector) capsFieldValue(text string, s, e int) bool {
	k := e
	for k < len(text) && (text[k] == ' ' || text[k] == '\t') {
		k++
	}
	if e-s < 4 || k < len(text) && text[k] != '\n' && text[k] != '\r' || !precededBy(text, s, nameStrong) {
		return false
	}
	return d.lowerWordOK(text[s:e])
}

// skipBlanksBack returns the position before the spaces and tabs that end at s.
func skipBlanksBack(text string, s int) int {
	for s > 0 && (text[s-1] == ' ' || text[s-1] == '\t') {
		s--
	}
	return s
}

// stripPluralMark returns j before a "(s)" that ends at j, as forms write labels:
// "FIRST NAME(S):", "Name(s):".
func stripPluralMark(text string, j int) int {
	if j >= 3 && text[j-1] == ')' && (text[j-2] == 's' || text[j-2] == 'S') && text[j-3] == '(' {
		return j - 3
	}
	return j
}

// lineStart returns the start of the line holding s (at most 64 bytes back; further is no line
// start a speaker label can have).
func lineStart(text string, s int) int {
	ls := s
	for ls > 0 && text[ls-1] != '\n' && s-ls < 64 {
		ls--
	}
	return ls
}

// blanksBefore returns where the spaces and tabs (at most 8) that end before s begin: a label's
// ':' or a cue word may stand a few blanks before a name.
func blanksBefore(text string, s int) int {
	j := s
	for k := 0; j > 0 && k < 8 && (text[j-1] == ' ' || text[j-1] == '\t'); k++ {
		j--
	}
	return j
}

// precededByLabel reports whether a field label and ':' end just before s: "Owner: ".
func precededByLabel(text string, s int) bool { return labelBefore(text, s, nameLabels) }

// labelBefore reports whether one of the labels and ':' end just before s.
func labelBefore(text string, s int, labels []string) bool {
	j := blanksBefore(text, s)
	if j == 0 || text[j-1] != ':' {
		return false
	}
	j--
	for _, p := range labels {
		if j >= len(p) && matchKeyword(text, j-len(p), p) {
			return true
		}
	}
	return false
}

// tokenGoesOn reports whether a name candidate ending at e is only the start of a longer
// token: letters glued to digits ("G12 8QQ", a postcode) or an e-mail address's local part
// ("no-reply@", "Support+EU@"; the address is the entity, if any, not a name).
func tokenGoesOn(text string, e int) bool {
	if e < len(text) && isDigit(text[e]) {
		return true
	}
	for j := e; j < len(text) && j < e+64; j++ {
		if text[j] == '@' {
			return true
		}
		if !isLocalByte(text[j]) {
			return false
		}
	}
	return false
}

// emailFollows reports whether an e-mail address in angle brackets or parentheses, or as the
// next field of a CSV row, follows e: "Wanjiru Kamau <wkamau@...>", "Chidinma Okafor
// (c.okafor@...)", "Obinna Eze,o.eze@...".
func emailFollows(text string, e int) bool {
	j := e
	if j < len(text) && (text[j] == ' ' || text[j] == '"') {
		j++
	}
	if j >= len(text) || (text[j] != '<' && text[j] != '(' && text[j] != ',' && text[j] != ';' && text[j] != '\t') {
		return false
	}
	for k := j + 1; k < len(text) && k < j+65; k++ {
		switch text[k] {
		case '@':
			return k > j+1
		case '>', ')', ' ', '\n', ',', ';', '\t':
			return false
		}
	}
	return false
}

// emailMayFollow reports whether emailFollows(text, e) could still become true once more text
// arrives: the field after e has begun and text ends inside emailFollows' look-ahead. A stream
// must hold a name candidate until then (SafePrefix): the e-mail raises its score.
func emailMayFollow(text string, e int) bool {
	j := e
	if j < len(text) && (text[j] == ' ' || text[j] == '"') {
		j++
	}
	if j >= len(text) {
		return true
	}
	if text[j] != '<' && text[j] != '(' && text[j] != ',' && text[j] != ';' && text[j] != '\t' {
		return false
	}
	for k := j + 1; k < j+65; k++ {
		if k >= len(text) {
			return true
		}
		switch text[k] {
		case '@', '>', ')', ' ', '\n', ',', ';', '\t':
			return false // decided either way
		}
	}
	return false
}

// followedBy reports whether one of the words follows e after one space: "Dawit said".
func followedBy(text string, e int, words []string) bool {
	j := e
	if j < len(text) && text[j] == ' ' {
		j++
	}
	for _, w := range words {
		if j+len(w) <= len(text) && matchKeyword(text, j, w) {
			return true
		}
	}
	return false
}

// lowerSpan returns the end of a lower-case name starting with the word text[s:e] when a
// title, an introducing phrase or a field label precedes it ("my name is keoni quispe"), or -1.
// Each of its one to three words must be a known name or a word the model does not know as an
// ordinary word and finds name-like enough.
func (d nameDetector) lowerSpan(text string, s, e int) int {
	answer := false
	if s == 0 || !lowerCueBefore(text, s) && !func() bool { answer = nameAnswer(text, s); return answer }() || !d.lowerWordOK(text[s:e]) {
		return -1
	}
	strong := answer || precededBy(text, s, nameStrong) || precededByLabel(text, s) || precededByTitle(text, s)
	if !strong && !precededBy(text, s, nameMedium) && !(precededBy(text, s, nameLowerWeak) && d.givenLower(text[s:e])) {
		return -1
	}
	caps := allCaps(text[s:e]) // "NAME: ANAHERA VIRTANEN", as forms write it
	end, words, inverted := -1, 0, false
	for n, j := 0, s; n < 4; n++ {
		we := wordEnd(text, j)
		w := text[j:we]
		if w == "" || isCapWord(w) && !(caps && we-j == 1) || caps != allCaps(w) && !(caps && we-j == 1) {
			break
		}
		k := we
		if we-j == 1 && we+1 < len(text) && text[we] == '.' && words > 0 { // initial: "a. jayasuriya"
			k = we + 1
		} else {
			if !d.lowerWordOK(w) {
				if strong && words == 1 && d.lowerSurname(text, text[s:e], w, we) {
					end, words = we, 2
				}
				break
			}
			end = we
			words++
		}
		if caps && strong && !inverted && k+1 < len(text) && (text[k] == '/' && isLetterAt(text, k+1) || text[k] == ',' && text[k+1] == ' ') {
			// Family name first, as records and tickets write it: "LEOTA, TAVITA",
			// "DELA CRUZ/MARIA CLARA".
			inverted = true
			if text[k] == '/' {
				j = k + 1
				continue
			}
			k++
		}
		k = space(text, k)
		if k < 0 || !isLetterAt(text, k) {
			break
		}
		j = k
	}
	if (!strong || caps && !d.capsFieldValue(text, s, end)) && words < 2 { // "i'm keoni quispe", not "i'm gonna"; "TBD"
		return -1 // (but "SURNAME: MCALLISTER": a name field names what its value is)
	}
	if j := skipBlanksBack(text, s); !answer && j > 0 && text[j-1] == ',' && !precededBy(text, s, nameClosings) {
		return -1 // a list of lower-case words: "(id, full_name, dob, ssn)"
	}
	if words == 1 && !answer && !precededBy(text, s, nameStrong) && !precededByTitle(text, s) && proseFollows(text, end) {
		return -1 // "Customer: hiya, I'm moving": a chat role, then a message
	}
	if words == 1 && nameFlags(text[s:e])&gzAmbiguous != 0 {
		return -1 // "Agent: can you confirm ...": alone, a lower-case "can", "will", "may" is a word
	}
	return end
}

// givenLower reports whether w is a known given name or a probable name (the name model),
// neither ambiguous nor an ordinary word ("tshepo", not "mark" or "will"), as a weak cue
// requires before a lower-case name.
func (d nameDetector) givenLower(w string) bool {
	f := nameFlags(w)
	if f&(gzAmbiguous|gzNotName) != 0 {
		return false
	}
	m := d.modelFlags(w, nameProbableLLR)
	return m != gzWord && (f&gzFirst != 0 || m == gzProbable)
}

// lowerSurname reports whether the ordinary word w, ending at we, is the family name of the
// lower-case given name first after a strong cue ("my name is jane doe"). Without
// capitals only the end of the name tells a surname from the next words of the sentence, so
// the word must close the name: the text, the line or the clause ends after it, or a function
// word follows ("jane doe and ..."); "patient jane reports pain" and "jane asked" are not names.
func (d nameDetector) lowerSurname(text, first, w string, we int) bool {
	if f := nameFlags(first); f&gzFirst == 0 || f&gzAmbiguous != 0 || nameFlags(w) != 0 || d.modelFlags(w, 0) != gzWord {
		return false
	}
	if hasSuffixFold(w, "ed") || hasSuffixFold(w, "ing") || hasSuffixFold(w, "ly") {
		return false // verbs and adverbs: "jane asked", "jane speaking"
	}
	if we == len(text) || strings.IndexByte(",.;!?)\n\r", text[we]) >= 0 {
		return true
	}
	k := space(text, we)
	return k > 0 && isLetterAt(text, k) && lookupName(text[k:wordEnd(text, k)])&gzNotName != 0
}

// allCaps reports whether w has two or more letters, all upper case.
func allCaps(w string) bool {
	if len(w) < 2 {
		return false
	}
	for i := 0; i < len(w); {
		r, n := runeAt(w, i)
		if !unicode.IsUpper(r) && r != '\'' && r != '-' && r != '’' {
			return false
		}
		i += n
	}
	return true
}

// lowerCueWords holds the last word of every phrase, label and title that may precede a
// lower-case name: a cheap filter before the phrase lists are matched.
var lowerCueWords = map[string]bool{}

func init() {
	for _, l := range [][]string{nameStrong, nameMedium, nameLabels, nameLowerWeak} {
		for _, p := range l {
			addLowerCue(p)
		}
	}
	for t := range nameTitles {
		addLowerCue(t)
	}
}

// addLowerCue adds the last word of the phrase p to lowerCueWords (also for titles added by
// other files' init functions, which may run after this one).
func addLowerCue(p string) {
	if w := prevWordBefore(p+" ", len(p)+1); w != "" {
		lowerCueWords[w] = true
		h := cueHash([]byte(w))
		lowerCueBloom[h/64] |= 1 << (h % 64)
	}
}

// prevWordBefore returns the word that ends before s, skipping what precededBy, precededByLabel
// and precededByTitle skip (blanks, one ':', ',', '=', '="' or '.'), or "".
func prevWordBefore(text string, s int) string {
	j := blanksBefore(text, s)
	if j > 1 && text[j-1] == '"' && text[j-2] == '=' {
		j--
	}
	if j > 0 && strings.IndexByte(":,=.", text[j-1]) >= 0 {
		j--
		for k := 0; j > 0 && k < 2 && text[j-1] == ' '; k++ {
			j--
		}
	}
	j = stripPluralMark(text, j)
	k := j
	for k > 0 && j-k < 24 && (isAlpha(text[k-1]) || text[k-1] == '\'' || text[k-1] >= utf8.RuneSelf) {
		k--
	}
	return text[k:j]
}

// lowerCueBefore reports whether the word before s may end a cue for a lower-case name.
func lowerCueBefore(text string, s int) bool {
	var buf [32]byte
	lw, ok := lowerInto(buf[:0:len(buf)], prevWordBefore(text, s))
	if !ok || len(lw) == 0 {
		return false
	}
	h := cueHash(lw)
	return lowerCueBloom[h/64]&(1<<(h%64)) != 0 && lowerCueWords[string(lw)]
}

// lowerCueBloom is a one-hash Bloom filter over lowerCueWords: most words are rejected
// without a map lookup.
var lowerCueBloom [64]uint64

func cueHash(b []byte) uint32 {
	h := uint32(2166136261)
	for _, c := range b {
		h = (h ^ uint32(c)) * 16777619
	}
	return h % 4096
}

// lowerWordOK reports whether the lower-case word w can be part of a name after a strong cue:
// a known name, or a word of two letters or more that is neither an ordinary word nor a known
// non-name (the cue is the evidence; the model's score is not needed).
func (d nameDetector) lowerWordOK(w string) bool {
	f := nameFlags(w)
	return f&gzNotName == 0 && !isTitle(w) && !languageWord(w) && (f&(gzFirst|gzLast) != 0 || d.modelFlags(w, -1e9) == gzProbable)
}

// precededByTitle reports whether a title ("dr", "mrs.") ends just before s.
func precededByTitle(text string, s int) bool {
	j := s - 1
	if j < 1 || text[j] != ' ' {
		return false
	}
	if text[j-1] == '.' {
		j--
	}
	k := j
	for k > 0 && isAlpha(text[k-1]) {
		k--
	}
	// Not the end of a dotted token: "societe.fr cuando" is a domain, not a title.
	return k < j && (k == 0 || !isWordByte(text[k-1]) && strings.IndexByte(".@/-", text[k-1]) < 0) && (isTitle(text[k:j]) || tlArticleAt(text, k, j))
}

// closesGreeting reports whether a greeting's name ends at e: followed by ',', '!', ':' or a
// line break.
func closesGreeting(text string, e int) bool {
	return e == len(text) || strings.IndexByte(",!:\n\r", text[e]) >= 0
}

// precededBy reports whether one of the phrases ends just before s, allowing spaces and one
// ':' or ',' in between ("Name: John", "Thanks, Anna").
func precededBy(text string, s int, phrases []string) bool {
	j := blanksBefore(text, s)
	if j == s && !(j > 1 && (text[j-1] == '=' || text[j-1] == '"' && text[j-2] == '=')) {
		return false
	}
	if j == s && j > 1 && text[j-1] == '"' && text[j-2] == '=' { // name="Ana Lima"
		j--
	}
	if j > 0 && (text[j-1] == ':' || text[j-1] == ',' || text[j-1] == '=') {
		j--
		for k := 0; j > 0 && k < 2 && text[j-1] == ' '; k++ {
			j--
		}
	}
	j = stripPluralMark(text, j)
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

// citationScan returns the end of the initials after a family name that ends at e, written
// first as in author lists ("Okafor, C.", "Lee, J. K.", "Wang, X.Y."), or -1. The initials must
// be followed by a space, a line break or punctuation that ends the name; a lone "I." is the
// pronoun. more reports that text ends before this is decided (SafePrefix must wait).
func citationScan(text string, e int) (end int, more bool) {
	end = -1
	if e+1 >= len(text) {
		return -1, e >= len(text) || text[e] == ','
	}
	if text[e] != ',' || text[e+1] != ' ' {
		return -1, false
	}
	j, n := e+2, 0
	for ; n < 3; n++ {
		if j+1 >= len(text) {
			return -1, true
		}
		if !isUpper(text[j]) || text[j+1] != '.' {
			break
		}
		end, j = j+2, j+2
		if j+1 < len(text) && text[j] == ' ' && isUpper(text[j+1]) {
			if j+2 >= len(text) {
				return -1, true
			}
			if text[j+2] == '.' {
				j++
			}
		}
	}
	if end < 0 {
		return -1, false
	}
	if end >= len(text) {
		return end, true // a batch scan accepts it; a stream waits for the next byte
	}
	if strings.IndexByte(" ,;)\n\r\t", text[end]) < 0 || n == 1 && text[end-2] == 'I' {
		return -1, false
	}
	return end, false
}

// capsFamilyBefore returns the start of a family name in capitals written first before the given
// name starting at s, as records write it ("HALVORSEN, Ingrid M."), or -1: ", " ends just
// before s, and the word before it is all capitals, name-like (lowerWordOK), not a known given
// name and not an ordinary word, at the start of the text or after a space, '(' or a quote.
func (d nameDetector) capsFamilyBefore(text string, s int) int {
	if s < 4 || text[s-1] != ' ' || text[s-2] != ',' {
		return -1
	}
	e := s - 2
	b := e
	for b > 0 && (isAlpha(text[b-1]) || text[b-1] >= utf8.RuneSelf || text[b-1] == '-' || text[b-1] == '\'') {
		b--
	}
	if b > 0 && strings.IndexByte(" \t\n(\"'", text[b-1]) < 0 {
		return -1
	}
	w := text[b:e]
	if !allCaps(w) || !d.lowerWordOK(w) {
		return -1
	}
	if f := nameFlags(w); f&gzLast == 0 && (f&gzFirst != 0 || d.modelFlags(w, -1e9) == gzWord) {
		return -1
	}
	return b
}

// capsFamilyMayStart reports whether the all-capitals word text[cs:ce] may still turn out to be
// a family name written first (capsFamilyBefore): ", " and a capitalised word follow it, and
// that word is incomplete or a known given name. SafePrefix holds it until then.
func (d nameDetector) capsFamilyMayStart(text string, cs, ce int) bool {
	if ce >= len(text) {
		return true
	}
	if text[ce] != ',' {
		return false
	}
	if ce+2 >= len(text) {
		return true
	}
	if text[ce+1] != ' ' || !isUpper(text[ce+2]) {
		return false
	}
	ne := wordEnd(text, ce+2)
	if !wordDone(text, ne) {
		return true
	}
	f := nameFlags(text[ce+2 : ne])
	return f&gzFirst != 0 && f&gzAmbiguous == 0
}

// placeSurname reports whether the place name text[p:we] is the family name of the unambiguous
// known given name first before it: a title, an introducing phrase, a field label or a greeting
// precedes the given name, and the name ends after the place (",", ".", a line break or the end).
func (d nameDetector) placeSurname(text string, first nameWord, p, we int) bool {
	if first.flags&gzFirst == 0 && !(first.flags&gzProbable != 0 && strongCue(text, first.s)) || first.flags&gzAmbiguous != 0 || first.e+1 != p {
		return false // after a cue, a probable given name will do: "Name: Tiago Albuquerque Menezes"
	}
	if we < len(text) && strings.IndexByte(",.\n\r", text[we]) < 0 {
		// or a second family name after a cue: "Name: Tiago Albuquerque Menezes" (namerunning.go)
		return d.placeThenFamily(text, we) && (titleBefore(text, first.s) || strongCue(text, first.s))
	}
	return titleBefore(text, first.s) || strongCue(text, first.s) ||
		precededBy(text, first.s, nameGreetings) && closesGreeting(text, we)
}
