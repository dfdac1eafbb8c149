package document_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/edgewan/edgewan/aigw/document"
	"github.com/edgewan/edgewan/aigw/document/documenttest"
)

// labelled is one document of testdata/labelled: NAME.txt and NAME.json with its type and fields.
type labelled struct {
	name   string
	text   string
	Type   string `json:"type"`
	Fields []struct {
		Name       string `json:"name"`
		Value      string `json:"value"`
		Normalized string `json:"normalized"`
	} `json:"fields"`
}

func loadLabelled(t *testing.T) []labelled {
	t.Helper()
	files, err := filepath.Glob("testdata/labelled/*.json")
	if err != nil || len(files) < 10 {
		t.Fatalf("labelled set: %d files, %v", len(files), err)
	}
	var out []labelled
	for _, f := range files {
		var l labelled
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, &l); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		txt, err := os.ReadFile(strings.TrimSuffix(f, ".json") + ".txt")
		if err != nil {
			t.Fatal(err)
		}
		l.name, l.text = filepath.Base(strings.TrimSuffix(f, ".json")), string(txt)
		out = append(out, l)
	}
	return out
}

type score struct{ tp, fp, fn, typesOK, docs int }

func (s score) precision() float64 { return float64(s.tp) / float64(max(s.tp+s.fp, 1)) }
func (s score) recall() float64    { return float64(s.tp) / float64(max(s.tp+s.fn, 1)) }

// compare counts a predicted field right when its name and its value (normalized when the label
// gives one) equal a label's; each label matches once.
func compare(t *testing.T, l labelled, got []document.Field, s *score, what string) {
	used := make([]bool, len(got))
	for _, want := range l.Fields {
		found := false
		for i, f := range got {
			if used[i] || f.Name != want.Name {
				continue
			}
			if (want.Normalized != "" && f.Normalized == want.Normalized) || (want.Value != "" && strings.Join(strings.Fields(f.Value), " ") == want.Value) {
				used[i], found = true, true
				break
			}
		}
		if found {
			s.tp++
		} else {
			s.fn++
			t.Logf("%s %s: missed %s=%q%q", what, l.name, want.Name, want.Value, want.Normalized)
		}
	}
	for i, f := range got {
		if !used[i] {
			s.fp++
			t.Logf("%s %s: extra %s=%q (%s)", what, l.name, f.Name, f.Value, f.Normalized)
		}
	}
}

// TestFieldQuality measures field extraction and type guessing on the labelled set, from the
// text and from OCR of the rendered text (tesseract), and holds them above a floor. The figures
// are in docs/benchmarks.md ("Documents"); -v prints them.
func TestFieldQuality(t *testing.T) {
	set := loadLabelled(t)
	x := extractors(t, document.Options{})["poppler"]
	scores := map[string]*score{"text": {}, "ocr": {}}
	for _, l := range set {
		for _, mode := range []string{"text", "ocr"} {
			var pages []document.Page
			if mode == "text" {
				pages = []document.Page{{Number: 1, Text: l.text, Method: document.MethodText, Confidence: 1}}
			} else {
				r, err := x.Extract(context.Background(), documenttest.PNG(t, l.text))
				if err != nil {
					t.Fatalf("%s: OCR: %v", l.name, err)
				}
				pages = r.Pages
			}
			s := scores[mode]
			compare(t, l, document.Fields(engine, pages), s, mode)
			s.docs++
			text := ""
			for _, p := range pages {
				text += p.Text + "\n"
			}
			if typ, _ := document.Classify(text); typ == l.Type {
				s.typesOK++
			} else {
				t.Logf("%s %s: type %s; labelled %s", mode, l.name, typ, l.Type)
			}
		}
	}
	modes := []string{"text", "ocr"}
	sort.Strings(modes)
	for _, m := range modes {
		s := scores[m]
		t.Logf("%-4s: %d documents, %d labelled fields: precision %.3f, recall %.3f, document type %d/%d",
			m, s.docs, s.tp+s.fn, s.precision(), s.recall(), s.typesOK, s.docs)
		if s.precision() < 0.9 || s.recall() < 0.9 || s.typesOK < s.docs-1 {
			t.Errorf("%s: precision %.3f, recall %.3f, types %d/%d; want at least 0.9, 0.9 and all but one",
				m, s.precision(), s.recall(), s.typesOK, s.docs)
		}
	}
}
