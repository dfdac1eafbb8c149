// Package telemetry is the contract between agents and the controller: the MQTT topics and
// payloads (defined once here for both sides), window statistics, and the time-series sinks.
package telemetry

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// SchemaVersion is the payload version carried in every message as "v".
const SchemaVersion = 1

// Topics. Every topic is under TopicRoot and names one site; docs/telemetry.md describes them.
//
//	agent -> controller (the agent publishes, QoS 1):
//	  edgewan/v1/sites/{site}/telemetry  Report: one window of probe statistics per transport
//	  edgewan/v1/sites/{site}/events     AgentEvent: a local path switch, a transport down, ...
//	  edgewan/v1/sites/{site}/acks       PolicyAck: a policy version applied or failed
//	  edgewan/v1/sites/{site}/status     Status (retained; also the agent's last will)
//	controller -> agent (retained, QoS 1, so a reconnecting agent gets the current state):
//	  edgewan/v1/sites/{site}/policy     the published policy version for the site
//	  edgewan/v1/sites/{site}/decisions  Decisions: the controller's current path per class
//	  edgewan/v1/sites/{site}/stored     Stored: the highest contiguous seq durably stored;
//	                                     the agent keeps each spooled record until it is covered
const TopicRoot = "edgewan/v1/sites/"

// Topic kinds (the last topic level).
const (
	KindTelemetry = "telemetry"
	KindEvents    = "events"
	KindAcks      = "acks"
	KindStatus    = "status"
	KindPolicy    = "policy"
	KindDecisions = "decisions"
	KindStored    = "stored"
)

// UpKinds are the kinds an agent publishes; DownKinds those it subscribes to.
var (
	UpKinds   = []string{KindTelemetry, KindEvents, KindAcks, KindStatus}
	DownKinds = []string{KindPolicy, KindDecisions, KindStored}
)

// Topic returns the topic of kind for site.
func Topic(site, kind string) string { return TopicRoot + site + "/" + kind }

// ParseTopic splits a topic into site and kind; ok is false for anything else.
func ParseTopic(topic string) (site, kind string, ok bool) {
	rest, found := strings.CutPrefix(topic, TopicRoot)
	if !found {
		return "", "", false
	}
	site, kind, found = strings.Cut(rest, "/")
	if !found || !ValidID(site) || strings.Contains(kind, "/") {
		return "", "", false
	}
	return site, kind, true
}

// ValidID reports whether s can be a site, device or transport identifier in topics and
// payloads: 1-64 of a-z, 0-9, '_' and '-', not starting with a separator. (A byte loop: the
// ingest checks five per report, and the regexp it replaces cost 2.5 % of its CPU.)
func ValidID(s string) bool {
	if len(s) == 0 || len(s) > 64 || s[0] == '_' || s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Limits on what the controller accepts.
const (
	MaxPayload    = 64 << 10 // bytes of one message
	MaxTransports = 16       // transports in one report
)

// Report is one window of probe statistics from one agent, on .../telemetry.
type Report struct {
	V      int    `json:"v"`
	Site   string `json:"site"`
	Device string `json:"device"`
	Seq    uint64 `json:"seq"` // per device, +1 per spooled message; survives restarts (the agent's spool)
	// Held is the oldest seq the agent still holds (may send again), when the report was
	// spooled; the controller gives up what is below it and was never received (its
	// watermark is contiguous: docs/telemetry.md). 0 (absent): an older agent.
	Held      uint64            `json:"held,omitempty"`
	Time      time.Time         `json:"ts"`        // end of the window
	WindowMs  int               `json:"window_ms"` // length of the window
	Transport []TransportWindow `json:"transports"`
}

// TransportWindow is one transport's statistics over a window. Latencies are round-trip
// times of answered probes in milliseconds; Jitter is the RFC 3550 smoothed mean of |ΔRTT|
// (docs/telemetry.md), StdDev the standard deviation of RTTs.
type TransportWindow struct {
	Name      string  `json:"name"`
	Method    string  `json:"method,omitempty"` // icmp, tcp, http
	Sent      int     `json:"sent"`
	Lost      int     `json:"lost"`
	LatencyMs float64 `json:"latency_ms"` // mean
	P50Ms     float64 `json:"p50_ms"`
	P95Ms     float64 `json:"p95_ms"`
	MinMs     float64 `json:"min_ms"`
	MaxMs     float64 `json:"max_ms"`
	JitterMs  float64 `json:"jitter_ms"`
	StdDevMs  float64 `json:"stddev_ms"`
	Down      bool    `json:"down"` // the agent considers the transport hard down (N consecutive losses)
	// The window's own delay-variation samples |RTT(i) - RTT(i-1)| between consecutive answered
	// probes: their count, mean and standard deviation. The SLA detector (steering) weighs
	// jitter evidence by them; absent (0) from agents before they were added.
	JitterN      int     `json:"jitter_n,omitempty"`
	JitterMeanMs float64 `json:"jitter_mean_ms,omitempty"`
	JitterSDMs   float64 `json:"jitter_sd_ms,omitempty"`
}

// LossPct is the window's loss in percent (0 when nothing was sent).
func (t *TransportWindow) LossPct() float64 {
	if t.Sent == 0 {
		return 0
	}
	return 100 * float64(t.Lost) / float64(t.Sent)
}

// AgentEvent is something the agent did or saw by itself, on .../events.
type AgentEvent struct {
	V         int       `json:"v"`
	Site      string    `json:"site"`
	Device    string    `json:"device"`
	Time      time.Time `json:"ts"`
	Type      string    `json:"type"` // path.switched, transport.down, transport.up
	Class     string    `json:"class,omitempty"`
	Transport string    `json:"transport,omitempty"`
	From      string    `json:"from,omitempty"`
	To        string    `json:"to,omitempty"`
	Reason    string    `json:"reason,omitempty"` // e.g. "local"
	Seq       uint64    `json:"seq,omitempty"`    // the agent's spool sequence (as Report.Seq); 0 from older agents
}

// PolicyAck acknowledges a policy version, on .../acks.
type PolicyAck struct {
	V       int       `json:"v"`
	Site    string    `json:"site"`
	Device  string    `json:"device"`
	Time    time.Time `json:"ts"`
	Policy  string    `json:"policy"`
	Version int       `json:"version"`
	Status  string    `json:"status"` // applied or failed
	Reason  string    `json:"reason,omitempty"`
	Seq     uint64    `json:"seq,omitempty"` // the agent's spool sequence (as Report.Seq); 0 from older agents
}

// Status is the agent's presence, retained on .../status; its last will says offline.
type Status struct {
	V       int       `json:"v"`
	Device  string    `json:"device"`
	State   string    `json:"state"` // online or offline
	Version string    `json:"version,omitempty"`
	Time    time.Time `json:"ts"`
	// Paths are the paths the agent's classes use now (online only): a restarted controller
	// adopts them before it decides anything, so that a restart moves no traffic.
	Paths map[string]string `json:"paths,omitempty"`
}

// Decisions is the controller's current path per class for a site, retained on .../decisions.
type Decisions struct {
	V     int               `json:"v"`
	Site  string            `json:"site"`
	Time  time.Time         `json:"ts"`
	Paths map[string]string `json:"paths"` // class -> transport
}

// Stored is the controller's per-site persisted-sequence watermark: every report of Device with
// Seq <= Seq is in durable storage (time series flushed and latest figures saved), and every
// other message the agent spooled before it was handled. It is contiguous: a sequence the
// controller never received (lost by the broker after its PUBACK) holds it back, unless the
// agent said it no longer holds it (Report.Held). The agent deletes a spooled record only once
// a watermark covers it (not at the broker's PUBACK, which says only that a broker has the
// message), and sends again what is not covered after it reconnects, when Boot changes (a
// controller that restarted lost what it had not stored), and the oldest uncovered records
// when the watermark stalls below them. An agent that has never
// seen one (an older controller publishes none) deletes at PUBACK after a grace instead; see
// docs/telemetry.md.
//
// Hole, when set, is a resend request: the controller holds sequences above Seq's contiguous
// run but not Hole.From..Hole.To (lost between the broker and the controller), and asks the
// agent to send those again now instead of after its own stall timeout. Such a message is
// published live only (never retained) by the site's owner; its Seq is the watermark already
// published. Agents older than the field ignore it (encoding/json skips unknown fields) and
// take the message as a repeated watermark; controllers older than it never send it, and the
// agent then finds the hole by the stalled watermark alone (docs/agent.md).
type Stored struct {
	V      int       `json:"v"`
	Site   string    `json:"site"`
	Device string    `json:"device"`
	Seq    uint64    `json:"seq"`
	Boot   string    `json:"boot"` // changes at each controller start
	Time   time.Time `json:"ts"`
	Hole   *SeqRange `json:"hole,omitempty"`
}

// SeqRange is an inclusive range of an agent's spool sequences.
type SeqRange struct {
	From uint64 `json:"from"`
	To   uint64 `json:"to"`
}

// Errors of Decode and Validate wrap ErrInvalid.
var ErrInvalid = errors.New("invalid telemetry")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// DecodeReport parses and validates a telemetry payload published on site's topic.
func DecodeReport(site string, payload []byte, r *Report) error {
	if len(payload) > MaxPayload {
		return invalid("payload of %d bytes is over %d", len(payload), MaxPayload)
	}
	// Reuse r's transport slice, zeroed: json leaves fields absent from the payload as they were.
	ts := r.Transport[:cap(r.Transport)]
	clear(ts)
	*r = Report{Transport: ts[:0]}
	if err := json.Unmarshal(payload, r); err != nil {
		return invalid("%v", err)
	}
	return r.Validate(site)
}

// Validate checks a report received on site's topic.
func (r *Report) Validate(site string) error {
	switch {
	case r.V != SchemaVersion:
		return invalid("schema version %d, want %d", r.V, SchemaVersion)
	case r.Site != site:
		return invalid("report for site %q on site %q's topic", r.Site, site)
	case !ValidID(r.Device):
		return invalid("bad device id %q", r.Device)
	case r.Time.IsZero():
		return invalid("no timestamp")
	case r.Held > r.Seq:
		return invalid("held %d above seq %d", r.Held, r.Seq)
	case r.WindowMs <= 0 || r.WindowMs > 3600_000:
		return invalid("window_ms %d out of range 1..3600000", r.WindowMs)
	case len(r.Transport) == 0 || len(r.Transport) > MaxTransports:
		return invalid("%d transports; want 1..%d", len(r.Transport), MaxTransports)
	}
	for i := range r.Transport {
		t := &r.Transport[i]
		if !ValidID(t.Name) {
			return invalid("bad transport name %q", t.Name)
		}
		for j := 0; j < i; j++ {
			if r.Transport[j].Name == t.Name {
				return invalid("transport %q twice", t.Name)
			}
		}
		if t.Sent < 0 || t.Lost < 0 || t.Lost > t.Sent || t.Sent > 1_000_000 {
			return invalid("transport %q: sent %d lost %d", t.Name, t.Sent, t.Lost)
		}
		if t.JitterN < 0 || t.JitterN > t.Sent {
			return invalid("transport %q: jitter_n %d with sent %d", t.Name, t.JitterN, t.Sent)
		}
		for _, v := range [...]float64{t.LatencyMs, t.P50Ms, t.P95Ms, t.MinMs, t.MaxMs, t.JitterMs, t.StdDevMs, t.JitterMeanMs, t.JitterSDMs} {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > 600_000 {
				return invalid("transport %q: a latency figure is %v", t.Name, v)
			}
		}
	}
	return nil
}
