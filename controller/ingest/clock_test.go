package ingest

import (
	"io"
	"log/slog"
	"testing"
	"time"
)

// guardRun drives a clockGuard with explicit monotonic and wall times.
type guardRun struct {
	t       *testing.T
	g       clockGuard
	mono    time.Time
	changes []ControllerClock
}

func newGuardRun(t *testing.T) *guardRun {
	return &guardRun{t: t, mono: time.Now()}
}

// msg observes a message of site with the given skew and sequence after d.
func (r *guardRun) msg(d time.Duration, site string, seq uint64, skew time.Duration) (hold, announce bool) {
	r.mono = r.mono.Add(d)
	in := skew <= DefaultMaxFuture && skew >= -DefaultMaxPast
	hold, announce, changed := r.g.observe(site, seq, skew, in, r.mono, r.mono, DefaultMaxFuture, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if changed != nil {
		r.changes = append(r.changes, *changed)
	}
	return hold, announce
}

var sites3 = []string{"a", "b", "c"}

// TestControllerClockBack: the controller's clock steps an hour back while three sites report
// (every agent looks an hour ahead): one fault, no agent blamed, the refused reports held until
// the agents send them again once the clock is right, then the fault ends.
func TestControllerClockBack(t *testing.T) {
	r := newGuardRun(t)
	seq := map[string]uint64{}
	round := func(skew time.Duration) (holds, announces int) {
		for _, s := range sites3 {
			seq[s]++
			h, a := r.msg(100*time.Millisecond, s, seq[s], skew)
			if h {
				holds++
			}
			if a {
				announces++
			}
		}
		return
	}
	for i := 0; i < 5; i++ {
		round(time.Second)
	}
	for i := 0; i < 10; i++ { // stepped back: agents an hour ahead, for ~3 s
		if _, a := round(time.Hour); a != 0 {
			t.Fatalf("round %d: %d agents blamed for the controller's clock", i, a)
		}
	}
	if _, ok := r.g.faultNow(); !ok || len(r.changes) != 1 {
		t.Fatalf("no controller clock fault: %+v", r.changes)
	}
	if c := r.changes[0]; c.Offset != -time.Hour || c.Sites != 3 || c.Heard != 3 || !c.Refused {
		t.Errorf("fault %+v; want offset -1h, 3 of 3 sites, reports refused", c)
	}
	for i := 0; i < 40; i++ { // 12 s more: still no site blamed past skewConfirm
		if _, a := round(time.Hour); a != 0 {
			t.Fatalf("an agent blamed during the fault")
		}
	}
	// Right again: new reports are held until the refused ones come back.
	if h, _ := round(time.Second); h != 3 {
		t.Fatalf("%d of 3 new reports held; want all (the refused range first)", h)
	}
	if len(r.changes) != 2 || r.changes[1].Till.IsZero() {
		t.Fatalf("fault did not end: %+v", r.changes)
	}
	for _, s := range sites3 { // the agent sends its spool again, oldest first
		for q := uint64(6); q <= seq[s]; q++ {
			if h, _ := r.msg(time.Millisecond, s, q, time.Second); h && q <= 55 {
				t.Fatalf("site %s: report %d held although it is the refused range sent again", s, q)
			}
		}
	}
	if h, _ := round(time.Second); h != 0 {
		t.Errorf("%d reports still held after the range came back", h)
	}
}

// TestAgentClockAlone: one wrong agent among three is blamed after skewConfirm, once per
// skewNoteEvery; its refused reports are not held for (its clock, not the controller's).
func TestAgentClockAlone(t *testing.T) {
	r := newGuardRun(t)
	var seq uint64
	announced := 0
	for i := 0; i < 300; i++ { // 30 s
		for _, s := range sites3 {
			skew := time.Second
			if s == "a" {
				skew = 2 * time.Hour
			}
			seq++
			if h, a := r.msg(100*time.Millisecond/3, s, seq, skew); h {
				t.Fatal("held")
			} else if a {
				announced++
			}
		}
	}
	if announced != 1 || len(r.changes) != 0 {
		t.Errorf("%d announcements, faults %+v; want 1 and none", announced, r.changes)
	}
	if h, _ := r.msg(time.Second, "a", seq+1, time.Second); h {
		t.Error("an agent's own skew held its reports")
	}
	// Alone, a site is blamed at once.
	solo := newGuardRun(t)
	if _, a := solo.msg(0, "x", 1, time.Hour); !a {
		t.Error("a lone site's skew not announced")
	}
	if _, a := solo.msg(time.Second, "x", 2, time.Hour); a {
		t.Error("announced twice within skewNoteEvery")
	}
}

// TestControllerClockAhead: stepped an hour forward, the agents' times are inside the past
// window (nothing refused) but the fault is reported once it lasts aheadConfirm.
func TestControllerClockAhead(t *testing.T) {
	r := newGuardRun(t)
	var seq uint64
	for i := 0; i < 150; i++ { // 15 s: less than aheadConfirm
		for _, s := range sites3 {
			seq++
			if h, _ := r.msg(100*time.Millisecond/3, s, seq, -time.Hour); h {
				t.Fatal("held")
			}
		}
	}
	if len(r.changes) != 0 {
		t.Fatalf("fault before aheadConfirm: %+v", r.changes)
	}
	for i := 0; i < 100; i++ {
		for _, s := range sites3 {
			seq++
			r.msg(100*time.Millisecond/3, s, seq, -time.Hour)
		}
	}
	if len(r.changes) != 1 || r.changes[0].Offset != time.Hour || r.changes[0].Refused {
		t.Fatalf("faults %+v; want one, +1h, nothing refused", r.changes)
	}
	for i := 0; i < 200; i++ { // the freshest times catch up within freshSpan
		for _, s := range sites3 {
			seq++
			r.msg(100*time.Millisecond/3, s, seq, 0)
		}
	}
	if len(r.changes) != 2 {
		t.Fatalf("fault did not end: %+v", r.changes)
	}
}
