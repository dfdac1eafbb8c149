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

// ReadGazetteer returns the folded given and family names of aigw/detect's gazetteer in dir.
func ReadGazetteer(dir string) ([]string, error) {
	var out []string
	for _, f := range []string{"first_names.txt", "last_names.txt"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return nil, fmt.Errorf("namemodel.ReadGazetteer: %w", err)
		}
		for _, w := range strings.Fields(string(b)) {
			out = append(out, FoldString(w))
		}
	}
	return out, nil
}
