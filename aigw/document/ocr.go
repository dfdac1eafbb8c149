package document

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"image"
	_ "image/jpeg" // DecodeConfig of scans
	_ "image/png"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"golang.org/x/image/tiff"
)

// checkImage checks an image's dimensions against MaxPixels without decoding it, and returns
// its page count (TIFFs may hold several; only the first's size is checked here, tesseract
// reads them all and pages are counted after).
func (e *Extractor) checkImage(data []byte, contentType string) (int, error) {
	var cfg image.Config
	var err error
	if contentType == "image/tiff" {
		cfg, err = tiff.DecodeConfig(bytes.NewReader(data))
	} else {
		cfg, _, err = image.DecodeConfig(bytes.NewReader(data))
	}
	if err != nil {
		return 0, fmt.Errorf("%w: %s: %v", ErrCorrupt, contentType, err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return 0, fmt.Errorf("%w: %s of %dx%d pixels", ErrEmpty, contentType, cfg.Width, cfg.Height)
	}
	if px := int64(cfg.Width) * int64(cfg.Height); px > e.o.MaxPixels {
		return 0, fmt.Errorf("%w: the image is %dx%d pixels (%d); the limit is %d pixels", ErrTooLarge, cfg.Width, cfg.Height, px, e.o.MaxPixels)
	}
	if contentType == "image/tiff" {
		return tiffPages(data, e.o.MaxPages+1), nil
	}
	return 1, nil
}

// tiffPages counts a TIFF's images (its chain of IFDs), stopping at limit, at a loop or at a
// broken link.
func tiffPages(data []byte, limit int) int {
	if len(data) < 8 {
		return 1
	}
	var u16 func([]byte) uint16
	var u32 func([]byte) uint32
	if data[0] == 'I' {
		u16, u32 = binary.LittleEndian.Uint16, binary.LittleEndian.Uint32
	} else {
		u16, u32 = binary.BigEndian.Uint16, binary.BigEndian.Uint32
	}
	seen := map[uint32]bool{}
	n := 0
	for off := u32(data[4:8]); off != 0 && n < limit && !seen[off]; n++ {
		seen[off] = true
		if int(off)+2 > len(data) {
			break
		}
		entries := int(u16(data[off:]))
		next := int(off) + 2 + 12*entries
		if next+4 > len(data) {
			n++
			break
		}
		off = u32(data[next:])
	}
	return max(n, 1)
}

// ocr runs tesseract on an image (PNG, JPEG, TIFF; several pages for a multi-page TIFF) and
// returns one Page per image page, with tesseract's mean word confidence.
func (e *Extractor) ocr(ctx context.Context, img []byte) ([]Page, error) {
	if e.tesseract == "" {
		return nil, fmt.Errorf("%w: tesseract is not installed on the controller", ErrNoOCR)
	}
	ctx, cancel := context.WithTimeout(ctx, e.o.Timeout)
	defer cancel()
	// tesseract reads the image from stdin and writes TSV (words with their confidence and
	// layout numbers) to stdout; one thread, as the machine is shared with the API.
	cmd := exec.CommandContext(ctx, e.tesseract, "stdin", "stdout", "-l", e.o.Lang, "--psm", "3", "tsv")
	cmd.Stdin = bytes.NewReader(img)
	cmd.Env = append(os.Environ(), "OMP_THREAD_LIMIT=1")
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("document: OCR: %w", ctx.Err())
		}
		return nil, fmt.Errorf("%w: the image cannot be read (truncated or damaged?): tesseract: %s", ErrCorrupt, firstLine(stderr.String(), err))
	}
	return parseTSV(out.String()), nil
}

func firstLine(s string, err error) string {
	s = strings.TrimSpace(s)
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "Estimating resolution") && !strings.HasPrefix(l, "Warning") {
			return l
		}
	}
	return err.Error()
}

// parseTSV rebuilds text from tesseract's TSV: words joined by spaces within a line, lines by
// newlines, paragraphs and blocks by a blank line; pages by page_num.
func parseTSV(tsv string) []Page {
	type key struct{ block, par, line int }
	var pages []Page
	var b strings.Builder
	var last key
	page, words := 0, 0
	var confSum float64
	flush := func() {
		if page == 0 {
			return
		}
		conf := 0.0
		if words > 0 {
			conf = confSum / float64(words) / 100
		}
		pages = append(pages, Page{Number: page, Text: b.String(), Method: MethodOCR, Confidence: round2(conf)})
		b.Reset()
		words, confSum = 0, 0
	}
	for i, line := range strings.Split(tsv, "\n") {
		f := strings.Split(line, "\t")
		if i == 0 || len(f) < 12 {
			continue
		}
		level, _ := strconv.Atoi(f[0])
		pg, _ := strconv.Atoi(f[1])
		if pg != page {
			flush()
			page, last = pg, key{}
		}
		if level != 5 { // words only
			continue
		}
		text := strings.TrimSpace(f[11])
		conf, err := strconv.ParseFloat(f[10], 64)
		if text == "" || err != nil || conf < 0 {
			continue
		}
		k := key{atoi(f[2]), atoi(f[3]), atoi(f[4])}
		switch {
		case b.Len() == 0:
		case k.block != last.block || k.par != last.par:
			b.WriteString("\n\n")
		case k.line != last.line:
			b.WriteByte('\n')
		default:
			b.WriteByte(' ')
		}
		b.WriteString(ocrDashes.Replace(text))
		last = k
		words++
		confSum += conf
	}
	flush()
	if len(pages) == 0 {
		pages = []Page{{Number: 1, Method: MethodOCR}}
	}
	return pages
}

// ocrDashes folds the dashes tesseract reads in hyphens ("INV-—2024") into one hyphen.
var ocrDashes = strings.NewReplacer("-—", "-", "—-", "-", "-–", "-", "–-", "-", "—", "-", "–", "-")

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

func round2(f float64) float64 { return float64(int(f*100+0.5)) / 100 }
