package sdwan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/edgewan/edgewan/coreapi/apierr"
	"github.com/edgewan/edgewan/coreapi/policyver"
	"github.com/edgewan/edgewan/telemetry"
)

// Policy types. A site runs at most one policy of each type.
const (
	TypeSteering = telemetry.TypeSteering
	TypeQoS      = telemetry.TypeQoS
)

// Version statuses: a version is written as a draft, published, and superseded when a later
// version of the same policy is published.
const (
	VersionDraft      = policyver.Draft
	VersionPublished  = policyver.Published
	VersionSuperseded = policyver.Superseded
)

// Rollout states of a policy version on a site, as acknowledged by its agent.
const (
	RolloutPending = "pending"
	RolloutApplied = "applied"
	RolloutFailed  = "failed"
)

// Policy is a steering or QoS policy with its versions.
type Policy struct {
	ID               string `json:"id"`
	Name             string `json:"name"`
	Type             string `json:"type"`
	Description      string `json:"description"`
	PublishedVersion int    `json:"published_version"` // 0: never published
	// RequireSimulationMinutes > 0: a version is published only with a simulation of it at
	// most this many minutes old (POST .../versions/{v}/simulate); the change record links it.
	RequireSimulationMinutes int        `json:"require_simulation_minutes"`
	Versions                 []*Version `json:"versions"`
	Rollout                  []*Rollout `json:"rollout"` // sites running a version of this policy
	CreatedAt                time.Time  `json:"created_at"`
	UpdatedAt                time.Time  `json:"updated_at"`
}

// Version is one version of a policy's content.
type Version = policyver.Version

// Rollout is a policy version's state on one site.
type Rollout struct {
	SiteID    string    `json:"site"`
	PolicyID  string    `json:"policy"`
	Type      string    `json:"type"`
	Version   int       `json:"version"`
	State     string    `json:"state"`
	Reason    string    `json:"reason,omitempty"`
	ChangeID  string    `json:"change"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Change is a change record: who changed what, when, and the difference.
type Change struct {
	ID          string    `json:"id"`
	Kind        string    `json:"kind"` // policy.published
	Actor       string    `json:"actor"`
	Target      string    `json:"target"` // the policy
	Version     int       `json:"version"`
	FromVersion int       `json:"from_version"`
	Sites       []string  `json:"sites"`
	Diff        []string  `json:"diff"`
	Comment     string    `json:"comment,omitempty"`
	Simulation  string    `json:"simulation,omitempty"` // the latest simulation of the version, if any
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// The content types are the wire schema the agents receive; they live in telemetry.
type (
	SteeringContent = telemetry.SteeringContent
	SLAClass        = telemetry.SLAClass
	MatchRule       = telemetry.MatchRule
	QoSContent      = telemetry.QoSContent
	QoSTransport    = telemetry.QoSTransport
	QoSClass        = telemetry.QoSClass
)

// Applications maps the application names a rule may use to protocol and ports.
var Applications = telemetry.Applications

// ParsePortRange parses "443" or "10000-20000".
func ParsePortRange(s string) (lo, hi uint16, err error) { return telemetry.ParsePortRange(s) }

// ValidateContent parses content of the given type strictly, checks it on its own, and
// returns it in canonical form (defaults filled in) with the transports it names, for
// checking against the sites it is published to.
func ValidateContent(typ string, content json.RawMessage) (canonical json.RawMessage, transports []string, err error) {
	if len(content) == 0 || string(content) == "null" {
		return nil, nil, apierr.BadRequest("content is required")
	}
	dec := json.NewDecoder(bytes.NewReader(content))
	dec.DisallowUnknownFields()
	var c any
	var validate func() ([]string, error)
	switch typ {
	case TypeSteering:
		sc := &SteeringContent{}
		c, validate = sc, func() ([]string, error) { return validateSteering(sc) }
	case TypeQoS:
		qc := &QoSContent{}
		c, validate = qc, func() ([]string, error) { return validateQoS(qc) }
	default:
		return nil, nil, apierr.BadRequest("policy type must be steering or qos; got %q", typ)
	}
	if err := dec.Decode(c); err != nil {
		return nil, nil, apierr.BadRequest("%s content: %v", typ, err)
	}
	if transports, err = validate(); err != nil {
		return nil, nil, err
	}
	canonical, err = json.Marshal(c)
	return canonical, transports, err
}

func bad(format string, args ...any) error { return apierr.BadRequest(format, args...) }

func finiteNonNeg(v float64) bool { return v >= 0 && !math.IsInf(v, 0) && !math.IsNaN(v) }

func validateSteering(c *SteeringContent) ([]string, error) {
	if len(c.Classes) == 0 || len(c.Classes) > 16 {
		return nil, bad("a steering policy has 1 to 16 classes")
	}
	names := make([]string, 0, len(c.Classes))
	for _, cl := range c.Classes {
		if !telemetry.ValidID(cl.Name) {
			return nil, bad("class name %q: use 1-64 of a-z, 0-9, '-' and '_'", cl.Name)
		}
		if slices.Contains(names, cl.Name) {
			return nil, bad("class %q defined twice", cl.Name)
		}
		if !finiteNonNeg(cl.MaxLatencyMs) || !finiteNonNeg(cl.MaxLossPct) || cl.MaxLossPct > 100 || !finiteNonNeg(cl.MaxJitterMs) {
			return nil, bad("class %q: thresholds must be non-negative (loss at most 100)", cl.Name)
		}
		names = append(names, cl.Name)
	}
	if c.DefaultClass == "" {
		c.DefaultClass = names[0]
	}
	if !slices.Contains(names, c.DefaultClass) {
		return nil, bad("default_class %q is not a class", c.DefaultClass)
	}
	if len(c.Rules) > 256 {
		return nil, bad("at most 256 rules")
	}
	for i, r := range c.Rules {
		where := fmt.Sprintf("rule %d", i+1)
		if r.Name != "" {
			where = fmt.Sprintf("rule %q", r.Name)
		}
		if !slices.Contains(names, r.Class) {
			return nil, bad("%s: class %q is not defined", where, r.Class)
		}
		if len(r.DSCP) == 0 && len(r.Destinations) == 0 && len(r.Sources) == 0 && r.Protocol == "" && len(r.Ports) == 0 && r.Application == "" && r.FWMark == 0 {
			return nil, bad("%s matches everything; give at least one criterion (use default_class for the rest)", where)
		}
		for _, d := range r.DSCP {
			if d < 0 || d > 63 {
				return nil, bad("%s: dscp %d is not 0..63", where, d)
			}
		}
		for _, p := range append(slices.Clone(r.Destinations), r.Sources...) {
			if _, err := netip.ParsePrefix(p); err != nil {
				return nil, bad("%s: %q is not a prefix such as 198.18.0.0/24", where, p)
			}
		}
		switch r.Protocol {
		case "", "tcp", "udp", "icmp":
		default:
			return nil, bad("%s: protocol must be tcp, udp or icmp; got %q", where, r.Protocol)
		}
		if len(r.Ports) > 0 && r.Protocol != "tcp" && r.Protocol != "udp" {
			return nil, bad("%s: ports need protocol tcp or udp", where)
		}
		for _, p := range r.Ports {
			if _, _, err := ParsePortRange(p); err != nil {
				return nil, bad("%s: %v", where, err)
			}
		}
		if r.Application != "" {
			if _, ok := Applications[r.Application]; !ok {
				known := make([]string, 0, len(Applications))
				for k := range Applications {
					known = append(known, k)
				}
				sort.Strings(known)
				return nil, bad("%s: unknown application %q; known: %s", where, r.Application, strings.Join(known, ", "))
			}
		}
	}
	if len(c.Paths) == 0 {
		return nil, bad("paths must give the preferred transports of at least the default class")
	}
	var transports []string
	for class, ts := range c.Paths {
		if !slices.Contains(names, class) {
			return nil, bad("paths: class %q is not defined", class)
		}
		if len(ts) == 0 {
			return nil, bad("paths: class %q has no transports", class)
		}
		for i, t := range ts {
			if !telemetry.ValidID(t) {
				return nil, bad("paths: %q is not a transport name", t)
			}
			if slices.Contains(ts[:i], t) {
				return nil, bad("paths: class %q lists %q twice", class, t)
			}
			if !slices.Contains(transports, t) {
				transports = append(transports, t)
			}
		}
	}
	for _, n := range names {
		if _, ok := c.Paths[n]; !ok && n == c.DefaultClass {
			return nil, bad("paths: the default class %q needs transports", n)
		}
	}
	sort.Strings(transports)
	return transports, nil
}

func validateQoS(c *QoSContent) ([]string, error) {
	if len(c.Transports) == 0 {
		return nil, bad("a qos policy shapes at least one transport")
	}
	var transports []string
	for _, t := range c.Transports {
		if !telemetry.ValidID(t.Transport) {
			return nil, bad("qos: %q is not a transport name", t.Transport)
		}
		if slices.Contains(transports, t.Transport) {
			return nil, bad("qos: transport %q given twice", t.Transport)
		}
		transports = append(transports, t.Transport)
		if t.RateKbps <= 0 || t.RateKbps > 100_000_000 {
			return nil, bad("qos %s: rate_kbps must be 1..100000000", t.Transport)
		}
		if len(t.Classes) == 0 || len(t.Classes) > 16 {
			return nil, bad("qos %s: 1 to 16 classes", t.Transport)
		}
		var sum int64
		var seen []string
		for _, cl := range t.Classes {
			if !telemetry.ValidID(cl.Class) || slices.Contains(seen, cl.Class) {
				return nil, bad("qos %s: class %q missing, malformed or given twice", t.Transport, cl.Class)
			}
			seen = append(seen, cl.Class)
			if cl.RateKbps <= 0 || cl.CeilKbps < cl.RateKbps || cl.CeilKbps > t.RateKbps {
				return nil, bad("qos %s/%s: need 0 < rate_kbps <= ceil_kbps <= the transport's rate_kbps", t.Transport, cl.Class)
			}
			if cl.Priority < 0 || cl.Priority > 7 {
				return nil, bad("qos %s/%s: priority must be 0..7", t.Transport, cl.Class)
			}
			sum += cl.RateKbps
		}
		if sum > t.RateKbps {
			return nil, bad("qos %s: the classes' guaranteed rates add up to %d kbps, over the transport's %d", t.Transport, sum, t.RateKbps)
		}
	}
	sort.Strings(transports)
	return transports, nil
}

// Diff describes how content b differs from a, one line per changed leaf, e.g.
// `paths.voice: ["mpls","lte"] -> ["lte","mpls"]`. a may be nil (everything is added).
func Diff(a, b json.RawMessage) []string {
	fa, fb := map[string]string{}, map[string]string{}
	flatten("", decodeAny(a), fa)
	flatten("", decodeAny(b), fb)
	var out []string
	for k, vb := range fb {
		if va, ok := fa[k]; !ok {
			out = append(out, fmt.Sprintf("+ %s: %s", k, vb))
		} else if va != vb {
			out = append(out, fmt.Sprintf("~ %s: %s -> %s", k, va, vb))
		}
	}
	for k, va := range fa {
		if _, ok := fb[k]; !ok {
			out = append(out, fmt.Sprintf("- %s: %s", k, va))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i][2:] < out[j][2:] })
	if out == nil {
		out = []string{}
	}
	return out
}

// keyField is the field that names the objects of an array when every one of them has it and
// no two share a value: "name", then "class", then "transport"; "" means key by index.
func keyField(x []any) string {
	for _, f := range []string{"name", "class", "transport"} {
		seen := make(map[string]bool, len(x))
		ok := true
		for _, e := range x {
			m, isObj := e.(map[string]any)
			s, isStr := m[f].(string)
			if !isObj || !isStr || s == "" || seen[s] {
				ok = false
				break
			}
			seen[s] = true
		}
		if ok {
			return f
		}
	}
	return ""
}

func decodeAny(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	var v any
	_ = json.Unmarshal(raw, &v)
	return v
}

// flatten maps each leaf to its JSON text. Arrays of scalars are leaves (their order matters
// and reads well on one line); arrays of objects are keyed by their "name", "class" or
// "transport" field when they have one, else by index.
func flatten(prefix string, v any, out map[string]string) {
	join := func(k string) string {
		if prefix == "" {
			return k
		}
		return prefix + "." + k
	}
	switch x := v.(type) {
	case map[string]any:
		for k, vv := range x {
			flatten(join(k), vv, out)
		}
	case []any:
		scalars := true
		for _, e := range x {
			switch e.(type) {
			case map[string]any, []any:
				scalars = false
			}
		}
		if scalars {
			b, _ := json.Marshal(x)
			out[prefix] = string(b)
			return
		}
		field := keyField(x)
		for i, e := range x {
			key := "[" + strconv.Itoa(i) + "]"
			if m, ok := e.(map[string]any); ok && field != "" {
				key = "[" + m[field].(string) + "]"
			}
			flatten(prefix+key, e, out)
		}
	case nil:
		// null and absent are the same in policy content: no line.
	default:
		b, _ := json.Marshal(x)
		out[prefix] = string(b)
	}
}
