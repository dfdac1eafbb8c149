package detect

// Mobile prefixes after the trunk "0" (addr12). A national number written in groups with its
// trunk prefix ("07812 446903", "0917 552 0481", "0803 552 1740") names no country, and without
// a phone word near it the detector tried only the regions the text hints at. The digits after
// the trunk "0" are themselves evidence: each country gives its mobile networks a few prefixes,
// so only the countries whose mobile prefix the number starts with are asked (at most a few
// libphonenumber parses), and the number must be a mobile number there.

// trunkMobilePrefixes maps the first digits after the trunk "0" to the countries whose mobile
// numbers start with them (ITU national numbering plans).
var trunkMobilePrefixes = [...]struct {
	prefix  string
	regions [3]string
}{
	{"7", [3]string{"GB", "KE", "SE"}},  // 07xxx: GB, KE 07xx, SE 07x
	{"70", [3]string{"NG", "JP"}},       // NG 070x, JP 070
	{"80", [3]string{"NG", "JP", "ID"}}, // NG 080x, JP 080, ID 08xx
	{"81", [3]string{"NG", "ID"}},
	{"90", [3]string{"NG", "JP", "TR"}},
	{"91", [3]string{"NG", "PH"}},
	{"9", [3]string{"PH", "VN", "TH"}}, // PH 09xx, VN 09x, TH 09x
	{"8", [3]string{"IE", "TH", "ZA"}}, // IE 08x, TH 08x, ZA 08x
	{"6", [3]string{"ZA", "FR", "NL"}}, // ZA 06x, FR 06, NL 06
	{"4", [3]string{"AU", "FI", "BE"}}, // AU 04, FI 04x, BE 04x
	{"5", [3]string{"TR", "FI"}},       // TR 05xx, FI 050
	{"3", [3]string{"PK", "VN"}},       // PK 03xx, VN 03x
	{"1", [3]string{"KE", "EG", "BD"}}, // KE 01xx, EG 01x, BD 01x
	{"15", [3]string{"DE"}},
	{"16", [3]string{"DE"}},
	{"17", [3]string{"DE", "BD"}},
	{"10", [3]string{"KR", "EG"}},
	{"11", [3]string{"MY", "EG", "KE"}},
	{"12", [3]string{"MY", "EG"}},
	{"2", [3]string{"NZ"}}, // NZ 02x
}

// trunkMobileRegions returns the regions whose mobile prefix the number cand (starting with the
// trunk "0") has, longest prefix first, and their count.
func trunkMobileRegions(cand string) ([6]string, int) {
	var d [3]byte
	n := 0
	for i := 1; i < len(cand) && n < len(d); i++ {
		if isDigit(cand[i]) {
			d[n] = cand[i]
			n++
		}
	}
	var out [6]string
	k := 0
	add := func(r string) {
		if r == "" || k == len(out) {
			return
		}
		for _, x := range out[:k] {
			if x == r {
				return
			}
		}
		out[k] = r
		k++
	}
	for _, l := range [...]int{2, 1} {
		if l > n {
			continue
		}
		for _, p := range trunkMobilePrefixes {
			if len(p.prefix) == l && string(d[:l]) == p.prefix {
				for _, r := range p.regions {
					add(r)
				}
			}
		}
	}
	return out, k
}

// lastGroupLen returns the number of digits of the last group of cand: a mobile number written
// in groups ends with three or four digits ("0733 118 402"); a serial number may not
// ("0471-2216-88").
func lastGroupLen(cand string) int {
	n := 0
	for i := len(cand) - 1; i >= 0 && isDigit(cand[i]); i-- {
		n++
	}
	return n
}

// shortPhoneCue reports whether the number at s follows "p. " written as a word of its own, the
// Finnish and Estonian abbreviation of the phone ("puhelin") in signatures and notices ("Leena
// Mäkelä, p. 040 718 2294"); not "P.O." nor "P.IVA", which the keyword matcher would take.
func shortPhoneCue(text string, s int) bool {
	if s < 3 || text[s-1] != ' ' || text[s-2] != '.' || text[s-3] != 'p' && text[s-3] != 'P' {
		return false
	}
	return s == 3 || !isWordByte(text[s-4]) && text[s-4] != '.'
}
