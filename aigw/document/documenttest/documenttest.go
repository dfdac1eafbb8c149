// Package documenttest makes documents for tests: text PDFs, scanned PDFs (a rendered page image
// and no text layer), images, encrypted and corrupt files, all generated in the test process.
package documenttest

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/jpeg"
	"image/png"
	"strings"
	"testing"

	"github.com/go-pdf/fpdf"
	"golang.org/x/image/font"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/math/fixed"
	"golang.org/x/image/tiff"
)

// TextPDF returns a PDF with a text layer: one page per element of pages, one line per line.
func TextPDF(t testing.TB, pages ...string) []byte {
	t.Helper()
	f := fpdf.New("P", "mm", "A4", "")
	f.SetFont("Helvetica", "", 12)
	tr := f.UnicodeTranslatorFromDescriptor("") // cp1252: € and accents
	for _, p := range pages {
		f.AddPage()
		for _, line := range strings.Split(p, "\n") {
			f.CellFormat(0, 7, tr(line), "", 1, "L", false, 0, "")
		}
	}
	return output(t, f)
}

// EncryptedPDF returns a text PDF that opens only with a user password.
func EncryptedPDF(t testing.TB, text string) []byte {
	t.Helper()
	f := fpdf.New("P", "mm", "A4", "")
	f.SetProtection(fpdf.CnProtectPrint, "user-secret", "owner-secret")
	f.SetFont("Helvetica", "", 12)
	f.AddPage()
	f.CellFormat(0, 7, text, "", 1, "L", false, 0, "")
	return output(t, f)
}

// BlankPDF returns a PDF whose pages have neither text nor images.
func BlankPDF(t testing.TB, pages int) []byte {
	t.Helper()
	f := fpdf.New("P", "mm", "A4", "")
	for range pages {
		f.AddPage()
	}
	return output(t, f)
}

// ScannedPDF returns a PDF of scans: each page is an image of the text (PNG, or JPEG with
// jpg), with no text layer.
func ScannedPDF(t testing.TB, jpg bool, pages ...string) []byte {
	t.Helper()
	f := fpdf.New("P", "mm", "A4", "")
	for i, p := range pages {
		f.AddPage()
		img := Render(t, p)
		var buf bytes.Buffer
		typ := "PNG"
		if jpg {
			typ = "JPG"
			if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90}); err != nil {
				t.Fatal(err)
			}
		} else if err := png.Encode(&buf, img); err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("scan%d", i)
		f.RegisterImageOptionsReader(name, fpdf.ImageOptions{ImageType: typ}, &buf)
		f.ImageOptions(name, 0, 0, 210, 297, false, fpdf.ImageOptions{ImageType: typ}, 0, "")
	}
	return output(t, f)
}

func output(t testing.TB, f *fpdf.Fpdf) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := f.Output(&buf); err != nil {
		t.Fatalf("documenttest: writing the PDF: %v", err)
	}
	return buf.Bytes()
}

// Page size of rendered scans: A4 at 200 DPI.
const (
	ScanWidth  = 1654
	ScanHeight = 2339
)

// Render draws text in black on a white A4 page at 200 DPI, in Go Regular at a size
// tesseract reads reliably (about 12 pt).
func Render(t testing.TB, text string) *image.Gray {
	t.Helper()
	ft, err := opentype.Parse(goregular.TTF)
	if err != nil {
		t.Fatal(err)
	}
	face, err := opentype.NewFace(ft, &opentype.FaceOptions{Size: 34, DPI: 72, Hinting: font.HintingFull})
	if err != nil {
		t.Fatal(err)
	}
	defer face.Close()
	img := image.NewGray(image.Rect(0, 0, ScanWidth, ScanHeight))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
	d := &font.Drawer{Dst: img, Src: image.NewUniform(color.Black), Face: face}
	y := 160
	for _, line := range strings.Split(text, "\n") {
		d.Dot = fixed.P(140, y)
		d.DrawString(line)
		y += 52
	}
	return img
}

// PNG returns the rendered text as a PNG.
func PNG(t testing.TB, text string) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, Render(t, text)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// JPEG returns the rendered text as a JPEG.
func JPEG(t testing.TB, text string) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, Render(t, text), &jpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TIFF returns the rendered text as a TIFF.
func TIFF(t testing.TB, text string) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := tiff.Encode(&buf, Render(t, text), &tiff.Options{Compression: tiff.Deflate}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// HugePNG returns a small file declaring w x h pixels of a single colour (compressed well), to
// test pixel limits.
func HugePNG(t testing.TB, w, h int) []byte {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, w, h))
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Corrupt returns a PDF cut in half.
func Corrupt(t testing.TB) []byte {
	t.Helper()
	pdf := TextPDF(t, "Invoice INV-1")
	return pdf[:len(pdf)/2]
}

// Invoice is the text of the labelled invoice the tests upload, and its fields.
const Invoice = `ACME Supplies Ltd
INVOICE
Invoice number: INV-2024-0042
Invoice date: 2024-03-15
Due date: 2024-04-14
Bill to: Jane Doe
Email: jane.doe@example.com
Phone: +1 415 555 0100
Subtotal: 1,000.00
VAT: 234.56
Total due: USD 1,234.56
Payment terms: 30 days`

// MixedPDF returns a PDF whose first page has a text layer and whose second is a scan.
func MixedPDF(t testing.TB, textPage, scanPage string) []byte {
	t.Helper()
	f := fpdf.New("P", "mm", "A4", "")
	f.SetFont("Helvetica", "", 12)
	f.AddPage()
	for _, line := range strings.Split(textPage, "\n") {
		f.CellFormat(0, 7, line, "", 1, "L", false, 0, "")
	}
	f.AddPage()
	var buf bytes.Buffer
	if err := png.Encode(&buf, Render(t, scanPage)); err != nil {
		t.Fatal(err)
	}
	f.RegisterImageOptionsReader("scan", fpdf.ImageOptions{ImageType: "PNG"}, &buf)
	f.ImageOptions("scan", 0, 0, 210, 297, false, fpdf.ImageOptions{ImageType: "PNG"}, 0, "")
	return output(t, f)
}

// PermissionsPDF returns a text PDF encrypted with an owner password only (no user password):
// it restricts printing, and opens without a password.
func PermissionsPDF(t testing.TB, text string) []byte {
	t.Helper()
	f := fpdf.New("P", "mm", "A4", "")
	f.SetProtection(fpdf.CnProtectCopy, "", "owner-secret")
	f.SetFont("Helvetica", "", 12)
	f.AddPage()
	f.CellFormat(0, 7, text, "", 1, "L", false, 0, "")
	return output(t, f)
}

// MultiTIFF returns a TIFF of n copies of the rendered text: TIFF's chain of images, the first
// image's IFD pointing to the next (the x/image encoder writes single images; the chain is
// made by hand).
func MultiTIFF(t testing.TB, text string, n int) []byte {
	t.Helper()
	one := TIFF(t, text)
	// Copies of one single-image TIFF appended: each copy's offsets are moved by its position
	// in the file, and each image's "next IFD" pointer goes to the next copy's.
	out := append([]byte(nil), one...)
	firstIFD := int(le32(one[4:8]))
	prevNext := firstIFD + 2 + 12*int(le16(one[firstIFD:]))
	for i := 1; i < n; i++ {
		base := len(out)
		cp := append([]byte(nil), one...)
		rebase(cp, firstIFD, uint32(base))
		out = append(out, cp...)
		putLE32(out[prevNext:], uint32(base+firstIFD))
		prevNext = base + firstIFD + 2 + 12*int(le16(one[firstIFD:]))
	}
	return out
}

func le16(b []byte) uint16 { return uint16(b[0]) | uint16(b[1])<<8 }
func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}
func putLE32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}

// rebase adds base to the offsets of an IFD's entries that point into the file (LONG values
// of StripOffsets, and values too big to sit in the entry).
func rebase(b []byte, ifd int, base uint32) {
	n := int(le16(b[ifd:]))
	for i := 0; i < n; i++ {
		e := ifd + 2 + 12*i
		tag, typ, count := le16(b[e:]), le16(b[e+2:]), le32(b[e+4:])
		size := map[uint16]uint32{1: 1, 2: 1, 3: 2, 4: 4, 5: 8}[typ] * count
		switch {
		case tag == 273 && count == 1 && typ == 4: // StripOffsets, inline
			putLE32(b[e+8:], le32(b[e+8:])+base)
		case size > 4: // the values sit elsewhere in the file
			off := le32(b[e+8:])
			if tag == 273 && typ == 4 { // StripOffsets: each value is an offset
				for j := uint32(0); j < count; j++ {
					putLE32(b[off+4*j:], le32(b[off+4*j:])+base)
				}
			}
			putLE32(b[e+8:], off+base)
		}
	}
	putLE32(b[ifd+2+12*n:], 0)
}
