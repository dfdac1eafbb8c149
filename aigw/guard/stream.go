package guard

import (
	"bytes"
	"strings"
	"unicode/utf8"
	"unsafe"

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
// reports that an output block rule fired: stop the stream and send nothing more. Not safe
// for concurrent use.
//
// Text in which no entity can start whatever follows (detect.Engine.SafePrefix) is emitted at
// once, unless the policy has output block rules, which must see text before it leaves; the
// rest waits for the window.
//
// What it guarantees (README.md, Streaming, has the reasoning and the measurements):
//   - Always: text is emitted only when SafePrefix showed that no entity starts in it, or after
//     a scan of it together with at least the following window bytes (or the end of its line,
//     or of the stream) and up to streamContext bytes of what preceded it; an entity that scan
//     finds is emitted replaced and whole, or held back, never cut. Pieces of valid UTF-8 end on rune boundaries. The pieces are the
//     response with the stream's Redactions applied (FuzzStream).
//   - Equality: the concatenated pieces equal Session.Output on the whole response, with the
//     same redactions, placeholders and numbering, whenever each entity's extent and score
//     depend only on the text from streamContext bytes before it to window bytes after its
//     start (TestStreamMatchesOutput: random responses of all entity types split at random
//     byte offsets). The detectors' context windows (48 bytes before, 24 after, neither
//     crossing a line break) and longest fixed-shape entities (a spaced IBAN, 42 bytes) fit.
//   - Where that locality fails (contrived input), an entity the whole text reveals but the
//     window does not can be emitted unredacted; FuzzStream checks that none did in its
//     corpus.
type StreamRedactor struct {
	s       *Session
	window  int
	redact  bool // apply entity actions (Output.SkipEntities not set)
	block   bool // apply block rules (Output.Block)
	early   bool // emit text in which no entity can start before the window passes it (not with block)
	buf     []byte
	base    int // stream offset of buf[0]
	emitted int // buf index of the first byte not yet emitted
	tried   int // stream offset of the boundary of the last scan
	// Tracked as chunks arrive (stream offsets), so a Write costs O(chunk), not O(held text).
	runStart int // just after the last white space byte: where the last word starts
	lineEnd  int // just after the last line break
	pemStart int // an unterminated "-----BEGIN " marker; -1 if none
	reds     []Redaction
	findings []Finding
	blocked  bool
	closed   bool
}

// Stream starts redacting a streamed response in this session.
func (s *Session) Stream() *StreamRedactor {
	o := s.g.policy.Output
	return &StreamRedactor{s: s, window: o.StreamWindow, redact: !o.SkipEntities, block: o.Block,
		early: !o.SkipEntities && !o.Block, tried: -1, pemStart: -1}
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
	old := len(r.buf)
	r.buf = append(r.buf, chunk...)
	r.track(old)
	p, force := r.boundary()
	q := r.emitted // early emission: no entity starts before q
	if r.early && !force {
		q = r.safePrefix()
	}
	if q > r.emitted && q >= p {
		return r.emitPlain(q)
	}
	if p <= r.emitted {
		return ""
	}
	at := r.base + p
	if at < r.tried+streamStep && r.buf[p-1] != '\n' && !force {
		if q > r.emitted { // the scan waits; what cannot hold an entity need not
			return r.emitPlain(q)
		}
		return ""
	}
	r.tried = at
	out := r.commit(p, false, force)
	if r.early && !force {
		// The scan may have moved past a held entity: what follows it can go now too.
		if q := r.safePrefix(); q > r.emitted {
			out += r.emitPlain(q)
		}
	}
	return out
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

var (
	pemBegin = []byte("-----BEGIN ")
	pemEnd   = []byte("-----END ")
)

// track updates runStart, lineEnd and pemStart for the bytes appended at buf[old:]. Markers
// split across chunks are found by starting the search a marker's length before old.
func (r *StreamRedactor) track(old int) {
	buf := r.buf
	for i := old; i < len(buf); i++ {
		if c := buf[i]; isSpace(c) {
			r.runStart = r.base + i + 1
			if c == '\n' {
				r.lineEnd = r.base + i + 1
			}
		}
	}
	pos := max(r.emitted, old-len(pemBegin)+1)
	for pos < len(buf) {
		if r.pemStart < 0 {
			i := bytes.Index(buf[pos:], pemBegin)
			if i < 0 {
				return
			}
			r.pemStart = r.base + pos + i
			pos += i + len(pemBegin)
		}
		from := max(pos, r.pemStart-r.base+len(pemBegin), old-len(pemEnd)+1)
		i := bytes.Index(buf[from:], pemEnd)
		if i < 0 {
			return
		}
		r.pemStart = -1
		pos = from + i + len(pemEnd)
	}
}

// boundary returns the buf index up to which text may be emitted before the scan looks at
// entities: window bytes before the end, or just after the last line break if that is later
// (no entity or context window crosses a line break, except private key blocks, held below),
// moved back to fall between words; never inside the last whitespace-free run (a token, URL
// or e-mail address still arriving) nor after an unterminated "-----BEGIN " marker. force is
// set when the held text exceeds streamMaxHold and these holds were overridden.
func (r *StreamRedactor) boundary() (int, bool) {
	buf := r.buf
	n := len(buf)
	p := max(n-r.window, r.lineEnd-r.base)
	// Cut between words, so that the next scan sees whole words (unless the word is long).
	for k := 0; k < streamMaxWord && p > r.emitted && p < n && !isSpace(buf[p-1]) && !isSpace(buf[p]); k++ {
		p--
	}
	hold := r.runStart - r.base
	if r.pemStart >= 0 {
		hold = min(hold, r.pemStart-r.base)
	}
	force := false
	if hold < p {
		if n-r.emitted > streamMaxHold {
			force = true
			r.pemStart = -1 // not a key block after all, or too long to hold: give up on it
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

// safePrefix returns the buf index up to which no entity can start in the pending text,
// whatever follows (detect.Engine.SafePrefix), reading the same context as a scan.
func (r *StreamRedactor) safePrefix() int {
	if r.runStart-r.base <= r.emitted {
		return r.emitted // no complete word pending
	}
	lo := r.scanStart()
	// The engine only reads the text during the call, and buf does not change meanwhile, so a
	// string sharing buf's bytes saves copying the pending text at every Write.
	text := unsafe.String(unsafe.SliceData(r.buf[lo:]), len(r.buf)-lo)
	return lo + r.s.g.engine.SafePrefix(text, r.emitted-lo)
}

// emitPlain emits buf[emitted:p], which holds no entity (safePrefix), without a scan.
func (r *StreamRedactor) emitPlain(p int) string {
	out := string(r.buf[r.emitted:p])
	r.advance(p)
	return out
}

// scanStart returns where a scan of the pending text starts: up to streamContext bytes before
// it, at a word start.
func (r *StreamRedactor) scanStart() int {
	lo := max(0, r.emitted-streamContext)
	if lo > 0 {
		if i := bytes.IndexAny(r.buf[lo:r.emitted], " \t\n\r"); i >= 0 {
			lo += i + 1
		}
	}
	return lo
}

// advance marks buf[:p] emitted and drops what no later scan needs.
func (r *StreamRedactor) advance(p int) {
	r.emitted = p
	// Keep streamContext bytes of emitted text for the next scan; drop the rest.
	if drop := r.emitted - streamContext; drop > 0 {
		n := copy(r.buf, r.buf[drop:])
		r.buf = r.buf[:n]
		r.base += drop
		r.emitted -= drop
	}
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// commit scans the held text with its context, applies the block rules, and emits the text
// up to p (buf index), moved back before any entity that crosses it unless final or force.
func (r *StreamRedactor) commit(p int, final, force bool) string {
	lo := r.scanStart()
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
	r.advance(lo + pp)
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
