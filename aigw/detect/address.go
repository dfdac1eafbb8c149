package detect

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// addressDetector finds street addresses in four layouts:
//
//	A "742 Evergreen Terrace", "221B Baker St", "1600 N 5th Ave NW"   number, name, street type
//	B "12 rue de la Paix", "8 bis avenue Foch"                        number, type, name (French)
//	C "Hauptstraße 12", "Berliner Allee 5a", "Keizersgracht 123"      name with type, number
//	D "Calle de Alcalá 23", "Via Roma 10", "Rua Augusta, 274"         type, name, number
//
// followed optionally by a unit ("Apt 4B", "Suite 200", "#12") and by a locality that carries a
// postal code or state ("Springfield, IL 62704", "London SW1A 2AA", "10115 Berlin"). A locality
// without a postal code or state is not included: "12 Oak Street, Springfield and ..." is
// ambiguous.
type addressDetector struct{}

const (
	addrScore       = 0.7
	addrAbbrScore   = 0.65 // "St", "Rd": also abbreviations of other words
	addrLocalBoost  = 0.2  // a locality with a postal code or state follows
	addrMaxName     = 5    // name words between number and street type
	addrNoTypeScore = 0.7  // layout E: no street type, but a locality with a postal code follows
	addrPOBoxScore  = 0.6
)

var addressContext = &contextRule{
	pos: newKeywords("address", "addr", "live at", "lives at", "living at", "located at", "reside",
		"resides", "residing", "ship to", "shipping", "deliver to", "delivery", "billing", "mailing",
		"home", "visit us at", "office at", "moved to", "adresse", "anschrift", "wohne", "wohnt",
		"dirección", "direccion", "domicilio", "indirizzo", "endereço", "adres", "woon", "habite"),
	boost: 0.1,
}

// Kinds of street words.
const (
	stSuffix = 1 << iota // English type after the name: "Street", "Ave"
	stAbbr               // an abbreviation ("St", "Rd"), weaker
	stFrench             // French type after the number: "rue", "avenue"
	stPrefix             // type before the name: "Calle", "Via", "Rua"
	stGerman             // separate German/Dutch type word after an adjective: "Straße", "Allee"
	stAfter              // type after the name, often lower case: "utca", "út", "gate", "Cad.", "Sok."
)

var streetWords = map[string]int{
	"street": stSuffix, "st": stSuffix | stAbbr, "avenue": stSuffix | stFrench, "ave": stSuffix | stAbbr,
	"av": stSuffix | stAbbr | stPrefix, "road": stSuffix, "rd": stSuffix | stAbbr, "boulevard": stSuffix | stFrench,
	"blvd": stSuffix | stAbbr, "lane": stSuffix, "ln": stSuffix | stAbbr, "drive": stSuffix,
	"dr": stSuffix | stAbbr, "court": stSuffix, "ct": stSuffix | stAbbr, "way": stSuffix,
	"place": stSuffix | stFrench, "pl": stSuffix | stAbbr, "terrace": stSuffix, "ter": stSuffix | stAbbr,
	"parkway": stSuffix, "pkwy": stSuffix | stAbbr, "highway": stSuffix, "hwy": stSuffix | stAbbr,
	"square": stSuffix | stFrench, "sq": stSuffix | stAbbr, "circle": stSuffix, "cir": stSuffix | stAbbr,
	"trail": stSuffix, "trl": stSuffix | stAbbr, "crescent": stSuffix, "cres": stSuffix | stAbbr,
	"close": stSuffix, "grove": stSuffix, "gardens": stSuffix, "row": stSuffix, "mews": stSuffix,
	"alley": stSuffix, "plaza": stSuffix | stPrefix, "loop": stSuffix, "pike": stSuffix,
	"expressway": stSuffix, "causeway": stSuffix, "turnpike": stSuffix,
	"rue": stFrench, "bd": stFrench, "chemin": stFrench, "allée": stFrench, "impasse": stFrench,
	"quai": stFrench, "cours": stFrench, "route": stFrench, "passage": stFrench,
	"calle": stPrefix, "avenida": stPrefix, "avda": stPrefix, "paseo": stPrefix, "camino": stPrefix,
	"carrera": stPrefix, "via": stPrefix, "viale": stPrefix, "piazza": stPrefix, "corso": stPrefix,
	"largo": stPrefix, "vicolo": stPrefix, "rua": stPrefix, "ul": stPrefix, "ulica": stPrefix, "travessa": stPrefix, "praça": stPrefix,
	"alameda": stPrefix, "rambla": stPrefix, "ronda": stPrefix, "carretera": stPrefix, "plazuela": stPrefix,
	"jl": stPrefix, "jalan": stPrefix, "gg": stPrefix, "lorong": stPrefix, "persiaran": stPrefix,
	"rehov": stPrefix, "rechov": stPrefix, "sderot": stPrefix, "derech": stPrefix,
	"jr": stPrefix, "jirón": stPrefix, "pje": stPrefix, "psje": stPrefix, "pasaje": stPrefix, "soi": stPrefix, "thanon": stPrefix, "calea": stPrefix,
	"bulevardul": stPrefix, "bd-ul": stPrefix, "strada": stPrefix, "aleja": stPrefix, "al": stPrefix,
	"plac": stPrefix, "os": stPrefix, "osiedle": stPrefix, "avinguda": stPrefix, "carrer": stPrefix,
	"utca": stAfter, "út": stAfter, "útja": stAfter, "tér": stAfter, "körút": stAfter, "köz": stAfter,
	"sor": stAfter, "u": stAfter, "krt": stAfter, "gate": stAfter, "gata": stAfter, "vei": stAfter,
	"veien": stAfter, "vej": stAfter, "gade": stAfter, "cad": stAfter, "cd": stAfter,
	"caddesi": stAfter, "sok": stAfter, "sk": stAfter, "sokak": stAfter, "sokağı": stAfter,
	"bulvarı": stAfter, "mah": stAfter, "mahallesi": stAfter, "ulice": stAfter, "náměstí": stAfter,
	"straße": stGerman, "strasse": stGerman, "str": stGerman | stPrefix, "allee": stGerman, "weg": stGerman,
	"platz": stGerman, "ring": stGerman, "damm": stGerman, "gasse": stGerman, "chaussee": stGerman,
}

// germanSuffixes end compound street names: "Hauptstraße", "Lindenweg", "Keizersgracht".
// Endings that are also English words ("ring": "Spring 2024", "gate", "gade": "Brigade 5") are
// left out.
var germanSuffixes = []string{"straße", "strasse", "str.", "weg", "gasse", "platz", "allee",
	"damm", "ufer", "chaussee", "steig", "pfad", "straat", "laan", "gracht", "plein", "kade",
	"singel", "dijk", "vej", "gatan", "vägen", "veien", "vegur", "stræti", "braut", "katu", "kuja",
	"polku", "tie", "gränd", "stien", "vænget"}

// nameParticles may appear inside French, Spanish, Italian and Portuguese street names.
var nameParticles = map[string]bool{
	"de": true, "du": true, "des": true, "la": true, "le": true, "les": true, "del": true,
	"della": true, "delle": true, "dei": true, "degli": true, "di": true, "da": true, "das": true,
	"do": true, "dos": true, "los": true, "las": true, "y": true, "e": true, "l'": true, "d'": true,
	"of": true, "the": true,
}

var directionals = map[string]bool{
	"N": true, "S": true, "E": true, "W": true, "NE": true, "NW": true, "SE": true, "SW": true,
	"North": true, "South": true, "East": true, "West": true,
}

var unitWords = map[string]bool{
	"apt": true, "apartment": true, "suite": true, "ste": true, "unit": true, "flat": true,
	"apto": true, "depto": true, "dpto": true, "daire": true, "lokal": true, "sala": true,
}

// commaUnitWords start a unit only after a comma: "12 Main St, Floor 3" but not "... Main St
// Room 404 is booked".
var commaUnitWords = map[string]bool{
	"fl": true, "floor": true, "room": true, "rm": true, "bldg": true, "building": true,
	"of": true, "oficina": true, "torre": true, "interior": true,
}

// usStates holds US state, territory, Canadian province and Australian state codes (WA, SA
// and NT are shared).
var usStates = map[string]bool{}

func init() {
	for _, s := range strings.Fields(`AL AK AZ AR CA CO CT DE DC FL GA HI ID IL IN IA KS KY LA ME MD
		MA MI MN MS MO MT NE NV NH NJ NM NY NC ND OH OK OR PA RI SC SD TN TX UT VT VA WA WV WI WY
		PR GU VI AS MP AB BC MB NB NL NS NT NU ON PE QC SK YT NSW VIC QLD TAS ACT`) {
		usStates[s] = true
	}
}

func (addressDetector) Detect(text string, out []Entity) []Entity {
	out = scriptAddresses(text, out)
	for i := 0; i < len(text); {
		c := text[i]
		switch {
		case isDigit(c):
			if numLeftOK(text, i) {
				if e := japaneseAddress(text, i); e > 0 {
					out = append(out, Entity{Type: TypeStreetAddress, Start: i, End: e, Score: addrScore + addrLocalBoost})
					i = e
					continue
				}
				if e := postcodeCityStreet(text, i); e > 0 {
					out = append(out, Entity{Type: TypeStreetAddress, Start: i, End: e, Score: addrScore + addrLocalBoost})
					i = e
					continue
				}
				if e := thaiLatinStreet(text, i); e > 0 {
					score := addrScore + addrLocalBoost
					if le := worldLocality(text, e, true); le > 0 {
						e = le
					} else {
						e, score = addressTail(text, e, addrScore)
					}
					out = append(out, Entity{Type: TypeStreetAddress, Start: i, End: e, Score: score})
					i = e
					continue
				}
				if e, score := addressAt(text, i); e > 0 {
					out = append(out, Entity{Type: TypeStreetAddress, Start: i, End: e, Score: score})
					i = e
					continue
				}
			}
			i = digitsAt(text, i)
		case isLetterAt(text, i) && (i == 0 || !isWordByte(text[i-1])):
			we := wordEnd(text, i)
			if e := unitChain(text, i); e > 0 {
				out = append(out, Entity{Type: TypeStreetAddress, Start: i, End: e, Score: addrScore + addrLocalBoost})
				i = e
				continue
			}
			if e := colombianStreet(text, i, we); e > 0 {
				e, score := addressTail(text, e, addrScore)
				out = append(out, Entity{Type: TypeStreetAddress, Start: i, End: e, Score: score})
				i = e
				continue
			}
			if e, score := blockFirst(text, i, we); e > 0 {
				out = append(out, Entity{Type: TypeStreetAddress, Start: i, End: e, Score: score})
				i = e
				continue
			}
			if e, score := unitFirst(text, i, we); e > 0 {
				out = append(out, Entity{Type: TypeStreetAddress, Start: i, End: e, Score: score})
				i = e
				continue
			}
			if e, score := poBox(text, i, we); e > 0 {
				out = append(out, Entity{Type: TypeStreetAddress, Start: i, End: e, Score: score})
				i = e
				continue
			}
			if e, score := addressNameFirst(text, i, we); e > 0 {
				e, score = addressTail(text, e, score)
				out = append(out, Entity{Type: TypeStreetAddress, Start: laneOf(text, i, we), End: e, Score: score})
				i = e
				continue
			}
			i = we
		case c == '#' && (i == 0 || !isWordByte(text[i-1])):
			if e, score := hashUnitFirst(text, i); e > 0 {
				out = append(out, Entity{Type: TypeStreetAddress, Start: i, End: e, Score: score})
				i = e
				continue
			}
			i++
		default:
			i++
		}
	}
	return out
}

// addressAt matches an address that starts with the house number at i (layouts A, B and E)
// and returns its end and score, or -1.
func addressAt(text string, i int) (int, float64) {
	if e, score := addressNumberFirst(text, i); e > 0 {
		return addressTail(text, e, score)
	}
	if e := addressNoType(text, i); e > 0 {
		return addressTail(text, e, addrNoTypeScore)
	}
	return -1, 0
}

// unitFirst matches a unit written before the address: "Flat 8, 262 Kingsway, London WC2B 4NH",
// "Apt 4B, 12 Main St".
func unitFirst(text string, i, we int) (int, float64) {
	var buf [16]byte
	lw, ok := lowerInto(buf[:0:len(buf)], text[i:we])
	if !ok || !unitWords[string(lw)] || !isUpper(text[i]) {
		return -1, 0
	}
	k := we
	if k < len(text) && text[k] == '.' {
		k++
	}
	k = space(text, k)
	if k < 0 {
		return -1, 0
	}
	if text[k] == '#' {
		k++
	}
	ue := unitID(text, k)
	if ue < 0 || ue >= len(text) || text[ue] != ',' {
		return -1, 0
	}
	n := space(text, ue+1)
	if n > 0 && isLetterAt(text, n) {
		// A building's name: "Unit 4, Riverside Works, 22 Canal Street".
		if be := cityWords(text, ue+1); be > 0 && be < len(text) && text[be] == ',' {
			n = space(text, be+1)
		}
	}
	if n < 0 || !isDigit(text[n]) {
		return -1, 0
	}
	return addressAt(text, n)
}

// poBox matches a post office box: "PO Box 4674", "P.O. Box 12", "Post Office Box 9", with the
// locality that follows when it carries a postal code or state.
func poBox(text string, i, we int) (int, float64) {
	j := -1
	switch w := text[i:we]; {
	case w == "PO" || w == "Po":
		j = we
	case w == "P" && strings.HasPrefix(text[we:], ".O."):
		j = we + 3
	case w == "Post" && strings.HasPrefix(text[we:], " Office"):
		j = we + 7
	case w == "Postfach" || w == "Apartado" || w == "Casilla":
		j = we
		if s := space(text, j); s > 0 && isDigit(text[s]) {
			return poBoxNumber(text, s)
		}
		return -1, 0
	default:
		return -1, 0
	}
	if j+4 > len(text) || text[j] != ' ' || !strings.EqualFold(text[j+1:j+4], "box") {
		return -1, 0
	}
	s := space(text, j+4)
	if s < 0 || !isDigit(text[s]) {
		return -1, 0
	}
	return poBoxNumber(text, s)
}

func poBoxNumber(text string, s int) (int, float64) {
	e := digitsAt(text, s)
	if e-s <= 7 && e+6 < len(text) && text[e] == '-' && digitsAt(text, e+1) == e+6 && numRightOK(text, e+6) {
		// Kenya, Uganda: the box and the post office's code ("52118-00200"), then the town.
		e += 6
		if e+2 < len(text) && text[e] == ',' {
			if ce := cityWords(text, e+1); ce > 0 {
				return ce, addrPOBoxScore + addrLocalBoost
			}
		}
		return e, addrPOBoxScore + addrLocalBoost
	}
	if e-s > 7 || !numRightOK(text, e) {
		return -1, 0
	}
	if le := localityAfter(text, e); le > 0 {
		return le, addrPOBoxScore + addrLocalBoost
	}
	return e, addrPOBoxScore
}

// streetKind returns the kinds of the street word text[s:e], and the end including a '.' that
// follows an abbreviation.
func streetKind(text string, s, e int) int {
	var buf [16]byte
	lw, ok := lowerInto(buf[:0:len(buf)], text[s:e])
	if !ok {
		return 0
	}
	return streetWords[string(lw)]
}

// houseNumber returns the end of a house number at i: 1-5 digits, an optional letter
// ("221B") and an optional range ("12-14").
func houseNumber(text string, i int) int {
	e := digitsAt(text, i)
	if e-i > 5 || e == i {
		return -1
	}
	// A range ("12-14"), or Japanese and Korean block numbers ("2-7-1": chōme, ban, gō).
	for g := 0; g < 2 && e+1 < len(text) && text[e] == '-' && isDigit(text[e+1]); g++ {
		f := digitsAt(text, e+1)
		if f-e-1 > 5 {
			break
		}
		e = f
	}
	if e < len(text) && isAlpha(text[e]) && (e+1 == len(text) || !isWordByte(text[e+1])) {
		e++
	}
	if e+1 < len(text) && text[e] == '/' && isDigit(text[e+1]) { // house/flat: "Długa 15/3"
		if f := digitsAt(text, e+1); f-e-1 <= 4 {
			e = f
		}
	}
	if e < len(text) && isWordByte(text[e]) {
		return -1
	}
	return e
}

// space returns j+1 when text[j] is a single space followed by a non-space, else -1.
func space(text string, j int) int {
	if j+1 < len(text) && text[j] == ' ' && text[j+1] != ' ' {
		return j + 1
	}
	return -1
}

// ordinalAt returns the end of "5th", "42nd", "1st", "3rd" at j, or -1.
func ordinalAt(text string, j int) int {
	e := digitsAt(text, j)
	if e == j || e-j > 3 || e+2 > len(text) {
		return -1
	}
	switch string([]byte{lowerASCII(text[e]), lowerASCII(text[e+1])}) {
	case "st", "nd", "rd", "th":
		if e+2 == len(text) || !isWordByte(text[e+2]) {
			return e + 2
		}
	}
	return -1
}

// addressNumberFirst matches layouts A and B at the house number at i.
func addressNumberFirst(text string, i int) (int, float64) {
	hn := houseNumber(text, i)
	if hn < 0 {
		return -1, 0
	}
	j := hn
	if j < len(text) && text[j] == ',' {
		j++
	}
	j = space(text, j)
	if j < 0 {
		return -1, 0
	}
	// Layout B: "12 rue de la Paix", "8 bis rue ..."
	if strings.HasPrefix(text[j:], "bis ") || strings.HasPrefix(text[j:], "ter ") {
		j += 4
	}
	if j < len(text) && isLetterAt(text, j) {
		we := wordEnd(text, j)
		if k := streetKind(text, j, we); k&stFrench != 0 && isLower(text[j]) {
			if e := nameWords(text, we, true); e > 0 {
				return e, addrScore
			}
		}
	}
	// Layout A: name words then a street type.
	names, caps := 0, false
	for names <= addrMaxName && j > 0 && j < len(text) {
		var we int
		if isDigit(text[j]) {
			we = ordinalAt(text, j)
			if we < 0 {
				return -1, 0
			}
		} else {
			if !isLetterAt(text, j) {
				return -1, 0
			}
			we = wordEnd(text, j)
			w := text[j:we]
			if !isCapWord(w) && !directionals[w] && !allCaps(w) {
				return -1, 0
			}
			caps = caps || allCaps(w) && !directionals[w]
			if names > 0 {
				// In capitals ("2150 FRUITVALE AVE"), the type must be in capitals too.
				if k := streetKind(text, j, we); k&stSuffix != 0 && (!caps || allCaps(w)) {
					// "Tottenham Court Road": a type word followed by another is part of the name.
					if s := space(text, we); s > 0 && isLetterAt(text, s) && names < addrMaxName {
						if ne := wordEnd(text, s); isCapWord(text[s:ne]) && streetKind(text, s, ne)&stSuffix != 0 {
							names++
							j = s
							continue
						}
					}
					e := we
					score := addrScore
					if k&stAbbr != 0 {
						score = addrAbbrScore
						if e+1 < len(text) && text[e] == '.' && text[e+1] == ',' {
							e++
						}
					}
					// Trailing directional: "Main St NW".
					if s := space(text, e); s > 0 {
						de := wordEnd(text, s)
						if de > s && directionals[text[s:de]] && (de == len(text) || !isWordByte(text[de])) {
							e = de
						}
					}
					e = streetNumberAfterType(text, e)
					// Words in capitals are as often a heading or a shout: only with a locality
					// that has a postal code or state ("...\nOAKLAND CA 94601").
					if caps {
						if _, ts := addressTail(text, e, score); ts <= score {
							return -1, 0
						}
					}
					return e, score
				}
			}
			if we < len(text) && text[we] == '.' && we-j == 1 { // initial "N."
				we++
			}
		}
		names++
		j = space(text, we)
	}
	return -1, 0
}

// addressNoType matches layout E at the house number at i: capitalised street words without a
// street type, accepted only when a locality with a postal code or state follows them
// ("4521 Broadway, New York, NY 10040", "262 Kingsway, London WC2B 4NH"). It returns the end of
// the street words.
func addressNoType(text string, i int) int {
	hn := houseNumber(text, i)
	if hn < 0 {
		return -1
	}
	j := space(text, hn)
	end := -1
	for n := 0; n < 4 && j > 0 && j < len(text) && isLetterAt(text, j); n++ {
		we := wordEnd(text, j)
		w := text[j:we]
		if !isCapWord(w) && !directionals[w] && !(n > 0 && nameParticles[w]) {
			break
		}
		if isCapWord(w) || directionals[w] {
			end = we
		}
		if we < len(text) && text[we] == ',' {
			break
		}
		j = space(text, we)
	}
	if end < 0 || localityAfter(text, worldUnit(text, end)) < 0 && !worldStreetEnd(text, end) {
		return -1
	}
	return end
}

// nameWords consumes " Name", " de la Name" words after position j (which ends a street type)
// and returns the end of the last capitalised word, or -1. Particles are allowed only between
// words when particles is true.
func nameWords(text string, j int, particles bool) int {
	end := -1
	for n := 0; n < 6; n++ {
		s := space(text, j)
		if s < 0 {
			break
		}
		if !isLetterAt(text, s) || numberMarker(text, s) > s {
			break // "Jl. Kemang Raya No. 18": "No." introduces the number
		}
		we := wordEnd(text, s)
		w := text[s:we]
		if isCapWord(w) || end > 0 && romanNumeral(w) {
			end = we
			j = we
			continue
		}
		// "l'Église", "d'Orsay"
		if particles && len(w) > 2 && (w[:2] == "l'" || w[:2] == "d'") && isCapWord(w[2:]) {
			end = we
			j = we
			continue
		}
		if particles && nameParticles[w] {
			j = we
			continue
		}
		break
	}
	return end
}

// addressNameFirst matches layouts C and D at the word text[s:we].
func addressNameFirst(text string, s, we int) (int, float64) {
	w := text[s:we]
	// Abbreviated street prefixes are often written in lower case: "ul. Długa 15/3".
	if !isCapWord(w) && !(isLower(w[0]) && we < len(text) && text[we] == '.' && streetKind(text, s, we)&stPrefix != 0) {
		return -1, 0
	}
	// Layout D: "Calle de Alcalá 23", "Via Roma 10", "Rue de Rivoli 48".
	if streetKind(text, s, we)&(stPrefix|stFrench) != 0 {
		if r, _ := utf8.DecodeLastRuneInString(text[:max(s-1, 0)]); w == "Jr" && s > 1 && text[s-1] == ' ' && unicode.IsLetter(r) {
			return -1, 0 // "Sammy Davis Jr. Award 2024": a name's suffix, not a jirón
		}
		e := we
		if e < len(text) && text[e] == '.' {
			e++
		}
		if ne := nameWords(text, e, true); ne > 0 {
			if n := numberAfterName(text, ne); n > 0 {
				return n, addrScore
			}
		}
		return -1, 0
	}
	// Layout C: "Hauptstraße 12", "Kaiserstr. 5".
	for _, suf := range germanSuffixes {
		if len(w) > len(suf)+2 && hasSuffixFold(w, strings.TrimSuffix(suf, ".")) {
			e := we
			if strings.HasSuffix(suf, ".") {
				if e >= len(text) || text[e] != '.' {
					continue
				}
				e++
			}
			if n := numberAfterName(text, e); n > 0 {
				return n, addrScore
			}
		}
	}
	// Layout F: street words without a type, a house number and a locality with a postal code
	// or state: "Damrak 80, 1012 LP Amsterdam", "Meir 50, 2000 Antwerpen".
	if e := streetNoTypeFirst(text, we); e > 0 {
		return e, addrNoTypeScore
	}
	// A type after one to three name words, in languages that write it so: "Váci út 76",
	// "Petőfi Sándor utca 12", "Karl Johans gate 14", "Bağdat Cad. No:214", "Atatürk Mah. Gül
	// Sok. No:7".
	if e := typeAfterName(text, we); e > 0 {
		return e, addrScore
	}
	// Layout C with a separate type word: "Berliner Straße 12".
	if t := space(text, we); t > 0 && isLetterAt(text, t) {
		te := wordEnd(text, t)
		if streetKind(text, t, te)&stGerman != 0 && isCapWord(text[t:te]) {
			e := te
			if e < len(text) && text[e] == '.' {
				e++
			}
			if n := numberAfterName(text, e); n > 0 {
				return n, addrScore
			}
		}
	}
	return -1, 0
}

// typeAfterName returns the end of the house number of a street whose type word (stAfter)
// follows one to three capitalised name words, the first of which ends at we, or -1. A
// neighbourhood written the same way may come first ("Atatürk Mah. Gül Sok. No:7").
func typeAfterName(text string, we int) int {
	names, types := 1, 0
	for n := 0; n < 6; n++ {
		t := space(text, we)
		if t < 0 || !isLetterAt(text, t) {
			break
		}
		te := wordEnd(text, t)
		if k := streetKind(text, t, te); k&stAfter != 0 || k&stSuffix != 0 && types == 0 && isCapWord(text[t:te]) {
			types++
			names = 0
			if te < len(text) && text[te] == '.' {
				te++
			}
			// An English type before the number ("Rothschild Blvd 22") only with a locality
			// that has a postal code: elsewhere "Route 66" and "Suite 200" look the same.
			if hn := numberAfterName(text, te); hn > 0 && (k&stAfter != 0 || localityAfter(text, hn) > 0) {
				return hn
			}
			if k&stAfter == 0 {
				break
			}
			we = te
			continue
		}
		if !isCapWord(text[t:te]) || names == 3 {
			break
		}
		names++
		we = te
	}
	return -1
}

// streetNoTypeFirst returns the end of the house number of layout F after the capitalised word
// ending at we (and up to two more), when a locality with a postal code or state follows it.
func streetNoTypeFirst(text string, we int) int {
	for n := 0; n < 3; n++ {
		if hn := numberAfterName(text, we); hn > 0 {
			if localityAfter(text, worldUnit(text, hn)) > 0 {
				return hn
			}
			return -1
		}
		t := space(text, we)
		if t < 0 || !isLetterAt(text, t) {
			return -1
		}
		te := wordEnd(text, t)
		if !isCapWord(text[t:te]) || streetPreposition(text[t:te]) {
			return -1 // "Vereinsheim Am Wiesengrund 7": the street starts at "Am"
		}
		we = te
	}
	return -1
}

// numberAfterName returns the end of a house number after a street name: " 12", ", 274", " 5a".
func numberAfterName(text string, j int) int {
	if j < len(text) && text[j] == ',' {
		j++
	}
	j = space(text, j)
	if j < 0 {
		return -1
	}
	j = numberMarker(text, j)
	if j < 0 || !isDigit(text[j]) {
		return -1
	}
	e := houseNumber(text, j)
	if e > 0 && e+1 < len(text) && text[e] == '/' && isDigit(text[e+1]) {
		if f := digitsAt(text, e+1); f-e-1 <= 4 && numRightOK(text, f) {
			e = f // "Długa 44/6": house and flat
		}
	}
	return e
}

// numberMarker skips a word that introduces a house number in Portuguese, Spanish, Italian,
// Romanian, Indonesian and Turkish ("nº 62", "n° 5", "No. 18", "nr. 35", "No:7") at j.
func numberMarker(text string, j int) int {
	for _, m := range [...]string{"nº ", "n° ", "nº", "Nº ", "No. ", "no. ", "Nr. ", "nr. ", "No:", "no:", "No: ", "No ", "nr ", "Nr "} {
		if strings.HasPrefix(text[j:], m) && j+len(m) < len(text) && isDigit(text[j+len(m)]) {
			return j + len(m)
		}
	}
	return j
}

// addressTail extends an address ending at e with a unit and a locality.
func addressTail(text string, e int, score float64) (int, float64) {
	e = worldUnit(text, e)
	// Turkish flat number: "No:214 D:5".
	if strings.HasPrefix(text[e:], " D:") && e+3 < len(text) && isDigit(text[e+3]) {
		if d := digitsAt(text, e+3); d-e-3 <= 3 && numRightOK(text, d) {
			e = d
		}
	}
	// Unit: ", Apt 4B", " Suite 200", " #12".
	j := e
	if j < len(text) && text[j] == ',' {
		j++
	}
	if s := space(text, j); s > 0 {
		if text[s] == '#' {
			if ue := unitID(text, s+1); ue > 0 {
				e = ue
			}
		} else if isLetterAt(text, s) {
			we := wordEnd(text, s)
			var buf [16]byte
			if lw, ok := lowerInto(buf[:0:len(buf)], text[s:we]); ok && (unitWords[string(lw)] || j > e && commaUnitWords[string(lw)]) {
				k := we
				if k < len(text) && text[k] == '.' {
					k++
				}
				if k < len(text) && text[k] == ' ' {
					k++
				}
				if k < len(text) && text[k] == '#' {
					k++
				}
				if ue := unitID(text, k); ue > 0 {
					e = ue
				}
			}
		}
	}
	if fe := floorUnit(text, e); fe > 0 {
		if le := localityAfter(text, fe); le > 0 {
			return le, score + addrLocalBoost
		}
	}
	if le := localityAfter(text, e); le > 0 {
		return le, score + addrLocalBoost
	}
	return e, score
}

// floorUnit returns the end of a Spanish or Portuguese floor and door after a comma at e
// (", 3º B", ", 2ª", ", 1º izq"), or -1; it belongs to the address only when a locality follows.
func floorUnit(text string, e int) int {
	if e+4 >= len(text) || text[e] != ',' || text[e+1] != ' ' {
		return -1
	}
	d := digitsAt(text, e+2)
	if d == e+2 || d-e-2 > 2 || !(strings.HasPrefix(text[d:], "º") || strings.HasPrefix(text[d:], "ª")) {
		return -1
	}
	k := d + len("º")
	if t := space(text, k); t > 0 && isLetterAt(text, t) {
		if te := wordEnd(text, t); te-t <= 4 {
			k = te
			if k+1 < len(text) && text[k] == '.' && text[k+1] == ',' { // "3º Esq., 4050-032 Porto"
				k++
			}
		}
	}
	return k
}

// localityStd returns the end of a locality that carries a postal code or a state after the
// street ending at e (", Springfield, IL 62704", ", London SW1A 2AA", ", 10115 Berlin",
// ", 1016 BR Amsterdam", ", Melbourne VIC 3000"), or -1.
func localityStd(text string, e int) int {
	if e+3 < len(text) && text[e] == ' ' && text[e+1] == '-' && text[e+2] == ' ' {
		return otherPostcode(text, e) // Brazil: "Av. Paulista, 1578 - Bela Vista, São Paulo - SP, ..."
	}
	if e+1 >= len(text) || text[e] != ',' {
		return -1
	}
	j := space(text, e+1)
	if j < 0 {
		return -1
	}
	if isDigit(text[j]) {
		return postalFirst(text, j)
	}
	ce := cityWords(text, j-1)
	if ce < 0 {
		return -1
	}
	// "City, ST 12345", "City, ST", "City ST 12345", "City SW1A 2AA", "City, ON M5V 2T6",
	// "City VIC 3000", "City 2000"; a province in brackets: "Montréal (Québec) H2J 2L4"
	if pe := bracketedProvince(text, ce); pe > 0 {
		if z := space(text, pe); z > 0 {
			if e := postcodeAt(text, z); e > 0 {
				return e
			}
		}
	}
	k := ce
	if k < len(text) && text[k] == ',' {
		k++
	}
	k = space(text, k)
	if k < 0 {
		return -1
	}
	if se := stateAt(text, k); se > 0 {
		end := se
		if z := space(text, end); z > 0 {
			if ze := zipAt(text, z); ze > 0 {
				end = ze
			} else if pe := postcodeAt(text, z); pe > 0 {
				end = pe
			} else if d := digitsAt(text, z); d-z == 4 && numRightOK(text, d) {
				end = d // Australia: "VIC 3000"
			}
		}
		return end
	}
	if ze := zipAt(text, k); ze > 0 {
		if pc := postalCity(text, ze); pc > 0 && text[k-1] == ' ' && text[k-2] == ',' {
			// a postal code before the city after a district: ", Roma Norte, 06700 Ciudad de
			// México", and a state code after it (", CDMX")
			return afterPostcode(text, ze)
		}
		return ze
	}
	if pe := postcodeAt(text, k); pe > 0 {
		return pe
	}
	return otherPostcode(text, ce)
}

// otherPostcode returns the end of a postal code of a country without a rule of its own, after
// a locality ending at ce, or -1. Postal codes differ by country, but nearly all share one shape
// that ordinary words and numbers do not: one or two upper-case alphanumeric groups that mix
// letters and digits ("D02 VX52", Ireland), digit groups joined by a hyphen ("163-0890", Japan;
// "01310-200", Brazil) or six digits ("560038", India). Before the code may come up to three
// more parts, each after ", " or " - ": localities, a postal district number or a region code
// ("Dublin 2, D02 VX52", "Shinjuku-ku, Tokyo 163-0890", "Bela Vista, São Paulo - SP, 01310-200").
func otherPostcode(text string, ce int) int {
	k := ce
	for n := 0; n < 4; n++ {
		sep := false
		switch {
		case k < len(text) && text[k] == ',':
			k, sep = k+1, true
		case k+2 < len(text) && text[k] == ' ' && text[k+1] == '-':
			k, sep = k+2, true
		}
		j := space(text, k)
		if j < 0 {
			return -1
		}
		if strings.HasPrefix(text[j:], "CEP ") || strings.HasPrefix(text[j:], "CP ") {
			j = space(text, strings.IndexByte(text[j:], ' ')+j) // "CEP 22240-003", "CP 03940"
			if j < 0 {
				return -1
			}
		}
		if pe := postcodeShape(text, j); pe > 0 {
			return pe
		}
		d := digitsAt(text, j)
		if (d-j == 6 || d-j == 7) && numRightOK(text, d) {
			return d // India, Romania, Israel
		}
		// Four digits after a city close the address only where the address visibly ends
		// there ("Auckland 1011.", "Wellington 6140\n", "Cape Town, 8001"): elsewhere they may
		// be a year.
		if d-j == 4 && (d == len(text) || strings.IndexByte(".,;)\n\r\"", text[d]) >= 0) && text[j-1] == ' ' &&
			(isLetterAt(text, j-2) || j >= 3 && text[j-2] == ',' && isLetterAt(text, j-3)) {
			return d
		}
		if d > j && d-j <= 2 && d < len(text) && text[d] == ',' {
			k = d // "Dublin 2, D02 VX52"
			continue
		}
		if !sep {
			return -1
		}
		switch r := upperRun(text, j); {
		case r-j >= 2 && r-j <= 3 && r < len(text) && (text[r] == ',' || text[r] == ' '):
			k = r // a region code: "São Paulo - SP, 01310-200"
		default:
			if k = cityWords(text, k); k < 0 {
				return -1
			}
		}
	}
	return -1
}

// upperRun returns the end of the upper-case ASCII letters at j.
func upperRun(text string, j int) int {
	for j < len(text) && isUpper(text[j]) {
		j++
	}
	return j
}

// postcodeShape returns the end of one or two groups of upper-case letters and digits at j, up to
// 9 characters in all (5 or more), that either mix letters and digits or are digits joined by
// one hyphen with 3 or more after it (not "2024-11"), and end at a word bound; or -1.
func postcodeShape(text string, j int) int {
	k, n, letters, digits, groups, hyphen, first := j, 0, 0, 0, 1, false, 0
	for k < len(text) && n <= 9 {
		c := text[k]
		switch {
		case isUpper(c):
			letters++
		case isDigit(c):
			digits++
		case (c == ' ' || c == '-') && groups == 1 && n >= 2 && k+1 < len(text) && (isUpper(text[k+1]) || isDigit(text[k+1])):
			groups++
			first = n
			hyphen = c == '-'
			k++
			continue
		default:
			goto done
		}
		n++
		k++
	}
done:
	if n < 5 || n > 9 || digits == 0 || k < len(text) && (isWordByte(text[k]) || text[k] == '-') {
		return -1
	}
	if letters == 0 && !(hyphen && groups == 2 && n-first >= 3) || letters > 0 && groups == 2 && hyphen {
		return -1
	}
	if letters > 0 && text[k-1] == ' ' {
		return -1
	}
	return k
}

// postalFirst returns the end of "postal code City" at j: "10115 Berlin", "75003 Paris",
// "1010 Wien", "1016 BR Amsterdam", "01310-100 São Paulo", "00-950 Warszawa", "114 55 Stockholm",
// "1100-148 Lisboa", or -1.
func postalFirst(text string, j int) int {
	pe := digitsAt(text, j)
	n := pe - j
	switch {
	case n == 4 && pe+3 < len(text) && text[pe] == ' ' && isUpper(text[pe+1]) && isUpper(text[pe+2]) && !isWordByte(text[pe+3]):
		pe += 3 // Netherlands
	case n == 5 && pe+4 < len(text) && text[pe] == '-' && digitsAt(text, pe+1) == pe+4:
		pe += 4 // Brazil
	case (n == 2 && digitsAt(text, pe+1) == pe+4 || n == 4 && digitsAt(text, pe+1) == pe+4) && pe+4 < len(text) && text[pe] == '-':
		pe += 4 // Poland, Portugal
	case n == 3 && pe+3 < len(text) && text[pe] == ' ' && digitsAt(text, pe+1) == pe+3:
		pe += 3 // Sweden, Czechia, Slovakia, Greece
	case n == 3 || n == 6: // Iceland "101 Reykjavík", Romania "010014 București"
	case n != 4 && n != 5:
		return -1
	}
	return postalCity(text, pe)
}

// stateAt returns the end of a US state, Canadian province or Australian state code at k, or -1.
func stateAt(text string, k int) int {
	for _, n := range [2]int{3, 2} {
		if k+n <= len(text) && usStates[text[k:k+n]] && (k+n == len(text) || !isWordByte(text[k+n])) {
			return k + n
		}
	}
	return -1
}

// unitID returns the end of a unit identifier ("4B", "200", "12-A") at j, or -1.
func unitID(text string, j int) int {
	k := j
	for k < len(text) && k-j < 6 && (isAlnum(text[k]) || ((text[k] == '-' || text[k] == '/') && k > j && k+1 < len(text) && isAlnum(text[k+1]))) {
		k++
	}
	if k == j || (k < len(text) && isWordByte(text[k])) || !strings.ContainsAny(text[j:k], "0123456789") && k-j > 1 {
		return -1
	}
	return k
}

// cityPrefixes begin two-word place names: "Bad Homburg", "San Sebastián", "Den Haag".
var cityPrefixes = map[string]bool{
	"Bad": true, "San": true, "Santa": true, "Saint": true, "St": true, "Sankt": true, "Den": true,
	"La": true, "Le": true, "Les": true, "Los": true, "Las": true, "El": true, "New": true, "Port": true,
	"Fort": true, "Mont": true, "Villa": true, "Castel": true, "São": true, "Rio": true, "Santo": true,
	"Belo": true, "Porto": true, "Ciudad": true, "Puerto": true, "Nueva": true, "Nuevo": true,
	"Buenos": true, "Hong": true, "Kuala": true, "Tel": true, "Abu": true, "Addis": true, "Cape": true,
	"Costa": true, "Ho": true, "Santiago": true, "Baton": true, "Salt": true, "Palm": true,
}

// postalCity returns the end of " City" after a postal code ("10115 Berlin", "60311 Frankfurt am
// Main"), or -1. The name is one word, two after a prefix such as "Bad" or "San", and more only
// through particles ("am", "im", "an der", "sur", "de"): words after it start the next sentence.
func postalCity(text string, j int) int {
	s := space(text, j)
	if s < 0 || !isLetterAt(text, s) {
		return -1
	}
	we := wordEnd(text, s)
	if !isCapWord(text[s:we]) || (we < len(text) && isWordByte(text[we])) {
		return -1
	}
	end := we
	// Turkey writes district/province: "06680 Çankaya/Ankara"; Czech and other cities have
	// numbered districts: "130 00 Praha 3".
	if end+2 < len(text) && text[end] == '/' && isLetterAt(text, end+1) {
		if te := wordEnd(text, end+1); isCapWord(text[end+1 : te]) {
			return te
		}
	}
	if end+2 < len(text) && text[end] == ' ' && isDigit(text[end+1]) {
		if d := digitsAt(text, end+1); d-end-1 <= 2 && (d == len(text) || strings.IndexByte(".,;)\n\r\"", text[d]) >= 0) {
			return d
		}
	}
	// A second capitalised word that ends the locality: "São Paulo", "Den Haag".
	if t := space(text, we); t > 0 && isLetterAt(text, t) {
		if te := wordEnd(text, t); isCapWord(text[t:te]) && (te == len(text) || strings.IndexByte(".,;)\n\r\"'", text[te]) >= 0) {
			return te
		}
	}
	if cityPrefixes[text[s:we]] {
		if t := space(text, we); t > 0 && isLetterAt(text, t) {
			if te := wordEnd(text, t); isCapWord(text[t:te]) {
				end = te
			}
		}
	}
	// Particles: "am Main", "im Breisgau", "an der Ruhr", "sur Mer".
	k := end
	for n := 0; n < 3; n++ {
		t := space(text, k)
		if t < 0 || !isLower(text[t]) {
			break
		}
		te := wordEnd(text, t)
		switch text[t:te] {
		case "am", "im", "an", "der", "ob", "sur", "de", "del", "di", "sul", "upon", "on":
			k = te
			continue
		}
		break
	}
	if k > end {
		if t := space(text, k); t > 0 && isLetterAt(text, t) {
			if te := wordEnd(text, t); isCapWord(text[t:te]) {
				end = te
			}
		}
	}
	return end
}

// cityWords consumes " City", " Saint-Denis", " Frankfurt am Main" after j and returns the
// end, or -1. At most three capitalised words.
func cityWords(text string, j int) int {
	end := -1
	for n := 0; n < 4; n++ {
		s := space(text, j)
		if s < 0 || !isLetterAt(text, s) {
			break
		}
		we := wordEnd(text, s)
		w := text[s:we]
		if we < len(text) && isDigit(text[we]) { // "SW1A": a postcode, not a city
			break
		}
		if isCapWord(w) && !usStates[w] {
			// An abbreviation before the name: "Co. Dublin", "Brgy. Poblacion", "Mt. Albert".
			if we-s <= 4 && we+2 < len(text) && text[we] == '.' && text[we+1] == ' ' && isUpper(text[we+2]) {
				j = we + 1
				continue
			}
			end = we
			j = we
			continue
		}
		if end > 0 && (w == "am" || w == "an" || w == "der" || w == "sur" || w == "upon" || w == "on") {
			j = we
			continue
		}
		break
	}
	return end
}

// zipAt returns the end of a US ZIP code ("62704", "62704-1234") at j, or -1.
func zipAt(text string, j int) int {
	e := digitsAt(text, j)
	if e-j != 5 {
		return -1
	}
	if e+5 <= len(text) && text[e] == '-' && digitsAt(text, e+1) == e+5 {
		e += 5
	}
	if !numRightOK(text, e) {
		return -1
	}
	return e
}

// postcodeAt returns the end of a UK ("SW1A 2AA", "M1 1AE") or Canadian ("M5V 2T6") postcode
// at j, or -1.
func postcodeAt(text string, j int) int {
	// Outward code: letter, [letter], digit, [letter or digit]; then space; inward: digit letter letter
	// (UK) or digit letter digit (Canada).
	k := j
	for k < len(text) && k-j < 4 && (isUpper(text[k]) || isDigit(text[k])) {
		k++
	}
	out := text[j:k]
	if len(out) < 2 || !isUpper(out[0]) || k+4 > len(text) || text[k] != ' ' {
		return -1
	}
	hasDigit := false
	for i := 1; i < len(out); i++ {
		if isDigit(out[i]) {
			hasDigit = true
		}
	}
	in := text[k+1 : k+4]
	if !hasDigit || !isDigit(in[0]) || !isUpper(in[1]) || !(isUpper(in[2]) || isDigit(in[2])) {
		return -1
	}
	if k+4 < len(text) && isWordByte(text[k+4]) {
		return -1
	}
	return k + 4
}

// hasSuffixFold reports whether s ends with the lower-case suffix, ignoring ASCII case.
func hasSuffixFold(s, suffix string) bool {
	if len(s) < len(suffix) {
		return false
	}
	s = s[len(s)-len(suffix):]
	for i := 0; i < len(suffix); i++ {
		if lowerASCII(s[i]) != suffix[i] {
			return false
		}
	}
	return true
}

// japaneseAddress returns the end of a Japanese address written in Japanese after its postal
// code at i ("530-0001 大阪府大阪市北区梅田3-1-3 ノースゲートビル12F"), or -1: the postal code,
// then without a break the prefecture, city, ward and block numbers (chōme-ban-gō), and a
// building and floor when they end the line.
func japaneseAddress(text string, i int) int {
	if i+8 >= len(text) || digitsAt(text, i) != i+3 || text[i+3] != '-' || digitsAt(text, i+4) != i+8 {
		return -1
	}
	j := i + 8
	if strings.HasPrefix(text[j:], " ") {
		j++
	} else if strings.HasPrefix(text[j:], "\u3000") {
		j += len("\u3000")
	}
	r, _ := utf8.DecodeRuneInString(text[j:])
	if !isHan(r) {
		return -1
	}
	end, admin, digits := -1, false, false
	for k := j; k < len(text); {
		r, n := utf8.DecodeRuneInString(text[k:])
		switch {
		case isDigit(text[k]) || text[k] == '-':
			digits = true
		case r == '都' || r == '道' || r == '府' || r == '県' || r == '市' || r == '区' || r == '町' || r == '村':
			admin = true
		case isHan(r) || isKana(r) || r == 'ー' || r == '－':
		default:
			k = len(text)
			continue
		}
		k += n
		if digits && isDigit(text[k-1]) {
			end = k
		}
	}
	if end < 0 || !admin {
		return -1
	}
	// The building and floor: words that end the line ("ノースゲートビル12F").
	return jpBuilding(text, end)
}

func isHan(r rune) bool  { return r >= 0x4e00 && r <= 0x9fff }
func isKana(r rune) bool { return r >= 0x3040 && r <= 0x30ff }
