package detect

import (
	"slices"
	"strings"
)

// Things named like people: a ferry "Isle of Mull", a storm "Clodagh", a horse "Mrs Hudson",
// a sofa "Matilda", a firm "Procter & Gamble", a square "plaza de Isabel II". The name model
// cannot tell them from people (they ARE people's names); the words around them can: a head
// noun or classifier before ("the ferry", "Storm", "MV", "calle de") or after ("sofa",
// "bookcase", "ward"), a pedigree ("X (Y x Z)", "by X out of Y"), a firm's "&", a car maker,
// title quotes. thingNamed reads at most a few words either side of the span, so it is
// linear; the forward evidence only ever removes a name, which SafePrefix (holding back every
// word that may start a name) already allows for.

// thingHeads before a capitalised run classify it as an animal, a vessel, a storm or a work
// (several languages; folded to lower case): "the ferry X", "Storm X", "Färjan X", "la nave X".
var thingHeads = map[string]bool{
	// vessels
	"ferry": true, "ship": true, "vessel": true, "yacht": true, "tanker": true, "trawler": true,
	"liner": true, "lifeboat": true, "tug": true, "schooner": true, "färjan": true, "fartyget": true,
	"færgen": true, "skibet": true, "ferja": true, "skipet": true, "nave": true, "traghetto": true,
	"buque": true, "barco": true, "navire": true, "bateau": true, "veerboot": true, "schip": true,
	"fähre": true, "schiff": true, "prom": true, "statek": true, "loď": true, "navio": true,
	"redningsskøyta": true, "catamaran": true,
	// storms
	"storm": true, "hurricane": true, "typhoon": true, "cyclone": true, "sturm": true,
	"orkan": true, "tempête": true, "tormenta": true, "huracán": true, "uragano": true,
	"stormen": true, "tifón": true, "ouragan": true,
	// animals (animalNouns has the pets)
	"pigeon": true, "heifer": true, "cow": true, "bull": true, "calf": true, "steer": true,
	"ewe": true, "ram": true, "tup": true, "bitch": true, "hound": true, "racehorse": true,
	"greyhound": true, "sire": true, "dam": true, "stute": true, "hengst": true, "wallach": true,
	"duif": true, "jument": true, "yegua": true,
	"caballo": true, "cavallo": true, "pferd": true, "hund": true, "hündin": true, "perro": true,
	"chien": true, "cane": true, "pies": true, "kůň": true, "pes": true,
	// works
	"film": true, "movie": true, "song": true, "album": true, "novel": true,
	"opera": true, "musical": true, "sitcom": true, "película": true, "filme": true,
	"pelicula": true, "romanzo": true, "novela": true, "oper": true,
	"chanson": true, "canción": true, "canzone": true,
}

// vesselPrefixes are the ship prefixes written before a vessel's name (case as written).
var vesselPrefixes = map[string]bool{
	"MV": true, "MS": true, "M/S": true, "M/V": true, "SY": true, "RMS": true,
	"HMS": true, "HMCS": true, "HMAS": true, "USS": true, "SS": true, "RS": true, "FV": true,
	"MF": true, "M/F": true, "RV": true, "S/Y": true,
	"M/Y": true,
}

// thingTails after a run make it a thing: furniture and products ("Billy bookcase", "Arthur
// 3-seater sofa"), hospital wards, and firm suffixes ("Baker McKenzie LLP"). Lower case only
// for the ordinary nouns (a family name "Ward" or "Bench" stays a name).
var thingTails = map[string]bool{
	"sofa": true, "armchair": true, "footstool": true,
	"bookcase": true, "lamp": true, "wardrobe": true,
	"cabinet": true, "shelf": true, "shelving": true, "stool": true, "bench": true, "rug": true,
	"cushion": true, "mattress": true, "dresser": true, "sideboard": true, "ottoman": true,
	"settee": true, "recliner": true, "chaise": true, "bedframe": true, "headboard": true,
	"couch": true, "loveseat": true, "sectional": true, "pram": true,
	"ward": true, "wing": true, "sofá": true, "sessel": true, "stuhl": true, "tisch": true,
	"fauteuil": true, "canapé": true, "divano": true, "poltrona": true, "soffa": true,
	"fåtölj": true, "bookshelf": true, "nightstand": true,
}

// firmSuffixes after a run (any case as written) make it a company.
var firmSuffixes = map[string]bool{
	"Ltd": true, "LTD": true, "Ltd.": true, "plc": true, "PLC": true, "LLP": true, "LLC": true,
	"GmbH": true, "AG": true, "A/S": true, "AS": true, "ASA": true, "AB": true, "Oy": true,
	"SA": true, "S.A.": true, "SpA": true, "S.p.A.": true, "Srl": true, "S.r.l.": true,
	"BV": true, "B.V.": true, "NV": true, "N.V.": true, "Inc": true, "Inc.": true, "KG": true,
	"Pty": true, "SL": true, "S.L.": true, "sp.": true, "s.r.o.": true,
	"a.s.": true, "Lda": true, "Ltda": true,
}

// carMakers before a capitalised word make it a model: "Renault Zoe", "Toyota Yaris".
var carMakers = map[string]bool{
	"renault": true, "toyota": true, "nissan": true, "opel": true,
	"vauxhall": true, "peugeot": true, "citroën": true, "citroen": true, "fiat": true,
	"volkswagen": true, "vw": true, "skoda": true, "škoda": true, "kia": true, "hyundai": true,
	"honda": true, "mazda": true, "volvo": true, "tesla": true, "dacia": true,
	"bmw": true, "audi": true, "mercedes": true, "mercedes-benz": true, "suzuki": true,
	"subaru": true, "mitsubishi": true, "lexus": true, "porsche": true, "jeep": true,
	"chevrolet": true, "chevy": true, "lancia": true, "cupra": true,
	"yamaha": true, "kawasaki": true, "ducati": true, "boeing": true, "airbus": true,
}

// streetHeads before a run (or as its first word) make it a street, square, stop or station
// named after a person, in the languages whose street word comes first: "plaza de Isabel II",
// "plac Jana Kilińskiego", "estação Martim Moniz", "Aleja Jana Pawła II".
var streetHeads = map[string]bool{
	"calle": true, "plaza": true, "avenida": true, "glorieta": true, "paseo": true,
	"estación": true, "rua": true, "praça": true, "largo": true, "travessa": true,
	"estação": true, "piazza": true, "viale": true, "corso": true, "piazzale": true,
	"stazione": true, "rue": true, "boulevard": true, "gare": true, "quai": true, "ulica": true,
	"plac": true, "aleja": true, "rondo": true, "stacja": true,
	"przystanek": true, "náměstí": true, "ulice": true, "třída": true, "zastávka": true,
	"nábřeží": true, "haltestelle": true, "straat": true, "plein": true, "laan": true,
	"halte": true, "gata": true, "torg": true, "plads": true, "gade": true, "carrer": true,
	"plaça": true, "avinguda": true, "metrostation": true, "tram": true, "tramhalte": true,
	"lycée": true, "collège": true, "école": true, "escola": true, "colegio": true,
	"instituto": true, "liceo": true, "liceum": true, "gimnazjum": true,
	"szkoła": true, "hôpital": true, "ospedale": true, "szpital": true,
}

// streetJoins may stand between a street head and the name: "plaza de", "rue du".
var streetJoins = map[string]bool{
	"de": true, "del": true, "la": true, "di": true, "da": true, "do": true, "dos": true,
	"das": true, "du": true, "des": true, "della": true, "dello": true, "degli": true,
	"dei": true,
}

// thingNamed reports whether the person candidate text[s:e] names a thing, by the words
// around it.
func (d nameDetector) thingNamed(text string, s, e int) bool {
	sb := s // a title between the head and the name: "Storm Lady X", "out of Miss Marple"
	if w, k := wordJustBefore(text, s); w != "" && isTitle(w) {
		sb = k
	}
	if thingBefore(text, sb) || thingAfter(text, e) || titleQuoted(text, s, e) || pedigree(text, sb, e) || horseNotation(text, e) || productSize(text, e) || keeperAfter(text, e) || keptBy(text, e) {
		return true
	}
	if fe := shortWordEnd(text, s, e); fe < e {
		// the first word a head: "Aleja Jana Pawła", "Färjan Stena Danica", "Renault Zoe"
		w := text[s:fe]
		if lowerWordIn(w, streetHeads) || lowerWordIn(w, thingHeads) || lowerWordIn(w, carMakers) {
			return true
		}
	}
	if d.yearTitle(text, s, e) || thingList(text, s) || horseSuffix(text, e) || thingKey(text, sb) {
		return true
	}
	if sb != s && shortWordEnd(text, s, e) == e && lowerWordIn(wordEndingAt(text, skipBlanksBack(text, s)), nobleTitles) {
		// a noble title before an ordinary word that is no name, as horses and boats are called:
		// "Lord Accord", "Lady Helmsman" (an office's title keeps "Cllr Pickles")
		if f := d.flags(text[s:e]); f&gzWord != 0 && f&(gzFirst|gzLast|gzProbable) == 0 {
			return true
		}
	}
	return d.firmAmpersand(text, s, e)
}

// horseNotation reports whether a horse's colour, sex and age follow the name: "Mrs Hudson:
// b. f. 3yo", "Queen Bess (ch. m.)".
func horseNotation(text string, e int) bool {
	j := e
	if strings.HasPrefix(text[j:], ": ") || strings.HasPrefix(text[j:], " (") || strings.HasPrefix(text[j:], ", ") {
		j += 2
	} else {
		return false
	}
	n := 0
	for n < 4 && j < len(text) && isLower(text[j]) {
		n++
		j++
	}
	if n == 0 || n > 3 || !strings.HasPrefix(text[j:], ". ") || !strings.Contains("b br ch gr bl ro dk", text[j-n:j]) {
		return false
	}
	j += 2
	return j+1 < len(text) && strings.IndexByte("cfgmhr", text[j]) >= 0 && text[j+1] == '.'
}

// productSize reports whether a size or a pack count follows the name: "Jack Daniel's 70cl",
// "Ferrero Rocher 16pc", "Dr. Martens 1460" is not one (no unit).
func productSize(text string, e int) bool {
	j := e
	if strings.HasPrefix(text[j:], "'s") {
		j += 2
	} else if strings.HasPrefix(text[j:], "’s") {
		j += 4
	}
	if j+2 >= len(text) || text[j] != ' ' || !isDigit(text[j+1]) {
		return false
	}
	j++
	for n := 0; j < len(text) && n < 5 && (isDigit(text[j]) || text[j] == '.'); n++ {
		j++
	}
	u := j
	for j < len(text) && j-u < 4 && isAlpha(text[j]) {
		j++
	}
	if j < len(text) && isWordByte(text[j]) {
		return false
	}
	switch text[u:j] {
	case "ml", "cl", "l", "L", "g", "kg", "oz", "pc", "pcs", "pk", "mg", "lb", "lbs", "ltr", "GB", "TB", "mAh":
		return true
	}
	return false
}

// yearTitle reports whether a single given name (not a family name) is followed by a year in
// brackets, as a film or a book is ("Maria (2024)"); a family name there is a citation
// ("Smith (2019)").
func (d nameDetector) yearTitle(text string, s, e int) bool {
	if shortWordEnd(text, s, e) != e || e+7 > len(text) || text[e] != ' ' || text[e+1] != '(' || text[e+6] != ')' {
		return false
	}
	for j := e + 2; j < e+6; j++ {
		if !isDigit(text[j]) {
			return false
		}
	}
	f := d.flags(text[s:e])
	return f&gzFirst != 0 && f&gzLast == 0
}

// thingList reports whether the run is an item of a list (two separators on its line) that a
// heading names as things: "storm names 2026/27:" on the line before, "Setlist: Jolene /
// Roxanne / Layla". A heading that names people (owner, skipper, cast) keeps the names.
func thingList(text string, s int) bool {
	ls := s
	for n := 0; ls > 0 && text[ls-1] != '\n' && n < 200; n++ {
		ls--
	}
	le := s
	for n := 0; le < len(text) && text[le] != '\n' && n < 200; n++ {
		le++
	}
	line := text[ls:le]
	if strings.Count(line, ", ")+strings.Count(line, " / ") < 2 {
		return false
	}
	if c := strings.IndexByte(text[ls:s], ':'); c >= 0 {
		return thingHeading(text[ls : ls+c])
	}
	if ls < 2 || text[ls-2] != ':' {
		return false
	}
	ps := ls - 1
	for n := 0; ps > 0 && text[ps-1] != '\n' && n < 200; n++ {
		ps--
	}
	return thingHeading(text[ps : ls-1])
}

// listHeads name lists of works.
var listHeads = map[string]bool{"setlist": true, "tracklist": true, "playlist": true, "repertoire": true, "filmography": true, "discography": true}

// personRoles in a heading make its list one of people.
var personRoles = map[string]bool{
	"owner": true, "owners": true, "breeder": true, "breeders": true, "fancier": true,
	"fanciers": true, "keeper": true, "skipper": true, "skippers": true, "jockey": true,
	"jockeys": true, "trainer": true, "trainers": true, "rider": true, "riders": true,
	"driver": true, "handler": true, "exhibitor": true, "exhibitors": true, "director": true,
	"cast": true, "crew": true, "by": true, "with": true, "and": true, "staff": true,
	"to": true, "from": true, "attn": true, "contact": true,
}

// thingHeading reports whether a heading holds a thing noun (or its plural) and no person role.
func thingHeading(h string) bool {
	found := false
	for i := 0; i < len(h); {
		s, e := nextWord(h, i)
		if s < 0 {
			break
		}
		i = e
		w := h[s:e]
		if lowerWordIn(w, personRoles) {
			return false
		}
		// a plural or "names" makes it a list of things ("storm names", "Ferries:"); a bare
		// singular is a label ("Ship to:")
		if lowerWordIn(w, listHeads) || len(w) > 3 && w[len(w)-1] == 's' && lowerWordIn(w[:len(w)-1], thingHeads) {
			found = true
		}
		if lowerWordIn(w, thingHeads) && strings.HasPrefix(h[e:], " names") {
			found = true
		}
	}
	return found
}

// thingBefore reads the one or two words before s: a thing head ("the ferry", "Storm"), a
// vessel prefix ("MV"), a car maker, or a street head with an optional joining word.
func thingBefore(text string, s int) bool {
	w, k := wordJustBefore(text, s)
	if w == "" {
		return false
	}
	if lowerWordIn(w, thingHeads) || lowerWordIn(w, carMakers) {
		return true
	}
	if lowerWordIn(w, streetHeads) && (k == 0 || text[k-1] != '.' || !isUpper(text[k])) {
		return true
	}
	if vesselPrefixes[w] {
		return true
	}
	// "M/S Birger Jarl": the prefix holds a '/' that ends wordJustBefore's word
	if k >= 2 && text[k-1] == '/' && vesselPrefixes[text[k-2:k+len(w)]] {
		return true
	}
	if lowerWordIn(w, streetJoins) {
		w2, _ := wordJustBefore(text, k)
		return w2 != "" && lowerWordIn(w2, streetHeads)
	}
	if strings.HasSuffix(text[:s], "d'") || strings.HasSuffix(text[:s], "d’") {
		w2, _ := wordJustBefore(text, strings.LastIndexByte(text[:s], 'd'))
		return w2 != "" && lowerWordIn(w2, streetHeads)
	}
	return false
}

// thingAfter reads the word after e (one token like "3-seater" or "corner" may stand between):
// furniture, a ward, a firm suffix. A number after the noun makes it a place of the person
// ("Ann Lee ward 7", "J. Smith bench 4"), not the thing's name.
func thingAfter(text string, e int) bool {
	t := space(text, e)
	if t < 0 {
		return false
	}
	te := shortWordEnd(text, t, t+thingWordMax)
	if te < len(text) && text[te] == '.' && firmSuffixes[text[t:te+1]] {
		return true
	}
	if te > t && firmSuffixes[text[t:te]] && (te == len(text) || !isWordByte(text[te])) {
		return true
	}
	if isLower(text[t]) && tailNoun(text, t, te) {
		return true
	}
	// one modifier between: "Arthur 3-seater sofa", "Matilda corner sofa"
	if isLower(text[t]) || isDigit(text[t]) {
		if t2 := space(text, skipToken(text, t)); t2 > 0 && isLower(text[t2]) {
			return tailNoun(text, t2, shortWordEnd(text, t2, t2+thingWordMax))
		}
	}
	return false
}

// tailNoun reports whether text[t:te] is a thing tail not followed by a number.
func tailNoun(text string, t, te int) bool {
	if te == t || !lowerWordIn(text[t:te], thingTails) {
		return false
	}
	return te+1 >= len(text) || text[te] != ' ' || !isDigit(text[te+1])
}

// skipToken returns the end of the token at t (letters, digits, '-'), at most 16 bytes.
func skipToken(text string, t int) int {
	j := t
	for j < len(text) && j-t < 16 && (isWordByte(text[j]) || text[j] == '-') {
		j++
	}
	return j
}

// titleQuoted reports whether the run fills a pair of title quotes: “Emma”, «Ada Fremmerlid»,
// „Rebecca“; or straight quotes in a list of quoted items in running text (`picks: "Emma",
// "Rebecca" and "Dune"`), not a CSV row (`"Smith","John"`) nor a JSON array or object.
func titleQuoted(text string, s, e int) bool {
	if s == 0 || e >= len(text) {
		return false
	}
	for _, q := range [...][2]string{{"“", "”"}, {"«", "»"}, {"„", "“"}, {"»", "«"}} {
		if strings.HasSuffix(text[:s], q[0]) && strings.HasPrefix(text[e:], q[1]) {
			return true
		}
	}
	if text[s-1] != '"' || text[e] != '"' {
		return false
	}
	after := text[e+1:]
	before := text[:s-1]
	listed := strings.HasPrefix(after, ", \"") || strings.HasPrefix(after, " and \"") || strings.HasPrefix(after, " / \"") ||
		strings.HasSuffix(before, "\", ") || strings.HasSuffix(before, "\" and ") || strings.HasSuffix(before, "\" / ")
	if !listed {
		return false
	}
	for j, n := s-1, 0; j >= 0 && n < 200 && text[j] != '\n'; j, n = j-1, n+1 {
		if text[j] == '[' || text[j] == '{' || text[j] == '=' {
			return false // a JSON array or object, an assignment
		}
	}
	return true
}

// pedigree reports whether the run is an animal of a pedigree: "by X out of Y", "X (Y x Z)",
// "X (Y ex Z)" and the sire and dam inside such brackets.
func pedigree(text string, s, e int) bool {
	// "by Frankel out of Queen Bess": the sire after "by", the dam after "out of"
	if strings.HasPrefix(text[e:], " out of ") && strings.HasSuffix(text[:s], "by ") && e+8 < len(text) && isUpper(text[e+8]) {
		return true
	}
	if strings.HasSuffix(text[:s], " out of ") && !strings.HasPrefix(text[e:], "'s") && !strings.HasPrefix(text[e:], "’s") {
		if b := strings.LastIndex(text[max(0, s-48):s-8], "by "); b >= 0 {
			return true
		}
	}
	if strings.HasPrefix(text[e:], " (") && pedigreeParen(text, e+2) {
		return true
	}
	// inside the brackets: look back on the line (bounded) for the '('
	for j, n := s-1, 0; j >= 0 && n < 64; j, n = j-1, n+1 {
		c := text[j]
		if c == '\n' || c == ')' {
			return false
		}
		if c == '(' {
			return pedigreeParen(text, j+1)
		}
	}
	return false
}

// pedigreeParen reports whether the bracket opened at p (after '(') holds "Cap... x Cap..." or
// "Cap... ex Cap..." and closes on the line within 80 bytes.
func pedigreeParen(text string, p int) bool {
	if p >= len(text) || !isUpper(text[p]) {
		return false
	}
	end := min(len(text), p+80)
	for j := p; j < end; j++ {
		switch text[j] {
		case ')', '\n':
			return false
		case ' ':
			if j+4 < end && (text[j+1] == 'x' || text[j+1] == 'X' || text[j+1] == '×') && text[j+2] == ' ' && isUpper(text[j+3]) && isLower(text[j-1]) {
				return true
			}
			if j+5 < end && text[j+1] == 'e' && text[j+2] == 'x' && text[j+3] == ' ' && isUpper(text[j+4]) && isLower(text[j-1]) {
				return true
			}
		}
	}
	return false
}

// firmAmpersand reports whether a one-word run is joined to a capitalised word by "&" as a
// firm's name is ("Procter & Gamble", "Smith & Nephew"): not initials ("D. & K. Fairbairn"),
// and not a given name ("Jane & Tom").
func (d nameDetector) firmAmpersand(text string, s, e int) bool {
	if shortWordEnd(text, s, e) != e {
		return false
	}
	if d.flags(text[s:e])&gzFirst != 0 {
		return false
	}
	other := ""
	if strings.HasPrefix(text[e:], " & ") && e+3 < len(text) && isUpper(text[e+3]) {
		we := shortWordEnd(text, e+3, e+3+thingWordMax)
		if we < len(text) && text[we] == '.' {
			return false // initials: "Smith & K. Jones"
		}
		other = text[e+3 : we]
	} else if strings.HasSuffix(text[:s], " & ") && s >= 5 {
		other = wordEndingAt(text, s-3)
	}
	// a given name on either side makes a pair of people ("Marisol & Ilkka")
	return len(other) > 1 && isUpper(other[0]) && d.flags(other)&gzFirst == 0
}

// dropThings removes from out[n0:] the person candidates that thingNamed explains, and the
// other mentions of the same words ("Sir Gerald. Sir Gerald's owner, ..."): up to
// maxThingNames names are remembered, so the pass stays linear.
func (d nameDetector) dropThings(text string, out []Entity, n0 int) []Entity {
	if d.record != nil {
		return out // the rescorer's training sees the candidates it was built on
	}
	var things [maxThingNames]string
	n := 0
	k := n0
	for _, c := range out[n0:] {
		if c.Type == TypePerson && c.End-c.Start == 1 && c.End < len(text) && text[c.End] == '.' {
			continue // an initial alone ("Leg. E. Lindqvist" cut at the initial) is no name
		}
		if c.Type == TypePerson && d.thingNamed(text, c.Start, c.End) {
			if n < len(things) {
				things[n] = text[c.Start:c.End]
				n++
			}
			continue
		}
		out[k] = c
		k++
	}
	out = out[:k]
	if n == 0 {
		return out
	}
	k = n0
	for _, c := range out[n0:] {
		if c.Type == TypePerson && slices.Contains(things[:n], text[c.Start:c.End]) {
			continue
		}
		out[k] = c
		k++
	}
	return out[:k]
}

// maxThingNames bounds the things whose other mentions are dropped too.
const maxThingNames = 8

// keeperRoles after a possessive make the name an animal's or a boat's: "Sir Gerald's owner".
var keeperRoles = map[string]bool{
	"owner": true, "owners": true, "trainer": true, "breeder": true, "jockey": true,
	"rider": true, "handler": true, "skipper": true, "crew": true, "sire": true, "dam": true,
	"stable": true, "kennel": true, "hull": true, "mast": true, "hooves": true, "saddle": true,
}

// keeperAfter reports whether "'s" and a keeper's role follow the run.
func keeperAfter(text string, e int) bool {
	j := afterPossessive(text, e)
	if j < 0 || j >= len(text) || !isLower(text[j]) {
		return false
	}
	if tailWordIn(text, j, keeperRoles) {
		return true
	}
	// one adjective between: "Max's new owner", "Bella's proud breeder"
	we := shortWordEnd(text, j, j+thingWordMax)
	return we+1 < len(text) && text[we] == ' ' && isLower(text[we+1]) && tailWordIn(text, we+1, keeperRoles)
}

// animalNameKeys before "name:" make the value an animal's name: "Call name: Gracie",
// "Registered name: Tarnbeck Lady Grace".
var animalNameKeys = map[string]bool{
	"registered": true, "call": true, "kennel": true, "pet": true, "barn": true, "stable": true,
	"racing": true, "show": true, "dog": true, "cat": true, "horse": true, "animal": true,
	"vessel": true, "boat": true, "ship": true,
}

// thingKey reports whether the run is the value of a key that names a thing: "Schiff: Helene
// Fischer", "Bitch: Moorcroft Daisy", "Call name: Gracie".
func thingKey(text string, s int) bool {
	j := blanksBefore(text, s)
	if j < 2 || text[j-1] != ':' {
		return false
	}
	w := wordEndingAt(text, j-1)
	if w == "" {
		return false
	}
	if lowerWordIn(w, thingHeads) {
		return true
	}
	if !strings.EqualFold(w, "name") {
		return false
	}
	k := j - 1 - len(w)
	if k < 2 || text[k-1] != ' ' {
		return false
	}
	w2 := wordEndingAt(text, k-1)
	return w2 != "" && lowerWordIn(w2, animalNameKeys)
}

// tailWordIn reports whether the short word at j is in m.
func tailWordIn(text string, j int, m map[string]bool) bool {
	we := shortWordEnd(text, j, j+thingWordMax)
	return we > j && lowerWordIn(text[j:we], m)
}

// thingWordMax bounds the words read after a name: the nouns and suffixes looked for are short.
const thingWordMax = 24

// shortWordEnd is wordEnd read no further than lim (a text without spaces is one long word:
// reading it whole for every candidate would be quadratic).
func shortWordEnd(text string, i, lim int) int {
	return wordEnd(text[:min(len(text), lim+1)], i)
}

// horseSuffix reports whether a racehorse's country of breeding follows the name in the
// suffix codes of racing (which differ from the sports codes a person's result carries):
// "Duke Of Wellington (IRE)", "Mrs Hudson (FR)"; or its sire in brackets: "Queen Bess (by
// Galileo)".
func horseSuffix(text string, e int) bool {
	if !strings.HasPrefix(text[e:], " (") {
		return false
	}
	r := text[e+2:]
	for _, c := range [...]string{"IRE)", "FR)", "GB)", "ITY)", "NZ)", "SAF)"} {
		if strings.HasPrefix(r, c) {
			return true
		}
	}
	if strings.HasPrefix(r, "by ") && len(r) > 3 && isUpper(r[3]) {
		return true
	}
	return filmRating(text, e, r)
}

// filmRating reports whether a film's certificate follows the name in brackets: "Elvis (12A)",
// "Paddington (PG)"; a bare age-like one ("(15)") only on a programme line that starts with a
// clock time ("9.00pm  Priscilla (15)"), since "Tom (15)" is a child's age.
func filmRating(text string, e int, r string) bool {
	for _, c := range [...]string{"PG)", "12A)", "PG-13)", "NC-17)", "U)", "PG13)"} {
		if strings.HasPrefix(r, c) {
			return true
		}
	}
	if !(strings.HasPrefix(r, "12)") || strings.HasPrefix(r, "15)") || strings.HasPrefix(r, "18)")) {
		return false
	}
	ls := e
	for n := 0; ls > 0 && text[ls-1] != '\n' && n < 40; n++ {
		ls--
	}
	if ls > 0 && text[ls-1] != '\n' {
		return false
	}
	// a clock time first: "9.00pm", "19:30", "Sat 2pm" is not one (no separator)
	j := ls
	for j < e && isDigit(text[j]) {
		j++
	}
	return j > ls && j-ls <= 2 && j+2 < e && (text[j] == ':' || text[j] == '.') && isDigit(text[j+1]) && isDigit(text[j+2])
}

// nobleTitles are the titles that animals, boats and works borrow ("Sir Lancelot", "Lady
// Helmsman", "Mister Coffey"); an office's title (Cllr, Dr, Mr) goes with real people.
var nobleTitles = map[string]bool{
	"sir": true, "lady": true, "lord": true, "dame": true, "miss": true, "mister": true,
	"master": true, "duke": true, "queen": true, "king": true, "prince": true, "princess": true,
	"don": true, "doña": true, "count": true, "countess": true, "baron": true, "captain": true,
}

// keptByPhrases after a run say that someone rides, trains, owns or sails it: "Don Ramón,
// montado por Luis", "Jolie Brise   skipper Matt Lawrence". A capitalised name must follow.
var keptByPhrases = [...]string{
	"ridden by ", "trained by ", "owned by ", "bred by ", "skippered by ", "sailed by ",
	"helmed by ", "montado por ", "monté par ", "geritten von ", "gereden door ",
	"skipper ", "jockey ", "owner ", "trainer ", "rider ", "handler ",
}

// keptBy reports whether spaces (or a comma) and a keeper's phrase and a capitalised word
// follow the run. The bare role nouns count only after spaces: "Ana Ruiz, owner" is an
// apposition to a person.
func keptBy(text string, e int) bool {
	j := e
	comma := false
	if j < len(text) && text[j] == ',' {
		comma = true
		j++
	}
	k := j
	for j < len(text) && j-k < 12 && (text[j] == ' ' || text[j] == '\t') {
		j++
	}
	if j == k {
		return false
	}
	r := text[j:min(len(text), j+24)]
	for i, p := range keptByPhrases {
		if strings.HasPrefix(r, p) && len(text) > j+len(p) && isUpper(text[j+len(p)]) {
			return !comma || i < 11 // the "by" phrases, not the bare nouns, after a comma
		}
	}
	return false
}
