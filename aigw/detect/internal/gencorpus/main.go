// Command gencorpus writes the labelled corpora that aigw/detect's TestQuality and
// TestGeneralisation score the detectors against: testdata/corpus.jsonl (the main set,
// templates A, gazetteer names), testdata/corpus_holdout.jsonl (a different seed, different
// templates, street and city names, and person names that are not in the gazetteer), and the
// generalisation splits by kind, testdata/corpus_generalise_dev.jsonl (tuning may read it) and
// testdata/corpus_generalise.jsonl (only scored): each has its own half of templates C, its own
// name origins (namemodel.DevOrigins, namemodel.HeldOutOrigins), address countries and
// place/product negatives.
//
// Every sample is built from templates whose placeholders are filled with generated values
// whose spans are recorded as they are written, so the labels are exact by construction.
// Hard negatives (order numbers, GUIDs, version strings, timestamps, Luhn-invalid card-like
// numbers, SSNs in never-issued ranges, phone-like product codes, ISBNs, non-birth dates,
// capitalised non-names) are written unlabelled.
//
// Run from aigw/detect: go run ./internal/gencorpus
package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/nyaruka/phonenumbers"

	"github.com/edgewan/edgewan/aigw/detect/internal/namemodel"
)

// Sample is one labelled text.
type Sample struct {
	ID    string   `json:"id"`
	Set   string   `json:"set"`
	Text  string   `json:"text"`
	Spans []Span   `json:"spans"`
	Tags  []string `json:"tags,omitempty"`
}

// Span is one labelled entity: Text[Start:End] in bytes.
type Span struct {
	Type  string `json:"type"`
	Start int    `json:"start"`
	End   int    `json:"end"`
}

func main() {
	dir := flag.String("dir", "testdata", "output directory")
	gaz := flag.String("gazetteer", "gazetteer", "directory of the detector's name lists (holdout names must not be in them)")
	flag.Parse()
	gz, err := ReadGazetteer(*gaz)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gencorpus:", err)
		os.Exit(1)
	}
	gen, err := GeneraliseConfig(gz, false)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gencorpus:", err)
		os.Exit(1)
	}
	dev, err := GeneraliseConfig(gz, true)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gencorpus:", err)
		os.Exit(1)
	}
	for _, c := range []struct {
		file string
		cfg  Config
	}{
		{"corpus.jsonl", Main(gz)},
		{"corpus_holdout.jsonl", Holdout(gz)},
		{"corpus_generalise.jsonl", gen},
		{"corpus_generalise_dev.jsonl", dev},
	} {
		if err := write(filepath.Join(*dir, c.file), Generate(c.cfg)); err != nil {
			fmt.Fprintln(os.Stderr, "gencorpus:", err)
			os.Exit(1)
		}
	}
}

// GeneraliseConfig returns Generalise with the names of namemodel.HeldOutOrigins, or of
// namemodel.DevOrigins for the development split.
func GeneraliseConfig(gz Gazetteer, dev bool) (Config, error) {
	origins := namemodel.HeldOutOrigins
	if dev {
		origins = namemodel.DevOrigins
	}
	var first, last []string
	for _, o := range origins {
		g, f, err := namemodel.OriginNames(o)
		if err != nil {
			return Config{}, err
		}
		first, last = append(first, g...), append(last, f...)
	}
	return Generalise(gz, first, last, dev), nil
}

// Gazetteer holds the detector's name lists.
type Gazetteer struct {
	First, Last []string
	Folded      map[string]bool // every first and last name, folded
}

// ReadGazetteer reads the detector's name lists from dir.
func ReadGazetteer(dir string) (Gazetteer, error) {
	gz := Gazetteer{Folded: map[string]bool{}}
	for _, f := range []struct {
		name string
		dst  *[]string
	}{{"first_names.txt", &gz.First}, {"last_names.txt", &gz.Last}} {
		b, err := os.ReadFile(filepath.Join(dir, f.name))
		if err != nil {
			return gz, fmt.Errorf("ReadGazetteer: %w", err)
		}
		for _, w := range strings.Fields(string(b)) {
			*f.dst = append(*f.dst, w)
			gz.Folded[fold(w)] = true
		}
	}
	return gz, nil
}

// fold lower-cases w and strips the diacritics used in the name lists.
func fold(w string) string {
	r := strings.NewReplacer("á", "a", "à", "a", "ä", "a", "â", "a", "é", "e", "è", "e", "ë", "e",
		"í", "i", "ï", "i", "ó", "o", "ö", "o", "ő", "o", "ø", "o", "ú", "u", "ü", "u", "ű", "u",
		"ñ", "n", "ç", "c", "ð", "d", "þ", "th", "'", "", "-", "")
	return r.Replace(strings.ToLower(w))
}

func write(path string, samples []Sample) error {
	b, err := Encode(samples)
	if err != nil {
		return fmt.Errorf("write: %w", err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

// Encode returns samples as JSON lines.
func Encode(samples []Sample) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for _, s := range samples {
		if err := enc.Encode(s); err != nil {
			return nil, fmt.Errorf("Encode: %w", err)
		}
	}
	return buf.Bytes(), nil
}

// Config selects the seed, templates and vocabularies of one corpus.
type Config struct {
	Name      string
	Seed      uint64
	Samples   int
	Templates map[string][]string // category → templates
	Weights   map[string]int      // category → relative frequency
	First     []string
	Last      []string
	Streets   []string // US street names
	Cities    []string // "City|ST"
	UKStreets []string
	UKCities  []string
	DEStreets []string
	DECities  []string
	FRStreets []string
	FRCities  []string
	ESStreets []string
	ITStreets []string
	Domains   []string
	Intl      []intlAddress // countries of address_intl

	PlaceNegatives []string // unlabelled place, product and organisation names
}

// Generate returns cfg.Samples samples.
func Generate(cfg Config) []Sample {
	g := &gen{r: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)), cfg: cfg}
	var cats []string
	for c := range cfg.Templates {
		cats = append(cats, c)
	}
	// Deterministic order.
	sortStrings(cats)
	total := 0
	for _, c := range cats {
		total += cfg.Weights[c]
	}
	out := make([]Sample, 0, cfg.Samples)
	for i := 0; i < cfg.Samples; i++ {
		var b builder
		n := 1 + g.r.IntN(3)
		var tags []string
		for k := 0; k < n; k++ {
			x := g.r.IntN(total)
			cat := cats[0]
			for _, c := range cats {
				if x < cfg.Weights[c] {
					cat = c
					break
				}
				x -= cfg.Weights[c]
			}
			ts := cfg.Templates[cat]
			if k > 0 {
				// Sentences that end in punctuation may share a line; others (a signature, a
				// "Key: value" line) end it, as they would in real text.
				if t := b.sb.String(); strings.ContainsAny(t[len(t)-1:], ".!?") {
					b.text(g.pick([]string{" ", " ", "\n", "\n\n", " "}))
				} else {
					b.text(g.pick([]string{"\n", "\n", "\n\n"}))
				}
			}
			g.render(&b, g.pick(ts))
			tags = append(tags, cat)
		}
		out = append(out, Sample{
			ID:    fmt.Sprintf("%s-%05d", cfg.Name, i),
			Set:   cfg.Name,
			Text:  b.sb.String(),
			Spans: b.spans,
			Tags:  dedupe(tags),
		})
	}
	return out
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

func dedupe(s []string) []string {
	sortStrings(s)
	out := s[:0]
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}

// builder accumulates text and the spans of labelled pieces.
type builder struct {
	sb    strings.Builder
	spans []Span
}

func (b *builder) text(s string) { b.sb.WriteString(s) }

func (b *builder) entity(typ, s string) {
	start := b.sb.Len()
	b.sb.WriteString(s)
	b.spans = append(b.spans, Span{Type: typ, Start: start, End: b.sb.Len()})
}

type gen struct {
	r   *rand.Rand
	cfg Config
}

func (g *gen) pick(s []string) string { return s[g.r.IntN(len(s))] }

func (g *gen) digits(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('0' + g.r.IntN(10))
	}
	return string(b)
}

// render fills the placeholders {name} of t; a '{' not followed by a lower-case name and '}'
// is literal (JSON templates).
func (g *gen) render(b *builder, t string) {
	for len(t) > 0 {
		i := strings.IndexByte(t, '{')
		if i < 0 {
			b.text(t)
			return
		}
		j := i + 1
		for j < len(t) && (t[j] >= 'a' && t[j] <= 'z' || t[j] >= '0' && t[j] <= '9' || t[j] == '_') {
			j++
		}
		if j == i+1 || j >= len(t) || t[j] != '}' {
			b.text(t[:i+1])
			t = t[i+1:]
			continue
		}
		b.text(t[:i])
		g.fill(b, t[i+1:j])
		t = t[j+1:]
	}
}

// fill writes one placeholder. Labelled kinds call b.entity; hard negatives call b.text.
func (g *gen) fill(b *builder, kind string) {
	switch kind {
	// E-mail and URLs.
	case "email":
		b.entity("email", g.email())
	case "email_upper":
		b.entity("email", strings.ToUpper(g.email()))
	case "url":
		b.entity("url", g.url())
	case "url_www":
		b.entity("url", "www."+g.pick(g.cfg.Domains)+g.pick([]string{"", "/", "/about", "/contact-us", "/en/products?id=" + g.digits(3)}))
	// Phones.
	case "phone_us":
		b.entity("phone", g.phoneUS())
	case "phone_us_plain":
		b.entity("phone", g.phoneUSPlain())
	case "phone_intl":
		b.entity("phone", g.phoneIntl(g.pick([]string{"GB", "DE", "FR", "IN", "AU", "BR", "JP", "ES", "IT", "NL", "MX", "US", "CH", "SE", "PL", "ZA", "SG"})))
	case "phone_e164":
		b.entity("phone", g.phoneE164(g.pick([]string{"GB", "DE", "FR", "IN", "US", "AU", "ES"})))
	case "phone_nat_eu":
		b.entity("phone", g.phoneNational(g.pick([]string{"GB", "DE", "FR", "NL", "IT", "AU", "CH", "AT"})))
	case "phone_like":
		b.text(g.phoneUS()) // a valid-looking number used as a product or part code
	// Cards.
	case "card":
		b.entity("credit_card", g.card(""))
	case "card_visa":
		b.entity("credit_card", g.card("visa"))
	case "card_amex":
		b.entity("credit_card", g.card("amex"))
	case "card_mc":
		b.entity("credit_card", g.card("mastercard"))
	case "card_bad":
		b.text(g.cardBad())
	// SSNs.
	case "ssn":
		b.entity("ssn", g.ssn("-"))
	case "ssn_spaced":
		b.entity("ssn", g.ssn(" "))
	case "ssn_plain":
		b.entity("ssn", g.ssn(""))
	case "ssn_bad":
		b.text(g.ssnBad())
	// IBAN.
	case "iban":
		b.entity("iban", g.iban(true))
	case "iban_compact":
		b.entity("iban", g.iban(false))
	// Network.
	case "ipv4":
		b.entity("ip_address", g.ipv4())
	case "ipv4_port":
		b.entity("ip_address", g.ipv4())
		b.text(":" + g.pick([]string{"22", "443", "8080", "5432"}))
	case "ipv4_cidr":
		b.entity("ip_address", g.ipv4())
		b.text("/" + g.pick([]string{"8", "16", "24", "32"}))
	case "ipv6":
		b.entity("ip_address", g.ipv6())
	case "mac":
		b.entity("mac_address", g.mac())
	// Dates.
	case "dob":
		b.entity("date_of_birth", g.date(g.birthYear(), "num"))
	case "dob_short":
		y, m, d := g.birthYear(), 1+g.r.IntN(12), 1+g.r.IntN(28)
		b.entity("date_of_birth", fmt.Sprintf("%02d/%02d/%02d", m, d, y%100))
	case "dob_text":
		b.entity("date_of_birth", g.date(g.birthYear(), "en"))
	case "dob_de":
		b.entity("date_of_birth", g.date(g.birthYear(), "de"))
	case "dob_fr":
		b.entity("date_of_birth", g.date(g.birthYear(), "fr"))
	case "dob_es":
		b.entity("date_of_birth", g.date(g.birthYear(), "es"))
	case "dob_it":
		b.entity("date_of_birth", g.date(g.birthYear(), "it"))
	case "date_other":
		b.text(g.date(2018+g.r.IntN(8), g.pick([]string{"num", "en", "iso"})))
	case "timestamp":
		b.text(g.timestamp())
	// Addresses.
	case "address_us":
		b.entity("street_address", g.addressUS(false))
	case "address_us_full":
		b.entity("street_address", g.addressUS(true))
	case "address_uk":
		b.entity("street_address", g.addressUK())
	case "address_de":
		b.entity("street_address", g.addressDE())
	case "address_fr":
		b.entity("street_address", g.addressFR())
	case "address_es":
		b.entity("street_address", g.addressES())
	case "address_it":
		b.entity("street_address", g.addressIT())
	// People.
	case "person":
		b.entity("person", g.person())
	case "person_lower":
		b.entity("person", strings.ToLower(g.person()))
	case "phone_ext":
		// The extension is part of the number (it is dialled).
		b.entity("phone", g.phoneUS()+g.pick([]string{" ext. ", " x", " ext "})+g.digits(3))
	// Generalisation corpus (templates C): unseen separators, countries and cue-less names.
	case "card_sep":
		d := g.cardDigits(g.pick([]string{"visa", "mastercard", "amex", "discover"}))
		sep := g.pick([]string{".", "  ", ".", "  ", " - "[1:2]})
		if len(d) == 15 {
			b.entity("credit_card", d[:4]+sep+d[4:10]+sep+d[10:])
		} else {
			b.entity("credit_card", d[:4]+sep+d[4:8]+sep+d[8:12]+sep+d[12:])
		}
	case "ssn_dots":
		b.entity("ssn", g.ssn(g.pick([]string{".", "-", " "})))
	case "dob_of":
		y := g.birthYear()
		m := g.pick([]string{"Jan", "Feb", "March", "Apr", "June", "July", "Aug", "Sept", "Oct", "Nov", "December"})
		d := 1 + g.r.IntN(28)
		b.entity("date_of_birth", fmt.Sprintf("%d%s of %s %d", d, ordinalSuffix(d), m, y))
	case "address_intl":
		b.entity("street_address", g.addressIntl())
	case "place_neg":
		b.text(g.pick(g.cfg.PlaceNegatives))
	case "label":
		b.text(g.pick([]string{"Owner", "Assignee", "Reporter", "Requester", "Customer", "Contact", "Employee", "Candidate", "Tenant", "Driver"}))
	case "first":
		b.entity("person", g.pick(g.cfg.First))
	case "last":
		b.entity("person", g.pick(g.cfg.Last))
	case "title_last":
		b.text(g.pick([]string{"Dr. ", "Mr. ", "Mrs. ", "Ms. ", "Prof. ", "Mr ", "Mrs ", "Dr "}))
		b.entity("person", g.pick(g.cfg.Last))
	case "title_person":
		b.text(g.pick([]string{"Dr. ", "Mr. ", "Mrs. ", "Ms. ", "Prof. "}))
		b.entity("person", g.person())
	case "title_de":
		b.text(g.pick([]string{"Herr ", "Frau "}))
		b.entity("person", g.pick(g.cfg.Last))
	case "title_fr":
		b.text(g.pick([]string{"Mme ", "Madame ", "Monsieur "}))
		b.entity("person", g.pick(g.cfg.Last))
	// Secrets.
	case "aws_key":
		b.entity("secret", g.pick([]string{"AKIA", "ASIA"})+g.upperAlnum(16))
	case "aws_secret":
		b.entity("secret", g.base64(40))
	case "gh_token":
		b.entity("secret", "ghp_"+g.alnum(36))
	case "gitlab_token":
		b.entity("secret", "glpat-"+g.alnum(20))
	case "slack_token":
		b.entity("secret", "xoxb-"+g.digits(11)+"-"+g.digits(13)+"-"+g.alnum(24))
	case "stripe_key":
		b.entity("secret", g.pick([]string{"sk_live_", "sk_test_", "rk_live_"})+g.alnum(24))
	case "google_key":
		b.entity("secret", "AIza"+g.urlSafe(35))
	case "openai_key":
		b.entity("secret", "sk-proj-"+g.alnum(48))
	case "npm_token":
		b.entity("secret", "npm_"+g.alnum(36))
	case "jwt":
		b.entity("secret", g.jwt())
	case "pem":
		b.entity("secret", g.pem())
	case "password":
		b.entity("secret", g.password())
	case "bearer":
		b.entity("secret", g.alnum(32+g.r.IntN(16)))
	// Unlabelled hard negatives.
	case "order_no":
		b.text(g.pick([]string{"", "A-", "ORD-", "#", "SO"}) + g.digits(6+g.r.IntN(5)))
	case "order_digits":
		b.text(g.digits(10))
	case "tracking":
		b.text(g.pick([]string{"1Z" + g.upperAlnum(16), g.digits(12), g.digits(22), "94" + g.digits(20)}))
	case "invoice_no":
		b.text(g.pick([]string{"INV-", "", "2024-", "#"}) + g.digits(5+g.r.IntN(4)))
	case "guid":
		b.text(g.guid())
	case "version4":
		b.text(fmt.Sprintf("%d.%d.%d.%d", g.r.IntN(12), g.r.IntN(30), g.r.IntN(10), g.r.IntN(200)))
	case "version3":
		b.text(fmt.Sprintf("%d.%d.%d", g.r.IntN(12), g.r.IntN(30), g.r.IntN(50)))
	case "section":
		b.text(fmt.Sprintf("%d.%d.%d.%d", 1+g.r.IntN(9), 1+g.r.IntN(9), 1+g.r.IntN(9), 1+g.r.IntN(9)))
	case "oid":
		b.text("1.3.6.1.4.1." + g.digits(4) + "." + g.digits(1))
	case "isbn":
		b.text(g.isbn())
	case "hexhash":
		b.text(g.hex(40))
	case "sha256":
		b.text(g.hex(64))
	case "amount":
		b.text(fmt.Sprintf("$%d,%03d.%02d", 1+g.r.IntN(99), g.r.IntN(1000), g.r.IntN(100)))
	case "bignum":
		b.text(fmt.Sprintf("%d,%03d,%03d", 1+g.r.IntN(99), g.r.IntN(1000), g.r.IntN(1000)))
	case "zip":
		b.text(g.digits(5))
	case "time":
		b.text(fmt.Sprintf("%02d:%02d", g.r.IntN(24), g.r.IntN(60)))
	case "sku":
		b.text(fmt.Sprintf("%s-%s-%s", g.upperAlnum(3), g.digits(4), g.digits(3)))
	case "cve":
		b.text(fmt.Sprintf("CVE-20%02d-%d", 15+g.r.IntN(10), 1000+g.r.IntN(40000)))
	case "digits9":
		b.text(g.digits(9))
	case "digits16":
		b.text(g.digits16NotCard())
	default:
		panic("gencorpus: unknown placeholder " + kind)
	}
}

func (g *gen) alnum(n int) string {
	const cs = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	return g.from(cs, n)
}

func (g *gen) upperAlnum(n int) string { return g.from("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", n) }
func (g *gen) urlSafe(n int) string {
	return g.from("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-", n)
}
func (g *gen) hex(n int) string { return g.from("0123456789abcdef", n) }

func (g *gen) base64(n int) string {
	for {
		s := g.from("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", n)
		var u, l, d bool
		for _, c := range s {
			u = u || c >= 'A' && c <= 'Z'
			l = l || c >= 'a' && c <= 'z'
			d = d || c >= '0' && c <= '9'
		}
		if u && l && d {
			return s
		}
	}
}

func (g *gen) from(cs string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = cs[g.r.IntN(len(cs))]
	}
	return string(b)
}

func (g *gen) email() string {
	f := strings.ToLower(fold(g.pick(g.cfg.First)))
	l := strings.ToLower(fold(g.pick(g.cfg.Last)))
	local := g.pick([]string{f + "." + l, f[:1] + l, f + "_" + l, f + l + g.digits(2), f, l + "." + f, f + "+" + g.pick([]string{"news", "work", "shop"})})
	return local + "@" + g.pick(g.cfg.Domains)
}

func (g *gen) url() string {
	scheme := g.pick([]string{"https://", "https://", "http://", "https://www."})
	path := g.pick([]string{"", "/", "/docs/getting-started", "/p/" + g.alnum(8), "/search?q=" + g.alnum(5) + "&page=2",
		"/blog/2023/10/" + g.pick([]string{"release-notes", "how-to", "faq"}), "/index.html#section-" + g.digits(1),
		"/api/v1/users/" + g.digits(4), "/wiki/Main_Page"})
	port := ""
	if g.r.IntN(8) == 0 {
		port = ":" + g.pick([]string{"8080", "8443", "3000"})
	}
	return scheme + g.pick(g.cfg.Domains) + port + path
}

// US area codes that are in service.
var usAreaCodes = []string{"201", "202", "206", "212", "213", "214", "303", "305", "310", "312", "404",
	"408", "415", "503", "512", "602", "617", "646", "650", "702", "713", "718", "720", "773",
	"801", "818", "858", "917", "919", "973"}

func (g *gen) usNumber() *phonenumbers.PhoneNumber {
	for {
		s := g.pick(usAreaCodes) + fmt.Sprint(2+g.r.IntN(8)) + g.digits(2) + g.digits(4)
		n, err := phonenumbers.Parse(s, "US")
		if err == nil && phonenumbers.IsValidNumber(n) {
			return n
		}
	}
}

func (g *gen) phoneUS() string {
	n := g.usNumber()
	d := phonenumbers.GetNationalSignificantNumber(n)
	a, b, c := d[:3], d[3:6], d[6:]
	return g.pick([]string{
		"(" + a + ") " + b + "-" + c,
		a + "-" + b + "-" + c,
		a + "." + b + "." + c,
		a + " " + b + " " + c,
		"+1 " + a + " " + b + " " + c,
		"+1 (" + a + ") " + b + "-" + c,
		"1-" + a + "-" + b + "-" + c,
		"+1-" + a + "-" + b + "-" + c,
	})
}

func (g *gen) phoneUSPlain() string {
	return phonenumbers.GetNationalSignificantNumber(g.usNumber())
}

// regionNumber returns a random valid number of region, built from the library's example
// number by replacing its last digits.
func (g *gen) regionNumber(region string) *phonenumbers.PhoneNumber {
	typ := phonenumbers.MOBILE
	if g.r.IntN(2) == 0 {
		typ = phonenumbers.FIXED_LINE
	}
	ex := phonenumbers.GetExampleNumberForType(region, typ)
	if ex == nil {
		ex = phonenumbers.GetExampleNumber(region)
	}
	nsn := phonenumbers.GetNationalSignificantNumber(ex)
	cc := ex.GetCountryCode()
	for tries := 0; ; tries++ {
		k := min(4, len(nsn)-3)
		cand := nsn[:len(nsn)-k] + g.digits(k)
		if tries > 50 {
			cand = nsn
		}
		n, err := phonenumbers.Parse(fmt.Sprintf("+%d%s", cc, cand), "ZZ")
		if err == nil && phonenumbers.IsValidNumber(n) {
			return n
		}
	}
}

func (g *gen) phoneIntl(region string) string {
	if region == "US" {
		return "+1 " + strings.TrimPrefix(phonenumbers.Format(g.usNumber(), phonenumbers.NATIONAL), "")
	}
	return phonenumbers.Format(g.regionNumber(region), phonenumbers.INTERNATIONAL)
}

func (g *gen) phoneE164(region string) string {
	if region == "US" {
		return phonenumbers.Format(g.usNumber(), phonenumbers.E164)
	}
	return phonenumbers.Format(g.regionNumber(region), phonenumbers.E164)
}

func (g *gen) phoneNational(region string) string {
	for {
		s := phonenumbers.Format(g.regionNumber(region), phonenumbers.NATIONAL)
		if strings.HasPrefix(s, "0") {
			return s
		}
	}
}

func luhnDigit(d []byte) byte {
	sum := 0
	double := true
	for i := len(d) - 1; i >= 0; i-- {
		v := int(d[i] - '0')
		if double {
			v *= 2
			if v > 9 {
				v -= 9
			}
		}
		sum += v
		double = !double
	}
	return byte('0' + (10-sum%10)%10)
}

func (g *gen) cardDigits(brand string) string {
	if brand == "" {
		brand = g.pick([]string{"visa", "visa", "mastercard", "mastercard", "amex", "discover", "jcb", "diners", "unionpay", "mastercard2"})
	}
	var prefix string
	n := 16
	switch brand {
	case "visa":
		prefix = "4"
	case "mastercard":
		prefix = fmt.Sprint(51 + g.r.IntN(5))
	case "mastercard2":
		prefix = fmt.Sprint(2221 + g.r.IntN(500))
	case "amex":
		prefix = g.pick([]string{"34", "37"})
		n = 15
	case "discover":
		prefix = g.pick([]string{"6011", "65", "644"})
	case "jcb":
		prefix = fmt.Sprint(3528 + g.r.IntN(60))
	case "diners":
		prefix = g.pick([]string{"36", "38", "300", "305"})
		n = 14
	case "unionpay":
		prefix = "62" + fmt.Sprint(g.r.IntN(10))
		if prefix == "622" {
			prefix = "620"
		}
	}
	d := []byte(prefix + g.digits(n-1-len(prefix)))
	return string(append(d, luhnDigit(d)))
}

func (g *gen) formatCard(d string) string {
	switch {
	case len(d) == 15:
		sep := g.pick([]string{" ", "-", ""})
		return d[:4] + sep + d[4:10] + sep + d[10:]
	case len(d) == 14:
		sep := g.pick([]string{" ", ""})
		return d[:4] + sep + d[4:10] + sep + d[10:]
	}
	sep := g.pick([]string{" ", " ", "-", "", ""})
	return d[:4] + sep + d[4:8] + sep + d[8:12] + sep + d[12:]
}

func (g *gen) card(brand string) string { return g.formatCard(g.cardDigits(brand)) }

// cardBad returns a card-shaped number with a wrong check digit.
func (g *gen) cardBad() string {
	d := []byte(g.cardDigits(g.pick([]string{"visa", "mastercard"})))
	last := d[len(d)-1]
	d[len(d)-1] = byte('0' + (int(last-'0')+1+g.r.IntN(9))%10)
	return g.formatCard(string(d))
}

// digits16NotCard returns 16 digits that fail the Luhn check.
func (g *gen) digits16NotCard() string {
	for {
		d := []byte(g.digits(16))
		if luhnDigit(d[:15]) != d[15] {
			return string(d)
		}
	}
}

func (g *gen) ssnParts() (int, int, int) {
	for {
		a, gr, s := 1+g.r.IntN(899), 1+g.r.IntN(99), 1+g.r.IntN(9999)
		v := a*1000000 + gr*10000 + s
		if a == 666 || v == 78051120 || v == 219099999 || v == 123456789 {
			continue
		}
		return a, gr, s
	}
}

func (g *gen) ssn(sep string) string {
	a, gr, s := g.ssnParts()
	return fmt.Sprintf("%03d%s%02d%s%04d", a, sep, gr, sep, s)
}

// ssnBad returns a dashed SSN in a never-issued range.
func (g *gen) ssnBad() string {
	a, gr, s := g.ssnParts()
	switch g.r.IntN(5) {
	case 0:
		a = 0
	case 1:
		a = 666
	case 2:
		a = 900 + g.r.IntN(100)
	case 3:
		gr = 0
	case 4:
		s = 0
	}
	return fmt.Sprintf("%03d-%02d-%04d", a, gr, s)
}

var ibanFormats = map[string]string{ // country → BBAN layout: n digit, a upper letter, c alnum
	"DE": "nnnnnnnnnnnnnnnnnn", "GB": "aaaannnnnnnnnnnnnn", "FR": "nnnnnnnnnnccccccccccccnnnn"[:23],
	"ES": "nnnnnnnnnnnnnnnnnnnn", "IT": "annnnnnnnnnnnnnnnnnnnnn"[:23], "NL": "aaaannnnnnnnnn",
	"BE": "nnnnnnnnnnnn", "CH": "nnnnnnnnnnnnnnnnn", "AT": "nnnnnnnnnnnnnnnn", "PL": "nnnnnnnnnnnnnnnnnnnnnnnn",
	"SE": "nnnnnnnnnnnnnnnnnnnn", "IE": "aaaannnnnnnnnnnnnn", "PT": "nnnnnnnnnnnnnnnnnnnnn", "NO": "nnnnnnnnnnn",
	"DK": "nnnnnnnnnnnnnn", "FI": "nnnnnnnnnnnnnn", "LU": "nnnnnnnnnnnnnnnn", "CZ": "nnnnnnnnnnnnnnnnnnnn",
}

func (g *gen) iban(grouped bool) string {
	cs := []string{"DE", "GB", "FR", "ES", "IT", "NL", "BE", "CH", "AT", "PL", "SE", "IE", "PT", "NO", "DK", "FI", "LU", "CZ"}
	c := g.pick(cs)
	var bban strings.Builder
	for _, k := range ibanFormats[c] {
		switch k {
		case 'n':
			bban.WriteByte(byte('0' + g.r.IntN(10)))
		case 'a':
			bban.WriteByte(byte('A' + g.r.IntN(26)))
		default:
			bban.WriteString(g.upperAlnum(1))
		}
	}
	// Check digits: 98 - (BBAN + country + "00") mod 97.
	r := 0
	for _, ch := range bban.String() + c + "00" {
		if ch >= 'A' && ch <= 'Z' {
			r = (r*100 + int(ch-'A') + 10) % 97
		} else {
			r = (r*10 + int(ch-'0')) % 97
		}
	}
	s := fmt.Sprintf("%s%02d%s", c, 98-r, bban.String())
	if !grouped {
		return s
	}
	var out strings.Builder
	for i := 0; i < len(s); i += 4 {
		if i > 0 {
			out.WriteByte(' ')
		}
		out.WriteString(s[i:min(i+4, len(s))])
	}
	return out.String()
}

func (g *gen) ipv4() string {
	switch g.r.IntN(4) {
	case 0:
		return fmt.Sprintf("192.168.%d.%d", g.r.IntN(256), 1+g.r.IntN(254))
	case 1:
		return fmt.Sprintf("10.%d.%d.%d", g.r.IntN(256), g.r.IntN(256), 1+g.r.IntN(254))
	default:
		return fmt.Sprintf("%d.%d.%d.%d", 11+g.r.IntN(212), g.r.IntN(256), g.r.IntN(256), 1+g.r.IntN(254))
	}
}

func (g *gen) ipv6() string {
	var a [16]byte
	a[0], a[1] = 0x20, 0x01
	for i := 2; i < 16; i++ {
		if g.r.IntN(3) > 0 || i < 4 {
			a[i] = byte(g.r.IntN(256))
		}
	}
	if g.r.IntN(4) == 0 {
		a = [16]byte{0xfe, 0x80}
		for i := 8; i < 16; i++ {
			a[i] = byte(g.r.IntN(256))
		}
	}
	ip := netip.AddrFrom16(a)
	if g.r.IntN(3) == 0 {
		return ip.StringExpanded()
	}
	return ip.String()
}

func (g *gen) mac() string {
	h := g.hex(12)
	if g.r.IntN(2) == 0 {
		h = strings.ToUpper(h)
	}
	switch g.r.IntN(5) {
	case 0:
		return h[:4] + "." + h[4:8] + "." + h[8:]
	case 1:
		return strings.Join([]string{h[0:2], h[2:4], h[4:6], h[6:8], h[8:10], h[10:12]}, "-")
	}
	return strings.Join([]string{h[0:2], h[2:4], h[4:6], h[6:8], h[8:10], h[10:12]}, ":")
}

func (g *gen) birthYear() int { return 1935 + g.r.IntN(72) }

var monthNames = map[string][]string{
	"en": {"January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"},
	"de": {"Januar", "Februar", "März", "April", "Mai", "Juni", "Juli", "August", "September", "Oktober", "November", "Dezember"},
	"fr": {"janvier", "février", "mars", "avril", "mai", "juin", "juillet", "août", "septembre", "octobre", "novembre", "décembre"},
	"es": {"enero", "febrero", "marzo", "abril", "mayo", "junio", "julio", "agosto", "septiembre", "octubre", "noviembre", "diciembre"},
	"it": {"gennaio", "febbraio", "marzo", "aprile", "maggio", "giugno", "luglio", "agosto", "settembre", "ottobre", "novembre", "dicembre"},
}

func (g *gen) date(y int, style string) string {
	m := 1 + g.r.IntN(12)
	d := 1 + g.r.IntN(28)
	switch style {
	case "iso":
		return fmt.Sprintf("%04d-%02d-%02d", y, m, d)
	case "num":
		return g.pick([]string{
			fmt.Sprintf("%04d-%02d-%02d", y, m, d),
			fmt.Sprintf("%02d/%02d/%04d", m, d, y),
			fmt.Sprintf("%02d/%02d/%04d", d, m, y),
			fmt.Sprintf("%d/%d/%04d", m, d, y),
			fmt.Sprintf("%02d.%02d.%04d", d, m, y),
			fmt.Sprintf("%02d-%02d-%04d", d, m, y),
		})
	case "en":
		mn := monthNames["en"][m-1]
		return g.pick([]string{
			fmt.Sprintf("%s %d, %d", mn, d, y),
			fmt.Sprintf("%d %s %d", d, mn, y),
			fmt.Sprintf("%s %d %d", mn, d, y),
			fmt.Sprintf("%d-%s-%d", d, mn[:3], y),
			fmt.Sprintf("%s %d%s, %d", mn, d, ordinal(d), y),
		})
	case "de":
		return fmt.Sprintf("%d. %s %d", d, monthNames["de"][m-1], y)
	case "fr":
		return fmt.Sprintf("%d %s %d", d, monthNames["fr"][m-1], y)
	case "es":
		return fmt.Sprintf("%d de %s de %d", d, monthNames["es"][m-1], y)
	case "it":
		return fmt.Sprintf("%d %s %d", d, monthNames["it"][m-1], y)
	}
	panic("gencorpus: date style " + style)
}

func ordinal(d int) string {
	switch {
	case d%10 == 1 && d != 11:
		return "st"
	case d%10 == 2 && d != 12:
		return "nd"
	case d%10 == 3 && d != 13:
		return "rd"
	}
	return "th"
}

func (g *gen) timestamp() string {
	y, m, d := 2019+g.r.IntN(7), 1+g.r.IntN(12), 1+g.r.IntN(28)
	h, mi, s := g.r.IntN(24), g.r.IntN(60), g.r.IntN(60)
	return g.pick([]string{
		fmt.Sprintf("%04d-%02d-%02dT%02d:%02d:%02dZ", y, m, d, h, mi, s),
		fmt.Sprintf("%04d-%02d-%02dT%02d:%02d:%02d.%03d+02:00", y, m, d, h, mi, s, g.r.IntN(1000)),
		fmt.Sprintf("%04d-%02d-%02d %02d:%02d:%02d", y, m, d, h, mi, s),
		fmt.Sprintf("%d", 1500000000+g.r.IntN(300000000)),
	})
}

func (g *gen) guid() string {
	h := g.hex(32)
	return h[:8] + "-" + h[8:12] + "-4" + h[13:16] + "-a" + h[17:20] + "-" + h[20:]
}

func (g *gen) isbn() string {
	// ISBN-13 with a valid EAN check digit.
	d := "978" + g.digits(9)
	sum := 0
	for i, c := range d {
		v := int(c - '0')
		if i%2 == 1 {
			v *= 3
		}
		sum += v
	}
	d += fmt.Sprint((10 - sum%10) % 10)
	if g.r.IntN(2) == 0 {
		return d
	}
	return d[:3] + "-" + d[3:4] + "-" + d[4:7] + "-" + d[7:12] + "-" + d[12:]
}

func (g *gen) person() string {
	f, l := g.pick(g.cfg.First), g.pick(g.cfg.Last)
	switch g.r.IntN(10) {
	case 0:
		return f + " " + string("ABCDEFGHJKLMNPRSTW"[g.r.IntN(18)]) + ". " + l
	case 1:
		return f + " " + g.pick(g.cfg.First) + " " + l
	}
	return f + " " + l
}

func ordinalSuffix(d int) string {
	switch {
	case d%10 == 1 && d != 11:
		return "st"
	case d%10 == 2 && d != 12:
		return "nd"
	case d%10 == 3 && d != 13:
		return "rd"
	}
	return "th"
}

// placeNegatives are place, product and organisation names that contain or look like personal
// names; they are written unlabelled.
var placeNegatives = []string{"the Lincoln Park branch", "Victoria Station", "Jackson Heights",
	"Johns Hopkins Hospital", "Morgan Stanley", "the Ford Transit van", "Grafana Loki",
	"Kuala Lumpur", "Addis Ababa", "the Santa Monica Pier", "Mount Kilimanjaro", "Lake Tahoe",
	"the Mercedes-Benz Sprinter", "Walnut Creek", "Morgan Hill", "the Hilton Garden Inn",
	"Saint Petersburg", "the Golden Gate Bridge", "Buenos Aires", "Tesla Model Y",
	"the Kennedy Center", "Charlotte Douglas Airport", "the Austin office", "Salt Lake City",
	"Jordan Valley Farms", "the Madison Square Garden show", "Toyota Corolla", "Apache Kafka",
	"the Washington Monument", "Florence Cathedral", "the Lincoln Memorial", "Victoria Falls"}

// intlAddress builds an address of a country the tuned corpora never had.
type intlAddress struct {
	country string
	streets []string
	format  func(g *gen, street string) string
}

var intlAddresses = []intlAddress{
	{"NL", []string{"Herengracht", "Prinsengracht", "Kalverstraat", "Damrak", "Oudegracht", "Coolsingel"}, func(g *gen, st string) string {
		return fmt.Sprintf("%s %d, %04d %s%s %s", st, 1+g.r.IntN(400), 1000+g.r.IntN(8999), string(rune('A'+g.r.IntN(26))), string(rune('A'+g.r.IntN(26))), g.pick([]string{"Amsterdam", "Utrecht", "Rotterdam", "Den Haag"}))
	}},
	{"AU", []string{"Collins Street", "George St", "Queen Street", "Flinders Lane", "Hay Street"}, func(g *gen, st string) string {
		return fmt.Sprintf("%d %s, %s %d", 1+g.r.IntN(500), st, g.pick([]string{"Melbourne VIC", "Sydney NSW", "Brisbane QLD", "Hobart TAS", "Canberra ACT"}), 2000+g.r.IntN(5000))
	}},
	{"CA", []string{"Queen Street West", "Yonge Street", "Rue Sainte-Catherine", "Granville Street", "Jasper Avenue"}, func(g *gen, st string) string {
		return fmt.Sprintf("%d %s, %s %s%d%s %d%s%d", 1+g.r.IntN(3000), st, g.pick([]string{"Toronto, ON", "Montréal, QC", "Vancouver, BC", "Edmonton, AB"}), string(rune('A'+g.r.IntN(20))), g.r.IntN(10), string(rune('A'+g.r.IntN(26))), g.r.IntN(10), string(rune('A'+g.r.IntN(26))), g.r.IntN(10))
	}},
	{"BR", []string{"Avenida Paulista", "Rua Augusta", "Rua Oscar Freire", "Avenida Atlântica"}, func(g *gen, st string) string {
		return fmt.Sprintf("%s, %d, %05d-%03d %s", st, 1+g.r.IntN(2000), 10000+g.r.IntN(89999), g.r.IntN(1000), g.pick([]string{"São Paulo", "Rio de Janeiro", "Curitiba"}))
	}},
	{"SE", []string{"Drottninggatan", "Kungsgatan", "Sveavägen", "Götgatan"}, func(g *gen, st string) string {
		return fmt.Sprintf("%s %d, %03d %02d %s", st, 1+g.r.IntN(120), 100+g.r.IntN(800), g.r.IntN(100), g.pick([]string{"Stockholm", "Göteborg", "Malmö"}))
	}},
	{"PT", []string{"Rua Garrett", "Avenida da Liberdade", "Rua de Santa Catarina"}, func(g *gen, st string) string {
		return fmt.Sprintf("%s %d, %04d-%03d %s", st, 1+g.r.IntN(300), 1000+g.r.IntN(8999), g.r.IntN(1000), g.pick([]string{"Lisboa", "Porto"}))
	}},
	{"PL", []string{"Marszałkowska", "Floriańska", "Piotrkowska", "Długa"}, func(g *gen, st string) string {
		return fmt.Sprintf("%s %d, %02d-%03d %s", st, 1+g.r.IntN(200), 10+g.r.IntN(89), g.r.IntN(1000), g.pick([]string{"Warszawa", "Kraków", "Łódź", "Gdańsk"}))
	}},
	{"BE", []string{"Rue de la Loi", "Meir", "Avenue Louise", "Korenmarkt"}, func(g *gen, st string) string {
		return fmt.Sprintf("%s %d, %04d %s", st, 1+g.r.IntN(300), 1000+g.r.IntN(8999), g.pick([]string{"Bruxelles", "Antwerpen", "Gent", "Liège"}))
	}},
	{"CH", []string{"Bahnhofstrasse", "Rue du Rhône", "Marktgasse", "Via Nassa"}, func(g *gen, st string) string {
		return fmt.Sprintf("%s %d, %04d %s", st, 1+g.r.IntN(150), 1000+g.r.IntN(8999), g.pick([]string{"Zürich", "Genève", "Bern", "Lugano"}))
	}},
	{"AT", []string{"Mariahilfer Straße", "Kärntner Straße", "Getreidegasse", "Herrengasse"}, func(g *gen, st string) string {
		return fmt.Sprintf("%s %d, %04d %s", st, 1+g.r.IntN(150), 1010+g.r.IntN(8000), g.pick([]string{"Wien", "Salzburg", "Graz", "Linz"}))
	}},
	{"DK", []string{"Strøget", "Nørrebrogade", "Vesterbrogade", "Østergade"}, func(g *gen, st string) string {
		return fmt.Sprintf("%s %d, %04d %s", st, 1+g.r.IntN(200), 1000+g.r.IntN(8999), g.pick([]string{"København", "Aarhus", "Odense"}))
	}},
	{"IE", []string{"Harcourt Road", "Grafton Street", "Patrick Street", "Shop Street"}, func(g *gen, st string) string {
		return fmt.Sprintf("%d %s, %s, %s%02d %s%d%s%d", 1+g.r.IntN(200), st, g.pick([]string{"Dublin 2", "Cork", "Galway"}), string(rune('A'+g.r.IntN(20))), 1+g.r.IntN(20), string(rune('A'+g.r.IntN(26))), g.r.IntN(10), string(rune('A'+g.r.IntN(26))), 10+g.r.IntN(90))
	}},
}

func (g *gen) addressIntl() string {
	a := g.cfg.Intl[g.r.IntN(len(g.cfg.Intl))]
	return a.format(g, g.pick(a.streets))
}

var usTypes = []string{"Street", "St", "Avenue", "Ave", "Road", "Rd", "Boulevard", "Blvd", "Lane", "Ln", "Drive", "Dr", "Court", "Ct", "Way", "Place", "Terrace", "Parkway", "Circle"}

func (g *gen) addressUS(full bool) string {
	num := fmt.Sprint(1 + g.r.IntN(9999))
	if g.r.IntN(10) == 0 {
		num += string("ABC"[g.r.IntN(3)])
	}
	typ := g.pick(usTypes)
	s := num + " " + g.pick(g.cfg.Streets) + " " + typ
	unit := ""
	switch g.r.IntN(6) {
	case 0:
		unit = g.pick([]string{", Apt ", " Apt ", ", Suite ", " Suite ", ", Unit ", " #"}) + fmt.Sprint(1+g.r.IntN(40)) + g.pick([]string{"", "B", "A"})
	}
	if unit != "" && isAbbrev(typ) && strings.HasPrefix(unit, ",") && g.r.IntN(2) == 0 {
		s += "."
	}
	s += unit
	if full {
		cs := strings.SplitN(g.pick(g.cfg.Cities), "|", 2)
		if unit == "" && isAbbrev(typ) && g.r.IntN(2) == 0 {
			s += "."
		}
		s += ", " + cs[0] + ", " + cs[1]
		if g.r.IntN(5) > 0 {
			s += " " + g.digits(5)
			if g.r.IntN(6) == 0 {
				s += "-" + g.digits(4)
			}
		}
	}
	return s
}

func isAbbrev(t string) bool {
	switch t {
	case "St", "Ave", "Rd", "Blvd", "Ln", "Dr", "Ct":
		return true
	}
	return false
}

func (g *gen) ukPostcode() string {
	out := string(rune('A'+g.r.IntN(26))) + g.pick([]string{"", string(rune('A' + g.r.IntN(26)))}) + fmt.Sprint(1+g.r.IntN(20))
	return out + " " + fmt.Sprint(g.r.IntN(10)) + string(rune('A'+g.r.IntN(26))) + string(rune('A'+g.r.IntN(26)))
}

func (g *gen) addressUK() string {
	s := fmt.Sprint(1+g.r.IntN(300)) + g.pick([]string{"", "", "", "B", "A"}) + " " + g.pick(g.cfg.UKStreets)
	if g.r.IntN(4) > 0 {
		s += ", " + g.pick(g.cfg.UKCities) + " " + g.ukPostcode()
	}
	return s
}

func (g *gen) addressDE() string {
	s := g.pick(g.cfg.DEStreets) + " " + fmt.Sprint(1+g.r.IntN(150)) + g.pick([]string{"", "", "", "a", "b"})
	if g.r.IntN(3) > 0 {
		s += ", " + fmt.Sprintf("%05d", 1000+g.r.IntN(98000)) + " " + g.pick(g.cfg.DECities)
	}
	return s
}

func (g *gen) addressFR() string {
	s := fmt.Sprint(1+g.r.IntN(120)) + g.pick([]string{"", "", "", " bis"}) + " " + g.pick(g.cfg.FRStreets)
	if g.r.IntN(3) > 0 {
		s += ", " + fmt.Sprintf("%05d", 1000+g.r.IntN(94000)) + " " + g.pick(g.cfg.FRCities)
	}
	return s
}

func (g *gen) addressES() string {
	s := g.pick(g.cfg.ESStreets) + g.pick([]string{" ", ", "}) + fmt.Sprint(1+g.r.IntN(200))
	if g.r.IntN(2) > 0 {
		s += ", " + fmt.Sprintf("%05d", 1000+g.r.IntN(50000)) + " " + g.pick([]string{"Madrid", "Barcelona", "Sevilla", "Valencia", "Bilbao", "Málaga"})
	}
	return s
}

func (g *gen) addressIT() string {
	s := g.pick(g.cfg.ITStreets) + " " + fmt.Sprint(1+g.r.IntN(200))
	if g.r.IntN(2) > 0 {
		s += ", " + fmt.Sprintf("%05d", g.r.IntN(98000)) + " " + g.pick([]string{"Roma", "Milano", "Torino", "Napoli", "Firenze", "Bologna"})
	}
	return s
}

func (g *gen) jwt() string {
	hdr := g.pick([]string{`{"alg":"HS256","typ":"JWT"}`, `{"alg":"RS256","typ":"JWT","kid":"` + g.alnum(8) + `"}`, `{"typ":"JWT","alg":"ES256"}`})
	payload := fmt.Sprintf(`{"sub":"%s","name":"%s","iat":%d}`, g.digits(10), g.pick(g.cfg.First), 1600000000+g.r.IntN(100000000))
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(hdr)) + "." + enc.EncodeToString([]byte(payload)) + "." + g.urlSafe(43)
}

func (g *gen) pem() string {
	label := g.pick([]string{"RSA PRIVATE KEY", "PRIVATE KEY", "EC PRIVATE KEY", "OPENSSH PRIVATE KEY"})
	var b strings.Builder
	b.WriteString("-----BEGIN " + label + "-----\n")
	for i := 0; i < 3+g.r.IntN(5); i++ {
		b.WriteString(g.base64(64) + "\n")
	}
	b.WriteString(g.base64(20) + "==\n")
	b.WriteString("-----END " + label + "-----")
	return b.String()
}

func (g *gen) password() string {
	switch g.r.IntN(4) {
	case 0:
		return g.pick([]string{"Summer", "Winter", "Dragon", "Monkey", "Sunshine", "Shadow"}) + g.digits(2+g.r.IntN(3)) + g.pick([]string{"!", "#", "", "$"})
	case 1:
		return g.from("abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789!@#%^&*", 12+g.r.IntN(8))
	default:
		return g.alnum(10 + g.r.IntN(14))
	}
}
