// Package influxe2e runs the controller against a real InfluxDB: it lives apart from
// controller/server's tests because InfluxDB's test server needs its own TestMain.
package influxe2e

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/edgewan/edgewan/agent/sim"
	"github.com/edgewan/edgewan/controller/config"
	"github.com/edgewan/edgewan/controller/sdwan"
	"github.com/edgewan/edgewan/controller/server/servertest"
	"github.com/edgewan/edgewan/controller/store/storetest"
	"github.com/edgewan/edgewan/controller/whatif/whatiftest"
	"github.com/edgewan/edgewan/telemetry/sink"
	"github.com/edgewan/edgewan/telemetry/sink/influxtest"
)

// TestMain serves InfluxDB and PostgreSQL (for the scenario on both databases).
func TestMain(m *testing.M) { os.Exit(influxtest.Wrap(func() int { return storetest.Wrap(m.Run) })) }

// TestTelemetryToInflux sends an agent's reports through the embedded broker and reads the
// points back from InfluxDB, after the controller stopped (which must flush them all).
func TestTelemetryToInflux(t *testing.T) {
	db := influxtest.NewDatabase(t)
	s := servertest.Start(t, servertest.Options{Config: func(c *config.Config) {
		c.InfluxURL, c.InfluxBucket = db.URL, db.Bucket
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rw := s.Key("sdwan:read", "sdwan:write")
	var site sdwan.Site
	r := s.Do("POST", "/sd-wan/v1/sites", rw, `{"name":"b1","transports":[{"name":"mpls","interface":"eth1"},{"name":"inet","interface":"eth2"}]}`)
	r.JSON(t, &site)
	acc, err := sim.Claim(ctx, s.Client, s.URL, site.Claim, "b1")
	if err != nil {
		t.Fatal(err)
	}
	ag, err := sim.Connect(ctx, acc)
	if err != nil {
		t.Fatal(err)
	}
	defer ag.Close()
	start := time.Now().Add(-time.Minute)
	const n = 20
	for i := 0; i < n; i++ {
		at := start.Add(time.Duration(i) * time.Second)
		if err := ag.Report(ctx, at, time.Second, sim.Window("mpls", 5, 0, 20+float64(i), 1), sim.Window("inet", 5, 1, 40, 3)); err != nil {
			t.Fatal(err)
		}
	}
	// Wait until the controller has evaluated every report, then flush through the sink.
	deadline := time.Now().Add(10 * time.Second)
	for {
		var h sdwan.Health
		s.Do("GET", "/sd-wan/v1/sites/"+site.ID+"/health?window=5m", rw, nil).JSON(t, &h)
		if len(h.Transports) == 2 && h.Transports[0].Samples == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("controller took %+v reports; want %d", h, n)
		}
		time.Sleep(20 * time.Millisecond) // polling an asynchronous effect, with a deadline
	}
	q, err := sink.NewInflux(sink.InfluxOptions{URL: db.URL, Bucket: db.Bucket})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	var got []sink.Sample
	deadline = time.Now().Add(15 * time.Second)
	for {
		got, err = q.Query(ctx, site.ID, start.Add(-time.Second), start.Add(time.Minute))
		if err == nil && len(got) == 2*n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("InfluxDB holds %d points (err %v); want %d", len(got), err, 2*n)
		}
		time.Sleep(100 * time.Millisecond) // the sink batches for up to its flush interval
	}
	var mpls []sink.Sample
	for _, p := range got {
		if p.Transport == "mpls" {
			mpls = append(mpls, p)
		}
		if p.Site != site.ID || p.Device != acc.Device {
			t.Fatalf("point tags %+v", p)
		}
		if p.Transport == "inet" && (p.LossPct != 20 || p.LatencyMs != 40 || p.Sent != 5 || p.Lost != 1) {
			t.Fatalf("inet point %+v", p)
		}
	}
	if len(mpls) != n || mpls[0].LatencyMs != 20 || mpls[n-1].LatencyMs != 20+n-1 {
		t.Fatalf("mpls points: %d, first %+v", len(mpls), mpls[0])
	}
}

// TestSimulateOnInflux runs the policy simulation's hand-computed scenario with the history in
// InfluxDB, on SQLite and on PostgreSQL (controller/server runs it on both with the embedded
// store).
func TestSimulateOnInflux(t *testing.T) {
	for _, pg := range []bool{false, true} {
		name := "sqlite"
		if pg {
			name = "postgres"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			db := influxtest.NewDatabase(t)
			whatiftest.Run(t, servertest.Start(t, servertest.Options{Postgres: pg, Config: func(c *config.Config) {
				c.InfluxURL, c.InfluxBucket = db.URL, db.Bucket
			}}))
		})
	}
}
