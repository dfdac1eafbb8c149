package main

import (
	"bufio"
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/edgewan/edgewan/telemetry"
)

// The hand-built payload must be what the controller accepts.
func TestAppendReportDecodes(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)
	for _, tt := range []struct {
		name  string
		index int
		seq   uint64
	}{{"first", 0, 1}, {"lossy", 96, 1}, {"large seq", 9999, 1_800_000_000_000}} {
		t.Run(tt.name, func(t *testing.T) {
			b := appendReport(nil, "site_abc", "dev_xyz", tt.seq, now, tt.index)
			var r telemetry.Report
			if err := telemetry.DecodeReport("site_abc", b, &r); err != nil {
				t.Fatalf("DecodeReport: %v\n%s", err, b)
			}
			if r.Seq != tt.seq || !r.Time.Equal(now) || r.Device != "dev_xyz" || len(r.Transport) != 3 || r.Transport[2].Name != "lte" {
				t.Fatalf("got %+v; want seq %d at %s, 3 transports", r, tt.seq, now)
			}
		})
	}
}

func TestPacketsRoundTrip(t *testing.T) {
	pub := encodePublish(nil, "edgewan/v1/sites/s1/telemetry", bytes.Repeat([]byte("x"), 300), 1, true, 513)
	c := &mqttConn{r: bufio.NewReader(bytes.NewReader(pub))}
	typ, flags, body, err := c.readPacket(nil)
	if err != nil || typ != pktPublish {
		t.Fatalf("readPacket: type %d, err %v; want PUBLISH", typ, err)
	}
	topic, id, qos, payload, err := parsePublish(flags, body)
	if err != nil || topic != "edgewan/v1/sites/s1/telemetry" || id != 513 || qos != 1 || len(payload) != 300 || flags&1 != 1 {
		t.Fatalf("got topic %q id %d qos %d payload %d retain %d err %v", topic, id, qos, len(payload), flags&1, err)
	}
	conn := encodeConnect(nil, connectOpts{ClientID: "d", Username: "d", Password: "p", KeepAlive: time.Minute, WillTopic: "w", WillPayload: []byte("x"), WillRetain: true})
	if conn[0] != pktConnect<<4 || conn[1] != byte(len(conn)-2) || conn[9] != 0x80|0x40|0x20|0x08|0x04 {
		t.Fatalf("CONNECT % x", conn)
	}
}

func TestHistogramQuantile(t *testing.T) {
	bs := []bucket{{0.1, 50}, {1, 99}, {math.Inf(1), 100}}
	tests := []struct {
		name string
		q    float64
		want float64
	}{{"median in the first bucket", 0.5, 0.1}, {"p75 interpolated", 0.75, 0.1 + 0.9*25/49}, {"p99 at a bound", 0.99, 1}, {"p100 in +Inf", 1, 1}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := histogramQuantile(tt.q, bs); math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("got %v; want %v", got, tt.want)
			}
		})
	}
	s, err := parseMetrics(strings.NewReader("# HELP x\nedgewan_ingest_lag_seconds_bucket{le=\"0.5\"} 3\nedgewan_ingest_lag_seconds_bucket{le=\"+Inf\"} 4\nedgewan_ingest_rejected_total{reason=\"duplicate\"} 2\nprocess_resident_memory_bytes 1.5e+08\n"))
	if err != nil || len(s.Lag) != 2 || s.Lag[1].Count != 4 || s.Rejected["duplicate"] != 2 || s.RSS != 1.5e8 {
		t.Fatalf("parseMetrics: %+v, %v", s, err)
	}
}

func TestLatencyHistogram(t *testing.T) {
	var h histogram
	for i := 1; i <= 100; i++ {
		h.record(time.Duration(i) * time.Millisecond)
	}
	p50, n := h.quantile(0.5)
	if n != 100 || p50 < 50*time.Millisecond || p50 > 54*time.Millisecond {
		t.Errorf("p50: got %s of %d; want 50ms..54ms of 100", p50, n)
	}
}
