package telemetry

import (
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"
)

func validReport() Report {
	return Report{V: 1, Site: "site_a", Device: "dev_a", Seq: 7, Time: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC), WindowMs: 1000,
		Transport: []TransportWindow{{Name: "mpls", Sent: 5, Lost: 1, LatencyMs: 20, P50Ms: 19, P95Ms: 30, MinMs: 15, MaxMs: 31, JitterMs: 2, StdDevMs: 3}}}
}

func TestDecodeReport(t *testing.T) {
	good, _ := json.Marshal(validReport())
	tests := []struct {
		name    string
		site    string
		payload string
		wantErr string
	}{
		{"valid", "site_a", string(good), ""},
		{"other site's topic", "site_b", string(good), "on site"},
		{"not json", "site_a", "\x00\xff", "invalid telemetry"},
		{"wrong version", "site_a", strings.Replace(string(good), `"v":1`, `"v":2`, 1), "schema version"},
		{"bad device", "site_a", strings.Replace(string(good), `"dev_a"`, `"Dev A"`, 1), "device"},
		{"no transports", "site_a", `{"v":1,"site":"site_a","device":"d","ts":"2026-01-01T00:00:00Z","window_ms":1000,"transports":[]}`, "transports"},
		{"lost over sent", "site_a", strings.Replace(string(good), `"lost":1`, `"lost":9`, 1), "sent"},
		{"negative latency", "site_a", strings.Replace(string(good), `"latency_ms":20`, `"latency_ms":-1`, 1), "latency"},
		{"zero window", "site_a", strings.Replace(string(good), `"window_ms":1000`, `"window_ms":0`, 1), "window_ms"},
		{"no time", "site_a", strings.Replace(string(good), `"ts":"2026-11-21T10:00:00Z"`, `"ts":"0001-01-01T00:00:00Z"`, 1), "timestamp"},
		{"oversize", "site_a", `{"pad":"` + strings.Repeat("x", MaxPayload) + `"}`, "over"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var r Report
			err := DecodeReport(tc.site, []byte(tc.payload), &r)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("got %v; want no error", err)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got %v; want ErrInvalid mentioning %q", err, tc.wantErr)
			}
		})
	}
}

// TestDecodeReportReusesCleanly decodes into a reused report: fields absent from the second
// payload must not keep the first one's values.
func TestDecodeReportReusesCleanly(t *testing.T) {
	var r Report
	first := validReport()
	first.Transport[0].Down = true
	b, _ := json.Marshal(first)
	if err := DecodeReport("site_a", b, &r); err != nil {
		t.Fatal(err)
	}
	if err := DecodeReport("site_a", []byte(`{"v":1,"site":"site_a","device":"dev_a","seq":8,"ts":"2026-01-01T00:00:00Z","window_ms":1000,"transports":[{"name":"mpls","sent":1}]}`), &r); err != nil {
		t.Fatal(err)
	}
	if r.Transport[0].Down || r.Transport[0].LatencyMs != 0 {
		t.Fatalf("stale values survived reuse: %+v", r.Transport[0])
	}
}

func TestParseTopic(t *testing.T) {
	tests := []struct {
		topic, site, kind string
		ok                bool
	}{
		{"edgewan/v1/sites/site_a/telemetry", "site_a", "telemetry", true},
		{"edgewan/v1/sites/site_a/telemetry/x", "", "", false},
		{"edgewan/v1/sites/+/telemetry", "", "", false},
		{"edgewan/v1/sites/SITE/telemetry", "", "", false},
		{"other/v1/sites/site_a/telemetry", "", "", false},
		{"edgewan/v1/sites/site_a", "", "", false},
	}
	for _, tc := range tests {
		site, kind, ok := ParseTopic(tc.topic)
		if site != tc.site || kind != tc.kind || ok != tc.ok {
			t.Errorf("ParseTopic(%q) = %q, %q, %v; want %q, %q, %v", tc.topic, site, kind, ok, tc.site, tc.kind, tc.ok)
		}
	}
}

// FuzzDecodeReport feeds hostile payloads: never a panic, and anything accepted is within the
// documented bounds.
func FuzzDecodeReport(f *testing.F) {
	good, _ := json.Marshal(validReport())
	f.Add(good)
	f.Add([]byte(`{"v":1,"site":"site_a","device":"d","seq":1,"ts":"2026-01-01T00:00:00Z","window_ms":1,"transports":[{"name":"a","sent":1e9}]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, payload []byte) {
		var r Report
		if err := DecodeReport("site_a", payload, &r); err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		if r.Site != "site_a" || len(r.Transport) == 0 || len(r.Transport) > MaxTransports {
			t.Fatalf("accepted an out-of-bounds report: %+v", r)
		}
		for _, tw := range r.Transport {
			if tw.Lost > tw.Sent || tw.Sent < 0 || tw.LossPct() < 0 || tw.LossPct() > 100 {
				t.Fatalf("accepted bad counts: %+v", tw)
			}
		}
	})
}

// ValidID agrees with the pattern it documents, ^[a-z0-9][a-z0-9_-]{0,63}$, on any input.
func FuzzValidID(f *testing.F) {
	re := regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)
	for _, s := range []string{"", "a", "site_1", "-a", "_a", "A", "a b", strings.Repeat("a", 64), strings.Repeat("a", 65), "é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := ValidID(s), re.MatchString(s); got != want {
			t.Fatalf("ValidID(%q) = %v, the pattern says %v", s, got, want)
		}
	})
}
