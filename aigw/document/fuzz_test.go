package document_test

import (
	"context"
	"errors"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/edgewan/edgewan/aigw/document"
	"github.com/edgewan/edgewan/aigw/document/documenttest"
)

// FuzzExtract feeds arbitrary bytes to the pure-Go path (no external tools, so the fuzzer
// explores our code and the PDF reader, not tesseract): it must never panic, and every failure
// must be one of the sentinel errors the API maps to a 4xx.
func FuzzExtract(f *testing.F) {
	f.Add(documenttest.TextPDF(f, "Invoice number: INV-1\nTotal: $10.00"))
	f.Add(documenttest.Corrupt(f))
	f.Add(documenttest.BlankPDF(f, 1))
	f.Add([]byte("%PDF-1.4\n1 0 obj<</Type/Catalog>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n"))
	f.Add([]byte("Invoice INV-1\fpage two"))
	f.Add(documenttest.HugePNG(f, 10, 10))
	f.Add([]byte("II*\x00\x08\x00\x00\x00"))
	x := document.New(document.Options{PDFToText: "-", Tesseract: "/nonexistent/tesseract", MaxBytes: 1 << 20, Timeout: 5 * time.Second})
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := x.Extract(context.Background(), data)
		if err != nil {
			for _, s := range []error{document.ErrTooLarge, document.ErrUnsupported, document.ErrCorrupt, document.ErrEncrypted, document.ErrEmpty, document.ErrNoOCR} {
				if errors.Is(err, s) {
					return
				}
			}
			t.Fatalf("an error the API would answer 500: %v", err)
		}
		if len(r.Pages) == 0 {
			t.Fatal("a result without pages")
		}
		fs := document.Fields(engine, r.Pages)
		for _, fl := range fs {
			if fl.Page < 1 || fl.Page > len(r.Pages) || fl.Start < 0 || fl.End < fl.Start || fl.End > len(r.Pages[fl.Page-1].Text) {
				t.Fatalf("field %+v outside its page", fl)
			}
		}
	})
}

// FuzzFields checks field extraction on arbitrary text: spans inside the text, values valid
// UTF-8 when the text is.
func FuzzFields(f *testing.F) {
	f.Add(documenttest.Invoice)
	f.Add("Dear Mr. John Smith,\nPhone: 020 7946 0018")
	f.Add("Total: EUR 1.785,00\nDate: 31/12/2024")
	f.Fuzz(func(t *testing.T, text string) {
		pages := []document.Page{{Number: 1, Text: text, Method: document.MethodText, Confidence: 1}}
		for _, fl := range document.Fields(engine, pages) {
			if fl.Start < 0 || fl.End < fl.Start || fl.End > len(text) {
				t.Fatalf("field %+v outside the text", fl)
			}
			if utf8.ValidString(text) && !utf8.ValidString(fl.Value) {
				t.Fatalf("field %+v is not valid UTF-8", fl)
			}
		}
		document.Classify(text)
	})
}
