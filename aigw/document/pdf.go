package document

import (
	"bytes"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"

	"github.com/ledongthuc/pdf"
)

// ---- inspection ----

// pdfPages counts a PDF's pages, refusing corrupt and password-protected files.
func (e *Extractor) pdfPages(ctx context.Context, data []byte) (n int, sizes []pageSize, err error) {
	defer func() {
		if x := recover(); x != nil { // the pure-Go reader panics on malformed objects
			n, sizes, err = 0, nil, fmt.Errorf("%w: malformed PDF: %v", ErrCorrupt, x)
		}
	}()
	if e.pdftotext != "" {
		sizes, err := e.pdfinfo(ctx, data)
		if err != nil {
			return 0, nil, err
		}
		return len(sizes), sizes, nil
	}
	r, err := openPDF(data)
	if err != nil {
		return 0, nil, err
	}
	if n = r.NumPage(); n <= 0 {
		return 0, nil, fmt.Errorf("%w: the PDF has no pages", ErrEmpty)
	}
	return n, nil, nil
}

// openPDF opens a PDF with the pure-Go reader. An owner password alone (permissions) does not
// stop it; a user password does.
func openPDF(data []byte) (r *pdf.Reader, err error) {
	defer func() {
		if x := recover(); x != nil {
			r, err = nil, fmt.Errorf("%w: malformed PDF: %v", ErrCorrupt, x)
		}
	}()
	r, err = pdf.NewReader(bytes.NewReader(data), int64(len(data)))
	switch {
	case errors.Is(err, pdf.ErrInvalidPassword):
		return nil, fmt.Errorf("%w: the PDF is protected by a password", ErrEncrypted)
	case err != nil && strings.Contains(err.Error(), "encrypt"):
		return nil, fmt.Errorf("%w: %v", ErrEncrypted, err)
	case err != nil:
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return r, nil
}

// pageSize is a page's size in points, from pdfinfo.
type pageSize struct{ w, h float64 }

var pdfinfoPage = regexp.MustCompile(`(?m)^Page\s+(\d+) size:\s+([\d.]+) x ([\d.]+) pts`)

// withFile writes data to a private temporary file for the poppler tools.
func withFile[T any](data []byte, f func(path string) (T, error)) (T, error) {
	var zero T
	tmp, err := os.CreateTemp("", "edgewan-doc-*.pdf")
	if err != nil {
		return zero, fmt.Errorf("document: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return zero, fmt.Errorf("document: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return zero, fmt.Errorf("document: %w", err)
	}
	return f(tmp.Name())
}

// pdfinfo returns every page's size, or why poppler cannot open the file.
func (e *Extractor) pdfinfo(ctx context.Context, data []byte) ([]pageSize, error) {
	return withFile(data, func(path string) ([]pageSize, error) {
		out, stderr, err := e.run(ctx, e.infoBin, "-f", "1", "-l", strconv.Itoa(e.o.MaxPages+1), path)
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("document: pdfinfo: %w", ctx.Err())
			}
			msg := firstLine(stderr, err)
			if strings.Contains(msg, "password") {
				return nil, fmt.Errorf("%w: the PDF is protected by a password", ErrEncrypted)
			}
			return nil, fmt.Errorf("%w: %s", ErrCorrupt, msg)
		}
		var sizes []pageSize
		for _, m := range pdfinfoPage.FindAllStringSubmatch(out, -1) {
			w, _ := strconv.ParseFloat(m[2], 64)
			h, _ := strconv.ParseFloat(m[3], 64)
			sizes = append(sizes, pageSize{w, h})
		}
		if len(sizes) == 0 {
			if n := pdfinfoCount(out); n > 0 {
				return make([]pageSize, n), nil // sizes unknown: render at the default DPI
			}
			return nil, fmt.Errorf("%w: the PDF has no pages", ErrEmpty)
		}
		if n := pdfinfoCount(out); n > len(sizes) {
			sizes = append(sizes, make([]pageSize, n-len(sizes))...)
		}
		return sizes, nil
	})
}

var pdfinfoPages = regexp.MustCompile(`(?m)^Pages:\s+(\d+)`)

func pdfinfoCount(out string) int {
	if m := pdfinfoPages.FindStringSubmatch(out); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 0
}

// run runs an external tool with the per-command timeout.
func (e *Extractor) run(ctx context.Context, bin string, args ...string) (string, string, error) {
	b, stderr, err := e.runBytes(ctx, nil, bin, args...)
	return string(b), stderr, err
}

func (e *Extractor) runBytes(ctx context.Context, stdin []byte, bin string, args ...string) ([]byte, string, error) {
	ctx, cancel := context.WithTimeout(ctx, e.o.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err := cmd.Run()
	return out.Bytes(), stderr.String(), err
}

// ---- extraction ----

// pdf extracts every page: the text layer, or OCR for a page without one.
func (e *Extractor) pdf(ctx context.Context, data []byte, info *Info) ([]Page, error) {
	if e.pdftotext != "" {
		return e.pdfPoppler(ctx, data, info.sizes)
	}
	return e.pdfGo(ctx, data)
}

// pdfPoppler reads the text layer with pdftotext and renders pages without one with pdftoppm
// for tesseract.
func (e *Extractor) pdfPoppler(ctx context.Context, data []byte, sizes []pageSize) ([]Page, error) {
	if len(sizes) == 0 { // not inspected with poppler
		var err error
		if sizes, err = e.pdfinfo(ctx, data); err != nil {
			return nil, err
		}
	}
	goReader, _ := openPDF(data) // to read scans' resolution; poppler does without it
	return withFile(data, func(path string) ([]Page, error) {
		out, stderr, err := e.run(ctx, e.pdftotext, "-layout", "-enc", "UTF-8", "-f", "1", "-l", strconv.Itoa(len(sizes)), path, "-")
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("document: pdftotext: %w", ctx.Err())
			}
			return nil, fmt.Errorf("%w: %s", ErrCorrupt, firstLine(stderr, err))
		}
		texts := strings.Split(out, "\f") // pdftotext ends every page with a form feed
		pages := make([]Page, len(sizes))
		for i := range sizes {
			t := ""
			if i < len(texts) {
				t = cleanLayout(texts[i])
			}
			pages[i] = Page{Number: i + 1, Text: t, Method: MethodPDFToText, Confidence: 1}
			if strings.TrimSpace(t) != "" {
				continue
			}
			if e.tesseract == "" {
				return nil, fmt.Errorf("%w: page %d is a scan (no text layer) and tesseract is not installed", ErrNoOCR, i+1)
			}
			dpi := renderDPI(sizes[i], scanDPI(goReader, i+1, sizes[i], e.o.DPI), e.o.MaxPixels)
			// pdftoppm cannot write a PNG to stdout: render beside the PDF (same private file name).
			root := path + ".page"
			_, stderr, err := e.run(ctx, e.pdftoppm, "-r", strconv.Itoa(dpi), "-f", strconv.Itoa(i+1), "-l", strconv.Itoa(i+1), "-gray", "-png", "-singlefile", path, root)
			img, rerr := os.ReadFile(root + ".png")
			os.Remove(root + ".png")
			if err != nil || rerr != nil {
				if ctx.Err() != nil {
					return nil, fmt.Errorf("document: pdftoppm: %w", ctx.Err())
				}
				if err == nil {
					err = rerr
				}
				return nil, fmt.Errorf("%w: page %d cannot be rendered: %s", ErrCorrupt, i+1, firstLine(stderr, err))
			}
			ocr, err := e.ocr(ctx, img)
			if err != nil {
				return nil, err
			}
			pages[i] = Page{Number: i + 1, Text: ocr[0].Text, Method: MethodOCR, Confidence: ocr[0].Confidence}
		}
		return pages, nil
	})
}

// scanDPI is the resolution to render a scanned page at: its largest image's own resolution
// (rendering above it only makes tesseract read more pixels of the same detail, about 2.5 times
// slower at 300 DPI for a 200 DPI scan), between 150 and dpi; dpi when it cannot tell.
func scanDPI(r *pdf.Reader, page int, size pageSize, dpi int) (d int) {
	if r == nil || size.w <= 0 {
		return dpi
	}
	defer func() {
		if recover() != nil {
			d = dpi
		}
	}()
	xobjs := r.Page(page).Resources().Key("XObject")
	var widest int64
	for _, name := range xobjs.Keys() {
		x := xobjs.Key(name)
		if x.Key("Subtype").Name() == "Image" {
			widest = max(widest, x.Key("Width").Int64())
		}
	}
	if widest == 0 {
		return dpi
	}
	own := int(math.Round(float64(widest) / (size.w / 72)))
	return min(max(own, 150), dpi)
}

// renderDPI lowers the resolution of a large page so its rendering stays within maxPixels.
func renderDPI(s pageSize, dpi int, maxPixels int64) int {
	if s.w <= 0 || s.h <= 0 {
		return dpi
	}
	px := s.w * s.h * float64(dpi) * float64(dpi) / (72 * 72)
	if px <= float64(maxPixels) {
		return dpi
	}
	d := int(72 * math.Sqrt(float64(maxPixels)/(s.w*s.h)))
	return max(d, 1)
}

// cleanLayout trims the trailing spaces -layout leaves and collapses its wide column gaps
// to three spaces (still a column break for the field rules, which read "label   value").
func cleanLayout(t string) string {
	lines := strings.Split(t, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(wideGap.ReplaceAllString(l, "   "), " \t")
	}
	return strings.Trim(strings.Join(lines, "\n"), "\n")
}

var wideGap = regexp.MustCompile(` {4,}`)

// pdfGo reads the text layer with the pure-Go reader and OCRs the images of pages without one.
func (e *Extractor) pdfGo(ctx context.Context, data []byte) (pages []Page, err error) {
	r, err := openPDF(data)
	if err != nil {
		return nil, err
	}
	defer func() {
		if x := recover(); x != nil {
			pages, err = nil, fmt.Errorf("%w: malformed PDF: %v", ErrCorrupt, x)
		}
	}()
	n := r.NumPage()
	for i := 1; i <= n; i++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p := r.Page(i)
		text, err := pageText(p)
		if err != nil {
			if !r.Trailer().Key("Encrypt").IsNull() {
				// The pure-Go reader decrypts only some encryption schemes; poppler reads them all.
				return nil, fmt.Errorf("%w: the PDF is encrypted in a way the pure-Go reader cannot decrypt (page %d: %v); install poppler-utils", ErrEncrypted, i, err)
			}
			return nil, fmt.Errorf("%w: page %d: %v", ErrCorrupt, i, err)
		}
		if strings.TrimSpace(text) != "" {
			pages = append(pages, Page{Number: i, Text: text, Method: MethodPDFGo, Confidence: 1})
			continue
		}
		imgs, err := pageImages(p, data, e.o.MaxPixels)
		if err != nil {
			return nil, fmt.Errorf("page %d: %w", i, err)
		}
		pg := Page{Number: i, Method: MethodPDFGo, Confidence: 1}
		if len(imgs) > 0 {
			if e.tesseract == "" {
				return nil, fmt.Errorf("%w: page %d is a scan (no text layer) and tesseract is not installed", ErrNoOCR, i)
			}
			var texts []string
			var conf float64
			for _, img := range imgs {
				ocr, err := e.ocr(ctx, img)
				if err != nil {
					return nil, err
				}
				texts = append(texts, ocr[0].Text)
				conf += ocr[0].Confidence
			}
			pg = Page{Number: i, Text: strings.Join(texts, "\n\n"), Method: MethodOCR, Confidence: round2(conf / float64(len(imgs)))}
		}
		pages = append(pages, pg)
	}
	return pages, nil
}

// pageText joins the page's text runs row by row (top to bottom), runs of a row by position.
func pageText(p pdf.Page) (string, error) {
	text, err := p.GetPlainText(nil)
	if err != nil {
		return "", err
	}
	lines := strings.Split(text, "\n")
	out := lines[:0]
	for _, l := range lines {
		if l = strings.TrimRight(l, " \t"); strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n"), nil
}

var streamOffset = regexp.MustCompile(`@(\d+)$`)

// pageImages returns the page's image XObjects as files tesseract reads: JPEG as they are,
// Flate-compressed samples re-encoded as PNG.
func pageImages(p pdf.Page, data []byte, maxPixels int64) ([][]byte, error) {
	xobjs := p.Resources().Key("XObject")
	var out [][]byte
	for _, name := range xobjs.Keys() {
		x := xobjs.Key(name)
		if x.Key("Subtype").Name() != "Image" {
			continue
		}
		w, h := x.Key("Width").Int64(), x.Key("Height").Int64()
		if w <= 0 || h <= 0 {
			continue
		}
		if w*h > maxPixels {
			return nil, fmt.Errorf("%w: an image of %dx%d pixels; the limit is %d pixels", ErrTooLarge, w, h, maxPixels)
		}
		m := streamOffset.FindStringSubmatch(x.String())
		if m == nil {
			continue
		}
		off, _ := strconv.ParseInt(m[1], 10, 64)
		n := x.Key("Length").Int64()
		if off < 0 || n <= 0 || off+n > int64(len(data)) {
			return nil, fmt.Errorf("%w: an image stream outside the file", ErrCorrupt)
		}
		raw := data[off : off+n]
		filter := x.Key("Filter")
		if filter.Kind() == pdf.Array && filter.Len() == 1 {
			filter = filter.Index(0)
		}
		switch filter.Name() {
		case "DCTDecode":
			out = append(out, raw)
		case "FlateDecode", "":
			img, err := flateImage(x, raw, int(w), int(h))
			if err != nil {
				return nil, fmt.Errorf("%w: image %s: %v", ErrCorrupt, name, err)
			}
			out = append(out, img)
		default:
			return nil, fmt.Errorf("%w: a scanned page's image uses the %s filter, which the pure-Go reader cannot decode (install poppler-utils)", ErrUnsupported, filter.Name())
		}
	}
	return out, nil
}

// flateImage decodes an 8-bit gray or RGB image stream (PNG predictors included) to a PNG.
func flateImage(x pdf.Value, raw []byte, w, h int) ([]byte, error) {
	if bpc := x.Key("BitsPerComponent").Int64(); bpc != 8 {
		return nil, fmt.Errorf("%d bits per component (only 8 is supported)", bpc)
	}
	colors := 1
	switch cs := x.Key("ColorSpace"); cs.Name() {
	case "DeviceGray":
	case "DeviceRGB":
		colors = 3
	default:
		if cs.Kind() == pdf.Array && cs.Index(0).Name() == "ICCBased" {
			colors = int(cs.Index(1).Key("N").Int64())
		} else {
			return nil, fmt.Errorf("color space %v is not supported", cs)
		}
	}
	if colors != 1 && colors != 3 {
		return nil, fmt.Errorf("%d color components are not supported", colors)
	}
	var samples []byte
	if x.Key("Filter").IsNull() {
		samples = raw
	} else {
		zr, err := zlib.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, err
		}
		if samples, err = io.ReadAll(io.LimitReader(zr, int64(w*h*colors+h)+1)); err != nil {
			return nil, err
		}
	}
	stride := w * colors
	parms := x.Key("DecodeParms")
	if parms.Kind() == pdf.Array && parms.Len() == 1 {
		parms = parms.Index(0)
	}
	if pred := parms.Key("Predictor").Int64(); pred >= 10 {
		var err error
		if samples, err = unpredictPNG(samples, stride, colors, h); err != nil {
			return nil, err
		}
	}
	if len(samples) < stride*h {
		return nil, fmt.Errorf("%d bytes of samples for %dx%d", len(samples), w, h)
	}
	var img image.Image
	if colors == 1 {
		img = &image.Gray{Pix: samples[:stride*h], Stride: stride, Rect: image.Rect(0, 0, w, h)}
	} else {
		g := image.NewGray(image.Rect(0, 0, w, h)) // tesseract reads gray as well and it is smaller
		for y := 0; y < h; y++ {
			for xx := 0; xx < w; xx++ {
				o := y*stride + xx*3
				g.SetGray(xx, y, color.GrayModel.Convert(color.RGBA{samples[o], samples[o+1], samples[o+2], 255}).(color.Gray))
			}
		}
		img = g
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// unpredictPNG undoes PNG row filters (each row starts with its filter type byte).
func unpredictPNG(in []byte, stride, bpp, h int) ([]byte, error) {
	out := make([]byte, stride*h)
	prev := make([]byte, stride)
	for y := 0; y < h; y++ {
		o := y * (stride + 1)
		if o+stride+1 > len(in) {
			return nil, fmt.Errorf("truncated image data at row %d", y)
		}
		ft, row := in[o], in[o+1:o+1+stride]
		cur := out[y*stride : (y+1)*stride]
		for i := 0; i < stride; i++ {
			var a, c byte
			if i >= bpp {
				a, c = cur[i-bpp], prev[i-bpp]
			}
			b := prev[i]
			switch ft {
			case 0:
				cur[i] = row[i]
			case 1:
				cur[i] = row[i] + a
			case 2:
				cur[i] = row[i] + b
			case 3:
				cur[i] = row[i] + byte((int(a)+int(b))/2)
			case 4:
				cur[i] = row[i] + paeth(a, b, c)
			default:
				return nil, fmt.Errorf("unknown PNG filter %d", ft)
			}
		}
		prev = cur
	}
	return out, nil
}

func paeth(a, b, c byte) byte {
	p := int(a) + int(b) - int(c)
	pa, pb, pc := abs(p-int(a)), abs(p-int(b)), abs(p-int(c))
	switch {
	case pa <= pb && pa <= pc:
		return a
	case pb <= pc:
		return b
	}
	return c
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
