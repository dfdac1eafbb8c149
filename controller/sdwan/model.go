// Package sdwan is the SD-WAN family (/sd-wan/v1): sites pre-staged for zero-touch claim,
// their transports, steering and QoS policies with versions, change records and rollouts.
package sdwan

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/edgewan/edgewan/coreapi/apierr"
	"github.com/edgewan/edgewan/telemetry"
)

// Site statuses (docs/sdwan.md has the transitions):
//
//	pending        pre-staged, no agent has claimed it yet
//	up             the agent reports and every transport is up
//	degraded       the agent reports, but a transport is degraded or down, or an SLA is breached
//	offline        the agent stopped reporting for longer than the liveness timeout
//	decommissioned retired (DELETE); kept for the record, its credentials revoked
const (
	SitePending        = "pending"
	SiteUp             = "up"
	SiteDegraded       = "degraded"
	SiteOffline        = "offline"
	SiteDecommissioned = "decommissioned"
)

// SiteStatuses lists the site statuses.
var SiteStatuses = []string{SitePending, SiteUp, SiteDegraded, SiteOffline, SiteDecommissioned}

// Site roles.
var Roles = []string{"branch", "hub", "datacenter", "cloud"}

// Transport statuses: unknown until the first report, then up, degraded (misses thresholds)
// or down (no answers).
const (
	TransportUnknown  = "unknown"
	TransportUp       = "up"
	TransportDegraded = "degraded"
	TransportDown     = "down"
)

// TransportKinds lists the kinds of circuit.
var TransportKinds = []string{"mpls", "broadband", "lte", "5g", "satellite", "dia", "other"}

// Location is where a site is.
type Location struct {
	Address string   `json:"address,omitempty"`
	City    string   `json:"city,omitempty"`
	Country string   `json:"country,omitempty"`
	Lat     *float64 `json:"lat,omitempty"`
	Lon     *float64 `json:"lon,omitempty"`
}

// Site is a branch, hub or other location with an agent.
type Site struct {
	ID         string       `json:"id"`
	Name       string       `json:"name"`
	Status     string       `json:"status"`
	Role       string       `json:"role"`
	Location   Location     `json:"location"`
	Segments   []string     `json:"segments"`
	Serial     string       `json:"serial,omitempty"`
	DeviceID   string       `json:"device,omitempty"`
	ClaimedAt  time.Time    `json:"claimed_at,omitzero"`
	LastSeen   time.Time    `json:"last_seen,omitzero"`
	CreatedAt  time.Time    `json:"created_at"`
	UpdatedAt  time.Time    `json:"updated_at"`
	Transports []*Transport `json:"transports,omitzero"` // in the detail and creation views, not in lists
	// Quarantine is set while the controller cannot run the site from its stored state (see
	// Quarantine); every other site runs meanwhile.
	Quarantine *Quarantine `json:"quarantine,omitempty"`
	// StoredSeq is the agent's highest report sequence whose data is stored (the ingest's
	// watermark); internal.
	StoredSeq uint64 `json:"-"`

	// Claim is the one-time claim token: set only in the response to POST /sites.
	Claim          string    `json:"claim_token,omitempty"`
	ClaimExpiresAt time.Time `json:"claim_expires_at,omitzero"`
}

// SiteFigures is what the ingest saves of a site at each flush.
type SiteFigures struct {
	LastSeen  time.Time
	StoredSeq uint64 // see Site.StoredSeq
}

// Quarantine says why the controller does not evaluate a claimed site: its stored state could
// not be loaded. It is lifted as soon as the site loads again (after a change to it, or the
// periodic retry).
type Quarantine struct {
	Kind   string    `json:"kind"` // one of QuarantineKinds
	Reason string    `json:"reason"`
	Since  time.Time `json:"since"`
}

// Quarantine kinds: a closed set (the /metrics label).
const (
	QuarantineData     = "data"     // a stored row cannot be decoded
	QuarantineSteering = "steering" // the site's transports and steering policy are not a valid steering state
	QuarantineStore    = "store"    // reading the site's state from the database failed
)

// QuarantineKinds lists every kind.
var QuarantineKinds = []string{QuarantineData, QuarantineSteering, QuarantineStore}

// Transport is a WAN circuit of a site.
type Transport struct {
	ID            string    `json:"id"`
	SiteID        string    `json:"site"`
	Name          string    `json:"name"`
	Kind          string    `json:"kind"`
	Interface     string    `json:"interface"`
	Gateway       string    `json:"gateway,omitempty"`
	ProbeTargets  []string  `json:"probe_targets"`
	BandwidthKbps int64     `json:"bandwidth_kbps"`
	Cost          int       `json:"cost"`
	Status        string    `json:"status"`
	LatencyMs     float64   `json:"latency_ms"`
	LossPct       float64   `json:"loss_pct"`
	JitterMs      float64   `json:"jitter_ms"`
	LastSampleAt  time.Time `json:"last_sample_at,omitzero"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
}

// TransportFigures is a transport's latest status and metrics, as the controller saves them.
type TransportFigures struct {
	SiteID, Name, Status         string
	LatencyMs, LossPct, JitterMs float64
	At                           time.Time
}

// CreateSiteRequest is the body of POST /sites.
type CreateSiteRequest struct {
	Name       string                   `json:"name"`
	Role       string                   `json:"role"`
	Location   Location                 `json:"location"`
	Segments   []string                 `json:"segments"`
	Serial     string                   `json:"serial"`
	ClaimTTL   string                   `json:"claim_ttl"` // e.g. "72h"; default 7 days, at most 90
	Transports []CreateTransportRequest `json:"transports"`
}

// UpdateSiteRequest is the body of PATCH /sites/{id}; absent fields stay.
type UpdateSiteRequest struct {
	Name     *string   `json:"name"`
	Role     *string   `json:"role"`
	Location *Location `json:"location"`
	Segments *[]string `json:"segments"`
	Serial   *string   `json:"serial"`
}

// CreateTransportRequest is the body of POST /sites/{id}/transports.
type CreateTransportRequest struct {
	Name          string   `json:"name"`
	Kind          string   `json:"kind"`
	Interface     string   `json:"interface"`
	Gateway       string   `json:"gateway"`
	ProbeTargets  []string `json:"probe_targets"`
	BandwidthKbps int64    `json:"bandwidth_kbps"`
	Cost          int      `json:"cost"`
}

func checkName(field, v string, max int) error {
	v = strings.TrimSpace(v)
	if v == "" {
		return apierr.BadRequest("%s is required", field)
	}
	if len(v) > max {
		return apierr.BadRequest("%s is longer than %d characters", field, max)
	}
	return nil
}

func checkSegments(segs []string) error {
	if len(segs) > 32 {
		return apierr.BadRequest("at most 32 segments")
	}
	for i, s := range segs {
		if !telemetry.ValidID(s) {
			return apierr.BadRequest("segment %q: use 1-64 of a-z, 0-9, '-' and '_'", s)
		}
		if slices.Contains(segs[:i], s) {
			return apierr.BadRequest("segment %q given twice", s)
		}
	}
	return nil
}

func checkLocation(l Location) error {
	if len(l.Address) > 500 || len(l.City) > 200 || len(l.Country) > 100 {
		return apierr.BadRequest("location fields are too long")
	}
	if l.Lat != nil && (*l.Lat < -90 || *l.Lat > 90) || l.Lon != nil && (*l.Lon < -180 || *l.Lon > 180) {
		return apierr.BadRequest("location lat must be within ±90 and lon within ±180")
	}
	return nil
}

// validate checks a transport request; the name is an identifier because it appears in
// telemetry, policies and routing-table names on the agent.
func (r *CreateTransportRequest) validate() error {
	if !telemetry.ValidID(r.Name) {
		return apierr.BadRequest("transport name %q: use 1-64 of a-z, 0-9, '-' and '_', starting with a letter or digit", r.Name)
	}
	if r.Kind == "" {
		r.Kind = "other"
	}
	if !slices.Contains(TransportKinds, r.Kind) {
		return apierr.BadRequest("transport kind must be one of %s; got %q", strings.Join(TransportKinds, ", "), r.Kind)
	}
	if r.Interface == "" || len(r.Interface) > 15 || strings.ContainsAny(r.Interface, " /\x00") {
		return apierr.BadRequest("transport interface must be a Linux interface name (1-15 characters, no spaces or '/'); got %q", r.Interface)
	}
	if r.Gateway != "" {
		if _, err := netip.ParseAddr(r.Gateway); err != nil {
			return apierr.BadRequest("transport gateway %q is not an IP address", r.Gateway)
		}
	}
	if len(r.ProbeTargets) > 8 {
		return apierr.BadRequest("at most 8 probe targets per transport")
	}
	for _, t := range r.ProbeTargets {
		if _, err := netip.ParseAddr(t); err != nil {
			return apierr.BadRequest("probe target %q is not an IP address", t)
		}
	}
	if r.BandwidthKbps < 0 || r.BandwidthKbps > 100_000_000 {
		return apierr.BadRequest("bandwidth_kbps must be 0..100000000")
	}
	if r.Cost < 0 || r.Cost > 1_000_000 {
		return apierr.BadRequest("cost must be 0..1000000")
	}
	if r.ProbeTargets == nil {
		r.ProbeTargets = []string{}
	}
	return nil
}

func badParam(k string) error {
	return apierr.BadRequest("query parameter %q unknown or repeated; health and series accept window, once", k)
}

func badWindow(text string, err error) error {
	return apierr.BadRequest("window %q: %v; use a duration from 1m to 30d such as 5m, 1h or 7d", text, err)
}

// parseDays parses a duration that may start with whole days: "7d", "1d12h", "72h", "30m".
func parseDays(s string) (time.Duration, error) {
	var d time.Duration
	rest := s
	if i := strings.IndexByte(s, 'd'); i >= 0 {
		days, err := strconv.ParseUint(s[:i], 10, 16)
		if err != nil {
			return 0, fmt.Errorf("%q is not a duration", s)
		}
		d, rest = time.Duration(days)*24*time.Hour, s[i+1:]
	}
	if rest != "" || s == "" {
		r, err := time.ParseDuration(rest)
		if err != nil || strings.HasPrefix(rest, "-") {
			return 0, fmt.Errorf("%q is not a duration", s)
		}
		d += r
	}
	return d, nil
}
