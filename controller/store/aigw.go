package store

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/edgewan/edgewan/aigw/gateway"
	"github.com/edgewan/edgewan/coreapi/apierr"
	"github.com/edgewan/edgewan/coreapi/event"
	"github.com/edgewan/edgewan/coreapi/page"
)

var _ gateway.Store = (*Gateway)(nil)

// Gateway is the AI gateway's view of the store (its method names would clash with the SD-WAN
// family's on Store itself).
type Gateway struct{ *Store }

// Gateway returns the AI gateway's view of the store.
func (s *Store) Gateway() *Gateway { return &Gateway{s} }

const projectCols = "id, store_raw_input, hash_key, policy_id, policy_version, created_at, updated_at"

func scanProject(sc interface{ Scan(...any) error }) (*gateway.Project, error) {
	var p gateway.Project
	var raw int
	var key string
	var c, u int64
	if err := sc.Scan(&p.ID, &raw, &key, &p.PolicyID, &p.PolicyVersion, &c, &u); err != nil {
		return nil, err
	}
	p.StoreRawInput = raw != 0
	p.HashKey, _ = hex.DecodeString(key)
	p.CreatedAt, p.UpdatedAt = fromMicros(c), fromMicros(u)
	return &p, nil
}

// EnsureProject returns a project, creating it with a fresh hash key on first use.
func (s *Gateway) EnsureProject(ctx context.Context, id string, hashKey func() []byte) (*gateway.Project, error) {
	now := micros(time.Now())
	if _, err := s.exec(ctx, "INSERT INTO aigw_projects (id, hash_key, created_at, updated_at) VALUES (?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
		id, hex.EncodeToString(hashKey()), now, now); err != nil {
		return nil, fmt.Errorf("store.EnsureProject: %w", err)
	}
	p, err := scanProject(s.w.QueryRowContext(ctx, s.q("SELECT "+projectCols+" FROM aigw_projects WHERE id = ?"), id))
	if err != nil {
		return nil, fmt.Errorf("store.EnsureProject: %w", err)
	}
	return p, nil
}

// UpdateProject stores a project's settings.
func (s *Gateway) UpdateProject(ctx context.Context, p *gateway.Project) error {
	raw := 0
	if p.StoreRawInput {
		raw = 1
	}
	res, err := s.exec(ctx, "UPDATE aigw_projects SET store_raw_input = ?, updated_at = ? WHERE id = ?", raw, micros(p.UpdatedAt), p.ID)
	if err != nil {
		return fmt.Errorf("store.UpdateProject: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return notFound("project", p.ID)
	}
	return nil
}

const aiPolicyCols = "id, project, name, description, published_version, created_at, updated_at"

func scanAIPolicy(sc interface{ Scan(...any) error }) (*gateway.Policy, error) {
	var p gateway.Policy
	var c, u int64
	if err := sc.Scan(&p.ID, &p.Project, &p.Name, &p.Description, &p.PublishedVersion, &c, &u); err != nil {
		return nil, err
	}
	p.CreatedAt, p.UpdatedAt = fromMicros(c), fromMicros(u)
	return &p, nil
}

// CreatePolicy stores a gateway policy and, if v is not nil, its first version.
func (s *Gateway) CreatePolicy(ctx context.Context, p *gateway.Policy, v *gateway.Version) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, s.q("INSERT INTO aigw_policies ("+aiPolicyCols+") VALUES (?, ?, ?, ?, ?, ?, ?)"),
			p.ID, p.Project, p.Name, p.Description, p.PublishedVersion, micros(p.CreatedAt), micros(p.UpdatedAt))
		if isUnique(err) {
			return apierr.Conflict("project %s already has a policy named %q", p.Project, p.Name)
		}
		if err != nil || v == nil {
			return err
		}
		return s.insertVersion(ctx, tx, aigwVersions, p.ID, v)
	})
	if err != nil {
		return fmt.Errorf("store.CreatePolicy: %w", err)
	}
	return nil
}

// AddVersion stores v as the gateway policy's next version and sets v.Version.
func (s *Gateway) AddVersion(ctx context.Context, policyID string, v *gateway.Version) error {
	if err := s.tx(ctx, func(tx *sql.Tx) error { return s.appendVersion(ctx, tx, aigwVersions, policyID, v) }); err != nil {
		return fmt.Errorf("store.AddVersion: %w", err)
	}
	return nil
}

// GetPolicy returns a gateway policy with its versions.
func (s *Gateway) GetPolicy(ctx context.Context, id string) (*gateway.Policy, error) {
	p, err := scanAIPolicy(s.r.QueryRowContext(ctx, s.q("SELECT "+aiPolicyCols+" FROM aigw_policies WHERE id = ?"), id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("policy", id)
	}
	if err != nil {
		return nil, fmt.Errorf("store.GetPolicy: %w", err)
	}
	return p, s.fillAIPolicies(ctx, []*gateway.Policy{p})
}

func (s *Gateway) fillAIPolicies(ctx context.Context, ps []*gateway.Policy) error {
	for _, p := range ps {
		var err error
		if p.Versions, err = s.versionsOf(ctx, aigwVersions, p.ID); err != nil {
			return err
		}
		var active string
		if err := s.r.QueryRowContext(ctx, s.q("SELECT policy_id FROM aigw_projects WHERE id = ?"), p.Project).Scan(&active); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("store: gateway project: %w", err)
		}
		p.Active = active == p.ID
	}
	return nil
}

// ListPolicies lists a project's gateway policies with their versions.
func (s *Gateway) ListPolicies(ctx context.Context, p page.Params, project string) ([]*gateway.Policy, error) {
	l := listQuery{cols: aiPolicyCols, from: "aigw_policies", params: p}
	l.filter("project", project)
	query, args := l.sql()
	var out []*gateway.Policy
	err := s.queryRows(ctx, query, args, func(r *sql.Rows) error {
		pol, err := scanAIPolicy(r)
		out = append(out, pol)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store.ListPolicies: %w", err)
	}
	return out, s.fillAIPolicies(ctx, out)
}

// ActivatePolicy implements gateway.Store.
func (s *Gateway) ActivatePolicy(ctx context.Context, project, policyID string, version int, c *gateway.Change) error {
	at := micros(c.CreatedAt)
	err := s.tx(ctx, func(tx *sql.Tx) error {
		// The project's previous policy (maybe another one) stops being published.
		if _, err := tx.ExecContext(ctx, s.q(`UPDATE aigw_policy_versions SET status = ? WHERE status = ? AND NOT (policy_id = ? AND version = ?)
AND policy_id IN (SELECT id FROM aigw_policies WHERE project = ?)`), gateway.VersionSuperseded, gateway.VersionPublished, policyID, version, project); err != nil {
			return err
		}
		if err := s.markPublished(ctx, tx, aigwVersions, policyID, version, c.CreatedAt); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.q("UPDATE aigw_projects SET policy_id = ?, policy_version = ?, updated_at = ? WHERE id = ?"), policyID, version, at, project); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, s.q("INSERT INTO changes (id, kind, actor, target, version, from_version, sites, diff, comment, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"),
			c.ID, c.Kind, c.Actor, c.Target, c.Version, c.FromVersion, jsonText([]string{project}), jsonText(c.Diff), c.Comment, at, at)
		return err
	})
	if err != nil {
		return fmt.Errorf("store.ActivatePolicy: %w", err)
	}
	return nil
}

// ListChanges lists a project's gateway change records.
func (s *Gateway) ListChanges(ctx context.Context, p page.Params, project string) ([]*gateway.Change, error) {
	l := listQuery{cols: "id, kind, actor, target, version, from_version, sites, diff, comment, created_at, updated_at", from: "changes", params: p}
	l.filter("kind", "ai_policy.published")
	l.where = append(l.where, "sites = ?")
	l.args = append(l.args, jsonText([]string{project}))
	query, args := l.sql()
	var out []*gateway.Change
	err := s.queryRows(ctx, query, args, func(r *sql.Rows) error {
		var c gateway.Change
		var sites, diff string
		var cr, up int64
		if err := r.Scan(&c.ID, &c.Kind, &c.Actor, &c.Target, &c.Version, &c.FromVersion, &sites, &diff, &c.Comment, &cr, &up); err != nil {
			return err
		}
		c.Project = project
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

const auditCols = "id, seq, project, key_id, kind, model, input, raw_input, output, redactions, findings, policy_id, policy_version, blocked, status, latency_us, created_at, updated_at"

func scanRecord(sc interface{ Scan(...any) error }) (*gateway.Record, error) {
	var r gateway.Record
	var input, reds, finds string
	var blocked int
	var lat, c, u int64
	if err := sc.Scan(&r.ID, &r.Seq, &r.Project, &r.KeyID, &r.Kind, &r.Model, &input, &r.RawInputEnc, &r.Output, &reds, &finds,
		&r.PolicyID, &r.PolicyVersion, &blocked, &r.Status, &lat, &c, &u); err != nil {
		return nil, err
	}
	r.Input = json.RawMessage(input)
	if err := json.Unmarshal([]byte(reds), &r.Redactions); err != nil {
		return nil, fmt.Errorf("audit %s redactions: %w", r.ID, err)
	}
	if err := json.Unmarshal([]byte(finds), &r.Findings); err != nil {
		return nil, fmt.Errorf("audit %s findings: %w", r.ID, err)
	}
	r.Blocked, r.LatencyMs = blocked != 0, float64(lat)/1000
	r.CreatedAt, r.UpdatedAt = fromMicros(c), fromMicros(u)
	return &r, nil
}

// InsertRecords implements gateway.Store.
func (s *Gateway) InsertRecords(ctx context.Context, rs []*gateway.Record, evs []*event.Envelope) (int, error) {
	deliveries := 0
	err := s.tx(ctx, func(tx *sql.Tx) error {
		stmt, err := tx.PrepareContext(ctx, s.q("INSERT INTO aigw_audit ("+auditCols+", entity_types) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"))
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, r := range rs {
			types := map[string]bool{}
			for _, x := range r.Redactions {
				types[x.Type] = true
			}
			var b strings.Builder
			b.WriteByte(',')
			for t := range types {
				b.WriteString(t)
				b.WriteByte(',')
			}
			blocked := 0
			if r.Blocked {
				blocked = 1
			}
			if r.Redactions == nil {
				r.Redactions = []gateway.Redaction{}
			}
			if r.Findings == nil {
				r.Findings = []gateway.Finding{}
			}
			if _, err := stmt.ExecContext(ctx, r.ID, r.Seq, r.Project, r.KeyID, r.Kind, r.Model, string(r.Input), r.RawInputEnc, r.Output,
				jsonText(r.Redactions), jsonText(r.Findings), r.PolicyID, r.PolicyVersion, blocked, r.Status, int64(r.LatencyMs*1000),
				micros(r.CreatedAt), micros(r.UpdatedAt), b.String()); err != nil {
				return err
			}
		}
		deliveries, err = s.insertEvents(ctx, tx, evs)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store.InsertRecords: %w", err)
	}
	return deliveries, nil
}

// MaxAuditSeq returns the highest audit sequence number, 0 when the log is empty.
func (s *Gateway) MaxAuditSeq(ctx context.Context) (int64, error) {
	var n sql.NullInt64
	if err := s.w.QueryRowContext(ctx, "SELECT MAX(seq) FROM aigw_audit").Scan(&n); err != nil {
		return 0, fmt.Errorf("store.MaxAuditSeq: %w", err)
	}
	return n.Int64, nil
}

// ListRecords lists audit records.
func (s *Gateway) ListRecords(ctx context.Context, p page.Params, f gateway.LogFilter) ([]*gateway.Record, error) {
	l := listQuery{cols: auditCols, from: "aigw_audit", params: p}
	l.filter("project", f.Project)
	l.filter("kind", f.Kind)
	if !f.Until.IsZero() {
		l.where = append(l.where, "updated_at <= ?")
		l.args = append(l.args, micros(f.Until))
	}
	if f.Entity != "" {
		l.where = append(l.where, "entity_types LIKE ?")
		l.args = append(l.args, "%,"+f.Entity+",%")
	}
	if f.Blocked != nil {
		b := 0
		if *f.Blocked {
			b = 1
		}
		l.where = append(l.where, "blocked = ?")
		l.args = append(l.args, b)
	}
	var out []*gateway.Record
	err := s.queryList(ctx, l, func(r *sql.Rows) error {
		rec, err := scanRecord(r)
		out = append(out, rec)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store.ListRecords: %w", err)
	}
	return out, nil
}

// GetRecord returns one audit record.
func (s *Gateway) GetRecord(ctx context.Context, id string) (*gateway.Record, error) {
	r, err := scanRecord(s.r.QueryRowContext(ctx, s.q("SELECT "+auditCols+" FROM aigw_audit WHERE id = ?"), id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("audit record", id)
	}
	if err != nil {
		return nil, fmt.Errorf("store.GetRecord: %w", err)
	}
	return r, nil
}

// RecordsAfter returns up to limit audit records with seq above seq, in seq order (the SIEM
// streams' cursor).
func (s *Gateway) RecordsAfter(ctx context.Context, seq int64, limit int) ([]*gateway.Record, error) {
	var out []*gateway.Record
	err := s.queryRows(ctx, "SELECT "+auditCols+" FROM aigw_audit WHERE seq > ? ORDER BY seq LIMIT ?", []any{seq, limit}, func(r *sql.Rows) error {
		rec, err := scanRecord(r)
		out = append(out, rec)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store.RecordsAfter: %w", err)
	}
	return out, nil
}

// ResealAudit implements the gateway's audit key rotation: every sealed raw input and pending
// document upload goes through reseal (the new sealed value, or the same one when the current
// key already opens it; an error leaves it as it is), in one transaction. updated_at is left
// alone: the SIEM streams follow it, and nothing a reader sees has changed.
func (s *Gateway) ResealAudit(ctx context.Context, reseal func(owner, sealed string) (string, error)) (changed int, failed []string, err error) {
	type row struct{ table, col, id, v string }
	var rows []row
	for _, q := range []struct{ table, col string }{{"aigw_audit", "raw_input"}, {"aigw_documents", "blob"}} {
		err := s.queryRows(ctx, "SELECT id, "+q.col+" FROM "+q.table+" WHERE "+q.col+" <> ''", nil, func(r *sql.Rows) error {
			x := row{table: q.table, col: q.col}
			if err := r.Scan(&x.id, &x.v); err != nil {
				return err
			}
			nv, err := reseal(x.id, x.v)
			switch {
			case err != nil:
				failed = append(failed, x.id)
			case nv != x.v:
				x.v = nv
				rows = append(rows, x)
			}
			return nil
		})
		if err != nil {
			return 0, nil, fmt.Errorf("store.ResealAudit: %w", err)
		}
	}
	err = s.tx(ctx, func(tx *sql.Tx) error {
		for _, x := range rows {
			if _, err := tx.ExecContext(ctx, s.q("UPDATE "+x.table+" SET "+x.col+" = ? WHERE id = ?"), x.v, x.id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, failed, fmt.Errorf("store.ResealAudit: %w", err)
	}
	return len(rows), failed, nil
}
