package abuse

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgewan/edgewan/agent/sim"
	"github.com/edgewan/edgewan/controller/clock"
	"github.com/edgewan/edgewan/coreapi/soc"
	"github.com/edgewan/edgewan/telemetry"
)

// spoolAgent is a simulated agent that keeps each report, like the real agent's spool
// (agent/engine/uplink.go), until the controller's watermark covers it, and sends again, oldest
// first, what the watermark has not covered after resend without progress. The real agent
// waits 30 s; the test 3 s, to stay short.
type spoolAgent struct {
	ag     *sim.Agent
	site   string
	resend time.Duration

	mu      sync.Mutex
	seq     uint64
	mark    uint64
	movedAt time.Time
	pending []telemetry.Report // made, not yet covered, in seq order
	resent  int

	stop   chan struct{}
	cancel context.CancelFunc // ends the watermark reader
	done   sync.WaitGroup
}

func startSpoolAgent(t *testing.T, c *ctl, tok, name string, every time.Duration) *spoolAgent {
	t.Helper()
	var site struct {
		ID    string
		Claim string `json:"claim_token"`
	}
	c.JSON("POST", "/sd-wan/v1/sites", tok, map[string]any{"name": name, "transports": []map[string]any{
		{"name": "inet", "kind": "broadband", "interface": "eth0", "probe_targets": []string{"198.18.100.1"}}}}, &site)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	acc, err := sim.Claim(ctx, c.client(), c.URL, site.Claim, name+"-router")
	if err != nil {
		t.Fatal(err)
	}
	ag, err := sim.Connect(ctx, acc)
	if err != nil {
		t.Fatal(err)
	}
	a := &spoolAgent{ag: ag, site: site.ID, resend: 3 * time.Second, movedAt: time.Now(), stop: make(chan struct{})}
	var rctx context.Context
	rctx, a.cancel = context.WithCancel(context.Background())
	a.done.Add(2)
	go func() { // the controller's watermarks
		defer a.done.Done()
		for {
			m, err := ag.Next(rctx)
			if err != nil {
				return
			}
			var st telemetry.Stored
			if !strings.HasSuffix(m.Topic, "/"+telemetry.KindStored) || json.Unmarshal(m.Payload, &st) != nil {
				continue
			}
			a.mu.Lock()
			if st.Seq > a.mark {
				a.mark, a.movedAt = st.Seq, time.Now()
				n := 0
				for n < len(a.pending) && a.pending[n].Seq <= st.Seq {
					n++
				}
				a.pending = a.pending[n:]
			}
			a.mu.Unlock()
		}
	}()
	go func() {
		defer a.done.Done()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-a.stop:
				return
			case <-tick.C:
			}
			a.mu.Lock()
			a.seq++
			r := telemetry.Report{V: telemetry.SchemaVersion, Site: a.site, Device: ag.Device, Seq: a.seq, Time: time.Now().UTC(),
				WindowMs: int(every / time.Millisecond), Transport: []telemetry.TransportWindow{sim.Window("inet", 10, 0, 20, 1)}}
			a.pending = append(a.pending, r)
			send := []telemetry.Report{r}
			if len(a.pending) > 1 && time.Since(a.movedAt) > a.resend {
				send = append([]telemetry.Report(nil), a.pending...)
				a.movedAt = time.Now()
				a.resent++
			}
			a.mu.Unlock()
			for _, r := range send {
				b, _ := json.Marshal(r)
				pctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				_ = ag.Publish(pctx, telemetry.KindTelemetry, b, false) // not sent: still pending, sent again
				cancel()
			}
		}
	}()
	return a
}

// made returns how many reports were made, and how many the watermark does not cover yet.
func (a *spoolAgent) made() (made, uncovered int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return int(a.seq), len(a.pending)
}

// waitCovered waits until the watermark covers every report made before now.
func (a *spoolAgent) waitCovered(limit time.Duration) error {
	a.mu.Lock()
	want := a.seq
	a.mu.Unlock()
	deadline := time.Now().Add(limit)
	for {
		a.mu.Lock()
		mark := a.mark
		a.mu.Unlock()
		if mark >= want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("site %s: watermark %d after %v, want %d", a.site, mark, limit, want)
		}
		time.Sleep(50 * time.Millisecond) // the watermark arrives on another goroutine
	}
}

func (a *spoolAgent) Stop() {
	close(a.stop)
	a.cancel()
	a.ag.Close()
	a.done.Wait()
}

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
// with its watermark, and takes them once the clock is right: nothing lost.
func testClockStep(t *testing.T) {
	t.Parallel()
	c, step := newClockCtl(t)
	_, tok := c.Key("", "sdwan:read", "sdwan:write", "soc:read")
	c.Start()
	var agents []*spoolAgent
	for i := range 3 {
		agents = append(agents, startSpoolAgent(t, c, tok, fmt.Sprintf("clock-site-%d", i), 200*time.Millisecond))
	}
	for _, a := range agents {
		if err := a.waitCovered(time.Minute); err != nil {
			t.Fatalf("before the fault: %v", err)
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
			if err := a.waitCovered(2 * time.Minute); err != nil {
				t.Errorf("%s: %v", s.name, err)
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
		a.Stop()
		n, _ := a.made()
		made += n
		resent += a.resent
		sites[i] = a.site
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
		telemetry: fmt.Sprintf("; reports made %d, stored %d, refused or held then sent again %d (resends %d); SOC cases %v; %s",
			made, stored, held, resent, rules, strings.Join(recovery, "; "))}
	if stored < int64(made) {
		run.lost = made - int(stored)
	}
	if held == 0 {
		t.Error("no report refused while the clock was an hour back: the fault did not bite")
	}
	run.print(t, c)
}
