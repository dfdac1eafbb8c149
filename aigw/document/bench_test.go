package document_test

import (
	"context"
	"strings"
	"testing"

	"github.com/edgewan/edgewan/aigw/document"
	"github.com/edgewan/edgewan/aigw/document/documenttest"
)

// benchPages is how many pages the text-PDF benchmarks read per operation.
const benchPages = 10

func benchExtract(b *testing.B, x *document.Extractor, data []byte, pages int) {
	b.Helper()
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for b.Loop() {
		r, err := x.Extract(context.Background(), data)
		if err != nil || len(r.Pages) != pages {
			b.Fatalf("Extract: %v", err)
		}
	}
	b.ReportMetric(float64(pages*b.N)/b.Elapsed().Seconds(), "pages/s")
}

// BenchmarkTextPDF reads a 10-page text PDF: poppler (pdftotext; pdfinfo first) and the pure-Go reader.
func BenchmarkTextPDF(b *testing.B) {
	pages := make([]string, benchPages)
	for i := range pages {
		pages[i] = documenttest.Invoice + "\n" + strings.Repeat("Line item: widget, 2 x 10.00 = 20.00\n", 20)
	}
	data := documenttest.TextPDF(b, pages...)
	for path, x := range extractors(b, document.Options{}) {
		b.Run(path, func(b *testing.B) { benchExtract(b, x, data, benchPages) })
	}
}

// BenchmarkOCRPage reads one scanned page (A4 at 200 DPI): as a PNG image, and as a scanned PDF
// through each PDF path (poppler renders it at 300 DPI; the pure-Go path passes the embedded
// image to tesseract).
func BenchmarkOCRPage(b *testing.B) {
	xs := extractors(b, document.Options{})
	b.Run("png", func(b *testing.B) { benchExtract(b, xs["poppler"], documenttest.PNG(b, documenttest.Invoice), 1) })
	scan := documenttest.ScannedPDF(b, false, documenttest.Invoice)
	for path, x := range xs {
		b.Run("pdf/"+path, func(b *testing.B) { benchExtract(b, x, scan, 1) })
	}
}

// BenchmarkFields is field extraction and type guessing on an extracted invoice page.
func BenchmarkFields(b *testing.B) {
	pages := []document.Page{{Number: 1, Text: documenttest.Invoice, Method: document.MethodText, Confidence: 1}}
	b.SetBytes(int64(len(documenttest.Invoice)))
	for b.Loop() {
		document.Fields(engine, pages)
		document.Classify(documenttest.Invoice)
	}
}
