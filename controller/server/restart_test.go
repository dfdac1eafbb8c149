package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/edgewan/edgewan/agent/sim"
	"github.com/edgewan/edgewan/controller/config"
	"github.com/edgewan/edgewan/controller/sdwan"
	"github.com/edgewan/edgewan/controller/server/servertest"
	"github.com/edgewan/edgewan/telemetry"
)

// TestRestartChangesNothing: the controller publishes each site's watermark (telemetry.Stored)
// once a report is stored, keeps it across a restart (with a new boot), drops what it stored
// already as duplicates, adopts the paths the agent says it is on before deciding anything,
// and takes a late report (an outage-era window replayed from the spool) into the history
// without a down event or a switch.
func TestRestartChangesNothing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dir := t.TempDir()
	cfg := func(c *config.Config) { c.DataDir = dir }
	s := servertest.Start(t, servertest.Options{Config: cfg})
	rw := s.Key("sdwan:read", "sdwan:write")
	var site sdwan.Site
	s.Do("POST", "/sd-wan/v1/sites", rw, `{"name":"b","transports":[{"name":"mpls","interface":"eth0"},{"name":"inet","interface":"eth1"}]}`).JSON(t, &site)
	var pol sdwan.Policy
	s.Do("POST", "/sd-wan/v1/policies", rw, `{"name":"std","type":"steering","content":{"classes":[{"name":"voice","max_latency_ms":150}],"paths":{"voice":["mpls","inet"]}}}`).JSON(t, &pol)
	wantStatus(t, s.Do("POST", "/sd-wan/v1/policies/"+pol.ID+"/publish", rw, map[string]any{"version": 1, "sites": []string{site.ID}}), 202)
	acc, ag := claimAgent(ctx, t, s, site.Claim, "b")
	healthy := []telemetry.TransportWindow{sim.Window("mpls", 5, 0, 20, 1), sim.Window("inet", 5, 0, 30, 2)}
	for range 2 {
		if err := ag.Report(ctx, time.Now(), time.Second, healthy...); err != nil {
			t.Fatal(err)
		}
	}
	// mpls goes down: voice moves to inet (seq 3).
	if err := ag.Report(ctx, time.Now(), time.Second, sim.Window("mpls", 5, 5, 0, 0), healthy[1]); err != nil {
		t.Fatal(err)
	}
	for {
		var d telemetry.Decisions
		nextOf(t, ag, telemetry.KindDecisions, &d)
		if d.Paths["voice"] == "inet" {
			break
		}
	}
	var w1 telemetry.Stored
	for w1.Seq < 3 { // within one flush (5 s)
		nextOf(t, ag, telemetry.KindStored, &w1)
	}
	if w1.Site != site.ID || w1.Device != acc.Device || w1.Boot == "" {
		t.Fatalf("watermark: %+v", w1)
	}
	ag.Kill()
	events := func(typ string) int {
		var l struct{ Data []any }
		s.Do("GET", "/sd-wan/v1/events?type="+typ+"&site="+site.ID, rw, nil).JSON(t, &l)
		return len(l.Data)
	}
	switched, downs := events("path.switched"), events("transport.down")

	s.Stop()
	s = servertest.Start(t, servertest.Options{Config: cfg})
	acc.MQTT.URL = "mqtts://" + s.MQTTAddr()
	ag, err := sim.Connect(ctx, acc) // it says online, without paths yet
	if err != nil {
		t.Fatal(err)
	}
	defer ag.Close()
	var w2 telemetry.Stored
	nextOf(t, ag, telemetry.KindStored, &w2) // retained, republished at start
	if w2.Seq != 3 || w2.Boot == w1.Boot {
		t.Fatalf("watermark after the restart: %+v; before %+v", w2, w1)
	}
	// What was stored comes again (the agent did not see the watermark in time): dropped.
	ag.ResumeSeq(2)
	if err := ag.Report(ctx, time.Now(), time.Second, healthy...); err != nil {
		t.Fatal(err)
	}
	// The agent says where traffic is, then replays an old window with mpls down (late), then
	// reports mpls healthy now.
	if err := ag.Publish(ctx, telemetry.KindStatus, []byte(`{"v":1,"device":"`+acc.Device+`","state":"online","ts":"`+
		time.Now().UTC().Format(time.RFC3339)+`","paths":{"voice":"inet"}}`), true); err != nil {
		t.Fatal(err)
	}
	if err := ag.Report(ctx, time.Now().Add(-time.Minute), time.Second, sim.Window("mpls", 5, 5, 0, 0), healthy[1]); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := ag.Report(ctx, time.Now(), time.Second, healthy...); err != nil {
			t.Fatal(err)
		}
	}
	var d telemetry.Decisions
	nextOf(t, ag, telemetry.KindDecisions, &d) // published once adopted: where the agent is
	if d.Paths["voice"] != "inet" {
		t.Fatalf("decisions after the restart: %+v; want voice on inet, where the agent is", d.Paths)
	}
	waitFor(t, func() bool {
		m := scrape(t, s)
		return strings.Contains(m, "edgewan_ingest_late_reports_total 1") && strings.Contains(m, "edgewan_ingest_reports_total 4") &&
			strings.Contains(m, `edgewan_ingest_rejected_total{reason="duplicate"} 1`)
	})
	if a, b := events("path.switched"), events("transport.down"); a != switched || b != downs {
		t.Fatalf("after the restart: path.switched %d -> %d, transport.down %d -> %d; want no change", switched, a, downs, b)
	}
	var h sdwan.Health
	s.Do("GET", "/sd-wan/v1/sites/"+site.ID+"/health?window=5m", rw, nil).JSON(t, &h)
	if len(h.SLA) != 1 || h.SLA[0].Path != "inet" {
		t.Fatalf("health after the restart: %+v", h)
	}
}

// A site claimed while the controller runs gets a watermark (0) before it stores anything: a
// new agent that has seen none falls back to deleting at PUBACK after a grace (it takes that
// silence for an older controller), so it must learn at once that this one speaks the watermark.
func TestClaimedSiteGetsWatermarkAtOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := servertest.Start(t, servertest.Options{})
	rw := s.Key("sdwan:read", "sdwan:write")
	var site sdwan.Site
	s.Do("POST", "/sd-wan/v1/sites", rw, `{"name":"w","transports":[{"name":"mpls","interface":"eth0"}]}`).JSON(t, &site)
	acc, ag := claimAgent(ctx, t, s, site.Claim, "w")
	defer ag.Kill()
	var w telemetry.Stored
	nextOf(t, ag, telemetry.KindStored, &w) // retained: no report sent yet
	if w.Site != site.ID || w.Device != acc.Device || w.Seq != 0 || w.Boot == "" {
		t.Fatalf("watermark of a fresh site: %+v", w)
	}
}
