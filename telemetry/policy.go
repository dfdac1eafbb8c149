package telemetry

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Policy types. A site runs at most one policy of each type.
const (
	TypeSteering = "steering"
	TypeQoS      = "qos"
)

// Policy is the desired state of a site, published (retained) by the controller on the site's
// policy topic: its transports and the policy versions it runs.
type Policy struct {
	V          int               `json:"v"`
	Site       string            `json:"site"`
	Time       time.Time         `json:"ts"`
	Transports []PolicyTransport `json:"transports"` // best (cheapest) first
	Policies   []PolicyVersion   `json:"policies"`
}

// PolicyTransport is a transport as the agent should configure it.
type PolicyTransport struct {
	Name          string   `json:"name"`
	Interface     string   `json:"interface"`
	Gateway       string   `json:"gateway,omitempty"`
	ProbeTargets  []string `json:"probe_targets"`
	BandwidthKbps int64    `json:"bandwidth_kbps,omitempty"`
}

// PolicyVersion is one policy version the site runs; Content is a SteeringContent or a
// QoSContent according to Type.
type PolicyVersion struct {
	Policy  string          `json:"policy"`
	Type    string          `json:"type"`
	Version int             `json:"version"`
	Content json.RawMessage `json:"content"`
}

// SteeringContent is a steering policy's content: SLA classes, rules matching traffic to
// classes, and the preferred transports per class.
type SteeringContent struct {
	Classes      []SLAClass          `json:"classes"`
	Rules        []MatchRule         `json:"rules"`
	Paths        map[string][]string `json:"paths"`         // class -> transports, best first
	DefaultClass string              `json:"default_class"` // traffic no rule matches
}

// SLAClass is a traffic class with its SLA thresholds; 0 means not checked.
type SLAClass struct {
	Name         string  `json:"name"`
	MaxLatencyMs float64 `json:"max_latency_ms"`
	MaxLossPct   float64 `json:"max_loss_pct"`
	MaxJitterMs  float64 `json:"max_jitter_ms"`
}

// MatchRule sends matching traffic to a class. All given criteria must match.
type MatchRule struct {
	Name         string   `json:"name,omitempty"`
	Class        string   `json:"class"`
	DSCP         []int    `json:"dscp,omitempty"`         // 0..63
	Destinations []string `json:"destinations,omitempty"` // prefixes
	Sources      []string `json:"sources,omitempty"`      // prefixes
	Protocol     string   `json:"protocol,omitempty"`     // tcp, udp, icmp
	Ports        []string `json:"ports,omitempty"`        // destination ports or ranges "10000-20000"
	Application  string   `json:"application,omitempty"`  // a name from Applications
	FWMark       uint32   `json:"fwmark,omitempty"`
}

// Applications maps the application names a rule may use to protocol and ports.
var Applications = map[string]struct {
	Protocol string
	Ports    []string
}{
	"sip":   {"udp", []string{"5060-5061"}},
	"rtp":   {"udp", []string{"16384-32767"}},
	"dns":   {"udp", []string{"53"}},
	"https": {"tcp", []string{"443"}},
	"http":  {"tcp", []string{"80"}},
	"ssh":   {"tcp", []string{"22"}},
	"rdp":   {"tcp", []string{"3389"}},
	"teams": {"udp", []string{"3478-3481"}},
	"zoom":  {"udp", []string{"8801-8810"}},
}

// QoSContent is a QoS policy's content: HTB classes per transport.
type QoSContent struct {
	Transports []QoSTransport `json:"transports"`
}

// QoSTransport shapes one transport's egress.
type QoSTransport struct {
	Transport string     `json:"transport"`
	RateKbps  int64      `json:"rate_kbps"` // the link's rate (HTB root)
	Classes   []QoSClass `json:"classes"`
}

// QoSClass is an HTB class: guaranteed rate, ceiling, priority (0 highest .. 7).
type QoSClass struct {
	Class    string `json:"class"`
	RateKbps int64  `json:"rate_kbps"`
	CeilKbps int64  `json:"ceil_kbps"`
	Priority int    `json:"priority"`
}

// ParsePortRange parses "443" or "10000-20000".
func ParsePortRange(s string) (lo, hi uint16, err error) {
	a, b, isRange := strings.Cut(s, "-")
	l, err1 := strconv.ParseUint(a, 10, 16)
	h := l
	var err2 error
	if isRange {
		h, err2 = strconv.ParseUint(b, 10, 16)
	}
	if err1 != nil || err2 != nil || l == 0 || h < l {
		return 0, 0, fmt.Errorf("port %q must be 1..65535 or a range lo-hi", s)
	}
	return uint16(l), uint16(h), nil
}
