package detect

import (
	"embed"
	"strings"
	"sync"

	"github.com/edgewan/edgewan/aigw/detect/internal/namemodel"
)

// The name lists are written for this package (no external source): common given names and
// family names across many languages, and capitalised words that are not names. Keys are folded
// (lower case, diacritics and apostrophes removed), so "Jürgen", "JURGEN" and "Jurgen" match.
//
//go:embed gazetteer/*.txt
var gazetteerFS embed.FS

// namemodelBin is the name model written by internal/genmodel.
//
//go:embed namemodel.bin
var namemodelBin []byte

var (
	nameModelOnce sync.Once
	nameModelDef  *namemodel.Model
)

// defaultNameModel returns the embedded name model.
func defaultNameModel() *namemodel.Model {
	nameModelOnce.Do(func() {
		m, err := namemodel.Unmarshal(namemodelBin)
		if err != nil {
			panic("detect: embedded name model: " + err.Error()) // build-time invariant
		}
		nameModelDef = m
	})
	return nameModelDef
}

// Gazetteer flags.
const (
	gzFirst     = 1 << iota // given name
	gzLast                  // family name
	gzNotName               // capitalised word that is not a name ("Monday", "Street", "Google")
	gzAmbiguous             // a name that is also a common word ("Will", "May", "Grace")
	gzProbable              // not in the gazetteer, but the name model says it looks like a name
	gzWord                  // not in the gazetteer, and an ordinary word of the model's word set
	gzPlace                 // with gzNotName: a place ("Albuquerque"), which is also a family name
)

var (
	gazetteerOnce sync.Once
	gazetteer     map[string]uint8
)

// ambiguousNames are given or family names that are common words or places; alone they are not
// evidence of a person.
const ambiguousNames = `Will May June April August Mark Bill Grant Frank Jack Rose Grace Hope Faith
Joy Summer Autumn Winter River Sky Dawn Crystal Ruby Amber Jade Iris Ivy Daisy Violet Hazel Olive
Willow Harmony Destiny Haven Heaven Miracle Royalty Angel Paris London Phoenix Sage Hunter Chase
Parker Carter Cooper Taylor Bailey Morgan Hudson Lincoln Kennedy Genesis Journey Lyric Harley
Remington Dakota Georgia Sydney Aspen Maverick Ember Presley Blake Justice Dean Guy Rich Art Earl
Pat Sue Jan Kay Lee Long Bo Li Min Na Yu Ping Hong Ming Lan Mai Nam Can Said Mona Uma Dev Raj Max
Don Ray Drew Wade Lance Chad Penny Holly Misty Sandy Ginger Cherry Brandy Ren Rin Shin Ha Ko Do Jin
Ji Oh Ma Gu Le Vo Vu Ly Ta Ba Sy Fall Lane Page Love Bell Price Young King Hill Wood Stone Black
White Green Gray Brown Little Short Strong Good Best Day Church House Case Rush Cash Marsh Bush
Ford Banks Fields Rivers Miles Powers Sharp Frost Snow Moon Glass Wolf Fox Crane Hart Noble Major
Mack Royal Golden Summers Winters Prince Duke Pope Bishop Knight Bond Savage Baker Cook Porter
Mason Carpenter Turner Fisher Miller Butler Walker Weaver Potter Parsons Spencer Marshall Stewart
Chambers Booth Hall Temple Waters Lake Brooks Ball Hood Small Park Cross Cole Hand Head Lamb Moss
Nash Tate Wise Lord Light Power Mercy Pace Free Luna Sol Cruz Vera Austin Jordan Madison Jackson
Houston Dallas Orlando Florence Victoria Charlotte Chelsea Regina Salvador Santiago Elizabeth
Logan Hanna Rana Sun Tao Yang Kim Song Han Yan Bo Shah Mann Gill Ali Kai Leo Ben Tom Tim Bob Bud
Sunny Star Storm Rain Reed Lily Poppy Skye Fern Clay Forest Glenn Gene Buck Cliff Rod Sonny Rusty
Christian Early Julian Marine Romeo Nova Sierra Eden Nevada Virginia Carolina Savannah Brooklyn
Trinity Serenity Melody Aurora Marina Sharon Tracy Avery Riley Quinn Payton Peyton Rowan Kendall`

func loadGazetteer() {
	gazetteerOnce.Do(func() {
		gazetteer = make(map[string]uint8, 6000)
		var buf [64]byte
		add := func(w string, flag uint8) {
			k, ok := foldInto(buf[:0:len(buf)], w)
			if ok && len(k) > 0 {
				gazetteer[string(k)] |= flag
			}
		}
		for _, f := range []struct {
			file string
			flag uint8
		}{{"first_names.txt", gzFirst}, {"last_names.txt", gzLast}, {"not_names.txt", gzNotName}, {"places.txt", gzNotName | gzPlace}} {
			b, err := gazetteerFS.ReadFile("gazetteer/" + f.file)
			if err != nil {
				panic("detect: embedded gazetteer missing: " + err.Error()) // build-time invariant
			}
			for _, w := range strings.Fields(string(b)) {
				add(w, f.flag)
			}
		}
		for _, w := range strings.Fields(ambiguousNames) {
			add(w, gzAmbiguous)
		}
		// A word that is both a name and a non-name is an ambiguous name.
		for k, v := range gazetteer {
			if v&gzNotName != 0 && v&(gzFirst|gzLast) != 0 {
				gazetteer[k] = v&^gzNotName | gzAmbiguous
			}
		}
	})
}

// lookupName returns the gazetteer flags of a word.
func lookupName(w string) uint8 {
	var buf [64]byte
	k, ok := foldInto(buf[:0:len(buf)], w)
	if !ok {
		return 0
	}
	return gazetteer[string(k)]
}

// foldInto appends the folded form of s to buf: lower case, Latin diacritics removed,
// apostrophes and hyphens dropped. ok is false when it does not fit in buf's capacity.
func foldInto(buf []byte, s string) ([]byte, bool) { return namemodel.Fold(buf, s) }
