package detect

// Column headers: in a delimited table (CSV, TSV, '|' or ';' rows), the header cell above a
// value is its label: "name;dob;ssn" makes "Kalani Kahale;1991-02-03;575 21 4430" a name, a date
// of birth and an SSN. The header is the first line of the block of lines that contain the
// delimiter, at most columnMaxLines lines and columnMaxBytes bytes above the value.

const (
	columnMaxLines = 32
	columnMaxBytes = 4096
	columnMaxCell  = 40
)

// columnHeader returns the header cell of the column that text[start:end] fills, or "" when
// the span is not a whole cell of a delimited row under a header line.
func columnHeader(text string, start, end int) string {
	s, e := start, end
	if s > 0 && text[s-1] == '"' && e < len(text) && text[e] == '"' {
		s, e = s-1, e+1
	}
	d := cellDelimiter(text, s, e)
	if d == 0 {
		return ""
	}
	ls := s
	for ls > 0 && text[ls-1] != '\n' && s-ls < columnMaxBytes {
		ls--
	}
	if ls > 0 && text[ls-1] != '\n' {
		return ""
	}
	col := 0
	for i := ls; i < s; i++ {
		if text[i] == d {
			col++
		}
	}
	// Walk up to the first line of the block whose lines all contain d; prefer the first with
	// as many delimiters as the value's line (a table's rows and header have the same count,
	// and a line of other text with a '|' above the header is not the header).
	le := e
	for le < len(text) && text[le] != '\n' && le-ls < columnMaxBytes {
		le++
	}
	cells := countByte(text[ls:le], d)
	hs, same := ls, -1
	for n := 0; n < columnMaxLines && hs > 0 && start-hs < columnMaxBytes; n++ {
		p := hs - 1 // the '\n' ending the previous line
		q := p
		for q > 0 && text[q-1] != '\n' {
			q--
		}
		k := countByte(text[q:p], d)
		if k == 0 {
			break
		}
		hs = q
		if k == cells {
			same = q
		}
	}
	if hs == ls {
		return "" // no line above
	}
	if same >= 0 {
		hs = same
	}
	// The header cell at index col.
	i, c := hs, 0
	for i < len(text) && text[i] != '\n' && c < col {
		if text[i] == d {
			c++
		}
		i++
	}
	if c != col {
		return ""
	}
	j := i
	for j < len(text) && text[j] != d && text[j] != '\n' && text[j] != '\r' && j-i <= columnMaxCell {
		j++
	}
	if j-i > columnMaxCell {
		return ""
	}
	for i < j && (text[i] == '"' || text[i] == ' ') {
		i++
	}
	for j > i && (text[j-1] == '"' || text[j-1] == ' ') {
		j--
	}
	return text[i:j]
}

// cellDelimiter returns the delimiter of the row around text[s:e] when the span is a whole cell
// (a delimiter or a line end on each side), else 0.
func cellDelimiter(text string, s, e int) byte {
	var d byte
	switch {
	case s > 0 && isDelimiter(text[s-1]):
		d = text[s-1]
	case e < len(text) && isDelimiter(text[e]):
		d = text[e]
	default:
		return 0
	}
	if s > 0 && text[s-1] != d && text[s-1] != '\n' || e < len(text) && text[e] != d && text[e] != '\n' && text[e] != '\r' {
		return 0
	}
	return d
}

func isDelimiter(c byte) bool { return c == ',' || c == ';' || c == '|' || c == '\t' }

func countByte(s string, c byte) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			n++
		}
	}
	return n
}

func containsByte(s string, c byte) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return true
		}
	}
	return false
}

// headerHas reports whether the header cell contains one of the keywords at word bounds ('_',
// '-' and a capital after a lower-case letter count as bounds: "full_name", "date-of-birth",
// "firstName").
func headerHas(cell string, kws *keywords) bool {
	if cell == "" || kws == nil {
		return false
	}
	var buf [2*columnMaxCell + 1]byte
	b := buf[:0]
	for i := 0; i < len(cell) && len(b) < len(buf)-1; i++ {
		c := cell[i]
		switch {
		case c == '_' || c == '-':
			c = ' '
		case isUpper(c) && i > 0 && isLower(cell[i-1]):
			b = append(b, ' ') // camelCase: "firstName"
		}
		b = append(b, lowerASCII(c))
	}
	h := string(b) // short; matchKeyword needs a string
	for p := 0; p < len(h); p++ {
		for _, kw := range kws.first[h[p]] {
			if p+len(kw) <= len(h) && matchKeyword(h, p, kw) {
				return true
			}
		}
	}
	return false
}

// nameHeaders label a column of person names.
var nameHeaders = newKeywords("name", "full name", "fullname", "first name", "last name",
	"given name", "family name", "surname", "middle name", "display name",
	"customer", "client", "owner", "contact", "employee", "patient", "person", "holder",
	"cardholder", "recipient", "sender", "assignee", "reporter", "requester", "author", "user name",
	"applicant", "tenant", "guest", "passenger", "member", "student", "nombre", "nom", "nome", "vorname",
	"nachname",
	// rosters and results (detect10): "first\tlast", "Player", "Forename"
	"first", "last", "forename", "given", "player", "athlete", "runner", "volunteer", "attendee",
	"delegate", "pupil",
	// results and cards (detect12): "Helm", "Jockey", "Trainer"
	"helm", "skipper", "jockey", "trainer", "rider", "driver", "coach", "captain", "referee", "umpire",
	"arbiter", "oncall", "on call", "reviewer", "approver", "maintainer", "organiser", "organizer")

// fieldKey returns the key of a structured field whose whole value is text[s:e], or "": a
// quoted value after a quoted or bare key and ':' or '=' (JSON, YAML, Python, shell:
// `"first_name": "Mirela"`, `name='Ana Lima'`) or an XML element (`<lastName>Leota<`). Only
// the byte after the value is read after it (a stream knows it once the value's run has
// closed, as SafePrefix requires).
func fieldKey(text string, s, e int) string {
	if s == 0 || e >= len(text) {
		return ""
	}
	j := s - 1
	switch q := text[j]; q {
	case '"', '\'':
		if text[e] != q {
			return ""
		}
		for k := 0; j > 0 && k < 2 && text[j-1] == ' '; k++ {
			j--
		}
		if j == 0 || text[j-1] != ':' && text[j-1] != '=' {
			return ""
		}
		j--
		for k := 0; j > 0 && k < 2 && text[j-1] == ' '; k++ {
			j--
		}
		if j > 0 && (text[j-1] == '"' || text[j-1] == '\'') {
			j--
		}
	case '>':
		if text[e] != '<' {
			return ""
		}
	default:
		return ""
	}
	ke := j
	for j > 0 && ke-j < columnMaxCell && (isAlnum(text[j-1]) || text[j-1] == '_' || text[j-1] == '-') {
		j--
	}
	if j == ke || ke-j >= columnMaxCell || text[s-1] == '>' && (j == 0 || text[j-1] != '<') {
		return ""
	}
	return text[j:ke]
}

// thingHeaders in a field's key or a column's header say that its name is not a person's:
// "product_name", "hostname", "company name".
var thingHeaders = newKeywords("product", "company", "org", "organisation", "organization",
	"file", "host", "server", "app", "application", "service", "project", "team", "brand", "model",
	"device", "city", "street", "country", "region", "place", "venue", "site", "bank", "store",
	"shop", "domain", "queue", "topic", "bucket", "table", "database", "cluster", "node", "pod",
	"image", "repo", "branch", "package", "module", "plan", "tier", "policy", "role", "group",
	"channel", "event", "business", "merchant", "employer", "hotel", "restaurant", "school",
	"university", "vendor", "supplier", "namespace", "key", "field", "column", "tag", "label",
	// results, cards and registers (detect12): "Club", "Horse", "Boat", "station_name", "Reparto"
	"club", "horse", "boat", "yacht", "vessel", "station", "stop", "room", "dish", "colour", "color",
	"department", "dept", "course", "job", "position", "reparto", "puesto", "ruolo", "abteilung",
	// animals, works and taxa named like people (neg17): "Bird", "Dog", "Sire", "Dam", "Film"
	"bird", "pigeon", "dog", "hound", "animal", "pet", "cow", "heifer", "bull", "cattle", "sire",
	"dam", "ship", "ferry", "storm", "film", "movie", "song", "track", "album", "book", "title",
	"species", "taxon", "genus", "breed", "duif", "hond", "paard", "taube", "hund", "pferd", "schiff",
	"chien", "cheval", "perro", "caballo", "titel", "titre", "titulo", "título", "titolo")

// personKey reports whether a field key names a person's name ("first_name", "displayName",
// "holder"), not a thing's ("product_name", "hostname").
func personKey(key string) bool {
	return headerHas(key, nameHeaders) && !headerHas(key, thingHeaders)
}
