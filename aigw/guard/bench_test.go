package guard

import (
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/edgewan/edgewan/aigw/detect"
)

// benchPolicy is a typical project policy: the defaults plus a few block patterns and keyword
// lists.
func benchPolicy() Policy {
	p := DefaultPolicy()
	p.Entities[detect.TypeEmail] = ActionHash
	p.Entities[detect.TypeSecret] = ActionRedact
	p.Block.Patterns = []PatternRule{
		{Name: "codename", Regex: `(?i)\bproject\s+(?:falcon|osprey|kestrel)\b`},
		{Name: "internal-host", Regex: `\b[a-z0-9-]+\.corp\.example\.net\b`},
		{Name: "aws-arn", Regex: `arn:aws:iam::\d{12}:`},
	}
	p.Block.Keywords = []KeywordRule{
		{Name: "confidential", Words: []string{"internal only", "do not distribute", "strictly confidential", "vertraulich", "confidentiel"}, CaseInsensitive: true},
		{Name: "competitors", Words: []string{"Contoso", "Fabrikam", "Tailspin", "Wingtip", "Litware", "Adatum"}},
	}
	return p
}

// timed runs f runs times on a locked thread and reports p50 and p99 of wall-clock time and
// of the thread's CPU time, in microseconds. On a busy machine the wall-clock tail is mostly
// time spent waiting for a CPU; the CPU time leaves that out.
func timed(b *testing.B, runs int, f func()) {
	b.StopTimer()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	wall := make([]time.Duration, runs)
	cpu := make([]time.Duration, runs)
	for i := range wall {
		t0, c0 := time.Now(), threadCPU(b)
		f()
		wall[i], cpu[i] = time.Since(t0), threadCPU(b)-c0
	}
	slices.Sort(wall)
	slices.Sort(cpu)
	b.ReportMetric(float64(wall[runs/2].Nanoseconds())/1e3, "p50-us")
	b.ReportMetric(float64(cpu[runs/2].Nanoseconds())/1e3, "p50-cpu-us")
	b.ReportMetric(float64(wall[runs*99/100].Nanoseconds())/1e3, "p99-us")
	b.ReportMetric(float64(cpu[runs*99/100].Nanoseconds())/1e3, "p99-cpu-us")
}

// BenchmarkInput4KB sanitizes a realistic 4 KB prompt (12 entities) with a typical policy:
// detection, entity actions, two pattern and keyword rule sets, prompt-injection heuristics.
// Besides ns/op and allocations it reports percentiles over 5,000 individually timed calls.
func BenchmarkInput4KB(b *testing.B) {
	g, err := New(benchPolicy(), nil, testKey)
	if err != nil {
		b.Fatal(err)
	}
	text := readTestdata(b, "prompt_4k.txt")
	if r := g.NewSession().Input(text); len(r.Redactions) < 10 || r.Blocked {
		b.Fatalf("prompt: %d redactions, blocked %v; want >= 10 and not blocked", len(r.Redactions), r.Blocked)
	}
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		g.NewSession().Input(text)
	}
	timed(b, 5000, func() { g.NewSession().Input(text) })
}

// BenchmarkInput4KBParts splits the cost of Input on the same prompt.
func BenchmarkInput4KBParts(b *testing.B) {
	g, err := New(benchPolicy(), nil, testKey)
	if err != nil {
		b.Fatal(err)
	}
	text := readTestdata(b, "prompt_4k.txt")
	parts := []struct {
		name string
		f    func()
	}{
		{"detect", func() { g.NewSession().scan(text) }},
		{"detect+actions", func() { g.NewSession().redactText(text) }},
		{"patterns+keywords", func() { g.blockRules(text, 0, nil) }},
		{"prompt-injection", func() { g.injection.score(text) }},
	}
	for _, p := range parts {
		b.Run(p.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p.f()
			}
			timed(b, 2000, p.f)
		})
	}
}

// BenchmarkStream streams a typical 2 KB response in chunks of 4 bytes (about one token) and
// 64 bytes. ns/op and allocs/op are per whole response; it also reports the cost per chunk,
// the bytes received before the first safe byte, and the mean bytes held back.
func BenchmarkStream(b *testing.B) {
	resp := readTestdata(b, "response_2k.txt")
	g, err := New(benchPolicy(), nil, testKey)
	if err != nil {
		b.Fatal(err)
	}
	for _, chunk := range []int{4, 64} {
		b.Run("chunk="+itoa(chunk), func(b *testing.B) {
			var chunks []string
			for i := 0; i < len(resp); i += chunk {
				chunks = append(chunks, resp[i:min(len(resp), i+chunk)])
			}
			b.SetBytes(int64(len(resp)))
			b.ReportAllocs()
			for b.Loop() {
				sr := g.NewSession().Stream()
				for _, c := range chunks {
					sr.Write(c)
				}
				sr.Flush()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(chunks)), "ns/chunk")
			st := measureStream(g, resp, chunk)
			b.ReportMetric(float64(st.firstAt), "first-safe-byte-at")
			b.ReportMetric(st.meanHeld, "held-bytes-mean")
			// Per-Write latency: what a client waits on top of the model, per chunk.
			timed(b, 20*len(chunks)/len(chunks)*50, func() {
				sr := g.NewSession().Stream()
				for _, c := range chunks {
					sr.Write(c)
				}
				sr.Flush()
			})
		})
	}
}

// BenchmarkOutput2KB is the non-streamed reference for BenchmarkStream.
func BenchmarkOutput2KB(b *testing.B) {
	resp := readTestdata(b, "response_2k.txt")
	g, err := New(benchPolicy(), nil, testKey)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(resp)))
	b.ReportAllocs()
	for b.Loop() {
		g.NewSession().Output(resp)
	}
}

func itoa(n int) string {
	return string(rune('0'+n/10%10)) + string(rune('0'+n%10))
}
