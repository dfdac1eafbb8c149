// Package whatiftest is the policy simulation's end-to-end scenario, run by the controller's
// tests on each database and time-series sink: an hour of known history sent by a simulated
// agent, and the breaches and switches it must give, computed by hand.
package whatiftest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/edgewan/edgewan/agent/sim"
	"github.com/edgewan/edgewan/controller/sdwan"
	"github.com/edgewan/edgewan/controller/server/servertest"
	"github.com/edgewan/edgewan/controller/whatif"
	"github.com/edgewan/edgewan/telemetry"
)

// Result is the streamed answer of the simulate route.
type Result struct {
	Simulation sdwan.Simulation        `json:"simulation"`
	Sites      []sdwan.SimulationSite  `json:"sites"`
	Summary    sdwan.SimulationSummary `json:"summary"`
	Complete   bool                    `json:"complete"`
	Error      string                  `json:"error"`
}

// History is the hour the scenario replays, one window per transport per minute k (0..59),
// stamped 30 s into the minute:
//
//	mpls: 20 ms, except 120 ms in minutes 10..19, and Down (every probe lost) in minute 40
//	inet: 40 ms, except 130 ms in minutes 15..16
//
// Published version 1 (voice: 150 ms, 2 %, mpls then inet) meets its SLA on mpls throughout
// but for minute 40: mpls Down, voice fails over to inet (at the end of minute 40) and returns
// at the end of minute 41 (mpls back for one minute, and the 30 s hold-down passed): 2
// switches, no breach, 1 minute on inet.
//
// Draft version 2 (voice: 100 ms) breaches on mpls in minute 10 (one bad minute is three bad
// windows and more: breach_after 1) and moves to inet at the end of minute 10 (sla); inet
// breaches too in minutes 15..16 while mpls is worse (violation 0.2 against 0.3, within the
// 0.25 score margin): one sla.breach, 2 minutes missed; mpls recovers in minute 20 and voice
// returns at its end (preferred, 10 minutes after the last switch); minute 40 is as above.
// So 4 switches, 1 breach, 120 s missed, 11 minutes on inet.
func History(base time.Time, k int) []telemetry.TransportWindow {
	mpls, inet := sim.Window("mpls", 5, 0, 20, 1), sim.Window("inet", 5, 0, 40, 1)
	if k >= 10 && k <= 19 {
		mpls = sim.Window("mpls", 5, 0, 120, 1)
	}
	if k == 40 {
		mpls = sim.Window("mpls", 5, 5, 0, 0)
	}
	if k == 15 || k == 16 {
		inet = sim.Window("inet", 5, 0, 130, 1)
	}
	return []telemetry.TransportWindow{mpls, inet}
}

// Run runs the scenario on a started controller.
func Run(t *testing.T, s *servertest.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	rw := s.Key("sdwan:read", "sdwan:write")
	ro := s.Key("sdwan:read")
	var site sdwan.Site
	s.Do("POST", "/sd-wan/v1/sites", rw, `{"name":"Branch 7","transports":[
		{"name":"mpls","kind":"mpls","interface":"eth1","cost":10},{"name":"inet","kind":"broadband","interface":"eth2","cost":1}]}`).JSON(t, &site)
	var pol sdwan.Policy
	want(t, s.Do("POST", "/sd-wan/v1/policies", rw, `{"name":"voice-first","type":"steering",
		"content":{"classes":[{"name":"voice","max_latency_ms":150,"max_loss_pct":2}],"paths":{"voice":["mpls","inet"]}}}`), 201).JSON(t, &pol)
	want(t, s.Do("POST", "/sd-wan/v1/policies/"+pol.ID+"/publish", rw, map[string]any{"version": 1, "sites": []string{site.ID}}), 202)
	want(t, s.Do("POST", "/sd-wan/v1/policies/"+pol.ID+"/versions", rw, `{"content":{"classes":[{"name":"voice","max_latency_ms":100,"max_loss_pct":2}],"paths":{"voice":["mpls","inet"]}}}`), 201)

	acc, err := sim.Claim(ctx, s.Client, s.URL, site.Claim, "b7")
	if err != nil {
		t.Fatal(err)
	}
	ag, err := sim.Connect(ctx, acc)
	if err != nil {
		t.Fatal(err)
	}
	defer ag.Close()
	// The hour before the current minute; a 2h window holds it even if a minute turns.
	base := time.Now().UTC().Truncate(time.Minute).Add(-time.Hour)
	for k := range 60 {
		if err := ag.Report(ctx, base.Add(time.Duration(k)*time.Minute+30*time.Second), time.Second, History(base, k)...); err != nil {
			t.Fatal(err)
		}
	}
	// The simulation reads stored history: wait for the watermark that says all 60 are stored
	// (the live health counts a report a moment before the time-series store has it).
	if err := ag.WaitStored(ctx, 60); err != nil {
		t.Fatal(err)
	}

	r := want(t, s.Do("POST", "/sd-wan/v1/policies/"+pol.ID+"/versions/2/simulate", rw, `{"window":"2h"}`), 200)
	var res Result
	r.JSON(t, &res)
	if !res.Complete || res.Error != "" || len(res.Sites) != 1 {
		t.Fatalf("simulation: complete %v, error %q, %d sites: %s", res.Complete, res.Error, len(res.Sites), r.Body)
	}
	if rs := res.Simulation.Resolution; rs.Step != "1m" || rs.Latency != "mean" || rs.BreachAfter != 1 || rs.RecoverAfter != 1 || rs.HoldDown != "30s" {
		t.Errorf("resolution %+v; want 1m, mean, breach and recover after 1 minute, hold-down 30s", rs)
	}
	st := res.Sites[0]
	if st.Site != site.ID || st.Minutes != 60 || !st.Changed || st.Published == nil || st.Published.Version != 1 || len(st.Classes) != 1 {
		t.Fatalf("site result %+v; want 60 minutes, changed, against version 1, one class", st)
	}
	c := st.Classes[0]
	at := func(k int) time.Time { return base.Add(time.Duration(k) * time.Minute) }
	check := func(side string, o *whatif.Outcome, breaches int, missed int64, onInet int64, sw []whatif.Switch) {
		t.Helper()
		if o == nil {
			t.Fatalf("%s: no outcome", side)
		}
		if o.SLABreaches != breaches || o.SLAMissedS != missed || o.PathSwitches != len(sw) ||
			o.TimeOnPathS["inet"] != onInet || o.TimeOnPathS["mpls"] != 3600-onInet || o.FinalPath != "mpls" {
			t.Errorf("%s: %+v; want %d breaches, %d s missed, %d switches, %d s on inet, %d on mpls", side, o, breaches, missed, len(sw), onInet, 3600-onInet)
		}
		got, _ := json.Marshal(o.Switches)
		exp, _ := json.Marshal(sw)
		if string(got) != string(exp) {
			t.Errorf("%s switches:\n got %s\nwant %s", side, got, exp)
		}
	}
	check("draft", c.Draft, 1, 120, 660, []whatif.Switch{
		{At: at(11), From: "mpls", To: "inet", Reason: "sla"}, {At: at(21), From: "inet", To: "mpls", Reason: "preferred"},
		{At: at(41), From: "mpls", To: "inet", Reason: "down"}, {At: at(42), From: "inet", To: "mpls", Reason: "preferred"}})
	check("published", c.Published, 0, 0, 60, []whatif.Switch{
		{At: at(41), From: "mpls", To: "inet", Reason: "down"}, {At: at(42), From: "inet", To: "mpls", Reason: "preferred"}})
	if !c.Changed || res.Summary.SitesChanged != 1 || len(res.Summary.Changes) != 1 || res.Summary.Changes[0] != (sdwan.SimChangedClass{Site: site.ID, Class: "voice"}) {
		t.Errorf("summary %+v; want voice at %s changed", res.Summary, site.ID)
	}
	if len(res.Summary.Classes) != 1 || res.Summary.Classes[0].Draft != (sdwan.SimTotal{SLABreaches: 1, SLAMissedS: 120, PathSwitches: 4}) ||
		res.Summary.Classes[0].Published != (sdwan.SimTotal{PathSwitches: 2}) {
		t.Errorf("class totals %+v", res.Summary.Classes)
	}

	// The published version against itself changes nothing; changed_only then lists no site.
	var same Result
	want(t, s.Do("POST", "/sd-wan/v1/policies/"+pol.ID+"/versions/1/simulate", rw, `{"window":"2h","changed_only":true}`), 200).JSON(t, &same)
	if !same.Complete || len(same.Sites) != 0 || same.Summary.Sites != 1 || same.Summary.SitesChanged != 0 {
		t.Errorf("version 1 against itself: %+v", same)
	}

	// A reader may see simulations, not run them.
	if r := s.Do("POST", "/sd-wan/v1/policies/"+pol.ID+"/versions/2/simulate", ro, `{}`); r.Status != 403 {
		t.Errorf("simulate with sdwan:read only: %d; want 403", r.Status)
	}
	// Bad requests are refused before anything streams.
	for _, bad := range []struct {
		path, body string
		status     int
	}{
		{"versions/2/simulate", `{"window":"90d"}`, 400},
		{"versions/2/simulate", `{"window":"2h","until":"now"}`, 400},
		{"versions/2/simulate", `{"latency":"max"}`, 400},
		{"versions/2/simulate", `{"sites":["../etc"]}`, 400},
		{"versions/x/simulate", `{}`, 400},
		{"versions/9/simulate", `{}`, 404},
	} {
		if r := s.Do("POST", "/sd-wan/v1/policies/"+pol.ID+"/"+bad.path, rw, bad.body); r.Status != bad.status {
			t.Errorf("POST %s %s: %d %s; want %d", bad.path, bad.body, r.Status, r.Body, bad.status)
		}
	}

	// Publishing can require a recent simulation of the very version; the change links it.
	want(t, s.Do("PATCH", "/sd-wan/v1/policies/"+pol.ID, rw, `{"require_simulation_minutes":10}`), 200)
	want(t, s.Do("POST", "/sd-wan/v1/policies/"+pol.ID+"/versions", rw, `{"content":{"classes":[{"name":"voice","max_latency_ms":90}],"paths":{"voice":["mpls","inet"]}}}`), 201)
	r = s.Do("POST", "/sd-wan/v1/policies/"+pol.ID+"/publish", rw, `{"version":3}`)
	if r.Status != 409 || r.Err(t).Error.Code != sdwan.CodeSimulationRequired {
		t.Errorf("publishing a version never simulated: %d %s; want 409 %s", r.Status, r.Body, sdwan.CodeSimulationRequired)
	}
	// A simulation of other sites does not open the gate for this one.
	var site2 sdwan.Site
	want(t, s.Do("POST", "/sd-wan/v1/sites", rw, `{"name":"Branch 8","transports":[
		{"name":"mpls","kind":"mpls","interface":"eth1"},{"name":"inet","kind":"broadband","interface":"eth2"}]}`), 201).JSON(t, &site2)
	var only2 Result
	want(t, s.Do("POST", "/sd-wan/v1/policies/"+pol.ID+"/versions/3/simulate", rw, map[string]any{"window": "2h", "sites": []string{site2.ID}}), 200).JSON(t, &only2)
	if !only2.Complete || fmt.Sprint(only2.Simulation.SiteIDs) != fmt.Sprint([]string{site2.ID}) {
		t.Errorf("simulation of %s: complete %v, site_ids %v", site2.ID, only2.Complete, only2.Simulation.SiteIDs)
	}
	for _, body := range []any{`{"version":3}`, map[string]any{"version": 3, "sites": []string{site.ID, site2.ID}}} {
		r = s.Do("POST", "/sd-wan/v1/policies/"+pol.ID+"/publish", rw, body)
		if r.Status != 409 || r.Err(t).Error.Code != sdwan.CodeSimulationRequired || !strings.Contains(string(r.Body), site.ID) {
			t.Errorf("publishing version 3 (%v), simulated on %s only: %d %s; want 409 %s naming %s", body, site2.ID, r.Status, r.Body, sdwan.CodeSimulationRequired, site.ID)
		}
	}
	var latest sdwan.Simulation
	want(t, s.Do("GET", "/sd-wan/v1/policies/"+pol.ID+"/versions/2/simulation", ro, nil), 200).JSON(t, &latest)
	if latest.ID != res.Simulation.ID || latest.Summary == nil || latest.Summary.SitesChanged != 1 {
		t.Errorf("latest simulation of version 2: %+v; want %s with its summary", latest, res.Simulation.ID)
	}
	want(t, s.Do("GET", "/sd-wan/v1/policies/"+pol.ID+"/simulations/"+res.Simulation.ID, ro, nil), 200)
	var pub sdwan.PublishResult
	want(t, s.Do("POST", "/sd-wan/v1/policies/"+pol.ID+"/publish", rw, `{"version":2}`), 202).JSON(t, &pub)
	if pub.Change == nil || pub.Change.Simulation != res.Simulation.ID {
		t.Errorf("change record %+v; want it to link simulation %s", pub.Change, res.Simulation.ID)
	}
	var changes struct{ Data []sdwan.Change }
	s.Do("GET", "/sd-wan/v1/changes?target="+pol.ID, ro, nil).JSON(t, &changes)
	if len(changes.Data) != 2 || changes.Data[0].Simulation != res.Simulation.ID {
		t.Errorf("changes %+v; want the newest to link %s", changes.Data, res.Simulation.ID)
	}
}

func want(t *testing.T, r *servertest.Response, status int) *servertest.Response {
	t.Helper()
	if r.Status != status {
		t.Fatalf("%d %s; want %d", r.Status, r.Body, status)
	}
	return r
}
