package spool

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// payload is the report a test appends as record id: a JSON object of size bytes (at least 30).
func payload(id uint64, size int) []byte {
	b := fmt.Appendf(nil, `{"seq":%d,"pad":"`, id)
	for len(b) < size-2 {
		b = append(b, byte('a'+id%26))
	}
	return append(b, `"}`...)
}

func mustOpen(t testing.TB, o Options) *Spool {
	t.Helper()
	s, err := Open(o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

func mustClose(t testing.TB, s *Spool) {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// appendN appends n records of size bytes and checks their IDs follow on.
func appendN(t testing.TB, s *Spool, n, size int) {
	t.Helper()
	for range n {
		want := s.Stats().LastID + 1
		id, err := s.Append(func(id uint64, dst []byte) ([]byte, error) {
			return append(dst, payload(id, size)...), nil
		})
		if err != nil {
			t.Fatalf("Append: %v", err)
		}
		if id != want {
			t.Fatalf("Append: got ID %d; want %d", id, want)
		}
	}
}

func peekAll(t testing.TB, s *Spool) []Record {
	t.Helper()
	recs, err := s.Peek(1 << 30)
	if err != nil {
		t.Fatalf("Peek: %v", err)
	}
	return recs
}

// checkRecords checks recs are the records with IDs from..to made by payload(id, size).
func checkRecords(t testing.TB, recs []Record, from, to uint64, size int) {
	t.Helper()
	if want := int(to - from + 1); to < from && len(recs) != 0 || to >= from && len(recs) != want {
		t.Fatalf("got %d records (%v); want IDs %d..%d", len(recs), ids(recs), from, to)
	}
	for i, r := range recs {
		id := from + uint64(i)
		if r.ID != id {
			t.Fatalf("record %d: got ID %d; want %d (all: %v)", i, r.ID, id, ids(recs))
		}
		if want := payload(id, size); !bytes.Equal(r.Payload, want) {
			t.Fatalf("record %d: got payload %q; want %q", id, r.Payload, want)
		}
	}
}

func ids(recs []Record) []uint64 {
	var out []uint64
	for _, r := range recs {
		out = append(out, r.ID)
	}
	return out
}

func segFiles(t testing.TB, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*.seg"))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(m)
	return m
}

func TestOrderAcrossReopen(t *testing.T) {
	tests := []struct {
		name    string
		segment int64
		size    int
		rounds  []int
	}{
		{"one segment", 1 << 20, 300, []int{10, 5, 1}},
		{"many segments", 1024, 300, []int{7, 13, 1, 20}},
		{"record per segment", 100, 300, []int{3, 3}},
		{"large records", 8 << 10, 4000, []int{9, 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := Options{Dir: t.TempDir(), SegmentBytes: tt.segment, NoSync: true}
			total := 0
			for _, n := range tt.rounds {
				s := mustOpen(t, o)
				checkRecords(t, peekAll(t, s), 1, uint64(total), tt.size)
				appendN(t, s, n, tt.size)
				total += n
				checkRecords(t, peekAll(t, s), 1, uint64(total), tt.size)
				mustClose(t, s)
			}
			s := mustOpen(t, o)
			defer mustClose(t, s)
			checkRecords(t, peekAll(t, s), 1, uint64(total), tt.size)
			st := s.Stats()
			if st.Records != total || st.LastID != uint64(total) || st.Corrupt != 0 || st.Dropped != 0 {
				t.Errorf("got %+v; want %d records, LastID %d, no corrupt or dropped", st, total, total)
			}
			for _, f := range segFiles(t, o.Dir) {
				fi, err := os.Stat(f)
				if err != nil {
					t.Fatal(err)
				}
				if fi.Size() > tt.segment && fi.Size() != int64(headerBytes+tt.size) {
					t.Errorf("%s: got %d bytes; want at most %d or one record", f, fi.Size(), tt.segment)
				}
			}
		})
	}
}

func TestPeekLimit(t *testing.T) {
	s := mustOpen(t, Options{Dir: t.TempDir(), SegmentBytes: 1000, NoSync: true})
	defer mustClose(t, s)
	appendN(t, s, 20, 200)
	for _, n := range []int{0, -1, 1, 3, 4, 5, 19, 20, 21} {
		recs, err := s.Peek(n)
		if err != nil {
			t.Fatal(err)
		}
		checkRecords(t, recs, 1, uint64(min(max(n, 0), 20)), 200)
	}
}

func TestAckPersists(t *testing.T) {
	const n, size = 30, 200 // 216-byte frames, 4 per 1000-byte segment
	tests := []struct {
		name string
		acks []uint64
		want uint64 // the first undelivered ID after reopening
	}{
		{"none", nil, 1},
		{"first", []uint64{1}, 2},
		{"mid segment", []uint64{6}, 7},
		{"segment boundary", []uint64{8}, 9},
		{"several", []uint64{2, 5, 13, 14}, 15},
		{"backwards is a no-op", []uint64{10, 3}, 11},
		{"all", []uint64{30}, 31},
		{"beyond the last", []uint64{99}, 31},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := Options{Dir: t.TempDir(), SegmentBytes: 1000, NoSync: true}
			s := mustOpen(t, o)
			appendN(t, s, n, size)
			for _, a := range tt.acks {
				// Ack after a Peek that covers the ID, and without one.
				if a%2 == 0 {
					if _, err := s.Peek(int(a)); err != nil {
						t.Fatal(err)
					}
				}
				if err := s.Ack(a); err != nil {
					t.Fatalf("Ack(%d): %v", a, err)
				}
			}
			checkRecords(t, peekAll(t, s), tt.want, n, size)
			if st := s.Stats(); st.Records != int(n-tt.want+1) || st.Bytes != int64(n-tt.want+1)*(headerBytes+size) {
				t.Errorf("before reopen: got %+v; want %d records", st, n-tt.want+1)
			}
			mustClose(t, s)

			s = mustOpen(t, o)
			defer mustClose(t, s)
			checkRecords(t, peekAll(t, s), tt.want, n, size)
			if st := s.Stats(); st.Records != int(n-tt.want+1) || st.Bytes != int64(n-tt.want+1)*(headerBytes+size) || st.Acked != tt.want-1 {
				t.Errorf("after reopen: got %+v; want %d records, Acked %d", st, n-tt.want+1, tt.want-1)
			}
			// Fully delivered segments are gone, except the newest.
			for _, f := range segFiles(t, o.Dir)[:len(segFiles(t, o.Dir))-1] {
				first, _ := parseSegmentName(filepath.Base(f))
				if first+4 <= tt.want {
					t.Errorf("%s: delivered segment still on disk", f)
				}
			}
			appendN(t, s, 1, size)
			checkRecords(t, peekAll(t, s), tt.want, n+1, size)
		})
	}
}

func TestCapDropsOldest(t *testing.T) {
	const size = 200 // 216-byte frames
	tests := []struct {
		name                 string
		max, segment         int64
		n                    int
		wantFirst, wantFiles int
	}{
		// 4 frames a segment; the cap holds 4 segments.
		{"under the cap", 3456, 864, 16, 1, 4},
		{"one over", 3456, 864, 17, 5, 4},
		{"many over", 3456, 864, 100, 85, 4},
		{"cap of one segment", 864, 864, 10, 9, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := Options{Dir: t.TempDir(), MaxBytes: tt.max, SegmentBytes: tt.segment, NoSync: true}
			s := mustOpen(t, o)
			appendN(t, s, tt.n, size)
			check := func(when string) {
				t.Helper()
				checkRecords(t, peekAll(t, s), uint64(tt.wantFirst), uint64(tt.n), size)
				st := s.Stats()
				if st.Dropped != uint64(tt.wantFirst-1) || st.Bytes > tt.max || st.LastID != uint64(tt.n) {
					t.Errorf("%s: got %+v; want Dropped %d, Bytes <= %d", when, st, tt.wantFirst-1, tt.max)
				}
				if got := len(segFiles(t, o.Dir)); got != tt.wantFiles {
					t.Errorf("%s: got %d segment files; want %d", when, got, tt.wantFiles)
				}
			}
			check("before reopen")
			mustClose(t, s)
			s = mustOpen(t, o)
			defer mustClose(t, s)
			check("after reopen")
		})
	}
}

func TestCapCountsOnlyUndelivered(t *testing.T) {
	o := Options{Dir: t.TempDir(), MaxBytes: 864, SegmentBytes: 432, NoSync: true}
	s := mustOpen(t, o)
	defer mustClose(t, s)
	appendN(t, s, 3, 200)
	if err := s.Ack(1); err != nil {
		t.Fatal(err)
	}
	appendN(t, s, 2, 200) // 4 undelivered frames: at the cap, nothing dropped
	if st := s.Stats(); st.Dropped != 0 || st.Records != 4 {
		t.Fatalf("got %+v; want 4 records, none dropped", st)
	}
	appendN(t, s, 1, 200) // drops segment 1-2, whose record 2 was undelivered
	if st := s.Stats(); st.Dropped != 1 || st.Records != 4 {
		t.Fatalf("got %+v; want 4 records, 1 dropped", st)
	}
	checkRecords(t, peekAll(t, s), 3, 6, 200)
}

// build writes n records of size bytes with small segments, closes the spool and returns its
// options and segment files.
func build(t *testing.T, n, size int, segment int64) (Options, []string) {
	t.Helper()
	o := Options{Dir: t.TempDir(), SegmentBytes: segment, NoSync: true}
	s := mustOpen(t, o)
	appendN(t, s, n, size)
	mustClose(t, s)
	return o, segFiles(t, o.Dir)
}

func TestTornTail(t *testing.T) {
	const n, size = 10, 300
	frame := int64(headerBytes + size)
	_, files := build(t, n, size, 1<<20)
	orig, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	start := int64(len(orig)) - frame
	tails := map[string]func(b []byte) []byte{}
	for cut := start; cut < int64(len(orig)); cut++ {
		tails[fmt.Sprintf("cut at %d", cut)] = func(b []byte) []byte { return b[:cut] }
	}
	tails["bad CRC in the last record"] = func(b []byte) []byte { b[len(b)-1] ^= 1; return b }
	tails["zeroed last record"] = func(b []byte) []byte { clear(b[start:]); return b }
	tails["zeros after the cut"] = func(b []byte) []byte { clear(b[start+20:]); return b }
	tails["zeros appended"] = func(b []byte) []byte { return append(b[:start], make([]byte, 3*frame)...) }
	for name, damage := range tails {
		t.Run(name, func(t *testing.T) {
			o := Options{Dir: t.TempDir(), NoSync: true}
			path := filepath.Join(o.Dir, filepath.Base(files[0]))
			if err := os.WriteFile(path, damage(bytes.Clone(orig)), 0o600); err != nil {
				t.Fatal(err)
			}
			s := mustOpen(t, o)
			defer mustClose(t, s)
			checkRecords(t, peekAll(t, s), 1, n-1, size)
			if st := s.Stats(); st.Corrupt != 0 || st.LastID != n-1 || st.Records != n-1 {
				t.Errorf("got %+v; want %d records, none corrupt", st, n-1)
			}
			if fi, err := os.Stat(path); err != nil || fi.Size() != start {
				t.Errorf("segment not truncated to %d bytes: %v %v", start, fi.Size(), err)
			}
			appendN(t, s, 2, size)
			checkRecords(t, peekAll(t, s), 1, n+1, size)
		})
	}
}

func TestCorruptMiddle(t *testing.T) {
	const n, size = 12, 200 // 216-byte frames, 4 per segment: 1-4, 5-8, 9-12
	frame := headerBytes + size
	tests := []struct {
		name    string
		seg     int // which segment file to damage
		offset  int // which byte
		want    []uint64
		corrupt uint64
	}{
		{"payload of record 6", 1, frame + 100, []uint64{1, 2, 3, 4, 5, 9, 10, 11, 12, 13}, 1},
		{"length of record 6", 1, frame + 2, []uint64{1, 2, 3, 4, 5, 9, 10, 11, 12, 13}, 1},
		{"CRC of record 5", 1, 5, []uint64{1, 2, 3, 4, 9, 10, 11, 12, 13}, 1},
		{"ID of record 2", 0, frame + 9, []uint64{1, 5, 6, 7, 8, 9, 10, 11, 12, 13}, 1},
		// The IDs of the lost records 10-12 are not known: the next ID skips every ID the lost
		// bytes could have held (3 frames of at least 16 bytes).
		{"record 10 in the newest segment", 2, frame + 50, []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10 + 3*uint64(frame)/headerBytes}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, files := build(t, n, size, int64(4*frame))
			if len(files) != 3 {
				t.Fatalf("got %d segments; want 3", len(files))
			}
			b, err := os.ReadFile(files[tt.seg])
			if err != nil {
				t.Fatal(err)
			}
			b[tt.offset] ^= 0x40
			if err := os.WriteFile(files[tt.seg], b, 0o600); err != nil {
				t.Fatal(err)
			}
			s := mustOpen(t, o)
			appendN(t, s, 1, size)
			last := tt.want[len(tt.want)-1]
			check := func(when string) {
				t.Helper()
				recs := peekAll(t, s)
				if got := ids(recs); !slices.Equal(got, tt.want) {
					t.Errorf("%s: got IDs %v; want %v", when, got, tt.want)
				}
				for _, r := range recs {
					if !bytes.Equal(r.Payload, payload(r.ID, size)) {
						t.Errorf("%s: record %d: wrong payload %q", when, r.ID, r.Payload)
					}
				}
				if st := s.Stats(); st.Corrupt != tt.corrupt || st.Records != len(tt.want) || st.LastID != last {
					t.Errorf("%s: got %+v; want Corrupt %d, %d records, LastID %d", when, st, tt.corrupt, len(tt.want), last)
				}
			}
			check("after Open")
			mustClose(t, s)
			s = mustOpen(t, o)
			defer mustClose(t, s)
			check("after reopen") // counted once: the damage was truncated away
		})
	}
}

// TestCorruptAfterOpen damages record 3 of 1-4, 5-8 while the spool is open.
func TestCorruptAfterOpen(t *testing.T) {
	const size = 200
	frame := headerBytes + size
	tests := []struct {
		name   string
		offset int
		ack    uint64 // Ack before any Peek, 0 for none
		want   []uint64
	}{
		{"payload, found by Peek", 2*frame + 100, 0, []uint64{1, 2, 5, 6, 7, 8}},
		{"length, found by Peek", 2*frame + 2, 0, []uint64{1, 2, 5, 6, 7, 8}},
		{"length, found by Ack", 2*frame + 2, 3, []uint64{5, 6, 7, 8}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := Options{Dir: t.TempDir(), SegmentBytes: int64(4 * frame), NoSync: true}
			s := mustOpen(t, o)
			defer mustClose(t, s)
			appendN(t, s, 8, size)
			files := segFiles(t, o.Dir)
			b, err := os.ReadFile(files[0])
			if err != nil {
				t.Fatal(err)
			}
			b[tt.offset] ^= 0x40
			if err := os.WriteFile(files[0], b, 0o600); err != nil {
				t.Fatal(err)
			}
			if tt.ack > 0 {
				if err := s.Ack(tt.ack); err != nil {
					t.Fatal(err)
				}
			}
			if got := ids(peekAll(t, s)); !slices.Equal(got, tt.want) {
				t.Errorf("got IDs %v; want %v", got, tt.want)
			}
			if st := s.Stats(); st.Corrupt != 1 || st.Records != len(tt.want) || st.Bytes != int64(len(tt.want)*frame) {
				t.Errorf("got %+v; want %d records, Corrupt 1", st, len(tt.want))
			}
			if err := s.Ack(6); err != nil {
				t.Fatal(err)
			}
			checkRecords(t, peekAll(t, s), 7, 8, size)
			if st := s.Stats(); st.Records != 2 || st.Bytes != int64(2*frame) {
				t.Errorf("got %+v; want 2 records", st)
			}
		})
	}
}

// TestSync runs the fsync paths once.
func TestSync(t *testing.T) {
	o := Options{Dir: t.TempDir(), SegmentBytes: 1000}
	s := mustOpen(t, o)
	appendN(t, s, 10, 200)
	if err := s.Ack(5); err != nil {
		t.Fatal(err)
	}
	mustClose(t, s)
	s = mustOpen(t, o)
	defer mustClose(t, s)
	checkRecords(t, peekAll(t, s), 6, 10, 200)
}

func TestIDContinuity(t *testing.T) {
	tests := []struct {
		name   string
		ack    uint64
		damage func(t *testing.T, dir string)
	}{
		{"all delivered", 12, nil},
		{"all delivered, meta lost", 12, func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, metaName)) }},
		{"all delivered, meta damaged", 12, func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, metaName), []byte("garbage"), 0o600)
		}},
		{"all delivered, segments lost", 12, func(t *testing.T, dir string) {
			for _, f := range segFiles(t, dir) {
				os.Remove(f)
			}
		}},
		{"none delivered, meta lost", 0, func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, metaName)) }},
		{"empty newest segment", 12, func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, segmentName(13)), nil, 0o600)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := Options{Dir: t.TempDir(), SegmentBytes: 1000, NoSync: true}
			s := mustOpen(t, o)
			appendN(t, s, 12, 200)
			if err := s.Ack(tt.ack); err != nil {
				t.Fatal(err)
			}
			mustClose(t, s)
			if tt.damage != nil {
				tt.damage(t, o.Dir)
			}
			s = mustOpen(t, o)
			defer mustClose(t, s)
			if st := s.Stats(); st.LastID != 12 {
				t.Errorf("got LastID %d; want 12", st.LastID)
			}
			appendN(t, s, 1, 200) // checks the ID is 13
			// Redelivering after a lost meta file is fine (at-least-once); losing records is not.
			recs := peekAll(t, s)
			if len(recs) == 0 || recs[len(recs)-1].ID != 13 {
				t.Errorf("got IDs %v; want ... 13", ids(recs))
			}
		})
	}
}

func TestAppendErrors(t *testing.T) {
	s := mustOpen(t, Options{Dir: t.TempDir(), NoSync: true})
	defer mustClose(t, s)
	errFill := errors.New("no report")
	tests := []struct {
		name    string
		fill    func(id uint64, dst []byte) ([]byte, error)
		wantErr error
		wantID  uint64
	}{
		{"fill fails", func(id uint64, dst []byte) ([]byte, error) { return nil, errFill }, errFill, 0},
		{"too large", func(id uint64, dst []byte) ([]byte, error) { return make([]byte, MaxRecordBytes+1), nil }, ErrTooLarge, 0},
		{"largest", func(id uint64, dst []byte) ([]byte, error) { return append(dst, make([]byte, MaxRecordBytes)...), nil }, nil, 1},
		{"empty", func(id uint64, dst []byte) ([]byte, error) { return dst, nil }, nil, 2},
		{"fill fails again", func(id uint64, dst []byte) ([]byte, error) { return nil, errFill }, errFill, 0},
		{"next", func(id uint64, dst []byte) ([]byte, error) { return append(dst, "x"...), nil }, nil, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, err := s.Append(tt.fill)
			if !errors.Is(err, tt.wantErr) || id != tt.wantID {
				t.Errorf("got %d, %v; want %d, %v", id, err, tt.wantID, tt.wantErr)
			}
		})
	}
	recs := peekAll(t, s)
	if got := ids(recs); !slices.Equal(got, []uint64{1, 2, 3}) || len(recs[0].Payload) != MaxRecordBytes || len(recs[1].Payload) != 0 {
		t.Errorf("got IDs %v; want [1 2 3] with 1 MiB, empty and 1-byte payloads", got)
	}
}

func TestOptions(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		o       Options
		wantErr string
	}{
		{"no dir", Options{}, "Dir"},
		{"negative segment", Options{Dir: dir, SegmentBytes: -1}, "SegmentBytes"},
		{"cap below segment", Options{Dir: dir, MaxBytes: 1000, SegmentBytes: 2000}, "SegmentBytes"},
		{"cap below default segment", Options{Dir: dir, MaxBytes: 1000}, "SegmentBytes"},
		{"defaults", Options{Dir: filepath.Join(dir, "a", "b")}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Open(tt.o)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("got %v; want no error", err)
				}
				defer s.Close()
				if s.opt.MaxBytes != DefaultMaxBytes || s.opt.SegmentBytes != DefaultSegmentBytes {
					t.Errorf("got %+v; want the defaults", s.opt)
				}
				if fi, err := os.Stat(tt.o.Dir); err != nil || fi.Mode().Perm() != 0o700 {
					t.Errorf("got dir %v, %v; want mode 0700", fi.Mode(), err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("got %v; want an error about %s", err, tt.wantErr)
			}
		})
	}
}

func TestClosed(t *testing.T) {
	s := mustOpen(t, Options{Dir: t.TempDir(), NoSync: true})
	mustClose(t, s)
	if _, err := s.Append(func(id uint64, dst []byte) ([]byte, error) { return dst, nil }); !errors.Is(err, ErrClosed) {
		t.Errorf("Append: got %v; want ErrClosed", err)
	}
	if _, err := s.Peek(1); !errors.Is(err, ErrClosed) {
		t.Errorf("Peek: got %v; want ErrClosed", err)
	}
	if err := s.Ack(1); !errors.Is(err, ErrClosed) {
		t.Errorf("Ack: got %v; want ErrClosed", err)
	}
}

func TestReady(t *testing.T) {
	ready := func(s *Spool) bool {
		select {
		case <-s.Ready():
			return true
		default:
			return false
		}
	}
	o := Options{Dir: t.TempDir(), NoSync: true}
	s := mustOpen(t, o)
	if ready(s) {
		t.Error("empty spool: got a signal; want none")
	}
	appendN(t, s, 1, 100)
	if !ready(s) {
		t.Error("after Append: got no signal; want one")
	}
	appendN(t, s, 3, 100)
	if !ready(s) || ready(s) {
		t.Error("after 3 Appends: want exactly one signal")
	}
	mustClose(t, s)

	s = mustOpen(t, o)
	if !ready(s) {
		t.Error("reopened with records waiting: got no signal; want one")
	}
	if err := s.Ack(4); err != nil {
		t.Fatal(err)
	}
	mustClose(t, s)
	s = mustOpen(t, o)
	defer mustClose(t, s)
	if ready(s) {
		t.Error("reopened with everything delivered: got a signal; want none")
	}
}

// TestConcurrent runs an appender and a sender at once; run it with -race.
func TestConcurrent(t *testing.T) {
	const n, size = 2000, 300
	s := mustOpen(t, Options{Dir: t.TempDir(), SegmentBytes: 8 << 10, NoSync: true})
	defer mustClose(t, s)
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range n {
			id, err := s.Append(func(id uint64, dst []byte) ([]byte, error) {
				return append(dst, payload(id, size)...), nil
			})
			if err != nil || id != uint64(i+1) {
				t.Errorf("Append: got %d, %v; want %d", id, err, i+1)
				return
			}
		}
	})
	next := uint64(1)
	for next <= n {
		recs, err := s.Peek(1 + int(next%17))
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) == 0 {
			<-s.Ready()
			continue
		}
		for _, r := range recs {
			if r.ID != next || !bytes.Equal(r.Payload, payload(r.ID, size)) {
				t.Fatalf("got record %d %q; want %d", r.ID, r.Payload, next)
			}
			next++
		}
		if err := s.Ack(recs[len(recs)-1].ID); err != nil {
			t.Fatal(err)
		}
		_ = s.Stats()
	}
	wg.Wait()
	if st := s.Stats(); st.Records != 0 || st.Bytes != 0 || st.Acked != n {
		t.Errorf("got %+v; want all delivered", st)
	}
	if got := len(segFiles(t, s.opt.Dir)); got != 1 {
		t.Errorf("got %d segment files; want 1", got)
	}
}

// With AckEvery, an Ack soon after the last written one stays in memory: a crash (no Close)
// delivers those records again; a Close writes it.
func TestAckEvery(t *testing.T) {
	dir := t.TempDir()
	o := Options{Dir: dir, NoSync: true, AckEvery: time.Hour}
	s := mustOpen(t, o)
	appendN(t, s, 5, 10)
	if err := s.Ack(2); err != nil { // the first Ack is written (none was before)
		t.Fatal(err)
	}
	if err := s.Ack(4); err != nil { // within the hour: memory only
		t.Fatal(err)
	}
	if got := peekAll(t, s); len(got) != 1 || got[0].ID != 5 {
		t.Fatalf("in memory: %v", got)
	}
	// crash: reopen without Close (the old files stay open; the new Spool reads the disk)
	s2 := mustOpen(t, o)
	if got := peekAll(t, s2); len(got) != 3 || got[0].ID != 3 {
		t.Fatalf("after a crash: want records 3..5 again, got %d from %v", len(got), got)
	}
	mustClose(t, s2)
	mustClose(t, s) // writes ack 4
	s3 := mustOpen(t, o)
	defer mustClose(t, s3)
	if got := peekAll(t, s3); len(got) != 1 || got[0].ID != 5 {
		t.Fatalf("after Close: %v", got)
	}
}

// Flags persist across reopen and alongside acks; while none is set the meta file stays in
// version 1 (an older agent reads it), and a version 1 file still opens with no flag.
func TestFlagsPersist(t *testing.T) {
	o := Options{Dir: t.TempDir(), NoSync: true}
	s := mustOpen(t, o)
	appendN(t, s, 3, 40)
	if err := s.Ack(1); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(o.Dir, metaName))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != metaBytes || string(b[:len(metaMagic)]) != metaMagic {
		t.Fatalf("meta without flags: %d bytes %q; want version 1 (%d bytes)", len(b), b[:8], metaBytes)
	}
	mustClose(t, s)

	s = mustOpen(t, o)
	if f := s.Flags(); f != 0 {
		t.Fatalf("flags from a version 1 meta: got %#x; want 0", f)
	}
	for _, f := range []uint64{1, 4, 1} {
		if err := s.SetFlags(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Ack(2); err != nil { // a later meta write keeps the flags
		t.Fatal(err)
	}
	mustClose(t, s)

	s = mustOpen(t, o)
	defer mustClose(t, s)
	if f := s.Flags(); f != 5 {
		t.Fatalf("flags after reopen: got %#x; want 0x5", f)
	}
	if st := s.Stats(); st.Acked != 2 || st.Records != 1 || st.Corrupt != 0 {
		t.Fatalf("stats after reopen: %+v; want Acked 2, Records 1, Corrupt 0", st)
	}
	b, err = os.ReadFile(filepath.Join(o.Dir, metaName))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != metaBytes2 || string(b[:len(metaMagic2)]) != metaMagic2 {
		t.Fatalf("meta with flags: %d bytes %q; want version 2 (%d bytes)", len(b), b[:8], metaBytes2)
	}
	b[len(b)-5] ^= 1 // a damaged version 2 meta is bad, as a damaged version 1
	if _, err := decodeMeta(b); !errors.Is(err, errBadMeta) {
		t.Fatalf("damaged version 2 meta: got %v; want errBadMeta", err)
	}
}
