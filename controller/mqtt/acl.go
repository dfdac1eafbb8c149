package mqtt

import (
	"strings"

	"github.com/edgewan/edgewan/telemetry"
)

// AgentAllowed is the agents' ACL, the same for the embedded broker and the generated Mosquitto
// files: an agent of site may publish (write) exactly to TopicRoot+site+"/"+k for k in
// telemetry.UpKinds, and subscribe to or receive (read) exactly TopicRoot+site+"/"+k for k in
// telemetry.DownKinds. Exact names only: any wildcard, shared subscription ($share/...) or
// other site is refused, so no filter an agent holds can ever match another site's topic.
func AgentAllowed(site, topic string, write bool) bool {
	return telemetry.ValidID(site) && agentAllowed(site, topic, write)
}

// agentAllowed is AgentAllowed for a site already known valid (checked at CONNECT): the
// broker calls it for every publish and every delivery, and ValidID's regexp costs more than
// the rest.
func agentAllowed(site, topic string, write bool) bool {
	if site == "" {
		return false
	}
	rest, ok := strings.CutPrefix(topic, telemetry.TopicRoot)
	if !ok {
		return false
	}
	rest, ok = strings.CutPrefix(rest, site)
	if !ok {
		return false
	}
	kind, ok := strings.CutPrefix(rest, "/")
	if !ok {
		return false
	}
	kinds := telemetry.DownKinds
	if write {
		kinds = telemetry.UpKinds
	}
	for _, k := range kinds {
		if kind == k {
			return true
		}
	}
	return false
}

// agentTopics returns the topics an agent of site may write and read, for the Mosquitto ACL.
func agentTopics(site string) (write, read []string) {
	for _, k := range telemetry.UpKinds {
		write = append(write, telemetry.Topic(site, k))
	}
	for _, k := range telemetry.DownKinds {
		read = append(read, telemetry.Topic(site, k))
	}
	return write, read
}

// MatchTopic reports whether topic matches the subscription filter, by MQTT's rules: '+'
// matches one level, a final '#' any number of levels (including none, so "a/#" matches "a"),
// and wildcards at the first level do not match topics starting with '$'.
func MatchTopic(filter, topic string) bool {
	if strings.HasPrefix(topic, "$") && (strings.HasPrefix(filter, "+") || strings.HasPrefix(filter, "#")) {
		return false
	}
	for {
		f, fRest, fMore := strings.Cut(filter, "/")
		if f == "#" {
			return !fMore
		}
		t, tRest, tMore := strings.Cut(topic, "/")
		if f != "+" && f != t {
			return false
		}
		if !fMore || !tMore {
			if fMore && !tMore {
				return fRest == "#" // "a/#" matches "a"
			}
			return fMore == tMore
		}
		filter, topic = fRest, tRest
	}
}

// validFilter reports whether filter is a well-formed subscription filter.
func validFilter(filter string) bool {
	if filter == "" || len(filter) > 65535 || strings.ContainsRune(filter, 0) {
		return false
	}
	levels := strings.Split(filter, "/")
	for i, l := range levels {
		switch {
		case l == "#":
			if i != len(levels)-1 {
				return false
			}
		case l == "+":
		case strings.ContainsAny(l, "+#"):
			return false
		}
	}
	return true
}

// validTopic reports whether topic is a well-formed topic name to publish to.
func validTopic(topic string) bool {
	return topic != "" && len(topic) <= 65535 && !strings.ContainsAny(topic, "+#\x00")
}
