package rollup

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/edgewan/edgewan/telemetry"
)

// t0 is on a 6-hour boundary, so on every ring's bucket boundary.
var t0 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

func tw(sent, lost int, latency, jitter, maxMs float64) telemetry.TransportWindow {
	return telemetry.TransportWindow{Name: "wan1", Sent: sent, Lost: lost, LatencyMs: latency,
		JitterMs: jitter, MaxMs: maxMs, P50Ms: latency, P95Ms: maxMs, MinMs: latency}
}

type add struct {
	at   time.Duration // since t0
	w    telemetry.TransportWindow
	want bool // Add's result
}

func TestSummary(t *testing.T) {
	const day = 24 * time.Hour
	std := tw(10, 1, 20, 2, 30)
	down := std
	down.Down = true
	tests := []struct {
		name   string
		adds   []add
		now    time.Duration
		window time.Duration
		want   Stats // Resolution and From always checked
	}{
		{
			name:   "one window",
			adds:   []add{{10 * time.Second, std, true}},
			now:    30 * time.Second,
			window: time.Minute,
			want: Stats{Samples: 1, Sent: 10, Lost: 1, LatencyMs: 20, LossPct: 10, JitterMs: 2, MaxLatencyMs: 30,
				Resolution: time.Minute, From: at(-time.Minute)},
		},
		{
			name:   "empty",
			now:    30 * time.Second,
			window: 5 * time.Minute,
			want:   Stats{Resolution: time.Minute, From: at(-5 * time.Minute)},
		},
		{
			name:   "latency and jitter weighted by answered probes",
			adds:   []add{{0, tw(10, 0, 10, 1, 15), true}, {time.Second, tw(10, 5, 40, 4, 90), true}},
			now:    2 * time.Second,
			window: time.Minute,
			want: Stats{Samples: 2, Sent: 20, Lost: 5, LatencyMs: 20, LossPct: 25, JitterMs: 2, MaxLatencyMs: 90,
				Resolution: time.Minute, From: at(-time.Minute)},
		},
		{
			name:   "all lost",
			adds:   []add{{0, tw(10, 10, 0, 0, 0), true}},
			now:    time.Second,
			window: time.Minute,
			want:   Stats{Samples: 1, Sent: 10, Lost: 10, LossPct: 100, Resolution: time.Minute, From: at(-time.Minute)},
		},
		{
			name:   "down share",
			adds:   []add{{0, std, true}, {time.Second, down, true}, {2 * time.Second, down, true}, {3 * time.Second, std, true}},
			now:    4 * time.Second,
			window: time.Minute,
			want: Stats{Samples: 4, Sent: 40, Lost: 4, LatencyMs: 20, LossPct: 10, JitterMs: 2, MaxLatencyMs: 30,
				DownPct: 50, Resolution: time.Minute, From: at(-time.Minute)},
		},
		{
			name: "bucket boundary: the last second of a minute is before the window",
			adds: []add{{59 * time.Second, tw(1, 0, 100, 0, 100), true}, {60 * time.Second, std, true},
				{119 * time.Second, std, true}},
			now:    2 * time.Minute,
			window: time.Minute,
			want: Stats{Samples: 2, Sent: 20, Lost: 2, LatencyMs: 20, LossPct: 10, JitterMs: 2, MaxLatencyMs: 30,
				Resolution: time.Minute, From: at(time.Minute)},
		},
		{
			name:   "a window overlapping a bucket takes all of it",
			adds:   []add{{60 * time.Second, std, true}, {119 * time.Second, std, true}},
			now:    2*time.Minute + 30*time.Second,
			window: time.Minute,
			want: Stats{Samples: 2, Sent: 20, Lost: 2, LatencyMs: 20, LossPct: 10, JitterMs: 2, MaxLatencyMs: 30,
				Resolution: time.Minute, From: at(time.Minute)},
		},
		{
			name:   "1h from the minute ring",
			adds:   []add{{0, std, true}, {59 * time.Minute, std, true}},
			now:    60 * time.Minute,
			window: time.Hour,
			want: Stats{Samples: 2, Sent: 20, Lost: 2, LatencyMs: 20, LossPct: 10, JitterMs: 2, MaxLatencyMs: 30,
				Resolution: time.Minute, From: at(0)},
		},
		{
			name:   "1h unaligned needs 61 minutes, still the minute ring",
			adds:   []add{{0, std, true}},
			now:    60*time.Minute + 30*time.Second,
			window: time.Hour,
			want: Stats{Samples: 1, Sent: 10, Lost: 1, LatencyMs: 20, LossPct: 10, JitterMs: 2, MaxLatencyMs: 30,
				Resolution: time.Minute, From: at(0)},
		},
		{
			name:   "61m from the quarter-hour ring",
			adds:   []add{{0, std, true}},
			now:    61 * time.Minute,
			window: 61 * time.Minute,
			want: Stats{Samples: 1, Sent: 10, Lost: 1, LatencyMs: 20, LossPct: 10, JitterMs: 2, MaxLatencyMs: 30,
				Resolution: 15 * time.Minute, From: at(0)},
		},
		{
			name:   "minute ring wrapped, quarter-hour ring still holds it",
			adds:   []add{{0, tw(1, 0, 100, 0, 100), true}, {61 * time.Minute, std, true}},
			now:    61 * time.Minute,
			window: time.Hour,
			want: Stats{Samples: 1, Sent: 10, Lost: 1, LatencyMs: 20, LossPct: 10, JitterMs: 2, MaxLatencyMs: 30,
				Resolution: time.Minute, From: at(time.Minute)},
		},
		{
			name:   "minute ring wrapped: summarised from the quarter hours",
			adds:   []add{{0, tw(10, 0, 50, 0, 50), true}, {61 * time.Minute, tw(10, 0, 10, 0, 10), true}},
			now:    61 * time.Minute,
			window: 2 * time.Hour,
			want: Stats{Samples: 2, Sent: 20, LatencyMs: 30, MaxLatencyMs: 50,
				Resolution: 15 * time.Minute, From: at(-time.Hour)},
		},
		{
			name:   "24h from the quarter-hour ring",
			adds:   []add{{0, std, true}, {day - time.Second, std, true}},
			now:    day,
			window: day,
			want: Stats{Samples: 2, Sent: 20, Lost: 2, LatencyMs: 20, LossPct: 10, JitterMs: 2, MaxLatencyMs: 30,
				Resolution: 15 * time.Minute, From: at(0)},
		},
		{
			name:   "25h from the 6-hour ring",
			adds:   []add{{0, std, true}, {day, std, true}},
			now:    25 * time.Hour,
			window: 25 * time.Hour,
			want: Stats{Samples: 2, Sent: 20, Lost: 2, LatencyMs: 20, LossPct: 10, JitterMs: 2, MaxLatencyMs: 30,
				Resolution: 6 * time.Hour, From: at(0)},
		},
		{
			name:   "30d unaligned needs all 121 six-hour buckets",
			adds:   []add{{0, std, true}, {30*day + time.Hour, std, true}},
			now:    30*day + time.Hour,
			window: 30 * day,
			want: Stats{Samples: 2, Sent: 20, Lost: 2, LatencyMs: 20, LossPct: 10, JitterMs: 2, MaxLatencyMs: 30,
				Resolution: 6 * time.Hour, From: at(0)},
		},
		{
			name:   "over 30d: what the coarsest ring holds",
			adds:   []add{{0, std, true}, {30*day + 6*time.Hour, std, true}},
			now:    30*day + 6*time.Hour,
			window: 60 * day,
			want: Stats{Samples: 1, Sent: 10, Lost: 1, LatencyMs: 20, LossPct: 10, JitterMs: 2, MaxLatencyMs: 30,
				Resolution: 6 * time.Hour, From: at(6 * time.Hour)},
		},
		{
			name:   "a long gap clears every ring",
			adds:   []add{{0, tw(1, 0, 100, 0, 100), true}, {100 * day, std, true}},
			now:    100 * day,
			window: 30 * day,
			want: Stats{Samples: 1, Sent: 10, Lost: 1, LatencyMs: 20, LossPct: 10, JitterMs: 2, MaxLatencyMs: 30,
				Resolution: 6 * time.Hour, From: at(70 * day)},
		},
		{
			name:   "late window within the minute ring",
			adds:   []add{{10 * time.Minute, std, true}, {5 * time.Minute, std, true}},
			now:    10 * time.Minute,
			window: 10 * time.Minute,
			want: Stats{Samples: 2, Sent: 20, Lost: 2, LatencyMs: 20, LossPct: 10, JitterMs: 2, MaxLatencyMs: 30,
				Resolution: time.Minute, From: at(0)},
		},
		{
			name:   "late window only the coarser rings hold",
			adds:   []add{{3 * time.Hour, std, true}, {30 * time.Minute, std, true}},
			now:    3 * time.Hour,
			window: time.Hour,
			want: Stats{Samples: 1, Sent: 10, Lost: 1, LatencyMs: 20, LossPct: 10, JitterMs: 2, MaxLatencyMs: 30,
				Resolution: time.Minute, From: at(2 * time.Hour)},
		},
		{
			name:   "late window only the coarser rings hold, seen over 24h",
			adds:   []add{{3 * time.Hour, std, true}, {30 * time.Minute, std, true}},
			now:    3 * time.Hour,
			window: 24 * time.Hour,
			want: Stats{Samples: 2, Sent: 20, Lost: 2, LatencyMs: 20, LossPct: 10, JitterMs: 2, MaxLatencyMs: 30,
				Resolution: 15 * time.Minute, From: at(-21 * time.Hour)},
		},
		{
			name:   "window older than every ring is dropped",
			adds:   []add{{40 * day, std, true}, {0, std, false}},
			now:    40 * day,
			window: 30 * day,
			want: Stats{Samples: 1, Sent: 10, Lost: 1, LatencyMs: 20, LossPct: 10, JitterMs: 2, MaxLatencyMs: 30,
				Resolution: 6 * time.Hour, From: at(10 * day)},
		},
		{
			name:   "now long after the last window",
			adds:   []add{{0, std, true}},
			now:    2 * time.Hour,
			window: 5 * time.Minute,
			want:   Stats{Resolution: time.Minute, From: at(115 * time.Minute)},
		},
		{
			name:   "before 1970",
			adds:   []add{{-t0.Sub(time.Unix(-90, 0)), std, true}},
			now:    -t0.Sub(time.Unix(-60, 0)),
			window: time.Minute,
			want: Stats{Samples: 1, Sent: 10, Lost: 1, LatencyMs: 20, LossPct: 10, JitterMs: 2, MaxLatencyMs: 30,
				Resolution: time.Minute, From: time.Unix(-120, 0).UTC()},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s Series
			for i, a := range tt.adds {
				if got := s.Add(at(a.at), &a.w); got != a.want {
					t.Errorf("Add #%d at %v: got %v; want %v", i, a.at, got, a.want)
				}
			}
			checkStats(t, s.Summary(at(tt.now), tt.window), tt.want)
		})
	}
}

func checkStats(t *testing.T, got, want Stats) {
	t.Helper()
	if got.Samples != want.Samples || got.Sent != want.Sent || got.Lost != want.Lost ||
		got.Resolution != want.Resolution || !got.From.Equal(want.From) {
		t.Errorf("got samples=%d sent=%d lost=%d resolution=%v from=%v; want samples=%d sent=%d lost=%d resolution=%v from=%v",
			got.Samples, got.Sent, got.Lost, got.Resolution, got.From, want.Samples, want.Sent, want.Lost, want.Resolution, want.From)
	}
	for _, f := range []struct {
		name      string
		got, want float64
	}{
		{"LatencyMs", got.LatencyMs, want.LatencyMs},
		{"LossPct", got.LossPct, want.LossPct},
		{"JitterMs", got.JitterMs, want.JitterMs},
		{"MaxLatencyMs", got.MaxLatencyMs, want.MaxLatencyMs},
		{"DownPct", got.DownPct, want.DownPct},
	} {
		if math.Abs(f.got-f.want) > 1e-4*math.Max(1, math.Abs(f.want)) {
			t.Errorf("%s: got %v; want %v", f.name, f.got, f.want)
		}
	}
}

// TestSummaryRandom checks the rings against a plain list of every window, over 40 days of
// windows at random intervals (some late), queried at random times and windows.
func TestSummaryRandom(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, seed))
			type rec struct {
				sec int64
				w   telemetry.TransportWindow
			}
			var all []rec
			var s Series
			now := t0.Unix()
			latest := now
			for now < t0.Add(40*24*time.Hour).Unix() {
				now += rng.Int64N(int64(20 * time.Minute / time.Second))
				sec := now
				if rng.IntN(10) == 0 {
					sec -= rng.Int64N(int64(3 * time.Hour / time.Second)) // late
				}
				sent := 1 + rng.IntN(20)
				w := tw(sent, rng.IntN(sent+1), float64(rng.IntN(200)), float64(rng.IntN(10)), float64(rng.IntN(300)))
				s.Add(time.Unix(sec, 0), &w)
				all = append(all, rec{sec, w})
				latest = max(latest, sec)

				if rng.IntN(20) != 0 {
					continue
				}
				q := latest + rng.Int64N(3600)
				window := time.Duration(60+rng.Int64N(int64(MaxWindow/time.Second))) * time.Second
				got := s.Summary(time.Unix(q, 0), window)

				// Expected: the finest ring with room for every bucket overlapping the query;
				// from it, every window in those buckets that the ring still holds (within n
				// buckets of the newest window's).
				from := q - int64(window/time.Second)
				var step, n int64
				for _, r := range Resolutions {
					step, n = int64(r.Step/time.Second), int64(r.Buckets)
					if epoch(q, step)-epoch(from, step)+1 <= n {
						break
					}
				}
				if got.Resolution != time.Duration(step)*time.Second {
					t.Fatalf("at %d (+%v): got resolution %v; want %ds", q-t0.Unix(), window, got.Resolution, step)
				}
				lo, hi := epoch(from, step), epoch(q, step)
				head := epoch(latest, step)
				var want Stats
				var latSum float64
				for _, r := range all {
					if e := epoch(r.sec, step); e >= lo && e <= hi && e > head-n {
						want.Samples++
						want.Sent += int64(r.w.Sent)
						want.Lost += int64(r.w.Lost)
						latSum += r.w.LatencyMs * float64(r.w.Sent-r.w.Lost)
					}
				}
				if got.Samples != want.Samples || got.Sent != want.Sent || got.Lost != want.Lost {
					t.Fatalf("at %d (+%v): got samples=%d sent=%d lost=%d; want %d %d %d",
						q-t0.Unix(), window, got.Samples, got.Sent, got.Lost, want.Samples, want.Sent, want.Lost)
				}
				if a := want.Sent - want.Lost; a > 0 {
					if w := latSum / float64(a); math.Abs(got.LatencyMs-w) > 1e-4*math.Max(1, w) {
						t.Fatalf("latency: got %v; want %v", got.LatencyMs, w)
					}
				}
			}
		})
	}
}

func TestParseWindow(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr string
	}{
		{in: "1m", want: time.Minute},
		{in: "5m", want: 5 * time.Minute},
		{in: "90s", want: 90 * time.Second},
		{in: "1h30m", want: 90 * time.Minute},
		{in: "24h", want: 24 * time.Hour},
		{in: "1d", want: 24 * time.Hour},
		{in: "7d", want: 7 * 24 * time.Hour},
		{in: "1d12h", want: 36 * time.Hour},
		{in: "30d", want: MaxWindow},
		{in: "720h", want: MaxWindow},
		{in: "", wantErr: "is empty"},
		{in: "59s", wantErr: "too short"},
		{in: "0", wantErr: "too short"},
		{in: "-5m", wantErr: "not a duration"},
		{in: "+5m", wantErr: "not a duration"},
		{in: "31d", wantErr: "too long"},
		{in: "30d1s", wantErr: "too long"},
		{in: "99999d", wantErr: "not a duration"},
		{in: "d", wantErr: "not a duration"},
		{in: "1.5d", wantErr: "not a duration"},
		{in: "1w", wantErr: "not a duration"},
		{in: "5", wantErr: "not a duration"},
		{in: "5 m", wantErr: "not a duration"},
		{in: "1h2d", wantErr: "not a duration"},
		{in: "1d-1h", wantErr: "not a duration"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseWindow(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "1m to 30d") {
					t.Fatalf("got %v, %v; want an error with %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestStore(t *testing.T) {
	s := NewStore()
	now := at(30 * time.Second)
	r := &telemetry.Report{Site: "site-1", Time: now.Add(time.Hour), Transport: []telemetry.TransportWindow{
		{Name: "wan2", Sent: 10, Lost: 5, LatencyMs: 50, MaxMs: 60},
		{Name: "wan1", Sent: 10, LatencyMs: 10, MaxMs: 12},
	}}
	if n := s.AddReport(now, r); n != 2 { // an hour ahead of now: added at now
		t.Fatalf("AddReport: got %d; want 2", n)
	}
	past := &telemetry.Report{Site: "site-1", Time: now.Add(-10 * time.Minute), Transport: []telemetry.TransportWindow{
		{Name: "wan1", Sent: 10, LatencyMs: 100, MaxMs: 100}}}
	if n := s.AddReport(now, past); n != 1 {
		t.Fatalf("AddReport(past): got %d; want 1", n)
	}
	w3 := tw(4, 0, 5, 1, 6)
	w3.Name = "lte"
	if !s.Add(now, "site-2", &w3) {
		t.Fatal("Add: got false; want true")
	}

	tests := []struct {
		name          string
		site, transp  string
		wantOK        bool
		wantSamples   int
		wantLatencyMs float64
	}{
		{name: "known", site: "site-1", transp: "wan2", wantOK: true, wantSamples: 1, wantLatencyMs: 50},
		{name: "other site", site: "site-2", transp: "lte", wantOK: true, wantSamples: 1, wantLatencyMs: 5},
		{name: "unknown transport", site: "site-1", transp: "lte"},
		{name: "unknown site", site: "site-3", transp: "wan1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, ok := s.Summary(now, tt.site, tt.transp, 5*time.Minute)
			if ok != tt.wantOK || st.Samples != tt.wantSamples || st.LatencyMs != tt.wantLatencyMs {
				t.Errorf("got ok=%v samples=%d latency=%v; want %v %d %v", ok, st.Samples, st.LatencyMs,
					tt.wantOK, tt.wantSamples, tt.wantLatencyMs)
			}
		})
	}

	site := s.Site(now, "site-1", 5*time.Minute)
	if len(site) != 2 || site[0].Transport != "wan1" || site[1].Transport != "wan2" || site[1].LossPct != 50 || site[0].Samples != 1 {
		t.Errorf("Site: got %+v; want wan1 (1 window in 5m) then wan2 (50%% loss)", site)
	}
	if st, _ := s.Summary(now, "site-1", "wan1", 15*time.Minute); st.Samples != 2 || st.LatencyMs != 55 {
		t.Errorf("Summary 15m with the past report: got samples=%d latency=%v; want 2 55", st.Samples, st.LatencyMs)
	}
	if got := s.Site(now, "nope", time.Minute); got != nil {
		t.Errorf("Site(unknown): got %+v; want nil", got)
	}
	if got := s.Len(); got != 3 {
		t.Errorf("Len: got %d; want 3", got)
	}
	s.Delete("site-1")
	if _, ok := s.Summary(now, "site-1", "wan1", time.Minute); ok || s.Len() != 1 {
		t.Errorf("after Delete: ok=%v Len=%d; want false 1", ok, s.Len())
	}
	// The deleted site's Series are reused, cleared.
	for _, name := range []string{"wan1", "wan2", "wan3"} {
		w := tw(10, 0, 7, 0, 7)
		w.Name = name
		s.Add(now, "site-4", &w)
		if st, _ := s.Summary(now, "site-4", name, time.Minute); st.Samples != 1 || st.LatencyMs != 7 {
			t.Errorf("new site after Delete, %s: got samples=%d latency=%v; want 1 7", name, st.Samples, st.LatencyMs)
		}
	}
}

func TestStoreTransportLimit(t *testing.T) {
	s := NewStore()
	for i := 0; i < MaxTransportsPerSite+3; i++ {
		w := tw(1, 0, 1, 0, 1)
		w.Name = fmt.Sprintf("t%d", i)
		if got, want := s.Add(t0, "s", &w), i < MaxTransportsPerSite; got != want {
			t.Errorf("Add transport %d: got %v; want %v", i, got, want)
		}
	}
	if got := s.Len(); got != MaxTransportsPerSite {
		t.Errorf("Len: got %d; want %d", got, MaxTransportsPerSite)
	}
}

// TestStoreConcurrent runs adders and readers together; run with -race.
func TestStoreConcurrent(t *testing.T) {
	s := NewStore()
	const sites, perSite = 50, 200
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := tw(10, 1, 20, 2, 30)
			for i := 0; i < sites*perSite/4; i++ {
				s.Add(at(time.Duration(i%60)*time.Second), fmt.Sprintf("site-%d", i%sites), &w)
			}
		}()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				s.Site(at(time.Minute), fmt.Sprintf("site-%d", i%sites), time.Hour)
			}
		}()
	}
	wg.Wait()
	var total int
	for i := 0; i < sites; i++ {
		st, ok := s.Summary(at(time.Minute), fmt.Sprintf("site-%d", i), "wan1", time.Hour)
		if !ok {
			t.Fatalf("site-%d missing", i)
		}
		total += st.Samples
	}
	if total != sites*perSite {
		t.Errorf("got %d windows; want %d", total, sites*perSite)
	}
}

func TestAllocs(t *testing.T) {
	s := NewStore()
	w := tw(10, 1, 20, 2, 30)
	s.Add(t0, "site-1", &w)
	sec := 0
	tests := []struct {
		name string
		f    func()
	}{
		{"Store.Add", func() { sec++; s.Add(at(time.Duration(sec)*time.Second), "site-1", &w) }},
		{"Store.Summary 5m", func() { s.Summary(at(time.Hour), "site-1", "wan1", 5*time.Minute) }},
		{"Store.Summary 30d", func() { s.Summary(at(time.Hour), "site-1", "wan1", MaxWindow) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := testing.AllocsPerRun(1000, tt.f); got != 0 {
				t.Errorf("got %v allocs per call; want 0", got)
			}
		})
	}
}

func TestSeriesSize(t *testing.T) {
	if got := unsafe.Sizeof(Series{}); got > 8<<10 {
		t.Errorf("Series is %d bytes; want at most 8 KiB", got)
	}
}

// fleet makes a Store of 10,000 sites x 3 transports, each with one window.
func fleet(tb testing.TB) (*Store, []string) {
	tb.Helper()
	s := NewStore()
	sites := make([]string, 10_000)
	r := &telemetry.Report{Transport: []telemetry.TransportWindow{tw(10, 1, 20, 2, 30), tw(10, 0, 30, 3, 40), tw(10, 2, 50, 5, 90)}}
	r.Transport[1].Name, r.Transport[2].Name = "wan2", "lte"
	for i := range sites {
		sites[i] = fmt.Sprintf("site-%05d", i)
		r.Site = sites[i]
		s.AddReport(t0, r)
	}
	return s, sites
}

// BenchmarkAdd is one Store.Add of a transport window, round-robin over a fleet of 10,000 sites x
// 3 transports, the clock moving one second per round (30,000 windows per second).
func BenchmarkAdd(b *testing.B) {
	s, sites := fleet(b)
	names := [3]string{"wan1", "wan2", "lte"}
	w := tw(10, 1, 20, 2, 30)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		w.Name = names[i%3]
		s.Add(at(time.Duration(i/30_000)*time.Second), sites[(i/3)%len(sites)], &w)
	}
}

// BenchmarkSeriesAdd is one Series.Add, without the Store's lookup and lock.
func BenchmarkSeriesAdd(b *testing.B) {
	var s Series
	w := tw(10, 1, 20, 2, 30)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		s.Add(at(time.Duration(i)*time.Second), &w)
	}
}

// BenchmarkSummary is one transport's Summary from a Store of the full fleet, with 30 days of
// history (a window every 10 s).
func BenchmarkSummary(b *testing.B) {
	s, sites := fleet(b)
	w := tw(10, 1, 20, 2, 30)
	for sec := 0; sec < 30*24*3600; sec += 10 {
		s.Add(at(time.Duration(sec)*time.Second), sites[0], &w)
	}
	now := at(30 * 24 * time.Hour)
	for _, window := range []string{"5m", "24h", "30d"} {
		d, _ := ParseWindow(window)
		b.Run(window, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if st, _ := s.Summary(now, sites[0], "wan1", d); st.Samples == 0 {
					b.Fatal("no samples")
				}
			}
		})
	}
}

// BenchmarkMemory reports the heap bytes per transport of a Store holding the full fleet.
func BenchmarkMemory(b *testing.B) {
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		s, _ := fleet(b)
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(s.Len()), "bytes/transport")
		runtime.KeepAlive(s)
	}
}
