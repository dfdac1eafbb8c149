package spool

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// FuzzSpoolSegment writes arbitrary bytes as a segment: Open must not fail or panic, must keep
// only well-formed records in order, and Append and Peek must still work, also after a reopen.
func FuzzSpoolSegment(f *testing.F) {
	var valid []byte
	for id := uint64(1); id <= 4; id++ {
		valid = appendFrame(valid, id, payload(id, 40))
	}
	f.Add([]byte{})
	f.Add(valid)
	f.Add(valid[:len(valid)-7])
	f.Add(append(slices.Clone(valid), make([]byte, 100)...))
	f.Add(appendFrame(appendFrame(nil, 7, []byte("x")), 3, []byte("y"))) // IDs going back
	f.Add(appendFrame(nil, 1<<64-1, []byte("z")))                        // the last ID
	f.Add([]byte("\xff\xff\xff\xff garbage that is not a frame"))
	f.Fuzz(func(t *testing.T, data []byte) {
		o := Options{Dir: t.TempDir(), SegmentBytes: 4096, NoSync: true}
		if err := os.WriteFile(filepath.Join(o.Dir, segmentName(1)), data, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := Open(o)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		before := peekAll(t, s)
		st := s.Stats()
		if st.Records != len(before) {
			t.Fatalf("Stats: got %d records; Peek returned %d", st.Records, len(before))
		}
		for i, r := range before {
			if r.ID == 0 || r.ID > st.LastID || i > 0 && r.ID <= before[i-1].ID {
				t.Fatalf("record %d has ID %d; LastID %d, IDs %v", i, r.ID, st.LastID, ids(before))
			}
		}
		id, err := s.Append(func(id uint64, dst []byte) ([]byte, error) { return append(dst, "new"...), nil })
		if st.LastID == 1<<64-1 {
			if err != ErrExhausted {
				t.Fatalf("Append with IDs exhausted: got %v; want ErrExhausted", err)
			}
		} else if err != nil || id != st.LastID+1 {
			t.Fatalf("Append: got %d, %v; want %d", id, err, st.LastID+1)
		} else {
			before = append(before, Record{ID: id, Payload: []byte("new")})
		}
		check := func(when string) {
			after := peekAll(t, s)
			if !slices.EqualFunc(after, before, func(a, b Record) bool { return a.ID == b.ID && string(a.Payload) == string(b.Payload) }) {
				t.Fatalf("%s: got IDs %v; want %v", when, ids(after), ids(before))
			}
		}
		check("after Append")
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if s, err = Open(o); err != nil {
			t.Fatalf("reopen: %v", err)
		}
		defer s.Close()
		check("after reopen")
		if got := s.Stats().Corrupt; got != st.Corrupt {
			t.Errorf("reopen: got Corrupt %d; want %d (damage counted once)", got, st.Corrupt)
		}
	})
}

// FuzzDecodeMeta: any bytes as the meta file decode to an error or to a meta that encodes and
// decodes back to itself; never a panic.
func FuzzDecodeMeta(f *testing.F) {
	f.Add(meta{ack: 3, last: 9, dropped: 1}.encode())
	f.Add(meta{ack: 3, last: 9, corrupt: 2, flags: 1}.encode())
	f.Add([]byte("EWSPOOL2"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeMeta(b)
		if err != nil {
			return
		}
		back, err := decodeMeta(m.encode())
		if err != nil || back != m {
			t.Fatalf("%+v encoded and decoded: %+v, %v", m, back, err)
		}
	})
}
