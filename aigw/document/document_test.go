package document_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/edgewan/edgewan/aigw/detect"
	"github.com/edgewan/edgewan/aigw/document"
	"github.com/edgewan/edgewan/aigw/document/documenttest"
)

// extractors returns the two PDF paths: poppler (pdftotext, pdftoppm) and the pure-Go reader.
// Both need tesseract: its absence fails the test (scripts/ocr.sh install), it does not skip.
func extractors(t testing.TB, o document.Options) map[string]*document.Extractor {
	t.Helper()
	pop := document.New(o)
	o.PDFToText = "-"
	goOnly := document.New(o)
	if !pop.OCR() {
		t.Fatal("tesseract is not installed: run scripts/ocr.sh install")
	}
	if !pop.Poppler() {
		t.Fatal("poppler's pdftotext/pdftoppm/pdfinfo are not installed: run scripts/ocr.sh install")
	}
	if goOnly.Poppler() {
		t.Fatal(`PDFToText "-" did not disable poppler`)
	}
	return map[string]*document.Extractor{"poppler": pop, "pure-go": goOnly}
}

var engine = func() *detect.Engine {
	e, err := detect.New(detect.Options{})
	if err != nil {
		panic(err)
	}
	return e
}()

func fieldMap(fs []document.Field) map[string]string {
	m := map[string]string{}
	for _, f := range fs {
		v := f.Value
		if f.Normalized != "" {
			v = f.Normalized
		}
		if _, ok := m[f.Name]; !ok {
			m[f.Name] = v
		}
	}
	return m
}

// invoiceFields are the fields of documenttest.Invoice that must come back exactly.
var invoiceFields = map[string]string{
	"invoice_number": "INV-2024-0042",
	"date":           "2024-03-15",
	"due_date":       "2024-04-14",
	"person":         "Jane Doe",
	"email":          "jane.doe@example.com",
	"phone":          "+1 415 555 0100",
	"subtotal":       "1000.00",
	"tax":            "234.56",
	"total":          "1234.56",
	"currency":       "USD",
}

func TestExtract(t *testing.T) {
	inv := documenttest.Invoice
	second := "Page two\nInvoice number: INV-2024-0042\nNotes: thank you"
	for path, x := range extractors(t, document.Options{}) {
		for _, tc := range []struct {
			name    string
			data    []byte
			kind    string
			methods []string // per page
		}{
			{"text PDF", documenttest.TextPDF(t, inv), document.KindPDF, []string{map[string]string{"poppler": document.MethodPDFToText, "pure-go": document.MethodPDFGo}[path]}},
			{"scanned PDF (PNG)", documenttest.ScannedPDF(t, false, inv), document.KindPDF, []string{document.MethodOCR}},
			{"scanned PDF (JPEG)", documenttest.ScannedPDF(t, true, inv), document.KindPDF, []string{document.MethodOCR}},
			{"PNG", documenttest.PNG(t, inv), document.KindImage, []string{document.MethodOCR}},
			{"JPEG", documenttest.JPEG(t, inv), document.KindImage, []string{document.MethodOCR}},
			{"TIFF", documenttest.TIFF(t, inv), document.KindImage, []string{document.MethodOCR}},
			{"text", []byte(inv + "\n"), document.KindText, []string{document.MethodText}},
		} {
			t.Run(path+"/"+tc.name, func(t *testing.T) {
				r, err := x.Extract(context.Background(), tc.data)
				if err != nil {
					t.Fatalf("Extract: %v", err)
				}
				if r.Kind != tc.kind || len(r.Pages) != len(tc.methods) {
					t.Fatalf("got kind %s with %d pages; want %s with %d", r.Kind, len(r.Pages), tc.kind, len(tc.methods))
				}
				for i, p := range r.Pages {
					if p.Method != tc.methods[i] || p.Number != i+1 {
						t.Errorf("page %d: method %s number %d; want %s", i+1, p.Method, p.Number, tc.methods[i])
					}
					if p.Confidence < 0.7 || p.Confidence > 1 {
						t.Errorf("page %d: confidence %.2f", i+1, p.Confidence)
					}
				}
				got := fieldMap(document.Fields(engine, r.Pages))
				for name, want := range invoiceFields {
					if got[name] != want {
						t.Errorf("field %s: got %q; want %q (text %q)", name, got[name], want, r.Text())
					}
				}
				if typ, conf := document.Classify(r.Text()); typ != document.TypeInvoice || conf < 0.5 {
					t.Errorf("Classify: got %s %.2f; want invoice", typ, conf)
				}
			})
		}
		t.Run(path+"/mixed PDF", func(t *testing.T) {
			// A text page followed by a scanned one: each page goes its own way.
			data := mixedPDF(t, inv, second)
			r, err := x.Extract(context.Background(), data)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Pages) != 2 || r.Pages[0].Method == document.MethodOCR || r.Pages[1].Method != document.MethodOCR {
				t.Fatalf("pages %+v; want a text page then an OCR page", r.Pages)
			}
			if !strings.Contains(r.Pages[1].Text, "INV-2024-0042") {
				t.Errorf("OCR of page 2: %q", r.Pages[1].Text)
			}
			for _, f := range document.Fields(engine, r.Pages) {
				if f.Name == "invoice_number" && f.Page == 2 && f.Value == "INV-2024-0042" {
					return
				}
			}
			t.Errorf("no invoice number found on page 2")
		})
	}
}

// mixedPDF is a text page then a scanned page.
func mixedPDF(t *testing.T, textPage, scanPage string) []byte {
	return documenttest.MixedPDF(t, textPage, scanPage)
}

func TestExtractErrors(t *testing.T) {
	for path, x := range extractors(t, document.Options{MaxBytes: 3 << 20, MaxPages: 3, MaxPixels: 10_000_000}) {
		for _, tc := range []struct {
			name string
			data []byte
			want error
			msg  string
		}{
			{"no bytes", nil, document.ErrEmpty, "no bytes"},
			{"white space", []byte(" \n\t \n"), document.ErrEmpty, "white space"},
			{"blank PDF", documenttest.BlankPDF(t, 2), document.ErrEmpty, "no text"},
			{"corrupt PDF", documenttest.Corrupt(t), document.ErrCorrupt, ""},
			{"PDF header only", []byte("%PDF-1.4\n%garbage\n"), document.ErrCorrupt, ""},
			{"encrypted PDF", documenttest.EncryptedPDF(t, "Invoice INV-1"), document.ErrEncrypted, "password"},
			{"corrupt PNG", documenttest.PNG(t, "x")[:40], document.ErrCorrupt, "cannot be read"},
			{"zip file", []byte("PK\x03\x04\x14\x00\x00\x00\x08\x00binary\x00\x01\x02"), document.ErrUnsupported, ""},
			{"over MaxBytes", append([]byte("%PDF-1.4\n"), bytes.Repeat([]byte("x"), 3<<20)...), document.ErrTooLarge, "limit is 3145728"},
			{"over MaxPages", documenttest.TextPDF(t, "a", "b", "c", "d"), document.ErrTooLarge, "4 pages; the limit is 3"},
			{"over MaxPixels", documenttest.HugePNG(t, 4000, 3000), document.ErrTooLarge, "4000x3000"},
		} {
			t.Run(path+"/"+tc.name, func(t *testing.T) {
				_, err := x.Extract(context.Background(), tc.data)
				if !errors.Is(err, tc.want) {
					t.Fatalf("got %v; want %v", err, tc.want)
				}
				if !strings.Contains(err.Error(), tc.msg) {
					t.Errorf("error %q does not say %q", err, tc.msg)
				}
			})
		}
	}
}

func TestOwnerPasswordOnlyIsRead(t *testing.T) {
	// Permissions without a user password: readers open it, and so do we.
	data := documenttest.PermissionsPDF(t, "Invoice number: INV-77")
	for path, x := range extractors(t, document.Options{}) {
		r, err := x.Extract(context.Background(), data)
		if path == "pure-go" && errors.Is(err, document.ErrEncrypted) && strings.Contains(err.Error(), "install poppler-utils") {
			continue // the pure-Go reader cannot decrypt fpdf's RC4; it says so
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if !strings.Contains(r.Text(), "INV-77") {
			t.Errorf("%s: text %q", path, r.Text())
		}
	}
}

func TestSniff(t *testing.T) {
	for _, tc := range []struct {
		data []byte
		kind string
		err  error
	}{
		{[]byte("%PDF-1.7\n"), document.KindPDF, nil},
		{[]byte("\x89PNG\r\n\x1a\n...."), document.KindImage, nil},
		{[]byte("\xff\xd8\xff\xe0"), document.KindImage, nil},
		{[]byte("II*\x00abc"), document.KindImage, nil},
		{[]byte("MM\x00*abc"), document.KindImage, nil},
		{[]byte("\xef\xbb\xbfhello"), document.KindText, nil},
		{[]byte("GIF89a\x01\x00"), "", document.ErrUnsupported},
		{[]byte{0xff, 0xfe, 0x00}, "", document.ErrUnsupported},
		{nil, "", document.ErrEmpty},
	} {
		kind, _, err := document.Sniff(tc.data)
		if kind != tc.kind || !errors.Is(err, tc.err) {
			t.Errorf("Sniff(%q): got %q, %v; want %q, %v", tc.data, kind, err, tc.kind, tc.err)
		}
	}
}
