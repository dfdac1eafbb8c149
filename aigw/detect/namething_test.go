package detect

import "testing"

// TestThingNamed checks each kind of evidence of namething.go with a thing named like a person
// and a person in the same kind of text, who must stay a person. The names are made up for this
// test (none comes from the hand-written sets).
func TestThingNamed(t *testing.T) {
	checkScans(t, newEngine(t, Options{}), []scanCase{
		{"vessel prefix", "MV Gwendolyn Atherly sails at 07:40.", nil},
		{"vessel prefix with a slash", "M/S Torvald Brekke ligger vid kajen.", nil},
		{"ferry noun", "Tomorrow the ferry Margaret Wilson is cancelled.", nil},
		{"storm", "Storm Katherine reached the coast overnight.", nil},
		{"storm with a title", "Hurricane Lady Brannock weakened.", nil},
		{"film noun", "We watched the film Julia Roberts twice.", nil},
		{"street head of another language", "Desvío por la glorieta de Manuel García hasta el lunes.", nil},
		{"street head inside the run", "Przystanek Aleja Tadeusza Wronki zamknięty.", nil},
		{"furniture after", "Add the Michael Harris 3-seater sofa to the order.", nil},
		{"ward after", "She moved to Edith Jones ward on Monday.", nil},
		{"firm suffix", "Invoice from Thomas Brown Ltd. is due.", nil},
		{"pedigree brackets", "1st Glenrigg Morwenna (Glenrigg Hector x Glenrigg Ailsa), Huw Trefor", []string{"person:Huw Trefor"}},
		{"by and out of", "a colt by Thaddeus out of Lady Perpetua, bred by Orla Kinsella", []string{"person:Orla Kinsella"}},
		{"horse notation", "Dame Ottoline: ch. m. 5yo. Owner: Finbar Quealy", []string{"person:Finbar Quealy"}},
		{"curly title quotes", "She lent me “Rebecca Taylor” last week.", nil},
		{"quoted list of titles", `We read "Rebecca Taylor", "David Evans" and "Emma".`, nil},
		{"firm with &", "Suppliers: Procter & Gamble, and others.", nil},
		{"two people with &", "Tue: Marisol & Benedikt", []string{"person:Benedikt"}},
		{"car maker", "Pool cars: Renault Zoe, Toyota Yaris.", nil},
		{"pack size", "Stock: Jack Daniel's 70cl, Paul Smith 16pc.", nil},
		{"given name with a year", "Sun 18:00  Sofia (2024)", nil},
		{"list under a thing heading", "Storm names this season:\nAoibheann, Brannoc, Ciarnait, Dervla", nil},
		{"list under a person heading", "Skippers this season:\nAoibheann Ruane, Brannoc Hale, Ciarnait Lowry", []string{"person:Aoibheann Ruane"}},
		{"a label is no heading", "Ship to: Kittiwat Somsak, 55 Moo 2, Bang Lamung", []string{"person:Kittiwat Somsak", "street_address:55 Moo 2"}},
		{"racing suffix", "2  Margaret Wilson (IRE) 4 9-7", nil},
		{"noble title before an ordinary word", "Gavin drew Lord Accord in the sweep.", []string{"person:Gavin"}},
		{"office title before an ordinary word stays", "Cllr Pickles reported the date.", []string{"person:Pickles"}},
		{"keeper after a possessive, and the other mention", "The race went to Sir Wilfred. Sir Wilfred's owner, Orla Kinsella, was delighted.", []string{"person:Orla Kinsella"}},
		{"kept by a rider", "ganó Margarita Solís, montado por Luis Jiménez", []string{"person:Luis Jiménez"}},
		{"apposition of an owner keeps the person", "Ana Ruiz, owner of the bar, said so.", []string{"person:Ana Ruiz"}},
		{"collector of a herbarium label", "Juncus bufonius L.  Leg. & det. Stig Ahlbom", []string{"person:Stig Ahlbom"}},
		{"an initial alone is no name", "Poa annua L.  Leg. B. Forsmark", nil}, // the cue cut the run at "B"
		{"film certificate", "Sat 2pm  Margaret Wilson (PG)\n9.00pm  Rosalind (15)", nil},
		{"a child's age stays", "Tickets for Rosalind (15) and Tom.", []string{"person:Rosalind"}},
		{"list heading with for", "Storm names for 2026/27 are: Alan, Bella, Christoph.", nil},
		{"thing key", "Schiff: Helene Fischer, Eigner: Reederei Nord", []string{"person:Reederei Nord"}}, // a firm, not this file's evidence
		{"animal name key", "Registered name: Tarnbeck Lady Grace. Call name: Gracie. Breeder: Ann Tolley.", []string{"person:Ann Tolley"}},
		{"keeper after an adjective", "We hear that Mavis Hartley's new owner is Dafydd Rees.", []string{"person:Dafydd Rees"}},
		{"thing key before a title", "Sire: Mount Nelson. Dam: Lady Jane Grey. Owner: Mrs Fiona Carr", []string{"person:Fiona Carr"}},
		{"dock and cup after a name", "Buses call at Albert Dock; the Ruth Gill Cup went to Omar Ali.", []string{"person:Omar Ali"}},
		{"thing column", "Dog\tOwner\nMarcella Brightwater\tOsric Penhallow\n", []string{"person:Osric Penhallow"}},
	})
}
