package detect

import (
	"slices"
	"testing"
)

// TestNonPersonShapes checks the address, e-mail and phone shapes added for set 21 (addr12):
// each text must yield exactly the listed entities of the three types, so a look-alike that
// is reported, or a span with a wrong boundary, fails.
func TestNonPersonShapes(t *testing.T) {
	e := newEngine(t, Options{})
	for _, tc := range []struct {
		name string
		text string
		want []string // "type:text" of the street_address, email and phone entities
	}{
		{"irish block after a comma", "Is mise le meas,\n\nGráinne\n11 Seafield Crescent,\nBooterstown, Co. Dublin,\nA94 X2F7\n",
			[]string{"street_address:11 Seafield Crescent,\nBooterstown, Co. Dublin,\nA94 X2F7"}},
		{"block without the comma ends at the street", "Lindenstraße 42a\n48143 Münster\n",
			[]string{"street_address:Lindenstraße 42a"}},
		{"account line is no locality", "Acme Ltd\n12 Main Street,\nSpringfield,\nVAT 1234567\n",
			[]string{"street_address:12 Main Street"}},
		{"year line is no locality", "John\n12 Main Street,\nLondon,\n2024\n",
			[]string{"street_address:12 Main Street"}},
		{"singapore block and unit", "old address, Blk 512 Bedok North Avenue 3, #08-112, Singapore 460512)",
			[]string{"street_address:Blk 512 Bedok North Avenue 3, #08-112, Singapore 460512"}},
		{"canadian unit before the number, next line", "#305 - 1718 Nelson Street\nVancouver, BC V6G 1M8\n",
			[]string{"street_address:#305 - 1718 Nelson Street\nVancouver, BC V6G 1M8"}},
		{"australian po box, next line", "PO Box 417\nPreston VIC 3072\n",
			[]string{"street_address:PO Box 417\nPreston VIC 3072"}},
		{"us envelope in capitals", "2150 FRUITVALE AVE APT 12\nOAKLAND CA 94601\n",
			[]string{"street_address:2150 FRUITVALE AVE APT 12\nOAKLAND CA 94601"}},
		{"capitals without a locality", "ROOM 12 IS BOOKED ON MAIN STREET", nil},
		{"nordic staircase and flat", "Tiedote: osoitteeseen Hämeenpuisto 31 A 9, 33210 Tampere.",
			[]string{"street_address:Hämeenpuisto 31 A 9, 33210 Tampere"}},
		{"norwegian flat code", "Adresse: Kirkeveien 64 H0203, 0364 Oslo",
			[]string{"street_address:Kirkeveien 64 H0203, 0364 Oslo"}},
		{"danish floor and side", "vi bor på Nørrebrogade 188, 3. th., 2200 København N. Kom",
			[]string{"street_address:Nørrebrogade 188, 3. th., 2200 København N"}},
		{"quebec unit and province", "Adresse : 4521, rue Saint-Denis, app. 3, Montréal (Québec) H2J 2L4",
			[]string{"street_address:4521, rue Saint-Denis, app. 3, Montréal (Québec) H2J 2L4"}},
		{"venue word before a german street", "Vereinsheim Am Wiesengrund 7, 33649 Bielefeld.",
			[]string{"street_address:Am Wiesengrund 7, 33649 Bielefeld"}},
		{"indonesian lane off a road", "Alamat: Jl. Gatot Subroto Gg. Mawar No. 7, RT 002/RW 011, Denpasar",
			[]string{"street_address:Jl. Gatot Subroto Gg. Mawar No. 7, RT 002/RW 011"}},
		{"bangladesh house and road", "update my address to House 38, Road 11/A, Dhanmondi, Dhaka 1209.",
			[]string{"street_address:House 38, Road 11/A, Dhanmondi, Dhaka 1209"}},
		{"pakistani sector", "Consignee: Ayesha, House 14, Street 9, F-7/3, Islamabad 44000.",
			[]string{"street_address:House 14, Street 9, F-7/3, Islamabad 44000"}},
		{"kenyan po box", "Bill to: Wanjiru, P.O. Box 52118-00200, Nairobi\n",
			[]string{"street_address:P.O. Box 52118-00200, Nairobi"}},
		{"hindi house number chain", "पता: मकान नं. 112, सेक्टर 14, इंदिरा नगर, लखनऊ 226016\nमोबाइल",
			[]string{"street_address:मकान नं. 112, सेक्टर 14, इंदिरा नगर, लखनऊ 226016"}},
		{"arabic street after an ascii house number", "تم شحن طلبك إلى 15 شارع جامعة الدول العربية، المهندسين، الجيزة.",
			[]string{"street_address:15 شارع جامعة الدول العربية"}},
		{"polish street with a roman numeral", "Odbiorca: al. Jana Pawła II 61, 01-031 Warszawa\n",
			[]string{"street_address:al. Jana Pawła II 61, 01-031 Warszawa"}},
		{"role mailboxes of teams and lists", "page sre-oncall@edgecart.io or readers.rep@irishdaily.ie; list dev-list@lists.arcfoundation.org; to=<board@greenfieldcoop.org>", nil},
		{"personal mailboxes stay", "ask kim.ops@example.com or lxy.runs@gmail.com or j.smith@acme.co.uk",
			[]string{"email:kim.ops@example.com", "email:lxy.runs@gmail.com", "email:j.smith@acme.co.uk"}},
		{"mobile after a trunk 0 without a phone word", "Key holder this week: Fraser 07812 446903\nNext of kin: Achieng (0733 118 402)",
			[]string{"phone:07812 446903", "phone:0733 118 402"}},
		{"finnish p.", "Soittajien yhteyshenkilö Leena, p. 040 718 2294.", []string{"phone:040 718 2294"}},
		{"identifiers are no phones", "P.IVA 01234567890, nr seryjny 0471-2216-88, Order 0803 552 1740, reklamacja RK/2026/11/0418", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, x := range e.Scan(tc.text) {
				if x.Type == TypeStreetAddress || x.Type == TypeEmail || x.Type == TypePhone {
					got = append(got, x.Type+":"+x.Text)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Scan(%q)\n got %q\nwant %q", tc.text, got, tc.want)
			}
		})
	}
}
