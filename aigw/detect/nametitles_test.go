package detect

import (
	"strings"
	"testing"
)

// TestTitlesAndNotation checks each mechanism of nametitles.go and namesport.go with a name it
// applies to and a look-alike it must leave alone. The names are made up for this test (none
// comes from the hand-written sets).
func TestTitlesAndNotation(t *testing.T) {
	tests := []scanCase{
		// titles of many languages: cues, and outside the span
		{"congregation titles", "Sis. Odessa Whyte-Baillie led the choir and Bro. Carlton Mcintyre played.", []string{"person:Odessa Whyte-Baillie", "person:Carlton Mcintyre"}},
		{"Nigerian titles", "Engr. Ifeanyichukwu Obidike and Alhaji Sani Garba attended.", []string{"person:Ifeanyichukwu Obidike", "person:Sani Garba"}},
		{"Malay titles", "Sila hubungi Puan Norhayati Kassim atau Encik Shahrul.", []string{"person:Norhayati Kassim", "person:Shahrul"}},
		{"Swahili titles", "Mzee Mutiso Kavila na Bw. Musyoka Kilonzi walifika.", []string{"person:Mutiso Kavila", "person:Musyoka Kilonzi"}},
		{"South Asian titles", "Smt. Lalitha Venkatesan and Shri Gopal Iyengar welcome you.", []string{"person:Lalitha Venkatesan", "person:Gopal Iyengar"}},
		{"Tagalog titles", "Paalala mula kay Kagawad Rommel Dimaano at kay Aling Pacita.", []string{"person:Rommel Dimaano", "person:Pacita"}},
		{"title after a capitalised word", "Panalo ang Team Mang Tonyo sa finals.", []string{"person:Tonyo"}},
		{"chained police titles", "Det Sgt Rhiannon Pryce-Jenkins said the car was found.", []string{"person:Rhiannon Pryce-Jenkins"}},
		{"street type stays a street", "Deliver to 14 Spring Dr Apt 4, Austin", []string{"street_address:14 Spring Dr Apt 4"}},
		{"post-name title word", "Toplantıya muhtar Recep Bey de katıldı.", []string{"person:Recep"}},
		{"post-name title after a sentence-initial word", "Toplantıya Gülsüm Hanım ve muhtar katıldı.", []string{"person:Gülsüm"}},
		{"post-name title suffix", "Please ask Nakagawa-san about the order.", []string{"person:Nakagawa"}},
		{"family before a name", "Met dank aan Familie Oosterwijk-Brand voor de gift.", []string{"person:Oosterwijk-Brand"}},
		{"family before ordinary words is a thing", "Visit the Familia Real exhibition.", nil},
		{"plural title", "Present: Cllrs Wenonah Pritchard-Oyelaran and Tobiah Fairweather-Nkem.", []string{"person:Wenonah Pritchard-Oyelaran", "person:Tobiah Fairweather-Nkem"}},
		{"repeated mention after a titled full mention", "Bravo à Mme Odile Marchetti-Roux, championne du Loiret. Marchetti-Roux a battu sa rivale.", []string{"person:Odile Marchetti-Roux", "person:Marchetti-Roux"}},
		// kinship titles: before a single name word, in their language
		{"kinship title before a full name", "announce the passing of Nana Kwabena Ofori-Darko II, aged 90", []string{"person:Kwabena Ofori-Darko"}},
		{"Malay place head", "Rumah beliau di Taman Seri Rahmat, Kajang.", nil},
		{"Tagalog kinship title in Tagalog", "Ang handaan ay sa bahay ni Tito Jomari sa Lipa.", []string{"person:Jomari"}},
		{"Tagalog kinship word elsewhere is a name", "Lola Brightwater sang at the gala.", []string{"person:Lola Brightwater"}},
		{"lower-case don", "el presidente, don Evaristo, entregó el trofeo", []string{"person:Evaristo"}},
		{"a shop named after a title", `la bodega "Don Pancho" cierra`, nil},
		{"Tagalog article in Tagalog", "update lang po: si jerome dalisay ay nasa Dubai na", []string{"person:jerome dalisay"}},
		{"Spanish si is no article", "si Carmen llega tarde, empezamos", []string{"person:Carmen"}},
		// organisations named after people
		{"institution before the name", "Estudiantes de la Université Cheikh Tidiane Sall.", nil},
		{"head before a title", "Please refer to Klinik Dr. Wong Mei Ling for the scan.", nil},
		{"company form after", "Invoice from Heribert Kolb KG.", nil},
		{"lower-case trophy before", "Il a remporté le trophée Marcel-Bernard.", nil},
		{"Tagalog sa is no company form", "Salamat kay Aling Nenita sa tulong.", []string{"person:Nenita"}},
		{"weekday before a date", "Sun 7 Dec: full choir\nSat 13 Dec: youth choir", nil},
		{"the family name Sun", "Please ask Dr Sun about the slides.", []string{"person:Sun"}},
		// verbs and roles around a run
		{"action verb after a pair", "but Emeka Anozie levelled before the break", []string{"person:Emeka Anozie"}},
		{"team before a verb stays out", "Ashford Town scored twice after the break.", nil},
		{"role at a sentence start", "It ended 2-2. Referee Obinna Ezeudu booked four players.", []string{"person:Obinna Ezeudu"}},
		// cricket notation
		{"ball line", "14.2  Wickramasinghe to Tawhid, 1 run, pushed to cover", []string{"person:Wickramasinghe", "person:Tawhid"}},
		{"dismissal", "Rashidul Karim     c Jayasekara b Wickramasinghe   23", []string{"person:Rashidul Karim", "person:Jayasekara", "person:Wickramasinghe"}},
		{"dismissal with initials", "T. Mokoena    lbw b Pretorius    4", []string{"person:T. Mokoena", "person:Pretorius"}},
		{"bowling figures", "Bowling: Wickramasinghe 9-1-41-3, Dananjaya Perera 10-0-52-1", []string{"person:Wickramasinghe", "person:Dananjaya Perera"}},
		{"figures need the shape", "Room 12-3-456-7 is on floor 12.", nil},
		{"ball line needs the over", "Transfer 10 to Savings, then stop.", nil},
	}
	checkScans(t, newEngine(t, Options{}), tests)
}

// TestSportPending checks that a run whose line may still turn into cricket notation is held
// by SafePrefix until the line has ended.
func TestSportPending(t *testing.T) {
	e := newEngine(t, Options{})
	for _, tc := range []struct {
		text    string
		pending bool
	}{
		{"14.2  Wickramasinghe to Taw", true}, // a ball line: the batter and the comma may come
		{"Rashidul Karim     c Jayas", true},  // a dismissal
		{"Bowling: Wickramasinghe 9-1", true}, // figures
		{"Rashidul Karim     c & ", true},
		{"Rashidul Karim went home and ", false},
		{"Rashidul Karim     c Jayasekara b Wickramasinghe   23\n", false}, // decided
	} {
		cs := strings.IndexAny(tc.text, "RW")
		if tc.text[0] == '1' {
			cs = strings.Index(tc.text, "Wick")
		}
		if got := e.names.sportPending(tc.text, cs); got != tc.pending {
			t.Errorf("sportPending(%q) = %v; want %v", tc.text, got, tc.pending)
		}
	}
	// SafePrefix holds the bowler of an unfinished ball line, then passes what precedes it.
	text := "over 14. 14.2  Wickramasinghe to Tawhid"
	if p := e.SafePrefix(text, 0); p > strings.Index(text, "Wick") {
		t.Errorf("SafePrefix(%q) = %d; passes the bowler", text, p)
	}
}

// TestActionAndRoleCues checks that an action verb after a pair of name-like words and a
// capitalised role at a sentence start raise the run to a confirmed name (0.85), and that the
// same run without them stays where the rules put it.
func TestActionAndRoleCues(t *testing.T) {
	e := newEngine(t, Options{})
	score := func(text, name string) float64 {
		for _, x := range e.Scan(text) {
			if x.Type == TypePerson && x.Text == name {
				return x.Score
			}
		}
		return 0
	}
	for _, tc := range []struct {
		with, without, name string
		min                 float64
	}{
		{"but Emeka Anozie levelled before the break", "but Emeka Anozie before the break", "Emeka Anozie", 0.85},
		{"It ended 2-2. Referee Obinna Ezeudu cards.", "It ended 2-2. Obinna Ezeudu cards.", "Obinna Ezeudu", 0.85},
		// a family name alone acting at a sentence start (actionSubject)
		{"That is 4-2 in sets. Ndlovu shakes his head.", "That is 4-2 in sets. Ndlovu his head.", "Ndlovu", DefaultMinScore},
		// after a closing quote or a semicolon too (sentenceStartAt)
		{`"He kept us in it." Ndlovu scored twice.`, `"He kept us in it." Ndlovu twice.`, "Ndlovu", DefaultMinScore},
		{"the report is late again; Ndlovu says she will chase it", "the report is late again; Ndlovu she will chase it", "Ndlovu", DefaultMinScore},
	} {
		w, wo := score(tc.with, tc.name), score(tc.without, tc.name)
		if w < tc.min || wo >= w || wo >= DefaultMinScore && tc.min == DefaultMinScore {
			t.Errorf("%q scores %.2f with the cue (%q), %.2f without; want >= %.2f and more than without", tc.name, w, tc.with, wo, tc.min)
		}
	}
}
