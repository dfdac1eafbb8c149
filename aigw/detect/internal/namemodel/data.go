package namemodel

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"embed"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// data holds the training data: names by origin (data/names/ORIGIN.txt, written for this
// package), English words (Debian's wamerican, SCOWL, public domain), a sample of Spanish
// (wspanish, public domain word list) and Dutch (wdutch, OpenTaal, BSD) words, and frequent
// French, German, Italian and Portuguese words written by hand.
//
//go:embed data
var data embed.FS

// Corpus is the training data.
type Corpus struct {
	Names map[string][]string // origin → folded names
	Words []string            // folded ordinary words (n-gram class "word")
	Dict  []string            // folded words for the ordinary-word set
}

// Origins returns the name origins in the data, sorted.
func (c *Corpus) Origins() []string {
	var o []string
	for k := range c.Names {
		o = append(o, k)
	}
	slices.Sort(o)
	return o
}

// NamesExcept returns the names of every origin not in exclude.
func (c *Corpus) NamesExcept(exclude ...string) []string {
	var out []string
	for _, o := range c.Origins() {
		if !slices.Contains(exclude, o) {
			out = append(out, c.Names[o]...)
		}
	}
	return out
}

// Load reads the embedded training data. Lines starting with '#' are comments; names are
// whitespace-separated words (a multi-word family name such as "Ní Bhriain" gives two words).
func Load() (*Corpus, error) {
	c := &Corpus{Names: map[string][]string{}}
	ents, err := data.ReadDir("data/names")
	if err != nil {
		return nil, fmt.Errorf("namemodel.Load: %w", err)
	}
	for _, e := range ents {
		ws, err := readWords(path.Join("data/names", e.Name()))
		if err != nil {
			return nil, err
		}
		c.Names[strings.TrimSuffix(e.Name(), ".txt")] = ws
	}
	en, err := readWords("data/words_en.txt.gz")
	if err != nil {
		return nil, err
	}
	other, err := readWords("data/words_other.txt.gz")
	if err != nil {
		return nil, err
	}
	common, err := readWords("data/common_words.txt")
	if err != nil {
		return nil, err
	}
	c.Words = slices.Concat(en, other, common)
	c.Dict = slices.Concat(en, common)
	return c, nil
}

func readWords(name string) ([]string, error) {
	b, err := data.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("namemodel: %w", err)
	}
	var r io.Reader = bytes.NewReader(b)
	if strings.HasSuffix(name, ".gz") {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, fmt.Errorf("namemodel: %s: %w", name, err)
		}
		r = zr
	}
	var out []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		for _, w := range strings.Fields(line) {
			if f := FoldString(w); f != "" {
				out = append(out, f)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("namemodel: %s: %w", name, err)
	}
	return out, nil
}

// Build trains the model that aigw/detect ships, or with exclude, one that has never seen the
// names of those origins: names of every other origin plus the gazetteer's given and family
// names (in dir) that are not names of an excluded origin, against ordinary words plus the
// gazetteer's capitalised non-names and places.
func Build(c *Corpus, dir string, exclude ...string) (*Model, error) {
	gz, err := readLists(dir, "first_names.txt", "last_names.txt")
	if err != nil {
		return nil, err
	}
	non, err := readLists(dir, "not_names.txt", "places.txt")
	if err != nil {
		return nil, err
	}
	held := map[string]bool{}
	for _, o := range exclude {
		for _, w := range c.Names[o] {
			held[w] = true
		}
	}
	names := c.NamesExcept(exclude...)
	for _, w := range gz {
		if !held[w] {
			names = append(names, w)
		}
	}
	return Train(names, slices.Concat(c.Words, non), c.Dict), nil
}

// readLists returns the folded words of the gazetteer files in dir.
func readLists(dir string, files ...string) ([]string, error) {
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return nil, fmt.Errorf("namemodel: %w", err)
		}
		for _, w := range strings.Fields(string(b)) {
			out = append(out, FoldString(w))
		}
	}
	return out, nil
}

// HeldOutOrigins are the name origins that aigw/detect's generalisation test leaves out of the
// model it trains, and from which the generalisation corpus (internal/gencorpus) draws every
// person name: the figures measure names of origins the model never saw.
var HeldOutOrigins = []string{"andean", "finnic", "mongolic", "nguni", "polynesian"}

// DevOrigins play the same part for the development split that tuning may look at; they are
// disjoint from HeldOutOrigins.
var DevOrigins = []string{"east_african", "south_asian", "southeast_asian", "west_african"}

// OriginNames returns the given names (the first line of data/names/ORIGIN.txt that is not a
// comment) and family names (the second) of an origin, as written.
func OriginNames(origin string) (given, family []string, err error) {
	b, err := data.ReadFile("data/names/" + origin + ".txt")
	if err != nil {
		return nil, nil, fmt.Errorf("namemodel.OriginNames: %w", err)
	}
	var lines [][]string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && l[0] != '#' {
			lines = append(lines, strings.Fields(l))
		}
	}
	if len(lines) != 2 {
		return nil, nil, fmt.Errorf("namemodel.OriginNames: %s: want 2 lines of names, got %d", origin, len(lines))
	}
	return lines[0], lines[1], nil
}
