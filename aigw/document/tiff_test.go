package document_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/edgewan/edgewan/aigw/document"
	"github.com/edgewan/edgewan/aigw/document/documenttest"
)

// TestMultiPageTIFF: a TIFF's images are its pages, counted against MaxPages before any OCR.
func TestMultiPageTIFF(t *testing.T) {
	data := documenttest.MultiTIFF(t, "Invoice number: INV-7", 3)
	x := extractors(t, document.Options{})["poppler"]
	r, err := x.Extract(context.Background(), data)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Pages) != 3 || r.Info.Pages != 3 {
		t.Fatalf("got %d pages (info %d); want 3", len(r.Pages), r.Info.Pages)
	}
	for _, p := range r.Pages {
		if !strings.Contains(p.Text, "INV-7") {
			t.Errorf("page %d: %q", p.Number, p.Text)
		}
	}
	small := extractors(t, document.Options{MaxPages: 2})["poppler"]
	if _, err := small.Extract(context.Background(), data); !errors.Is(err, document.ErrTooLarge) || !strings.Contains(err.Error(), "3 pages") {
		t.Fatalf("over MaxPages: %v", err)
	}
}
