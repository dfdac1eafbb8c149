package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/edgewan/edgewan/agent/sim"
	"github.com/edgewan/edgewan/controller/sdwan"
	"github.com/edgewan/edgewan/controller/server/servertest"
	"github.com/edgewan/edgewan/controller/whatif/whatiftest"
)

// TestSimulate replays an hour of known history under a draft and the published version, on
// both databases with the embedded time-series store (influxe2e runs it on InfluxDB).
func TestSimulate(t *testing.T) {
	backends(t, func(t *testing.T, s *servertest.Server) { whatiftest.Run(t, s) })
}

// TestTransportStatusMatchesFigures: a site whose first transport (by name) is down still
// shows its other transports' status from their windows, never unknown next to live figures.
func TestTransportStatusMatchesFigures(t *testing.T) {
	s := servertest.Start(t, servertest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rw := s.Key("sdwan:read", "sdwan:write")
	var site sdwan.Site
	s.Do("POST", "/sd-wan/v1/sites", rw, `{"name":"Degraded","transports":[{"name":"inet","interface":"eth2"},{"name":"mpls","interface":"eth1"},{"name":"lte","interface":"wwan0"}]}`).JSON(t, &site)
	acc, err := sim.Claim(ctx, s.Client, s.URL, site.Claim, "d1")
	if err != nil {
		t.Fatal(err)
	}
	ag, err := sim.Connect(ctx, acc)
	if err != nil {
		t.Fatal(err)
	}
	defer ag.Close()
	// inet is down from its first window on (the case seen: mpls then stayed unknown); lte
	// never reports.
	for range 3 {
		if err := ag.Report(ctx, time.Now(), time.Second, sim.Window("inet", 5, 5, 0, 0), sim.Window("mpls", 5, 0, 19, 1)); err != nil {
			t.Fatal(err)
		}
	}
	var got sdwan.Site
	waitFor(t, func() bool {
		s.Do("GET", "/sd-wan/v1/sites/"+site.ID, rw, nil).JSON(t, &got)
		return got.Status == sdwan.SiteDegraded
	})
	want := map[string]string{"inet": sdwan.TransportDown, "mpls": sdwan.TransportUp, "lte": sdwan.TransportUnknown}
	for _, tr := range got.Transports {
		if tr.Status != want[tr.Name] {
			t.Errorf("transport %s: status %q with %v ms, %v %% loss; want %q", tr.Name, tr.Status, tr.LatencyMs, tr.LossPct, want[tr.Name])
		}
	}
}
