// Package sink stores transport windows as time series: in InfluxDB (InfluxSink) or, with no
// InfluxDB configured, in an SQLite file of minute and hour rollups in the data dir
// (EmbeddedSink).
//
// Both take whole telemetry.Reports and copy what they need: the caller may reuse a Report
// (telemetry.DecodeReport does) as soon as Write returns.
package sink

import (
	"context"
	"errors"
	"time"

	"github.com/edgewan/edgewan/telemetry"
)

// Sink is a time-series store of telemetry reports.
type Sink interface {
	// Write accepts a validated report; it may buffer it.
	Write(ctx context.Context, r *telemetry.Report) error
	// Flush returns once everything accepted so far is stored, or with ctx's error.
	Flush(ctx context.Context) error
	// Close flushes (within a bounded time) and releases the sink.
	Close() error
}

var (
	_ Sink = (*InfluxSink)(nil)
	_ Sink = (*EmbeddedSink)(nil)
)

// Errors of Write and Flush.
var (
	// ErrClosed: the sink was closed.
	ErrClosed = errors.New("sink closed")
	// ErrOverflow: the sink's buffer is full (its store has been unreachable for long);
	// the report was dropped, and counted.
	ErrOverflow = errors.New("sink buffer full")
	// ErrRejected is returned (wrapped) by Flush when the database refused points for good
	// (malformed or conflicting data): they are dropped, counted and logged.
	ErrRejected = errors.New("points refused by the database")
)

// Sample is one transport window as stored in InfluxDB: one point of measurement "transport".
type Sample struct {
	Site, Device, Transport string    // tags
	Time                    time.Time // end of the window (the report's time)

	LatencyMs float64 // latency_ms: mean RTT
	P95Ms     float64 // p95_ms
	LossPct   float64 // loss_pct
	JitterMs  float64 // jitter_ms
	StdDevMs  float64 // stddev_ms
	Sent      int64   // sent
	Lost      int64   // lost
	Down      bool    // down
}
