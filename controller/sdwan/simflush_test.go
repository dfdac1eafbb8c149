package sdwan_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/edgewan/edgewan/controller/sdwan"
	"github.com/edgewan/edgewan/controller/store/storetest"
	"github.com/edgewan/edgewan/telemetry"
	"github.com/edgewan/edgewan/telemetry/sink"
)

// TestSimulateTelemetryStoreDown: a simulation first flushes the telemetry sink so that the
// replay sees recent points. With InfluxDB down and points buffered, that flush never
// completes: the simulation must give up after SimulationOptions.FlushTimeout with an error
// naming the telemetry store, not wait for the client to leave while holding its slot.
func TestSimulateTelemetryStoreDown(t *testing.T) {
	ctx := context.Background()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there: InfluxDB is down
	is, err := sink.NewInflux(sink.InfluxOptions{URL: "http://" + addr, Bucket: "edgewan/autogen",
		RetryMin: 10 * time.Millisecond, RetryMax: 50 * time.Millisecond, CloseTimeout: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer is.Close()
	r := &telemetry.Report{V: telemetry.SchemaVersion, Site: "site_a", Device: "dev_a", Time: time.Now(),
		Transport: []telemetry.TransportWindow{{Name: "inet", Sent: 5, LatencyMs: 10}}}
	if err := is.Write(ctx, r); err != nil {
		t.Fatal(err)
	}

	st := storetest.SQLite(t)
	svc := sdwan.NewService(st, sdwan.Options{}, nil)
	svc.SetHistory(is, sdwan.SimulationOptions{FlushTimeout: 300 * time.Millisecond})
	siteID, policyID := simFixture(t, svc)
	run, err := svc.Simulate(ctx, policyID, 1, sdwan.SimulateRequest{Window: "1h", Sites: []string{siteID}}, "")
	if err != nil {
		t.Fatal(err)
	}
	client, cancel := context.WithTimeout(ctx, 20*time.Second) // a patient client
	defer cancel()
	var out strings.Builder
	err = run.Stream(client, &out, nil)
	if err == nil || errors.Is(err, context.DeadlineExceeded) && client.Err() != nil {
		t.Fatalf("Stream: %v; want it to give up on the telemetry store before the client does", err)
	}
	if body := out.String(); !strings.Contains(body, `"complete":false`) || !strings.Contains(body, "telemetry") {
		t.Fatalf("body %s; want complete false and an error naming the telemetry store", body)
	}
	// the slot is free again
	again, err := svc.Simulate(ctx, policyID, 1, sdwan.SimulateRequest{Window: "1h", Sites: []string{siteID}}, "")
	if err != nil {
		t.Fatal(err)
	}
	again.Release()
}
