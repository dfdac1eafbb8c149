package steering

import (
	"slices"
	"testing"
	"time"
)

// checker drives a Site and checks, at every Evaluate, what holds for any input:
//   - every decision names transports and classes of the site, and a switch never has From == To;
//   - transport decisions report a change of Status, SLA decisions alternate per class;
//   - a switch never goes to a Down transport; ReasonDown leaves a Down one, ReasonSLA lands
//     on one meeting the SLA; ReasonPreferred and ReasonScore come at least HoldDown after the
//     class's previous switch;
//   - afterwards no class is on a Down transport while another is not Down, and a second
//     Evaluate at the same time finds nothing;
//   - if prompt (Evaluate follows every batch of windows), any 6T+2 consecutive switches of a
//     class span at least HoldDown: at most 6T+1 in any interval shorter than it.
type checker struct {
	tb         testing.TB
	s          *Site
	hold       time.Duration
	prompt     bool
	transports []string
	classes    []Class
	reported   map[string]Status
	breached   map[string]bool
	switches   map[string][]time.Time // per class, since NewSite or Reconfigure
	last       map[string]Metrics     // per transport, its last window
	margin     float64
	out        []Decision
}

func newChecker(tb testing.TB, transports []string, classes []Class, o Options, prompt bool) *checker {
	tb.Helper()
	s, err := NewSite(transports, classes, o)
	if err != nil {
		tb.Fatalf("NewSite: got error %v; want nil", err)
	}
	c := &checker{tb: tb, s: s, hold: o.HoldDown, prompt: prompt, margin: o.ScoreMargin, last: map[string]Metrics{}}
	c.reset(transports, classes)
	c.reported = map[string]Status{}
	c.breached = map[string]bool{}
	return c
}

func (c *checker) reset(transports []string, classes []Class) {
	c.transports, c.classes = slices.Clone(transports), slices.Clone(classes)
	c.switches = map[string][]time.Time{}
}

// observe feeds a window; ok is whether the transport is in the site.
func (c *checker) observe(now time.Time, name string, m Metrics) {
	c.tb.Helper()
	if got, want := c.s.Observe(now, name, m), c.hasTransport(name); got != want {
		c.tb.Fatalf("Observe(%s): got %v; want %v", name, got, want)
	}
	if c.hasTransport(name) {
		c.last[name] = m
	}
}

func (c *checker) class(name string) Class {
	i := slices.IndexFunc(c.classes, func(cl Class) bool { return cl.Name == name })
	return c.classes[i]
}

func (c *checker) hasTransport(name string) bool { return slices.Contains(c.transports, name) }

func (c *checker) hasClass(name string) bool {
	return slices.ContainsFunc(c.classes, func(cl Class) bool { return cl.Name == name })
}

func (c *checker) status(name string) Status {
	st, ok := c.s.Status(name)
	if !ok {
		c.tb.Fatalf("Status(%q): got not ok; want a transport of the site", name)
	}
	return st
}

func (c *checker) allDown() bool {
	for _, name := range c.transports {
		if c.status(name) != Down {
			return false
		}
	}
	return true
}

func (c *checker) reconfigure(now time.Time, transports []string, classes []Class) []Decision {
	c.tb.Helper()
	ds, err := c.s.Reconfigure(now, transports, classes, nil)
	if err != nil {
		c.tb.Fatalf("Reconfigure: got error %v; want nil", err)
	}
	c.reset(transports, classes)
	for name := range c.reported {
		if !c.hasTransport(name) {
			delete(c.reported, name)
			delete(c.last, name)
		}
	}
	for name := range c.breached {
		if !c.hasClass(name) {
			delete(c.breached, name)
		}
	}
	for _, d := range ds {
		if d.Kind != PathSwitched || d.Reason != ReasonRemoved || d.From == d.To || !c.hasTransport(d.To) ||
			c.hasTransport(d.From) || !c.hasClass(d.Class) {
			c.tb.Fatalf("Reconfigure: got %+v; want PathSwitched, ReasonRemoved, from a removed transport", d)
		}
		c.switches[d.Class] = append(c.switches[d.Class], now)
	}
	c.checkPaths(false) // a kept path may have gone Down since the last Evaluate
	return ds
}

func (c *checker) evaluate(now time.Time) []Decision {
	c.tb.Helper()
	c.out = c.s.Evaluate(now, c.out[:0])
	for _, d := range c.out {
		switch d.Kind {
		case TransportDegraded, TransportDown, TransportRecovered:
			if !c.hasTransport(d.Transport) {
				c.tb.Fatalf("%s: got transport %q; want one of %v", d.Kind, d.Transport, c.transports)
			}
			st := c.status(d.Transport)
			want := map[Status]Kind{Up: TransportRecovered, Degraded: TransportDegraded, Down: TransportDown}[st]
			if d.Kind != want || st == c.reported[d.Transport] {
				c.tb.Fatalf("%s %s: got %s after %s; want a change to the current status", d.Transport, d.Kind, st, c.reported[d.Transport])
			}
			c.reported[d.Transport] = st
		case SLABreach, SLARecovered:
			if !c.hasClass(d.Class) || d.Transport != c.s.Path(d.Class) {
				c.tb.Fatalf("%s: got class %q on %q; want a class of the site on its path %q", d.Kind, d.Class, d.Transport, c.s.Path(d.Class))
			}
			if (d.Kind == SLABreach) == c.breached[d.Class] {
				c.tb.Fatalf("%s %s: got it twice in a row; want breach and recovery to alternate", d.Class, d.Kind)
			}
			c.breached[d.Class] = d.Kind == SLABreach
			if d.Kind == SLABreach && (d.Reason == ReasonAllDown) != c.allDown() {
				c.tb.Fatalf("%s %s: got reason %q with all down %v", d.Class, d.Kind, d.Reason, c.allDown())
			}
		case PathSwitched:
			c.checkSwitch(now, d)
		default:
			c.tb.Fatalf("got decision kind %d; want a known one", d.Kind)
		}
	}
	c.checkPaths(true)
	if again := c.s.Evaluate(now, nil); len(again) != 0 {
		c.tb.Fatalf("second Evaluate at %v: got %+v; want none", now, again)
	}
	return c.out
}

func (c *checker) checkSwitch(now time.Time, d Decision) {
	c.tb.Helper()
	if !c.hasClass(d.Class) || !c.hasTransport(d.From) || !c.hasTransport(d.To) || d.From == d.To {
		c.tb.Fatalf("switch: got %s %q > %q; want a class of the site between two transports of it %v", d.Class, d.From, d.To, c.transports)
	}
	if c.status(d.To) == Down {
		c.tb.Fatalf("switch %s %s > %s: got a Down target; want a live one", d.Class, d.From, d.To)
	}
	prev := c.switches[d.Class]
	switch d.Reason {
	case ReasonDown:
		if c.status(d.From) != Down {
			c.tb.Fatalf("switch %s %s > %s: got reason %q with %s %s; want it Down", d.Class, d.From, d.To, d.Reason, d.From, c.status(d.From))
		}
	case ReasonSLA:
		if c.status(d.From) == Down || !c.s.SLAMet(d.Class) {
			c.tb.Fatalf("switch %s %s > %s: got reason %q, SLA met %v; want the target to meet it", d.Class, d.From, d.To, d.Reason, c.s.SLAMet(d.Class))
		}
	case ReasonPreferred, ReasonScore:
		order := orderOf(c.class(d.Class), c.transports)
		if d.Reason == ReasonPreferred && (!c.s.SLAMet(d.Class) || slices.Index(order, d.To) > slices.Index(order, d.From)) {
			c.tb.Fatalf("switch %s %s > %s (%s): got SLA met %v, order %v; want the target to meet it and come first", d.Class, d.From, d.To, d.Reason, c.s.SLAMet(d.Class), order)
		}
		sla := c.class(d.Class).SLA
		// Breached pairs rank 1+Violation; the check repeats that arithmetic to round the same.
		if from, to := 1+sla.Violation(c.last[d.From]), 1+sla.Violation(c.last[d.To]); d.Reason == ReasonScore && !(to+c.margin < from) {
			c.tb.Fatalf("switch %s %s > %s (%s): got rank %v > %v; want lower by ScoreMargin %v", d.Class, d.From, d.To, d.Reason, from, to, c.margin)
		}
		if len(prev) > 0 && now.Sub(prev[len(prev)-1]) < c.hold {
			c.tb.Fatalf("switch %s %s > %s (%s): got %v after the previous one; want at least HoldDown %v", d.Class, d.From, d.To, d.Reason, now.Sub(prev[len(prev)-1]), c.hold)
		}
	default:
		c.tb.Fatalf("switch %s: got reason %q; want down, sla, preferred or score", d.Class, d.Reason)
	}
	sw := append(prev, now)
	c.switches[d.Class] = sw
	if k := 6*len(c.transports) + 1; c.prompt && c.hold > 0 && len(sw) > k {
		if span := sw[len(sw)-1].Sub(sw[len(sw)-1-k]); span < c.hold {
			c.tb.Fatalf("class %s: got %d switches within %v; want at most %d within HoldDown %v", d.Class, k+1, span, k, c.hold)
		}
	}
}

// checkPaths checks every class is on a transport of the site, and if live that it is on a
// live one when there is one, and reports its SLA status as the decisions did.
func (c *checker) checkPaths(live bool) {
	c.tb.Helper()
	allDown := c.allDown()
	for _, cl := range c.classes {
		p := c.s.Path(cl.Name)
		if !c.hasTransport(p) {
			c.tb.Fatalf("Path(%s): got %q; want one of %v", cl.Name, p, c.transports)
		}
		if got, want := c.s.SLAMet(cl.Name), !c.breached[cl.Name]; got != want {
			c.tb.Fatalf("SLAMet(%s): got %v; want %v as reported", cl.Name, got, want)
		}
		if live && !allDown && c.status(p) == Down {
			c.tb.Fatalf("Path(%s): got %s, Down; want a live transport", cl.Name, p)
		}
	}
}
