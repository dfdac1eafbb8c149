package detect

import (
	"slices"
	"strings"
	"testing"
)

// TestLayoutNames checks names found from layout evidence alone (layout.go): lower-case and
// all-capitals speakers of transcripts, cells under a name header, and the roles, words,
// form labels and non-name cells that must stay unmarked in the same layouts.
func TestLayoutNames(t *testing.T) {
	e := newEngine(t, Options{})
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"lower-case speakers", "wiremu: who has the van\nkalani: not me, ask the boss\nops-bot: done, ticket closed\nwiremu: ok", []string{"kalani", "wiremu"}},
		// Evidence comes only from the lines above (a stream sends a line once it has ended).
		{"first speaker line", "wiremu: who has the van", nil},
		{"all-caps speakers", "HOST: can you hear me now\nTEMBA: yes we can", []string{"TEMBA"}},
		{"timed speakers", "[10:01] bot: the build is green\n[10:02] oksana: great, merging", []string{"oksana"}},
		{"video timestamps", "00:01:02 Host: welcome\n00:01:12 ADEBAYO OKAFOR: thanks all for joining\n00:01:20 Ravi: Happy to be here", []string{"ADEBAYO OKAFOR", "Ravi"}},
		{"speaker line too far above", "bot: " + strings.Repeat("the build is green ", 8) + "\noksana: great, merging", nil},
		{"one speaker line is no transcript", "zelda: the legend continues", nil},
		{"form labels are no speakers", "IBAN: see attached\nDOB: on file\nMRN: 4471", nil},
		{"caps form values", "NATIONALITY: FINNISH\nPASSPORT: PX112233", nil},
		{"roles", "reception: yes from 8\nsupport: we will call back\ninterviewer: go on please", nil},
		{"lower-case name column", "name,shirt\nlanakila kahananui,L\nmerewyn tawhiri,M", []string{"lanakila kahananui", "merewyn tawhiri"}},
		{"padded pipe column", "guest | diet\nsefo pouono | vegan", []string{"sefo pouono"}},
		{"caps name column", "PASSENGER;SEAT\nVAINIKOLO TUPOU;12A", []string{"VAINIKOLO TUPOU"}},
		{"lower-case list", "who brings what:\n- tamati kereama (chips)\n- losa fonoti, drinks\n- paper plates", []string{"tamati kereama", "losa fonoti"}},
		{"list without a heading", "who brings what\n- tamati kereama (chips)\n- losa fonoti, drinks", []string{"losa fonoti"}},
		// the first item too since namelist.go (a numbered row of two name-like words in capitals)
		{"numbered caps list", "1. ALAPATI MULITALO\n2. IOANE SAPOLU\n3. SPARE BALLS", []string{"ALAPATI MULITALO", "IOANE SAPOLU"}},
		{"caps name line", "ADEBOLA OGUNLEYE\n14 Admiralty Way, Lekki", []string{"ADEBOLA OGUNLEYE"}},
		{"caps name line between others", "Rx 4471209  Qty 28\nMUTHONI KARIUKI\nAmoxicillin 500mg", []string{"MUTHONI KARIUKI"}},
		{"caps headings", "ANNUAL REPORT\nGRACE CHURCH\nBERLIN MARATHON\nTOTAL DUE\nJOHN\nAPI KEY ROTATION", nil},
		{"caps name line with more on the line", "ADEBOLA OGUNLEYE | Lagos", nil},
		{"one-word items are things", "- kumara\n- taro\n- lemons", nil},
		{"list of words", "- victoria sponge\n- carrot cake", nil},
		{"other columns", "city,dish\nqueenstown,pavlova\nwanaka,hangi", nil},
		{"ordinary words in a name column", "assignee;status\nunassigned;open", nil},
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
