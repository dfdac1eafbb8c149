package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/edgewan/edgewan/coreapi/auth"
)

var _ auth.KeyStore = (*Store)(nil)

const keyCols = "id, name, hash, scopes, project, created_at, updated_at, last_used_at, revoked_at"

func scanKey(sc interface{ Scan(...any) error }) (*auth.Key, string, error) {
	var k auth.Key
	var hash, scopes string
	var created, updated, used, revoked int64
	if err := sc.Scan(&k.ID, &k.Name, &hash, &scopes, &k.Project, &created, &updated, &used, &revoked); err != nil {
		return nil, "", err
	}
	k.Scopes = []string{}
	if scopes != "" {
		k.Scopes = strings.Split(scopes, ",")
	}
	k.CreatedAt, k.UpdatedAt, k.LastUsedAt, k.RevokedAt = fromMicros(created), fromMicros(updated), fromMicros(used), fromMicros(revoked)
	return &k, hash, nil
}

// CreateKey stores a new key with the hash of its secret.
func (s *Store) CreateKey(ctx context.Context, k *auth.Key, hash string) error {
	_, err := s.exec(ctx, "INSERT INTO api_keys ("+keyCols+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
		k.ID, k.Name, hash, strings.Join(k.Scopes, ","), k.Project, micros(k.CreatedAt), micros(k.UpdatedAt), micros(k.LastUsedAt), micros(k.RevokedAt))
	if err != nil {
		return fmt.Errorf("store.CreateKey: %w", err)
	}
	return nil
}

// KeyByID returns a key and its stored hash.
func (s *Store) KeyByID(ctx context.Context, id string) (*auth.Key, string, error) {
	k, hash, err := scanKey(s.r.QueryRowContext(ctx, s.q("SELECT "+keyCols+" FROM api_keys WHERE id = ?"), id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, "", notFound("key", id)
	}
	if err != nil {
		return nil, "", fmt.Errorf("store.KeyByID: %w", err)
	}
	return k, hash, nil
}

// ListKeys lists all keys, newest first.
func (s *Store) ListKeys(ctx context.Context) ([]*auth.Key, error) {
	var out []*auth.Key
	err := s.queryRows(ctx, "SELECT "+keyCols+" FROM api_keys ORDER BY created_at DESC, id DESC", nil, func(r *sql.Rows) error {
		k, _, err := scanKey(r)
		out = append(out, k)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store.ListKeys: %w", err)
	}
	return out, nil
}

// RevokeKey marks a key revoked; revoking twice keeps the first time.
func (s *Store) RevokeKey(ctx context.Context, id string, at time.Time) error {
	res, err := s.exec(ctx, "UPDATE api_keys SET revoked_at = CASE WHEN revoked_at = 0 THEN ? ELSE revoked_at END, updated_at = ? WHERE id = ?",
		micros(at), micros(at), id)
	if err != nil {
		return fmt.Errorf("store.RevokeKey: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return notFound("key", id)
	}
	return nil
}

// TouchKey records a key's last use.
func (s *Store) TouchKey(ctx context.Context, id string, at time.Time) error {
	if _, err := s.exec(ctx, "UPDATE api_keys SET last_used_at = ? WHERE id = ?", micros(at), id); err != nil {
		return fmt.Errorf("store.TouchKey: %w", err)
	}
	return nil
}
