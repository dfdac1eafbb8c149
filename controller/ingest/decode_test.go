package ingest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/edgewan/edgewan/telemetry"
)

// sameAsDecodeReport checks that decodeReport gives exactly what telemetry.DecodeReport gives:
// the same error (or none) and, without error, the same Report.
func sameAsDecodeReport(t *testing.T, site string, payload []byte) (fast bool) {
	t.Helper()
	got, want := newReport(), newReport()
	gotErr := decodeReport(site, payload, got)
	wantErr := telemetry.DecodeReport(site, payload, want)
	if (gotErr == nil) != (wantErr == nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()) {
		t.Fatalf("payload %q: error %v; want %v", payload, gotErr, wantErr)
	}
	if gotErr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("payload %q:\ngot  %+v\nwant %+v", payload, got, want)
	}
	return fastDecode(site, payload, newReport())
}

// newReport is a report as the engine's pool hands them out, used before.
func newReport() *telemetry.Report {
	r := &telemetry.Report{Transport: make([]telemetry.TransportWindow, 0, 4)}
	r.Transport = append(r.Transport, telemetry.TransportWindow{Name: "mpls", Method: "tcp", Sent: 3})
	return r
}

var validPayload = `{"v":1,"site":"s1","device":"d1","seq":42,"ts":"2026-03-01T12:00:00.123456789Z","window_ms":1000,"transports":[` +
	`{"name":"mpls","method":"icmp","sent":10,"lost":1,"latency_ms":21.5,"p50_ms":21,"p95_ms":30.25,"min_ms":19,"max_ms":40,"jitter_ms":2.5,"stddev_ms":3,"down":false},` +
	`{"name":"lte","sent":10,"lost":10,"latency_ms":0,"p50_ms":0,"p95_ms":0,"min_ms":0,"max_ms":0,"jitter_ms":0,"stddev_ms":0,"down":true}]}`

func TestDecodeReportFastPath(t *testing.T) {
	tests := []struct {
		name    string
		payload string
		fast    bool // whether the fast path takes it (else encoding/json does)
	}{
		{"agent's payload", validPayload, true},
		{"with the jitter samples", strings.Replace(validPayload, `"down":false}`, `"down":false,"jitter_n":8,"jitter_mean_ms":2.25,"jitter_sd_ms":1.5}`, 1), true},
		{"with held", strings.Replace(validPayload, `"seq":42`, `"seq":42,"held":40`, 1), true},
		{"held above seq", strings.Replace(validPayload, `"seq":42`, `"seq":42,"held":43`, 1), true},
		{"whitespace everywhere", " {\n\t\"v\" : 1 , \"site\":\"s1\",\"device\":\"d1\",\"seq\":1,\"ts\":\"2026-03-01T12:00:00+02:00\",\"window_ms\":1000,\"transports\" : [ {\"name\":\"inet\",\"sent\":0,\"lost\":0} ] }\r\n", true},
		{"exponent", strings.Replace(validPayload, `"latency_ms":21.5`, `"latency_ms":2.15E1`, 1), true},
		{"negative zero", strings.Replace(validPayload, `"min_ms":19`, `"min_ms":-0`, 1), true},
		{"fields in another order", `{"transports":[{"lost":0,"name":"inet","sent":1}],"window_ms":1000,"ts":"2026-03-01T12:00:00Z","seq":7,"device":"d1","site":"s1","v":1}`, true},
		{"unknown key", strings.Replace(validPayload, `"seq":42`, `"seq":42,"extra":{"a":[1,2]}`, 1), false},
		{"key in other case", strings.Replace(validPayload, `"seq":42`, `"SEQ":42`, 1), false},
		{"repeated key", strings.Replace(validPayload, `"seq":42`, `"seq":41,"seq":42`, 1), false},
		{"null", strings.Replace(validPayload, `"ts":"2026-03-01T12:00:00.123456789Z"`, `"ts":null`, 1), false},
		{"escaped string", strings.Replace(validPayload, `"device":"d1"`, `"device":"d\u0031"`, 1), false},
		{"non-ASCII string", strings.Replace(validPayload, `"device":"d1"`, `"device":"dé"`, 1), false},
		{"float in an int field", strings.Replace(validPayload, `"sent":10,"lost":1`, `"sent":10.0,"lost":1`, 1), false},
		{"negative seq", strings.Replace(validPayload, `"seq":42`, `"seq":-1`, 1), false},
		{"int overflow", strings.Replace(validPayload, `"window_ms":1000`, `"window_ms":99999999999999999999`, 1), false},
		{"float overflow", strings.Replace(validPayload, `"latency_ms":21.5`, `"latency_ms":1e999`, 1), false},
		{"leading zero", strings.Replace(validPayload, `"seq":42`, `"seq":042`, 1), false},
		{"trailing data", validPayload + `{}`, false},
		{"truncated", validPayload[:len(validPayload)-3], false},
		{"bad timestamp", strings.Replace(validPayload, `2026-03-01T12:00:00.123456789Z`, `2026-03-01 12:00:00`, 1), false},
		{"string for a number", strings.Replace(validPayload, `"seq":42`, `"seq":"42"`, 1), false},
		{"wrong site: invalid either way", strings.Replace(validPayload, `"site":"s1"`, `"site":"s2"`, 1), true},
		{"no transports: invalid either way", `{"v":1,"site":"s1","device":"d1","seq":1,"ts":"2026-03-01T12:00:00Z","window_ms":1000,"transports":[]}`, true},
		{"empty object", `{}`, true},
		{"not an object", `[1]`, false},
		{"empty", ``, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sameAsDecodeReport(t, "s1", []byte(tt.payload)); got != tt.fast {
				t.Errorf("fast path: got %v; want %v", got, tt.fast)
			}
		})
	}
}

func TestDecodeReportFastPathAllocations(t *testing.T) {
	payload := []byte(validPayload)
	r := newReport()
	if err := decodeReport("s1", payload, r); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(1000, func() {
		if err := decodeReport("s1", payload, r); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 1 { // the device ID
		t.Errorf("allocations per decode: got %v; want at most 1", allocs)
	}
}

func FuzzDecodeReport(f *testing.F) {
	f.Add([]byte(validPayload))
	r := telemetry.Report{V: 1, Site: "s1", Device: "d1", Seq: 1 << 60, Held: 1 << 59, Time: time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("x", 3600)), WindowMs: 5000,
		Transport: []telemetry.TransportWindow{{Name: "a", Sent: 5, LatencyMs: 1e-7, MaxMs: 123456.789}}}
	b, _ := json.Marshal(r)
	f.Add(b)
	f.Add([]byte(`{"v":1,"transports":[{"down":true},{}]}`))
	f.Fuzz(func(t *testing.T, payload []byte) {
		sameAsDecodeReport(t, "s1", payload)
	})
}

// Random reports as encoding/json writes them all take the fast path and decode the same.
func TestDecodeReportFastPathRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	floats := []float64{0, 1, 0.1, 1e-7, 123456.789, 599999.999, 1.7976931348623157e308, 5e-324, -3.5}
	for i := range 2000 {
		r := telemetry.Report{V: rng.IntN(3), Site: "s1", Device: fmt.Sprintf("dev-%d", rng.IntN(100)), Seq: rng.Uint64(),
			Time:     time.Unix(rng.Int64N(4e9), rng.Int64N(1e9)).In(time.FixedZone("z", (rng.IntN(48)-24)*1800)),
			WindowMs: rng.IntN(4_000_000) - 10}
		for k := range rng.IntN(4) + 1 {
			f := func() float64 { return floats[rng.IntN(len(floats))] * (float64(rng.IntN(1000)+1) / 7000) }
			r.Transport = append(r.Transport, telemetry.TransportWindow{Name: fmt.Sprintf("t%d", k), Method: []string{"", "icmp", "tcp"}[rng.IntN(3)],
				Sent: rng.IntN(20), Lost: rng.IntN(20), LatencyMs: f(), P50Ms: f(), P95Ms: f(), MinMs: f(), MaxMs: f(), JitterMs: f(), StdDevMs: f(), Down: rng.IntN(2) == 0})
		}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if !sameAsDecodeReport(t, "s1", b) {
			t.Fatalf("report %d: fast path declined %s", i, b)
		}
	}
}
