package server_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/edgewan/edgewan/controller/server/servertest"
)

// TestMetricsConventions lints the controller's /metrics with Prometheus's own linter (units in
// names, _total on counters, no camelCase, help on every metric) and checks the operators'
// metrics list (README, docs/operations.md) is registered.
func TestMetricsConventions(t *testing.T) {
	s := servertest.Start(t, servertest.Options{})
	s.Do("GET", "/sd-wan/v1/sites", s.Key("sdwan:read"), nil) // a request: the HTTP series exist
	resp, err := http.Get("http://" + s.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	problems, err := promlint.New(resp.Body).Lint()
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "edgewan_") {
			t.Errorf("metric %s: %s", p.Metric, p.Text)
		}
	}
	names := s.MetricNames()
	for _, want := range []string{
		"edgewan_ingest_reports_total", "edgewan_ingest_rejected_total", "edgewan_ingest_lag_seconds",
		"edgewan_ingest_pending_events", "edgewan_mqtt_queued_messages",
		"edgewan_telemetry_sink_pending_points", "edgewan_telemetry_sink_written_total", "edgewan_telemetry_sink_dropped_total",
		"edgewan_sites", "edgewan_transports", "edgewan_sites_live", "edgewan_transports_tracked",
		"edgewan_sdwan_events_total", "edgewan_path_switches_total",
		"edgewan_webhook_attempts_total", "edgewan_webhook_attempt_duration_seconds", "edgewan_webhook_deliveries",
		"edgewan_http_requests_total", "edgewan_http_request_duration_seconds",
		"edgewan_aigw_overhead_seconds", "edgewan_aigw_redactions_total", "edgewan_aigw_blocked_total", "edgewan_aigw_model_calls_total",
		"go_goroutines", "process_cpu_seconds_total",
	} {
		if !slices.Contains(names, want) {
			t.Errorf("metric %s is not registered; registered: %v", want, names)
		}
	}
}
