package sink

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/edgewan/edgewan/telemetry"
)

// Defaults for EmbeddedOptions fields left zero.
const (
	DefaultEmbeddedFile          = "telemetry.db"
	DefaultEmbeddedFlushInterval = time.Minute
	DefaultEmbeddedPruneInterval = time.Hour
	DefaultMinuteRetention       = 7 * 24 * time.Hour
	DefaultHourRetention         = 400 * 24 * time.Hour
	DefaultEmbeddedMaxUnflushed  = 1_000_000
)

// EmbeddedOptions configure an EmbeddedSink. Only DataDir is required.
type EmbeddedOptions struct {
	DataDir string // the database is DataDir/File
	File    string // "" means DefaultEmbeddedFile

	FlushInterval   time.Duration // how often rollups are written; 0 means DefaultEmbeddedFlushInterval
	PruneInterval   time.Duration // how often expired rows are deleted; 0 means default, negative never (call Prune)
	MinuteRetention time.Duration // how long minute rows are kept; 0 means DefaultMinuteRetention
	HourRetention   time.Duration // how long hour rows are kept; 0 means DefaultHourRetention
	// MaxUnflushed bounds the rollup rows held in memory when writing them to the database
	// fails (disk full, say); past it the oldest are dropped and counted. 0 means default.
	MaxUnflushed int

	Now    func() time.Time // clock for the background pruning; nil means time.Now
	Logger *slog.Logger     // nil means slog.Default()
}

// Rollup is a transport's aggregate over one minute or one hour, as History returns it.
// Latency figures are means over answered probes (each window weighted by its answered probes).
type Rollup struct {
	Site, Transport string
	Time            time.Time     // start of the period
	Resolution      time.Duration // time.Minute or time.Hour

	Windows     int64   // transport windows aggregated
	Sent, Lost  int64   // probes
	LossPct     float64 // Lost / Sent in percent
	LatencyMs   float64 // mean RTT
	P95Ms       float64 // mean of the windows' p95
	JitterMs    float64 // mean of the windows' jitter
	StdDevMs    float64 // mean of the windows' standard deviation
	MinMs       float64 // lowest RTT
	MaxMs       float64 // highest RTT
	DownWindows int64   // windows the agent reported the transport down
}

// EmbeddedStats count an EmbeddedSink's work since it was made.
type EmbeddedStats struct {
	Windows     int64 // transport windows written
	RowsFlushed int64 // minute rows written (each also updates an hour row)
	Dropped     int64 // minute rows dropped after failed flushes (MaxUnflushed)
	Pruned      int64 // rows deleted by Prune
	Compacted   int64 // minute rows moved into hour blocks
}

// EmbeddedSink keeps telemetry history in its own SQLite file (WAL) in the data dir, without
// InfluxDB: 1-minute and 1-hour rollups per site and transport (windows of all the site's
// devices together), bucketed by the report's time. Write aggregates in memory; a goroutine
// writes the rollups every FlushInterval (Flush and Close do too) and prunes rows past their
// retention every PruneInterval. Rows are merged on write, so late reports (an agent
// replaying its spool) land in the right minute. A crash loses at most the unflushed interval
// of this store; the controller publishes its stored watermark only after a flush, so agents
// send that interval again (docs/telemetry.md).
type EmbeddedSink struct {
	opts EmbeddedOptions
	log  *slog.Logger
	db   *sql.DB
	path string

	mu      sync.Mutex // guards the in-memory rollups and closed
	entries map[seriesKey]*entry
	closed  bool

	flushMu sync.Mutex // one writer at a time: flushes and prunes
	rows    []minuteRow
	unsaved []minuteRow // of failed flushes, retried first

	statsMu sync.Mutex
	stats   EmbeddedStats

	// The statements of scanMinutes for every transport (the replay's), prepared once.
	minuteRows, minuteBlocks *sql.Stmt

	stop chan struct{}
	done chan struct{}
}

type seriesKey struct{ site, transport string }

type entry struct {
	key  seriesKey
	aggs []agg // one per minute with unflushed data, usually one
}

// agg is a mergeable rollup: sums and extremes.
type agg struct {
	ts                            int64 // unix seconds at the start of the period
	windows, sent, lost, down     int64
	latSum, p95Sum, jitSum, sdSum float64 // weighted by answered probes
	minMs, maxMs                  float64
	hasMin                        bool
}

func (a *agg) add(tw *telemetry.TransportWindow) {
	answered := float64(max(tw.Sent-tw.Lost, 0))
	a.windows++
	a.sent += int64(tw.Sent)
	a.lost += int64(tw.Lost)
	if tw.Down {
		a.down++
	}
	a.latSum += tw.LatencyMs * answered
	a.p95Sum += tw.P95Ms * answered
	a.jitSum += tw.JitterMs * answered
	a.sdSum += tw.StdDevMs * answered
	if answered > 0 {
		if !a.hasMin || tw.MinMs < a.minMs {
			a.minMs = tw.MinMs
		}
		a.hasMin = true
	}
	a.maxMs = max(a.maxMs, tw.MaxMs)
}

func (a *agg) merge(b *agg) {
	a.windows += b.windows
	a.sent += b.sent
	a.lost += b.lost
	a.down += b.down
	a.latSum += b.latSum
	a.p95Sum += b.p95Sum
	a.jitSum += b.jitSum
	a.sdSum += b.sdSum
	if b.hasMin && (!a.hasMin || b.minMs < a.minMs) {
		a.minMs, a.hasMin = b.minMs, true
	}
	a.maxMs = max(a.maxMs, b.maxMs)
}

type minuteRow struct {
	key seriesKey
	agg
}

const embeddedSchema = `
CREATE TABLE IF NOT EXISTS rollup_1m (
	site      TEXT    NOT NULL,
	transport TEXT    NOT NULL,
	ts        INTEGER NOT NULL, -- unix seconds, start of the minute
	windows   INTEGER NOT NULL,
	sent      INTEGER NOT NULL,
	lost      INTEGER NOT NULL,
	down      INTEGER NOT NULL,
	lat_sum   REAL    NOT NULL, -- sums weighted by answered probes
	p95_sum   REAL    NOT NULL,
	jit_sum   REAL    NOT NULL,
	sd_sum    REAL    NOT NULL,
	min_ms    REAL,             -- NULL: no probe answered
	max_ms    REAL    NOT NULL,
	PRIMARY KEY (site, transport, ts)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS rollup_1m_ts ON rollup_1m (ts);
CREATE TABLE IF NOT EXISTS rollup_1h (
	site      TEXT    NOT NULL,
	transport TEXT    NOT NULL,
	ts        INTEGER NOT NULL, -- unix seconds, start of the hour
	windows   INTEGER NOT NULL,
	sent      INTEGER NOT NULL,
	lost      INTEGER NOT NULL,
	down      INTEGER NOT NULL,
	lat_sum   REAL    NOT NULL,
	p95_sum   REAL    NOT NULL,
	jit_sum   REAL    NOT NULL,
	sd_sum    REAL    NOT NULL,
	min_ms    REAL,
	max_ms    REAL    NOT NULL,
	PRIMARY KEY (site, transport, ts)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS rollup_1h_ts ON rollup_1h (ts);
`

// upsertSQL merges rows into a table: sums add up, extremes combine.
func upsertSQL(table string, rows int) string {
	var b strings.Builder
	b.WriteString("INSERT INTO " + table + " (site, transport, ts, windows, sent, lost, down, lat_sum, p95_sum, jit_sum, sd_sum, min_ms, max_ms) VALUES ")
	for i := 0; i < rows; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("(?,?,?,?,?,?,?,?,?,?,?,?,?)")
	}
	b.WriteString(` ON CONFLICT (site, transport, ts) DO UPDATE SET
	windows = windows + excluded.windows,
	sent    = sent + excluded.sent,
	lost    = lost + excluded.lost,
	down    = down + excluded.down,
	lat_sum = lat_sum + excluded.lat_sum,
	p95_sum = p95_sum + excluded.p95_sum,
	jit_sum = jit_sum + excluded.jit_sum,
	sd_sum  = sd_sum + excluded.sd_sum,
	min_ms  = min(coalesce(min_ms, excluded.min_ms), coalesce(excluded.min_ms, min_ms)),
	max_ms  = max(max_ms, excluded.max_ms)`)
	return b.String()
}

// upsertChunk is how many rows one INSERT carries: per-statement overhead dominates otherwise.
const upsertChunk = 64

// upserter merges rows into one table in chunks of upsertChunk, within a transaction.
type upserter struct {
	ctx   context.Context
	tx    *sql.Tx
	table string
	stmt  *sql.Stmt // for a full chunk
	args  []any
	n     int
}

func newUpserter(ctx context.Context, tx *sql.Tx, table string) (*upserter, error) {
	st, err := tx.PrepareContext(ctx, upsertSQL(table, upsertChunk))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", table, err)
	}
	return &upserter{ctx: ctx, tx: tx, table: table, stmt: st, args: make([]any, 0, 13*upsertChunk)}, nil
}

func (u *upserter) add(k seriesKey, a *agg) error {
	var minMs any
	if a.hasMin {
		minMs = a.minMs
	}
	u.args = append(u.args, k.site, k.transport, a.ts, a.windows, a.sent, a.lost, a.down,
		a.latSum, a.p95Sum, a.jitSum, a.sdSum, minMs, a.maxMs)
	u.n++
	if u.n < upsertChunk {
		return nil
	}
	_, err := u.stmt.ExecContext(u.ctx, u.args...)
	u.args, u.n = u.args[:0], 0
	if err != nil {
		return fmt.Errorf("%s: %w", u.table, err)
	}
	return nil
}

// finish writes the last, partial chunk and releases the statement.
func (u *upserter) finish() error {
	defer u.stmt.Close()
	if u.n == 0 {
		return nil
	}
	if _, err := u.tx.ExecContext(u.ctx, upsertSQL(u.table, u.n), u.args...); err != nil {
		return fmt.Errorf("%s: %w", u.table, err)
	}
	return nil
}

// NewEmbedded opens (creating if needed) the database in opts.DataDir and starts the
// goroutine that flushes and prunes it.
func NewEmbedded(opts EmbeddedOptions) (*EmbeddedSink, error) {
	if opts.DataDir == "" {
		return nil, errors.New("sink.NewEmbedded: no data dir")
	}
	if opts.FlushInterval < 0 || opts.MinuteRetention < 0 || opts.HourRetention < 0 || opts.MaxUnflushed < 0 {
		return nil, errors.New("sink.NewEmbedded: negative interval, retention or size in options")
	}
	if opts.File == "" {
		opts.File = DefaultEmbeddedFile
	}
	if opts.FlushInterval == 0 {
		opts.FlushInterval = DefaultEmbeddedFlushInterval
	}
	if opts.PruneInterval == 0 {
		opts.PruneInterval = DefaultEmbeddedPruneInterval
	}
	if opts.MinuteRetention == 0 {
		opts.MinuteRetention = DefaultMinuteRetention
	}
	if opts.HourRetention == 0 {
		opts.HourRetention = DefaultHourRetention
	}
	if opts.MaxUnflushed == 0 {
		opts.MaxUnflushed = DefaultEmbeddedMaxUnflushed
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if err := os.MkdirAll(opts.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("sink.NewEmbedded: %w", err)
	}
	path := filepath.Join(opts.DataDir, opts.File)
	// SQLite would create the file 0644 less the umask (and its -wal and -shm alike): the
	// figures are the customer's, private like the rest of the data dir.
	if f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600); err != nil {
		return nil, fmt.Errorf("sink.NewEmbedded: %w", err)
	} else {
		f.Close()
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if err := os.Chmod(p, 0o600); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("sink.NewEmbedded: %w", err)
		}
	}
	dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_pragma=synchronous(NORMAL)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sink.NewEmbedded: %s: %w", path, err)
	}
	db.SetMaxOpenConns(4)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := db.ExecContext(ctx, embeddedSchema+blockSchema); err != nil {
		db.Close()
		return nil, fmt.Errorf("sink.NewEmbedded: %s: create schema: %w", path, err)
	}
	s := &EmbeddedSink{
		opts:    opts,
		log:     opts.Logger.With("sink", "embedded", "path", path),
		db:      db,
		path:    path,
		entries: make(map[seriesKey]*entry),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	if s.minuteRows, err = db.PrepareContext(ctx, minuteRowsSQL("")); err == nil {
		s.minuteBlocks, err = db.PrepareContext(ctx, minuteBlocksSQL(""))
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("sink.NewEmbedded: %s: %w", path, err)
	}
	go s.run()
	return s, nil
}

// Path returns the database file's path.
func (s *EmbeddedSink) Path() string { return s.path }

// Write adds r's transport windows to the in-memory minute rollups of r's time.
func (s *EmbeddedSink) Write(ctx context.Context, r *telemetry.Report) error {
	for i := range r.Transport {
		t := &r.Transport[i]
		for _, v := range [...]float64{t.LatencyMs, t.P95Ms, t.MinMs, t.MaxMs, t.JitterMs, t.StdDevMs} {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("sink.EmbeddedSink.Write: %w: transport %q: a figure is %v", telemetry.ErrInvalid, t.Name, v)
			}
		}
	}
	minute := floorTo(r.Time.Unix(), 60)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("sink.EmbeddedSink.Write: %w", ErrClosed)
	}
	for i := range r.Transport {
		tw := &r.Transport[i]
		e := s.entries[seriesKey{r.Site, tw.Name}]
		if e == nil {
			k := seriesKey{strings.Clone(r.Site), strings.Clone(tw.Name)}
			e = &entry{key: k}
			s.entries[k] = e
		}
		e.aggFor(minute).add(tw)
	}
	return nil
}

func (e *entry) aggFor(ts int64) *agg {
	for i := len(e.aggs) - 1; i >= 0; i-- {
		if e.aggs[i].ts == ts {
			return &e.aggs[i]
		}
	}
	e.aggs = append(e.aggs, agg{ts: ts})
	return &e.aggs[len(e.aggs)-1]
}

// Flush writes every rollup held in memory to the database.
func (s *EmbeddedSink) Flush(ctx context.Context) error {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	return s.flushLocked(ctx)
}

func (s *EmbeddedSink) flushLocked(ctx context.Context) error {
	// Take the rollups out under mu (a copy of each, no allocation once warm), write them
	// without it so Write never waits for the disk.
	rows := append(s.rows[:0], s.unsaved...)
	s.unsaved = s.unsaved[:0]
	s.mu.Lock()
	var windows int64
	for _, e := range s.entries {
		for i := range e.aggs {
			rows = append(rows, minuteRow{key: e.key, agg: e.aggs[i]})
			windows += e.aggs[i].windows
		}
		e.aggs = e.aggs[:0]
	}
	s.mu.Unlock()
	s.rows = rows
	if len(rows) == 0 {
		return nil
	}
	slices.SortFunc(rows, func(a, b minuteRow) int {
		return cmp.Or(strings.Compare(a.key.site, b.key.site), strings.Compare(a.key.transport, b.key.transport), cmp.Compare(a.ts, b.ts))
	})
	if err := s.writeRows(ctx, rows); err != nil {
		// Keep them for the next flush, within bounds.
		keep := rows
		if over := len(keep) - s.opts.MaxUnflushed; over > 0 {
			keep = keep[over:]
			s.statsMu.Lock()
			s.stats.Dropped += int64(over)
			s.statsMu.Unlock()
			s.log.Error("telemetry rollups dropped after failed writes", "rows", over)
		}
		s.unsaved = append(s.unsaved, keep...)
		return fmt.Errorf("sink.EmbeddedSink.Flush: %s: %w (%d rows kept for the next flush)", s.path, err, len(s.unsaved))
	}
	s.statsMu.Lock()
	s.stats.RowsFlushed += int64(len(rows))
	s.stats.Windows += windows
	s.statsMu.Unlock()
	return nil
}

// writeRows upserts rows (sorted by key and time) into the minute table, and their sums per
// hour into the hour table, in one transaction.
func (s *EmbeddedSink) writeRows(ctx context.Context, rows []minuteRow) (err error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	minutes, err := newUpserter(ctx, tx, "rollup_1m")
	if err != nil {
		return err
	}
	hours, err := newUpserter(ctx, tx, "rollup_1h")
	if err != nil {
		minutes.stmt.Close()
		return err
	}
	var hour minuteRow
	hour.ts = math.MinInt64
	for i := range rows {
		r := &rows[i]
		if err = minutes.add(r.key, &r.agg); err != nil {
			break
		}
		if h := floorTo(r.ts, 3600); hour.key != r.key || hour.ts != h {
			if hour.ts != math.MinInt64 {
				if err = hours.add(hour.key, &hour.agg); err != nil {
					break
				}
			}
			hour = minuteRow{key: r.key, agg: agg{ts: h}}
		}
		hour.merge(&r.agg)
	}
	if err == nil {
		err = hours.add(hour.key, &hour.agg)
	}
	if err == nil {
		err = minutes.finish()
	} else {
		minutes.stmt.Close()
	}
	if err == nil {
		err = hours.finish()
	} else {
		hours.stmt.Close()
	}
	if err != nil {
		return err
	}
	return tx.Commit()
}

// Prune deletes minutes older than MinuteRetention (rows and minutes of hour blocks) and hour
// rows older than HourRetention before now, and returns how many minutes and hours it
// deleted. It deletes in slices of time, so writers wait for one slice at most.
func (s *EmbeddedSink) Prune(ctx context.Context, now time.Time) (int64, error) {
	var total int64
	for _, t := range []struct {
		table string
		keep  time.Duration
		slice int64 // seconds per DELETE
	}{
		{"rollup_1m", s.opts.MinuteRetention, 600},
		{"rollup_1h", s.opts.HourRetention, 7 * 86400},
	} {
		cutoff := now.Add(-t.keep).Unix()
		for {
			var oldest sql.NullInt64
			if err := s.db.QueryRowContext(ctx, "SELECT min(ts) FROM "+t.table+" WHERE ts < ?", cutoff).Scan(&oldest); err != nil {
				return total, fmt.Errorf("sink.EmbeddedSink.Prune: %s: %w", t.table, err)
			}
			if !oldest.Valid {
				break
			}
			s.flushMu.Lock()
			res, err := s.db.ExecContext(ctx, "DELETE FROM "+t.table+" WHERE ts >= ? AND ts < ?", oldest.Int64, min(oldest.Int64+t.slice, cutoff))
			s.flushMu.Unlock()
			if err != nil {
				return total, fmt.Errorf("sink.EmbeddedSink.Prune: %s: %w", t.table, err)
			}
			n, _ := res.RowsAffected()
			total += n
		}
	}
	n, err := s.pruneBlocks(ctx, now.Add(-s.opts.MinuteRetention).Unix())
	total += n
	if err != nil {
		return total, fmt.Errorf("sink.EmbeddedSink.Prune: minute_blocks: %w", err)
	}
	s.statsMu.Lock()
	s.stats.Pruned += total
	s.statsMu.Unlock()
	return total, nil
}

// History returns site's rollups for transport (every transport if "") whose period starts in
// [from, to), ordered by transport and time. resolution is time.Minute, time.Hour, or 0 for
// minutes when the range is at most a day and within MinuteRetention of now, else hours.
// Rollups still in memory (up to FlushInterval old) are not included: Flush first for them.
func (s *EmbeddedSink) History(ctx context.Context, site, transport string, from, to time.Time, resolution time.Duration) ([]Rollup, error) {
	if resolution == 0 {
		resolution = time.Hour
		if to.Sub(from) <= 24*time.Hour && from.After(s.opts.Now().Add(-s.opts.MinuteRetention)) {
			resolution = time.Minute
		}
	}
	switch resolution {
	case time.Hour: // below
	case time.Minute:
		var out []Rollup
		err := s.scanMinutes(ctx, site, transport, from.Unix(), to.Unix(), func(tr string, a *agg) {
			out = append(out, a.rollup(site, tr, time.Minute))
		})
		if err != nil {
			return nil, fmt.Errorf("sink.EmbeddedSink.History: %w", err)
		}
		return out, nil
	default:
		return nil, fmt.Errorf("sink.EmbeddedSink.History: resolution %v; want 1m, 1h or 0 (automatic)", resolution)
	}
	q := `SELECT transport, ts, windows, sent, lost, down, lat_sum, p95_sum, jit_sum, sd_sum, min_ms, max_ms
FROM rollup_1h WHERE site = ? AND ts >= ? AND ts < ?`
	args := []any{site, floorTo(from.Unix()+3599, 3600), to.Unix()}
	if transport != "" {
		q += ` AND transport = ?`
		args = append(args, transport)
	}
	rows, err := s.db.QueryContext(ctx, q+` ORDER BY transport, ts`, args...)
	if err != nil {
		return nil, fmt.Errorf("sink.EmbeddedSink.History: %w", err)
	}
	defer rows.Close()
	var out []Rollup
	for rows.Next() {
		var tr string
		var a agg
		var minMs sql.NullFloat64
		if err := rows.Scan(&tr, &a.ts, &a.windows, &a.sent, &a.lost, &a.down,
			&a.latSum, &a.p95Sum, &a.jitSum, &a.sdSum, &minMs, &a.maxMs); err != nil {
			return nil, fmt.Errorf("sink.EmbeddedSink.History: %w", err)
		}
		a.minMs, a.hasMin = minMs.Float64, minMs.Valid
		out = append(out, a.rollup(site, tr, time.Hour))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sink.EmbeddedSink.History: %w", err)
	}
	return out, nil
}

// rollup turns a into the figures History gives.
func (a *agg) rollup(site, transport string, resolution time.Duration) Rollup {
	r := Rollup{Site: site, Transport: transport, Time: time.Unix(a.ts, 0).UTC(), Resolution: resolution,
		Windows: a.windows, Sent: a.sent, Lost: a.lost, DownWindows: a.down, MinMs: a.minMs, MaxMs: a.maxMs}
	if a.sent > 0 {
		r.LossPct = 100 * float64(a.lost) / float64(a.sent)
	}
	if n := float64(a.sent - a.lost); n > 0 {
		r.LatencyMs, r.P95Ms, r.JitterMs, r.StdDevMs = a.latSum/n, a.p95Sum/n, a.jitSum/n, a.sdSum/n
	}
	return r
}

// Stats returns the sink's counters.
func (s *EmbeddedSink) Stats() EmbeddedStats {
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	return s.stats
}

// Close stops the background work, writes what is in memory and closes the database.
func (s *EmbeddedSink) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	close(s.stop)
	<-s.done
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := s.Flush(ctx)
	s.minuteRows.Close()
	s.minuteBlocks.Close()
	if cerr := s.db.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("sink.EmbeddedSink.Close: %w", cerr)
	}
	return err
}

// run flushes (and compacts closed hours) every FlushInterval and prunes every PruneInterval
// until Close.
func (s *EmbeddedSink) run() {
	defer close(s.done)
	flush := time.NewTicker(s.opts.FlushInterval)
	defer flush.Stop()
	var prune <-chan time.Time
	if s.opts.PruneInterval > 0 {
		t := time.NewTicker(s.opts.PruneInterval)
		defer t.Stop()
		prune = t.C
	}
	// Work stops with Close; a flush in progress finishes (Close flushes again after).
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	compact := func() {
		if n, err := s.compact(ctx, s.opts.Now(), s.stop, s.opts.FlushInterval/2); err != nil {
			s.log.Error("compacting telemetry minutes into hour blocks", "err", err)
		} else if n > 0 {
			s.log.Debug("compacted telemetry minutes into hour blocks", "rows", n)
		}
	}
	compact() // starts converting a database written before the blocks; each flush goes on
	for {
		select {
		case <-s.stop:
			return
		case <-flush.C:
			if err := s.Flush(ctx); err != nil {
				s.log.Error("writing telemetry rollups", "err", err)
			}
			compact()
		case <-prune:
			if n, err := s.Prune(ctx, s.opts.Now()); err != nil {
				s.log.Error("pruning telemetry history", "err", err)
			} else if n > 0 {
				s.log.Debug("pruned telemetry history", "rows", n)
			}
		}
	}
}

// floorTo rounds sec down to a multiple of step, also below zero.
func floorTo(sec, step int64) int64 {
	r := sec % step
	if r < 0 {
		r += step
	}
	return sec - r
}
