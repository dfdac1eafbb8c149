package detect

import (
	"slices"
	"testing"
)

// TestListNames checks names found from the structure of lists, rows and tables alone
// (namelist.go), and the places, organisations, products and address parts that must stay
// unmarked in the same structures. Names are made up for this test.
func TestListNames(t *testing.T) {
	e := newEngine(t, Options{})
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		// an item after named items of the same list; the first items are named by the rules
		// "Dariusz" from the items after it (firstItemCue, structure.go)
		{"comma list", "Panel: Rasmus, Dariusz, Leilani, Tuisova and Kiri.", []string{"Rasmus", "Dariusz", "Leilani", "Tuisova", "Kiri"}},
		// evidence is read backwards only (streaming): with one named item before it, an item
		// stays unmarked ("Dunedin" after "- Kate M., " is a place), and so does the last item of
		// a list inside a sentence
		{"one item before", "Subs: Baptiste, Wojcik.", nil},
		{"last item in a sentence", "Panel: Rasmus, Dariusz, Leilani and Tuisova for the scripts.", []string{"Rasmus", "Leilani"}},
		{"rows of one rota", "Mon: Rasmus / Dariusz\nTue: Leilani\nWed: Marisol & Ilkka", []string{"Rasmus", "Dariusz", "Leilani", "Marisol", "Ilkka"}},
		{"numbered team sheet", "15 Volavola, 14 Nayacalevu, 13 Radradra, 12 Botia, 11 Tuisova", []string{"Botia", "Tuisova"}},
		{"family name first in rows", "Attendance:\nMwale, Tiwonge - present\nIsmailov, Rauf - absent", []string{"Mwale, Tiwonge", "Ismailov, Rauf"}},
		{"initials first", "Authors: J. R. Okafor, M. Lindqvist and Tanaka H.", []string{"J. R. Okafor", "M. Lindqvist", "Tanaka H."}},
		{"box score", "PLAYER  PTS\nT. Mensah  21\nJ. Paz  9", []string{"T. Mensah", "J. Paz"}},
		{"family name in capitals first", "Delegates: KOVALENKO Oksana (UA), DIALLO Mariama (SN)", []string{"KOVALENKO Oksana", "DIALLO Mariama"}},
		{"caps roster", "NIGHT\nMBEKI THANDO       22:00-06:00\nKARLSSON INGRID    off", []string{"MBEKI THANDO", "KARLSSON INGRID"}},
		{"given name starting a sentence", "Kasimir will bring the projector. Wairimu said so.", []string{"Kasimir", "Wairimu"}},
		{"a thing starting a sentence", "Evensong is in the chapel. Kubernetes will restart it.", nil},
		{"known given name alone before said", "Michael said it works.", nil},
		// look-alikes in the same structures
		{"places", "Depots: Leeds, Bradford, Wakefield, Huddersfield and Halifax.", nil},
		{"organisations", "Sponsors: Acme Logistics, Brightwater Foundation, Nordic Timber AB.", nil},
		{"products", "Order summary\nMilo Chair, oak\nKaspar Shelf, walnut", nil},
		{"address parts", "Carrera 7 # 71-21, Torre B, Oficina 1204, Bogotá", nil},
		{"chess boards", "Bd 2  Ismailov, Rauf (2276) - Hoekstra, Jelle (2260)", []string{"Ismailov, Rauf", "Hoekstra, Jelle"}},
		// "Baptiste" and "Wojcik" from the items around them (firstItemCue, structure.go); no
		// "Baptiste, Wojcik" pair
		{"a list of family names is no Family, Given pair", "Subs: Baptiste, Wojcik, Lemaire.", []string{"Baptiste", "Wojcik", "Lemaire"}},
		{"caps building", "ANNUAL REPORT\nGRACE CHURCH\nTOTAL DUE", nil},
		{"two given names in a row are no Family, Given pair", "9-11  Aigerim, Bruno", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, x := range e.Scan(tc.text) {
				if x.Type == TypePerson {
					got = append(got, x.Text)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("persons %q; want %q", got, tc.want)
			}
		})
	}
}
