package store

import (
	"context"
	"database/sql"
	"fmt"

	q "github.com/edgewan/edgewan/coreapi/quarantine"
)

// Objects that can be quarantined besides sites (the /metrics label).
const (
	ObjectWebhook            = "webhook"
	ObjectSDWANPolicyVersion = "sdwan_policy_version"
	ObjectAIGWPolicyVersion  = "aigw_policy_version"
)

// Quarantined is one stored object the controller cannot use.
type Quarantined struct {
	Object string // one of the Object* constants
	ID     string // the webhook's ID, or "policy_id/version"
	Q      q.Quarantine
}

// QuarantinedObjects lists every stored webhook and policy version (both families) that
// cannot be used, for the controller's report (metrics and SOC cases): the same checks as their
// API representations make.
func (s *Store) QuarantinedObjects(ctx context.Context) ([]Quarantined, error) {
	var out []Quarantined
	ws, err := s.QuarantinedWebhooks(ctx)
	if err != nil {
		return nil, err
	}
	for _, w := range ws {
		out = append(out, Quarantined{Object: ObjectWebhook, ID: w.ID, Q: *w.Quarantine})
	}
	for _, f := range []struct {
		object string
		vt     versionTables
	}{{ObjectSDWANPolicyVersion, sdwanVersions}, {ObjectAIGWPolicyVersion, aigwVersions}} {
		err := s.queryRows(ctx, "SELECT policy_id, version, content FROM "+f.vt.versions+" ORDER BY policy_id, version", nil, func(r *sql.Rows) error {
			var id, content string
			var v int
			if err := r.Scan(&id, &v, &content); err != nil {
				return err
			}
			if vq := versionQuarantine(v, content); vq != nil {
				out = append(out, Quarantined{Object: f.object, ID: fmt.Sprintf("%s/%d", id, v), Q: *vq})
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("store.QuarantinedObjects: %w", err)
		}
	}
	return out, nil
}
