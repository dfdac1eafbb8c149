// Command genmodel trains aigw/detect's name model (internal/namemodel) from the names of every
// origin in internal/namemodel/data plus the detector's gazetteer of given and family names,
// against ordinary words and the gazetteer's non-names and places, and writes it to
// namemodel.bin, which the detect package embeds.
//
// Run from aigw/detect: go run ./internal/genmodel
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/edgewan/edgewan/aigw/detect/internal/namemodel"
)

func main() {
	out := flag.String("out", "namemodel.bin", "output file")
	gaz := flag.String("gazetteer", "gazetteer", "directory of the detector's name lists")
	flag.Parse()
	b, err := Build(*gaz)
	if err == nil {
		err = os.WriteFile(*out, b, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "genmodel:", err)
		os.Exit(1)
	}
}

// Build trains the model from the embedded data and the gazetteer in dir, and encodes it.
func Build(dir string) ([]byte, error) {
	c, err := namemodel.Load()
	if err != nil {
		return nil, err
	}
	m, err := namemodel.Build(c, dir)
	if err != nil {
		return nil, err
	}
	return m.MarshalBinary()
}
