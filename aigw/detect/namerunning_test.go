package detect

import (
	"strings"
	"testing"
)

// TestRunningTextNames checks each kind of evidence of namerunning.go with a name it applies to
// and a look-alike it must leave alone. The names and places are made up for this test (none
// comes from the hand-written sets).
func TestRunningTextNames(t *testing.T) {
	tests := []scanCase{
		// person evidence
		{"role noun before", "Our barber, Teodoro, cut it short.", []string{"person:Teodoro"}},
		{"kinship before", "my aunt Ifeoluwa still bakes every Sunday", []string{"person:Ifeoluwa"}},
		{"kinship across a line break", "Please add our daughter\nMakerita to the booking.", []string{"person:Makerita"}},
		{"capitalised role is a job title", "Dr Halvard Eikeset, Consultant Nephrologist, Bergen", []string{"person:Halvard Eikeset"}},
		{"the late", "in memory of the late Odhran Keogh, who", []string{"person:Odhran Keogh"}},
		{"age apposition", "Brannagh Tulloch, 61, of Kirkwall, was fined", []string{"person:Brannagh Tulloch"}},
		{"relative clause", "We thank Ikenna Obiora, who lent the tools.", []string{"person:Ikenna Obiora"}},
		{"role after a determiner", "said Zoltán Bíró, the club's treasurer", []string{"person:Zoltán Bíró"}},
		{"role after as", "the board named Adaugo Nwachukwu as chief executive on Friday", []string{"person:Adaugo Nwachukwu"}},
		{"kinship after a possessive", "That is Kagiso's younger sister.", []string{"person:Kagiso"}},
		{"team's player is no kinship", "beat Harrowby 3-0; Harrowby's keeper was sent off", nil},
		{"verb before", "In 1990 he married Losaline in Neiafu.", []string{"person:Losaline"}},
		{"name label of another language", "Apja neve: Hajdú Ferenc", []string{"person:Hajdú Ferenc"}},
		{"numbered label", "Passenger 2: Wiremu Tapsell", []string{"person:Wiremu Tapsell"}},
		{"repeated mention", "The prize went to Ebunoluwa Adesanmi. Adesanmi thanked her team.", []string{"person:Ebunoluwa Adesanmi", "person:Adesanmi"}},
		{"repeated organisation is no name", "Grafana Loki is slow. Loki queriers lag.", nil},
		{"Gaelic particles", "The goal came from Cathal Mac Giolla Phádraig in the second half.", []string{"person:Cathal Mac Giolla Phádraig"}},
		{"prothetic h", "Yours faithfully, Síle Ó hEochaidh", []string{"person:Síle Ó hEochaidh"}},
		{"Vietnamese middle name", "At the market, Phạm Thị Lan sold rice cakes.", []string{"person:Phạm Thị Lan"}},
		{"speech verb after a pair", "Tuilagi Faleolo told reporters the plan was ready.", []string{"person:Tuilagi Faleolo"}},
		{"single given name before said stays out", "Michael said it works.", nil},
		{"credits", "Produced by\nOyelaran Bankole\n", []string{"person:Oyelaran Bankole"}},
		{"addressee above an address", "Ingólfur Þorsteinsson\nFlat 3, 14 Mill Road\n", []string{"person:Ingólfur Þorsteinsson", "street_address:Flat 3, 14 Mill Road"}},
		{"hyphen at a line break", "Patient: Marit Solberg-\nHaugen, DOB unknown", []string{"person:Marit Solberg-\nHaugen"}},
		{"lower-case titles", "Promotor: dr hab. inż. Tomasz Zawadzki", []string{"person:Tomasz Zawadzki"}},
		{"title of parliament", "Hon. Nduku Wambua asked the Minister", []string{"person:Nduku Wambua"}},
		{"office after a role title", "the Deputy Speaker ruled", nil},
		{"payee in capitals", "Ksh700 sent to PETER OTIENO 0711 222 333 on 1/2/26", []string{"person:PETER OTIENO", "phone:0711 222 333"}},
		{"coordinated with a full name", "Koa and Leilani Kahananui are delighted", []string{"person:Koa", "person:Leilani Kahananui"}},
		{"coordinated with a firm", "Harrowby and Tamsin Vale Ltd signed", nil},
		// organisations, places and things
		{"foundation after", "a grant from the Elsbeth Harnisch Stiftung for", nil},
		{"company form after", "Invoice from Kauko Lindroos Oy, Tampere", nil},
		{"company form ending the run", "Supplier Veikko Haapala Oyj reported", nil},
		{"publisher", "by arrangement with Ruth Kessel Books.", nil},
		{"Romance head before", "A Fundação Amélia Soares abriu ontem.", nil},
		{"saint", "a painting of Saint Hildegard in the nave", nil},
		{"compound place", "Die Lesung ist im Clara-Zetkin-Saal.", nil},
		{"the on the line before", "we thank the\nHarriet Ainsworth Trust for", nil},
		{"titled thing after the", "Tickets for the Sir Geoffrey Bramall stand", nil},
		{"boat after a comma", "The old boat, Lady Winifred, goes to the juniors.", nil},
		{"pet in brackets", "chased the neighbour's cat (Mr Pemberton) again", nil},
		{"place preposition and place noun", "Donations to Ezekiel Mphahlele Hall or at Oliver Tambo Hall.", nil},
		{"firm after &", "Agent: Hulst & Vermeer (ops@example.nl)", nil},
		{"address line", "Adres: Kızıltepe Mah. Gül Sok. No: 4", []string{"street_address:Kızıltepe Mah. Gül Sok. No: 4"}}, // no person; an address since detect9's "No: " marker
		{"header row", "First name\tLast name\tSide\tTable\n", nil},
		{"product after the name", "They now stock Dr. Halloran boots and Bellamy Finch perfume.", nil},
		{"animal record", "Patient: Bramble   Species: feline   Breed: tabby", nil},
	}
	checkScans(t, newEngine(t, Options{}), tests)
}

// TestRunningTextPending checks that the evidence read after a run is reported pending while
// the text that decides it has not arrived (SafePrefix then holds the run), and decided once it
// has.
func TestRunningTextPending(t *testing.T) {
	names := newEngine(t, Options{}).names
	for _, tc := range []struct {
		text    string // the run is "Odalys Quenum" at the start of a line
		pending bool
	}{
		{"Odalys Quenum", true},
		{"Odalys Quenum,", true},
		{"Odalys Quenum, ", true},     // ", 54," or ", who" may follow
		{"Odalys Quenum, 5", true},    // an age
		{"Odalys Quenum, 54,", false}, // decided: an age
		{"Odalys Quenum, the ", true}, // "the club's founder" may follow
		{"Odalys Quenum, the club's ", true},
		{"Odalys Quenum, the club's founder ", false},
		{"Odalys Quenum, and then ", false},
		{"Odalys Quenum'", true}, // "'s sister" may follow
		{"Odalys Quenum's older ", true},
		{"Odalys Quenum's older sister ", false},
		{"Odalys Quenum (", true},
		{"Odalys Quenum (4", true},
		{"Odalys Quenum (44) ", true},
		{"Odalys Quenum (44) said", false},
		{"Odalys Quenum\nFl", true}, // an address may start the next line
		{"Odalys Quenum\nThe meeting is on Friday", false},
		{"Odalys Quenum wrote", false},
		{"Odalys an", true}, // " and Quenum Achebe" may follow
		{"Odalys and", true},
		{"Odalys and Qu", true},
		{"Odalys and Quenum Achebe ", true}, // " as ..." may still follow the second name
		{"Odalys and Quenum Achebe were ", false},
		{"Odalys and Quenum Achebe,", true},
	} {
		e := len("Odalys Quenum")
		if strings.HasPrefix(tc.text, "Odalys a") {
			e = len("Odalys") // the run is "Odalys" alone
		}
		got := appositionPending(tc.text, e) || addressBlockPending(tc.text, 0, e) || names.coordPending(tc.text, e)
		if got != tc.pending {
			t.Errorf("pending(%q) = %v; want %v", tc.text, got, tc.pending)
		}
	}
}
