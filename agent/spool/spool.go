// Package spool is the agent's durable, bounded, ordered on-disk queue of telemetry reports: the
// agent appends each report, a sender publishes the oldest and acknowledges them once the broker has.
//
// # On disk
//
// Options.Dir holds segment files, each named by the ID of its first record (20 digits), and
// one meta file:
//
//	00000000000000000001.seg   records 1 .. k
//	00000000000000000413.seg   records k+1 .. (the newest segment is the one appended to)
//	meta                       delivered-up-to ID, last assigned ID, dropped and corrupt counts, flags
//
// A segment is a sequence of records, each a 16-byte little-endian header then the payload:
//
//	offset 0   uint32  payload length (at most MaxRecordBytes)
//	offset 4   uint32  CRC-32C (Castagnoli) of bytes 0-3 and 8 to the end of the payload
//	offset 8   uint64  record ID
//	offset 16  payload (a JSON report)
//
// Append writes one record and fsyncs the segment; a new segment starts when the record would
// take the current one past Options.SegmentBytes. Ack replaces the meta file atomically (write
// meta.tmp, fsync, rename, fsync the directory) and deletes the segments it fully delivered,
// except the newest. The meta file is 44 bytes: "EWSPOOL1", uint64 ack, last, dropped, corrupt,
// and a CRC-32C of the rest; once the user set a flag (SetFlags), 52 bytes: "EWSPOOL2", the
// same four, uint64 flags, and the CRC-32C.
//
// IDs start at 1, grow by 1 per record and are never reused: after a restart the next ID follows
// the largest of the meta file's last ID, the IDs in the segments and the newest segment's name
// minus one. (A record torn by a crash was never reported appended, so its ID is given again.)
//
// Open checks every record. A torn tail (a frame cut short, a bad last frame, or zeros to the end
// of the file: a write interrupted by a crash) is truncated away. A bad frame with data after it
// is corruption: the records before it are kept, the rest of that segment is truncated, and
// Stats.Corrupt counts it; in the newest segment, the next ID then skips every ID the lost bytes
// could have held (one per 16 bytes), so that no ID is reused. Peek and Ack skip and count a bad
// frame found after Open the same way. Open never fails for the content of a segment.
//
// # Cap
//
// Undelivered data (frames, headers included) is capped at Options.MaxBytes. When an Append would
// go past it, the oldest segments are deleted whole, delivered or not, before the record is
// written, and their undelivered records are counted in Stats.Dropped (persisted in the meta file).
// The newest segment is never dropped, so the disk holds at most MaxBytes plus one partly delivered
// segment.
package spool

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// Defaults for Options fields left zero.
const (
	DefaultMaxBytes     = 64 << 20
	DefaultSegmentBytes = 1 << 20
)

// Options configures a Spool.
type Options struct {
	Dir          string // required; created with mode 0700 if missing
	MaxBytes     int64  // cap on undelivered data on disk; 0 means DefaultMaxBytes; at least SegmentBytes
	SegmentBytes int64  // size at which a new segment file starts; 0 means DefaultSegmentBytes
	NoSync       bool   // skip every fsync: for tests and benchmarks only
	// AckEvery bounds how often Ack writes the delivered position to disk: an Ack within
	// AckEvery of the last written one only moves it in memory (Close writes it). After a
	// crash at most AckEvery of delivered records are delivered again, which the controller
	// drops as duplicates; in exchange the steady state writes the meta file (two fsyncs and
	// a rename) once per AckEvery instead of once per batch, sparing CPU and flash. 0: every Ack.
	AckEvery time.Duration
}

// Record is one spooled report.
type Record struct {
	ID      uint64
	Payload []byte
}

// Stats describes the spool.
type Stats struct {
	Records int    // undelivered records
	Bytes   int64  // undelivered bytes on disk, frame headers included
	Acked   uint64 // every record with ID <= Acked is delivered or dropped
	LastID  uint64 // the last ID assigned, 0 if none ever was
	Dropped uint64 // records dropped by the cap, ever (persisted)
	Corrupt uint64 // corrupt regions skipped, ever (persisted); a torn tail after a crash is not one
}

// Errors returned by the Spool.
var (
	ErrTooLarge  = fmt.Errorf("spool: record larger than %d bytes", MaxRecordBytes)
	ErrClosed    = errors.New("spool: closed")
	ErrExhausted = errors.New("spool: record IDs exhausted")
)

// Spool is a durable queue of records. It is safe for concurrent use; the intended users are one
// appending goroutine and one sending goroutine.
type Spool struct {
	opt      Options
	dir      *os.File // for fsyncs of the directory
	metaPath string
	metaTmp  string
	ready    chan struct{}

	mu      sync.Mutex
	closed  bool
	segs    []*segment // oldest first; the last one is appended to
	rOff    int64      // offset in segs[0] of its first undelivered record
	rN      int        // records in segs[0] before rOff
	records int        // undelivered records
	bytes   int64      // undelivered bytes
	ack     uint64
	// ackWritten is when the meta file last recorded ack; ackDirty: ack moved since (AckEvery)
	ackWritten time.Time
	ackDirty   bool
	next       uint64 // the ID the next Append assigns; 0 once exhausted
	dropped    uint64
	corrupt    uint64
	flags      uint64

	pbuf   []byte // payload scratch for Append
	fbuf   []byte // frame scratch for Append
	rbuf   []byte // frames read by Peek
	hbuf   []byte // header scratch for Ack
	peeked []pos  // where the records of the last Peek end, to Ack without reading
}

// segment is one segment file.
type segment struct {
	first uint64 // ID in the file name
	last  uint64 // ID of the last record, 0 if none
	size  int64  // bytes of valid records
	n     int    // records
	path  string
	f     *os.File // nil until needed; read-write for the newest segment
}

// pos locates a record returned by Peek.
type pos struct {
	seg   uint64 // first ID of its segment
	id    uint64
	start int   // offset of its payload in rbuf
	plen  int   // payload length
	end   int64 // offset in the segment just after it
	n     int   // records in the segment up to and including it
}

// Open opens the spool in o.Dir, creating it if needed, and recovers its state from disk.
func Open(o Options) (*Spool, error) {
	if o.Dir == "" {
		return nil, errors.New("spool.Open: Options.Dir is empty")
	}
	if o.SegmentBytes == 0 {
		o.SegmentBytes = DefaultSegmentBytes
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.SegmentBytes < 0 || o.MaxBytes < o.SegmentBytes {
		return nil, fmt.Errorf("spool.Open: need 0 < SegmentBytes (%d) <= MaxBytes (%d)", o.SegmentBytes, o.MaxBytes)
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("spool.Open: %w", err)
	}
	dir, err := os.Open(o.Dir)
	if err != nil {
		return nil, fmt.Errorf("spool.Open: %w", err)
	}
	s := &Spool{
		opt:      o,
		dir:      dir,
		metaPath: filepath.Join(o.Dir, metaName),
		metaTmp:  filepath.Join(o.Dir, metaTmp),
		ready:    make(chan struct{}, 1),
	}
	if err := s.recover(); err != nil {
		s.closeFiles()
		return nil, fmt.Errorf("spool.Open: %w", err)
	}
	if s.records > 0 {
		s.signal()
	}
	return s, nil
}

// recover loads the meta file and scans the segments.
func (s *Spool) recover() error {
	m, err := readMeta(s.opt.Dir)
	dirty := false
	if errors.Is(err, errBadMeta) {
		// At-least-once: redeliver what is still on disk.
		m, dirty = meta{corrupt: 1}, true
	} else if err != nil {
		return err
	}
	s.ack, s.dropped, s.corrupt, s.flags = m.ack, m.dropped, m.corrupt, m.flags
	if err := os.Remove(s.metaTmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}

	entries, err := os.ReadDir(s.opt.Dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if first, ok := parseSegmentName(e.Name()); ok && e.Type().IsRegular() {
			s.segs = append(s.segs, &segment{first: first, path: filepath.Join(s.opt.Dir, e.Name())})
		}
	}
	slices.SortFunc(s.segs, func(a, b *segment) int { return cmp.Compare(a.first, b.first) })

	last := m.last
	if len(s.segs) > 0 {
		last = max(last, s.segs[len(s.segs)-1].first-1)
	}
	var buf []byte
	acked := make([]scanResult, len(s.segs))
	for i, seg := range s.segs {
		limit := uint64(math.MaxUint64)
		if i+1 < len(s.segs) {
			limit = s.segs[i+1].first
		}
		var res scanResult
		if res, buf, err = s.scan(seg, limit, buf); err != nil {
			return err
		}
		seg.size, seg.n, seg.last = res.end, res.n, res.last
		last = max(last, res.last)
		if res.damage == corrupt {
			s.corrupt++
			dirty = true
			if i == len(s.segs)-1 {
				// The lost records' IDs are unknown, and some may have been published: skip every
				// ID the lost bytes could have held rather than reuse one.
				lost := uint64(res.size-res.end) / headerBytes
				last = max(last, res.last+min(lost, math.MaxUint64-res.last))
			}
		}
		acked[i] = res
	}
	if last == math.MaxUint64 {
		s.next = 0
	} else {
		s.next = last + 1
	}
	s.ack = min(s.ack, last)

	// Delete empty segments, then delivered ones but the newest: it keeps the last ID in view.
	// The meta file then keeps it, should the newest go.
	keep := s.segs[:0]
	for i, seg := range s.segs {
		newest := i == len(s.segs)-1
		if seg.n == 0 || (seg.last <= s.ack && !newest) {
			if err := os.Remove(seg.path); err != nil {
				return err
			}
			dirty = true
			continue
		}
		if len(keep) == 0 {
			s.rOff, s.rN = acked[i].ackEnd, acked[i].ackN
		}
		keep = append(keep, seg)
	}
	clear(s.segs[len(keep):])
	s.segs = keep
	for _, seg := range s.segs {
		s.records += seg.n
		s.bytes += seg.size
	}
	s.records -= s.rN
	s.bytes -= s.rOff

	if n := len(s.segs); n > 0 {
		seg := s.segs[n-1]
		if seg.f, err = os.OpenFile(seg.path, os.O_RDWR, 0); err != nil {
			return err
		}
	}
	if err := s.enforceCap(0); err != nil {
		return err
	}
	if dirty {
		return s.writeMeta()
	}
	return nil
}

// scan validates one segment and truncates it after its last valid record.
func (s *Spool) scan(seg *segment, limit uint64, buf []byte) (scanResult, []byte, error) {
	f, err := os.OpenFile(seg.path, os.O_RDWR, 0)
	if err != nil {
		return scanResult{}, buf, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return scanResult{}, buf, err
	}
	res, buf, err := scanSegment(f, fi.Size(), seg.first, limit, s.ack, buf)
	if err != nil {
		return res, buf, fmt.Errorf("%s: %w", seg.path, err)
	}
	if res.end < fi.Size() {
		if err := f.Truncate(res.end); err != nil {
			return res, buf, err
		}
		if !s.opt.NoSync {
			if err := f.Sync(); err != nil {
				return res, buf, err
			}
		}
	}
	return res, buf, nil
}

// Append durably adds one record and returns its ID. fill receives that ID, to embed it in the
// report, and must return dst with the payload appended; dst belongs to the spool and is reused,
// so fill must not keep it. fill runs with the spool locked and must not call it. If fill or the
// write fails, the ID is not used up: the next Append gets it again.
func (s *Spool) Append(fill func(id uint64, dst []byte) ([]byte, error)) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, ErrClosed
	}
	id := s.next
	if id == 0 {
		return 0, ErrExhausted
	}
	p, err := fill(id, s.pbuf[:0])
	if err != nil {
		return 0, fmt.Errorf("spool.Append: %w", err)
	}
	if len(p) > MaxRecordBytes {
		return 0, ErrTooLarge
	}
	s.fbuf = appendFrame(s.fbuf[:0], id, p)
	frame := int64(len(s.fbuf))
	s.pbuf = keep(p[:0], appendKeep)
	defer func() { s.fbuf = keep(s.fbuf[:0], appendKeep) }()

	if n := len(s.segs); n == 0 || (s.segs[n-1].size > 0 && s.segs[n-1].size+frame > s.opt.SegmentBytes) {
		if err := s.roll(id); err != nil {
			return 0, fmt.Errorf("spool.Append: %w", err)
		}
	}
	if err := s.enforceCap(frame); err != nil {
		return 0, fmt.Errorf("spool.Append: %w", err)
	}
	seg := s.segs[len(s.segs)-1]
	_, err = seg.f.WriteAt(s.fbuf, seg.size)
	if err == nil && !s.opt.NoSync {
		err = seg.f.Sync()
	}
	if err != nil {
		// Whatever reached the file is overwritten by the next Append, or truncated by Open.
		_ = seg.f.Truncate(seg.size)
		return 0, fmt.Errorf("spool.Append: %w", err)
	}
	seg.size += frame
	seg.n++
	seg.last = id
	s.records++
	s.bytes += frame
	s.next++
	s.signal()
	return id, nil
}

// roll starts a new segment whose first record will be id.
func (s *Spool) roll(id uint64) error {
	seg := &segment{first: id, path: filepath.Join(s.opt.Dir, segmentName(id))}
	f, err := os.OpenFile(seg.path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	seg.f = f
	if err := s.syncDir(); err != nil {
		f.Close()
		os.Remove(seg.path)
		return err
	}
	if n := len(s.segs); n > 1 {
		// Only the head and the newest segment stay open.
		s.segs[n-1].closeFile()
	}
	if len(s.segs) == 1 && s.records == 0 {
		// The previous segment is fully delivered and no longer the newest.
		s.segs[0].closeFile()
		os.Remove(s.segs[0].path)
		s.segs = s.segs[:0]
		s.rOff, s.rN = 0, 0
	}
	s.segs = append(s.segs, seg)
	return nil
}

// enforceCap drops the oldest segments, but never the newest, until extra more bytes fit under
// MaxBytes.
func (s *Spool) enforceCap(extra int64) error {
	for s.bytes+extra > s.opt.MaxBytes && len(s.segs) > 1 {
		h := s.segs[0]
		lost := h.n - s.rN
		s.dropped += uint64(lost)
		s.records -= lost
		s.bytes -= h.size - s.rOff
		s.ack = max(s.ack, h.last)
		s.segs = s.segs[1:]
		s.rOff, s.rN = 0, 0
		s.peeked = s.peeked[:0]
		// The meta first: a crash before the removal finds the segment delivered.
		if err := s.writeMeta(); err != nil {
			return err
		}
		h.closeFile()
		os.Remove(h.path)
	}
	return nil
}

func (seg *segment) closeFile() error {
	if seg.f == nil {
		return nil
	}
	err := seg.f.Close()
	seg.f = nil
	return err
}

// open returns the segment's file, opening it for reading if needed.
func (seg *segment) open() (*os.File, error) {
	if seg.f == nil {
		f, err := os.Open(seg.path)
		if err != nil {
			return nil, err
		}
		seg.f = f
	}
	return seg.f, nil
}

func (s *Spool) signal() {
	select {
	case s.ready <- struct{}{}:
	default:
	}
}

// Ready is signalled after each Append, and by Open if records are waiting. It holds at most
// one signal: a sender drains the spool with Peek and Ack, then waits on Ready.
func (s *Spool) Ready() <-chan struct{} { return s.ready }

// peekChunk is how much Peek reads at a time.
const peekChunk = 64 << 10

// Peek returns up to limit of the oldest undelivered records, oldest first, without removing them;
// none if there are none. The payloads are fresh copies the caller may keep.
func (s *Spool) Peek(limit int) ([]Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	s.peeked = s.peeked[:0]
	s.rbuf = s.rbuf[:0]
	if s.records == 0 || limit <= 0 {
		return nil, nil
	}
	total := 0
	for i := 0; i < len(s.segs) && len(s.peeked) < limit; i++ {
		seg := s.segs[i]
		off, n, prev := int64(0), 0, seg.first-1
		if i == 0 {
			off, n, prev = s.rOff, s.rN, max(prev, s.ack)
		}
		for off < seg.size && len(s.peeked) < limit {
			f, err := seg.open()
			if err != nil {
				return nil, fmt.Errorf("spool.Peek: %w", err)
			}
			want := min(seg.size-off, peekChunk)
			base := len(s.rbuf)
			s.rbuf = grow(s.rbuf, int(want))
			if _, err := f.ReadAt(s.rbuf[base:], off); err != nil {
				return nil, fmt.Errorf("spool.Peek: %w", err)
			}
			p, bad := base, false
			for len(s.peeked) < limit && len(s.rbuf)-p >= headerBytes {
				plen, sum, id := header(s.rbuf[p:])
				fl := headerBytes + plen
				if plen > MaxRecordBytes || off+int64(fl) > seg.size {
					bad = true
					break
				}
				if len(s.rbuf)-p < fl {
					// Read the whole frame next time round.
					if p == base {
						s.rbuf = grow(s.rbuf[:base], fl)
						if _, err := f.ReadAt(s.rbuf[base:], off); err != nil {
							return nil, fmt.Errorf("spool.Peek: %w", err)
						}
						continue
					}
					break
				}
				if sum != frameCRC(s.rbuf[p:p+fl]) || id <= prev {
					bad = true
					break
				}
				prev = id
				off += int64(fl)
				n++
				s.peeked = append(s.peeked, pos{seg: seg.first, id: id, start: p + headerBytes, plen: plen, end: off, n: n})
				total += plen
				p += fl
			}
			s.rbuf = s.rbuf[:p]
			if bad {
				// The file changed since Open checked it: keep what is before, skip the rest.
				s.cut(i, off, n, prev)
				break
			}
		}
	}
	if len(s.peeked) == 0 {
		return nil, nil
	}
	block := make([]byte, total)
	recs := make([]Record, len(s.peeked))
	o := 0
	for j, p := range s.peeked {
		copy(block[o:], s.rbuf[p.start:p.start+p.plen])
		recs[j] = Record{ID: p.id, Payload: block[o : o+p.plen : o+p.plen]}
		o += p.plen
	}
	s.rbuf = keep(s.rbuf[:0], peekKeep)
	return recs, nil
}

// grow extends b by n bytes.
func grow(b []byte, n int) []byte {
	return slices.Grow(b, n)[:len(b)+n]
}

// Scratch buffers larger than these are not kept between calls: the agent runs on small routers.
const (
	appendKeep = 64 << 10
	peekKeep   = 1 << 20
)

// keep returns b, or nil if its capacity is over limit.
func keep(b []byte, limit int) []byte {
	if cap(b) > limit {
		return nil
	}
	return b
}

// cut ends segs[i] at off, after its first n records, the last of which is last, and counts the
// corruption.
func (s *Spool) cut(i int, off int64, n int, last uint64) {
	seg := s.segs[i]
	s.records -= seg.n - n
	s.bytes -= seg.size - off
	seg.size, seg.n, seg.last = off, n, last
	s.corrupt++
	_ = os.Truncate(seg.path, off)
}

// Ack marks every record with ID <= id delivered, persistently, and deletes the segments that
// leaves fully delivered. IDs beyond the last assigned one count as the last.
func (s *Spool) Ack(id uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	id = min(id, s.next-1)
	if id <= s.ack {
		return nil
	}
	old := s.ack
	s.ack = id
	if now := time.Now(); s.opt.AckEvery <= 0 || now.Sub(s.ackWritten) >= s.opt.AckEvery {
		if err := s.writeMeta(); err != nil {
			s.ack = old
			return fmt.Errorf("spool.Ack: %w", err)
		}
		s.ackWritten, s.ackDirty = now, false
	} else {
		s.ackDirty = true
	}
	if err := s.advance(); err != nil {
		return fmt.Errorf("spool.Ack: %w", err)
	}
	return nil
}

// advance moves the read position past the records with ID <= s.ack.
func (s *Spool) advance() error {
	for len(s.segs) > 0 {
		h := s.segs[0]
		if h.last <= s.ack {
			s.records -= h.n - s.rN
			s.bytes -= h.size - s.rOff
			if len(s.segs) == 1 {
				s.rOff, s.rN = h.size, h.n
				return nil
			}
			h.closeFile()
			os.Remove(h.path) // if this fails, Open removes it
			s.segs = s.segs[1:]
			s.rOff, s.rN = 0, 0
			continue
		}
		off, n := s.rOff, s.rN
		done := false
		for j := len(s.peeked) - 1; j >= 0; j-- {
			if p := s.peeked[j]; p.seg == h.first && p.id <= s.ack {
				if p.end > off {
					off, n = p.end, p.n
					done = p.id == s.ack // IDs increase: the next record is not acked
				}
				break
			}
		}
		for !done && off < h.size {
			f, err := h.open()
			if err != nil {
				return err
			}
			s.hbuf = grow(s.hbuf[:0], headerBytes)
			if _, err := f.ReadAt(s.hbuf, off); err != nil {
				return err
			}
			plen, _, id := header(s.hbuf)
			if id > s.ack {
				break
			}
			if plen > MaxRecordBytes || off+int64(headerBytes+plen) > h.size {
				// The file changed since Open checked it: keep what is before, skip the rest.
				s.records -= n - s.rN
				s.bytes -= off - s.rOff
				s.rOff, s.rN = off, n
				s.cut(0, off, n, s.ack)
				return s.advance()
			}
			off += int64(headerBytes + plen)
			n++
		}
		s.records -= n - s.rN
		s.bytes -= off - s.rOff
		s.rOff, s.rN = off, n
		return nil
	}
	return nil
}

// Stats returns the spool's current figures.
func (s *Spool) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{
		Records: s.records,
		Bytes:   s.bytes,
		Acked:   s.ack,
		LastID:  s.next - 1,
		Dropped: s.dropped,
		Corrupt: s.corrupt,
	}
}

// Flags returns the flags set with SetFlags (persisted in the meta file).
func (s *Spool) Flags() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.flags
}

// SetFlags sets the bits of f, persistently (the meta file is written at once), for facts the
// spool's user must remember with the queue. Bits are never cleared.
func (s *Spool) SetFlags(f uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if s.flags|f == s.flags {
		return nil
	}
	old := s.flags
	s.flags |= f
	if err := s.writeMeta(); err != nil {
		s.flags = old
		return fmt.Errorf("spool.SetFlags: %w", err)
	}
	s.ackWritten, s.ackDirty = time.Now(), false
	return nil
}

// Close closes the spool's files. Every record appended is already on disk.
func (s *Spool) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.closed = true
	var errs []error
	if s.ackDirty {
		errs = append(errs, s.writeMeta())
	}
	return errors.Join(append(errs, s.closeFiles())...)
}

func (s *Spool) closeFiles() error {
	var errs []error
	for _, seg := range s.segs {
		errs = append(errs, seg.closeFile())
	}
	errs = append(errs, s.dir.Close())
	return errors.Join(errs...)
}
