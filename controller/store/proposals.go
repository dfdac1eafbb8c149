package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/edgewan/edgewan/aigw/gateway"
	"github.com/edgewan/edgewan/coreapi/apierr"
	"github.com/edgewan/edgewan/coreapi/event"
	"github.com/edgewan/edgewan/coreapi/page"
)

var _ gateway.ProposalStore = (*Gateway)(nil)

const proposalCols = "id, fingerprint, body, created_at, updated_at"

func scanProposal(sc interface{ Scan(...any) error }) (*gateway.Proposal, error) {
	var id, fp, body string
	var c, u int64
	if err := sc.Scan(&id, &fp, &body, &c, &u); err != nil {
		return nil, err
	}
	var p gateway.Proposal
	if err := json.Unmarshal([]byte(body), &p); err != nil {
		return nil, fmt.Errorf("proposal %s: %w", id, err)
	}
	p.ID, p.Fingerprint, p.CreatedAt, p.UpdatedAt = id, fp, fromMicros(c), fromMicros(u)
	return &p, nil
}

// InsertProposal implements gateway.ProposalStore.
func (s *Gateway) InsertProposal(ctx context.Context, p *gateway.Proposal, ev *event.Envelope) (bool, int, error) {
	ok, n := false, 0
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.q("INSERT INTO aigw_proposals (id, project, fingerprint, status, body, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (project, fingerprint) DO NOTHING"),
			p.ID, p.Project, p.Fingerprint, p.Status, jsonText(p), micros(p.CreatedAt), micros(p.UpdatedAt))
		if err != nil {
			return err
		}
		if k, _ := res.RowsAffected(); k == 0 {
			return nil
		}
		ok = true
		if ev != nil {
			n, err = s.insertEvents(ctx, tx, []*event.Envelope{ev})
		}
		return err
	})
	if err != nil {
		return false, 0, fmt.Errorf("store.InsertProposal: %w", err)
	}
	return ok, n, nil
}

// GetProposal implements gateway.ProposalStore.
func (s *Gateway) GetProposal(ctx context.Context, id string) (*gateway.Proposal, error) {
	p, err := scanProposal(s.r.QueryRowContext(ctx, s.q("SELECT "+proposalCols+" FROM aigw_proposals WHERE id = ?"), id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("proposal", id)
	}
	if err != nil {
		return nil, fmt.Errorf("store.GetProposal: %w", err)
	}
	return p, nil
}

// ListProposals implements gateway.ProposalStore.
func (s *Gateway) ListProposals(ctx context.Context, p page.Params, project, status, kind string) ([]*gateway.Proposal, error) {
	l := listQuery{cols: proposalCols, from: "aigw_proposals", params: p}
	l.filter("project", project)
	l.filter("status", status)
	if kind != "" {
		l.where = append(l.where, "fingerprint LIKE ?")
		l.args = append(l.args, kind+":%")
	}
	var out []*gateway.Proposal
	err := s.queryList(ctx, l, func(r *sql.Rows) error {
		x, err := scanProposal(r)
		out = append(out, x)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store.ListProposals: %w", err)
	}
	return out, nil
}

// ResolveProposal implements gateway.ProposalStore.
func (s *Gateway) ResolveProposal(ctx context.Context, p *gateway.Proposal, newPolicy *gateway.Policy, policyID string, v *gateway.Version) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if newPolicy != nil {
			_, err := tx.ExecContext(ctx, s.q("INSERT INTO aigw_policies ("+aiPolicyCols+") VALUES (?, ?, ?, ?, ?, ?, ?)"),
				newPolicy.ID, newPolicy.Project, newPolicy.Name, newPolicy.Description, 0, micros(newPolicy.CreatedAt), micros(newPolicy.UpdatedAt))
			if isUnique(err) {
				return apierr.Conflict("project %s already has a policy named %q; try again", newPolicy.Project, newPolicy.Name)
			}
			if err != nil {
				return err
			}
		}
		if v != nil {
			if err := s.appendVersion(ctx, tx, aigwVersions, policyID, v); err != nil {
				return err
			}
			p.Resolution.Version = v.Version
		}
		res, err := tx.ExecContext(ctx, s.q("UPDATE aigw_proposals SET status = ?, body = ?, updated_at = ? WHERE id = ? AND status = ?"),
			p.Status, jsonText(p), micros(p.UpdatedAt), p.ID, gateway.ProposalOpen)
		if err != nil {
			return err
		}
		if k, _ := res.RowsAffected(); k == 0 {
			return apierr.Conflict("proposal %s is no longer open", p.ID)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store.ResolveProposal: %w", err)
	}
	return nil
}

// Projects implements gateway.ProposalStore.
func (s *Gateway) Projects(ctx context.Context, since time.Time) ([]string, error) {
	var out []string
	err := s.queryRows(ctx, "SELECT id FROM aigw_projects WHERE EXISTS (SELECT 1 FROM aigw_audit a WHERE a.project = aigw_projects.id AND a.updated_at >= ?) ORDER BY id",
		[]any{micros(since)}, func(r *sql.Rows) error {
			var id string
			if err := r.Scan(&id); err != nil {
				return err
			}
			out = append(out, id)
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("store.Projects: %w", err)
	}
	return out, nil
}

// RecentRecords implements gateway.ProposalStore.
func (s *Gateway) RecentRecords(ctx context.Context, project string, since time.Time, limit int) ([]*gateway.Record, error) {
	var out []*gateway.Record
	err := s.queryRows(ctx, "SELECT "+auditCols+" FROM aigw_audit WHERE project = ? AND updated_at >= ? ORDER BY updated_at DESC, id DESC LIMIT ?",
		[]any{project, micros(since), limit}, func(r *sql.Rows) error {
			rec, err := scanRecord(r)
			out = append(out, rec)
			return err
		})
	if err != nil {
		return nil, fmt.Errorf("store.RecentRecords: %w", err)
	}
	return out, nil
}
