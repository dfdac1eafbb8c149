package detect

import (
	"slices"
	"testing"
)

// TestStructureNames checks names known from the structure of exports, tables and rows
// (structure.go) and the attribute names, header words, codes, places, products, boats and
// labels that must stay unmarked in the same structures. Names are made up for this test.
func TestStructureNames(t *testing.T) {
	e := newEngine(t, Options{})
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"LDIF keys are no names, cn and sn values are", "dn: cn=Oriane Tsakalidou,ou=People,dc=ex,dc=org\nobjectClass: inetOrgPerson\nuid: otsak\ncn: Oriane Tsakalidou\nsn: Tsakalidou\n",
			[]string{"Oriane Tsakalidou", "Oriane Tsakalidou", "Tsakalidou"}},
		{"a DN member and a service", "member: cn=Kelechi Umeadi,ou=Staff,dc=ex,dc=org\nmember: cn=svc-backup,ou=Service,dc=ex,dc=org\n", []string{"Kelechi Umeadi"}},
		{"a role in cn is no name", "cn: Helpdesk Northwind\nsn: Helpdesk\n", nil},
		{"vCard FN and N parts", "BEGIN:VCARD\nFN:Maelle Quintero\nN:Quintero;Maelle;;;\nEND:VCARD\n", []string{"Maelle Quintero", "Quintero", "Maelle"}},
		{"a lower-case vCard name", "BEGIN:VCARD\nFN:tevita halaholo\nEND:VCARD\n", []string{"tevita halaholo"}},
		{"iCalendar CN parameters, not a room", "ATTENDEE;CN=Radek Vondráček;PARTSTAT=ACCEPTED:mailto:rv@ex.org\nATTENDEE;CUTYPE=ROOM;CN=Room Danube 2:mailto:r2@ex.org\n",
			[]string{"Radek Vondráček", "rv@ex.org", "r2@ex.org"}},
		{"a particle surname in a last_name column", "first_name,last_name,plan\nAina Syuhada,binti Rahmat,GOLD\n", []string{"Aina Syuhada", "binti Rahmat"}},
		{"capitalised particles and a place-like family name in name fields", "given_name: Salma\nfamily_name: El Ouazzani\ncity: Lisbon\nlast_name: Lisbon\n",
			[]string{"Salma", "El Ouazzani"}},
		{"an organisation in a customer field", "customer: Morgan Stanley\nowner: Brightwater Holdings Ltd\n", nil},
		{"a YAML owner, not a service name", "- name: ledger-sync\n  owner: Idris Okonjo\n", []string{"Idris Okonjo"}},
		{"a display name of ordinary words", "Display name: Lobby Kiosk Tablet\n", nil},
		{"a header-less CSV column of names", "Zdeněk Hruška,Brno,2019\nMaile Kealoha,Hilo,2020\nTuomas Rautio,Oulu,2021\n", []string{"Zdeněk Hruška", "Maile Kealoha", "Tuomas Rautio"}},
		{"a station column is no name", "code,station_name,zone\nBLV,Belmonte,1\nCRV,Corvara,2\n", nil},
		{"a table in capitals aligned under name headers", "SURNAME      FORENAME    GRADE\nMWANGALA     TSHEPISO    B2\nKARLSEN      ASTRID      A1\n",
			[]string{"MWANGALA", "TSHEPISO", "KARLSEN", "ASTRID"}},
		{"family names with a particle written first", "1. Dos Reis, Marisa   BRA\n2. Ní Bhraonáin, Aoibhe   IRL\n", []string{"Dos Reis, Marisa", "Ní Bhraonáin, Aoibhe"}},
		{"a boat column is no name, the helm is", "Sail  Boat            Helm\n204   Saoirse Dawn    Branwen Pugh\n", []string{"Branwen Pugh"}},
		{"a dated rota label is no name", "Sun 7 Dec: Ysolde Marchetti\nSun 14 Dec: Ysolde Marchetti\n", []string{"Ysolde Marchetti", "Ysolde Marchetti"}},
		{"a keyed row of a results table", "1  Tesfalem Gebreyes Haile   ERI  2:08:11\n", []string{"Tesfalem Gebreyes Haile"}},
		{"a keyed rota row with two names", "za 6 dec  10:00-13:00  Femmetje Rozendaal & Ilse Boerema\n", []string{"Femmetje Rozendaal", "Ilse Boerema"}},
		{"the first item of a list", "Readers: Oisín Trethewey, Gwenith Halloran, Pietari Ronkainen.", []string{"Oisín Trethewey", "Gwenith Halloran", "Pietari Ronkainen"}},
		{"places after a list of names", "Speakers: Oisín Trethewey, Gwenith Halloran, Pietari Ronkainen.\nVenues: Galway, Cork, Sligo.", []string{"Oisín Trethewey", "Gwenith Halloran", "Pietari Ronkainen"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, x := range e.Scan(tc.text) {
				if x.Type == TypePerson || x.Type == TypeEmail {
					got = append(got, x.Text)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("persons %q; want %q", got, tc.want)
			}
		})
	}
}
