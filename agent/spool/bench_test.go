package spool

import (
	"strconv"
	"testing"
)

// BenchmarkAppend appends 1 KiB reports, the size of a typical telemetry report.
func BenchmarkAppend(b *testing.B) {
	for _, bb := range []struct {
		name   string
		noSync bool
	}{{"nosync", true}, {"fsync", false}} {
		b.Run(bb.name, func(b *testing.B) {
			s := mustOpen(b, Options{Dir: b.TempDir(), NoSync: bb.noSync})
			defer mustClose(b, s)
			p := payload(1, 1024)
			fill := func(id uint64, dst []byte) ([]byte, error) { return append(dst, p...), nil }
			b.SetBytes(int64(len(p)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Append(fill); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPeekAck delivers 1 KiB reports in batches: one Peek and one Ack per batch, no fsync.
func BenchmarkPeekAck(b *testing.B) {
	for _, batch := range []int{1, 16, 128} {
		b.Run("batch="+strconv.Itoa(batch), func(b *testing.B) {
			s := mustOpen(b, Options{Dir: b.TempDir(), NoSync: true})
			defer mustClose(b, s)
			b.ReportAllocs()
			b.SetBytes(int64(batch * 1024))
			for b.Loop() {
				recs, err := s.Peek(batch)
				if err != nil {
					b.Fatal(err)
				}
				if len(recs) < batch {
					b.StopTimer()
					appendN(b, s, 8192, 1024)
					b.StartTimer()
					continue
				}
				if err := s.Ack(recs[len(recs)-1].ID); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
