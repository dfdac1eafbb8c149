package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/edgewan/edgewan/aigw/gateway"
	"github.com/edgewan/edgewan/coreapi/event"
	"github.com/edgewan/edgewan/coreapi/page"
)

var _ gateway.DocumentStore = (*Gateway)(nil)

const documentCols = "id, body, created_at, updated_at"

func scanDocument(sc interface{ Scan(...any) error }) (*gateway.Document, error) {
	var id, body string
	var c, u int64
	if err := sc.Scan(&id, &body, &c, &u); err != nil {
		return nil, err
	}
	var d gateway.Document
	if err := json.Unmarshal([]byte(body), &d); err != nil {
		return nil, fmt.Errorf("document %s: %w", id, err)
	}
	d.ID, d.CreatedAt, d.UpdatedAt = id, fromMicros(c), fromMicros(u)
	return &d, nil
}

// InsertDocument implements gateway.DocumentStore.
func (s *Gateway) InsertDocument(ctx context.Context, d *gateway.Document, work, blob string, evs []*event.Envelope) (int, error) {
	n := 0
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.q("INSERT INTO aigw_documents (id, project, status, work, body, blob, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"),
			d.ID, d.Project, d.Status, work, jsonText(d), blob, micros(d.CreatedAt), micros(d.UpdatedAt)); err != nil {
			return err
		}
		var err error
		n, err = s.insertEvents(ctx, tx, evs)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store.InsertDocument: %w", err)
	}
	return n, nil
}

// FinishDocument implements gateway.DocumentStore.
func (s *Gateway) FinishDocument(ctx context.Context, d *gateway.Document, claimedUntil time.Time, work string, evs []*event.Envelope) (bool, int, error) {
	ok, n := false, 0
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.q("UPDATE aigw_documents SET status = ?, work = ?, claimed_until = 0, body = ?, blob = CASE WHEN ? = 'extract' THEN blob ELSE '' END, updated_at = ? WHERE id = ? AND claimed_until = ?"),
			d.Status, work, jsonText(d), work, micros(d.UpdatedAt), d.ID, micros(claimedUntil))
		if err != nil {
			return err
		}
		if k, _ := res.RowsAffected(); k == 0 {
			return nil // another worker's lease: its outcome stands
		}
		ok = true
		n, err = s.insertEvents(ctx, tx, evs)
		return err
	})
	if err != nil {
		return false, 0, fmt.Errorf("store.FinishDocument: %w", err)
	}
	return ok, n, nil
}

// GetDocument implements gateway.DocumentStore.
func (s *Gateway) GetDocument(ctx context.Context, id string) (*gateway.Document, error) {
	d, err := scanDocument(s.r.QueryRowContext(ctx, s.q("SELECT "+documentCols+" FROM aigw_documents WHERE id = ?"), id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("document", id)
	}
	if err != nil {
		return nil, fmt.Errorf("store.GetDocument: %w", err)
	}
	return d, nil
}

// ListDocuments implements gateway.DocumentStore. The type filter reads the body, the
// others have columns.
func (s *Gateway) ListDocuments(ctx context.Context, p page.Params, f gateway.DocumentFilter) ([]*gateway.Document, error) {
	l := listQuery{cols: documentCols, from: "aigw_documents", params: p}
	l.filter("project", f.Project)
	l.filter("status", f.Status)
	if f.Type != "" {
		l.where = append(l.where, "body LIKE ?")
		l.args = append(l.args, `%"type":"`+f.Type+`"%`)
	}
	var out []*gateway.Document
	err := s.queryList(ctx, l, func(r *sql.Rows) error {
		d, err := scanDocument(r)
		out = append(out, d)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store.ListDocuments: %w", err)
	}
	return out, nil
}

// ClaimDocument implements gateway.DocumentStore.
func (s *Gateway) ClaimDocument(ctx context.Context, now, until time.Time) (*gateway.ClaimedDocument, error) {
	var cd *gateway.ClaimedDocument
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var id, work, body, blob string
		var attempts int
		var c, u int64
		err := tx.QueryRowContext(ctx, s.q("SELECT id, work, attempts, body, blob, created_at, updated_at FROM aigw_documents WHERE work <> '' AND claimed_until < ? ORDER BY created_at, id LIMIT 1"),
			micros(now)).Scan(&id, &work, &attempts, &body, &blob, &c, &u)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		// The lease is taken only if nobody took it since the SELECT (PostgreSQL runs
		// transactions concurrently; SQLite's are serial).
		res, err := tx.ExecContext(ctx, s.q("UPDATE aigw_documents SET claimed_until = ?, attempts = attempts + 1 WHERE id = ? AND claimed_until < ?"),
			micros(until), id, micros(now))
		if err != nil {
			return err
		}
		if k, _ := res.RowsAffected(); k == 0 {
			return nil
		}
		var d gateway.Document
		if err := json.Unmarshal([]byte(body), &d); err != nil {
			return fmt.Errorf("document %s: %w", id, err)
		}
		d.ID, d.CreatedAt, d.UpdatedAt = id, fromMicros(c), fromMicros(u)
		cd = &gateway.ClaimedDocument{Doc: &d, Work: work, Blob: blob, Attempts: attempts + 1, ClaimedUntil: fromMicros(micros(until))}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store.ClaimDocument: %w", err)
	}
	return cd, nil
}

// ReleaseDocument implements gateway.DocumentStore.
func (s *Gateway) ReleaseDocument(ctx context.Context, id string, claimedUntil time.Time) error {
	if _, err := s.exec(ctx, "UPDATE aigw_documents SET claimed_until = 0, attempts = attempts - 1 WHERE id = ? AND claimed_until = ?", id, micros(claimedUntil)); err != nil {
		return fmt.Errorf("store.ReleaseDocument: %w", err)
	}
	return nil
}
