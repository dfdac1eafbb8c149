package mqtt

import (
	"strings"
	"testing"
)

// TestSubjectSite: the partition subject's site and kind, as strings.SplitN(subject, ".", 5)
// gave them before (kind keeps any further dots), and no allocation.
func TestSubjectSite(t *testing.T) {
	for _, tc := range []struct {
		subject, site, kind string
		ok                  bool
	}{
		{"edgewan.in.3.site-1.telemetry", "site-1", "telemetry", true},
		{"edgewan.in.15.0b9c.status", "0b9c", "status", true},
		{"edgewan.in.3.site-1.a.b", "site-1", "a.b", true},
		{"edgewan.in.3.site-1.", "site-1", "", true},
		{"edgewan.in.3.site-1", "", "", false},
		{"edgewan.in.3", "", "", false},
		{"", "", "", false},
	} {
		site, kind, ok := subjectSite(tc.subject)
		if site != tc.site || kind != tc.kind || ok != tc.ok {
			t.Errorf("subjectSite(%q) = %q, %q, %v; want %q, %q, %v", tc.subject, site, kind, ok, tc.site, tc.kind, tc.ok)
		}
	}
	if n := testing.AllocsPerRun(100, func() { subjectSite("edgewan.in.3.site-1.telemetry") }); n != 0 {
		t.Errorf("subjectSite allocates %v times", n)
	}
}

// FuzzSubjectSite: subjectSite agrees with strings.SplitN(subject, ".", 5) on any subject.
func FuzzSubjectSite(f *testing.F) {
	f.Add("edgewan.in.3.site-1.telemetry")
	f.Add("a.b.c.d")
	f.Add("....")
	f.Fuzz(func(t *testing.T, subject string) {
		site, kind, ok := subjectSite(subject)
		parts := strings.SplitN(subject, ".", 5)
		if ok != (len(parts) == 5) || ok && (site != parts[3] || kind != parts[4]) {
			t.Fatalf("subjectSite(%q) = %q, %q, %v; SplitN: %q", subject, site, kind, ok, parts)
		}
	})
}
