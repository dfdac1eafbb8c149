package detect

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func newEngine(t testing.TB, o Options) *Engine {
	t.Helper()
	e, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// scanCase is a text and the spans Scan must find in it, as found() writes them; nil: none.
type scanCase struct {
	name, text string
	want       []string
}

// checkScans runs each case as a subtest on e.
func checkScans(t *testing.T, e *Engine, cases []scanCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := found(e.Scan(tc.text))
			if !slices.Equal(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
				t.Errorf("Scan(%q) = %q; want %q", tc.text, got, tc.want)
			}
		})
	}
}

// found renders entities as "type:text" for compact comparisons.
func found(es []Entity) []string {
	out := []string{}
	for _, e := range es {
		out = append(out, e.Type+":"+e.Text)
	}
	return out
}

func TestScan(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []string
	}{
		{"empty", "", nil},
		{"one byte", "0", nil},
		// E-mail.
		{"email plain", "mail jane.doe+tag@mail.example.co.uk now", []string{"email:jane.doe+tag@mail.example.co.uk"}},
		{"email sentence end", "Write to kim.ops@example.com.", []string{"email:kim.ops@example.com"}},
		{"email role mailbox", "From: no-reply@shop.example, To: Support+EU@helpdesk.example", nil},
		{"email role word inside a personal address", "write to ana.support@example.org", []string{"email:ana.support@example.org"}},
		{"dob hungarian year first", "Születési dátum: 1979.09.23.\nSzül. 1985. 03. 12.", []string{"date_of_birth:1979.09.23.", "date_of_birth:1985. 03. 12."}},
		{"dob czech and polish", "Datum narození: 3. 6. 1982; data urodzenia: 07.11.1985 r.", []string{"date_of_birth:3. 6. 1982", "date_of_birth:07.11.1985 r."}},
		{"dob months of other languages", "tanggal lahir 9 Maret 1992, doğum tarihi 12 Mart 1990", []string{"date_of_birth:9 Maret 1992", "date_of_birth:12 Mart 1990"}},
		{"dob nordic column header", "namn,födelsedatum\nAnna,1991-04-08", []string{"date_of_birth:1991-04-08"}},
		{"date spaced without a birth word", "Termín: 3. 6. 2026, faktura 2026. 01. 15.", nil},
		{"address hungarian type after the name", "Címünk: Váci út 76, 1133 Budapest. Lakcím: Petőfi Sándor utca 12, 6720 Szeged", []string{"street_address:Váci út 76, 1133 Budapest", "street_address:Petőfi Sándor utca 12, 6720 Szeged"}},
		{"address turkish", "Adres: Atatürk Mah. Gül Sok. No:7 Daire 3, 06680 Çankaya/Ankara", []string{"street_address:Atatürk Mah. Gül Sok. No:7 Daire 3, 06680 Çankaya/Ankara"}},
		{"address number markers", "Rua Garrett, nº 62, 1200-204 Lisboa; Str. Academiei nr. 35, 010014 București", []string{"street_address:Rua Garrett, nº 62, 1200-204 Lisboa", "street_address:Str. Academiei nr. 35, 010014 București"}},
		{"address icelandic and czech postcodes", "Laugavegur 46, 101 Reykjavík. Vinohradská 112, 130 00 Praha 3.", []string{"street_address:Laugavegur 46, 101 Reykjavík", "street_address:Vinohradská 112, 130 00 Praha 3"}},
		{"address building after the unit", "Unit 4, Riverside Works, 22 Canal Street, Manchester M1 3HE", []string{"street_address:Unit 4, Riverside Works, 22 Canal Street, Manchester M1 3HE"}},
		{"address english type before the number needs a postcode", "take Route 66 west; office at Rothschild Blvd 22, Tel Aviv 6688218", []string{"street_address:Rothschild Blvd 22, Tel Aviv 6688218"}},
		{"address japanese after its postal code", "住所: 〒160-0022 東京都新宿区新宿5-17-5 ラウンドクロス新宿3階\n電話", []string{"street_address:160-0022 東京都新宿区新宿5-17-5 ラウンドクロス新宿3階"}},
		{"japanese postal code shape without an address", "注文番号 530-0001 大阪 出荷", nil},
		{"phone identifier named by its acronym", "CPF 123.456.789-09, NIP 526-104-08-28", nil},
		{"phone after a name in capitals", "Ksh500 sent to JOSEPH KAMAU 0722 456 789 on 2/3/26", []string{"person:JOSEPH KAMAU", "phone:0722 456 789"}},
		{"email role mailboxes of other languages", "biuro@firma.pl, iroda@ceg.hu, muhasebe@firma.com.tr, atendimento@loja.com.br, soumu@kaisha.co.jp, info.hu@shop.example, sales-eu@shop.example", nil},
		{"email role by the word model", "escriba a recepcion@hotel.example o a kitchen@cafe.example", nil},
		{"email personal beside roles", "office@firma.pl, anna.nowak@firma.pl, grace@studio.example, j.kowalski@firma.pl", []string{"email:anna.nowak@firma.pl", "email:grace@studio.example", "email:j.kowalski@firma.pl"}},
		{"phone national of the text's country (ccTLD)", "Kontakt: kontor@tegnestuen.dk, tlf. 33 12 45 67", []string{"phone:33 12 45 67"}},
		{"phone national of the text's country (letters)", "Gistiheimilið Bára\nSími: 551 2345", []string{"phone:551 2345"}},
		{"phone national of the text's country (currency)", "Ksh2,350.00 sent to JOHN DOE 0722 456 789 on 24/11/26", []string{"phone:0722 456 789"}},
		{"phone extension words of other languages", "Tel. 033-461 22 80 toestel 2 of 03-5211-4803 内線 215", []string{"phone:033-461 22 80 toestel 2", "phone:03-5211-4803 内線 215"}},
		{"phone in a CSV row beside other numbers", "id,phone,dob\n7,(404) 555-0172,1983-02-11", []string{"phone:(404) 555-0172", "date_of_birth:1983-02-11"}},
		{"phone not an identifier from a hinted region", "customer_id,name\n8224781729,Ana Lima (ana@fjord.no)", []string{"person:Ana Lima", "email:ana@fjord.no"}},
		{"email no tld", "user@localhost is local", nil},
		{"email mention", "thanks @alice for the review", nil},
		// Phones.
		{"phone us formatted", "Call me at (415) 555-2671.", []string{"phone:(415) 555-2671"}},
		{"phone international", "Tel: +44 20 7946 0958", []string{"phone:+44 20 7946 0958"}},
		{"phone e164", "whatsapp +4915123456789", []string{"phone:+4915123456789"}},
		{"phone national fallback region", "Telefon: 030 12345678", []string{"phone:030 12345678"}},
		{"phone then number", "call 415-555-2671 24 hours a day", []string{"phone:415-555-2671"}},
		{"phone plain without context", "the value 4155552671 was logged", nil},
		{"phone plain after contact idiom", "You can get me at 4155552671", []string{"phone:4155552671"}},
		{"phone idiom near an order number", "get me at the desk about order 4155552671", nil},
		{"phone idiom before a time", "find me at 10:30 in room 4155", nil},
		{"phone after order", "Order number 4155552671 was cancelled.", nil},
		{"phone date is not phone", "on 2024-06-18 10:30 we met", nil},
		{"phone ip is not phone", "gateway 34.63.227.112 is down", []string{"ip_address:34.63.227.112"}},
		// Cards.
		{"card visa spaced", "card 4111 1111 1111 1111 exp 09/27", []string{"credit_card:4111 1111 1111 1111"}},
		{"card amex", "amex 3782 822463 10005", []string{"credit_card:3782 822463 10005"}},
		{"card luhn invalid", "card 4111 1111 1111 1112", nil},
		{"card part of longer number", "ref 5451 6996 2862 3133 failed", nil},
		{"card unknown brand", "card 9111 1111 1111 1117", nil},
		{"card after plus is phone", "+4915123452000", []string{"phone:+4915123452000"}},
		// SSNs.
		{"ssn dashed", "SSN: 123-45-6788", []string{"ssn:123-45-6788"}},
		{"ssn area 000", "SSN: 000-45-6788", nil},
		{"ssn area 666", "SSN: 666-45-6788", nil},
		{"ssn area 9xx", "SSN: 912-45-6788", nil},
		{"ssn group 00", "SSN: 123-00-6788", nil},
		{"ssn serial 0000", "SSN: 123-45-0000", nil},
		{"ssn plain needs context", "number 123456788 here", nil},
		{"ssn plain with context", "social security 123456788", []string{"ssn:123456788"}},
		{"ssn example number", "SSN 078-05-1120", nil},
		// IBAN.
		{"iban grouped", "IBAN DE89 3704 0044 0532 0130 00 please", []string{"iban:DE89 3704 0044 0532 0130 00"}},
		{"iban compact", "GB29NWBK60161331926819", []string{"iban:GB29NWBK60161331926819"}},
		{"iban bad checksum", "DE89 3704 0044 0532 0130 01", nil},
		{"iban wrong length", "DE89 3704 0044 0532 0130", nil},
		// IP and MAC.
		{"ipv4", "server 192.168.1.10 is up", []string{"ip_address:192.168.1.10"}},
		{"ipv4 version", "version 1.2.3.4 shipped", nil},
		{"ipv4 octet too big", "host 256.1.1.1", nil},
		{"ipv4 oid", "OID 1.3.6.1.4.1.311", nil},
		{"ipv6", "host 2001:db8::ff00:42:8329 down", []string{"ip_address:2001:db8::ff00:42:8329"}},
		{"ipv6 after label", "ip:fe80::1ff:fe23:4567:890a", []string{"ip_address:fe80::1ff:fe23:4567:890a"}},
		{"time is not ipv6", "at 10:30:45 today", nil},
		{"mac colon", "MAC 00:1A:2B:3C:4D:5E", []string{"mac_address:00:1A:2B:3C:4D:5E"}},
		{"mac cisco", "mac 001a.2b3c.4d5e", []string{"mac_address:001a.2b3c.4d5e"}},
		{"mac too long", "00:1A:2B:3C:4D:5E:6F", nil},
		// URLs.
		{"url https", "See https://example.com/a?b=1#c.", []string{"url:https://example.com/a?b=1#c"}},
		{"url in parens", "(see https://en.wikipedia.org/wiki/Go_(language))", []string{"url:https://en.wikipedia.org/wiki/Go_(language)"}},
		{"url www", "open www.example.org, then", []string{"url:www.example.org"}},
		{"url contains email", "https://example.com/u?mail=a@b.com", []string{"url:https://example.com/u?mail=a@b.com"}},
		{"url bare domain", "edit main.go and example.com", nil},
		// Dates of birth.
		{"dob iso", "DOB: 1985-03-12", []string{"date_of_birth:1985-03-12"}},
		{"dob written", "I was born on 12 March 1985.", []string{"date_of_birth:12 March 1985"}},
		{"dob us written", "born March 12th, 1985", []string{"date_of_birth:March 12th, 1985"}},
		{"dob german", "Geboren am 12. März 1985.", []string{"date_of_birth:12. März 1985"}},
		{"dob spanish", "nacido el 12 de marzo de 1985", []string{"date_of_birth:12 de marzo de 1985"}},
		{"date without birth context", "The meeting is on 2024-03-12.", nil},
		{"invoice date", "Invoice date: 03/12/1985", nil},
		{"invalid day", "born 1985-02-30", nil},
		{"timestamp", "born 2024-01-15T10:30:00Z", nil},
		// Addresses.
		{"address us", "I live at 742 Evergreen Terrace, Springfield, IL 62704.", []string{"street_address:742 Evergreen Terrace, Springfield, IL 62704"}},
		{"address uk", "Ship to 221B Baker Street, London NW1 6XE.", []string{"street_address:221B Baker Street, London NW1 6XE"}},
		{"address four-digit code after a comma", "Home address: 9 Long Street, Cape Town, 8001", []string{"street_address:9 Long Street, Cape Town, 8001"}},
		{"address year after a comma is not a code", "We met at 9 Long Street, Cape Town, 2019 was the year.", []string{"street_address:9 Long Street"}},
		{"address german", "Adresse: Hauptstraße 12, 10115 Berlin.", []string{"street_address:Hauptstraße 12, 10115 Berlin"}},
		{"address french", "au 12 rue de la Paix, 75002 Paris.", []string{"street_address:12 rue de la Paix, 75002 Paris"}},
		{"address spanish", "Calle de Alcalá 23, Madrid", []string{"street_address:Calle de Alcalá 23"}},
		{"address unit", "at 10 Main St, Apt 4B, Boston, MA 02110", []string{"street_address:10 Main St, Apt 4B, Boston, MA 02110"}},
		{"not an address", "I walked 5 blocks down the street", nil},
		{"season is not a street", "Spring 2024 release", nil},
		// People.
		{"name intro", "Hi, my name is John Smith.", []string{"person:John Smith"}},
		{"name unknown after intro", "My name is Zoltan Kovacs.", []string{"person:Zoltan Kovacs"}},
		{"name title", "Dr. Kowalski will call.", []string{"person:Kowalski"}},
		{"name signature", "Best regards,\nZoltan Kovacs\n", []string{"person:Zoltan Kovacs"}},
		{"name greeting", "Dear Anna,", []string{"person:Anna"}},
		{"name greeting a name that is a word", "Hi Grace,\nthanks", []string{"person:Grace"}},
		{"name intro indonesian", "nama saya wayan sudirta", []string{"person:wayan sudirta"}},
		{"name intro turkish", "Merhaba, ben Kerem Aksoy.", []string{"person:Kerem Aksoy"}},
		{"name intro polish", "Nazywam się Wojciech Kaczmarek.", []string{"person:Wojciech Kaczmarek"}},
		{"name intro vietnamese", "Xin chào, tôi là Trần Minh Khoa.", []string{"person:Trần Minh Khoa"}},
		{"name intro swedish", "Jag heter Linnea Bergqvist.", []string{"person:Linnea Bergqvist"}},
		{"name closing polish", "Pozdrawiam,\nAgnieszka Lis", []string{"person:Agnieszka Lis"}},
		{"name title indonesian", "Selamat pagi Pak Hendra,", []string{"person:Hendra"}},
		{"name title turkish", "Sayın Mehmet Öztürk,", []string{"person:Mehmet Öztürk"}},
		{"name greeting indonesian", "Halo Rina, apa kabar?", []string{"person:Rina"}},
		{"name json fields", `{"first_name": "Mirela", "last_name": "Dumitrescu"}`, []string{"person:Mirela", "person:Dumitrescu"}},
		{"name camelCase key", `{"displayName": "Sefa Leota"}`, []string{"person:Sefa Leota"}},
		{"name xml element", "<lastName>Leota</lastName>", []string{"person:Leota"}},
		{"name python keyword", "User(first_name='Ikaika')", []string{"person:Ikaika"}},
		{"name key of a thing", `{"hostname": "Mirela", "product_name": "Ikaika"}`, nil},
		{"name json value of a product", `{"name": "Grafana Loki", "version": "3.1"}`, nil},
		{"name given name inside a sentence", "i told Amelia about it", []string{"person:Amelia"}},
		{"name storm named like a person", "hurricane Milton hit the coast", nil},
		{"name after a capitalised greeting", "Merhaba Kerem Aksoy, siparişiniz yolda.", []string{"person:Kerem Aksoy"}},
		{"name after a label padded with blanks", "Patient name:      TAVITA LEOTA", []string{"person:TAVITA LEOTA"}},
		{"name lower case after a weak cue", "reminder: pls ask tshepo dlamini to sign the lease", []string{"person:tshepo dlamini"}},
		{"name lower case after with is a thing", "we run it with grafana loki now", nil},
		{"name lower case ambiguous after a weak cue", "call mark twain", nil},
		{"name family name first after a comma", "Patient name: LEOTA, TAVITA", []string{"person:LEOTA, TAVITA"}},
		{"name airline form", "Passenger: DELA CRUZ/MARIA CLARA MS", []string{"person:DELA CRUZ/MARIA CLARA"}},
		{"name after a clergy title", "Fr. Patrick's jumble sale raised €1,240", []string{"person:Patrick"}},
		{"name not after a domain ending like a title", "Escríbeme a ana@societe.fr cuando puedas.", []string{"email:ana@societe.fr"}},
		{"name greeting a role", "Dear Resident, bins move to Tuesdays.", nil},
		{"name greeting a role of two words", "Dear Hiring Manager,\nplease find my CV attached.", nil},
		{"name signature a team", "Kind regards,\nCustomer Services", nil},
		{"name not an e-mail local part", "From: no-reply@shop.example", nil},
		{"name not letters of a postcode", "Agent: what is the postcode?\nCustomer: G12 8QQ", nil},
		{"name gazetteer pair", "Yesterday Maria Garcia called.", []string{"person:Maria Garcia"}},
		{"name accents", "Mein Name ist Jürgen Müller.", []string{"person:Jürgen Müller"}},
		{"name possessive", "That is Maria Garcia's laptop.", []string{"person:Maria Garcia"}},
		// Issue 11: forms the rules and lists of before missed.
		{"name of an unlisted origin", "Thandiwe Mbeki called about the invoice.", []string{"person:Thandiwe Mbeki"}},
		{"lower-case name after intro", "hi, my name is keoni quispe", []string{"person:keoni quispe"}},
		{"lower-case name after I'm", "hey, i'm keoni quispe, the new hire", []string{"person:keoni quispe"}},
		{"lower-case word after I'm is no name", "i'm tired of this", nil},
		{"name after a field label", "Owner: Anahera Virtanen", []string{"person:Anahera Virtanen"}},
		{"upper-case name after a label", "FULL NAME: ANAHERA VIRTANEN", []string{"person:ANAHERA VIRTANEN"}},
		{"upper-case value after a label", "Owner: TBD", nil},
		{"upper-case name with an initial", "Name: KEONI K. QUISPE", []string{"person:KEONI K. QUISPE"}},
		{"name before an e-mail", "From: Wanjiru Kamau <wkamau@example.org>", []string{"person:Wanjiru Kamau", "email:wkamau@example.org"}},
		{"name in a CSV row", "1,Obinna Eze,o.eze@example.org", []string{"person:Obinna Eze", "email:o.eze@example.org"}},
		{"name column header", "id;full_name;city\n7;Kalani Kahale;Hilo", []string{"person:Kalani Kahale"}},
		{"chat speaker", "[09:15] Atieno: can you check the order?", []string{"person:Atieno"}},
		{"field label is no speaker", "Telefon: 030 12345678", []string{"phone:030 12345678"}},
		{"place is no person", "The Lincoln Park branch opens at 9.", nil},
		{"station is no person", "Victoria Station is closed.", nil},
		{"org named like a person", "Morgan Stanley wants a demo.", nil},
		{"known given name and a cue family name", "Jane Park called.", []string{"person:Jane Park"}},
		{"address without street type", "Ship to 4521 Broadway, New York, NY 10040", []string{"street_address:4521 Broadway, New York, NY 10040"}},
		{"address unit first, UK", "Flat 8, 262 Kingsway, London WC2B 4NH", []string{"street_address:Flat 8, 262 Kingsway, London WC2B 4NH"}},
		{"address French type capitalised", "Rue de Rivoli 48, 75003 Paris", []string{"street_address:Rue de Rivoli 48, 75003 Paris"}},
		{"po box", "PO Box 4674, Anchorage, AK 99547", []string{"street_address:PO Box 4674, Anchorage, AK 99547"}},
		{"address NL postcode", "Herengracht 182, 1016 BR Amsterdam", []string{"street_address:Herengracht 182, 1016 BR Amsterdam"}},
		{"address AU state", "120 Collins Street, Melbourne VIC 3000", []string{"street_address:120 Collins Street, Melbourne VIC 3000"}},
		{"address BR CEP", "Rua Augusta, 274, 01304-000 São Paulo", []string{"street_address:Rua Augusta, 274, 01304-000 São Paulo"}},
		{"no-type words without a postal locality", "I bought 3 Apples, Boston said no.", nil},
		{"card with dots", "card 4111.1111.1111.1111 please", []string{"credit_card:4111.1111.1111.1111"}},
		{"card with double spaces", "Amex 3787  805886  09884", []string{"credit_card:3787  805886  09884"}},
		{"card with dots, bad Luhn", "card 4111.1111.1111.1112 please", nil},
		{"ssn with dots after SSN", "SSN 739.02.0225 on file", []string{"ssn:739.02.0225"}},
		{"dotted ssn needs context", "version 739.02.0225 shipped", nil},
		{"dob with of", "she was born 11th of Nov 1990", []string{"date_of_birth:11th of Nov 1990"}},
		{"phone extension", "call +1-617-908-8342 ext. 487", []string{"phone:+1-617-908-8342 ext. 487"}},
		{"phone extension x", "Phone: (415) 555-2671 x12", []string{"phone:(415) 555-2671 x12"}},
		{"name initial", "by John F. Kennedy today", []string{"person:John F. Kennedy"}},
		// Issue 11 causes: a postal code of a country without a rule of its own, block numbers,
		// chat speakers of unseen cultures, answers to a question, family name first.
		{"address other postcode", "Address: 4 Quay Street, Galway, H91 E2RT", []string{"street_address:4 Quay Street, Galway, H91 E2RT"}},
		{"address postal district", "17 Harcourt Road, Dublin 2, D02 VX52", []string{"street_address:17 Harcourt Road, Dublin 2, D02 VX52"}},
		{"address block number", "Ship to 1-2-3 Ginza, Chuo-ku, Tokyo 104-0061.", []string{"street_address:1-2-3 Ginza, Chuo-ku, Tokyo 104-0061"}},
		{"address Brazil Correios form", "Rua das Flores, 112 - Centro, Curitiba - PR, 80010-000", []string{"street_address:Rua das Flores, 112 - Centro, Curitiba - PR, 80010-000"}},
		{"address dash without postcode", "12 Main Street - see you, OK 2 then", []string{"street_address:12 Main Street"}},
		{"address postal code before city after a district", "ship to Calle Durango 245, Roma Norte, 06700 Ciudad de México today", []string{"street_address:Calle Durango 245, Roma Norte, 06700 Ciudad de México"}},
		{"address four digits close a chain", "at 27 Ponsonby Road, Grey Lynn, Auckland 1011. Thanks", []string{"street_address:27 Ponsonby Road, Grey Lynn, Auckland 1011"}},
		{"address four digits may be a year", "see 12 Oak Street, Springfield 2024 was good", []string{"street_address:12 Oak Street"}},
		{"address po box city code", "PO Box 5521, Wellington 6140.", []string{"street_address:PO Box 5521, Wellington 6140"}},
		{"address floor unit", "Calle Mayor 12, 3º B, 28013 Madrid.", []string{"street_address:Calle Mayor 12, 3º B, 28013 Madrid"}},
		{"address lower-case prefix and flat", "at ul. Długa 15/3, 80-827 Gdańsk.", []string{"street_address:ul. Długa 15/3, 80-827 Gdańsk"}},
		{"address no postcode shape", "at 12 Oak Street, Springfield, Build 2024-11 today", []string{"street_address:12 Oak Street"}},
		{"address short code", "ship to 10 Main Street, Boston, MA2 today", []string{"street_address:10 Main Street"}},
		{"name speakers unseen", "Tane Kereama: the build is green\nWirihana Paki: ok, I will ship it", []string{"person:Tane Kereama", "person:Wirihana Paki"}},
		{"name answer lower case", "bot: what is your name?\nuser: ravi kumar here", []string{"person:ravi kumar"}},
		{"name answer after speaker", "Agent: and the name on the booking?\nCaller: Lwazi Dube", []string{"person:Lwazi Dube"}},
		{"dob answer", "Agent: can you confirm your date of birth?\nCaller: 4 May 1981", []string{"date_of_birth:4 May 1981"}},
		{"dob no question", "Agent: thanks, noted.\nCaller: 4 May 1981", nil},
		{"dob system default", "profile shows DOB 1900-01-01 again", nil},
		{"name family first after cue", "Patient: Nguyễn Thị Lan\nWard 4", []string{"person:Nguyễn Thị Lan"}},
		{"name family first unknown word after label", "Tenant: Chen Xiaoling\nUnit: 5", []string{"person:Chen Xiaoling"}},
		{"name citation", "as shown by Okafor, C. and Lee, J. K. (2019)", []string{"person:Okafor, C.", "person:Lee, J. K."}},
		{"name citation initials joined", "Wang, X.Y., 2020", []string{"person:Wang, X.Y."}},
		{"not a citation: pronoun", "Thanks Anna, I. think so", []string{"person:Anna"}},
		{"not a citation: ordinary word", "However, A. said no", nil},
		{"loyalty number not a card", "CLUBCARD 634004 0211 8820 1147", nil},
		{"name capitals family first, mixed case", "Reviewed by HALVORSEN, Ingrid M. on 3 May", []string{"person:HALVORSEN, Ingrid M."}},
		{"not a name: capitals before an ordinary word", "URGENT, Please reply today", nil},
		{"name place as family name after a greeting", "Olá Thiago Albuquerque, seu pedido saiu", []string{"person:Thiago Albuquerque"}},
		{"name place as family name after a label", "Patient: Sarah Albuquerque\nWard 4", []string{"person:Sarah Albuquerque"}},
		{"place after a name without a cue", "Sarah flew to Albuquerque, then home", []string{"person:Sarah"}},
		{"name label ordinary first word", "Requester: Bold Colque (qori@andeslink.pe)", []string{"person:Bold Colque", "email:qori@andeslink.pe"}},
		{"label not speaker", "Attn: Kgosi Modise\nsource: http://x.io/a", []string{"person:Kgosi Modise", "url:http://x.io/a"}},
		{"products not speakers", "Apache Kafka: broker down again\nAzure DevOps: pipeline failed", nil},
		{"chat role then message", "Agent: Good day, how can I help?\nClient: Howzit. My card is stuck", nil},
		{"chat role then lower-case message", "Customer: hiya, I am moving house\nAgent: sure", nil},
		{"label then one-word name", "Reporter: Anahera\nStatus: open", []string{"person:Anahera"}},
		{"organisation label", "Employer: Harvey Norman, Richmond", nil},
		{"street named after a person", "then a site visit at Cecil Rhodes Drive", nil},
		{"acronym number is no phone", "NHS number: 943 476 5919", nil},
		{"sms number is a phone", "SMS number: 415-555-2671", []string{"phone:415-555-2671"}},
		{"identifier prefix is no phone", "Claim no. CLM-2025-004417", nil},
		{"caps one-word name field", "SURNAME: MCALLISTER\nFIRST NAME(S): FIONA JANE\n", []string{"person:MCALLISTER", "person:FIONA JANE"}},
		{"caps placeholder and label", "NAME: TBD\nPatient DOB: 8/25/1975", []string{"date_of_birth:8/25/1975"}},
		{"initial after title", "Dr J. Otieno   Refills: 0", []string{"person:J. Otieno"}},
		{"column list is no name cue", "INSERT INTO patients (id, full_name, dob, ssn) VALUES (1)", nil},
		{"phone other region word after", "Is 07700 900461 still the best number?", []string{"phone:07700 900461"}},
		{"phone without trunk after question", "May I have your mobile number?\nCustomer: 9876543210", []string{"phone:9876543210"}},
		{"phone without trunk needs a word", "the value 9876543210 was logged", nil},
		{"single first name", "Michael said it works.", nil},
		{"ambiguous words", "Will you send it? May I join? Grace period ends.", nil},
		{"organisation", "Johnson & Johnson and Ford Motor Company", nil},
		{"place", "We met at Jordan Valley Farms in New York.", nil},
		// Secrets.
		{"aws key", "key AKIAIOSFODNN7EXAMPLE", []string{"secret:AKIAIOSFODNN7EXAMPLE"}},
		{"github token", "ghp_abcdefghijklmnopqrstuvwxyz0123456789", []string{"secret:ghp_abcdefghijklmnopqrstuvwxyz0123456789"}},
		{"jwt", "Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
			[]string{"secret:eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"}},
		{"password assignment", "DB_PASSWORD=hunter2x", []string{"secret:hunter2x"}},
		{"password prose", "Reset your password: click the link.", nil},
		{"password placeholder", "password=${DB_PASSWORD}", nil},
		{"pem", "-----BEGIN RSA PRIVATE KEY-----\nMIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu\n-----END RSA PRIVATE KEY-----",
			[]string{"secret:-----BEGIN RSA PRIVATE KEY-----\nMIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu\n-----END RSA PRIVATE KEY-----"}},
		{"git hash", "commit 3f786850e387550fdab836ed7e6dc881de23001b", nil},
		{"guid", "request 3f2504e0-4f89-11d3-9a0c-0305e82c3301 failed", nil},
	}
	e := newEngine(t, Options{})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := found(e.Scan(tc.text))
			want := tc.want
			if want == nil {
				want = []string{}
			}
			if !slices.Equal(got, want) {
				t.Errorf("Scan(%q) = %q; want %q", tc.text, got, want)
			}
		})
	}
}

func TestSubtypes(t *testing.T) {
	tests := []struct {
		name, text, typ, subtype string
	}{
		{"visa", "4111111111111111", TypeCreditCard, "visa"},
		{"amex", "378282246310005", TypeCreditCard, "amex"},
		{"aws", "AKIAIOSFODNN7EXAMPLE", TypeSecret, "aws_access_key"},
		{"stripe", "sk_live_4eC39HqLyjWDarjtT1zdp7dc", TypeSecret, "stripe_key"},
		{"password", "\"password\": \"S3cure!pass\"", TypeSecret, "password"},
	}
	e := newEngine(t, Options{})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := e.Scan(tc.text)
			if len(got) != 1 || got[0].Type != tc.typ || got[0].Subtype != tc.subtype {
				t.Errorf("Scan(%q) = %+v; want one %s/%s", tc.text, got, tc.typ, tc.subtype)
			}
		})
	}
}

func TestOptions(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		text    string
		want    []string
		wantErr string
	}{
		{"types filter", Options{Types: []string{TypeEmail}}, "a@example.com 192.168.1.1", []string{"email:a@example.com"}, ""},
		{"unknown type", Options{Types: []string{"passport"}}, "", nil, "unknown type"},
		{"bad min score", Options{MinScore: 2}, "", nil, "MinScore"},
		{"bad region", Options{DefaultRegion: "XX"}, "", nil, "region"},
		{"region GB", Options{DefaultRegion: "GB"}, "call 020 7946 0958 now", []string{"phone:020 7946 0958"}, ""},
		{"low threshold shows dates", Options{MinScore: 0.01, Types: []string{TypeDateOfBirth}}, "meeting 2024-03-12", []string{"date_of_birth:2024-03-12"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, err := New(tc.opts)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("New(%+v) error = %v; want one containing %q", tc.opts, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := found(e.Scan(tc.text))
			if !slices.Equal(got, tc.want) {
				t.Errorf("Scan(%q) = %q; want %q", tc.text, got, tc.want)
			}
		})
	}
}

// TestOverlaps checks resolution: the higher score wins, then the longer span.
func TestOverlaps(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []string
	}{
		{"url containing email", "https://example.com/?to=jane@example.com", []string{"url:https://example.com/?to=jane@example.com"}},
		{"card digits inside iban", "IBAN GB82 WEST 1234 5698 7654 32", []string{"iban:GB82 WEST 1234 5698 7654 32"}},
		{"ssn with phone word", "SSN 123-45-6788, phone 415-555-2671", []string{"ssn:123-45-6788", "phone:415-555-2671"}},
		{"address containing name", "Ship to 12 Martin Luther King Blvd, Austin, TX 78701", []string{"street_address:12 Martin Luther King Blvd, Austin, TX 78701"}},
	}
	e := newEngine(t, Options{})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := found(e.Scan(tc.text))
			if !slices.Equal(got, tc.want) {
				t.Errorf("Scan(%q) = %q; want %q", tc.text, got, tc.want)
			}
		})
	}
}

// checkEntities verifies the invariants every scan must keep.
func checkEntities(t *testing.T, text string, es []Entity) {
	t.Helper()
	prevEnd := 0
	for i, e := range es {
		if e.Start < 0 || e.End > len(text) || e.Start >= e.End {
			t.Fatalf("entity %d %+v out of bounds for len %d", i, e, len(text))
		}
		if e.Start < prevEnd {
			t.Fatalf("entity %d %+v overlaps or is out of order (previous end %d)", i, e, prevEnd)
		}
		if e.Text != text[e.Start:e.End] {
			t.Fatalf("entity %d Text = %q; want %q", i, e.Text, text[e.Start:e.End])
		}
		if e.Score < 0 || e.Score > 1 {
			t.Fatalf("entity %d score %v outside [0, 1]", i, e.Score)
		}
		prevEnd = e.End
	}
}

func TestInvalidUTF8(t *testing.T) {
	tests := []struct {
		name string
		text string
	}{
		{"lone continuation", "name \x80\x81 John Smith \xff"},
		{"truncated rune", "Dear J\xc3,\nemail a@b\xe2.com"},
		{"invalid in number", "4111\xff1111 1111 1111"},
		{"invalid in word", "M\xfcller Stra\xdfe 5, 10115 Berlin"},
	}
	e := newEngine(t, Options{MinScore: 0.01})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkEntities(t, tc.text, e.Scan(tc.text))
		})
	}
}

func TestAppendScanAllocations(t *testing.T) {
	e := newEngine(t, Options{})
	text := "Mail a@example.com, card 4111 1111 1111 1111, SSN 123-45-6788, from 10.0.0.1. " +
		"Dear Anna, see https://example.com/x. Key AKIAIOSFODNN7EXAMPLE."
	dst := make([]Entity, 0, 32)
	e.AppendScan(dst, text) // warm the pool
	allocs := testing.AllocsPerRun(100, func() { dst = e.AppendScan(dst[:0], text) })
	if allocs > 0 {
		t.Errorf("AppendScan allocated %v times per run; want 0 without phone numbers", allocs)
	}
}

func ExampleEngine_Scan() {
	e, err := New(Options{})
	if err != nil {
		panic(err)
	}
	for _, x := range e.Scan("Hi, I'm Anna Schmidt, call me on +49 30 901820 or mail anna@example.de.") {
		fmt.Printf("%s %q %.2f\n", x.Type, x.Text, x.Score)
	}
	// Output:
	// person "Anna Schmidt" 0.90
	// phone "+49 30 901820" 0.88
	// email "anna@example.de" 0.90
}

// TestConcurrentScan shares one Engine between goroutines (run with -race).
func TestConcurrentScan(t *testing.T) {
	e := newEngine(t, Options{})
	text := loadPrompt(t)
	want := found(e.Scan(text))
	errs := make(chan string, 8)
	for range 8 {
		go func() {
			for range 20 {
				if got := found(e.Scan(text)); !slices.Equal(got, want) {
					errs <- fmt.Sprintf("got %q; want %q", got, want)
					return
				}
			}
			errs <- ""
		}()
	}
	for range 8 {
		if msg := <-errs; msg != "" {
			t.Error(msg)
		}
	}
}
