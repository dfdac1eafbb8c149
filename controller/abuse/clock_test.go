package abuse

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgewan/edgewan/controller/clock"
	"github.com/edgewan/edgewan/coreapi/soc"
)

// newClockCtl prepares a controller on the test clock (controller/clock); step writes its
// offset (a Go duration, "" for none), which the controller reads within 100 ms.
func newClockCtl(t *testing.T) (*ctl, func(offset string)) {
	offset := filepath.Join(t.TempDir(), "clock-offset")
	step := func(d string) {
		if err := os.WriteFile(offset, []byte(d), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	step("")
	c := newCtl(t, "")
	c.Env = []string{clock.EnvFile + "=" + offset, clock.EnvEnable + "=" + clock.EnableKey}
	return c, step
}

// testClockStep steps the controller's clock (the test clock of controller/clock, never the
// machine's) an hour forward and back while three agents report 5 times a second. Forward,
// the agents' times are an hour old: inside the accepted past, nothing refused, but /readyz
// reports it. Back, every agent looks an hour ahead: the controller blames itself (one
// controller.clock case, no agent.clock_skew case), refuses the reports without covering them
// with its watermark, and takes them once the clock is right: nothing lost. The agents are the
// agent's own spool and uplink (engine.Uplink), sending again after a stalled watermark in 3 s
// (15 s for the real agent, to keep the test short).
func testClockStep(t *testing.T) {
	t.Parallel()
	c, step := newClockCtl(t)
	_, tok := c.Key("", "sdwan:read", "sdwan:write", "soc:read")
	c.Start()
	var agents []*spooler
	for range 3 {
		a := startSpooler(t, c, 200*time.Millisecond)
		a.up.SetHoleAfter(3 * time.Second)
		agents = append(agents, a)
	}
	for _, a := range agents {
		if !a.WaitDeleted(a.Stats().LastID, time.Minute) {
			t.Fatalf("before the fault: site %s: watermark %d, %+v", a.Site, a.up.Watermark(), a.Stats())
		}
	}
	var said []string
	var recovery []string
	var worst time.Duration
	for _, s := range []struct{ name, offset string }{{"forward 1h", "1h"}, {"back 1h", "-1h"}} {
		step(s.offset)
		stepped := time.Now()
		if _, err := c.WaitNotReady(time.Minute, "clock"); err != nil {
			t.Errorf("%s: readiness did not report the clock: %v", s.name, err)
		}
		detected := time.Since(stepped)
		_, body := c.Ready()
		var eb struct{ Error struct{ Message string } }
		if json.Unmarshal([]byte(body), &eb) == nil {
			said = append(said, eb.Error.Message)
		}
		time.Sleep(5 * time.Second) // the fault's duration is the point of the test
		step("")
		fixed := time.Now()
		if _, err := c.WaitReady(2 * time.Minute); err != nil {
			t.Errorf("%s: not ready again: %v", s.name, err)
		}
		ready := time.Since(fixed)
		for _, a := range agents {
			if !a.WaitDeleted(a.Stats().LastID, 2*time.Minute) {
				t.Errorf("%s: site %s: watermark %d two minutes after, %+v", s.name, a.Site, a.up.Watermark(), a.Stats())
			}
		}
		covered := time.Since(fixed)
		worst = max(worst, covered)
		recovery = append(recovery, fmt.Sprintf("%s: reported after %v, ready %v and every report stored %v after the clock was right",
			s.name, detected.Round(time.Millisecond), ready.Round(time.Millisecond), covered.Round(time.Millisecond)))
	}
	var cases struct{ Data []struct{ Rule string } }
	c.JSON("GET", "/v1/soc/cases?source=system&limit=100", tok, nil, &cases)
	rules := map[string]int{}
	for _, k := range cases.Data {
		rules[k.Rule]++
	}
	if rules[soc.RuleControllerClock] != 1 || rules[soc.RuleClockSkew] != 0 {
		t.Errorf("system cases %v; want one %s and no %s", rules, soc.RuleControllerClock, soc.RuleClockSkew)
	}
	made, resent := 0, 0
	sites := make([]string, len(agents))
	for i, a := range agents {
		n := a.StopReporting()
		if !a.WaitDrained(time.Minute) {
			t.Errorf("site %s: the spool still holds reports a minute after the last: %+v", a.Site, a.Stats())
		}
		made += int(n)
		resent += max(int(a.up.Published())-int(n), 0)
		sites[i] = a.Site
		a.close()
	}
	held := 0
	for _, l := range strings.Split(c.Scrape(), "\n") {
		if strings.HasPrefix(l, `edgewan_ingest_rejected_total{reason="held"}`) || strings.HasPrefix(l, `edgewan_ingest_rejected_total{reason="clock_skew"}`) {
			var v float64
			fmt.Sscan(l[strings.LastIndexByte(l, ' ')+1:], &v)
			held += int(v)
		}
	}
	c.Stop()
	var stored int64
	for _, s := range sites {
		stored += embeddedWindows(t, c.DataDir, s)
	}
	run := faultRun{name: "clock stepped 1h forward and back", acked: made, recovery: worst, reported: strings.Join(said, " | "),
		telemetry: fmt.Sprintf("; reports made %d, stored %d, refused or held then sent again %d (messages sent again by the agents %d); SOC cases %v; %s",
			made, stored, held, resent, rules, strings.Join(recovery, "; "))}
	if stored < int64(made) {
		run.lost = made - int(stored)
	}
	if held == 0 {
		t.Error("no report refused while the clock was an hour back: the fault did not bite")
	}
	run.print(t, c)
}
