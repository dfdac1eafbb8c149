package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// SIEMCursors keeps the SIEM streams' cursors in the database (siem.CursorStore), shared by
// every controller: the scaled-out mode's stream runs on one controller at a time and continues
// where the previous one stopped.
type SIEMCursors struct{ s *Store }

// SIEMCursors returns the database's SIEM cursor store.
func (s *Store) SIEMCursors() *SIEMCursors { return &SIEMCursors{s} }

// Cursor implements siem.CursorStore: 0 when the sink has none yet.
func (c *SIEMCursors) Cursor(ctx context.Context, sink string) (int64, error) {
	var seq int64
	err := c.s.w.QueryRowContext(ctx, c.s.q("SELECT seq FROM siem_cursors WHERE sink = ?"), sink).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("store.Cursor: %w", err)
	}
	return seq, nil
}

// SetCursor implements siem.CursorStore. A cursor only moves forward: a stream that ran on a
// controller which lost the job lease while a send was in flight cannot move it back.
func (c *SIEMCursors) SetCursor(ctx context.Context, sink string, seq int64) error {
	_, err := c.s.exec(ctx, `INSERT INTO siem_cursors (sink, seq, updated_at) VALUES (?, ?, ?)
ON CONFLICT (sink) DO UPDATE SET seq = excluded.seq, updated_at = excluded.updated_at WHERE siem_cursors.seq < excluded.seq`,
		sink, seq, time.Now().UnixMicro())
	if err != nil {
		return fmt.Errorf("store.SetCursor: %w", err)
	}
	return nil
}
