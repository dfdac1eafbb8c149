// Package siem streams the AI gateway's audit log to SIEMs: RFC 5424 syslog over TCP or TLS and
// JSON over HTTP, each sink at least once and at its own pace, from a cursor kept per sink.
package siem

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/edgewan/edgewan/aigw/gateway"
)

// Source is where audit records come from (the store's gateway view).
type Source interface {
	// RecordsAfter returns up to limit records with Seq above seq, in Seq order.
	RecordsAfter(ctx context.Context, seq int64, limit int) ([]*gateway.Record, error)
}

// Sink delivers audit records to one SIEM.
type Sink interface {
	// Name identifies the sink in logs and metrics and keys its cursor; it must be stable across
	// restarts and unique among a Streamer's sinks.
	Name() string
	// Send delivers rs, in order. It returns nil only when every record was accepted; then the
	// cursor moves past them and they are not offered again. Send with no records is a health
	// check: a sink that may have lost records it had accepted (on a broken syslog connection)
	// sends them again then. Send is not called concurrently with itself.
	Send(ctx context.Context, rs []*gateway.Record) error
	// Close releases the sink's connections; later Sends fail.
	Close() error
}

// CursorStore keeps each sink's cursor: the Seq of the last record it accepted.
type CursorStore interface {
	// Cursor returns the sink's cursor, 0 when it has none yet.
	Cursor(ctx context.Context, sink string) (int64, error)
	// SetCursor durably stores the sink's cursor.
	SetCursor(ctx context.Context, sink string, seq int64) error
}

// ErrClosed is returned by Send on a closed sink.
var ErrClosed = errors.New("siem: sink closed")

// wireRecord is a record as the sinks send it: gateway.Record's JSON, never the raw input.
type wireRecord struct {
	*gateway.Record
	// RawInput shadows the record's field of the same JSON name: raw inputs never leave the
	// controller, whatever a caller filled in.
	RawInput  string `json:"raw_input,omitempty"`
	Truncated bool   `json:"truncated,omitempty"` // input and output left out to fit a size limit
}

// encodeRecord appends r's JSON (without a trailing newline) to the encoder's buffer: in full,
// or, when truncate is set, without input and output.
func encodeRecord(enc *json.Encoder, r *gateway.Record, truncate bool) error {
	if !truncate {
		return enc.Encode(wireRecord{Record: r})
	}
	c := *r
	c.Input, c.Output = nil, ""
	return enc.Encode(wireRecord{Record: &c, Truncated: true})
}
