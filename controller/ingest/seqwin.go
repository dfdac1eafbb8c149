package ingest

import (
	"math/bits"
	"time"
)

// seqWindowBits is how many sequences above the contiguous mark a site remembers as seen: as
// many as the agent keeps sent and unconfirmed (its maxUnconfirmed), so that an agent behaving
// as specified never overflows it. 128 bytes per site.
const seqWindowBits = 1024

// seqWindow is which of a device's sequence numbers the engine has taken: every one up to
// mark, and those set in bits above it (bit i is mark+1+i). The stored watermark is built from
// mark, the highest contiguous sequence, not from the highest seen: a message the broker
// acknowledged and lost in the middle (NATS 2.9 around a node's death) keeps the watermark
// below it, so the agent keeps it and sends it again, and the hole is filled.
type seqWindow struct {
	mark   uint64
	newest uint64 // the highest taken (>= mark)
	bits   [seqWindowBits / 64]uint64
}

// What take says of a sequence.
type seqVerdict int

const (
	seqNew       seqVerdict = iota // above everything taken: a current message
	seqGap                         // fills a hole below the newest: history only (late)
	seqDuplicate                   // taken before
	seqTooFar                      // beyond the window: refused, the agent sends it again later
)

// reset forgets everything above mark (a start, a new device, a site taken over).
func (w *seqWindow) reset(mark uint64) {
	*w = seqWindow{mark: mark, newest: mark}
}

// take records seq as taken, if it is new, and advances the mark over what is contiguous.
func (w *seqWindow) take(seq uint64) seqVerdict {
	if seq <= w.mark {
		return seqDuplicate
	}
	off := seq - w.mark - 1
	if off >= seqWindowBits {
		return seqTooFar
	}
	word, bit := off/64, uint64(1)<<(off%64)
	if w.bits[word]&bit != 0 {
		return seqDuplicate
	}
	w.bits[word] |= bit
	v := seqNew
	if seq < w.newest {
		v = seqGap
	}
	w.newest = max(w.newest, seq)
	w.advance()
	return v
}

// advance moves the mark over the run of taken sequences just above it.
func (w *seqWindow) advance() {
	n := uint64(bits.TrailingZeros64(^w.bits[0]))
	if n == 0 {
		return
	}
	if n == 64 { // a whole word: count the run word by word
		for n < seqWindowBits && w.bits[n/64] == ^uint64(0) {
			n += 64
		}
		if n < seqWindowBits {
			n += uint64(bits.TrailingZeros64(^w.bits[n/64]))
		}
	}
	w.shift(n)
}

// shift drops the n lowest bits (n >= 1), raising the mark by n.
func (w *seqWindow) shift(n uint64) {
	w.mark += n
	if n >= seqWindowBits {
		clear(w.bits[:])
		return
	}
	words, r := int(n/64), n%64
	const nw = seqWindowBits / 64
	for i := range nw {
		var v uint64
		if j := i + words; j < nw {
			v = w.bits[j] >> r
			if r != 0 && j+1 < nw {
				v |= w.bits[j+1] << (64 - r)
			}
		}
		w.bits[i] = v
	}
}

// untake gives back a taken sequence whose handling failed (the time-series write did not
// happen): the mark drops below it, so the watermark cannot cover it, the agent keeps it and
// sends it again (a stalled watermark), and that copy is taken as a gap. Sequences taken
// above it stay taken, except those pushed out of the top of the window by the drop (more
// than seqWindowBits above the new mark): taken again if they come again (a duplicate
// history point, never a loss).
func (w *seqWindow) untake(seq uint64) {
	if seq == 0 {
		return
	}
	if seq > w.mark {
		if off := seq - w.mark - 1; off < seqWindowBits {
			w.bits[off/64] &^= 1 << (off % 64)
		}
		return
	}
	k := w.mark - seq + 1 // seq is the new bit 0 (not taken); seq+1..mark are bits 1..k-1
	old := w.bits
	clear(w.bits[:])
	for i := uint64(1); i < min(k, seqWindowBits); i++ {
		w.bits[i/64] |= 1 << (i % 64)
	}
	for j := uint64(0); j+k < seqWindowBits; j++ {
		if old[j/64]&(1<<(j%64)) != 0 {
			w.bits[(j+k)/64] |= 1 << ((j + k) % 64)
		}
	}
	w.mark = seq - 1
}

// skipTo declares every sequence below held abandoned (the agent no longer holds it, so it
// will never come) and raises the mark to held-1, then over what is contiguous. It returns how
// many sequences in that range had not been taken.
func (w *seqWindow) skipTo(held uint64) (abandoned uint64) {
	if held <= w.mark+1 {
		return 0
	}
	n := held - 1 - w.mark
	for off := uint64(0); off < min(n, seqWindowBits); off++ {
		if w.bits[off/64]&(1<<(off%64)) == 0 {
			abandoned++
		}
	}
	if n > seqWindowBits {
		abandoned += n - seqWindowBits
	}
	w.shift(n)
	w.newest = max(w.newest, w.mark)
	w.advance()
	return abandoned
}

// legacy takes seq from an agent that does not say which sequences it still holds (an agent
// older than the contiguous watermark): as before, a message vouches for everything below it,
// so the mark follows the highest sequence, and one at or below it is a duplicate.
func (w *seqWindow) legacy(seq uint64) seqVerdict {
	if seq <= w.newest {
		return seqDuplicate
	}
	w.skipTo(seq)
	return w.take(seq)
}

// seen reports whether seq was taken (a duplicate), without taking it.
func (w *seqWindow) seen(seq uint64) bool {
	if seq <= w.mark {
		return true
	}
	off := seq - w.mark - 1
	return off < seqWindowBits && w.bits[off/64]&(1<<(off%64)) != 0
}

// takeSeq takes a message's sequence for st (called with st.mu held). held is the oldest
// sequence the agent still holds, as its reports say (0 for other messages, and for agents
// older than the contiguous watermark, which are taken as before: see seqWindow.legacy).
// Everything below held that was never seen here will not come: it is declared abandoned,
// counted and logged, unless the site has just become this engine's (resyncTill), when the
// agent's previous owner stored it (the agent deletes only what a watermark covered).
func (e *Engine) takeSeq(st *site, seq, held uint64, now time.Time) seqVerdict {
	if held == 0 {
		return st.win.legacy(seq)
	}
	if from := st.win.mark; held > from+1 {
		if n := st.win.skipTo(held); n > 0 && !now.Before(st.resyncTill) {
			e.m.abandoned.Add(float64(n))
			e.o.Logger.Warn("ingest: sequences the agent no longer holds were never received; given up",
				"site", st.id, "device", st.device, "from", from+1, "to", held-1, "missing", n)
		}
	}
	return st.win.take(seq)
}

// takeOther takes the sequence of an agent event or policy acknowledgement (0 from agents
// older than the contiguous watermark: not tracked) and reports whether to handle it; the
// caller then calls handled. A duplicate, or one beyond the window, is refused (counted).
func (e *Engine) takeOther(st *site, seq uint64) bool {
	if seq == 0 {
		st.mu.Lock()
		st.busy++
		st.mu.Unlock()
		return true
	}
	st.mu.Lock()
	v := st.win.take(seq)
	e.noteHole(st, e.o.Now())
	ok := v == seqNew || v == seqGap
	if ok {
		st.busy++
	}
	st.mu.Unlock()
	if !ok {
		e.m.rejected.WithLabelValues(rejectReason(v)).Inc()
	}
	return ok
}

// handled ends the handling of a taken message: once nothing is being handled, the
// contiguous mark is safe for the watermark.
func (e *Engine) handled(st *site) {
	st.mu.Lock()
	st.busy--
	if st.busy == 0 {
		st.safe = st.win.mark
	}
	st.mu.Unlock()
}

func rejectReason(v seqVerdict) string {
	if v == seqTooFar {
		return "window_full"
	}
	return "duplicate"
}

// hole returns the lowest run of sequences not taken below a taken one: from is mark+1, to the
// sequence just below the lowest taken above the mark. ok is false when nothing is taken above
// the mark (no hole: the agent has simply not sent more yet).
func (w *seqWindow) hole() (from, to uint64, ok bool) {
	if w.newest <= w.mark {
		return 0, 0, false
	}
	for i, word := range w.bits {
		if word != 0 {
			return w.mark + 1, w.mark + uint64(i*64+bits.TrailingZeros64(word)), true
		}
	}
	return 0, 0, false // newest above the window's top after a skip: nothing taken in it
}
