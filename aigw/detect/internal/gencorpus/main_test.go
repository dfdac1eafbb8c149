package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestCorporaUpToDate regenerates both corpora and compares them with the committed files, so
// a template change cannot silently leave stale labels behind (regenerate with go run).
func TestCorporaUpToDate(t *testing.T) {
	gz, err := ReadGazetteer("../../gazetteer")
	if err != nil {
		t.Fatal(err)
	}
	gen, err := GeneraliseConfig(gz, false)
	if err != nil {
		t.Fatal(err)
	}
	dev, err := GeneraliseConfig(gz, true)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		file string
		cfg  Config
	}{
		{"main", "corpus.jsonl", Main(gz)},
		{"holdout", "corpus_holdout.jsonl", Holdout(gz)},
		{"generalise", "corpus_generalise.jsonl", gen},
		{"generalise-dev", "corpus_generalise_dev.jsonl", dev},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := Encode(Generate(tc.cfg))
			if err != nil {
				t.Fatal(err)
			}
			b, err := Encode(Generate(tc.cfg))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(a, b) {
				t.Fatal("two runs with the same seed differ; want deterministic output")
			}
			committed, err := os.ReadFile(filepath.Join("../../testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(a, committed) {
				t.Errorf("testdata/%s is stale; run: cd aigw/detect && go run ./internal/gencorpus", tc.file)
			}
		})
	}
}

// TestLabels checks every span of both corpora: within the text, on UTF-8 boundaries, not
// overlapping, and with no surrounding spaces.
func TestLabels(t *testing.T) {
	gz, err := ReadGazetteer("../../gazetteer")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		cfg  Config
	}{
		{"main", Main(gz)},
		{"holdout", Holdout(gz)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, s := range Generate(tc.cfg) {
				end := 0
				for _, sp := range s.Spans {
					if sp.Start < end || sp.End > len(s.Text) || sp.Start >= sp.End {
						t.Fatalf("%s: span %+v overlaps or is out of bounds", s.ID, sp)
					}
					v := s.Text[sp.Start:sp.End]
					if !utf8.ValidString(v) || strings.TrimSpace(v) != v {
						t.Fatalf("%s: span %+v = %q is not a clean value", s.ID, sp, v)
					}
					end = sp.End
				}
			}
		})
	}
}

// TestHoldoutNamesNotInGazetteer checks that holdout people are unknown to the detector.
func TestHoldoutNamesNotInGazetteer(t *testing.T) {
	gz, err := ReadGazetteer("../../gazetteer")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Holdout(gz)
	if len(cfg.First) < 40 || len(cfg.Last) < 30 {
		t.Fatalf("got %d first and %d last holdout names; want at least 40 and 30", len(cfg.First), len(cfg.Last))
	}
	for _, n := range append(cfg.First, cfg.Last...) {
		if gz.Folded[fold(n)] {
			t.Errorf("holdout name %q is in the gazetteer", n)
		}
	}
}
