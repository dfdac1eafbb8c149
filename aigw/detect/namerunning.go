package detect

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Evidence for person names in running text that has no cue phrase or label (detect8, study
// sets 10 and 13), and for places and organisations that look like names. All of it is
// linguistic or layout evidence, not lists of names (README "Names in running text"):
//
//   - apposition with a role or kinship noun before the run ("our barber, Teodoro,", "my aunt
//     Ifeoluwa", "the late ...") or after it (an age, ", who", ", the club's treasurer", "as chief
//     executive", "'s younger sister"); a verb of speech after it, a verb that takes a person
//     before it ("married");
//   - a field label whose last word means "name" in some language ("Apja neve:"), or a name
//     label with a number ("Passenger 2:");
//   - a repeated mention of a full name within corefWindow bytes before, coordination with a full
//     name ("Koa and Leilani Kahananui"), credits and bylines, the addressee line above an
//     address, payees in capitals after a transfer cue;
//   - name shapes: Gaelic particles ("Ó hEochaidh", "Mac Giolla Phádraig") and capitalised
//     particles inside a run, Vietnamese middle names;
//   - vetoes: the head noun of an organisation, a place, a building or a product after, ending
//     or before the run in many languages, compounds ending in a place noun, "the" on the line
//     before, titled things, address lines, header rows, animal fields.
//
// It runs after the name rescorer (nameSpan), which was trained without it. Streaming: the
// evidence before a run and the repeated mention look only backwards (a bounded window, so that
// aigw/guard's windowed scan decides as a whole scan does); the evidence after a run reads a few
// words of its line or the next line, and SafePrefix holds the run until they are known
// (appositionPending, coordPending, addressBlockPending).

// corefWindow is how far before a run its full mention is searched (guard's stream context is
// 128 bytes).
const corefWindow = 120

// roleNouns before a run (a comma between allowed) make it a person: kinship, occupations and
// roles in several languages.
var roleNouns = []string{
	// kinship and relations
	"uncle", "aunt", "auntie", "cousin", "nephew", "niece", "grandmother", "grandfather", "grandma",
	"grandpa", "granny", "nan", "nana", "granddaughter", "grandson", "stepson", "stepdaughter",
	"stepmother", "stepfather", "mum", "mom", "dad", "fiancé", "fiancée", "fiance", "fiancee",
	"boyfriend", "girlfriend", "partner", "flatmate", "roommate", "housemate", "neighbour",
	"neighbor", "brother-in-law", "sister-in-law", "son-in-law", "daughter-in-law", "twin",
	"widow", "widower", "godson", "goddaughter", "godmother", "godfather", "classmate", "teammate",
	"late",
	// occupations and roles
	"waiter", "waitress", "chef", "cook", "guide", "host", "hostess", "boss", "accountant",
	"lawyer", "solicitor", "barrister", "counsel", "caretaker", "janitor", "founder", "co-founder",
	"chairman", "chairwoman", "chairperson", "director", "coach", "trainer", "goalkeeper", "keeper",
	"striker", "midfielder", "defender", "jockey", "rider", "captain", "skipper", "secretary",
	"treasurer", "vicar", "priest", "midwife", "surgeon", "consultant", "paramedic", "dentist",
	"pharmacist", "landlady", "driver", "courier", "plumber", "electrician", "builder", "gardener",
	"nanny", "babysitter", "tutor", "headteacher", "headmaster", "headmistress", "principal",
	"dean", "rector", "editor", "novelist", "poet", "painter", "sculptor", "photographer", "singer",
	"guitarist", "drummer", "bassist", "pianist", "violinist", "composer", "conductor", "producer",
	"actor", "actress", "dancer", "comedian", "presenter", "journalist", "correspondent",
	"columnist", "economist", "spokesperson", "spokesman", "spokeswoman", "quizmaster", "winner",
	"receptionist", "cashier", "clerk", "intern", "apprentice", "volunteer", "fellow", "alumna",
	"alumnus", "lecturer", "supervisor", "examiner", "reviewer", "translator", "interpreter",
	"architect", "engineer", "technician", "mechanic", "farmer", "fisherman", "shopkeeper",
	"baker", "butcher", "barber", "hairdresser", "mayor", "councillor", "senator", "minister",
	"officer", "executive", "ceo", "cfo", "cto", "president", "chair", "ambassador",
	// other languages: pt, es, it, fr, de, nl, tr, pl, sw, id
	"zelador", "zeladora", "porteiro", "síndico", "síndica", "alcalde", "alcaldesa", "sindaco",
	"sindaca", "primario", "primaria", "maire", "bürgermeister", "bürgermeisterin", "leiter",
	"leiterin", "juf", "meester", "başkanı", "müdürü", "avukat", "kierownik", "dyrektor", "mwalimu",
	"dokter", "bapak", "ibu", "tío", "tía", "primo", "prima", "abuela", "abuelo", "avó", "avô",
	"tio", "tia", "zio", "zia", "nonna", "nonno", "oncle", "tante", "onkel", "oma", "opa",
	"teyze", "amca", "dayı", "babaanne", "anneanne", "wujek", "ciocia", "babcia", "dziadek",
}

// kinship nouns after a possessive make its owner a person: "Yaw's older brother".
var kinship = map[string]bool{"brother": true, "sister": true, "wife": true, "husband": true,
	"son": true, "daughter": true, "mother": true, "father": true, "mum": true, "mom": true,
	"dad": true, "parents": true, "children": true, "kids": true, "cousin": true, "uncle": true,
	"aunt": true, "nephew": true, "niece": true, "grandmother": true, "grandfather": true,
	"grandson": true, "granddaughter": true, "fiancé": true, "fiancée": true, "girlfriend": true,
	"boyfriend": true, "widow": true, "widower": true, "stepson": true, "stepdaughter": true,
	"twin": true, "sons": true, "daughters": true, "brothers": true, "sisters": true}

// roleNounSet holds roleNouns and the kinship words of nameWeak, for the apposition after a run.
var roleNounSet = map[string]bool{}

// labelNameWords end a field label whose value is a person's name, in many languages: "Anyja
// neve:" (mother's name), "Apellido y nombre:", "Nome completo:", "Imię i nazwisko:".
var labelNameWords = map[string]bool{
	"name": true, "names": true, "nombre": true, "nombres": true, "apellido": true,
	"apellidos": true, "nome": true, "nomes": true, "sobrenome": true, "apelido": true, "nom": true,
	"prénom": true, "prénoms": true, "név": true, "neve": true, "naam": true, "achternaam": true,
	"voornaam": true, "navn": true, "fornavn": true, "etternavn": true, "efternavn": true,
	"namn": true, "efternamn": true, "förnamn": true, "nimi": true, "etunimi": true,
	"sukunimi": true, "imię": true, "nazwisko": true, "isim": true, "adı": true, "soyadı": true,
	"soyad": true, "jina": true, "nama": true, "tên": true, "ime": true, "prezime": true,
	"jméno": true, "příjmení": true, "meno": true, "priezvisko": true, "numele": true,
	"prenume": true, "vardas": true, "pavardė": true, "vārds": true, "uzvārds": true,
	"eesnimi": true, "perekonnanimi": true, "cognome": true, "nachname": true, "vorname": true,
	"familienname": true, "geburtsname": true, "surname": true, "forename": true, "forenames": true,
}

// headsAfter are organisation, place and building nouns and company forms that follow a name
// they are named after, in many languages ("Robert Bosch Stiftung", "Boreal Timber Oy").
var headsAfter = map[string]bool{
	"trust": true, "trustees": true, "books": true, "press": true, "publishing": true,
	"publishers": true, "productions": true, "records": true, "studios": true, "pictures": true,
	"films": true, "gallery": true, "galleries": true, "orchestra": true, "choir": true,
	"ensemble": true, "quartet": true, "stand": true, "legend": true, "lettings": true,
	"solicitors": true, "chambers": true, "estates": true, "builders": true, "motors": true,
	"stiftung": true, "stichting": true, "verlag": true, "klinikum": true, "gymnasium": true,
	"saal": true, "schule": true, "kirche": true, "platz": true, "straße": true, "strasse": true,
	"oy": true, "oyj": true, "ab": true, "asa": true, "aps": true, "ag": true, "sa": true,
	"spa": true, "srl": true, "sl": true, "bv": true, "nv": true, "kft": true, "zrt": true,
	"nyrt": true, "ltda": true, "lda": true, "pty": true, "plc": true, "kk": true, "bhd": true,
	"tbk": true, "llp": true, "lp": true, "sas": true, "sarl": true, "aş": true, "sro": true,
	"doo": true, "mah": true, "mahallesi": true, "cad": true, "caddesi": true, "sok": true,
	"sokak": true, "sk": true, "bulvarı": true, "bulvari": true, "köyü": true, "soi": true,
	"ward": true, "memorial": true, "award": true, "prize": true, "cup": true, "stakes": true,
}

// headsBefore are nouns that name a place, a building or an institution before the name it is
// named after (Romance word order, saints, Vietnamese administrative units): "Fundação Calouste
// Gulbenkian", "Casa Azulejo", "Saint Ursula", "Phường Bến Nghé".
var headsBefore = map[string]bool{
	"saint": true, "st": true, "san": true, "santa": true, "são": true, "sainte": true,
	"sant": true, "santo": true, "casa": true, "villa": true, "quinta": true, "hacienda": true,
	"finca": true, "palazzo": true, "castello": true, "fundação": true, "fundacao": true,
	"fundación": true, "fundacion": true, "fondazione": true, "fondation": true, "stichting": true,
	"escuela": true, "escola": true, "colegio": true, "colégio": true, "liceo": true, "lycée": true,
	"ospedale": true, "hôpital": true, "hospital": true, "clínica": true, "clinica": true,
	"instituto": true, "istituto": true, "universidad": true, "universidade": true,
	"università": true, "museo": true, "museu": true, "musée": true, "teatro": true,
	"théâtre": true, "biblioteca": true, "iglesia": true, "igreja": true, "chiesa": true,
	"basilica": true, "basílica": true, "hotel": true, "hôtel": true, "restaurante": true,
	"ristorante": true, "trattoria": true, "pousada": true, "hostal": true, "chez": true,
	"maison": true, "château": true, "chateau": true, "parque": true, "parco": true,
	"estádio": true, "estadio": true, "stadio": true, "collège": true, "école": true,
	"scuola": true, "aula": true, "auli": true, "szpital": true, "szkoła": true, "phường": true,
	"quận": true, "huyện": true, "xã": true, "tỉnh": true, "mount": true, "lake": true, "fort": true,
	"cape": true, "camp": true, "loch": true, "colonia": true, "barrio": true,
	"bairro": true, "mahalle": true, "kampung": true, "desa": true,
}

// compoundHeads end compounds that name places and buildings after people in Germanic
// languages: "Heinrich-Heine-Saal", "Willem de Zwijgerschool", "Sibeliuksenkatu".
var compoundHeads = []string{"saal", "schule", "school", "straße", "strasse", "platz", "kirche",
	"gasse", "halle", "zentrum", "stadion", "stiftung", "preis", "museum", "bibliothek", "institut",
	"gymnasium", "klinik", "krankenhaus", "bahnhof", "plein", "straat", "gracht", "kerk",
	"skolan", "gatan", "vägen", "katu", "allee", "brücke", "ufer", "damm"}

// addressLabels start a line whose capitalised words are parts of an address, not a person.
var addressLabels = []string{"address", "addr", "adres", "adresse", "anschrift", "domicilio",
	"dirección", "direccion", "endereço", "endereco", "indirizzo", "địa chỉ", "lakcím", "cím",
	"alamat", "adresa", "osoite", "adress", "morada", "home address", "postal address",
	"mailing address", "billing address", "shipping address"}

// extraTitles are titles of parliaments, councils, police, clergy and academia in several
// languages ("Hon. Wanjiku Kamau-Njoroge", "Cllr", "Garda", "dr hab. inż.").
var extraTitles = []string{"hon", "honourable", "cllr", "councillor", "deputy", "senator",
	"mayor", "minister", "garda", "archbishop", "hab",
	"inż", "mgr", "lek", "dipl", "ing", "ir", "drs", "lic", "licda", "arq", "mudr", "judr", "phdr",
	"mme", "mw", "dhr"}

// roleTitles are the titles of extraTitles that are also ordinary nouns of offices: a run of
// ordinary words after them is an office, not a name ("Deputy Speaker", "Minister for Health").
var roleTitles = map[string]bool{"deputy": true, "senator": true, "mayor": true, "minister": true,
	"councillor": true, "garda": true, "archbishop": true, "hon": true, "honourable": true}

// gaelicParticles join a given name to a family name in Irish and Scottish names; the word after
// them may carry a prothetic h, n or t ("Ó hUiginn", "Ní Bhriain", "Mac Giolla Bhríde").
var gaelicParticles = map[string]bool{"mac": true, "mc": true, "nic": true, "ní": true, "ó": true,
	"uí": true, "ua": true, "mhic": true, "bean": true}

// capParticles are other particles written with a capital inside a run: "Maria Luisa Dela Cruz",
// "Henry De Bromhead", "Kemang Wa Lehulere".
var capParticles = map[string]bool{"dela": true, "de": true, "del": true, "della": true,
	"van": true, "von": true, "da": true, "das": true, "dos": true, "di": true, "du": true,
	"la": true, "le": true, "ter": true, "ten": true, "bin": true, "binti": true, "ibn": true,
	"al": true, "el": true, "abu": true, "ap": true, "wa": true, "ben": true, "bat": true,
	"thị": true, "văn": true}

func init() {
	for _, t := range extraTitles {
		nameTitles[t] = true
	}
	for _, w := range roleNouns {
		roleNounSet[w] = true
	}
	for _, w := range []string{"manager", "colleague", "friend", "wife", "husband", "son",
		"daughter", "mother", "father", "brother", "sister", "client", "customer", "employee",
		"tenant", "student", "teacher", "doctor", "nurse", "partner", "owner", "member",
		"parents", "children", "sons", "daughters", "brothers", "sisters", "cousins"} {
		roleNounSet[w] = true
	}
	roleNouns = append(roleNouns, "parents", "children", "sons", "daughters", "brothers",
		"sisters", "cousins")
}

// particleWord returns the name word after a capitalised particle that starts at k and ends at
// we ("Ó Dálaigh", "Nic Giolla", "Dela Cruz"): its start and end, and the start of its
// capitalised part (after a prothetic h, n or t: "hUiginn"); ok false when text[k:we] is no
// such particle followed by a name word. gaelicOnly limits it to the Gaelic particles (at the
// start of a run, where "De", "La", "El" are more often words of a place or a sentence).
func (d nameDetector) particleWord(text string, k, we int, gaelicOnly bool) (ns, ne, core int, ok bool) {
	var buf [16]byte
	lw, lok := lowerInto(buf[:0:len(buf)], text[k:we])
	if !lok {
		return 0, 0, 0, false
	}
	gaelic := gaelicParticles[string(lw)]
	if !gaelic && (gaelicOnly || !capParticles[string(lw)]) {
		return 0, 0, 0, false
	}
	ns = space(text, we)
	if ns < 0 || !isLetterAt(text, ns) {
		return 0, 0, 0, false
	}
	ne = wordEnd(text, ns)
	core = ns
	if gaelic && ne-ns > 2 && strings.IndexByte("hnt", text[ns]) >= 0 {
		if r, _ := runeAt(text, ns+1); r < utf8.RuneSelf && isUpper(byte(r)) || r >= utf8.RuneSelf && isCapWord(text[ns+1:ne]) {
			core = ns + 1 // "hUiginn", "nGallchóir", "tSúilleabháin"
		}
	}
	if !isCapWord(text[core:ne]) {
		return 0, 0, 0, false
	}
	f := d.flags(text[core:ne])
	if f&gzNotName != 0 || f&gzWord != 0 && f&(gzFirst|gzLast) == 0 && gaelicOnly {
		return 0, 0, 0, false
	}
	return ns, ne, core, true
}

// orgPlaceRun reports whether the run ws names an organisation, a place or a building rather
// than a person (see the file comment).
func (d nameDetector) orgPlaceRun(text string, ws []nameWord) bool {
	s, e := ws[0].s, ws[len(ws)-1].e
	// "the" at the end of the line before: "... you have the\nFloor", "the\nIsaac Newton Trust".
	j := s
	for k := 0; j > 0 && k < 4 && (text[j-1] == ' ' || text[j-1] == '\t'); k++ {
		j--
	}
	if j > 0 && text[j-1] == '\n' {
		j--
		if j > 0 && text[j-1] == '\r' {
			j--
		}
		for k := 0; j > 0 && k < 4 && (text[j-1] == ' ' || text[j-1] == '\t'); k++ {
			j--
		}
		if theEndsAt(text, j) {
			return true
		}
	}
	// A head noun before the run, a particle between allowed: "Hospital de Santa Maria".
	w, k := wordJustBefore(text, s)
	if w != "" && lowerWordIn(w, capParticles) {
		w, _ = wordJustBefore(text, k)
	}
	if w != "" && isCapWord(w) && lowerWordIn(w, headsBefore) || lowerHeadBefore(text, s) || headBeforeTitle(text, s) {
		return true
	}
	if lowerWordIn(text[ws[0].s:ws[0].e], headsBefore) && len(ws) > 1 {
		return true
	}
	// A head noun or a company form after it or ending it: "Robert Bosch Stiftung", "Deniz
	// Tekstil A.Ş.", "Boreal Timber Oy".
	if headAfter(text, e) || len(ws) > 1 && lowerWordIn(text[ws[len(ws)-1].s:e], headsAfter) {
		return true
	}
	// A product noun after it: "Dr. Martens boots", "the new Siri features".
	if e+1 < len(text) && text[e] == ' ' && isLower(text[e+1]) && completeWordIn(text, e+1, productNouns) {
		return true
	}
	// A preposition of place before a run that ends in a place noun: "at Walter Sisulu Hall".
	if len(ws) > 1 && lowerWordIn(text[ws[len(ws)-1].s:e], placeCues) {
		if pw, _ := wordJustBefore(text, s); pw != "" && lowerWordIn(pw, placePrepositions) {
			return true
		}
	}
	// The right-hand side of a firm's name: "Hudig & Veder", "Smith & Wesson".
	if len(ws) == 1 && ws[0].flags&gzFirst == 0 && s >= 4 && text[s-3:s] == " & " {
		if lw, _ := wordJustBefore(text, s-2); lw != "" && isCapWord(lw) && nameFlags(lw)&gzFirst == 0 {
			return true
		}
	}
	// A compound ending in a place noun: "Heinrich-Heine-Saal", "Willem de Zwijgerschool".
	if compoundPlace(text[ws[len(ws)-1].s:e]) {
		return true
	}
	return addressLine(text, s) || headerRow(text, s) || animalFields(text, e) || len(ws) == 1 && weekdayDate(text, s, e)
}

// headerCells are column headers of person names; a row that has one of them as a whole cell
// before the run is a header row, whose other cells are headers too ("First name\tLast
// name\tSide").
var headerCells = map[string]bool{"name": true, "first name": true, "last name": true,
	"surname": true, "given name": true, "given names": true, "family name": true,
	"full name": true, "first_name": true, "last_name": true, "firstname": true, "lastname": true,
	"nombre": true, "apellido": true, "apellidos": true, "vorname": true, "nachname": true,
	"nom": true, "prénom": true, "nome": true, "sobrenome": true, "forename": true}

// headerRow reports whether the run at s is a cell of a header row: a whole cell before it on
// its line (tab, ';', '|' or ',' separated, at least two separators) is a name header.
func headerRow(text string, s int) bool {
	ls := s
	for ls > 0 && text[ls-1] != '\n' && s-ls < 256 {
		ls--
	}
	if ls > 0 && text[ls-1] != '\n' {
		return false
	}
	seps := 0
	cs := ls
	found := false
	for j := ls; j < s; j++ {
		c := text[j]
		if c != '\t' && c != ';' && c != '|' && c != ',' {
			continue
		}
		seps++
		cell := strings.TrimSpace(text[cs:j])
		if len(cell) <= 16 && lowerWordIn(cell, headerCells) {
			found = true
		}
		cs = j + 1
	}
	return found && seps >= 2
}

// animalFields reports whether a field of an animal's record follows the run on its line
// ("Patient: Winston   Species: canine   Breed: Labrador x"): the patient is a pet.
func animalFields(text string, e int) bool {
	for j := e; j < len(text) && j < e+48 && text[j] != '\n'; j++ {
		if text[j] != ':' {
			continue
		}
		k := j
		for k > e && isAlpha(text[k-1]) {
			k--
		}
		if w := text[k:j]; len(w) > 0 && lowerWordIn(w, animalFieldWords) {
			return true
		}
	}
	return false
}

var animalFieldWords = map[string]bool{"species": true, "breed": true, "microchip": true,
	"spezies": true, "rasse": true, "espèce": true, "race": true, "especie": true, "raza": true,
	"espécie": true, "raça": true, "razza": true, "ras": true}

// headAfter reports whether the token after e (dots removed: "A.Ş.", "Mah.") is a word of
// headsAfter.
func headAfter(text string, e int) bool {
	t := e
	if t < len(text) && text[t] == ' ' {
		t++
	} else {
		return false
	}
	var buf [24]byte
	b := buf[:0]
	dotted := false
	for j := t; j < len(text) && j-t < 16; {
		c := text[j]
		if c == '.' || c == '/' {
			dotted = true
			j++
			continue
		}
		if c < utf8.RuneSelf && !isAlpha(c) {
			break
		}
		r, n := utf8.DecodeRuneInString(text[j:])
		if c >= utf8.RuneSelf && !isLetterAt(text, j) {
			break
		}
		if len(b)+utf8.RuneLen(unicode.ToLower(r)) > cap(b) {
			return false
		}
		b = utf8.AppendRune(b, unicode.ToLower(r))
		j += n
	}
	if len(b) > 0 && len(b) <= 3 && !dotted && isLower(text[t]) {
		return false // company forms are written "SA", "S.A.", "AG", "Oy": "sa", "ag" are words (Tagalog "Nena sa")
	}
	return len(b) > 0 && headsAfter[string(b)]
}

// productNouns after a run make it a brand or a product named like a person.
var productNouns = map[string]bool{"boots": true, "shoes": true, "sneakers": true,
	"trainers": true, "sandals": true, "jeans": true, "jacket": true, "jackets": true,
	"handbag": true, "handbags": true, "perfume": true, "fragrance": true, "features": true,
	"feature": true, "update": true, "updates": true, "speaker": true, "speakers": true,
	"headphones": true, "earbuds": true, "phone": true, "phones": true, "laptop": true,
	"laptops": true, "tablet": true, "smartwatch": true, "whisky": true, "whiskey": true,
	"bourbon": true, "vodka": true, "gin": true, "rum": true, "beer": true, "lager": true,
	"cider": true, "sauce": true, "cereal": true, "chocolate": true, "biscuits": true,
	"cookies": true, "crisps": true, "chips": true, "yoghurt": true, "yogurt": true,
	"sales": true, "shares": true, "stock": true, "devices": true, "device": true,
	"subscription": true, "integration": true, "plugin": true, "extension": true}

// placePrepositions before a run that ends in a place noun make it a place.
var placePrepositions = map[string]bool{"at": true, "in": true, "near": true, "inside": true,
	"outside": true, "opposite": true, "behind": true, "into": true, "from": true, "to": true}

// compoundPlace reports whether the word w ends in a place noun of compoundHeads, after at least
// three more letters or a hyphen.
func compoundPlace(w string) bool {
	var buf [64]byte
	lw, ok := lowerInto(buf[:0:len(buf)], w)
	if !ok {
		return false
	}
	for _, h := range compoundHeads {
		if n := len(lw) - len(h); n >= 4 && string(lw[n:]) == h || n >= 1 && string(lw[n:]) == h && lw[n-1] == '-' {
			return true
		}
	}
	return false
}

// addressLine reports whether the line holding s starts with an address label and ':'.
func addressLine(text string, s int) bool {
	ls := s
	for ls > 0 && text[ls-1] != '\n' && s-ls < 160 {
		ls--
	}
	if ls > 0 && text[ls-1] != '\n' {
		return false
	}
	for ls < s && (text[ls] == ' ' || text[ls] == '\t' || text[ls] == '-' || text[ls] == '*') {
		ls++
	}
	c := strings.IndexByte(text[ls:s], ':')
	if c < 0 || c > 24 {
		return false
	}
	label := strings.TrimSpace(text[ls : ls+c])
	for _, a := range addressLabels {
		if len(label) == len(a) && matchKeyword(label, 0, a) {
			return true
		}
	}
	return false
}

// titledThing reports whether a titled run is a thing named after a person: "the Sir Bobby
// Robson stand", "the old boat, Sir Walter", or an office after a role title ("Deputy Speaker").
func titledThing(text string, s int, ws []nameWord) bool {
	tw, tk := wordJustBefore(text, s)
	if tw == "" || !isTitle(tw) {
		return false
	}
	if lowerWordIn(tw, roleTitles) && allWords(ws) {
		return true
	}
	w := ""
	if tk >= 2 && (text[tk-1] == '(' || text[tk-1] == ' ' && text[tk-2] == ',') {
		// "the old boat, Sir Walter", "the neighbour's cat (Mr Darcy)"
		j := tk - 1
		if text[j] == ' ' {
			j--
		}
		for j > 0 && text[j-1] == ' ' {
			j--
		}
		w = wordEndingAt(text, j)
	} else {
		w, _ = wordJustBefore(text, tk)
	}
	switch {
	case w == "the" || w == "The":
		return !lowerWordIn(tw, clergyTitles)
	case w != "" && lowerWordIn(w, animalNouns):
		return true
	}
	return false
}

// wordEndingAt returns the word of letters that ends at j.
func wordEndingAt(text string, j int) string {
	k := j
	for k > 0 && j-k < 24 && (isAlpha(text[k-1]) || text[k-1] >= utf8.RuneSelf) {
		k--
	}
	return text[k:j]
}

// clergyTitles keep a run after "the" a person: "the Reverend Olumide Adeyemi".
var clergyTitles = map[string]bool{"reverend": true, "rev": true, "revd": true, "rt": true,
	"very": true, "most": true, "venerable": true, "late": true}

// runningCue reports person evidence of running text around the run text[s:e] (see the file
// comment): a role noun before it, an apposition after it, a name label in another language,
// or a repeated mention.
func (d nameDetector) runningCue(text string, s, e int, ws []nameWord) bool {
	if roleBefore(text, s) || nameWordLabel(text, s) || appositionAfter(text, e) || verbBefore(text, s) || d.actionAfter(text, e, ws) || capRoleBefore(text, s) {
		return true
	}
	if f := ws[0].flags; len(ws) >= 2 && (noWords(ws) || f&gzFirst != 0 && f&gzAmbiguous == 0) && followedBy(text, e, speechVerbs) {
		// "Natarajan Chandrasekaran told analysts"; a given name alone before "said" stays
		// under the threshold, as TestScan requires ("Michael said it works.")
		return true
	}
	if len(ws) >= 2 && (strings.Contains(text[s:e], " Thị ") || strings.Contains(text[s:e], " Văn ")) {
		return true // Vietnamese names carry a gendered middle name: "Nguyễn Thị Hoa", "Trần Văn Nam"
	}
	if creditLine(text, s, e) || len(ws) >= 2 && addressBlockAfter(text, s, e) {
		return true
	}
	if len(ws) != 1 || d.nocoref || ws[0].flags&(gzWord|gzAmbiguous) != 0 && ws[0].flags&gzFirst == 0 {
		return false
	}
	return d.corefer(text, ws[0]) || d.coordinated(text, e)
}

// coordinators join two people's names: "Aoife and Eamonn McCartan", "Thuli & Sipho Zulu".
var coordinators = []string{" and ", " & ", " und ", " et ", " e ", " y ", " en ", " och ", " og ", " ve ", " i "}

// coordStart returns the start of the word after a coordinator that follows e, -1 when there is
// none, or len(text) when text ends inside the coordinator.
func coordStart(text string, e int) int {
	for _, c := range coordinators {
		if r := text[e:]; strings.HasPrefix(r, c) {
			return e + len(c)
		} else if len(r) < len(c) && strings.HasPrefix(c, r) {
			return len(text)
		}
	}
	return -1
}

// coordinated reports whether a single name-like word is joined by "and" to a full name that
// the rules take for a person ("Kalani and Mateus Figueiredo are ..."): the two are people.
func (d nameDetector) coordinated(text string, e int) bool {
	k := coordStart(text, e)
	if k < 0 || k >= len(text) || !isUpper(text[k]) {
		return false
	}
	d.nocoref, d.record = true, nil
	_, end, score := d.nameSpan(text, k, wordEnd(text, k), false)
	return end > 0 && score >= DefaultMinScore && strings.IndexByte(text[k:end], ' ') > 0
}

// coordPending reports whether coordinated(text, e) could still change once more text arrives:
// the word after the coordinator, or the run it starts, is not decided yet.
func (d nameDetector) coordPending(text string, e int) bool {
	k := coordStart(text, e)
	if k < 0 {
		return false
	}
	if k >= len(text) {
		return true
	}
	if !isUpper(text[k]) {
		return false
	}
	fe := wordEnd(text, k)
	if fe >= len(text) || !capRunClosed(text, fe) {
		return true
	}
	d.nocoref, d.record = true, nil
	_, end, _ := d.nameSpan(text, k, fe, false)
	return end > 0 && (emailMayFollow(text, end) || appositionPending(text, end) || addressBlockPending(text, k, end))
}

// speechVerbs after a run of two or more name-like words make it a person: "... said", "...
// told analysts".
var speechVerbs = []string{"said", "says", "told", "tells", "asked", "asks", "replied", "wrote",
	"writes", "explained", "explains", "added", "recalled", "recalls", "insisted", "admitted",
	"whispered", "shouted", "laughed", "smiled", "nodded", "shrugged", "sighed", "married",
	"died", "was born", "grew up", "pleaded", "testified",
	// pt, es, it, fr, de, nl, pl, tr
	"disse", "afirmou", "declarou", "dijo", "afirmó", "declaró", "ha detto", "ha dichiarato",
	"a déclaré", "a dit", "sagte", "erklärte", "zei", "verklaarde", "powiedział", "powiedziała",
	"dedi", "söyledi"}

// personVerbs before a run take a person as their object: "He married Salote", "we thanked
// Oksana".
var personVerbs = map[string]bool{"married": true, "divorced": true, "hugged": true,
	"kissed": true, "thanked": true, "hired": true, "appointed": true, "elected": true,
	"promoted": true, "congratulated": true, "interviewed": true, "mentored": true,
	"nominated": true, "marry": true, "thank": true, "congratulate": true}

// verbBefore reports whether a lower-case verb of personVerbs comes just before s.
func verbBefore(text string, s int) bool {
	if s < 2 || text[s-1] != ' ' {
		return false
	}
	w := wordEndingAt(text, s-1)
	return w != "" && isLower(w[0]) && lowerWordIn(w, personVerbs)
}

// roleBefore reports whether a lower-case role or kinship noun of roleNouns comes just before
// s, with one space or ", " between: "my uncle Fadi", "Our waiter, Bastian". A capitalised one
// is part of a job title ("Consultant Rheumatologist"), and one before ':' a label.
func roleBefore(text string, s int) bool {
	j := s
	if j < 2 || text[j-1] != ' ' && text[j-1] != '\n' {
		return false
	}
	j--
	if text[j-1] == ',' {
		j--
	}
	k := j
	for k > 0 && j-k < 24 && (isAlpha(text[k-1]) || text[k-1] >= utf8.RuneSelf || text[k-1] == '-') {
		k--
	}
	return k < j && isLower(text[k]) && (k == 0 || !isWordByte(text[k-1])) && lowerWordIn(text[k:j], roleNounSet)
}

// nameWordLabel reports whether a field label whose last word means "name" ends before s with a
// ':' ("Anyja neve: ", "Apellido y nombre: "), or a name label with a number ("Driver 1: ").
func nameWordLabel(text string, s int) bool {
	j := blanksBefore(text, s)
	if j == 0 || text[j-1] != ':' {
		return false
	}
	j--
	numbered := false
	if j > 0 && isDigit(text[j-1]) {
		for j > 0 && isDigit(text[j-1]) {
			j--
		}
		if j == 0 || text[j-1] != ' ' {
			return false
		}
		j--
		numbered = true
	}
	k := j - len(wordEndingAt(text, j))
	if k == j || k > 0 && (isDigit(text[k-1]) || text[k-1] == '_') {
		return false
	}
	if numbered {
		for _, p := range nameLabels {
			if j-k == len(p) && matchKeyword(text, k, p) {
				return true
			}
		}
		return false
	}
	return lowerWordIn(text[k:j], labelNameWords)
}

// appositionAfter reports whether an apposition that describes a person follows the run ending
// at e: an age (", 78," or " (34)"), a relative clause (", who"), or a role noun after a
// determiner (", her cousin", ", the company's founder", ", a partner at").
func appositionAfter(text string, e int) bool {
	if strings.HasPrefix(text[e:], " (") {
		// "Lerato Dube (34) said": an age, then punctuation or a lower-case word, not a number
		j := e + 2
		d := digitsAt(text, j)
		if d == j || d-j > 3 || d+1 >= len(text) || text[d] != ')' {
			return false
		}
		c := text[d+1]
		return c == ',' || c == '.' || c == ' ' && d+2 < len(text) && isLower(text[d+2])
	}
	if k := possessiveOrAs(text, e); k > 0 {
		// "Yaw's older brother" (kinship only: "Ashford's keeper" is a team's), "Oluwatoyin
		// Bamgbose as chief financial officer"
		found, _ := roleWordsAfter(text, k, 3, text[e] != ' ')
		return found
	}
	if e+2 >= len(text) || text[e] != ',' || text[e+1] != ' ' {
		return false
	}
	j := e + 2
	if d := digitsAt(text, j); d > j {
		return d-j <= 3 && d < len(text) && text[d] == ',' // "Hilda Brennan, 78, who"
	}
	if !isLower(text[j]) {
		return false
	}
	we := wordEnd(text, j)
	if we >= len(text) || text[we] != ' ' && text[we] != ',' {
		return false
	}
	var buf [24]byte
	lw, ok := lowerInto(buf[:0:len(buf)], text[j:we])
	if !ok {
		return false
	}
	switch string(lw) {
	case "who", "whose":
		return text[we] == ' '
	case "his", "her", "their", "my", "our", "your", "a", "an", "the":
	default:
		return false
	}
	// up to three words after the determiner: "the company's founder", "a senior partner"
	found, _ := roleWordsAfter(text, we, 3, false)
	return found
}

// possessiveOrAs returns the position of the space after "'s" or " as" that follows the run
// ending at e, or 0.
func possessiveOrAs(text string, e int) int {
	switch {
	case strings.HasPrefix(text[e:], "'s "):
		return e + 2
	case strings.HasPrefix(text[e:], "’s "):
		return e + 4
	case strings.HasPrefix(text[e:], " as "):
		return e + 3
	}
	return 0
}

// roleWordsAfter reads up to n lower-case words from the space at k and reports whether one of
// them is a role noun (found), or whether text ends before that is decided (pending).
func roleWordsAfter(text string, k, n int, kinOnly bool) (found, pending bool) {
	for c := 0; c < n; c++ {
		if k >= len(text) {
			return false, true
		}
		if text[k] != ' ' {
			return false, false
		}
		ws := k + 1
		if ws >= len(text) {
			return false, true
		}
		if !isLower(text[ws]) {
			return false, false
		}
		k = wordEnd(text, ws)
		if k >= len(text) {
			return false, true
		}
		w, _ := stripPossessive(text, ws, k)
		if kinOnly && lowerWordIn(text[ws:w], kinship) || !kinOnly && lowerWordIn(text[ws:w], roleNounSet) {
			return !isLetterAt(text, k), false
		}
	}
	return false, false
}

// appositionPending reports whether appositionAfter(text, e) could still change once more text
// arrives (SafePrefix must then hold the run): it reads the same words as appositionAfter and
// is decided as soon as one of them rules the apposition out.
func appositionPending(text string, e int) bool {
	if e >= len(text) {
		return true
	}
	if e+4 > len(text) && (text[e] == '\'' || text[e] == ' ' || strings.HasPrefix("’s ", text[e:])) {
		return true // "'s " or " as " may still come
	}
	if k := possessiveOrAs(text, e); k > 0 {
		_, pending := roleWordsAfter(text, k, 3, text[e] != ' ')
		return pending
	}
	if text[e] == ' ' {
		if e+1 >= len(text) {
			return true
		}
		if text[e+1] != '(' {
			return false
		}
		d := digitsAt(text, min(e+2, len(text)))
		return d >= len(text) || d > e+2 && d-e-2 <= 3 && text[d] == ')' && d+2 >= len(text)
	}
	if text[e] != ',' {
		return false
	}
	j := e + 1
	if j >= len(text) {
		return true
	}
	if text[j] != ' ' {
		return false
	}
	j++
	if j >= len(text) {
		return true
	}
	if isDigit(text[j]) {
		return digitsAt(text, j) >= len(text)
	}
	if !isLower(text[j]) {
		return false
	}
	we := wordEnd(text, j)
	if we >= len(text) {
		return true
	}
	var buf [24]byte
	lw, ok := lowerInto(buf[:0:len(buf)], text[j:we])
	if !ok {
		return false
	}
	switch string(lw) {
	case "his", "her", "their", "my", "our", "your", "a", "an", "the":
	default:
		return false // "who" is decided by the byte after it, which is known
	}
	_, pending := roleWordsAfter(text, we, 3, false)
	return pending
}

// corefer reports whether the one-word run w repeats a word of a name written in full within
// the corefWindow bytes before it: a family name after a given name ("Oluwatoyin Bamgbose ...
// Bamgbose joins") or a given name before a family name. The full mention counts when its
// other word is a known given name or a name-like word, and no capitalised word or place noun
// follows it ("Robert Bosch Stiftung" is not one).
func (d nameDetector) corefer(text string, w nameWord) bool {
	word := text[w.s:w.e]
	if w.e-w.s < 3 || w.flags&gzAmbiguous != 0 || w.flags&gzWord != 0 && w.flags&(gzFirst|gzLast) == 0 {
		return false
	}
	lo := max(0, w.s-corefWindow)
	for from := lo; from < w.s; {
		i := strings.Index(text[from:w.s], word)
		if i < 0 {
			return false
		}
		p := from + i
		q := p + len(word)
		from = q
		if p > 0 && isWordByte(text[p-1]) || q >= len(text) || isLetterAt(text, q) || q > w.s-1 {
			continue
		}
		if p == w.s {
			break
		}
		// a given name before it: "Oluwatoyin Bamgbose"
		if p-2 > lo && text[p-1] == ' ' {
			gs := p - 1
			for gs > lo && (isAlpha(text[gs-1]) || text[gs-1] >= utf8.RuneSelf || text[gs-1] == '-') {
				gs--
			}
			if gs < p-1 && gs > lo && isCapWord(text[gs:p-1]) && !isLetterAt(text, gs-1) && fullMentionEnd(text, q, w.s) {
				if f := d.flags(text[gs : p-1]); f&(gzAmbiguous|gzNotName|gzWord) == 0 &&
					d.mentionIsName(text[:w.s], gs, q) {
					return true
				}
			}
		}
		// a family name after it: "Paulo Tavares ... Paulo"
		if q+2 < w.s && text[q] == ' ' && w.flags&(gzFirst|gzProbable) != 0 {
			fs := q + 1
			fe := wordEnd(text, fs)
			if fe < w.s && isCapWord(text[fs:fe]) && fullMentionEnd(text, fe, w.s) {
				if f := d.flags(text[fs:fe]); f&(gzLast|gzProbable) != 0 && f&gzNotName == 0 && f&gzWord == 0 &&
					d.mentionIsName(text[:w.s], p, fe) {
					return true
				}
			}
		}
	}
	return false
}

// mentionIsName reports whether the rules (and the rescorer) take the full mention text[s:e]
// for a person: exactly that span, at or over the threshold ("Grafana Loki" is an organisation).
func (d nameDetector) mentionIsName(text string, s, e int) bool {
	d.nocoref, d.record = true, nil // not a candidate of its own: training must not see it twice
	// the run may start one or two capitalised words earlier: "Felipe Tuiasosopo Leaupepe"
	rs := s
	for c := 0; c < 2; c++ {
		if rs < 2 || text[rs-1] != ' ' {
			break
		}
		w := wordEndingAt(text, rs-1)
		if w == "" || !isCapWord(w) {
			break
		}
		rs -= len(w) + 1
	}
	for ; rs <= s; rs = wordEnd(text, rs) + 1 {
		if rs < s && isTitle(text[rs:wordEnd(text, rs)]) {
			continue // the title, not the name, starts there
		}
		// a title before the full mention confirms it: "Mme Hélène Garnier-Vidal ... Garnier-Vidal"
		tw, tk := wordJustBefore(text, rs)
		titled := tw != "" && d.titleAt(text, tk, tk+len(tw))
		if st, end, score := d.nameSpan(text, rs, wordEnd(text, rs), titled); end == e && st <= s {
			return score >= DefaultMinScore
		}
	}
	return false
}

// fullMentionEnd reports whether the full mention ending at e (before limit) is not followed by
// another capitalised word or a head noun: it names a person, not "Robert Bosch Stiftung".
func fullMentionEnd(text string, e, limit int) bool {
	if e+1 < limit && text[e] == ' ' && (isUpper(text[e+1]) || text[e+1] >= utf8.RuneSelf && isCapWord(text[e+1:wordEnd(text, e+1)])) {
		return false
	}
	return !headAfter(text[:limit], e) && !placeCueAfter(text[:limit], e)
}

// lowerTitle reports whether the lower-case word text[s:e] is a title that, after more titles,
// reaches a capitalised word: "mgr inż. Katarzyny", "dr hab. inż. Jan Kruk", "pan Jan".
func lowerTitle(text string, s, e int) bool {
	if !isLower(text[s]) || !isTitle(text[s:e]) || capOnlyTitles[text[s:e]] {
		return false
	}
	for c := 0; c < 4; c++ {
		if e < len(text) && text[e] == '.' {
			e++
		}
		ns := space(text, e)
		if ns < 0 || !isLetterAt(text, ns) {
			return false
		}
		e = wordEnd(text, ns)
		if !isTitle(text[ns:e]) {
			return isCapWord(text[ns:e])
		}
	}
	return false
}

// transferCues come before the payee or payer of a money transfer notice, who is often written
// in capitals: "sent to JOSEPH KAMAU 0722 ...", "imetumwa kwa ...", "FASTER PAYMENT FROM ...".
var transferCues = []string{"sent to", "paid to", "payment to", "payment from", "received from",
	"transfer to", "transfer from", "transferred to", "transferred from", "kwa", "kutoka kwa",
	"enviado a", "enviado para", "recebido de", "überweisung an", "virement à", "virement de"}

// capsTransferSpan returns the end of a name in capitals after a transfer cue: two or three
// words, the first a known unambiguous given name, the others known family names or name-like
// words, followed by a number or the end of the line; or -1.
func (d nameDetector) capsTransferSpan(text string, s, e int) int {
	if !allCaps(text[s:e]) || !precededBy(text, s, transferCues) {
		return -1
	}
	if f := nameFlags(text[s:e]); f&gzFirst == 0 || f&(gzAmbiguous|gzNotName) != 0 {
		return -1
	}
	end, n := e, 1
	for n < 3 {
		ns := space(text, end)
		if ns < 0 || !isLetterAt(text, ns) {
			break
		}
		ne := wordEnd(text, ns)
		if !allCaps(text[ns:ne]) || ne-ns < 2 {
			break
		}
		f := nameFlags(text[ns:ne])
		if f == 0 {
			f = d.modelFlags(text[ns:ne], nameProbableLLR)
		}
		if f&(gzLast|gzProbable) == 0 || f&(gzNotName|gzWord) != 0 && f&gzLast == 0 {
			break
		}
		end, n = ne, n+1
	}
	if n < 2 {
		return -1
	}
	if end == len(text) || text[end] == '\n' || text[end] == ' ' && end+1 < len(text) && (isDigit(text[end+1]) || text[end+1] == '+') {
		return end
	}
	return -1
}

// hyphenBreak returns the end of a name that a line break splits after a hyphen ("Amadi-\n
// Whitfield"): the capitalised word on the next line belongs to it. Otherwise e.
func hyphenBreak(text string, e int) int {
	if e+3 > len(text) || text[e] != '-' || text[e+1] != '\n' || !isUpper(text[e+2]) {
		return e
	}
	we := wordEnd(text, e+2)
	if we == len(text) || isDigit(text[we]) || !isCapWord(text[e+2:we]) {
		return e
	}
	return we
}

// creditLine reports whether the run stands alone on its line under a line that ends in "by"
// (film and theatre credits, bylines: "Directed by\nKanokwan Thammasiri").
func creditLine(text string, s, e int) bool {
	if s < 4 || text[s-1] != '\n' || e < len(text) && text[e] != '\n' && text[e] != '\r' {
		return false
	}
	j := s - 1
	for j > 0 && (text[j-1] == ' ' || text[j-1] == '\r') {
		j--
	}
	return j >= 3 && (text[j-2:j] == "by" || text[j-2:j] == "By") && text[j-3] == ' '
}

// placeThenFamily reports whether a capitalised word that is neither a given name, a place nor
// an ordinary word follows e after one space: a place word before it is then a first family name ("Tiago
// Albuquerque Menezes").
func (d nameDetector) placeThenFamily(text string, e int) bool {
	ns := space(text, e)
	if ns < 0 || !isUpper(text[ns]) {
		return false
	}
	ne := wordEnd(text, ns)
	f := d.flags(text[ns:ne])
	return f&(gzNotName|gzWord|gzFirst) == 0 && ne < len(text) && !isLetterAt(text, ne)
}

// addressBlockAfter reports whether the run stands alone at the start of its line and the next
// line starts a postal address: a house number and a capitalised word, or a unit or PO box
// ("Nomvula Dlamini-Sithole\nFlat 12, Alder Court, ..."): the addressee of a letter, a
// statement or a label.
func addressBlockAfter(text string, s, e int) bool {
	if s > 0 && text[s-1] != '\n' || e >= len(text) {
		return false
	}
	j := e
	if text[j] == '\r' {
		j++
	}
	if j >= len(text) || text[j] != '\n' {
		return false
	}
	j++
	if d := digitsAt(text, j); d > j && d-j <= 5 {
		return d+2 < len(text) && text[d] == ' ' && isUpper(text[d+1])
	}
	we := wordEnd(text, j)
	if we == j || we >= len(text) {
		return false
	}
	var buf [16]byte
	lw, ok := lowerInto(buf[:0:len(buf)], text[j:we])
	if !ok {
		return false
	}
	switch string(lw) {
	case "flat", "apt", "apartment", "unit", "suite", "po", "p", "c":
		return text[we] == ' ' || text[we] == '.' || text[we] == '/'
	}
	return false
}

// addressBlockPending reports whether addressBlockAfter(text, s, e) could still change once more
// text arrives.
func addressBlockPending(text string, s, e int) bool {
	if s > 0 && text[s-1] != '\n' {
		return false
	}
	if e >= len(text) {
		return true
	}
	j := e
	if text[j] == '\r' {
		j++
	}
	if j >= len(text) {
		return true
	}
	if text[j] != '\n' {
		return false
	}
	nl := strings.IndexByte(text[j+1:], '\n')
	return nl < 0 && len(text)-(j+1) < 12
}

// capWordNext reports whether a capitalised word follows e after one space: the run ended at an
// ordinary word the rules did not take as its family name ("my late mother, Wambui Nur"), so
// its span is not sure enough for running-text evidence to report it.
func capWordNext(text string, e int) bool {
	return e+1 < len(text) && text[e] == ' ' && isUpper(text[e+1])
}
