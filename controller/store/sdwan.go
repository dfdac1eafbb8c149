package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/edgewan/edgewan/controller/mqtt"
	"github.com/edgewan/edgewan/controller/sdwan"
	"github.com/edgewan/edgewan/coreapi/apierr"
	"github.com/edgewan/edgewan/coreapi/event"
	"github.com/edgewan/edgewan/coreapi/org"
	"github.com/edgewan/edgewan/coreapi/page"
)

var _ sdwan.Store = (*Store)(nil)

const siteCols = "id, name, status, role, location, segments, serial, claimed_at, device_id, last_seen, created_at, updated_at, stored_seq"

func scanSite(sc interface{ Scan(...any) error }) (*sdwan.Site, error) {
	var s sdwan.Site
	var loc, segs string
	var claimed, seen, c, u, stored int64
	if err := sc.Scan(&s.ID, &s.Name, &s.Status, &s.Role, &loc, &segs, &s.Serial, &claimed, &s.DeviceID, &seen, &c, &u, &stored); err != nil {
		return nil, err
	}
	s.ClaimedAt, s.LastSeen, s.CreatedAt, s.UpdatedAt = fromMicros(claimed), fromMicros(seen), fromMicros(c), fromMicros(u)
	s.StoredSeq = uint64(stored)
	// On a column that does not decode, the site comes back with the error: LiveSites
	// quarantines it rather than failing every site.
	if err := json.Unmarshal([]byte(loc), &s.Location); err != nil {
		return &s, fmt.Errorf("site %s location: %w", s.ID, err)
	}
	if err := json.Unmarshal([]byte(segs), &s.Segments); err != nil {
		return &s, fmt.Errorf("site %s segments: %w", s.ID, err)
	}
	return &s, nil
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

const transportCols = "id, site_id, name, kind, interface, gateway, probe_targets, bandwidth_kbps, cost, status, latency_ms, loss_pct, jitter_ms, last_sample_at, created_at, updated_at"

func scanTransport(sc interface{ Scan(...any) error }) (*sdwan.Transport, error) {
	var t sdwan.Transport
	var targets string
	var last, c, u int64
	if err := sc.Scan(&t.ID, &t.SiteID, &t.Name, &t.Kind, &t.Interface, &t.Gateway, &targets, &t.BandwidthKbps, &t.Cost,
		&t.Status, &t.LatencyMs, &t.LossPct, &t.JitterMs, &last, &c, &u); err != nil {
		return nil, err
	}
	t.LastSampleAt, t.CreatedAt, t.UpdatedAt = fromMicros(last), fromMicros(c), fromMicros(u)
	if err := json.Unmarshal([]byte(targets), &t.ProbeTargets); err != nil {
		return &t, fmt.Errorf("transport %s probe targets: %w", t.ID, err) // with the row, for LiveSites
	}
	return &t, nil
}

func (s *Store) insertTransport(ctx context.Context, tx *sql.Tx, t *sdwan.Transport) error {
	_, err := tx.ExecContext(ctx, s.q("INSERT INTO transports ("+transportCols+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"),
		t.ID, t.SiteID, t.Name, t.Kind, t.Interface, t.Gateway, jsonText(t.ProbeTargets), t.BandwidthKbps, t.Cost,
		t.Status, t.LatencyMs, t.LossPct, t.JitterMs, micros(t.LastSampleAt), micros(t.CreatedAt), micros(t.UpdatedAt))
	if isUnique(err) {
		return apierr.Conflict("site %s already has a transport named %q", t.SiteID, t.Name)
	}
	return err
}

// CreateSite stores a pre-staged site, the hash of its claim token and its first transports.
func (s *Store) CreateSite(ctx context.Context, site *sdwan.Site, claimHash string, ts []*sdwan.Transport) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, s.q("INSERT INTO sites (id, name, status, role, location, segments, serial, claim_hash, claim_expires_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"),
			site.ID, site.Name, site.Status, site.Role, jsonText(site.Location), jsonText(site.Segments), site.Serial,
			claimHash, micros(site.ClaimExpiresAt), micros(site.CreatedAt), micros(site.UpdatedAt))
		if isUnique(err) {
			return apierr.Conflict("a site named %q exists already", site.Name)
		}
		if err != nil {
			return err
		}
		for _, t := range ts {
			if err := s.insertTransport(ctx, tx, t); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store.CreateSite: %w", err)
	}
	return nil
}

// GetSite returns a site with its transports, by name order.
func (s *Store) GetSite(ctx context.Context, id string) (*sdwan.Site, error) {
	site, err := scanSite(s.r.QueryRowContext(ctx, s.q("SELECT "+siteCols+" FROM sites WHERE id = ?"), id))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, notFound("site", id)
	case err != nil && site != nil:
		quarantine(site, err) // the row is there and readable enough to show and to fix
	case err != nil:
		return nil, fmt.Errorf("store.GetSite: %w", err)
	}
	site.Transports, err = s.SiteTransports(ctx, id)
	var bad badRowError
	if errors.As(err, &bad) {
		quarantine(site, bad.err)
		err = nil
	}
	return site, err
}

// SitesByID returns the sites of ids that exist, keyed by ID, each with its transports by name
// order, in two queries whatever the number of IDs: a replay over thousands of sites reads
// them a batch at a time rather than two queries per site (see GetSite). A row that does not
// decode quarantines its site, as GetSite does. Keep ids to a few hundred (one placeholder
// each).
func (s *Store) SitesByID(ctx context.Context, ids []string) (map[string]*sdwan.Site, error) {
	out := make(map[string]*sdwan.Site, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	in, args := inList(ids)
	err := s.queryRows(ctx, "SELECT "+siteCols+" FROM sites WHERE id IN "+in, args, func(r *sql.Rows) error {
		site, err := scanSite(r)
		if err != nil && site != nil {
			quarantine(site, err)
			err = nil
		}
		if err == nil {
			out[site.ID] = site
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store.SitesByID: %w", err)
	}
	err = s.queryRows(ctx, "SELECT "+transportCols+" FROM transports WHERE site_id IN "+in+" ORDER BY site_id, name", args, func(r *sql.Rows) error {
		t, err := scanTransport(r)
		if t == nil {
			return err
		}
		site := out[t.SiteID]
		if site == nil { // created between the two queries
			return nil
		}
		if err != nil {
			quarantine(site, fmt.Errorf("store.SiteTransports: %w", err))
		}
		site.Transports = append(site.Transports, t)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store.SitesByID: transports: %w", err)
	}
	return out, nil
}

// inList is "(?, ?, ...)" with a placeholder for each of ids, and ids as arguments.
func inList(ids []string) (string, []any) {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	return "(?" + strings.Repeat(", ?", len(ids)-1) + ")", args
}

// quarantine marks a site whose stored row did not decode, as LiveSites does.
func quarantine(site *sdwan.Site, err error) {
	if site.Quarantine == nil {
		site.Quarantine = &sdwan.Quarantine{Kind: sdwan.QuarantineData, Reason: err.Error()}
	}
}

// badRowError is a row that was read but did not decode; SiteTransports returns it with every
// transport (the bad one partly filled) so that its site can be shown, quarantined.
type badRowError struct{ err error }

func (e badRowError) Error() string { return e.err.Error() }

// SiteTransports returns a site's transports by name.
func (s *Store) SiteTransports(ctx context.Context, siteID string) ([]*sdwan.Transport, error) {
	var out []*sdwan.Transport
	var bad error
	err := s.queryRows(ctx, "SELECT "+transportCols+" FROM transports WHERE site_id = ? ORDER BY name", []any{siteID}, func(r *sql.Rows) error {
		t, err := scanTransport(r)
		if err != nil && t != nil {
			bad, err = err, nil
		}
		if err == nil {
			out = append(out, t)
		}
		return err
	})
	if err == nil && bad != nil {
		return out, badRowError{fmt.Errorf("store.SiteTransports: %w", bad)}
	}
	if err != nil {
		return nil, fmt.Errorf("store.SiteTransports: %w", err)
	}
	return out, nil
}

// ListSites lists sites without their transports.
func (s *Store) ListSites(ctx context.Context, p page.Params, f sdwan.SiteFilter) ([]*sdwan.Site, error) {
	l := listQuery{cols: siteCols, from: "sites", params: p}
	l.filter("status", f.Status)
	l.filter("role", f.Role)
	query, args := l.sql()
	var out []*sdwan.Site
	err := s.queryRows(ctx, query, args, func(r *sql.Rows) error {
		site, err := scanSite(r)
		if err != nil && site != nil {
			quarantine(site, err)
			err = nil
		}
		out = append(out, site)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store.ListSites: %w", err)
	}
	return out, nil
}

// UpdateSite stores a site's editable fields.
func (s *Store) UpdateSite(ctx context.Context, site *sdwan.Site) error {
	res, err := s.exec(ctx, "UPDATE sites SET name = ?, role = ?, location = ?, segments = ?, serial = ?, updated_at = ? WHERE id = ?",
		site.Name, site.Role, jsonText(site.Location), jsonText(site.Segments), site.Serial, micros(site.UpdatedAt), site.ID)
	if isUnique(err) {
		return apierr.Conflict("a site named %q exists already", site.Name)
	}
	if err != nil {
		return fmt.Errorf("store.UpdateSite: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return notFound("site", site.ID)
	}
	return nil
}

// SetSiteStatus records a site's status and last report time, with the events announcing a
// change, in one transaction, and returns how many webhook deliveries the events queued.
func (s *Store) SetSiteStatus(ctx context.Context, id, status string, lastSeen, at time.Time, evs ...*event.Envelope) (int, error) {
	var n int
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if err := s.fenceAll(ctx, tx, id); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.q("UPDATE sites SET status = ?, last_seen = ?, updated_at = ? WHERE id = ? AND status <> ?"),
			status, micros(lastSeen), micros(at), id, sdwan.SiteDecommissioned); err != nil {
			return err
		}
		devStatus := org.DeviceOnline
		if status == sdwan.SiteOffline {
			devStatus = org.DeviceOffline
		}
		if _, err := tx.ExecContext(ctx, s.q("UPDATE devices SET status = ?, last_seen = ?, updated_at = ? WHERE site_id = ? AND status <> ?"),
			devStatus, micros(lastSeen), micros(at), id, org.DeviceDecommissioned); err != nil {
			return err
		}
		var err error
		n, err = s.insertEvents(ctx, tx, evs)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store.SetSiteStatus: %w", err)
	}
	return n, nil
}

// SiteByClaim implements sdwan.Store.
func (s *Store) SiteByClaim(ctx context.Context, hash string) (*sdwan.Site, time.Time, error) {
	row := s.w.QueryRowContext(ctx, s.q("SELECT "+siteCols+", claim_expires_at FROM sites WHERE claim_hash = ?"), hash)
	var site sdwan.Site
	var loc, segs string
	var claimed, seen, c, u, stored, exp int64
	err := row.Scan(&site.ID, &site.Name, &site.Status, &site.Role, &loc, &segs, &site.Serial, &claimed, &site.DeviceID, &seen, &c, &u, &stored, &exp)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, time.Time{}, notFound("claim", "")
	}
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("store.SiteByClaim: %w", err)
	}
	site.ClaimedAt, site.CreatedAt, site.UpdatedAt = fromMicros(claimed), fromMicros(c), fromMicros(u)
	return &site, fromMicros(exp), nil
}

// ClaimSite implements sdwan.Store.
func (s *Store) ClaimSite(ctx context.Context, c sdwan.ClaimRecord) error {
	s.forgetCredential(c.MQTTUser)
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.q("UPDATE sites SET claimed_at = ?, device_id = ?, status = ?, updated_at = ?, stored_seq = 0 WHERE id = ? AND claim_hash = ? AND claimed_at = 0"),
			micros(c.At), c.Device.ID, sdwan.SiteOffline, micros(c.At), c.SiteID, c.ClaimHash)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return apierr.Conflict("site %s was claimed already", c.SiteID)
		}
		d := c.Device
		if _, err := tx.ExecContext(ctx, s.q("INSERT INTO devices ("+deviceCols+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"),
			d.ID, d.SiteID, d.Name, d.Serial, d.Status, d.Version, micros(d.LastSeen), micros(d.CreatedAt), micros(d.UpdatedAt)); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, s.q("INSERT INTO mqtt_credentials (username, site_id, hash, nats_user, created_at) VALUES (?, ?, ?, ?, ?)"),
			c.MQTTUser, c.SiteID, c.MQTTHash, c.NATSUser, micros(c.At))
		return err
	})
	if err != nil {
		return fmt.Errorf("store.ClaimSite: %w", err)
	}
	return nil
}

// UnclaimSite implements sdwan.Store.
func (s *Store) UnclaimSite(ctx context.Context, c sdwan.ClaimRecord) error {
	s.forgetCredential(c.MQTTUser)
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.q("UPDATE sites SET claimed_at = 0, device_id = '', status = ?, updated_at = ? WHERE id = ? AND device_id = ?"),
			sdwan.SitePending, micros(c.At), c.SiteID, c.Device.ID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return apierr.Conflict("site %s is not claimed by %s", c.SiteID, c.Device.ID)
		}
		if _, err := tx.ExecContext(ctx, s.q("DELETE FROM mqtt_credentials WHERE username = ?"), c.MQTTUser); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, s.q("DELETE FROM devices WHERE id = ?"), c.Device.ID)
		return err
	})
	if err != nil {
		return fmt.Errorf("store.UnclaimSite: %w", err)
	}
	return nil
}

// DecommissionSite retires a site, its device and its MQTT credentials.
func (s *Store) DecommissionSite(ctx context.Context, id string, at time.Time) error {
	s.forgetCredentials(func(c mqtt.Credential) bool { return c.Site == id })
	err := s.tx(ctx, func(tx *sql.Tx) error {
		// The claim hash stays: a decommissioned site's token presented again is reuse, a SOC case.
		res, err := tx.ExecContext(ctx, s.q("UPDATE sites SET status = ?, updated_at = ? WHERE id = ? AND status <> ?"),
			sdwan.SiteDecommissioned, micros(at), id, sdwan.SiteDecommissioned)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			var k int
			if err := tx.QueryRowContext(ctx, s.q("SELECT COUNT(*) FROM sites WHERE id = ?"), id).Scan(&k); err != nil {
				return err
			}
			if k == 0 {
				return notFound("site", id)
			}
			return nil // decommissioned already: nothing changes
		}
		if _, err := tx.ExecContext(ctx, s.q("UPDATE devices SET status = ?, updated_at = ? WHERE site_id = ?"), org.DeviceDecommissioned, micros(at), id); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, s.q("UPDATE mqtt_credentials SET revoked_at = ? WHERE site_id = ? AND revoked_at = 0"), micros(at), id)
		return err
	})
	if err != nil {
		return fmt.Errorf("store.DecommissionSite: %w", err)
	}
	return nil
}

var (
	_ mqtt.CredentialStore  = (*Store)(nil)
	_ mqtt.CredentialMemory = (*Store)(nil)
)

// MQTTCredential returns an agent's active broker credential; a revoked or unknown one is
// (nil, nil), which refuses the client.
func (s *Store) MQTTCredential(ctx context.Context, username string) (*mqtt.Credential, error) {
	if c, ok := s.CachedMQTTCredential(username); ok {
		return c, nil
	}
	var c mqtt.Credential
	err := s.r.QueryRowContext(ctx, s.q("SELECT username, site_id, hash FROM mqtt_credentials WHERE username = ? AND revoked_at = 0"), username).
		Scan(&c.Username, &c.Site, &c.Hash)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store.MQTTCredential: %w", err)
	}
	return &c, nil
}

// MQTTCredentials lists the active credentials (for writing an external broker's files).
func (s *Store) MQTTCredentials(ctx context.Context) ([]*mqtt.Credential, error) {
	var out []*mqtt.Credential
	err := s.queryRows(ctx, "SELECT username, site_id, hash FROM mqtt_credentials WHERE revoked_at = 0 ORDER BY username", nil, func(r *sql.Rows) error {
		var c mqtt.Credential
		out = append(out, &c)
		return r.Scan(&c.Username, &c.Site, &c.Hash)
	})
	if err != nil {
		return nil, fmt.Errorf("store.MQTTCredentials: %w", err)
	}
	return out, nil
}

// NATSRevocations lists the NATS users of revoked credentials (scaled-out mode) with the time
// each was revoked: the revocations of the account JWT (controller/natsauth).
func (s *Store) NATSRevocations(ctx context.Context) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	err := s.queryRows(ctx, "SELECT nats_user, revoked_at FROM mqtt_credentials WHERE revoked_at <> 0 AND nats_user <> ''", nil, func(r *sql.Rows) error {
		var u string
		var at int64
		if err := r.Scan(&u, &at); err != nil {
			return err
		}
		out[u] = fromMicros(at)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store.NATSRevocations: %w", err)
	}
	return out, nil
}

// CreateTransport adds a transport; a duplicate name on the site is a conflict.
func (s *Store) CreateTransport(ctx context.Context, t *sdwan.Transport) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if err := s.insertTransport(ctx, tx, t); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, s.q("UPDATE sites SET updated_at = ? WHERE id = ?"), micros(t.CreatedAt), t.SiteID)
		return err
	})
	if err != nil {
		return fmt.Errorf("store.CreateTransport: %w", err)
	}
	return nil
}

// ListTransports lists a site's transports.
func (s *Store) ListTransports(ctx context.Context, siteID string, p page.Params) ([]*sdwan.Transport, error) {
	l := listQuery{cols: transportCols, from: "transports", params: p}
	l.filter("site_id", siteID)
	query, args := l.sql()
	var out []*sdwan.Transport
	err := s.queryRows(ctx, query, args, func(r *sql.Rows) error {
		t, err := scanTransport(r)
		out = append(out, t)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store.ListTransports: %w", err)
	}
	return out, nil
}

// SaveFigures stores the latest figures of many transports and the last report time of their
// sites, in one transaction. It does not touch updated_at: figures change every second and
// would churn every list. With a fence (SetFence), the sites whose lease moved to another
// controller are left out and named by a *FencedError; the others are written.
func (s *Store) SaveFigures(ctx context.Context, sites map[string]sdwan.SiteFigures, fs []sdwan.TransportFigures) error {
	var fenced map[string]bool
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if s.fence != nil {
			ids := make([]string, 0, len(sites)+len(fs))
			for id := range sites {
				ids = append(ids, id)
			}
			for _, f := range fs {
				if _, ok := sites[f.SiteID]; !ok {
					ids = append(ids, f.SiteID)
				}
			}
			var err error
			if fenced, err = s.fenced(ctx, tx, ids); err != nil {
				return err
			}
		}
		// A statement per figuresBatch rows (UPDATE ... FROM VALUES, on SQLite as on
		// PostgreSQL), not one round trip per site and per transport: the checkpoint's writes
		// were a fifth of a scaled-out controller's CPU (docs/benchmarks.md).
		var rows [][]any
		for id, f := range sites {
			if !fenced[id] {
				rows = append(rows, []any{id, micros(f.LastSeen), int64(f.StoredSeq)})
			}
		}
		if err := s.updateFrom(ctx, tx, "UPDATE sites SET last_seen = v.column2, stored_seq = v.column3 FROM (VALUES %s) AS v WHERE sites.id = v.column1",
			"(CAST(? AS TEXT), CAST(? AS BIGINT), CAST(? AS BIGINT))", rows); err != nil {
			return err
		}
		rows = rows[:0]
		for _, f := range fs {
			if !fenced[f.SiteID] {
				rows = append(rows, []any{f.SiteID, f.Name, f.Status, f.LatencyMs, f.LossPct, f.JitterMs, micros(f.At)})
			}
		}
		return s.updateFrom(ctx, tx, "UPDATE transports SET status = v.column3, latency_ms = v.column4, loss_pct = v.column5, jitter_ms = v.column6, last_sample_at = v.column7 "+
			"FROM (VALUES %s) AS v WHERE transports.site_id = v.column1 AND transports.name = v.column2",
			"(CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS DOUBLE PRECISION), CAST(? AS DOUBLE PRECISION), CAST(? AS DOUBLE PRECISION), CAST(? AS BIGINT))", rows)
	})
	if err != nil {
		return fmt.Errorf("store.SaveFigures: %w", err)
	}
	if err := fencedError(fenced); err != nil {
		return fmt.Errorf("store.SaveFigures: %w", err)
	}
	return nil
}

// figuresBatch is how many rows one statement of updateFrom updates: 7 placeholders a row
// for transports, well under both engines' limits.
const figuresBatch = 256

// updateFrom runs query (with %s for the VALUES list) for rows, figuresBatch rows per
// statement, row being the placeholders of one row (with casts: PostgreSQL does not infer the
// types of a VALUES list's parameters). The list's columns are column1, column2, ... on both
// engines (SQLite has no column list after the alias).
func (s *Store) updateFrom(ctx context.Context, tx *sql.Tx, query, row string, rows [][]any) error {
	for chunk := range slices.Chunk(rows, figuresBatch) {
		args := make([]any, 0, len(chunk)*len(chunk[0]))
		for _, r := range chunk {
			args = append(args, r...)
		}
		values := row + strings.Repeat(", "+row, len(chunk)-1)
		if _, err := tx.ExecContext(ctx, s.q(fmt.Sprintf(query, values)), args...); err != nil {
			return err
		}
	}
	return nil
}

// LiveSites returns every claimed, not decommissioned site with its transports: what the
// ingest engine loads at start.
func (s *Store) LiveSites(ctx context.Context) ([]*sdwan.Site, error) {
	var sites []*sdwan.Site
	err := s.queryRows(ctx, "SELECT "+siteCols+" FROM sites WHERE claimed_at <> 0 AND status <> ?", []any{sdwan.SiteDecommissioned}, func(r *sql.Rows) error {
		site, err := scanSite(r)
		if err != nil && site != nil {
			quarantine(site, err)
			err = nil
		}
		if err == nil {
			sites = append(sites, site)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store.LiveSites: %w", err)
	}
	byID := make(map[string]*sdwan.Site, len(sites))
	for _, site := range sites {
		byID[site.ID] = site
	}
	// A transport row that does not decode quarantines its site, not the whole start.
	err = s.queryRows(ctx, "SELECT "+transportCols+" FROM transports ORDER BY site_id, name", nil, func(r *sql.Rows) error {
		t, err := scanTransport(r)
		switch {
		case err == nil && byID[t.SiteID] != nil:
			byID[t.SiteID].Transports = append(byID[t.SiteID].Transports, t)
		case err != nil && t != nil && byID[t.SiteID] != nil:
			quarantine(byID[t.SiteID], err)
		case err != nil && t != nil:
			// a bad row of a site that is not followed
		case err != nil:
			return err
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store.LiveSites: %w", err)
	}
	return sites, nil
}

const policyCols = "id, name, type, description, published_version, require_simulation_minutes, created_at, updated_at"

func scanPolicy(sc interface{ Scan(...any) error }) (*sdwan.Policy, error) {
	var p sdwan.Policy
	var c, u int64
	if err := sc.Scan(&p.ID, &p.Name, &p.Type, &p.Description, &p.PublishedVersion, &p.RequireSimulationMinutes, &c, &u); err != nil {
		return nil, err
	}
	p.CreatedAt, p.UpdatedAt = fromMicros(c), fromMicros(u)
	return &p, nil
}

// CreatePolicy stores a policy and, if v is not nil, its first version.
func (s *Store) CreatePolicy(ctx context.Context, p *sdwan.Policy, v *sdwan.Version) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, s.q("INSERT INTO policies ("+policyCols+") VALUES (?, ?, ?, ?, ?, ?, ?, ?)"),
			p.ID, p.Name, p.Type, p.Description, p.PublishedVersion, p.RequireSimulationMinutes, micros(p.CreatedAt), micros(p.UpdatedAt))
		if isUnique(err) {
			return apierr.Conflict("a policy named %q exists already", p.Name)
		}
		if err != nil || v == nil {
			return err
		}
		return s.insertVersion(ctx, tx, sdwanVersions, p.ID, v)
	})
	if err != nil {
		return fmt.Errorf("store.CreatePolicy: %w", err)
	}
	return nil
}

// AddVersion stores v as the policy's next version and sets v.Version.
func (s *Store) AddVersion(ctx context.Context, policyID string, v *sdwan.Version) error {
	if err := s.tx(ctx, func(tx *sql.Tx) error { return s.appendVersion(ctx, tx, sdwanVersions, policyID, v) }); err != nil {
		return fmt.Errorf("store.AddVersion: %w", err)
	}
	return nil
}

// GetPolicy returns a policy with its versions (oldest first) and the sites running it.
func (s *Store) GetPolicy(ctx context.Context, id string) (*sdwan.Policy, error) {
	p, err := scanPolicy(s.r.QueryRowContext(ctx, s.q("SELECT "+policyCols+" FROM policies WHERE id = ?"), id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("policy", id)
	}
	if err != nil {
		return nil, fmt.Errorf("store.GetPolicy: %w", err)
	}
	if err := s.fillPolicies(ctx, []*sdwan.Policy{p}); err != nil {
		return nil, err
	}
	return p, nil
}

// fillPolicies loads the versions and rollout of policies.
func (s *Store) fillPolicies(ctx context.Context, ps []*sdwan.Policy) error {
	for _, p := range ps {
		p.Rollout = []*sdwan.Rollout{}
		var err error
		if p.Versions, err = s.versionsOf(ctx, sdwanVersions, p.ID); err != nil {
			return err
		}
		err = s.queryRows(ctx, "SELECT site_id, policy_id, type, version, state, reason, change_id, updated_at FROM site_policies WHERE policy_id = ? ORDER BY site_id", []any{p.ID}, func(r *sql.Rows) error {
			ro, err := scanRollout(r)
			p.Rollout = append(p.Rollout, ro)
			return err
		})
		if err != nil {
			return fmt.Errorf("store: policy rollout: %w", err)
		}
	}
	return nil
}

func scanRollout(sc interface{ Scan(...any) error }) (*sdwan.Rollout, error) {
	var ro sdwan.Rollout
	var u int64
	if err := sc.Scan(&ro.SiteID, &ro.PolicyID, &ro.Type, &ro.Version, &ro.State, &ro.Reason, &ro.ChangeID, &u); err != nil {
		return nil, err
	}
	ro.UpdatedAt = fromMicros(u)
	return &ro, nil
}

// ListPolicies lists policies with their versions.
func (s *Store) ListPolicies(ctx context.Context, p page.Params, typ string) ([]*sdwan.Policy, error) {
	l := listQuery{cols: policyCols, from: "policies", params: p}
	l.filter("type", typ)
	query, args := l.sql()
	var out []*sdwan.Policy
	err := s.queryRows(ctx, query, args, func(r *sql.Rows) error {
		pol, err := scanPolicy(r)
		out = append(out, pol)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store.ListPolicies: %w", err)
	}
	return out, s.fillPolicies(ctx, out)
}

// PublishPolicy implements sdwan.Store.
func (s *Store) PublishPolicy(ctx context.Context, policyID string, version int, sites []string, typ string, c *sdwan.Change) error {
	at := micros(c.CreatedAt)
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.q("UPDATE policy_versions SET status = ? WHERE policy_id = ? AND status = ? AND version <> ?"),
			sdwan.VersionSuperseded, policyID, sdwan.VersionPublished, version); err != nil {
			return err
		}
		if err := s.markPublished(ctx, tx, sdwanVersions, policyID, version, c.CreatedAt); err != nil {
			return err
		}
		for _, site := range sites {
			if _, err := tx.ExecContext(ctx, s.q("INSERT INTO site_policies (site_id, type, policy_id, version, state, reason, change_id, updated_at) VALUES (?, ?, ?, ?, ?, '', ?, ?) "+
				"ON CONFLICT (site_id, type) DO UPDATE SET policy_id = excluded.policy_id, version = excluded.version, state = excluded.state, reason = '', change_id = excluded.change_id, updated_at = excluded.updated_at"),
				site, typ, policyID, version, sdwan.RolloutPending, c.ID, at); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, s.q("INSERT INTO changes (id, kind, actor, target, version, from_version, sites, diff, comment, simulation_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"),
			c.ID, c.Kind, c.Actor, c.Target, c.Version, c.FromVersion, jsonText(c.Sites), jsonText(c.Diff), c.Comment, c.Simulation, at, at)
		return err
	})
	if err != nil {
		return fmt.Errorf("store.PublishPolicy: %w", err)
	}
	return nil
}

// ListChanges lists change records, optionally for one target.
func (s *Store) ListChanges(ctx context.Context, p page.Params, target string) ([]*sdwan.Change, error) {
	l := listQuery{cols: "id, kind, actor, target, version, from_version, sites, diff, comment, simulation_id, created_at, updated_at", from: "changes", params: p}
	l.filter("kind", "policy.published") // the SD-WAN family's changes only
	l.filter("target", target)
	query, args := l.sql()
	var out []*sdwan.Change
	err := s.queryRows(ctx, query, args, func(r *sql.Rows) error {
		var c sdwan.Change
		var sites, diff string
		var cr, up int64
		if err := r.Scan(&c.ID, &c.Kind, &c.Actor, &c.Target, &c.Version, &c.FromVersion, &sites, &diff, &c.Comment, &c.Simulation, &cr, &up); err != nil {
			return err
		}
		_ = json.Unmarshal([]byte(sites), &c.Sites)
		_ = json.Unmarshal([]byte(diff), &c.Diff)
		c.CreatedAt, c.UpdatedAt = fromMicros(cr), fromMicros(up)
		out = append(out, &c)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store.ListChanges: %w", err)
	}
	return out, nil
}

// Assignments returns the policy versions a site runs, with their content.
func (s *Store) Assignments(ctx context.Context, siteID string) ([]*sdwan.Assignment, error) {
	var out []*sdwan.Assignment
	err := s.queryRows(ctx, assignmentsSQL+"sp.site_id = ? ORDER BY sp.type", []any{siteID}, func(r *sql.Rows) error {
		a, err := scanAssignment(r)
		if err == nil {
			out = append(out, a)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store.Assignments: %w", err)
	}
	return out, nil
}

// assignmentsSQL is Assignments' query up to its WHERE condition.
const assignmentsSQL = `SELECT sp.site_id, sp.policy_id, sp.type, sp.version, sp.state, sp.reason, sp.change_id, sp.updated_at, v.content
FROM site_policies sp JOIN policy_versions v ON v.policy_id = sp.policy_id AND v.version = sp.version
WHERE `

func scanAssignment(r *sql.Rows) (*sdwan.Assignment, error) {
	var a sdwan.Assignment
	var u int64
	var content string
	if err := r.Scan(&a.SiteID, &a.PolicyID, &a.Type, &a.Version, &a.State, &a.Reason, &a.ChangeID, &u, &content); err != nil {
		return nil, err
	}
	a.UpdatedAt, a.Content = fromMicros(u), json.RawMessage(content)
	return &a, nil
}

// AssignmentsOf returns what Assignments does for each of ids, keyed by site (a site running
// nothing is absent), in one query: the replay's batch read (see SitesByID).
func (s *Store) AssignmentsOf(ctx context.Context, ids []string) (map[string][]*sdwan.Assignment, error) {
	out := make(map[string][]*sdwan.Assignment, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	in, args := inList(ids)
	err := s.queryRows(ctx, assignmentsSQL+"sp.site_id IN "+in+" ORDER BY sp.site_id, sp.type", args, func(r *sql.Rows) error {
		a, err := scanAssignment(r)
		if err == nil {
			out[a.SiteID] = append(out[a.SiteID], a)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store.AssignmentsOf: %w", err)
	}
	return out, nil
}

// SetRollout records an agent's acknowledgement; it reports false when the site no longer
// runs that version (a late ack of an older version is ignored). It is fenced (SetFence).
func (s *Store) SetRollout(ctx context.Context, siteID, policyID string, version int, state, reason string, at time.Time) (bool, error) {
	var n int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if err := s.fenceAll(ctx, tx, siteID); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, s.q("UPDATE site_policies SET state = ?, reason = ?, updated_at = ? WHERE site_id = ? AND policy_id = ? AND version = ?"),
			state, reason, micros(at), siteID, policyID, version)
		if err != nil {
			return err
		}
		n, _ = res.RowsAffected()
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("store.SetRollout: %w", err)
	}
	return n > 0, nil
}

// InsertEvents stores events and their deliveries in one transaction. With a fence
// (SetFence), events about a site ("site" in their data) are written only while this
// controller holds that site's lease: if any site of the batch is fenced, nothing is written.
func (s *Store) InsertEvents(ctx context.Context, evs ...*event.Envelope) (int, error) {
	var n int
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if s.fence != nil {
			if err := s.fenceAll(ctx, tx, eventSites(evs)...); err != nil {
				return err
			}
		}
		var err error
		n, err = s.insertEvents(ctx, tx, evs)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store.InsertEvents: %w", err)
	}
	return n, nil
}

// ListEvents lists stored events of f's types (the SD-WAN family's), ordered by creation.
func (s *Store) ListEvents(ctx context.Context, p page.Params, f sdwan.EventFilter) ([]*event.Envelope, error) {
	if len(f.Types) == 0 {
		return nil, nil
	}
	// events has created_at, not updated_at: the inner select names it for the list's keyset
	// (both databases flatten it, so the events_created index still serves the order).
	marks := strings.TrimSuffix(strings.Repeat("?, ", len(f.Types)), ", ")
	inner := "SELECT id, type, data, created_at AS updated_at FROM events WHERE type IN (" + marks + ")"
	args := make([]any, 0, len(f.Types)+1)
	for _, t := range f.Types {
		args = append(args, t)
	}
	if f.Site != "" {
		// Event data is compact JSON with the site under "site"; a site ID has no LIKE wildcard
		// but "_", which is escaped.
		inner += ` AND data LIKE ? ESCAPE '\'`
		args = append(args, `%"site":"`+strings.ReplaceAll(f.Site, "_", `\_`)+`"%`)
	}
	l := listQuery{cols: "id, type, data, updated_at", from: "(" + inner + ") ev", params: p}
	query, largs := l.sql()
	var out []*event.Envelope
	err := s.queryRows(ctx, query, append(args, largs...), func(r *sql.Rows) error {
		var e event.Envelope
		var data string
		var at int64
		if err := r.Scan(&e.ID, &e.Type, &data, &at); err != nil {
			return err
		}
		e.Data, e.CreatedAt = json.RawMessage(data), fromMicros(at)
		out = append(out, &e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store.ListEvents: %w", err)
	}
	return out, nil
}
