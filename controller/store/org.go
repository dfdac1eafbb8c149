package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/edgewan/edgewan/coreapi/ids"
	"github.com/edgewan/edgewan/coreapi/org"
	"github.com/edgewan/edgewan/coreapi/page"
)

var _ org.Store = (*Store)(nil)

// Setting returns the value stored under key, creating it with gen() if absent. The first
// writer wins, so every controller sharing a database gets the same value.
func (s *Store) Setting(ctx context.Context, key string, gen func() string) (string, error) {
	if _, err := s.exec(ctx, "INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING", key, gen()); err != nil {
		return "", fmt.Errorf("store.Setting %s: %w", key, err)
	}
	var v string
	if err := s.w.QueryRowContext(ctx, s.q("SELECT value FROM settings WHERE key = ?"), key).Scan(&v); err != nil {
		return "", fmt.Errorf("store.Setting %s: %w", key, err)
	}
	return v, nil
}

// SetSetting replaces a setting's value.
func (s *Store) SetSetting(ctx context.Context, key, value string) error {
	if _, err := s.exec(ctx, "UPDATE settings SET value = ? WHERE key = ?", value, key); err != nil {
		return fmt.Errorf("store.SetSetting %s: %w", key, err)
	}
	return nil
}

// EnsureOrg creates the organisation on first start; a non-empty name different from the
// stored one renames it.
func (s *Store) EnsureOrg(ctx context.Context, name string) (*org.Org, error) {
	o, err := s.Org(ctx)
	if err == nil {
		if name != "" && name != o.Name {
			o.Name, o.UpdatedAt = name, time.Now().UTC()
			if _, err := s.exec(ctx, "UPDATE org SET name = ?, updated_at = ? WHERE id = ?", o.Name, micros(o.UpdatedAt), o.ID); err != nil {
				return nil, fmt.Errorf("store.EnsureOrg: %w", err)
			}
		}
		return o, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	if name == "" {
		name = "edgewan"
	}
	now := time.Now().UTC()
	o = &org.Org{ID: ids.New("org"), Name: name, CreatedAt: now, UpdatedAt: now}
	if _, err := s.exec(ctx, "INSERT INTO org (id, name, created_at, updated_at) VALUES (?, ?, ?, ?)", o.ID, o.Name, micros(now), micros(now)); err != nil {
		return nil, fmt.Errorf("store.EnsureOrg: %w", err)
	}
	return o, nil
}

// Org returns the organisation (sql.ErrNoRows before EnsureOrg ran).
func (s *Store) Org(ctx context.Context) (*org.Org, error) {
	var o org.Org
	var c, u int64
	err := s.r.QueryRowContext(ctx, "SELECT id, name, created_at, updated_at FROM org ORDER BY created_at LIMIT 1").Scan(&o.ID, &o.Name, &c, &u)
	if err != nil {
		return nil, fmt.Errorf("store.Org: %w", err)
	}
	o.CreatedAt, o.UpdatedAt = fromMicros(c), fromMicros(u)
	return &o, nil
}

const deviceCols = "id, site_id, name, serial, status, version, last_seen, created_at, updated_at"

// PutDevice inserts a device or replaces the stored one with the same ID.
func (s *Store) PutDevice(ctx context.Context, d *org.Device) error {
	_, err := s.exec(ctx, "INSERT INTO devices ("+deviceCols+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "+
		"ON CONFLICT (id) DO UPDATE SET site_id = excluded.site_id, name = excluded.name, serial = excluded.serial, "+
		"status = excluded.status, version = excluded.version, last_seen = excluded.last_seen, updated_at = excluded.updated_at",
		d.ID, d.SiteID, d.Name, d.Serial, d.Status, d.Version, micros(d.LastSeen), micros(d.CreatedAt), micros(d.UpdatedAt))
	if err != nil {
		return fmt.Errorf("store.PutDevice: %w", err)
	}
	return nil
}

// ListDevices lists devices, filtered by status and site.
func (s *Store) ListDevices(ctx context.Context, p page.Params, f org.DeviceFilter) ([]*org.Device, error) {
	l := listQuery{cols: deviceCols, from: "devices", params: p}
	l.filter("status", f.Status)
	l.filter("site_id", f.SiteID)
	query, args := l.sql()
	var out []*org.Device
	err := s.queryRows(ctx, query, args, func(r *sql.Rows) error {
		var d org.Device
		var seen, c, u int64
		if err := r.Scan(&d.ID, &d.SiteID, &d.Name, &d.Serial, &d.Status, &d.Version, &seen, &c, &u); err != nil {
			return err
		}
		d.LastSeen, d.CreatedAt, d.UpdatedAt = fromMicros(seen), fromMicros(c), fromMicros(u)
		out = append(out, &d)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store.ListDevices: %w", err)
	}
	return out, nil
}
