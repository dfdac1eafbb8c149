package detect

import (
	"os"
	"runtime"
	"slices"
	"testing"
	"time"
)

func loadPrompt(tb testing.TB) string {
	tb.Helper()
	b, err := os.ReadFile("testdata/prompt_4k.txt")
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// BenchmarkScan4KB scans a realistic 4 KB prompt with a handful of entities. Besides ns/op it
// reports p50-us and p99-us (wall clock) and p99-cpu-us (the thread's CPU time, which leaves out
// time spent waiting for a CPU on a busy machine), each over 10,000 individually timed scans.
func BenchmarkScan4KB(b *testing.B) {
	e, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	text := loadPrompt(b)
	dst := make([]Entity, 0, 64)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		dst = e.AppendScan(dst[:0], text)
	}
	b.StopTimer()
	const runs = 10000
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	wall := make([]time.Duration, runs)
	cpu := make([]time.Duration, runs)
	for i := range wall {
		t0, c0 := time.Now(), threadCPU(b)
		dst = e.AppendScan(dst[:0], text)
		wall[i], cpu[i] = time.Since(t0), threadCPU(b)-c0
	}
	slices.Sort(wall)
	slices.Sort(cpu)
	b.ReportMetric(float64(wall[runs/2].Nanoseconds())/1e3, "p50-us")
	b.ReportMetric(float64(wall[runs*99/100].Nanoseconds())/1e3, "p99-us")
	b.ReportMetric(float64(cpu[runs*99/100].Nanoseconds())/1e3, "p99-cpu-us")
}

// BenchmarkDetector4KB measures each detector alone on the same prompt.
func BenchmarkDetector4KB(b *testing.B) {
	text := loadPrompt(b)
	loadGazetteer()
	for _, r := range registry {
		b.Run(r.typ, func(b *testing.B) {
			d := r.new(Options{DefaultRegion: DefaultRegion})
			out := make([]Entity, 0, 64)
			b.ReportAllocs()
			for b.Loop() {
				out = d.Detect(text, out[:0])
			}
		})
	}
}

// BenchmarkScanScripts scans the texts of set 9 (ten non-Latin scripts mixed with Latin text,
// about 9 KB) in one piece, and the SafePrefix of a stream over them, word by word.
func BenchmarkScanScripts(b *testing.B) {
	e, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	var sb []byte
	for _, s := range loadAnnotated(b, "testdata/realistic_study9.txt") {
		sb = append(append(sb, s.Text...), '\n', '\n')
	}
	text := string(sb)
	b.Run("scan", func(b *testing.B) {
		dst := make([]Entity, 0, 256)
		b.SetBytes(int64(len(text)))
		b.ReportAllocs()
		for b.Loop() {
			dst = e.AppendScan(dst[:0], text)
		}
	})
	b.Run("safeprefix", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		b.ReportAllocs()
		for b.Loop() {
			for start := 0; start < len(text); {
				p := e.SafePrefix(text, start)
				if p == start {
					p = start + 1 // held: move on as a stream's window would
					for p < len(text) && !isSpaceByte(text[p-1]) {
						p++
					}
				}
				start = p
			}
		}
	})
}
