package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/edgewan/edgewan/coreapi/apierr"
	"github.com/edgewan/edgewan/coreapi/event"
	"github.com/edgewan/edgewan/coreapi/page"
	"github.com/edgewan/edgewan/coreapi/soc"
)

var _ soc.Store = (*Store)(nil)

const caseCols = "id, title, description, severity, status, source, rule, subject, created_at, updated_at, resolved_at"

func scanCase(sc interface{ Scan(...any) error }) (*soc.Case, error) {
	var c soc.Case
	var cr, up, res int64
	if err := sc.Scan(&c.ID, &c.Title, &c.Description, &c.Severity, &c.Status, &c.Source, &c.Rule, &c.Subject, &cr, &up, &res); err != nil {
		return nil, err
	}
	c.CreatedAt, c.UpdatedAt, c.ResolvedAt = fromMicros(cr), fromMicros(up), fromMicros(res)
	return &c, nil
}

// openSystemCase is the conflict target of the unique index cases_open_system (migration 24):
// one unresolved case per rule and subject, whichever controller raises it.
const openSystemCase = " ON CONFLICT (rule, subject) WHERE rule <> '' AND status <> 'resolved' DO NOTHING"

// CreateCase stores a new case and the event announcing it. A system case (with a rule) whose
// rule and subject already have an unresolved case, opened by this or another controller, is
// not stored: the error is a conflict (apierr.ErrConflict), and no event is written.
func (s *Store) CreateCase(ctx context.Context, c *soc.Case, ev *event.Envelope) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		q := "INSERT INTO cases (" + caseCols + ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
		if c.Rule != "" {
			q += openSystemCase
		}
		res, err := tx.ExecContext(ctx, s.q(q),
			c.ID, c.Title, c.Description, c.Severity, c.Status, c.Source, c.Rule, c.Subject,
			micros(c.CreatedAt), micros(c.UpdatedAt), micros(c.ResolvedAt))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return apierr.Conflict("an unresolved case for rule %q and subject %q exists already", c.Rule, c.Subject)
		}
		_, err = s.insertEvent(ctx, tx, ev)
		return err
	})
	if err != nil {
		return fmt.Errorf("store.CreateCase: %w", err)
	}
	return nil
}

// GetCase returns a case with its notes, oldest note first.
func (s *Store) GetCase(ctx context.Context, id string) (*soc.Case, error) {
	c, err := scanCase(s.r.QueryRowContext(ctx, s.q("SELECT "+caseCols+" FROM cases WHERE id = ?"), id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("case", id)
	}
	if err != nil {
		return nil, fmt.Errorf("store.GetCase: %w", err)
	}
	c.Notes = []soc.Note{}
	err = s.queryRows(ctx, "SELECT id, author, body, created_at FROM case_notes WHERE case_id = ? ORDER BY created_at, id", []any{id}, func(r *sql.Rows) error {
		var n soc.Note
		var at int64
		if err := r.Scan(&n.ID, &n.Author, &n.Body, &at); err != nil {
			return err
		}
		n.CreatedAt = fromMicros(at)
		c.Notes = append(c.Notes, n)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store.GetCase notes: %w", err)
	}
	return c, nil
}

// UpdateCase stores a case's mutable fields, a new note and the event announcing the change.
func (s *Store) UpdateCase(ctx context.Context, c *soc.Case, note *soc.Note, ev *event.Envelope) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.q("UPDATE cases SET title = ?, severity = ?, status = ?, updated_at = ?, resolved_at = ? WHERE id = ?"),
			c.Title, c.Severity, c.Status, micros(c.UpdatedAt), micros(c.ResolvedAt), c.ID)
		if isUnique(err) { // reopening a system case while a newer one for its rule and subject is open
			return apierr.Conflict("case %s cannot be reopened: an unresolved case for rule %q and subject %q exists; note on that one", c.ID, c.Rule, c.Subject)
		}
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return notFound("case", c.ID)
		}
		if note != nil {
			if _, err := tx.ExecContext(ctx, s.q("INSERT INTO case_notes (id, case_id, author, body, created_at) VALUES (?, ?, ?, ?, ?)"),
				note.ID, c.ID, note.Author, note.Body, micros(note.CreatedAt)); err != nil {
				return err
			}
		}
		_, err = s.insertEvent(ctx, tx, ev)
		return err
	})
	if err != nil {
		return fmt.Errorf("store.UpdateCase: %w", err)
	}
	return nil
}

// ListCases lists cases without their notes.
func (s *Store) ListCases(ctx context.Context, p page.Params, f soc.Filter) ([]*soc.Case, error) {
	l := listQuery{cols: caseCols, from: "cases", params: p}
	l.filter("status", f.Status)
	l.filter("severity", f.Severity)
	l.filter("source", f.Source)
	var out []*soc.Case
	err := s.queryList(ctx, l, func(r *sql.Rows) error {
		c, err := scanCase(r)
		out = append(out, c)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store.ListCases: %w", err)
	}
	return out, nil
}

// OpenCaseFor returns the newest unresolved case opened by rule about subject.
func (s *Store) OpenCaseFor(ctx context.Context, rule, subject string) (*soc.Case, error) {
	c, err := scanCase(s.r.QueryRowContext(ctx, s.q("SELECT "+caseCols+" FROM cases WHERE rule = ? AND subject = ? AND status <> ? ORDER BY created_at DESC LIMIT 1"),
		rule, subject, soc.StatusResolved))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("open case for rule", rule)
	}
	if err != nil {
		return nil, fmt.Errorf("store.OpenCaseFor: %w", err)
	}
	return c, nil
}
