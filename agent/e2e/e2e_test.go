package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edgewan/edgewan/agent/dataplane"
	"github.com/edgewan/edgewan/agent/engine"
	"github.com/edgewan/edgewan/agent/internal/netlab"
)

// Tables the agent gives transports 1..3 (dataplane defaults: 7100 + index).
const (
	tWAN1 = 7100
	tWAN2 = 7101
	tWAN3 = 7102
)

// site is a pre-staged site with three transports and a steering policy: voice (DSCP 46) must
// see at most 100 ms, preferring wan1 then wan2; everything else prefers wan1, wan2, wan3.
type site struct {
	id, claimToken, policy string
}

func stageSite(t testing.TB, c *controller, lab *netlab.Lab) site {
	t.Helper()
	return stageSiteVoice(t, c, lab, map[string]any{"name": "voice", "max_latency_ms": 100, "max_loss_pct": 5, "max_jitter_ms": 30})
}

// stageSiteVoice is stageSite with another voice class.
func stageSiteVoice(t testing.TB, c *controller, lab *netlab.Lab, voice map[string]any) site {
	t.Helper()
	var transports []map[string]any
	var names []string
	for i, w := range lab.WANs {
		names = append(names, "wan"+string(rune('1'+i)))
		transports = append(transports, map[string]any{"name": "wan" + string(rune('1'+i)), "kind": "broadband",
			"interface": w.BranchIf, "gateway": w.Gateway.String(), "probe_targets": []string{lab.ProbeTarget.String()},
			"bandwidth_kbps": 100000, "cost": i + 1})
	}
	var created struct {
		ID         string `json:"id"`
		ClaimToken string `json:"claim_token"`
	}
	c.do(t, "POST", "/sd-wan/v1/sites", map[string]any{"name": "branch-" + lab.Name, "role": "branch", "transports": transports}, &created)
	var pol struct {
		ID string `json:"id"`
	}
	content := map[string]any{
		"classes": []map[string]any{
			voice,
			{"name": "default"},
		},
		"rules":         []map[string]any{{"name": "ef", "class": "voice", "dscp": []int{46}}},
		"paths":         map[string][]string{"voice": {"wan1", "wan2"}, "default": names},
		"default_class": "default",
	}
	c.do(t, "POST", "/sd-wan/v1/policies", map[string]any{"name": "steer-" + lab.Name, "type": "steering", "content": content}, &pol)
	c.do(t, "POST", "/sd-wan/v1/policies/"+pol.ID+"/publish", map[string]any{"version": 1, "sites": []string{created.ID}}, &struct{}{})
	return site{id: created.ID, claimToken: created.ClaimToken, policy: pol.ID}
}

// rolloutState is the state of the policy's version 1 on the site.
func rolloutState(t testing.TB, c *controller, s site) string {
	var p struct {
		Rollout []struct {
			Site, State, Reason string
		} `json:"rollout"`
	}
	c.do(t, "GET", "/sd-wan/v1/policies/"+s.policy, nil, &p)
	for _, r := range p.Rollout {
		if r.Site == s.id {
			return r.State
		}
	}
	return ""
}

type health struct {
	Status     string `json:"status"`
	Transports []struct {
		Name      string  `json:"name"`
		Status    string  `json:"status"`
		LatencyMs float64 `json:"latency_ms"`
		LossPct   float64 `json:"loss_pct"`
		Samples   int     `json:"samples"`
	} `json:"transports"`
}

type eventList struct {
	Data []struct {
		Type string         `json:"type"`
		Data map[string]any `json:"data"`
	} `json:"data"`
}

// events returns the site's events of type typ, newest first.
func events(t testing.TB, c *controller, s site, typ string) eventList {
	var l eventList
	c.do(t, "GET", "/sd-wan/v1/events?type="+typ+"&site="+s.id+"&limit=100", nil, &l)
	return l
}

// TestAgentLifecycle is the agent's acceptance: claim, steady state, a transport taken down,
// a transport degraded, recovery after the hold-down, the controller away for a while, and
// the agent restarted and stopped. One lab and one controller for all of it, in order.
func TestAgentLifecycle(t *testing.T) {
	top := t // the agent outlives each subtest
	lab := netlab.New(t, netlab.Spec{Transports: 3})
	const holdDown = 5 * time.Second
	c := newController(t, lab, holdDown)
	s := stageSite(t, c, lab)
	dp := branchDP(t, lab)
	dataDir := t.TempDir()
	agentArgs := []string{"--steering-hold-down", holdDown.String(), "--steering-recover-after", "3"}
	var a *agent

	if !t.Run("claim", func(t *testing.T) {
		a = startAgent(top, lab, dataDir, append(agentArgs, "--controller", c.base(), "--claim-token", s.claimToken,
			"--ca-fingerprint", c.fingerprint(t))...)
		waitFor(t, 30*time.Second, "credentials stored", func() bool {
			_, err := os.Stat(filepath.Join(dataDir, "credentials.json"))
			if err != nil && a.exited() {
				t.Fatalf("agent exited:\n%s", a.log)
			}
			return err == nil
		})
		st, err := os.Stat(filepath.Join(dataDir, "credentials.json"))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("credentials: %v, mode %v", err, st.Mode())
		}
		// The token is spent: another agent with it is refused, clearly, and does not retry.
		other := startAgent(t, lab, t.TempDir(), "--controller", c.base(), "--claim-token", s.claimToken, "--ca-fingerprint", c.fingerprint(t))
		err = other.wait(t, 30*time.Second)
		if exitCode(err) != 3 || !strings.Contains(other.log.String(), "claim_token_used") {
			t.Fatalf("reused token: exit %v, output:\n%s", err, other.log)
		}
		// A wrong fingerprint is refused before anything is sent.
		bad := startAgent(t, lab, t.TempDir(), "--controller", c.base(), "--claim-token", s.claimToken,
			"--ca-fingerprint", strings.Repeat("ab", 32))
		if err := bad.wait(t, 60*time.Second); err == nil || !strings.Contains(bad.log.String(), "fingerprint") {
			t.Fatalf("wrong fingerprint: %v\n%s", err, bad.log)
		}
	}) {
		t.FailNow()
	}

	if !t.Run("steady-state", func(t *testing.T) {
		waitAPI(t, 30*time.Second, "policy applied", func() bool { return rolloutState(t, c, s) == "applied" })
		waitFor(t, 10*time.Second, "rules installed", func() bool { return defaultTable(t, dp) == tWAN1 && voiceTable(t, dp) == tWAN1 })
		for i := range lab.WANs {
			if got := tables(t, dp, func(r dataplane.RuleInfo) bool { return r.Mark == 0x0ee00000+uint32(i)+1 }); !slices.Equal(got, []int{7100 + i}) {
				t.Fatalf("probe rule of transport %d: %v", i+1, got)
			}
		}
		// what `agent status` says of it
		out, err := lab.Branch.Command(t.Context(), agentBin, "status", "--metrics-listen", a.metricsAddr, "--json").CombinedOutput()
		if err != nil {
			t.Fatalf("agent status: %v: %s", err, out)
		}
		var st engine.Status
		if err := json.Unmarshal(out, &st); err != nil {
			t.Fatalf("agent status: %v: %s", err, out)
		}
		if !st.Connected || st.Site != s.id || len(st.Transports) != 3 || !st.Transports[0].Probing || len(st.Classes) != 2 ||
			len(st.Policies) != 1 || st.Policies[0].Ack != "1/applied" {
			t.Fatalf("agent status: %+v", st)
		}
		for _, cl := range st.Classes {
			if cl.Path != "wan1" {
				t.Fatalf("class %s on %s: %+v", cl.Name, cl.Path, st)
			}
		}
		var h health
		waitAPI(t, 30*time.Second, "telemetry of all transports", func() bool {
			c.do(t, "GET", "/sd-wan/v1/sites/"+s.id+"/health?window=1m", nil, &h)
			n := 0
			for _, tr := range h.Transports {
				if tr.Samples >= 3 && tr.LatencyMs > 0 && tr.LossPct == 0 {
					n++
				}
			}
			if n != 3 || h.Status != "up" {
				t.Logf("health: %+v; agent reports %v spooled %v published %v probes %v", h, a.metric(t, "edgewan_agent_reports_total"),
					a.metric(t, "edgewan_agent_spool_records"), a.metric(t, "edgewan_agent_mqtt_published_total"), a.metric(t, "edgewan_agent_probes_sent_total"))
			}
			return n == 3 && h.Status == "up"
		})
	}) {
		t.FailNow()
	}

	if !t.Run("transport-down", func(t *testing.T) {
		t0 := time.Now()
		if err := lab.WANs[0].SetLink(false); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, "local failover off wan1", func() bool { return defaultTable(t, dp) == tWAN2 && voiceTable(t, dp) == tWAN2 })
		t.Logf("transport down -> routes switched in %v", time.Since(t0).Round(time.Millisecond))
		waitAPI(t, 30*time.Second, "the controller hears of the local switch", func() bool {
			for _, e := range events(t, c, s, "path.switched").Data {
				if e.Data["reason"] == "local" && e.Data["from"] == "wan1" {
					return true
				}
			}
			return false
		})
		// Back up: the classes return only after the hold-down and 3 good windows.
		if err := lab.WANs[0].SetLink(true); err != nil {
			t.Fatal(err)
		}
		up := time.Now()
		waitFor(t, 60*time.Second, "back on wan1 after the hold-down", func() bool { return defaultTable(t, dp) == tWAN1 && voiceTable(t, dp) == tWAN1 })
		if d := time.Since(up); d < 3*time.Second {
			t.Fatalf("moved back %v after the link came up: before 3 good windows", d)
		}
	}) {
		t.FailNow()
	}

	if !t.Run("degraded", func(t *testing.T) {
		t0 := time.Now()
		lab.WANs[0].Responder.Set(netlab.Impairment{Delay: 150 * time.Millisecond, Jitter: 5 * time.Millisecond})
		waitFor(t, 30*time.Second, "voice off wan1 by the controller", func() bool { return voiceTable(t, dp) == tWAN2 })
		t.Logf("SLA degradation -> switch in %v", time.Since(t0).Round(time.Millisecond))
		if defaultTable(t, dp) != tWAN1 {
			t.Fatal("the default class (no SLA) moved too")
		}
		waitAPI(t, 10*time.Second, "the controller's path.switched event for voice", func() bool {
			for _, e := range events(t, c, s, "path.switched").Data {
				if e.Data["class"] == "voice" && e.Data["from"] == "wan1" && e.Data["by"] == "controller" {
					return true
				}
			}
			t.Logf("events: %+v", events(t, c, s, "path.switched").Data)
			return false
		})
		lab.WANs[0].Responder.Set(netlab.Impairment{})
		fixed := time.Now()
		waitFor(t, 60*time.Second, "voice back on wan1", func() bool { return voiceTable(t, dp) == tWAN1 })
		if d := time.Since(t0); d < holdDown {
			t.Fatalf("voice came back %v after the breach, inside the %v hold-down", d, holdDown)
		}
		t.Logf("recovered %v after the fix", time.Since(fixed).Round(time.Millisecond))
	}) {
		t.FailNow()
	}

	if !t.Run("controller-away", func(t *testing.T) {
		outage := time.Minute
		if v := os.Getenv("EDGEWAN_E2E_OUTAGE"); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				t.Fatal(err)
			}
			outage = d
		}
		c.stop(t)
		before := a.metric(t, "edgewan_agent_reports_total")
		time.Sleep(outage) // the scenario itself: nothing to wait for
		waitFor(t, 5*time.Second, "reports spooled during the outage", func() bool { return a.metric(t, "edgewan_agent_spool_records") > 0 })
		// routing stays as it was while the controller is away
		if defaultTable(t, dp) != tWAN1 {
			t.Fatal("routes changed while the controller was away")
		}
		c.start(t)
		// Drained down to what the controller has not yet confirmed stored (its watermark moves
		// every 5 s; see docs/telemetry.md).
		waitFor(t, 90*time.Second, "spool drained", func() bool {
			return a.connected() && a.metric(t, "edgewan_agent_spool_records") <= 20
		})
		after := a.metric(t, "edgewan_agent_reports_total")
		cm := "http://" + c.ip + ":" + strconv.Itoa(c.metricPort) + "/metrics"
		got := metric(t, c.hc, cm, "edgewan_ingest_reports_total")
		if produced := after - before; got < produced {
			t.Fatalf("the controller took %v reports since it came back; the agent made %v from the outage on", got, produced)
		}
		// Records sent but not confirmed before the stop come again: duplicates, dropped by sequence.
		if rej := metric(t, c.hc, cm, "edgewan_ingest_rejected_total") - metric(t, c.hc, cm, `edgewan_ingest_rejected_total{reason="duplicate"}`); rej != 0 {
			t.Fatalf("%v reports rejected", rej)
		}
		var h health
		c.do(t, "GET", "/sd-wan/v1/sites/"+s.id+"/health?window=5m", nil, &h)
		for _, tr := range h.Transports {
			if tr.Samples < int(outage/time.Second)-2 {
				t.Fatalf("transport %s: %d windows in the last 5 minutes after a %v outage", tr.Name, tr.Samples, outage)
			}
		}
	}) {
		t.FailNow()
	}

	if !t.Run("agent-restart", func(t *testing.T) {
		want, err := dp.Rules()
		if err != nil {
			t.Fatal(err)
		}
		a.kill() // no clean shutdown: everything stays behind
		if got, _ := dp.Rules(); len(got) != len(want) {
			t.Fatalf("after a crash %d rules, before %d", len(got), len(want))
		}
		// Meanwhile the policy changes: voice now prefers wan3. The restarted agent must end up
		// with exactly the new rules, nothing stale.
		a = startAgent(top, lab, dataDir, agentArgs...)
		waitFor(t, 30*time.Second, "agent back", a.connected)
		var v struct{}
		c.do(t, "POST", "/sd-wan/v1/policies/"+s.policy+"/versions", map[string]any{"content": map[string]any{
			"classes":       []map[string]any{{"name": "voice", "max_latency_ms": 100}, {"name": "default"}},
			"rules":         []map[string]any{{"name": "ef", "class": "voice", "dscp": []int{46}}},
			"paths":         map[string][]string{"voice": {"wan3", "wan2"}, "default": {"wan1", "wan2", "wan3"}},
			"default_class": "default"}}, &v)
		c.do(t, "POST", "/sd-wan/v1/policies/"+s.policy+"/publish", map[string]any{"version": 2}, &v)
		waitFor(t, 30*time.Second, "voice on wan3", func() bool { return voiceTable(t, dp) == tWAN3 })
		got, _ := dp.Rules()
		if len(got) != len(want) {
			t.Fatalf("after restart and a new version: %d rules, want %d: %+v", len(got), len(want), got)
		}
		// A clean stop removes everything the agent added, and nothing else.
		if err := a.stop(t); err != nil {
			t.Fatalf("stop: %v\n%s", err, a.log)
		}
		if r, rt, q, err := dp.Owned(); err != nil || r+rt+q != 0 {
			t.Fatalf("after a clean stop: %d rules, %d routes, %d qdiscs (%v)", r, rt, q, err)
		}
		// After a crash, `agent cleanup` does the same.
		a = startAgent(top, lab, dataDir, agentArgs...)
		waitFor(t, 30*time.Second, "rules back", func() bool { return voiceTable(t, dp) == tWAN3 })
		// Not under a running agent: it would put everything back.
		out, err := lab.Branch.Command(t.Context(), agentBin, "cleanup", "--data-dir", dataDir).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "another agent is running") {
			t.Fatalf("cleanup under a running agent: %v: %s", err, out)
		}
		a.kill()
		out, err = lab.Branch.Command(t.Context(), agentBin, "cleanup", "--data-dir", dataDir).CombinedOutput()
		if err != nil {
			t.Fatalf("agent cleanup: %v: %s", err, out)
		}
		if r, rt, q, err := dp.Owned(); err != nil || r+rt+q != 0 {
			t.Fatalf("after agent cleanup: %d rules, %d routes, %d qdiscs (%v)", r, rt, q, err)
		}
	}) {
		t.FailNow()
	}
}
