package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/edgewan/edgewan/coreapi/policyver"
	q "github.com/edgewan/edgewan/coreapi/quarantine"
)

// versionTables names one family's policies and their versions (the lifecycle both families
// share, coreapi/policyver): the SD-WAN family's or the AI gateway's.
type versionTables struct{ policies, versions string }

var (
	sdwanVersions = versionTables{policies: "policies", versions: "policy_versions"}
	aigwVersions  = versionTables{policies: "aigw_policies", versions: "aigw_policy_versions"}
)

// insertVersion writes v as it is (its number included).
func (s *Store) insertVersion(ctx context.Context, tx *sql.Tx, vt versionTables, policyID string, v *policyver.Version) error {
	_, err := tx.ExecContext(ctx, s.q("INSERT INTO "+vt.versions+" (policy_id, version, status, content, comment, created_by, created_at, published_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"),
		policyID, v.Version, v.Status, string(v.Content), v.Comment, v.CreatedBy, micros(v.CreatedAt), micros(v.PublishedAt))
	return err
}

// appendVersion stores v as the policy's next version, sets v.Version and touches the policy;
// a policy that does not exist is a not-found error.
func (s *Store) appendVersion(ctx context.Context, tx *sql.Tx, vt versionTables, policyID string, v *policyver.Version) error {
	var last sql.NullInt64
	if err := tx.QueryRowContext(ctx, s.q("SELECT MAX(version) FROM "+vt.versions+" WHERE policy_id = ?"), policyID).Scan(&last); err != nil {
		return err
	}
	v.Version = int(last.Int64) + 1
	res, err := tx.ExecContext(ctx, s.q("UPDATE "+vt.policies+" SET updated_at = ? WHERE id = ?"), micros(v.CreatedAt), policyID)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return notFound("policy", policyID)
	}
	return s.insertVersion(ctx, tx, vt, policyID, v)
}

// versionQuarantine says why a stored version's content cannot be used, or nil.
func versionQuarantine(version int, content string) *q.Quarantine {
	if json.Valid([]byte(content)) {
		return nil
	}
	return q.New(q.Data, fmt.Sprintf("the stored content of version %d is not valid JSON", version))
}

// versionsOf returns the policy's versions, oldest first.
func (s *Store) versionsOf(ctx context.Context, vt versionTables, policyID string) ([]*policyver.Version, error) {
	out := []*policyver.Version{}
	err := s.queryRows(ctx, "SELECT version, status, content, comment, created_by, created_at, published_at FROM "+vt.versions+" WHERE policy_id = ? ORDER BY version",
		[]any{policyID}, func(r *sql.Rows) error {
			var v policyver.Version
			var content string
			var c, pub int64
			if err := r.Scan(&v.Version, &v.Status, &content, &v.Comment, &v.CreatedBy, &c, &pub); err != nil {
				return err
			}
			v.Content, v.CreatedAt, v.PublishedAt = json.RawMessage(content), fromMicros(c), fromMicros(pub)
			if v.Quarantine = versionQuarantine(v.Version, content); v.Quarantine != nil {
				v.Content = json.RawMessage("null") // shown, not a 500 for the whole policy or list
			}
			out = append(out, &v)
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("store: versions of %s: %w", policyID, err)
	}
	return out, nil
}

// markPublished makes version the policy's published one, at. Superseding the version it
// replaces is the caller's: the families differ in what "the previous one" is.
func (s *Store) markPublished(ctx context.Context, tx *sql.Tx, vt versionTables, policyID string, version int, at time.Time) error {
	if _, err := tx.ExecContext(ctx, s.q("UPDATE "+vt.versions+" SET status = ?, published_at = ? WHERE policy_id = ? AND version = ?"),
		policyver.Published, micros(at), policyID, version); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, s.q("UPDATE "+vt.policies+" SET published_version = ?, updated_at = ? WHERE id = ?"), version, micros(at), policyID)
	return err
}
