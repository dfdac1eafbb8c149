package window

import (
	"math"
	"testing"
	"time"

	"github.com/edgewan/edgewan/telemetry"
)

// probe is one input: an RTT in ms, or a loss.
type probe struct {
	rttMs float64
	lost  bool
}

func ms(v float64) probe { return probe{rttMs: v} }

var loss = probe{lost: true}

func feed(w *Window, ps []probe) []Change {
	out := make([]Change, len(ps))
	for i, p := range ps {
		if p.lost {
			out[i] = w.AddLoss()
		} else {
			out[i] = w.AddRTT(time.Duration(p.rttMs * float64(time.Millisecond)))
		}
	}
	return out
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// jitterOf replays RFC 3550's estimator over answered RTTs, as the reference.
func jitterOf(rtts ...float64) float64 {
	var j float64
	for i := 1; i < len(rtts); i++ {
		j += (math.Abs(rtts[i]-rtts[i-1]) - j) / 16
	}
	return j
}

func TestFlush(t *testing.T) {
	tests := []struct {
		name    string
		windows [][]probe // fed in turn, Flush after each; the last window is checked
		want    telemetry.TransportWindow
	}{
		{
			name:    "empty",
			windows: [][]probe{{}},
			want:    telemetry.TransportWindow{Name: "wan1", Method: "icmp"},
		},
		{
			name:    "all lost",
			windows: [][]probe{{loss, loss}},
			want:    telemetry.TransportWindow{Name: "wan1", Method: "icmp", Sent: 2, Lost: 2},
		},
		{
			name:    "one answer",
			windows: [][]probe{{ms(12.5)}},
			want: telemetry.TransportWindow{Name: "wan1", Method: "icmp", Sent: 1, LatencyMs: 12.5,
				P50Ms: 12.5, P95Ms: 12.5, MinMs: 12.5, MaxMs: 12.5},
		},
		{
			name:    "four answers and a loss",
			windows: [][]probe{{ms(40), ms(10), loss, ms(30), ms(20)}},
			want: telemetry.TransportWindow{Name: "wan1", Method: "icmp", Sent: 5, Lost: 1,
				LatencyMs: 25, P50Ms: 25, P95Ms: 30 + 0.85*10, MinMs: 10, MaxMs: 40,
				StdDevMs: math.Sqrt(125), JitterMs: jitterOf(40, 10, 30, 20),
				JitterN: 3, JitterMeanMs: 20, JitterSDMs: math.Sqrt(200.0 / 3)},
		},
		{
			name:    "percentiles interpolate",
			windows: [][]probe{{ms(1), ms(2), ms(3), ms(4), ms(5), ms(6), ms(7), ms(8), ms(9), ms(10), ms(11)}},
			want: telemetry.TransportWindow{Name: "wan1", Method: "icmp", Sent: 11,
				LatencyMs: 6, P50Ms: 6, P95Ms: 10.5, MinMs: 1, MaxMs: 11,
				StdDevMs: math.Sqrt(10), JitterMs: jitterOf(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11),
				JitterN: 10, JitterMeanMs: 1},
		},
		{
			name:    "jitter skips losses",
			windows: [][]probe{{ms(10), loss, loss, ms(26)}},
			want: telemetry.TransportWindow{Name: "wan1", Method: "icmp", Sent: 4, Lost: 2,
				LatencyMs: 18, P50Ms: 18, P95Ms: 10 + 0.95*16, MinMs: 10, MaxMs: 26, StdDevMs: 8,
				JitterMs: 1, JitterN: 1, JitterMeanMs: 16},
		},
		{
			name:    "jitter carries across windows, the rest does not",
			windows: [][]probe{{ms(10), ms(42)}, {ms(10)}},
			want: telemetry.TransportWindow{Name: "wan1", Method: "icmp", Sent: 1,
				LatencyMs: 10, P50Ms: 10, P95Ms: 10, MinMs: 10, MaxMs: 10,
				JitterMs: jitterOf(10, 42, 10), JitterN: 1, JitterMeanMs: 32}, // the difference 42 -> 10 is the second window's
		},
		{
			name:    "jitter reported in an all-lost window",
			windows: [][]probe{{ms(10), ms(26)}, {loss}},
			want:    telemetry.TransportWindow{Name: "wan1", Method: "icmp", Sent: 1, Lost: 1, JitterMs: 1},
		},
		{
			name:    "down at the window's end",
			windows: [][]probe{{ms(10), loss, loss, loss}},
			want: telemetry.TransportWindow{Name: "wan1", Method: "icmp", Sent: 4, Lost: 3,
				LatencyMs: 10, P50Ms: 10, P95Ms: 10, MinMs: 10, MaxMs: 10, Down: true},
		},
		{
			name:    "down and back up within the window",
			windows: [][]probe{{loss, loss, loss, ms(10)}},
			want: telemetry.TransportWindow{Name: "wan1", Method: "icmp", Sent: 4, Lost: 3,
				LatencyMs: 10, P50Ms: 10, P95Ms: 10, MinMs: 10, MaxMs: 10},
		},
		{
			name:    "clamped RTTs",
			windows: [][]probe{{ms(-5), ms(1e9)}},
			want: telemetry.TransportWindow{Name: "wan1", Method: "icmp", Sent: 2,
				LatencyMs: 300_000, P50Ms: 300_000, P95Ms: 570_000, MinMs: 0, MaxMs: 600_000,
				StdDevMs: 300_000, JitterMs: 600_000.0 / 16, JitterN: 1, JitterMeanMs: 600_000},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := New(Options{Name: "wan1", Method: "icmp"})
			var got telemetry.TransportWindow
			for _, ps := range tt.windows {
				feed(w, ps)
				got = w.Flush()
			}
			checkWindow(t, got, tt.want)
			r := telemetry.Report{V: telemetry.SchemaVersion, Site: "s1", Device: "d1", Time: time.Unix(1, 0),
				WindowMs: 10_000, Transport: []telemetry.TransportWindow{got}}
			if err := r.Validate("s1"); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}

func checkWindow(t *testing.T, got, want telemetry.TransportWindow) {
	t.Helper()
	if got.Name != want.Name || got.Method != want.Method || got.Sent != want.Sent ||
		got.Lost != want.Lost || got.Down != want.Down || got.JitterN != want.JitterN {
		t.Errorf("got name=%q method=%q sent=%d lost=%d down=%v jitter_n=%d; want name=%q method=%q sent=%d lost=%d down=%v jitter_n=%d",
			got.Name, got.Method, got.Sent, got.Lost, got.Down, got.JitterN, want.Name, want.Method, want.Sent, want.Lost, want.Down, want.JitterN)
	}
	for _, f := range []struct {
		name      string
		got, want float64
	}{
		{"LatencyMs", got.LatencyMs, want.LatencyMs},
		{"P50Ms", got.P50Ms, want.P50Ms},
		{"P95Ms", got.P95Ms, want.P95Ms},
		{"MinMs", got.MinMs, want.MinMs},
		{"MaxMs", got.MaxMs, want.MaxMs},
		{"JitterMs", got.JitterMs, want.JitterMs},
		{"StdDevMs", got.StdDevMs, want.StdDevMs},
		{"JitterMeanMs", got.JitterMeanMs, want.JitterMeanMs},
		{"JitterSDMs", got.JitterSDMs, want.JitterSDMs},
	} {
		if !near(f.got, f.want) {
			t.Errorf("%s: got %v; want %v", f.name, f.got, f.want)
		}
	}
}

func TestDown(t *testing.T) {
	tests := []struct {
		name      string
		downAfter int
		windows   [][]probe // Flush between windows
		want      []Change  // per probe, all windows concatenated
	}{
		{
			name:    "default three losses",
			windows: [][]probe{{loss, loss, loss, loss, ms(5), loss}},
			want:    []Change{NoChange, NoChange, WentDown, NoChange, CameUp, NoChange},
		},
		{
			name:      "one loss",
			downAfter: 1,
			windows:   [][]probe{{ms(5), loss, ms(5), loss, loss}},
			want:      []Change{NoChange, WentDown, CameUp, WentDown, NoChange},
		},
		{
			name:    "an answer resets the run",
			windows: [][]probe{{loss, loss, ms(5), loss, loss, ms(5)}},
			want:    []Change{NoChange, NoChange, NoChange, NoChange, NoChange, NoChange},
		},
		{
			name:    "run counted across windows",
			windows: [][]probe{{ms(5), loss, loss}, {loss}, {ms(5)}},
			want:    []Change{NoChange, NoChange, NoChange, WentDown, CameUp},
		},
		{
			name:      "never",
			downAfter: -1,
			windows:   [][]probe{{loss, loss, loss, loss, loss, ms(5)}},
			want:      []Change{NoChange, NoChange, NoChange, NoChange, NoChange, NoChange},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := New(Options{Name: "wan1", DownAfter: tt.downAfter})
			var got []Change
			for _, ps := range tt.windows {
				got = append(got, feed(w, ps)...)
				down := w.Down()
				if tw := w.Flush(); tw.Down != down {
					t.Errorf("Flush().Down = %v; want %v (Down())", tw.Down, down)
				}
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d changes; want %d", len(got), len(tt.want))
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("probe %d: got %v; want %v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

// TestReservoir checks the bounded buffer: past MaxSamples the buffer does not grow, exact
// figures stay exact and percentiles stay close.
func TestReservoir(t *testing.T) {
	tests := []struct {
		name       string
		maxSamples int
		n          int // answered probes, RTTs 1..n ms in a scrambled order
		tolerance  float64
	}{
		{name: "fits", maxSamples: 4096, n: 4096, tolerance: 1e-9},
		{name: "twice over", maxSamples: 1000, n: 2000, tolerance: 0.05},
		{name: "far over", maxSamples: 500, n: 100_000, tolerance: 0.05},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := New(Options{Name: "wan1", MaxSamples: tt.maxSamples})
			buf := &w.samples[:1][0]
			// i*7919 mod n visits 1..n once each when n is not a multiple of 7919 (a prime).
			for i := 1; i <= tt.n; i++ {
				v := (i*7919)%tt.n + 1
				w.AddRTT(time.Duration(v) * time.Millisecond)
			}
			if len(w.samples) != min(tt.n, tt.maxSamples) || cap(w.samples) != tt.maxSamples || &w.samples[:1][0] != buf {
				t.Fatalf("buffer: len %d cap %d (moved: %v); want len %d cap %d, not moved",
					len(w.samples), cap(w.samples), &w.samples[:1][0] != buf, min(tt.n, tt.maxSamples), tt.maxSamples)
			}
			got := w.Flush()
			n := float64(tt.n)
			exact := []struct {
				name      string
				got, want float64
			}{
				{"LatencyMs", got.LatencyMs, (n + 1) / 2},
				{"MinMs", got.MinMs, 1},
				{"MaxMs", got.MaxMs, n},
				{"StdDevMs", got.StdDevMs, math.Sqrt((n*n - 1) / 12)},
			}
			for _, f := range exact {
				if math.Abs(f.got-f.want) > 1e-6*f.want {
					t.Errorf("%s: got %v; want %v", f.name, f.got, f.want)
				}
			}
			for _, f := range []struct {
				name      string
				got, want float64
			}{
				{"P50Ms", got.P50Ms, 1 + 0.5*(n-1)},
				{"P95Ms", got.P95Ms, 1 + 0.95*(n-1)},
			} {
				if math.Abs(f.got-f.want) > tt.tolerance*n {
					t.Errorf("%s: got %v; want %v ± %v", f.name, f.got, f.want, tt.tolerance*n)
				}
			}
		})
	}
}

func TestChangeString(t *testing.T) {
	for _, tt := range []struct {
		c    Change
		want string
	}{{NoChange, "unchanged"}, {WentDown, "down"}, {CameUp, "up"}} {
		if got := tt.c.String(); got != tt.want {
			t.Errorf("%d.String() = %q; want %q", tt.c, got, tt.want)
		}
	}
}

func TestAddAllocs(t *testing.T) {
	w := New(Options{Name: "wan1", MaxSamples: 64})
	i := 0
	allocs := testing.AllocsPerRun(10_000, func() {
		i++
		if i%10 == 0 {
			w.AddLoss()
		} else {
			w.AddRTT(time.Duration(i%97) * time.Millisecond)
		}
		if i%1000 == 0 {
			w.Flush()
		}
	})
	if allocs != 0 {
		t.Errorf("got %v allocs per probe; want 0", allocs)
	}
}

// BenchmarkAdd is one probe result (9 in 10 answered), with a Flush every 100 probes (a 10 s
// window of 10 probes/s), so the cost of sorting for percentiles is included.
func BenchmarkAdd(b *testing.B) {
	w := New(Options{Name: "wan1"})
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if i%10 == 9 {
			w.AddLoss()
		} else {
			w.AddRTT(time.Duration(20_000+(i*7919)%5000) * time.Microsecond)
		}
		if i%100 == 99 {
			w.Flush()
		}
	}
}

// BenchmarkFlush is the end of a full window of 4096 answered probes (the sort dominates).
func BenchmarkFlush(b *testing.B) {
	w := New(Options{Name: "wan1"})
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		for i := 0; i < DefaultMaxSamples; i++ {
			w.AddRTT(time.Duration(20_000+(i*7919)%5000) * time.Microsecond)
		}
		b.StartTimer()
		w.Flush()
	}
}

// Peek gives what Flush would, without ending the window.
func TestPeek(t *testing.T) {
	w := New(Options{Name: "mpls"})
	for _, ms := range []int{20, 35, 25, 60} {
		w.AddRTT(time.Duration(ms) * time.Millisecond)
	}
	w.AddLoss()
	p := w.Peek()
	if p.Sent != 5 || p.Lost != 1 || p.JitterN != 3 {
		t.Fatalf("peek %+v", p)
	}
	w.AddRTT(30 * time.Millisecond)
	p = w.Peek()
	if f := w.Flush(); f != p {
		t.Fatalf("peek %+v, flush %+v", p, f)
	}
	if e := w.Peek(); e.Sent != 0 || e.LatencyMs != 0 {
		t.Fatalf("after the flush: %+v", e)
	}
	w.AddRTT(20 * time.Millisecond)
	if n := testing.AllocsPerRun(100, func() { w.Peek() }); n != 0 {
		t.Errorf("Peek allocates %v times", n)
	}
}
