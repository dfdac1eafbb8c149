package guard

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"github.com/edgewan/edgewan/aigw/detect"
)

// Stream tuning. See README.md, Streaming.
const (
	// streamContext is how much already emitted text each scan sees before the pending text,
	// for context words, greetings and signature lines (the detectors look at most 48 bytes
	// back).
	streamContext = 128
	// streamStep: a new scan is tried only when the boundary has moved this many bytes since
	// the last try, or reached a line break, so tiny chunks do not each cost a scan.
	streamStep = 16
	// streamMaxHold caps the text held back by an unfinished token or private key block;
	// beyond it the text is emitted, and an entity cut there is replaced in pieces (never
	// emitted as it is).
	streamMaxHold = 64 << 10
	// streamMaxWord: a boundary moves back at most this far to fall between two words.
	streamMaxWord = 64
)

// StreamRedactor applies a session's output checks to a streamed response. Write returns the
// part of the text received so far that is safe to send; it holds back a tail that could
// still be, or change, an entity. Flush returns the rest at the end of the stream. Blocked
// reports that an output block rule fired: stop the stream and send nothing more.
//
// Guarantee (tested by TestStreamMatchesOutput and FuzzStream):
//   - No byte of an entity that a scan of the held-back window finds is ever emitted as it
//     is: an entity is emitted replaced, whole, or held back.
//   - Pieces end on UTF-8 rune boundaries (of valid text).
//   - The concatenated pieces equal Session.Output on the whole response (same text,
//     placeholders, numbering and redactions) when every entity's extent and score depend
//     only on the text from streamContext bytes before it to its end plus the window's
//     remainder; that holds for every entity the detectors find except in contrived input.
//     Where it fails, the difference is over-redaction of a fragment, or, in the worst case,
//     an entity that only the full text reveals (for example a name recognised through a
//     greeting more than streamContext bytes earlier).
type StreamRedactor struct {
	s        *Session
	window   int
	redact   bool // apply entity actions (Output.SkipEntities not set)
	block    bool // apply block rules (Output.Block)
	buf      []byte
	base     int // stream offset of buf[0]
	emitted  int // buf index of the first byte not yet emitted
	tried    int // stream offset of the boundary of the last scan
	reds     []Redaction
	findings []Finding
	blocked  bool
	closed   bool
}

// Stream starts redacting a streamed response in this session.
func (s *Session) Stream() *StreamRedactor {
	o := s.g.policy.Output
	return &StreamRedactor{s: s, window: o.StreamWindow, redact: !o.SkipEntities, block: o.Block, tried: -1}
}

// Write adds a chunk of the response and returns the text that is safe to send now (possibly
// empty). After Blocked or Flush it returns "".
func (r *StreamRedactor) Write(chunk string) string {
	if r.blocked || r.closed {
		return ""
	}
	if r.tooLarge(len(chunk)) {
		return ""
	}
	if !r.redact && !r.block {
		return chunk
	}
	r.buf = append(r.buf, chunk...)
	p, force := r.boundary()
	if p <= r.emitted {
		return ""
	}
	at := r.base + p
	if at < r.tried+streamStep && r.buf[p-1] != '\n' && !force {
		return ""
	}
	r.tried = at
	return r.commit(p, false, force)
}

// Flush ends the stream and returns the rest of the text, checked.
func (r *StreamRedactor) Flush() string {
	if r.blocked || r.closed {
		return ""
	}
	r.closed = true
	if r.emitted == len(r.buf) {
		return ""
	}
	return r.commit(len(r.buf), true, false)
}

// Blocked reports whether an output block rule fired; the stream must stop.
func (r *StreamRedactor) Blocked() bool { return r.blocked }

// Findings returns the block rules that fired.
func (r *StreamRedactor) Findings() []Finding { return r.findings }

// Redactions returns the entities replaced so far, with offsets in the whole stream.
func (r *StreamRedactor) Redactions() []Redaction { return r.reds }

func (r *StreamRedactor) tooLarge(n int) bool {
	s := r.s
	s.outBytes += n
	if limit := s.g.policy.Output.MaxOutputBytes; limit > 0 && s.outBytes > limit {
		r.blocked = true
		r.findings = append(r.findings, tooLarge("max_output_bytes", "output", s.outBytes, limit).Findings...)
		return true
	}
	return false
}

// boundary returns the buf index up to which text may be emitted before the scan looks at
// entities: window bytes before the end, or just after the last line break if that is later
// (no entity or context window crosses a line break, except private key blocks, held below);
// never inside the last whitespace-free run (a token, URL or e-mail address still arriving)
// nor after an unterminated "-----BEGIN " line. force is set when the held text exceeds
// streamMaxHold and these holds were overridden.
func (r *StreamRedactor) boundary() (int, bool) {
	buf := r.buf
	n := len(buf)
	p := n - r.window
	if nl := bytes.LastIndexByte(buf[r.emitted:], '\n'); nl >= 0 {
		p = max(p, r.emitted+nl+1)
	}
	hold := n
	for hold > r.emitted && !isSpace(buf[hold-1]) {
		hold--
	}
	if i := bytes.LastIndex(buf[r.emitted:], []byte("-----BEGIN ")); i >= 0 &&
		!bytes.Contains(buf[r.emitted+i:], []byte("-----END ")) {
		hold = min(hold, r.emitted+i)
	}
	// Cut between words, so that the next scan sees whole words (unless the word is long).
	for k := 0; k < streamMaxWord && p > r.emitted && p < n && !isSpace(buf[p-1]) && !isSpace(buf[p]); k++ {
		p--
	}
	force := false
	if hold < p {
		if n-r.emitted > streamMaxHold {
			force = true
		} else {
			p = hold
		}
	}
	// End on a rune boundary (at most 3 bytes back; invalid bytes count as runes).
	for k := 0; k < 3 && p > r.emitted && p < n && !utf8.RuneStart(buf[p]); k++ {
		p--
	}
	return p, force
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// commit scans the held text with its context, applies the block rules, and emits the text
// up to p (buf index), moved back before any entity that crosses it unless final or force.
func (r *StreamRedactor) commit(p int, final, force bool) string {
	// The scan starts up to streamContext bytes before the pending text, at a word start.
	lo := max(0, r.emitted-streamContext)
	if lo > 0 {
		if i := bytes.IndexAny(r.buf[lo:r.emitted], " \t\n\r"); i >= 0 {
			lo += i + 1
		}
	}
	text := string(r.buf[lo:])
	em, pp := r.emitted-lo, p-lo
	var ents []detect.Entity
	if r.redact {
		ents = r.s.scan(text)
	}
	if !final && !force {
		for _, e := range ents {
			if e.Start < pp && e.End > pp {
				pp = e.Start
				break
			}
			if e.Start >= pp {
				break
			}
		}
	}
	if r.block && r.checkBlock(text, ents, em, lo) {
		return ""
	}
	if pp <= em {
		return ""
	}
	var out strings.Builder
	out.Grow(pp - em + 16)
	last := em
	for _, e := range ents {
		if e.End <= em || e.Start >= pp {
			continue
		}
		// A piece of an entity: its start was emitted before the scan could see it whole
		// (contrived input), or the hold limit cut it. Replace the piece.
		piece := e
		piece.Start, piece.End = max(e.Start, em), min(e.End, pp)
		red, _ := r.s.redact(e, r.base+lo)
		red.Start, red.End = r.base+lo+piece.Start, r.base+lo+piece.End
		if red.Action == ActionMask && (piece.Start != e.Start || piece.End != e.End) {
			red.Replacement = mask(e.Type, e.Subtype, text[piece.Start:piece.End])
		}
		out.WriteString(text[last:piece.Start])
		if red.Action == ActionAllow {
			out.WriteString(text[piece.Start:piece.End])
		} else {
			out.WriteString(red.Replacement)
		}
		r.reds = append(r.reds, red)
		last = piece.End
	}
	out.WriteString(text[last:pp])
	r.emitted = lo + pp
	// Keep streamContext bytes of emitted text for the next scan; drop the rest.
	if drop := r.emitted - streamContext; drop > 0 {
		n := copy(r.buf, r.buf[drop:])
		r.buf = r.buf[:n]
		r.base += drop
		r.emitted -= drop
	}
	return out.String()
}

// checkBlock applies the output block rules to the scanned text and reports whether the
// stream is now blocked. Entities already emitted (before em) were checked by earlier scans.
func (r *StreamRedactor) checkBlock(text string, ents []detect.Entity, em, lo int) bool {
	var hits []entityHit
	for _, e := range ents {
		if e.End > em && r.s.g.action(e.Type) == ActionBlock {
			hits = appendHit(hits, Redaction{Type: e.Type, Start: r.base + lo + e.Start, End: r.base + lo + e.End}, true)
		}
	}
	findings := appendEntityFindings(nil, hits)
	findings = r.s.g.blockRules(text, r.base+lo, findings)
	if len(findings) == 0 {
		return false
	}
	r.blocked = true
	r.findings = append(r.findings, findings...)
	return true
}
