package document

import (
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/edgewan/edgewan/aigw/detect"
)

// Document types Classify tells apart.
const (
	TypeInvoice = "invoice"
	TypeReceipt = "receipt"
	TypeID      = "id"
	TypeLetter  = "letter"
	TypeForm    = "form"
	TypeUnknown = "unknown"
)

// Field is one structured value found in a document.
type Field struct {
	Name       string  `json:"name"`                 // invoice_number, date, total, email, ... (README of the API: docs/aigw.md)
	Value      string  `json:"value"`                // as written in the document
	Normalized string  `json:"normalized,omitempty"` // dates as YYYY-MM-DD, amounts as 1234.56, currencies as ISO 4217 codes
	Entity     string  `json:"entity,omitempty"`     // the detect entity type of the value, when it is personal data
	Page       int     `json:"page"`
	Confidence float64 `json:"confidence"`
	Start      int     `json:"-"` // byte offsets of Value in the page's text
	End        int     `json:"-"`
}

type typeCue struct {
	re     *regexp.Regexp
	weight float64
}

func cues(weight float64, words ...string) []typeCue {
	out := make([]typeCue, len(words))
	for i, w := range words {
		out[i] = typeCue{regexp.MustCompile(`(?i)\b` + w + `\b`), weight}
	}
	return out
}

var typeCues = map[string][]typeCue{
	TypeInvoice: append(cues(3, "invoice", "tax invoice"), cues(1, "bill to", "billed to", "due date", "amount due", "balance due", "payment terms", "subtotal", "vat", "invoice date", "remit")...),
	TypeReceipt: append(cues(3, "receipt"), cues(1, "thank you for (?:your )?(?:purchase|shopping)", "cashier", "change due", "total paid", "card ending", "transaction", "store", "qty", "tendered")...),
	TypeID: append(cues(3, "passport", "identity card", "id card", "driver'?s? licen[cs]e", "residence permit"),
		cues(1, "date of birth", "nationality", "surname", "given names?", "expiry date", "date of expiry", "place of birth", "sex", "issuing authority", "id number", "document number")...),
	TypeLetter: append(cues(2, "dear", "sincerely", "yours faithfully", "yours truly", "kind regards", "best regards"), cues(1, "re:", "enclosed")...),
	TypeForm: append(cues(3, "application form", "registration form", "request form", "please complete", "form"),
		cues(1, "signature", "applicant", "tick", "check (?:one|all)", "date signed", "office use only")...),
}

// Classify guesses a document's type from its text, with a confidence from 0 to 1. Little
// evidence, or evidence for several types equally, is "unknown".
func Classify(text string) (string, float64) {
	scores := map[string]float64{}
	for typ, cs := range typeCues {
		for _, c := range cs {
			if n := len(c.re.FindAllStringIndex(text, 4)); n > 0 {
				scores[typ] += c.weight * (1 + 0.25*float64(n-1))
			}
		}
	}
	best, second, bestType := 0.0, 0.0, TypeUnknown
	for _, typ := range []string{TypeInvoice, TypeReceipt, TypeID, TypeLetter, TypeForm} {
		switch s := scores[typ]; {
		case s > best:
			best, second, bestType = s, best, typ
		case s > second:
			second = s
		}
	}
	if best < 2 || best-second < 1 {
		return TypeUnknown, 0
	}
	conf := 0.5 + 0.5*(best-second)/(best+1)
	return bestType, round2(min(conf, 0.99))
}

// Value patterns.
const (
	reMonth  = `(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)`
	reDate   = `(?:\d{4}-\d{2}-\d{2}|\d{1,2}[/.]\d{1,2}[/.]\d{2,4}|\d{1,2}\s+` + reMonth + `\.?,?\s+\d{4}|` + reMonth + `\.?\s+\d{1,2},?\s+\d{4})`
	reCur    = `(?:[$€£¥]|usd|eur|gbp|chf|jpy|cad|aud|sek|nok|dkk|inr|cny)`
	reAmount = `(?:\d{1,3}(?:[,.' ]\d{3})+(?:[.,]\d{2})?|\d+(?:[.,]\d{2})?)`
	reSep    = `\s*(?:[:#]|no\.?|number|nr\.?)?\s*[:#]?\s*`
	reLabSep = `[ \t]*[:\-]?[ \t]*`
)

// A labelRule finds a labelled value: group "v" is the value.
type labelRule struct {
	name   string
	entity string
	re     *regexp.Regexp
	conf   float64
}

func rule(name, entity string, conf float64, re string) labelRule {
	return labelRule{name, entity, regexp.MustCompile(`(?im)` + re), conf}
}

var labelRules = []labelRule{
	rule("invoice_number", "", 0.95, `\binvoice`+reSep+`(?P<v>[A-Z0-9][A-Z0-9@\-/]*\d[A-Z0-9@\-/]*)\b`),
	rule("receipt_number", "", 0.9, `\b(?:receipt|transaction|trans\.?)`+reSep+`(?P<v>[A-Z0-9][A-Z0-9@\-/]*\d[A-Z0-9@\-/]*)\b`),
	rule("order_number", "", 0.85, `\b(?:order|po|purchase order)`+reSep+`(?P<v>[A-Z0-9][A-Z0-9@\-/]*\d[A-Z0-9@\-/]*)\b`),
	rule("id_number", "", 0.9, `\b(?:id|identity|identification|document|passport|licen[cs]e|card|personal)\s*(?:no\.?|number|nr\.?|#)[ \t]*[:#]?[ \t]*(?P<v>[A-Z0-9][A-Z0-9\- ]{3,18}[A-Z0-9])\b`),
	rule("date_of_birth", detect.TypeDateOfBirth, 0.95, `\b(?:date of birth|birth date|dob|born)`+reLabSep+`(?P<v>`+reDate+`)`),
	rule("due_date", "", 0.9, `\b(?:due date|payment due|due)`+reLabSep+`(?P<v>`+reDate+`)`),
	rule("expiry_date", "", 0.9, `\b(?:expiry date|date of expiry|expires|expiry|valid until)`+reLabSep+`(?P<v>`+reDate+`)`),
	rule("date", "", 0.85, `\b(?:invoice date|issue date|date of issue|issued|receipt date|date)`+reLabSep+`(?P<v>`+reDate+`)`),
	rule("total", "", 0.9, `\b(?:grand total|total due|total amount|total paid|amount due|balance due|total)`+reLabSep+`(?P<c1>`+reCur+`)?[ \t]*(?P<v>`+reAmount+`)(?:[ \t]*(?P<c2>`+reCur+`))?`),
	rule("subtotal", "", 0.85, `\b(?:subtotal|sub-total|net amount)`+reLabSep+`(?P<c1>`+reCur+`)?[ \t]*(?P<v>`+reAmount+`)`),
	rule("tax", "", 0.85, `\b(?:vat|tax|gst|sales tax)(?:[ \t]*\(?\d{1,2}(?:[.,]\d+)?[ \t]*%\)?)?`+reLabSep+`(?P<c1>`+reCur+`)?[ \t]*(?P<v>`+reAmount+`)`),
	rule("person", detect.TypePerson, 0.85, `\b(?:name|full name|customer|client|bill to|billed to|sold to|issued to|holder|applicant|patient|employee)[ \t]*[:\-][ \t]*(?P<v>\p{Lu}[\p{L}'\-]+(?:[ \t]+\p{Lu}\.?[\p{L}'\-]*){1,3})`),
	rule("person", detect.TypePerson, 0.8, `^dear[ \t]+(?:(?:mr|mrs|ms|dr|prof)\.?[ \t]+)?(?P<v>\p{Lu}[\p{L}'\-]+(?:[ \t]+\p{Lu}[\p{L}'\-]+){0,2})[ \t]*,`),
	rule("person", detect.TypePerson, 0.8, `\b(?:surname|family name|last name)[ \t]*[:\-]?[ \t]*(?P<v>\p{Lu}[\p{L}'\-]+)`),
	rule("address", detect.TypeStreetAddress, 0.8, `\b(?:address|addr\.?|billing address|shipping address)[ \t]*[:\-][ \t]*(?P<v>\S[^\n]{4,120}?)[ \t]*$`),
	rule("phone", detect.TypePhone, 0.9, `\b(?:phone|tel|telephone|mobile|cell|fax)\.?[ \t]*[:\-]?[ \t]*(?P<v>\+?\(?\d[\d \t().\-]{5,18}\d)`),
	rule("email", detect.TypeEmail, 0.95, `\b(?:e-?mail)[ \t]*[:\-]?[ \t]*(?P<v>[\w.+\-]+ ?@ ?[\w\-]+(?:\.[\w\-]+)+)`),
	rule("iban", detect.TypeIBAN, 0.9, `\biban[ \t]*[:\-]?[ \t]*(?P<v>[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]{4}){2,7}(?:[ ]?[A-Z0-9]{1,4})?)`),
}

// entityFields name the fields taken from the detect engine's entities.
var entityFields = map[string]string{
	detect.TypeEmail:         "email",
	detect.TypePhone:         "phone",
	detect.TypeIBAN:          "iban",
	detect.TypeCreditCard:    "card_number",
	detect.TypeSSN:           "ssn",
	detect.TypeDateOfBirth:   "date_of_birth",
	detect.TypeStreetAddress: "address",
	detect.TypePerson:        "person",
}

// Fields finds structured fields in the pages: labelled values (numbers, dates, amounts,
// names, ...) and the personal data the engine detects. A page's confidence (OCR) lowers its
// fields'. Fields come in page order, then by position; a value found by both a label and the
// engine is reported once, under the label's name.
func Fields(engine *detect.Engine, pages []Page) []Field {
	var out []Field
	for _, p := range pages {
		var fs []Field
		pc := p.Confidence
		if p.Method != MethodOCR {
			pc = 1
		}
		scale := func(c float64) float64 { return round2(c * (0.6 + 0.4*pc)) }
		for _, r := range labelRules {
			vi, c1, c2 := r.re.SubexpIndex("v"), r.re.SubexpIndex("c1"), r.re.SubexpIndex("c2")
			for _, m := range r.re.FindAllStringSubmatchIndex(p.Text, 20) {
				s, e := m[2*vi], m[2*vi+1]
				if s < 0 {
					continue
				}
				val := strings.TrimRight(p.Text[s:e], " \t.,;")
				e = s + len(val)
				val = repair(r.name, val)
				f := Field{Name: r.name, Value: val, Entity: r.entity, Page: p.Number, Confidence: scale(r.conf), Start: s, End: e}
				switch r.name {
				case "date", "due_date", "expiry_date", "date_of_birth":
					f.Normalized = normalizeDate(val)
				case "total", "subtotal", "tax":
					f.Normalized = normalizeAmount(val)
					for _, ci := range []int{c1, c2} {
						if ci > 0 && m[2*ci] >= 0 {
							cur := normalizeCurrency(p.Text[m[2*ci]:m[2*ci+1]])
							fs = append(fs, Field{Name: "currency", Value: p.Text[m[2*ci]:m[2*ci+1]], Normalized: cur, Page: p.Number,
								Confidence: scale(r.conf), Start: m[2*ci], End: m[2*ci+1]})
						}
					}
				case "phone":
					if digits(val) < 7 {
						continue
					}
				}
				if (r.name == "date" || r.name == "due_date" || r.name == "expiry_date") && overlapsAny(fs, s, e) {
					continue // "Due date" also matches the generic "date" rule
				}
				fs = append(fs, f)
			}
		}
		if engine != nil {
			for _, ent := range engine.Scan(p.Text) {
				name, ok := entityFields[ent.Type]
				if !ok || overlapsAny(fs, ent.Start, ent.End) {
					continue
				}
				fs = append(fs, Field{Name: name, Value: ent.Text, Entity: ent.Type, Page: p.Number, Confidence: scale(ent.Score), Start: ent.Start, End: ent.End})
			}
		}
		fs = dedupe(fs)
		sort.SliceStable(fs, func(i, j int) bool { return fs[i].Start < fs[j].Start })
		out = append(out, fs...)
	}
	return out
}

// dedupe drops a field whose span lies within an earlier one of the same name, and repeats
// of a value under the same name on the page.
func dedupe(fs []Field) []Field {
	var out []Field
next:
	for _, f := range fs {
		for _, o := range out {
			if o.Name == f.Name && (o.Value == f.Value || f.Start >= o.Start && f.End <= o.End) {
				continue next
			}
		}
		out = append(out, f)
	}
	return out
}

// repair undoes OCR's usual slips in values whose shape is known: a zero read as "@" in a
// number, spaces around the "@" of an e-mail address.
func repair(name, val string) string {
	switch name {
	case "invoice_number", "receipt_number", "order_number":
		return strings.ReplaceAll(val, "@", "0")
	case "email":
		return strings.ReplaceAll(val, " ", "")
	}
	return val
}

func overlapsAny(fs []Field, s, e int) bool {
	for _, f := range fs {
		if s < f.End && f.Start < e {
			return true
		}
	}
	return false
}

func digits(s string) int {
	n := 0
	for _, r := range s {
		if unicode.IsDigit(r) {
			n++
		}
	}
	return n
}

var dateLayouts = []string{"2006-01-02", "02/01/2006", "2/1/2006", "02.01.2006", "2.1.2006", "02/01/06", "2 January 2006", "2 Jan 2006",
	"January 2 2006", "Jan 2 2006", "January 2, 2006", "Jan 2, 2006", "2 Jan. 2006", "Jan. 2, 2006"}

// normalizeDate returns a date as YYYY-MM-DD, or "" when it cannot tell. Slashed dates are
// read day first, unless the first number cannot be a day-of-month order (13-31 in second place).
func normalizeDate(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if m := slashDate.FindStringSubmatch(s); m != nil && atoi(m[2]) > 12 {
		s = m[2] + "/" + m[1] + "/" + m[3] // month first (US)
	}
	t := strings.ToUpper(s[:1]) + strings.ToLower(s[1:])
	for _, l := range dateLayouts {
		for _, v := range []string{s, t, titleMonth(s)} {
			if d, err := time.Parse(l, v); err == nil {
				return d.Format("2006-01-02")
			}
		}
	}
	return ""
}

func titleMonth(s string) string {
	w := strings.Fields(s)
	for i, x := range w {
		if x != "" && unicode.IsLetter(rune(x[0])) {
			w[i] = strings.ToUpper(x[:1]) + strings.ToLower(x[1:])
		}
	}
	return strings.Join(w, " ")
}

// normalizeAmount returns an amount as digits with a '.' before the cents: "1.234,56" and
// "1,234.56" are both "1234.56".
func normalizeAmount(s string) string {
	s = strings.NewReplacer(" ", "", "'", "").Replace(s)
	last := strings.LastIndexAny(s, ".,")
	if last >= 0 && len(s)-last-1 == 2 {
		return strings.NewReplacer(".", "", ",", "").Replace(s[:last]) + "." + s[last+1:]
	}
	return strings.NewReplacer(".", "", ",", "").Replace(s)
}

func normalizeCurrency(s string) string {
	switch s {
	case "$":
		return "USD"
	case "€":
		return "EUR"
	case "£":
		return "GBP"
	case "¥":
		return "JPY"
	}
	return strings.ToUpper(s)
}

var slashDate = regexp.MustCompile(`^(\d{1,2})/(\d{1,2})/(\d{4})$`)
