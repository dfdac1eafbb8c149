package sdwan

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/edgewan/edgewan/controller/mqtt"
	"github.com/edgewan/edgewan/coreapi/apierr"
	"github.com/edgewan/edgewan/coreapi/event"
	"github.com/edgewan/edgewan/coreapi/ids"
	"github.com/edgewan/edgewan/coreapi/org"
	"github.com/edgewan/edgewan/coreapi/page"
	"github.com/edgewan/edgewan/telemetry/rollup"
)

// SiteFilter selects sites in a list.
type SiteFilter struct{ Status, Role string }

// ClaimRecord is what a claim writes: the site's device and its MQTT credential.
type ClaimRecord struct {
	SiteID    string
	ClaimHash string
	Device    *org.Device
	MQTTUser  string
	MQTTHash  string // mqtt.HashPassword of the password: the embedded broker and Mosquitto both read it
	NATSUser  string // scaled-out mode: the public key of the device's NATS user (revoked with the credential)
	At        time.Time
}

// Assignment is a policy version a site runs, with its content.
type Assignment struct {
	Rollout
	Content json.RawMessage
}

// Store is what the SD-WAN service needs of the database.
type Store interface {
	CreateSite(ctx context.Context, s *Site, claimHash string, ts []*Transport) error
	GetSite(ctx context.Context, id string) (*Site, error) // with transports
	ListSites(ctx context.Context, p page.Params, f SiteFilter) ([]*Site, error)
	UpdateSite(ctx context.Context, s *Site) error
	// SiteByClaim finds the site whose claim token hashes to hash, claimed or not.
	SiteByClaim(ctx context.Context, hash string) (*Site, time.Time, error)
	// ClaimSite marks the site claimed if it still is unclaimed, and stores the device and its
	// credential; ErrConflict if it was claimed meanwhile.
	ClaimSite(ctx context.Context, c ClaimRecord) error
	// UnclaimSite undoes ClaimSite c (when the site is still claimed by c's device): the
	// token is usable again.
	UnclaimSite(ctx context.Context, c ClaimRecord) error
	DecommissionSite(ctx context.Context, id string, at time.Time) error
	CreateTransport(ctx context.Context, t *Transport) error // ErrConflict on a duplicate name
	ListTransports(ctx context.Context, siteID string, p page.Params) ([]*Transport, error)

	CreatePolicy(ctx context.Context, p *Policy, v *Version) error
	AddVersion(ctx context.Context, policyID string, v *Version) error // numbers v
	GetPolicy(ctx context.Context, id string) (*Policy, error)         // with versions and rollout
	ListPolicies(ctx context.Context, p page.Params, typ string) ([]*Policy, error)
	// PublishPolicy marks version published (the previous one superseded), points the sites at
	// it with rollout state pending, and stores the change record, in one transaction.
	PublishPolicy(ctx context.Context, policyID string, version int, sites []string, typ string, c *Change) error
	ListChanges(ctx context.Context, p page.Params, target string) ([]*Change, error)
	Assignments(ctx context.Context, siteID string) ([]*Assignment, error)
	// SitesByID and AssignmentsOf are GetSite and Assignments for a batch of sites at once
	// (a few hundred IDs), keyed by site; missing sites are absent. The simulation reads by them.
	SitesByID(ctx context.Context, ids []string) (map[string]*Site, error)
	AssignmentsOf(ctx context.Context, ids []string) (map[string][]*Assignment, error)
	SetRollout(ctx context.Context, siteID, policyID string, version int, state, reason string, at time.Time) (bool, error)
	InsertEvent(ctx context.Context, ev *event.Envelope) (int, error)
	ListEvents(ctx context.Context, p page.Params, f EventFilter) ([]*event.Envelope, error)

	// SearchSites is one page of live sites for SitesOverview, with their transports.
	SearchSites(ctx context.Context, q SiteQuery) (*SitePage, error)
	// SetPolicySettings stores a policy's settings (RequireSimulationMinutes).
	SetPolicySettings(ctx context.Context, p *Policy) error
	InsertSimulation(ctx context.Context, sim *Simulation) error
	GetSimulation(ctx context.Context, id string) (*Simulation, error)
	// LatestSimulation is the newest simulation of a policy version; 404 if none.
	LatestSimulation(ctx context.Context, policyID string, version int) (*Simulation, error)
}

// Pusher sends a site's desired state (its policies) to its agent.
type Pusher interface {
	PushPolicies(ctx context.Context, siteID string) error
}

// Live is the running controller's view of the sites: current transport figures and health,
// and what must follow a change of a site.
type Live interface {
	// Overlay fills the transports' latest status and metrics from memory.
	Overlay(siteID string, ts []*Transport)
	Health(siteID string, window time.Duration) (*Health, bool)
	// Points gives each transport's buckets over the window, their step and the time of the
	// answer; step 0 when the site has no live state or no data.
	Points(siteID string, window time.Duration) (time.Duration, []rollup.TransportPoints, time.Time)
	// SiteChanged reloads a site after a claim, a new transport or decommissioning.
	SiteChanged(ctx context.Context, siteID string) error
	// Quarantined says why the site is not evaluated, or nil.
	Quarantined(siteID string) *Quarantine
}

// MQTTAccess is how a claimed agent reaches the broker.
type MQTTAccess struct {
	URL string `json:"url"`
	// URLs lists every broker node when there are several (scaled-out mode): URL first, then
	// the others; the agent fails over between them. Absent with one broker.
	URLs     []string `json:"urls,omitempty"`
	Username string   `json:"username"`
	Password string   `json:"password"`
	CAPEM    string   `json:"ca_pem,omitempty"` // the controller's CA, when it made its own
	// Broker names the broker's kind when it changes how the agent should use it: "nats" in
	// the scaled-out mode (the agent reports and subscribes at QoS 0 there and retains
	// nothing: docs/scale-out.md, "Agents on NATS"). Absent with an MQTT broker.
	Broker string `json:"broker,omitempty"`
}

// BrokerNATS is MQTTAccess.Broker for a NATS cluster (agent/claim.BrokerNATS).
const BrokerNATS = "nats"

// Options configure the service.
type Options struct {
	BrokerURL func() string                            // the broker address given to agents at claim
	CAPEM     string                                   // the CA agents should trust (the controller's own)
	Broker    string                                   // MQTTAccess.Broker: "nats" in the scaled-out mode, else ""
	OnClaimed func(ctx context.Context, siteID string) // e.g. rewrite an external broker's files
	// NATSCredential, in the scaled-out mode with per-device NATS users, issues the device's
	// credential: token (a NATS user JWT) is the MQTT password the agent gets, user the NATS
	// user's public key, stored to revoke it with the site.
	NATSCredential func(device, site string) (token, user string, err error)
	OnClaimReuse   func(ctx context.Context, siteID, clientIP, reason string)
	// OnClaimUnknown is told of a claim with an unknown token (counts towards brute force).
	OnClaimUnknown func(ctx context.Context, clientIP string)
	DefaultClaim   time.Duration    // default 7 days
	Now            func() time.Time // the clock; nil: time.Now
}

// Service runs the SD-WAN family.
type Service struct {
	store  Store
	o      Options
	push   Pusher
	live   Live
	notify func()
	now    func() time.Time

	history  History
	simOpts  SimulationOptions
	simSlots chan struct{} // one token per running simulation

	streamsDone  chan struct{} // closed by CloseStreams: open streams end
	streamCounts streamCounts
	closeOnce    sync.Once
}

// NewService returns a Service; push and live may be set later with Attach (the ingest
// engine needs the service's store first).
func NewService(st Store, o Options, notify func()) *Service {
	if o.DefaultClaim <= 0 {
		o.DefaultClaim = 7 * 24 * time.Hour
	}
	if notify == nil {
		notify = func() {}
	}
	clock := o.Now
	if clock == nil {
		clock = time.Now
	}
	return &Service{store: st, o: o, notify: notify, now: func() time.Time { return clock().UTC().Truncate(time.Microsecond) },
		streamsDone: make(chan struct{})}
}

func (s *Service) brokerURL() string {
	if s.o.BrokerURL == nil {
		return ""
	}
	return s.o.BrokerURL()
}

// Attach connects the service to the running controller's pusher and live view.
func (s *Service) Attach(p Pusher, l Live) { s.push, s.live = p, l }

func randomToken(prefix string, n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return prefix + base64.RawURLEncoding.EncodeToString(b)
}

func hashToken(tok string) string {
	sum := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(sum[:])
}

// CreateSite pre-stages a site for zero-touch provisioning and returns it with its claim
// token, which is shown only here.
func (s *Service) CreateSite(ctx context.Context, req CreateSiteRequest) (*Site, error) {
	if err := checkName("name", req.Name, 200); err != nil {
		return nil, err
	}
	if req.Role == "" {
		req.Role = "branch"
	}
	if !slices.Contains(Roles, req.Role) {
		return nil, apierr.BadRequest("role must be one of %s; got %q", strings.Join(Roles, ", "), req.Role)
	}
	if req.Segments == nil {
		req.Segments = []string{"corporate"}
	}
	if err := checkSegments(req.Segments); err != nil {
		return nil, err
	}
	if err := checkLocation(req.Location); err != nil {
		return nil, err
	}
	if len(req.Serial) > 128 {
		return nil, apierr.BadRequest("serial is longer than 128 characters")
	}
	ttl := s.o.DefaultClaim
	if req.ClaimTTL != "" {
		d, err := parseDays(req.ClaimTTL)
		if err != nil || d < time.Minute || d > 90*24*time.Hour {
			return nil, apierr.BadRequest("claim_ttl must be a duration from 1m to 90d, such as 72h or 7d; got %q", req.ClaimTTL)
		}
		ttl = d
	}
	if len(req.Transports) > 16 {
		return nil, apierr.BadRequest("at most 16 transports per site")
	}
	now := s.now()
	site := &Site{
		ID: ids.New("site"), Name: strings.TrimSpace(req.Name), Status: SitePending, Role: req.Role,
		Location: req.Location, Segments: req.Segments, Serial: req.Serial, CreatedAt: now, UpdatedAt: now,
		Claim: randomToken("ewc_", 24), ClaimExpiresAt: now.Add(ttl),
	}
	var ts []*Transport
	for i := range req.Transports {
		r := &req.Transports[i]
		if err := r.validate(); err != nil {
			return nil, err
		}
		for _, t := range ts {
			if t.Name == r.Name {
				return nil, apierr.BadRequest("transport %q given twice", r.Name)
			}
		}
		ts = append(ts, newTransport(site.ID, r, now))
	}
	if err := s.store.CreateSite(ctx, site, hashToken(site.Claim), ts); err != nil {
		return nil, err
	}
	site.Transports = ts
	if site.Transports == nil {
		site.Transports = []*Transport{}
	}
	return site, nil
}

func newTransport(siteID string, r *CreateTransportRequest, now time.Time) *Transport {
	return &Transport{
		ID: ids.New("tr"), SiteID: siteID, Name: r.Name, Kind: r.Kind, Interface: r.Interface, Gateway: r.Gateway,
		ProbeTargets: r.ProbeTargets, BandwidthKbps: r.BandwidthKbps, Cost: r.Cost, Status: TransportUnknown,
		CreatedAt: now, UpdatedAt: now,
	}
}

// GetSite returns a site with its transports and their latest figures.
func (s *Service) GetSite(ctx context.Context, id string) (*Site, error) {
	site, err := s.store.GetSite(ctx, id)
	if err != nil {
		return nil, err
	}
	if s.live != nil {
		s.live.Overlay(site.ID, site.Transports)
		if q := s.live.Quarantined(site.ID); q != nil {
			site.Quarantine = q
		}
	}
	if site.Transports == nil {
		site.Transports = []*Transport{}
	}
	return site, nil
}

// ListSites lists sites.
func (s *Service) ListSites(ctx context.Context, p page.Params, f SiteFilter) ([]*Site, error) {
	if f.Status != "" && !slices.Contains(SiteStatuses, f.Status) {
		return nil, apierr.BadRequest("status must be one of %s; got %q", strings.Join(SiteStatuses, ", "), f.Status)
	}
	if f.Role != "" && !slices.Contains(Roles, f.Role) {
		return nil, apierr.BadRequest("role must be one of %s; got %q", strings.Join(Roles, ", "), f.Role)
	}
	sites, err := s.store.ListSites(ctx, p, f)
	if err == nil && s.live != nil {
		for _, site := range sites {
			if q := s.live.Quarantined(site.ID); q != nil {
				site.Quarantine = q
			}
		}
	}
	return sites, err
}

// UpdateSite changes a site's name, role, location, segments or serial.
func (s *Service) UpdateSite(ctx context.Context, id string, req UpdateSiteRequest) (*Site, error) {
	if req.Name == nil && req.Role == nil && req.Location == nil && req.Segments == nil && req.Serial == nil {
		return nil, apierr.BadRequest("nothing to change: give at least one of name, role, location, segments, serial")
	}
	site, err := s.store.GetSite(ctx, id)
	if err != nil {
		return nil, err
	}
	if site.Status == SiteDecommissioned {
		return nil, apierr.Conflict("site %s is decommissioned", id)
	}
	if req.Name != nil {
		if err := checkName("name", *req.Name, 200); err != nil {
			return nil, err
		}
		site.Name = strings.TrimSpace(*req.Name)
	}
	if req.Role != nil {
		if !slices.Contains(Roles, *req.Role) {
			return nil, apierr.BadRequest("role must be one of %s; got %q", strings.Join(Roles, ", "), *req.Role)
		}
		site.Role = *req.Role
	}
	if req.Location != nil {
		if err := checkLocation(*req.Location); err != nil {
			return nil, err
		}
		site.Location = *req.Location
	}
	if req.Segments != nil {
		if err := checkSegments(*req.Segments); err != nil {
			return nil, err
		}
		site.Segments = *req.Segments
	}
	if req.Serial != nil {
		if len(*req.Serial) > 128 {
			return nil, apierr.BadRequest("serial is longer than 128 characters")
		}
		if !site.ClaimedAt.IsZero() {
			return nil, apierr.Conflict("site %s is already claimed; its serial cannot change", id)
		}
		site.Serial = *req.Serial
	}
	site.UpdatedAt = s.now()
	if err := s.store.UpdateSite(ctx, site); err != nil {
		return nil, err
	}
	if s.live != nil && s.live.Quarantined(id) != nil { // the change may be its fix
		if err := s.changed(ctx, id); err != nil {
			return nil, err
		}
	}
	return s.GetSite(ctx, id)
}

// DecommissionSite retires a site: its agent's credentials stop working and it leaves the lists
// of live sites. The record stays.
func (s *Service) DecommissionSite(ctx context.Context, id string) error {
	if err := s.store.DecommissionSite(ctx, id, s.now()); err != nil {
		return err
	}
	return s.changed(ctx, id)
}

func (s *Service) changed(ctx context.Context, id string) error {
	if s.live == nil {
		return nil
	}
	if err := s.live.SiteChanged(ctx, id); err != nil {
		return fmt.Errorf("sdwan: reloading site %s: %w", id, err)
	}
	return nil
}

// AddTransport adds a circuit to a site.
func (s *Service) AddTransport(ctx context.Context, siteID string, req CreateTransportRequest) (*Transport, error) {
	if err := req.validate(); err != nil {
		return nil, err
	}
	site, err := s.store.GetSite(ctx, siteID)
	if err != nil {
		return nil, err
	}
	if site.Status == SiteDecommissioned {
		return nil, apierr.Conflict("site %s is decommissioned", siteID)
	}
	if len(site.Transports) >= 16 {
		return nil, apierr.Conflict("site %s already has 16 transports", siteID)
	}
	t := newTransport(siteID, &req, s.now())
	if err := s.store.CreateTransport(ctx, t); err != nil {
		return nil, err
	}
	if !site.ClaimedAt.IsZero() {
		if err := s.changed(ctx, siteID); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// ListTransports lists a site's transports with their latest figures.
func (s *Service) ListTransports(ctx context.Context, siteID string, p page.Params) ([]*Transport, error) {
	if _, err := s.store.GetSite(ctx, siteID); err != nil {
		return nil, err
	}
	ts, err := s.store.ListTransports(ctx, siteID, p)
	if err == nil && s.live != nil {
		s.live.Overlay(siteID, ts)
	}
	return ts, err
}

// ClaimRequest is what an agent sends to claim its pre-staged site.
type ClaimRequest struct {
	ClaimToken string `json:"claim_token"`
	Serial     string `json:"serial"`
	Hostname   string `json:"hostname"`
	Version    string `json:"version"`
}

// ClaimResult is what a claiming agent receives, once.
type ClaimResult struct {
	Site   *Site      `json:"site"`
	Device string     `json:"device"`
	MQTT   MQTTAccess `json:"mqtt"`
}

// Claim errors carry stable codes so the agent can say exactly what is wrong.
const (
	CodeClaimUnknown = "claim_token_invalid"
	CodeClaimUsed    = "claim_token_used"
	CodeClaimExpired = "claim_token_expired"
	CodeClaimSerial  = "claim_serial_mismatch"
)

// Claim hands a pre-staged site to the agent holding its claim token: a device record, MQTT
// credentials (returned once, stored hashed) and the broker's address.
func (s *Service) Claim(ctx context.Context, req ClaimRequest, clientIP string) (*ClaimResult, error) {
	if !strings.HasPrefix(req.ClaimToken, "ewc_") || len(req.ClaimToken) > 100 {
		return nil, apierr.New(401, CodeClaimUnknown, "claim_token is missing or malformed")
	}
	if len(req.Hostname) > 255 || len(req.Version) > 64 || len(req.Serial) > 128 {
		return nil, apierr.BadRequest("hostname, version or serial too long")
	}
	hash := hashToken(req.ClaimToken)
	site, expires, err := s.store.SiteByClaim(ctx, hash)
	if err != nil {
		if apierr.From(err).Status == 404 {
			if s.o.OnClaimUnknown != nil {
				s.o.OnClaimUnknown(ctx, clientIP)
			}
			return nil, apierr.New(401, CodeClaimUnknown, "unknown claim token")
		}
		return nil, err
	}
	now := s.now()
	reuse := func(code, reason string) error {
		if s.o.OnClaimReuse != nil {
			s.o.OnClaimReuse(ctx, site.ID, clientIP, reason)
		}
		return apierr.New(401, code, "claim token %s; ask for a new one (POST /sd-wan/v1/sites pre-stages a site)", reason)
	}
	switch {
	case site.Status == SiteDecommissioned:
		return nil, reuse(CodeClaimUsed, "belongs to a decommissioned site")
	case !site.ClaimedAt.IsZero():
		return nil, reuse(CodeClaimUsed, "was already used")
	case now.After(expires):
		return nil, reuse(CodeClaimExpired, "has expired")
	case site.Serial != "" && req.Serial != site.Serial:
		return nil, apierr.New(401, CodeClaimSerial, "this site was pre-staged for another serial number")
	}
	dev := &org.Device{ID: ids.New("dev"), SiteID: site.ID, Name: req.Hostname, Serial: req.Serial,
		Status: org.DeviceOffline, Version: req.Version, CreatedAt: now, UpdatedAt: now}
	if dev.Name == "" {
		dev.Name = dev.ID
	}
	var password, natsUser string
	if s.o.NATSCredential != nil {
		password, natsUser, err = s.o.NATSCredential(dev.ID, site.ID)
	} else {
		password, err = mqtt.NewPassword()
	}
	if err != nil {
		return nil, err
	}
	pwHash, err := mqtt.HashPassword(password)
	if err != nil {
		return nil, err
	}
	rec := ClaimRecord{SiteID: site.ID, ClaimHash: hash, Device: dev, MQTTUser: dev.ID, MQTTHash: pwHash, NATSUser: natsUser, At: now}
	if err := s.store.ClaimSite(ctx, rec); err != nil {
		if apierr.From(err).Status == 409 {
			return nil, reuse(CodeClaimUsed, "was already used")
		}
		return nil, err
	}
	// From here a failure undoes the claim: a request that fails never uses up the token
	// (the agent retries with it). Nothing in the site's data fails these steps: the live
	// engine quarantines a site it cannot run (a claimed site with no transports is normal).
	var claimed *Site
	err = s.changed(ctx, site.ID)
	if err == nil {
		claimed, err = s.GetSite(ctx, site.ID)
	}
	if err != nil {
		s.unclaim(rec, err)
		return nil, err
	}
	if s.o.OnClaimed != nil {
		s.o.OnClaimed(ctx, site.ID)
	}
	access := MQTTAccess{Username: dev.ID, Password: password, CAPEM: s.o.CAPEM, Broker: s.o.Broker}
	for _, u := range strings.Split(s.brokerURL(), ",") { // several nodes: --mqtt-public-url a,b,c
		if u = strings.TrimSpace(u); u != "" {
			access.URLs = append(access.URLs, u)
		}
	}
	if n := len(access.URLs); n > 1 {
		// Each device starts on a node of its own (the list rotated by a hash of its ID): with
		// one order for all, a whole fleet connected to the first node.
		h := fnv.New32a()
		h.Write([]byte(dev.ID))
		k := int(h.Sum32() % uint32(n))
		access.URLs = append(access.URLs[k:], access.URLs[:k]...)
	}
	if len(access.URLs) > 0 {
		access.URL = access.URLs[0]
	}
	if len(access.URLs) < 2 {
		access.URLs = nil
	}
	return &ClaimResult{Site: claimed, Device: dev.ID, MQTT: access}, nil
}

// unclaim undoes a claim whose request failed after it was stored, and makes the live state
// forget the site again.
func (s *Service) unclaim(rec ClaimRecord, cause error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.store.UnclaimSite(ctx, rec); err != nil {
		slog.Error("sdwan: undoing a failed claim; its token stays used", "site", rec.SiteID, "cause", cause, "err", err)
		return
	}
	if err := s.changed(ctx, rec.SiteID); err != nil {
		slog.Warn("sdwan: reloading a site after undoing its claim", "site", rec.SiteID, "err", err)
	}
}

// CreatePolicyRequest is the body of POST /policies.
type CreatePolicyRequest struct {
	Name        string          `json:"name"`
	Type        string          `json:"type"`
	Description string          `json:"description"`
	Content     json.RawMessage `json:"content"` // optional: the first draft version
	Comment     string          `json:"comment"`
	// RequireSimulationMinutes > 0: publishing a version needs a simulation of it at most
	// this many minutes old.
	RequireSimulationMinutes int `json:"require_simulation_minutes"`
}

// UpdatePolicyRequest is the body of PATCH /policies/{id}; absent fields stay.
type UpdatePolicyRequest struct {
	RequireSimulationMinutes *int `json:"require_simulation_minutes"`
}

// AddVersionRequest is the body of POST /policies/{id}/versions.
type AddVersionRequest struct {
	Content json.RawMessage `json:"content"`
	Comment string          `json:"comment"`
}

// PublishRequest is the body of POST /policies/{id}/publish.
type PublishRequest struct {
	Version int      `json:"version"`
	Sites   []string `json:"sites"` // default: the sites already running this policy
	Comment string   `json:"comment"`
}

// CodeSimulationRequired: the policy requires a recent simulation of the version first.
const CodeSimulationRequired = "simulation_required"

// PublishResult answers a publish.
type PublishResult struct {
	Change  *Change    `json:"change"`
	Rollout []*Rollout `json:"rollout"`
}

// CreatePolicy creates a policy, with a first draft version if content is given.
func (s *Service) CreatePolicy(ctx context.Context, req CreatePolicyRequest, actor string) (*Policy, error) {
	if err := checkName("name", req.Name, 200); err != nil {
		return nil, err
	}
	if req.Type != TypeSteering && req.Type != TypeQoS {
		return nil, apierr.BadRequest("type must be steering or qos; got %q", req.Type)
	}
	if len(req.Description) > 2000 || len(req.Comment) > 2000 {
		return nil, apierr.BadRequest("description and comment are limited to 2000 characters")
	}
	now := s.now()
	if err := checkRequireSimulation(req.Type, req.RequireSimulationMinutes); err != nil {
		return nil, err
	}
	p := &Policy{ID: ids.New("pol"), Name: strings.TrimSpace(req.Name), Type: req.Type, Description: req.Description,
		RequireSimulationMinutes: req.RequireSimulationMinutes, CreatedAt: now, UpdatedAt: now}
	var v *Version
	if len(req.Content) > 0 && string(req.Content) != "null" {
		content, _, err := ValidateContent(req.Type, req.Content)
		if err != nil {
			return nil, err
		}
		v = &Version{Version: 1, Status: VersionDraft, Content: content, Comment: req.Comment, CreatedBy: actor, CreatedAt: now}
	}
	if err := s.store.CreatePolicy(ctx, p, v); err != nil {
		return nil, err
	}
	return s.store.GetPolicy(ctx, p.ID)
}

// maxRequireSimulation is the longest a policy may accept a simulation for: a week.
const maxRequireSimulation = 7 * 24 * 60

func checkRequireSimulation(typ string, minutes int) error {
	if minutes < 0 || minutes > maxRequireSimulation {
		return apierr.BadRequest("require_simulation_minutes must be 0 (off) to %d; got %d", maxRequireSimulation, minutes)
	}
	if minutes > 0 && typ != TypeSteering {
		return apierr.BadRequest("require_simulation_minutes: only steering policies can be simulated")
	}
	return nil
}

// UpdatePolicy changes a policy's settings.
func (s *Service) UpdatePolicy(ctx context.Context, id string, req UpdatePolicyRequest) (*Policy, error) {
	if req.RequireSimulationMinutes == nil {
		return nil, apierr.BadRequest("nothing to change: give require_simulation_minutes")
	}
	p, err := s.store.GetPolicy(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := checkRequireSimulation(p.Type, *req.RequireSimulationMinutes); err != nil {
		return nil, err
	}
	p.RequireSimulationMinutes, p.UpdatedAt = *req.RequireSimulationMinutes, s.now()
	if err := s.store.SetPolicySettings(ctx, p); err != nil {
		return nil, err
	}
	return s.store.GetPolicy(ctx, id)
}

// AddVersion adds a draft version to a policy.
func (s *Service) AddVersion(ctx context.Context, policyID string, req AddVersionRequest, actor string) (*Version, error) {
	p, err := s.store.GetPolicy(ctx, policyID)
	if err != nil {
		return nil, err
	}
	if len(req.Comment) > 2000 {
		return nil, apierr.BadRequest("comment is limited to 2000 characters")
	}
	content, _, err := ValidateContent(p.Type, req.Content)
	if err != nil {
		return nil, err
	}
	v := &Version{Status: VersionDraft, Content: content, Comment: req.Comment, CreatedBy: actor, CreatedAt: s.now()}
	if err := s.store.AddVersion(ctx, policyID, v); err != nil {
		return nil, err
	}
	return v, nil
}

// GetPolicy returns a policy with its versions and rollout.
func (s *Service) GetPolicy(ctx context.Context, id string) (*Policy, error) {
	return s.store.GetPolicy(ctx, id)
}

// ListPolicies lists policies with their versions.
func (s *Service) ListPolicies(ctx context.Context, p page.Params, typ string) ([]*Policy, error) {
	if typ != "" && typ != TypeSteering && typ != TypeQoS {
		return nil, apierr.BadRequest("type must be steering or qos; got %q", typ)
	}
	return s.store.ListPolicies(ctx, p, typ)
}

// ListChanges lists change records, optionally of one policy.
func (s *Service) ListChanges(ctx context.Context, p page.Params, target string) ([]*Change, error) {
	return s.store.ListChanges(ctx, p, target)
}

// Publish publishes a version of a policy to sites: checked against each site (a transport the
// site lacks is a 422), recorded as a change with the diff from the previous published
// version, and pushed to the sites' agents, whose acknowledgements move each site's rollout
// from pending to applied or failed.
func (s *Service) Publish(ctx context.Context, policyID string, req PublishRequest, actor string) (*PublishResult, error) {
	if len(req.Comment) > 2000 {
		return nil, apierr.BadRequest("comment is limited to 2000 characters")
	}
	p, err := s.store.GetPolicy(ctx, policyID)
	if err != nil {
		return nil, err
	}
	var v, prev *Version
	for _, x := range p.Versions {
		if x.Version == req.Version {
			v = x
		}
		if x.Version == p.PublishedVersion {
			prev = x
		}
	}
	if v == nil {
		return nil, apierr.Invalid("policy %s has no version %d", policyID, req.Version)
	}
	if v.Quarantine != nil {
		return nil, apierr.Invalid("version %d of policy %s is quarantined and cannot be published: %s", req.Version, policyID, v.Quarantine.Reason)
	}
	sites := req.Sites
	if len(sites) == 0 {
		for _, r := range p.Rollout {
			sites = append(sites, r.SiteID)
		}
	}
	if len(sites) == 0 {
		return nil, apierr.Invalid("give the sites to publish to: this policy runs on no site yet")
	}
	if len(sites) > 10000 {
		return nil, apierr.BadRequest("at most 10000 sites per publish")
	}
	slices.Sort(sites)
	sites = slices.Compact(sites)
	_, transports, err := ValidateContent(p.Type, v.Content)
	if err != nil {
		return nil, err
	}
	for _, id := range sites {
		site, err := s.store.GetSite(ctx, id)
		if err != nil {
			if apierr.From(err).Status == 404 {
				return nil, apierr.Invalid("site %q does not exist", id)
			}
			return nil, err
		}
		if site.Status == SiteDecommissioned {
			return nil, apierr.Invalid("site %s is decommissioned", id)
		}
		var missing []string
		for _, t := range transports {
			if !slices.ContainsFunc(site.Transports, func(x *Transport) bool { return x.Name == t }) {
				missing = append(missing, t)
			}
		}
		if len(missing) > 0 {
			return nil, apierr.Invalid("site %s (%s) has no transport %s named by version %d", id, site.Name, strings.Join(missing, ", "), v.Version)
		}
	}
	now := s.now()
	sim, err := s.store.LatestSimulation(ctx, policyID, v.Version)
	if err != nil && !errors.Is(err, apierr.ErrNotFound) {
		return nil, err
	}
	if n := p.RequireSimulationMinutes; n > 0 && (sim == nil || now.Sub(sim.CreatedAt) > time.Duration(n)*time.Minute) {
		return nil, apierr.New(409, CodeSimulationRequired, "policy %s requires a simulation of version %d at most %d minutes old before it is published: POST /sd-wan/v1/policies/%s/versions/%d/simulate",
			policyID, v.Version, n, policyID, v.Version)
	}
	if n := p.RequireSimulationMinutes; n > 0 {
		// a simulation over some sites says nothing of the others the publish reaches
		if missing := notSimulated(sim, sites); len(missing) > 0 {
			return nil, apierr.New(409, CodeSimulationRequired, "policy %s requires a simulation of version %d covering every site it is published to; simulation %s did not cover %s: POST /sd-wan/v1/policies/%s/versions/%d/simulate",
				policyID, v.Version, sim.ID, listSome(missing, 5), policyID, v.Version)
		}
	}
	var prevContent json.RawMessage
	c := &Change{ID: ids.New("chg"), Kind: "policy.published", Actor: actor, Target: policyID, Version: v.Version,
		Sites: sites, Comment: req.Comment, CreatedAt: now, UpdatedAt: now}
	if sim != nil {
		c.Simulation = sim.ID
	}
	if prev != nil {
		c.FromVersion, prevContent = prev.Version, prev.Content
	}
	c.Diff = Diff(prevContent, v.Content)
	if err := s.store.PublishPolicy(ctx, policyID, v.Version, sites, p.Type, c); err != nil {
		return nil, err
	}
	res := &PublishResult{Change: c}
	for _, id := range sites {
		res.Rollout = append(res.Rollout, &Rollout{SiteID: id, PolicyID: policyID, Type: p.Type, Version: v.Version,
			State: RolloutPending, ChangeID: c.ID, UpdatedAt: now})
		if s.push != nil {
			// The publish is committed: a push that fails leaves the site's rollout pending, and
			// the controller pushes every site's policies again when it starts.
			if err := s.push.PushPolicies(ctx, id); err != nil {
				slog.Error("sdwan: pushing a published policy; the site's rollout stays pending", "site", id, "policy", policyID, "err", err)
			}
		}
	}
	return res, nil
}

// notSimulated returns the sites (sorted) that sim did not replay.
func notSimulated(sim *Simulation, sites []string) []string {
	var missing []string
	for _, id := range sites {
		if _, ok := slices.BinarySearch(sim.SiteIDs, id); !ok {
			missing = append(missing, id)
		}
	}
	return missing
}

// listSome lists the first n of ids and how many more there are.
func listSome(ids []string, n int) string {
	if len(ids) <= n {
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ids[:n], ", "), len(ids)-n)
}

// Ack records an agent's acknowledgement of a policy version.
func (s *Service) Ack(ctx context.Context, siteID, policyID string, version int, applied bool, reason string) error {
	state := RolloutApplied
	if !applied {
		state = RolloutFailed
	}
	_, err := s.store.SetRollout(ctx, siteID, policyID, version, state, reason, s.now())
	return err
}

// Health is the health report of GET /sites/{id}/health.
type Health struct {
	Site       string            `json:"site"`
	Status     string            `json:"status"`
	Window     string            `json:"window"`
	Transports []TransportHealth `json:"transports"`
	SLA        []SLAHealth       `json:"sla"`
	Time       time.Time         `json:"generated_at"`
}

// TransportHealth is one transport's figures over the window.
type TransportHealth struct {
	Name         string  `json:"name"`
	Status       string  `json:"status"`
	LatencyMs    float64 `json:"latency_ms"`
	LossPct      float64 `json:"loss_pct"`
	JitterMs     float64 `json:"jitter_ms"`
	MaxLatencyMs float64 `json:"max_latency_ms"`
	Samples      int     `json:"samples"`
}

// SLAHealth is one class's SLA over the window, on its current path.
type SLAHealth struct {
	Class     string  `json:"class"`
	TargetMet bool    `json:"target_met"`
	Path      string  `json:"path"`
	LatencyMs float64 `json:"latency_ms"`
	LossPct   float64 `json:"loss_pct"`
	JitterMs  float64 `json:"jitter_ms"`
}

// Health returns a site's health over window.
func (s *Service) Health(ctx context.Context, siteID string, window time.Duration, windowText string) (*Health, error) {
	site, err := s.store.GetSite(ctx, siteID)
	if err != nil {
		return nil, err
	}
	if s.live != nil {
		if h, ok := s.live.Health(siteID, window); ok {
			h.Window = windowText
			return h, nil
		}
	}
	// No live state (pending or decommissioned site): the stored figures, no SLA yet.
	h := &Health{Site: site.ID, Status: site.Status, Window: windowText, Transports: []TransportHealth{}, SLA: []SLAHealth{}, Time: s.now()}
	for _, t := range site.Transports {
		h.Transports = append(h.Transports, TransportHealth{Name: t.Name, Status: t.Status, LatencyMs: t.LatencyMs, LossPct: t.LossPct, JitterMs: t.JitterMs})
	}
	return h, nil
}
