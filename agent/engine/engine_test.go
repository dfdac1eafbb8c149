package engine

import (
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/edgewan/edgewan/agent/claim"
	"github.com/edgewan/edgewan/agent/config"
	"github.com/edgewan/edgewan/agent/probe"
	"github.com/edgewan/edgewan/steering"
	"github.com/edgewan/edgewan/telemetry"
)

// The transports the agent runs: the controller's, cheapest first, with the local file's
// fields over them, then those only the file names; the gateway is the default probe target.
func TestMergeTransports(t *testing.T) {
	e := &Engine{cfg: &config.Config{
		Probe: config.ProbeDefaults{Interval: 200 * time.Millisecond, Timeout: time.Second},
		Transports: []config.Transport{
			{Name: "lte", Interface: "wwan1", Method: "tcp", ProbeTargets: []string{"198.18.9.9:443"}, Interval: time.Second},
			{Name: "local", Interface: "eth9", Gateway: "198.18.7.1", Method: "icmp"},
		},
	}}
	p := &telemetry.Policy{Transports: []telemetry.PolicyTransport{
		{Name: "mpls", Interface: "eth1", Gateway: "198.18.1.1"},
		{Name: "lte", Interface: "wwan0", Gateway: "198.18.2.1", ProbeTargets: []string{"198.18.100.1"}},
	}}
	got := e.mergeTransports(p)
	want := []transportSpec{
		{Name: "mpls", Interface: "eth1", Gateway: "198.18.1.1", Method: "icmp", Targets: []string{"198.18.1.1"}, Interval: 200 * time.Millisecond, Timeout: time.Second},
		{Name: "lte", Interface: "wwan1", Gateway: "198.18.2.1", Method: "tcp", Targets: []string{"198.18.9.9:443"}, Interval: time.Second, Timeout: time.Second},
		{Name: "local", Interface: "eth9", Gateway: "198.18.7.1", Method: "icmp", Targets: []string{"198.18.7.1"}, Interval: 200 * time.Millisecond, Timeout: time.Second},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	// before any policy: the file's only
	if got := e.mergeTransports(nil); len(got) != 2 || got[0].Name != "lte" || got[1].Name != "local" {
		t.Fatalf("without a policy: %+v", got)
	}
}

func TestSpooledMessage(t *testing.T) {
	b, err := appendMessage(nil, telemetry.KindAcks, map[string]int{"v": 1})
	if err != nil {
		t.Fatal(err)
	}
	kind, payload, ok := splitMessage(b)
	if !ok || kind != telemetry.KindAcks || string(payload) != `{"v":1}` {
		t.Fatalf("%q %q %v", kind, payload, ok)
	}
	if _, _, ok := splitMessage([]byte("garbage")); ok {
		t.Fatal("a record without a kind was accepted")
	}
}

// A transport is hard down once DownAfter probes in a row are unanswered past their suspect
// deadline and the first of them is overdue (past its down deadline): a delay step answered
// before that is not a dead link (even when its probe was already counted lost), a probe older
// than the last answer does not count, and any answer, a late one too, brings it back up.
func TestMonitorDown(t *testing.T) {
	base := time.Now()
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	suspect := func(ms int) probe.Result { return probe.Result{Sent: at(ms), Suspect: true} }
	lost := func(ms int) probe.Result { return probe.Result{Sent: at(ms), Lost: true} }
	overdue := func(ms int) probe.Result { return probe.Result{Sent: at(ms), Overdue: true} }
	answer := func(ms int) probe.Result { return probe.Result{Sent: at(ms), RTT: 250 * time.Millisecond} }
	late := func(ms int) probe.Result { return probe.Result{Sent: at(ms), RTT: 500 * time.Millisecond, Late: true} }
	for _, tc := range []struct {
		name string
		rs   []probe.Result
		down []bool // after each result
		// after the first unanswered probe's timeout: the events raised (a verdict is revoked, with
		// none, or confirmed) and whether the next report says Down
		events     string
		reportDown bool
		ago        int // ms before now that the first probe was sent (so that all were sent before the revocation)
	}{
		{"blackhole: down when the first is overdue", []probe.Result{suspect(0), suspect(100), suspect(125), overdue(0)},
			[]bool{false, false, false, true}, "transport.down", true, 0},
		{"a loss alone is not a dead link", []probe.Result{suspect(0), suspect(100), suspect(125), lost(0), suspect(150)},
			[]bool{false, false, false, false, false}, "", false, 0},
		{"+250 ms step: answered before the down deadline", []probe.Result{suspect(0), suspect(100), suspect(125), answer(0), suspect(150), answer(100)},
			[]bool{false, false, false, false, false, false}, "", false, 0},
		{"a probe older than the last answer does not count", []probe.Result{suspect(0), answer(200), overdue(0), suspect(400), suspect(425), suspect(450), overdue(400)},
			[]bool{false, false, false, false, false, false, true}, "transport.down", true, 0},
		{"up again at the next answer: a short outage, confirmed", []probe.Result{suspect(0), suspect(25), overdue(0), suspect(50), answer(75)},
			[]bool{false, false, false, true, false}, "transport.down transport.up", false, 0},
		{"+500 ms step: revoked by the late answer of its first probe", []probe.Result{suspect(0), suspect(100), suspect(125), lost(0), overdue(0), late(0)},
			[]bool{false, false, false, false, true, false}, "", false, 0},
		{"+500 ms step, the late answer after more suspects", []probe.Result{suspect(0), suspect(100), suspect(125), overdue(0), suspect(150), lost(0), late(0), late(100)},
			[]bool{false, false, false, true, true, true, false, false}, "", false, 0},
		{"+500 ms step: probes sent before the revocation start no new verdict", []probe.Result{suspect(0), suspect(100), suspect(125), overdue(0), late(0),
			suspect(150), suspect(175), suspect(200), overdue(150)},
			[]bool{false, false, false, true, false, false, false, false, false}, "", false, 250},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &Engine{cfg: &config.Config{DownAfter: 3}, m: newMetrics(nil), log: slog.New(slog.DiscardHandler),
				o: Options{Creds: &claim.Credentials{Site: "s1", Device: "d1"}}, events: make(chan telemetry.AgentEvent, 16),
				kick: make(chan struct{}, 1)}
			const timeout = 300 * time.Millisecond
			m := startMonitor(e, "wan1", probe.Config{Timeout: timeout}, nil)
			// the probes were sent now, so the timeouts (and the confirmation) are still ahead
			shift := time.Since(base) - time.Duration(tc.ago)*time.Millisecond
			for i, r := range tc.rs {
				r.Sent = r.Sent.Add(shift)
				m.handle(r)
				if m.down != tc.down[i] {
					t.Fatalf("after result %d (%+v): down %v, want %v", i, r, m.down, tc.down[i])
				}
			}
			if !m.pace.Fast() {
				t.Error("suspect probes did not speed probing up")
			}
			var lost int
			for _, r := range tc.rs {
				if r.Lost {
					lost++
				}
			}
			// the confirmation's timer takes e.mu at the first probe's timeout
			e.mu.Lock()
			tw, localDown := m.flush()
			e.mu.Unlock()
			if tw.Lost != lost || tw.Sent != lost+countAnswers(tc.rs) {
				t.Errorf("window sent %d lost %d: a late answer is not a sample, its loss is counted", tw.Sent, tw.Lost)
			}
			if tw.Down || localDown != m.down {
				t.Errorf("window before the confirmation: Down %v (want false: unconfirmed), local %v (want %v)", tw.Down, localDown, m.down)
			}
			var events []string
			if tc.events != "" {
				for range strings.Fields(tc.events) {
					select {
					case ev := <-e.events:
						events = append(events, ev.Type)
					case <-time.After(10 * time.Second):
						t.Fatalf("events %q; want %q", events, tc.events)
					}
				}
			} else {
				// a revoked or absent verdict raises nothing, also once its probe's timeout has passed
				time.Sleep(time.Until(base.Add(shift + timeout + confirmSlack + 50*time.Millisecond)))
			}
			select {
			case ev := <-e.events:
				events = append(events, ev.Type)
			default:
			}
			if got := strings.Join(events, " "); got != tc.events {
				t.Errorf("events %q; want %q", got, tc.events)
			}
			e.mu.Lock()
			tw, _ = m.flush()
			e.mu.Unlock()
			if tw.Down != tc.reportDown {
				t.Errorf("report after the timeout: Down %v, want %v", tw.Down, tc.reportDown)
			}
		})
	}
}

func countAnswers(rs []probe.Result) (n int) {
	for _, r := range rs {
		if r.Final() && !r.Lost {
			n++
		}
	}
	return n
}

// While a transport is suspect, the window ends early once the losses so far would decide a
// breach of a class on it; not for losses that would not, not while the transport is not
// suspect, and not in the first tenth of a window.
func TestEarlyWindow(t *testing.T) {
	for _, tc := range []struct {
		name       string
		fast       bool
		age        time.Duration // of the window
		lost, sent int
		want       bool
	}{
		{"gross loss, suspect", true, 500 * time.Millisecond, 8, 20, true},
		{"one loss", true, 500 * time.Millisecond, 1, 20, false},
		{"not suspect", false, 500 * time.Millisecond, 8, 20, false},
		{"window too young", true, 50 * time.Millisecond, 8, 20, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			site, err := steering.NewSite([]string{"wan1", "wan2"}, []steering.Class{{Name: "voice",
				SLA: steering.Thresholds{MaxLatencyMs: 150, MaxLossPct: 1, MaxJitterMs: 30}}}, steering.DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			e := &Engine{cfg: &config.Config{DownAfter: 3, Window: time.Second}, m: newMetrics(nil), log: slog.New(slog.DiscardHandler),
				o: Options{Creds: &claim.Credentials{Site: "s1", Device: "d1"}}, events: make(chan telemetry.AgentEvent, 16),
				kick: make(chan struct{}, 1), early: make(chan struct{}, 1), steer: site, windowAt: time.Now().Add(-tc.age)}
			m := startMonitor(e, "wan1", probe.Config{}, nil)
			m.pace.SetFast(tc.fast)
			sent := time.Now()
			for i := range tc.sent {
				if i < tc.lost {
					m.handle(probe.Result{Sent: sent, Lost: true})
				} else {
					m.handle(probe.Result{Sent: sent, RTT: 20 * time.Millisecond})
				}
			}
			if got := len(e.early) > 0; got != tc.want {
				t.Fatalf("window ended early: %v, want %v", got, tc.want)
			}
		})
	}
}

// A dead-link verdict that a late answer revokes: the classes move off at the verdict; at the
// revocation voice (whose 150 ms bound the 520 ms answer misses) stays off the slow path, while
// the class without a latency bound follows the controller back; a second verdict within the
// hold-down is not revoked for the local steering (flap damping), and none raised an event.
func TestRevokedVerdictPaths(t *testing.T) {
	site, err := steering.NewSite([]string{"wan1", "wan2"}, []steering.Class{
		{Name: "voice", SLA: steering.Thresholds{MaxLatencyMs: 150, MaxLossPct: 1, MaxJitterMs: 30}, Preferred: []string{"wan1", "wan2"}},
		{Name: "default", Preferred: []string{"wan1", "wan2"}}}, steering.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	e := &Engine{cfg: &config.Config{DownAfter: 3, Window: time.Second}, m: newMetrics(nil), log: slog.New(slog.DiscardHandler),
		o: Options{Creds: &claim.Credentials{Site: "s1", Device: "d1"}}, events: make(chan telemetry.AgentEvent, 16),
		kick: make(chan struct{}, 1), early: make(chan struct{}, 1), steer: site,
		transports: []transportSpec{{Name: "wan1"}, {Name: "wan2"}}, decisions: map[string]string{"voice": "wan1", "default": "wan1"},
		up: &uplink{}}
	e.up.up.Store(true)
	m := startMonitor(e, "wan1", probe.Config{Timeout: time.Hour}, nil) // no confirmation within the test
	paths := func() string {
		e.mu.Lock()
		defer e.mu.Unlock()
		v, _ := e.effectivePathLocked("voice")
		d, _ := e.effectivePathLocked("default")
		return "voice:" + v + " default:" + d
	}
	// a +500 ms step: three suspects, the first overdue, then its late answer
	step := func(sent time.Time) {
		for i := range 3 {
			m.handle(probe.Result{Sent: sent.Add(time.Duration(i) * 10 * time.Millisecond), Suspect: true})
		}
		m.handle(probe.Result{Sent: sent, Overdue: true})
	}
	sent := time.Now().Add(-time.Second)
	step(sent)
	if got := paths(); got != "voice:wan2 default:wan2" {
		t.Fatalf("after the verdict: %s; want both on wan2", got)
	}
	m.handle(probe.Result{Sent: sent, RTT: 520 * time.Millisecond, Late: true})
	if got := paths(); got != "voice:wan2 default:wan1" {
		t.Fatalf("after the revocation: %s; want voice kept on wan2, default back on the controller's wan1", got)
	}
	sent = time.Now().Add(100 * time.Millisecond) // probes sent after the revocation
	step(sent)
	m.handle(probe.Result{Sent: sent, RTT: 520 * time.Millisecond, Late: true})
	if got := paths(); got != "voice:wan2 default:wan2" {
		t.Fatalf("a second revocation within the hold-down: %s; want wan1 held down locally", got)
	}
	if len(e.events) != 0 {
		t.Errorf("%d events raised by revoked verdicts; want none", len(e.events))
	}
}
