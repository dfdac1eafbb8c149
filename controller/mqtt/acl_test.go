package mqtt_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/edgewan/edgewan/controller/mqtt"
	"github.com/edgewan/edgewan/telemetry"
)

func TestAgentAllowed(t *testing.T) {
	for _, tc := range []struct {
		name  string
		site  string
		topic string
		write bool
		want  bool
	}{
		{"own telemetry", "site-a", "edgewan/v1/sites/site-a/telemetry", true, true},
		{"own events", "site-a", "edgewan/v1/sites/site-a/events", true, true},
		{"own acks", "site-a", "edgewan/v1/sites/site-a/acks", true, true},
		{"own status", "site-a", "edgewan/v1/sites/site-a/status", true, true},
		{"own policy read", "site-a", "edgewan/v1/sites/site-a/policy", false, true},
		{"own decisions read", "site-a", "edgewan/v1/sites/site-a/decisions", false, true},
		{"own policy write", "site-a", "edgewan/v1/sites/site-a/policy", true, false},
		{"own telemetry read", "site-a", "edgewan/v1/sites/site-a/telemetry", false, false},
		{"other site write", "site-a", "edgewan/v1/sites/site-b/telemetry", true, false},
		{"other site read", "site-a", "edgewan/v1/sites/site-b/policy", false, false},
		{"longer site name", "site-a", "edgewan/v1/sites/site-ab/telemetry", true, false},
		{"shorter site name", "site-ab", "edgewan/v1/sites/site-a/telemetry", true, false},
		{"plus for site", "site-a", "edgewan/v1/sites/+/policy", false, false},
		{"hash", "site-a", "#", false, false},
		{"own hash", "site-a", "edgewan/v1/sites/site-a/#", false, false},
		{"own plus", "site-a", "edgewan/v1/sites/site-a/+", false, false},
		{"shared", "site-a", "$share/g/edgewan/v1/sites/site-a/policy", false, false},
		{"extra level", "site-a", "edgewan/v1/sites/site-a/telemetry/x", true, false},
		{"trailing slash", "site-a", "edgewan/v1/sites/site-a/telemetry/", true, false},
		{"double slash", "site-a", "edgewan/v1/sites//site-a/telemetry", true, false},
		{"empty", "site-a", "", true, false},
		{"root only", "site-a", "edgewan/v1/sites/", true, false},
		{"case", "site-a", "edgewan/v1/sites/SITE-A/telemetry", true, false},
		{"invalid own site", "Site A", "edgewan/v1/sites/Site A/telemetry", true, false},
		{"empty own site", "", "edgewan/v1/sites//telemetry", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := mqtt.AgentAllowed(tc.site, tc.topic, tc.write); got != tc.want {
				t.Fatalf("AgentAllowed(%q, %q, %v) = %v; want %v", tc.site, tc.topic, tc.write, got, tc.want)
			}
		})
	}
}

func TestMatchTopic(t *testing.T) {
	for _, tc := range []struct {
		filter, topic string
		want          bool
	}{
		{"a/b", "a/b", true},
		{"a/b", "a/c", false},
		{"a/+", "a/b", true},
		{"a/+", "a/b/c", false},
		{"a/+", "a", false},
		{"a/#", "a", true},
		{"a/#", "a/b/c", true},
		{"#", "a/b", true},
		{"#", "$SYS/x", false},
		{"+/x", "$SYS/x", false},
		{"$SYS/#", "$SYS/x", true},
		{"+/+", "a/b", true},
		{"+", "a/b", false},
		{"a//b", "a//b", true},
		{"a/+/b", "a//b", true},
		{"edgewan/v1/sites/+/telemetry", "edgewan/v1/sites/site-a/telemetry", true},
		{"edgewan/v1/sites/+/telemetry", "edgewan/v1/sites/site-a/events", false},
		{"a/b", "a/b/", false},
		{"a/b/", "a/b", false},
	} {
		if got := mqtt.MatchTopic(tc.filter, tc.topic); got != tc.want {
			t.Errorf("MatchTopic(%q, %q) = %v; want %v", tc.filter, tc.topic, got, tc.want)
		}
	}
}

// FuzzTopicACL checks, over arbitrary topic strings, that AgentAllowed never panics and never
// allows anything but one of the site's own exact topics, so no allowed name or filter can
// reach another site.
func FuzzTopicACL(f *testing.F) {
	sites := []string{"site-a", "site-b", "a", "site-a-b", "s_1"}
	for _, s := range []string{
		"edgewan/v1/sites/site-a/telemetry", "edgewan/v1/sites/site-a/policy",
		"edgewan/v1/sites/site-b/telemetry", "edgewan/v1/sites/+/policy", "#", "+/#",
		"edgewan/v1/sites/site-a/#", "edgewan/v1/sites/site-a-b/events", "edgewan/v1/sites/a/acks",
		"$share/x/edgewan/v1/sites/site-a/policy", "edgewan/v1/sites/site-a/telemetry\x00",
		"edgewan/v1/sites/site-a//telemetry", "", "/", "edgewan/v1/sites/",
	} {
		f.Add(s, uint8(0), true)
		f.Add(s, uint8(0), false)
	}
	f.Fuzz(func(t *testing.T, topic string, siteIdx uint8, write bool) {
		site := sites[int(siteIdx)%len(sites)]
		// MatchTopic must not panic on arbitrary filters or topics either.
		_ = mqtt.MatchTopic(topic, "edgewan/v1/sites/site-a/telemetry")
		_ = mqtt.MatchTopic("edgewan/+/sites/#", topic)
		if !mqtt.AgentAllowed(site, topic, write) {
			return
		}
		if strings.ContainsAny(topic, "+#\x00") || strings.HasPrefix(topic, "$") {
			t.Fatalf("allowed %q for %s: wildcard or special topic", topic, site)
		}
		s, kind, ok := telemetry.ParseTopic(topic)
		if !ok || s != site {
			t.Fatalf("allowed %q for %s: parses as site %q (ok %v)", topic, site, s, ok)
		}
		kinds := telemetry.DownKinds
		if write {
			kinds = telemetry.UpKinds
		}
		if !slices.Contains(kinds, kind) || topic != telemetry.Topic(site, kind) {
			t.Fatalf("allowed %q for %s (write %v): kind %q", topic, site, write, kind)
		}
		for _, other := range sites {
			if other == site {
				continue
			}
			for _, k := range append(slices.Clone(telemetry.UpKinds), telemetry.DownKinds...) {
				if mqtt.MatchTopic(topic, telemetry.Topic(other, k)) {
					t.Fatalf("allowed %q for %s, which matches %s's %s", topic, site, other, k)
				}
			}
		}
	})
}

func BenchmarkAgentAllowed(b *testing.B) {
	topic := telemetry.Topic("site-a", telemetry.KindStatus)
	b.ReportAllocs()
	for b.Loop() {
		if !mqtt.AgentAllowed("site-a", topic, true) {
			b.Fatal("refused")
		}
	}
}
