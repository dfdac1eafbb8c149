package steering

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

var t0 = time.Unix(1_700_000_000, 0)

// at is the end of window i (1-based) of 1-second windows.
func at(i int) time.Time { return t0.Add(time.Duration(i) * time.Second) }

var (
	good = Metrics{LatencyMs: 20, LossPct: 0, JitterMs: 2}
	slow = Metrics{LatencyMs: 180, LossPct: 0, JitterMs: 2} // misses voice (150 ms), not video or Degraded
	bad  = Metrics{LatencyMs: 500, LossPct: 10, JitterMs: 60}
	down = Metrics{Down: true}
)

var testTransports = []string{"mpls", "inet", "lte"}

func testClasses() []Class {
	return []Class{
		{Name: "voice", SLA: Thresholds{MaxLatencyMs: 150, MaxLossPct: 1, MaxJitterMs: 30}, Preferred: []string{"mpls", "inet", "lte"}},
		{Name: "video", SLA: Thresholds{MaxLatencyMs: 250, MaxLossPct: 2}, Preferred: []string{"mpls", "inet"}},
		{Name: "bulk", SLA: Thresholds{MaxLossPct: 5}, Preferred: []string{"inet", "lte"}},
		{Name: "default"},
	}
}

// testOptions: BreachAfter 3, RecoverAfter 5, HoldDown 30 s, no damping.
func testOptions() Options {
	o := DefaultOptions()
	o.RecoverAfter = 5
	o.Damping = Damping{}
	return o
}

func newTestSite(t testing.TB, o Options) *Site {
	t.Helper()
	s, err := NewSite(testTransports, testClasses(), o)
	if err != nil {
		t.Fatalf("NewSite: got error %v; want nil", err)
	}
	return s
}

// window feeds one window to every transport, with m for those named in ms and good for the
// others, then evaluates.
func window(s *Site, now time.Time, ms map[string]Metrics) []Decision {
	for _, name := range testTransports {
		m, ok := ms[name]
		if !ok {
			m = good
		}
		s.Observe(now, name, m)
	}
	return s.Evaluate(now, nil)
}

// switches returns the PathSwitched decisions among ds as "class:from>to/reason".
func switches(ds []Decision) []string {
	var out []string
	for _, d := range ds {
		if d.Kind == PathSwitched {
			out = append(out, fmt.Sprintf("%s:%s>%s/%s", d.Class, d.From, d.To, d.Reason))
		}
	}
	return out
}

func kinds(ds []Decision) string {
	var b strings.Builder
	for i, d := range ds {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s(%s%s)", d.Kind, d.Transport, d.Class)
	}
	return b.String()
}

func paths(s *Site) string {
	var b strings.Builder
	for i, c := range testClasses() {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(c.Name + "=" + s.Path(c.Name))
	}
	return b.String()
}

func TestSteadyInputNoDecisions(t *testing.T) {
	tests := []struct {
		name string
		ms   map[string]Metrics
	}{
		{"all good", nil},
		{"lte slow but unused by voice", map[string]Metrics{"lte": slow}},
		{"noisy but within every SLA", map[string]Metrics{"mpls": {LatencyMs: 149, LossPct: 0.9, JitterMs: 29}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestSite(t, DefaultOptions())
			for i := 1; i <= 3600; i++ {
				if ds := window(s, at(i), tt.ms); len(ds) != 0 {
					t.Fatalf("window %d: got decisions %s; want none", i, kinds(ds))
				}
			}
			if got, want := paths(s), "voice=mpls video=mpls bulk=inet default=mpls"; got != want {
				t.Errorf("paths: got %s; want %s", got, want)
			}
		})
	}
}

func TestDownSwitchesEveryClassAtOnce(t *testing.T) {
	tests := []struct {
		name      string
		down      []string
		want      []string // switches, in class order
		wantPaths string
	}{
		{"mpls", []string{"mpls"},
			[]string{"voice:mpls>inet/down", "video:mpls>inet/down", "default:mpls>inet/down"},
			"voice=inet video=inet bulk=inet default=inet"},
		{"inet", []string{"inet"},
			[]string{"bulk:inet>lte/down"},
			"voice=mpls video=mpls bulk=lte default=mpls"},
		{"mpls and inet", []string{"mpls", "inet"},
			[]string{"voice:mpls>lte/down", "video:mpls>lte/down", "bulk:inet>lte/down", "default:mpls>lte/down"},
			"voice=lte video=lte bulk=lte default=lte"},
		{"lte, unused", []string{"lte"}, nil, "voice=mpls video=mpls bulk=inet default=mpls"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestSite(t, DefaultOptions())
			window(s, at(1), nil)
			ms := map[string]Metrics{}
			for _, name := range tt.down {
				ms[name] = down
			}
			ds := window(s, at(2), ms)
			if got := switches(ds); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("switches: got %v; want %v", got, tt.want)
			}
			if got := paths(s); got != tt.wantPaths {
				t.Errorf("paths: got %s; want %s", got, tt.wantPaths)
			}
			var downs int
			for _, d := range ds {
				if d.Kind == TransportDown {
					downs++
				}
				if d.Kind == SLABreach {
					t.Errorf("got %s for %s; want none, another transport meets the SLA", d.Kind, d.Class)
				}
			}
			if downs != len(tt.down) {
				t.Errorf("TransportDown decisions: got %d; want %d", downs, len(tt.down))
			}
		})
	}
}

func TestSLABreachSwitchesAfterBreachAfterWindows(t *testing.T) {
	tests := []struct {
		name        string
		breachAfter int
	}{
		{"1", 1},
		{"3", 3},
		{"7", 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := testOptions()
			o.BreachAfter = tt.breachAfter
			s := newTestSite(t, o)
			for i := 1; i <= tt.breachAfter+5; i++ {
				ds := window(s, at(i), map[string]Metrics{"mpls": slow})
				var want []string
				if i == tt.breachAfter {
					want = []string{"voice:mpls>inet/sla"} // video's SLA allows 180 ms
				}
				if got := switches(ds); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("window %d: got switches %v; want %v", i, got, want)
				}
				for _, d := range ds {
					if d.Kind == TransportDegraded || d.Kind == SLABreach {
						t.Fatalf("window %d: got %s; want none (slow is within Degraded, inet meets voice)", i, d.Kind)
					}
				}
			}
		})
	}
}

func TestReturnWaitsForRecoveryAndHoldDown(t *testing.T) {
	tests := []struct {
		name string
		mpls func(i int) Metrics // window i of mpls
		// leave and back: the windows at which voice leaves mpls and comes back to it.
		leave, back int
	}{
		{"hold-down binds: 3 slow windows", func(i int) Metrics {
			if i <= 3 {
				return slow
			}
			return good
		}, 3, 33}, // breached at 3; 5 good windows by 8, but HoldDown runs to 33
		{"RecoverAfter binds: 60 slow windows", func(i int) Metrics {
			if i <= 60 {
				return slow
			}
			return good
		}, 3, 65}, // HoldDown long over; good windows 61..65
		{"a bad window restarts the count", func(i int) Metrics {
			if i <= 3 || i == 31 {
				return slow
			}
			return good
		}, 3, 36},
		{"Down: leaves at once, back after HoldDown", func(i int) Metrics {
			if i == 1 {
				return down
			}
			return good
		}, 1, 31},
		{"Down for 60 windows", func(i int) Metrics {
			if i <= 60 {
				return down
			}
			return good
		}, 1, 65},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestSite(t, testOptions())
			for i := 1; i <= 120; i++ {
				ds := window(s, at(i), map[string]Metrics{"mpls": tt.mpls(i)})
				var want []string
				switch i {
				case tt.leave:
					want = []string{"voice:mpls>inet/"}
				case tt.back:
					want = []string{"voice:inet>mpls/preferred"}
				}
				var got []string
				for _, sw := range switches(ds) {
					if strings.HasPrefix(sw, "voice:") {
						if i == tt.leave {
							sw = sw[:strings.LastIndexByte(sw, '/')+1]
						}
						got = append(got, sw)
					}
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("window %d: got voice switches %v; want %v", i, got, want)
				}
			}
		})
	}
}

func TestAllDownKeepsPath(t *testing.T) {
	s := newTestSite(t, testOptions())
	all := map[string]Metrics{"mpls": down, "inet": down, "lte": down}
	ds := window(s, at(1), all)
	if got := switches(ds); len(got) != 0 {
		t.Errorf("switches: got %v; want none", got)
	}
	if got, want := paths(s), "voice=mpls video=mpls bulk=inet default=mpls"; got != want {
		t.Errorf("paths: got %s; want %s", got, want)
	}
	breaches := 0
	for _, d := range ds {
		if d.Kind == SLABreach {
			breaches++
			if d.Reason != ReasonAllDown {
				t.Errorf("%s reason: got %q; want %q", d.Class, d.Reason, ReasonAllDown)
			}
		}
	}
	if breaches != 4 {
		t.Errorf("SLABreach decisions: got %d; want 4", breaches)
	}
	// lte comes back (RecoverAfter 5, HoldDown 30 s): every class moves to it at once.
	var got []string
	for i := 2; i <= 40; i++ {
		ds := window(s, at(i), map[string]Metrics{"mpls": down, "inet": down})
		if sw := switches(ds); len(sw) > 0 {
			got = append(got, fmt.Sprintf("%d %v", i, sw))
			for _, d := range ds {
				if d.Kind == SLABreach {
					t.Errorf("window %d: got SLABreach for %s; want SLARecovered", i, d.Class)
				}
			}
		}
	}
	want := []string{"31 [voice:mpls>lte/down video:mpls>lte/down bulk:inet>lte/down default:mpls>lte/down]"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("switches: got %v; want %v", got, want)
	}
}

func TestBestOfTheRest(t *testing.T) {
	lat := func(ms float64) Metrics { return Metrics{LatencyMs: ms} }
	tests := []struct {
		name  string
		steps []map[string]Metrics // one per window; good for the rest
		want  []string             // voice switches over all windows, "window:switch"
		met   bool                 // voice's SLA at the end
	}{
		{"lowest score when none meets the SLA",
			repeat(10, map[string]Metrics{"mpls": lat(400), "inet": lat(200), "lte": lat(160)}),
			[]string{"3:voice:mpls>lte/score"}, false},
		{"not for less than ScoreMargin",
			repeat(10, map[string]Metrics{"mpls": lat(190), "inet": lat(200), "lte": lat(160)}),
			nil, false}, // mpls 0.27 over, lte 0.07: 0.20 < 0.25
		{"scores crossing within HoldDown do not move it",
			append(repeat(3, map[string]Metrics{"mpls": lat(400), "inet": lat(200), "lte": lat(160)}),
				repeat(20, map[string]Metrics{"mpls": lat(400), "inet": lat(151), "lte": lat(300)})...),
			[]string{"3:voice:mpls>lte/score"}, false}, // inet wins on score at 4, but voice moved at 3
		{"scores crossing after HoldDown do",
			append(repeat(3, map[string]Metrics{"mpls": lat(400), "inet": lat(200), "lte": lat(160)}),
				repeat(40, map[string]Metrics{"mpls": lat(400), "inet": lat(151), "lte": lat(300)})...),
			[]string{"3:voice:mpls>lte/score", "33:voice:lte>inet/score"}, false},
		{"a transport meeting the SLA again wins at once",
			append(repeat(3, map[string]Metrics{"mpls": lat(400), "inet": lat(200), "lte": lat(160)}),
				repeat(40, map[string]Metrics{"mpls": lat(400), "lte": lat(160)})...),
			[]string{"3:voice:mpls>lte/score", "33:voice:lte>inet/sla"}, true}, // inet recovered at 33
		{"Down path goes to the best of the rest at once",
			append(repeat(3, map[string]Metrics{"mpls": lat(160), "inet": lat(400), "lte": lat(200)}),
				map[string]Metrics{"mpls": down, "inet": lat(400), "lte": lat(200)}),
			[]string{"4:voice:mpls>lte/down"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestSite(t, testOptions())
			var got []string
			for i, ms := range tt.steps {
				for _, sw := range switches(window(s, at(i+1), ms)) {
					if strings.HasPrefix(sw, "voice:") {
						got = append(got, fmt.Sprintf("%d:%s", i+1, sw))
					}
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("voice switches: got %v; want %v", got, tt.want)
			}
			if got := s.SLAMet("voice"); got != tt.met {
				t.Errorf("SLAMet(voice): got %v; want %v", got, tt.met)
			}
		})
	}
}

func repeat(n int, ms map[string]Metrics) []map[string]Metrics {
	out := make([]map[string]Metrics, n)
	for i := range out {
		out[i] = ms
	}
	return out
}

func TestSLAEvents(t *testing.T) {
	s := newTestSite(t, testOptions())
	var got []string
	for i := 1; i <= 80; i++ {
		ms := map[string]Metrics{"mpls": slow, "inet": slow, "lte": slow}
		if i > 40 {
			ms = nil
		}
		for _, d := range window(s, at(i), ms) {
			if d.Class == "voice" {
				got = append(got, fmt.Sprintf("%d:%s/%s/%s", i, d.Kind, d.Transport, d.Reason))
			}
		}
	}
	// At 3 all breach voice (none better by ScoreMargin); from 41 all are good, mpls recovers
	// at 45 (5 good windows, HoldDown since 3 over).
	want := []string{"3:sla.breach/mpls/sla", "45:sla.recovered/mpls/"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("voice decisions: got %v; want %v", got, want)
	}
}

func TestTransportStatusDecisions(t *testing.T) {
	tests := []struct {
		name string
		mpls func(i int) Metrics
		want []string // "window:kind"
	}{
		{"degraded then recovered", func(i int) Metrics {
			if i <= 10 {
				return bad
			}
			return good
		}, []string{"3:transport.degraded", "33:transport.recovered"}},
		{"short bursts do not degrade", func(i int) Metrics {
			if i%3 == 0 {
				return bad
			}
			return good
		}, nil},
		{"down then recovered", func(i int) Metrics {
			if i >= 5 && i <= 6 {
				return down
			}
			return good
		}, []string{"5:transport.down", "35:transport.recovered"}},
		{"down, up still degraded, recovered", func(i int) Metrics {
			switch {
			case i <= 3:
				return bad
			case i <= 10:
				return down
			case i <= 40:
				return bad
			}
			return good
		}, []string{"3:transport.degraded", "4:transport.down", "34:transport.degraded", "45:transport.recovered"}},
		{"degraded clears while down", func(i int) Metrics {
			switch {
			case i <= 3:
				return bad
			case i <= 10:
				return down
			}
			return good
		}, []string{"3:transport.degraded", "4:transport.down", "34:transport.recovered"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestSite(t, testOptions())
			var got []string
			for i := 1; i <= 100; i++ {
				for _, d := range window(s, at(i), map[string]Metrics{"mpls": tt.mpls(i)}) {
					if d.Transport == "mpls" && d.Kind <= TransportRecovered {
						got = append(got, fmt.Sprintf("%d:%s", i, d.Kind))
					}
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("mpls decisions: got %v; want %v", got, tt.want)
			}
		})
	}
}

func TestDampingSuppressesFlappingTransport(t *testing.T) {
	// mpls flaps for voice every 43 windows: 3 slow ones (breach at 43k+3), 40 good ones
	// (recovered at 43k+33). Penalties at each breach: 1000, 1905.5, 2725.4 >= 2000.
	flap := func(until int) func(i int) Metrics {
		return func(i int) Metrics {
			if i <= until && (i-1)%43 < 3 {
				return slow
			}
			return good
		}
	}
	withDamping := testOptions()
	withDamping.Damping = DefaultOptions().Damping
	tests := []struct {
		name    string
		opts    Options
		mpls    func(i int) Metrics
		windows int
		want    []int // windows at which voice returns to mpls
	}{
		{"damping: two returns, then suppressed while it flaps", withDamping, flap(1 << 30), 3600,
			[]int{33, 76}},
		{"damping: back once the penalty decays below Reuse", withDamping, flap(89), 900,
			[]int{33, 76, 648}}, // 2725.4 at 89 decays below 750 after 558.4 s
		{"no damping: back after every flap", testOptions(), flap(1 << 30), 300,
			[]int{33, 76, 119, 162, 205, 248, 291}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewSite(testTransports, testClasses(), tt.opts)
			if err != nil {
				t.Fatalf("NewSite: got error %v; want nil", err)
			}
			var got []int
			for i := 1; i <= tt.windows; i++ {
				for _, sw := range switches(window(s, at(i), map[string]Metrics{"mpls": tt.mpls(i)})) {
					if sw == "voice:inet>mpls/preferred" {
						got = append(got, i)
					}
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("returns to mpls: got %v; want %v", got, tt.want)
			}
		})
	}
}

func TestReconfigure(t *testing.T) {
	voiceFirstLTE := testClasses()
	voiceFirstLTE[0].Preferred = []string{"lte", "mpls", "inet"}
	withBusiness := append(testClasses(), Class{Name: "business", Preferred: []string{"mpls", "sat"}})
	tests := []struct {
		name       string
		before     []map[string]Metrics // windows 1..len(before)
		transports []string
		classes    []Class
		after      []map[string]Metrics // windows after Reconfigure
		wantNow    []string             // switches appended by Reconfigure
		want       []string             // "window:switch" after it, all classes
		wantPaths  string               // of the classes in the new policy, in order
	}{
		{"window counts kept",
			repeat(2, map[string]Metrics{"mpls": slow}),
			[]string{"mpls", "inet", "lte", "sat"}, withBusiness,
			repeat(2, map[string]Metrics{"mpls": slow}),
			nil, []string{"3:voice:mpls>inet/sla"}, // the 3rd slow window in all
			"voice=inet video=mpls bulk=inet default=mpls business=mpls"},
		{"breach and hold-down kept",
			repeat(3, map[string]Metrics{"mpls": slow}),
			testTransports, append(testClasses(), Class{Name: "business"}),
			repeat(40, nil),
			nil, []string{"33:voice:inet>mpls/preferred"}, // 30 s after the breach at 3, not after Reconfigure
			"voice=mpls video=mpls bulk=inet default=mpls business=mpls"},
		{"removed path moves at once",
			repeat(3, map[string]Metrics{"mpls": slow}),
			[]string{"mpls", "lte"}, without(testClasses(), "inet"),
			repeat(2, nil),
			[]string{"voice:inet>lte/removed", "bulk:inet>lte/removed"}, nil,
			"voice=lte video=mpls bulk=lte default=mpls"},
		{"new class starts on the best live transport",
			repeat(1, map[string]Metrics{"mpls": down}),
			[]string{"mpls", "inet", "lte", "sat"}, withBusiness,
			repeat(2, map[string]Metrics{"mpls": down}),
			nil, nil,
			"voice=inet video=inet bulk=inet default=inet business=sat"},
		{"changed order applies without waiting for HoldDown",
			repeat(1, map[string]Metrics{"mpls": down}), // voice switched at 1
			testTransports, voiceFirstLTE,
			repeat(2, map[string]Metrics{"mpls": down}),
			nil, []string{"2:voice:inet>lte/preferred"},
			"voice=lte video=inet bulk=inet default=inet"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestSite(t, testOptions())
			i := 0
			for _, ms := range tt.before {
				i++
				window(s, at(i), ms)
			}
			ds, err := s.Reconfigure(at(i), tt.transports, tt.classes, nil)
			if err != nil {
				t.Fatalf("Reconfigure: got error %v; want nil", err)
			}
			if got := switches(ds); fmt.Sprint(got) != fmt.Sprint(tt.wantNow) {
				t.Errorf("Reconfigure switches: got %v; want %v", got, tt.wantNow)
			}
			var got []string
			for _, ms := range tt.after {
				i++
				for _, name := range tt.transports {
					m, ok := ms[name]
					if !ok {
						m = good
					}
					s.Observe(at(i), name, m)
				}
				for _, sw := range switches(s.Evaluate(at(i), nil)) {
					got = append(got, fmt.Sprintf("%d:%s", i, sw))
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("switches after: got %v; want %v", got, tt.want)
			}
			var ps []string
			for _, c := range tt.classes {
				ps = append(ps, c.Name+"="+s.Path(c.Name))
			}
			if got := strings.Join(ps, " "); got != tt.wantPaths {
				t.Errorf("paths: got %s; want %s", got, tt.wantPaths)
			}
		})
	}
}

// without removes transport from the classes' Preferred lists.
func without(classes []Class, transport string) []Class {
	for i := range classes {
		var p []string
		for _, name := range classes[i].Preferred {
			if name != transport {
				p = append(p, name)
			}
		}
		classes[i].Preferred = p
	}
	return classes
}

func TestReconfigureErrorKeepsSite(t *testing.T) {
	s := newTestSite(t, testOptions())
	window(s, at(1), map[string]Metrics{"mpls": down})
	bad := []Class{{Name: "voice", Preferred: []string{"nope"}}}
	if _, err := s.Reconfigure(at(2), testTransports, bad, nil); err == nil {
		t.Fatalf("Reconfigure: got nil error; want one")
	}
	if got, want := paths(s), "voice=inet video=inet bulk=inet default=inet"; got != want {
		t.Errorf("paths: got %s; want %s", got, want)
	}
	if st, _ := s.Status("mpls"); st != Down {
		t.Errorf("Status(mpls): got %s; want %s", st, Down)
	}
}

func TestNewSiteErrors(t *testing.T) {
	tooMany := make([]string, 256)
	for i := range tooMany {
		tooMany[i] = fmt.Sprint("t", i)
	}
	invalid := DefaultOptions()
	invalid.BreachAfter = 0
	tests := []struct {
		name       string
		transports []string
		classes    []Class
		opts       Options
		want       string // in the error; "" for none
	}{
		{"ok", testTransports, testClasses(), DefaultOptions(), ""},
		{"no classes", testTransports, nil, DefaultOptions(), ""},
		{"no transports", nil, nil, DefaultOptions(), "0 transports"},
		{"too many transports", tooMany, nil, DefaultOptions(), "256 transports"},
		{"empty transport", []string{"a", ""}, nil, DefaultOptions(), "transport 1: empty name"},
		{"duplicate transport", []string{"a", "a"}, nil, DefaultOptions(), `transport "a": listed twice`},
		{"empty class", testTransports, []Class{{}}, DefaultOptions(), "class 0: empty name"},
		{"duplicate class", testTransports, []Class{{Name: "c"}, {Name: "c"}}, DefaultOptions(), `class "c": listed twice`},
		{"unknown preferred", testTransports, []Class{{Name: "c", Preferred: []string{"sat"}}}, DefaultOptions(), `"sat" is not in the site`},
		{"duplicate preferred", testTransports, []Class{{Name: "c", Preferred: []string{"lte", "lte"}}}, DefaultOptions(), `"lte" listed twice`},
		{"negative SLA", testTransports, []Class{{Name: "c", SLA: Thresholds{MaxLossPct: -1}}}, DefaultOptions(), "SLA"},
		{"invalid options", testTransports, nil, invalid, "BreachAfter 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewSite(tt.transports, tt.classes, tt.opts)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("got error %v; want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("got error %v; want one containing %q", err, tt.want)
			}
		})
	}
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name   string
		modify func(o *Options)
		want   string
	}{
		{"defaults", func(o *Options) {}, ""},
		{"zero hold-down, margin, thresholds and damping", func(o *Options) {
			o.HoldDown, o.ScoreMargin, o.Degraded, o.Damping = 0, 0, Thresholds{}, Damping{}
		}, ""},
		{"BreachAfter 0", func(o *Options) { o.BreachAfter = 0 }, "BreachAfter"},
		{"BreachAfter too big", func(o *Options) { o.BreachAfter = 1 << 16 }, "BreachAfter"},
		{"RecoverAfter 0", func(o *Options) { o.RecoverAfter = 0 }, "RecoverAfter"},
		{"negative HoldDown", func(o *Options) { o.HoldDown = -1 }, "HoldDown"},
		{"negative Degraded", func(o *Options) { o.Degraded.MaxJitterMs = -1 }, "Degraded"},
		{"negative ScoreMargin", func(o *Options) { o.ScoreMargin = -0.1 }, "ScoreMargin"},
		{"negative HalfLife", func(o *Options) { o.Damping.HalfLife = -1 }, "HalfLife"},
		{"Reuse above Suppress", func(o *Options) { o.Damping.Reuse = 3000 }, "Damping"},
		{"Max below Suppress", func(o *Options) { o.Damping.Max = 1500 }, "Damping"},
		{"zero Penalty", func(o *Options) { o.Damping.Penalty = 0 }, "Damping"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := DefaultOptions()
			tt.modify(&o)
			err := o.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("got error %v; want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("got error %v; want one containing %q", err, tt.want)
			}
		})
	}
}

func TestObserveAndLookupsOfUnknownNames(t *testing.T) {
	s := newTestSite(t, DefaultOptions())
	if s.Observe(at(1), "sat", good) {
		t.Errorf("Observe(sat): got true; want false")
	}
	if got := s.Path("nope"); got != "" {
		t.Errorf("Path(nope): got %q; want \"\"", got)
	}
	if _, ok := s.Status("sat"); ok {
		t.Errorf("Status(sat): got ok; want not ok")
	}
	if s.SLAMet("nope") {
		t.Errorf("SLAMet(nope): got true; want false")
	}
	if st, ok := s.Status("mpls"); st != Up || !ok {
		t.Errorf("Status(mpls): got %s, %v; want up, true", st, ok)
	}
}

func TestKindAndStatusStrings(t *testing.T) {
	tests := []struct {
		got, want string
	}{
		{TransportDegraded.String(), "transport.degraded"},
		{TransportDown.String(), "transport.down"},
		{TransportRecovered.String(), "transport.recovered"},
		{SLABreach.String(), "sla.breach"},
		{SLARecovered.String(), "sla.recovered"},
		{PathSwitched.String(), "path.switched"},
		{Kind(0).String(), "unknown"},
		{Kind(99).String(), "unknown"},
		{Up.String(), "up"},
		{Degraded.String(), "degraded"},
		{Down.String(), "down"},
		{Status(9).String(), "unknown"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q; want %q", tt.got, tt.want)
		}
	}
}

// TestAdopt: a restarted controller adopts the agent's paths; with healthy input they stay for
// the hold-down (no decision: a restart moves no traffic), unknown names change nothing, and
// real evidence still switches from there.
func TestAdopt(t *testing.T) {
	s := newTestSite(t, DefaultOptions())
	for _, c := range []struct{ class, path string }{{"voice", "inet"}, {"bulk", "lte"}} {
		if !s.Adopt(at(0), c.class, c.path) {
			t.Fatalf("Adopt(%s, %s) refused", c.class, c.path)
		}
	}
	if s.Adopt(at(0), "nope", "inet") || s.Adopt(at(0), "voice", "nope") {
		t.Fatal("Adopt took an unknown class or transport")
	}
	hold := int(DefaultOptions().HoldDown / time.Second)
	for i := 1; i < hold; i++ {
		if ds := window(s, at(i), nil); len(ds) != 0 {
			t.Fatalf("window %d after adopting: decisions %s; want none", i, kinds(ds))
		}
	}
	if got, want := paths(s), "voice=inet video=mpls bulk=lte default=mpls"; got != want {
		t.Fatalf("paths: got %s; want %s", got, want)
	}
	if ds := window(s, at(hold-1), map[string]Metrics{"inet": down}); !strings.Contains(kinds(ds), "path.switched") || s.Path("voice") == "inet" {
		t.Fatalf("inet down after adopting: decisions %s, voice on %s", kinds(ds), s.Path("voice"))
	}
}

// TestReconfigureEvidence: one window adds at most half the Detector's threshold to the latency
// test, so a second slow window decides a breach only if the first one's evidence was kept.
func TestReconfigureEvidence(t *testing.T) {
	slowN := Metrics{LatencyMs: 180, LatencySDMs: 5, JitterMs: 2, Probes: 20}
	voiceSLA := func(maxLatency float64) []Class {
		cs := testClasses()
		cs[0].SLA.MaxLatencyMs = maxLatency
		return cs
	}
	tests := []struct {
		name       string
		transports []string
		classes    []Class
		wantBreach bool // at the window after Reconfigure
	}{
		{"unchanged policy keeps evidence", testTransports, testClasses(), true},
		{"added transport keeps evidence", []string{"mpls", "inet", "lte", "sat"}, testClasses(), true},
		{"changed SLA resets evidence", testTransports, voiceSLA(160), false},
		{"other class's SLA changed keeps evidence", testTransports, func() []Class {
			cs := testClasses()
			cs[1].SLA.MaxLatencyMs = 300
			return cs
		}(), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestSite(t, testOptions())
			if ds := window(s, at(1), map[string]Metrics{"mpls": slowN}); len(switches(ds)) != 0 {
				t.Fatalf("switches after one slow window: got %v; the test needs the breach undecided", switches(ds))
			}
			if _, err := s.Reconfigure(at(1), tt.transports, tt.classes, nil); err != nil {
				t.Fatalf("Reconfigure: got error %v; want nil", err)
			}
			for _, name := range tt.transports {
				m := good
				if name == "mpls" {
					m = slowN
				}
				s.Observe(at(2), name, m)
			}
			got := fmt.Sprint(switches(s.Evaluate(at(2), nil)))
			if want := fmt.Sprint([]string{"voice:mpls>inet/sla"}); (got == want) != tt.wantBreach {
				t.Errorf("switches at the 2nd slow window: got %s; want a breach: %v", got, tt.wantBreach)
			}
		})
	}
}

// TestRevoke: a dead-link verdict disproved by a late answer. The transport is live again at
// once, the classes that moved stay until the hold-down (no flapping), a class whose latency
// bound the late answer misses by the margin stays off it after that too, and the others return.
func TestRevoke(t *testing.T) {
	for _, tc := range []struct {
		name     string
		rttMs    float64
		after    Metrics // mpls's windows after the revocation
		breached string  // classes breached on mpls by the late answer
		back     string  // switches back to mpls once the hold-down has passed
	}{
		{"+500 ms step: voice's and video's bounds missed", 520, Metrics{LatencyMs: 520, JitterMs: 2}, "voice video", "default:inet>mpls"},
		{"answer within every bound", 120, good, "", "voice:inet>mpls video:inet>mpls default:inet>mpls"},
		{"over voice's bound, not by the margin", 170, good, "", "voice:inet>mpls video:inet>mpls default:inet>mpls"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestSite(t, DefaultOptions()) // with damping: a revoked verdict gives its charge back
			window(s, at(1), nil)
			s.Observe(at(1).Add(300*time.Millisecond), "mpls", down)
			s.Evaluate(at(1).Add(300*time.Millisecond), nil)
			if s.Path("voice") != "inet" || s.Path("video") != "inet" || s.Path("default") != "inet" {
				t.Fatalf("after Down: voice on %s, video on %s, default on %s; want inet", s.Path("voice"), s.Path("video"), s.Path("default"))
			}
			if !s.Revoke(at(1).Add(500*time.Millisecond), "mpls", tc.rttMs) {
				t.Fatal("Revoke of a Down transport: false")
			}
			if st, _ := s.Status("mpls"); st == Down {
				t.Fatal("still Down after Revoke")
			}
			var breached []string
			for _, c := range []string{"voice", "video", "default"} {
				if !s.Usable(c, "mpls") {
					breached = append(breached, c)
				}
			}
			if got := strings.Join(breached, " "); got != tc.breached {
				t.Errorf("not usable on mpls after Revoke: %q; want %q", got, tc.breached)
			}
			if s.Revoke(at(1).Add(600*time.Millisecond), "mpls", tc.rttMs) || s.Revoke(at(1), "nope", 1) {
				t.Error("Revoke of a transport not Down (or unknown): true")
			}
			for i := 2; i <= 30; i++ {
				for _, d := range window(s, at(i), map[string]Metrics{"mpls": tc.after}) {
					if d.Kind == PathSwitched || d.Kind == TransportDown {
						t.Fatalf("window %d: %v within the hold-down", i, d)
					}
				}
			}
			var moved []string
			for i := 31; i <= 45; i++ {
				for _, d := range window(s, at(i), map[string]Metrics{"mpls": tc.after}) {
					if d.Kind == PathSwitched {
						moved = append(moved, d.Class+":"+d.From+">"+d.To)
					}
				}
			}
			if got := strings.Join(moved, " "); got != tc.back {
				t.Errorf("after the hold-down: %q; want %q", got, tc.back)
			}
		})
	}
}

// TestRevokeGivesChargeBack: verdicts that late answers disprove are no failures, so repeating
// them never suppresses the transport (three real ones within minutes would).
func TestRevokeGivesChargeBack(t *testing.T) {
	s := newTestSite(t, DefaultOptions())
	window(s, at(1), nil)
	for i := range 3 {
		now := at(2 + 31*i) // a revocation per hold-down at most
		s.Observe(now, "mpls", down)
		s.Evaluate(now, nil)
		s.Revoke(now.Add(200*time.Millisecond), "mpls", 100)
	}
	ti, T := s.transportIndex("mpls"), len(s.transports)
	if st, _ := s.Status("mpls"); st == Down {
		t.Fatal("mpls Down after revocations")
	}
	for ci := range s.classes {
		if c := &s.cells[ci*T+ti]; c.suppressed || s.penalty(c, at(70).UnixNano()) >= s.opts.Damping.Penalty/2 {
			t.Errorf("class %s on mpls: penalty %.0f, suppressed %v after three revoked verdicts", s.classes[ci].name, c.pen, c.suppressed)
		}
	}
}

// TestRevokeOncePerHoldDown: a second verdict within the hold-down of a revocation is not
// revoked: it stays Down, and returns as any Down does.
func TestRevokeOncePerHoldDown(t *testing.T) {
	s := newTestSite(t, DefaultOptions())
	window(s, at(1), nil)
	s.Observe(at(2), "mpls", down)
	s.Evaluate(at(2), nil)
	if !s.Revoke(at(2).Add(300*time.Millisecond), "mpls", 100) {
		t.Fatal("first revocation refused")
	}
	s.Observe(at(10), "mpls", down)
	s.Evaluate(at(10), nil)
	if s.Revoke(at(10).Add(300*time.Millisecond), "mpls", 100) {
		t.Fatal("second revocation within the hold-down accepted")
	}
	if st, _ := s.Status("mpls"); st != Down {
		t.Fatalf("mpls %v after a refused revocation; want down", st)
	}
	s.Observe(at(40), "mpls", down)
	if !s.Revoke(at(40).Add(300*time.Millisecond), "mpls", 100) {
		t.Fatal("revocation a hold-down after the last one refused")
	}
}
