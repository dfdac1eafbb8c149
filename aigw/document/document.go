// Package document turns an uploaded document (PDF, image or plain text) into text, page by
// page, and finds structured fields in it. PDF text comes from poppler's pdftotext when it is
// installed and from a pure-Go reader otherwise; images and PDF pages without a text layer go
// through the tesseract CLI. Field extraction (fields.go) is pure.
package document

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
	"unicode/utf8"
)

// Errors the gateway maps to statuses: ErrTooLarge 413, ErrUnsupported 415, the others 422.
// Extract wraps them with what exactly was wrong.
var (
	ErrTooLarge    = errors.New("document too large")
	ErrUnsupported = errors.New("unsupported document type")
	ErrCorrupt     = errors.New("corrupt document")
	ErrEncrypted   = errors.New("encrypted document")
	ErrEmpty       = errors.New("empty document")
	ErrNoOCR       = errors.New("OCR is not available")
)

// Kinds of documents.
const (
	KindPDF   = "pdf"
	KindImage = "image"
	KindText  = "text"
)

// Methods that produced a page's text.
const (
	MethodPDFToText = "pdftotext" // poppler
	MethodPDFGo     = "pdf-go"    // the pure-Go reader
	MethodOCR       = "ocr"       // tesseract
	MethodText      = "text"      // the file is text
)

// Options configure an Extractor. Zero values mean the defaults.
type Options struct {
	// Tesseract is the tesseract binary; empty looks it up on PATH. Without it images and
	// scanned pages are refused with ErrNoOCR.
	Tesseract string
	// PDFToText is poppler's pdftotext; empty looks it up on PATH, "-" disables poppler (the
	// pure-Go reader is then used). pdftoppm and pdfinfo are looked up beside it.
	PDFToText string
	Lang      string        // tesseract language; default "eng"
	MaxBytes  int64         // default 20 MiB
	MaxPages  int           // default 100
	MaxPixels int64         // per image or rendered page; default 40 million
	DPI       int           // resolution scanned PDF pages are rendered at; default 300
	Timeout   time.Duration // per external command (one page's OCR); default 2 minutes
}

// Defaults.
const (
	DefaultMaxBytes  = 20 << 20
	DefaultMaxPages  = 100
	DefaultMaxPixels = 40_000_000
	DefaultDPI       = 300
)

// Extractor extracts text from documents. It is safe for concurrent use.
type Extractor struct {
	o         Options
	tesseract string
	pdftotext string
	pdftoppm  string
	infoBin   string
}

// New returns an Extractor, resolving the external tools once.
func New(o Options) *Extractor {
	if o.Lang == "" {
		o.Lang = "eng"
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxPages <= 0 {
		o.MaxPages = DefaultMaxPages
	}
	if o.MaxPixels <= 0 {
		o.MaxPixels = DefaultMaxPixels
	}
	if o.DPI <= 0 {
		o.DPI = DefaultDPI
	}
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Minute
	}
	e := &Extractor{o: o}
	e.tesseract = lookPath(o.Tesseract, "tesseract")
	if o.PDFToText != "-" {
		e.pdftotext = lookPath(o.PDFToText, "pdftotext")
		if e.pdftotext != "" {
			dir := e.pdftotext[:strings.LastIndexByte(e.pdftotext, '/')+1]
			e.pdftoppm = lookPath(dir+"pdftoppm", "pdftoppm")
			e.infoBin = lookPath(dir+"pdfinfo", "pdfinfo")
			if e.pdftoppm == "" || e.infoBin == "" {
				e.pdftotext = "" // a partial poppler: use the pure-Go reader
			}
		}
	}
	return e
}

func lookPath(given, name string) string {
	if given != "" {
		if p, err := exec.LookPath(given); err == nil {
			return p
		}
		return ""
	}
	p, _ := exec.LookPath(name)
	return p
}

// OCR reports whether tesseract is available.
func (e *Extractor) OCR() bool { return e.tesseract != "" }

// Poppler reports whether PDFs are read with poppler (pdftotext) rather than the pure-Go reader.
func (e *Extractor) Poppler() bool { return e.pdftotext != "" }

// MaxBytes is the largest document accepted.
func (e *Extractor) MaxBytes() int64 { return e.o.MaxBytes }

// Info is what Inspect learns cheaply, before extraction.
type Info struct {
	Kind        string `json:"kind"`         // pdf, image, text
	ContentType string `json:"content_type"` // as sniffed: application/pdf, image/png, image/jpeg, image/tiff, text/plain
	Pages       int    `json:"pages"`

	sizes []pageSize // PDF page sizes, when poppler read them
}

// Page is one page's text.
type Page struct {
	Number     int     `json:"page"` // from 1
	Text       string  `json:"text"`
	Method     string  `json:"method"`     // pdftotext, pdf-go, ocr, text
	Confidence float64 `json:"confidence"` // 0-1: tesseract's mean word confidence for OCR, 1 for a text layer
}

// Result is an extracted document.
type Result struct {
	Info
	Pages []Page `json:"pages"`
}

// Text is the whole document's text, pages separated by form feeds.
func (r *Result) Text() string {
	parts := make([]string, len(r.Pages))
	for i, p := range r.Pages {
		parts[i] = p.Text
	}
	return strings.Join(parts, "\f")
}

// Sniff tells the document's kind from its first bytes (never from a file name or a client's
// Content-Type).
func Sniff(data []byte) (kind, contentType string, err error) {
	switch {
	case len(data) == 0:
		return "", "", fmt.Errorf("%w: the file has no bytes", ErrEmpty)
	case bytes.HasPrefix(data, []byte("%PDF-")):
		return KindPDF, "application/pdf", nil
	case bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")):
		return KindImage, "image/png", nil
	case bytes.HasPrefix(data, []byte("\xff\xd8\xff")):
		return KindImage, "image/jpeg", nil
	case bytes.HasPrefix(data, []byte("II*\x00")), bytes.HasPrefix(data, []byte("MM\x00*")):
		return KindImage, "image/tiff", nil
	}
	// Text: valid UTF-8 (a BOM allowed), no NUL and few control characters.
	d := bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if !utf8.Valid(d) || bytes.IndexByte(d, 0) >= 0 {
		return "", "", fmt.Errorf("%w: not a PDF, PNG, JPEG, TIFF or UTF-8 text file", ErrUnsupported)
	}
	ctrl := 0
	for _, c := range d {
		if c < 0x20 && c != '\n' && c != '\r' && c != '\t' && c != '\f' {
			ctrl++
		}
	}
	if ctrl > len(d)/100+1 {
		return "", "", fmt.Errorf("%w: binary data that is not a PDF, PNG, JPEG or TIFF", ErrUnsupported)
	}
	return KindText, "text/plain", nil
}

// Inspect checks a document against the limits and tells its kind and page count without
// extracting it: corrupt, encrypted, empty and oversize documents fail here, quickly.
func (e *Extractor) Inspect(ctx context.Context, data []byte) (*Info, error) {
	if int64(len(data)) > e.o.MaxBytes {
		return nil, fmt.Errorf("%w: the file is %d bytes; the limit is %d", ErrTooLarge, len(data), e.o.MaxBytes)
	}
	kind, ct, err := Sniff(data)
	if err != nil {
		return nil, err
	}
	info := &Info{Kind: kind, ContentType: ct, Pages: 1}
	switch kind {
	case KindText:
		if strings.TrimSpace(string(data)) == "" {
			return nil, fmt.Errorf("%w: the text file holds only white space", ErrEmpty)
		}
	case KindImage:
		if e.tesseract == "" {
			return nil, fmt.Errorf("%w: images need tesseract on the controller", ErrNoOCR)
		}
		if info.Pages, err = e.checkImage(data, ct); err != nil {
			return nil, err
		}
	case KindPDF:
		if info.Pages, info.sizes, err = e.pdfPages(ctx, data); err != nil {
			return nil, err
		}
	}
	if info.Pages > e.o.MaxPages {
		return nil, fmt.Errorf("%w: %d pages; the limit is %d", ErrTooLarge, info.Pages, e.o.MaxPages)
	}
	return info, nil
}

// Extract returns the document's text page by page. A document whose pages hold no text at
// all is ErrEmpty.
func (e *Extractor) Extract(ctx context.Context, data []byte) (*Result, error) {
	info, err := e.Inspect(ctx, data)
	if err != nil {
		return nil, err
	}
	return e.ExtractInspected(ctx, data, info)
}

// ExtractInspected is Extract for a document Inspect has just checked (it is not checked again).
func (e *Extractor) ExtractInspected(ctx context.Context, data []byte, info *Info) (*Result, error) {
	var err error
	r := &Result{Info: *info}
	switch info.Kind {
	case KindText:
		text := strings.ReplaceAll(string(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))), "\r\n", "\n")
		for i, t := range strings.Split(text, "\f") {
			r.Pages = append(r.Pages, Page{Number: i + 1, Text: t, Method: MethodText, Confidence: 1})
		}
		r.Info.Pages = len(r.Pages)
	case KindImage:
		pages, err := e.ocr(ctx, data)
		if err != nil {
			return nil, err
		}
		r.Pages = pages
		r.Info.Pages = len(pages)
	case KindPDF:
		if r.Pages, err = e.pdf(ctx, data, info); err != nil {
			return nil, err
		}
	}
	empty := true
	for _, p := range r.Pages {
		if strings.TrimSpace(p.Text) != "" {
			empty = false
		}
	}
	if empty {
		return nil, fmt.Errorf("%w: no text found in %d page(s)", ErrEmpty, len(r.Pages))
	}
	return r, nil
}
