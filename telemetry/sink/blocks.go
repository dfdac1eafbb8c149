package sink

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sync"
	"time"
)

// The embedded store keeps the minute history of closed hours in blocks: one row per site,
// transport and hour holding the minutes' aggregates packed (minute_blocks). A replay reads a
// site-day as 24 rows per transport instead of 1440, which is what makes the fleet's history
// readable in seconds. Minutes arrive as rows of rollup_1m (Flush merges into them, late
// reports included); Compact moves the rows of closed hours into the blocks, merging into a
// block already there, so rollup_1m holds the current hour and stragglers. Readers read both
// layouts in one read transaction (one snapshot), so nothing is seen twice or missed while rows
// move.

// A rowid table (not WITHOUT ROWID): a full block's row (about 3.9 KB) then fits in one
// 4 KB page, where a WITHOUT ROWID table would spill all but 1 KB of it into overflow pages,
// a read each.
const blockSchema = `
CREATE TABLE IF NOT EXISTS minute_blocks (
	site      TEXT    NOT NULL,
	transport TEXT    NOT NULL,
	hour      INTEGER NOT NULL, -- unix seconds, start of the hour
	mask      INTEGER NOT NULL, -- bit m < 60 set: minute m of the hour has a record in data; bit 62: wide records
	data      BLOB    NOT NULL, -- the set minutes' records in minute order
	PRIMARY KEY (site, transport, hour)
);
CREATE INDEX IF NOT EXISTS minute_blocks_hour ON minute_blocks (hour);
`

// A minute's record in a block, little-endian: windows, sent, lost, down, then lat_sum,
// p95_sum, jit_sum, sd_sum, min_ms (NaN: no probe answered), max_ms (float64). The counts are
// uint32 (narrowSize bytes a record) unless one of the block's counts does not fit, then int64
// (wideSize) and the block's mask has maskWide: nothing is clamped.
const (
	narrowSize = 64
	wideSize   = 80
	maskWide   = 1 << 62
)

// maxMask has a bit for each minute of an hour.
const maxMask = 1<<60 - 1

// errCorruptBlock: a block's data does not match its mask.
var errCorruptBlock = errors.New("corrupt minute block")

func putRecord(b []byte, a *agg, wide bool) {
	le := binary.LittleEndian
	o := 16
	if wide {
		le.PutUint64(b[0:], uint64(a.windows))
		le.PutUint64(b[8:], uint64(a.sent))
		le.PutUint64(b[16:], uint64(a.lost))
		le.PutUint64(b[24:], uint64(a.down))
		o = 32
	} else {
		le.PutUint32(b[0:], uint32(a.windows))
		le.PutUint32(b[4:], uint32(a.sent))
		le.PutUint32(b[8:], uint32(a.lost))
		le.PutUint32(b[12:], uint32(a.down))
	}
	minMs := math.NaN()
	if a.hasMin {
		minMs = a.minMs
	}
	for i, f := range [...]float64{a.latSum, a.p95Sum, a.jitSum, a.sdSum, minMs, a.maxMs} {
		le.PutUint64(b[o+8*i:], math.Float64bits(f))
	}
}

func getRecord(b []byte, a *agg, wide bool) {
	le := binary.LittleEndian
	if wide {
		_ = b[wideSize-1]
		a.windows = int64(le.Uint64(b[0:]))
		a.sent = int64(le.Uint64(b[8:]))
		a.lost = int64(le.Uint64(b[16:]))
		a.down = int64(le.Uint64(b[24:]))
		b = b[32:]
	} else {
		_ = b[narrowSize-1]
		a.windows = int64(le.Uint32(b[0:]))
		a.sent = int64(le.Uint32(b[4:]))
		a.lost = int64(le.Uint32(b[8:]))
		a.down = int64(le.Uint32(b[12:]))
		b = b[16:]
	}
	a.latSum = math.Float64frombits(le.Uint64(b[0:]))
	a.p95Sum = math.Float64frombits(le.Uint64(b[8:]))
	a.jitSum = math.Float64frombits(le.Uint64(b[16:]))
	a.sdSum = math.Float64frombits(le.Uint64(b[24:]))
	a.minMs = math.Float64frombits(le.Uint64(b[32:]))
	a.hasMin = !math.IsNaN(a.minMs)
	if !a.hasMin {
		a.minMs = 0
	}
	a.maxMs = math.Float64frombits(le.Uint64(b[40:]))
}

// block is an hour of one series' minutes in memory.
type block struct {
	hour int64
	mask uint64
	min  [60]agg
}

// decode fills b from a stored mask and data.
func (b *block) decode(hour int64, mask uint64, data []byte) error {
	wide := mask&maskWide != 0
	mask &^= maskWide
	size := narrowSize
	if wide {
		size = wideSize
	}
	if mask > maxMask || len(data) != bits.OnesCount64(mask)*size {
		return fmt.Errorf("%w: hour %d, mask %#x, %d bytes", errCorruptBlock, hour, mask, len(data))
	}
	b.hour, b.mask = hour, mask
	for m := mask; m != 0; m &= m - 1 {
		i := bits.TrailingZeros64(m)
		getRecord(data, &b.min[i], wide)
		b.min[i].ts = hour + int64(i)*60
		data = data[size:]
	}
	return nil
}

// add merges a minute's aggregate (of b's hour) into b.
func (b *block) add(a *agg) {
	i := (a.ts - b.hour) / 60
	if b.mask&(1<<i) == 0 {
		b.mask |= 1 << i
		b.min[i] = agg{ts: a.ts}
	}
	b.min[i].merge(a)
}

// encode appends b's records to dst and returns them with the mask to store.
func (b *block) encode(dst []byte) (data []byte, mask int64) {
	wide := false
	for m := b.mask; m != 0 && !wide; m &= m - 1 {
		a := &b.min[bits.TrailingZeros64(m)]
		for _, v := range [...]int64{a.windows, a.sent, a.lost, a.down} {
			wide = wide || v < 0 || v > math.MaxUint32
		}
	}
	size, stored := narrowSize, b.mask
	if wide {
		size, stored = wideSize, b.mask|maskWide
	}
	for m := b.mask; m != 0; m &= m - 1 {
		dst = append(dst, make([]byte, size)...)
		putRecord(dst[len(dst)-size:], &b.min[bits.TrailingZeros64(m)], wide)
	}
	return dst, int64(stored)
}

// compactSlice is how many minute rows one compaction transaction moves: writers wait for one
// slice at most.
const compactSlice = 4096

// Compact moves the minute rows of the hours closed before now's hour into hour blocks, in
// slices (one transaction each), and returns how many rows it moved. The background goroutine
// runs it after each flush and when the sink opens, which also converts a database written
// before the blocks existed; readers see the same minutes before, during and after.
func (s *EmbeddedSink) Compact(ctx context.Context, now time.Time) (int64, error) {
	return s.compact(ctx, now, nil, 0)
}

// compact is Compact until stop is closed or, if budget > 0, for about budget: the background
// goroutine flushes between its calls, so converting a large database never holds up the
// flushes (each call starts again at the first series with rows of closed hours left).
func (s *EmbeddedSink) compact(ctx context.Context, now time.Time, stop <-chan struct{}, budget time.Duration) (int64, error) {
	start := time.Now()
	cutoff := floorTo(now.Unix(), 3600)
	var found int // by the ts index: most calls find nothing to do
	if err := s.db.QueryRowContext(ctx, "SELECT count(*) FROM (SELECT 1 FROM rollup_1m WHERE ts < ? LIMIT 1)", cutoff).Scan(&found); err != nil {
		return 0, fmt.Errorf("sink.EmbeddedSink.Compact: %s: %w", s.path, err)
	}
	if found == 0 {
		return 0, nil
	}
	var total int64
	var site, transport string
	for {
		select {
		case <-stop:
			return total, nil
		default:
		}
		n, err := s.compactSlice(ctx, cutoff, &site, &transport)
		total += int64(n)
		s.statsMu.Lock()
		s.stats.Compacted += int64(n)
		s.statsMu.Unlock()
		if err != nil {
			return total, fmt.Errorf("sink.EmbeddedSink.Compact: %s: %w", s.path, err)
		}
		if n < compactSlice || budget > 0 && time.Since(start) >= budget {
			return total, nil
		}
	}
}

// compactSlice moves up to compactSlice rows older than cutoff, from the series (site,
// transport) on in key order, into blocks, and leaves site and transport at the last series
// it touched (which may have more rows).
func (s *EmbeddedSink) compactSlice(ctx context.Context, cutoff int64, site, transport *string) (n int, err error) {
	err = s.writeTx(ctx, func(tx *sql.Tx) error {
		n, err = compactTx(ctx, tx, cutoff, site, transport)
		return err
	})
	return n, err
}

func compactTx(ctx context.Context, tx *sql.Tx, cutoff int64, site, transport *string) (n int, err error) {
	// Key order (the +ts keeps SQLite on the primary key rather than the ts index, which would
	// sort every old row of a big migration for each slice).
	rows, err := tx.QueryContext(ctx, `SELECT site, transport, ts, windows, sent, lost, down, lat_sum, p95_sum, jit_sum, sd_sum, min_ms, max_ms
FROM rollup_1m WHERE (site, transport) >= (?, ?) AND +ts < ? ORDER BY site, transport, ts LIMIT ?`, *site, *transport, cutoff, compactSlice)
	if err != nil {
		return 0, err
	}
	var moved []minuteRow
	for rows.Next() {
		var r minuteRow
		var minMs sql.NullFloat64
		if err = rows.Scan(&r.key.site, &r.key.transport, &r.ts, &r.windows, &r.sent, &r.lost, &r.down,
			&r.latSum, &r.p95Sum, &r.jitSum, &r.sdSum, &minMs, &r.maxMs); err != nil {
			rows.Close()
			return 0, err
		}
		r.minMs, r.hasMin = minMs.Float64, minMs.Valid
		if k := len(moved) - 1; k >= 0 && moved[k].key == r.key {
			r.key = moved[k].key // share the strings
		}
		moved = append(moved, r)
	}
	rows.Close()
	if err = rows.Err(); err != nil {
		return 0, err
	}
	if len(moved) == 0 {
		return 0, nil
	}
	get, err := tx.PrepareContext(ctx, "SELECT mask, data FROM minute_blocks WHERE site = ? AND transport = ? AND hour = ?")
	if err != nil {
		return 0, err
	}
	defer get.Close()
	put, err := tx.PrepareContext(ctx, "INSERT OR REPLACE INTO minute_blocks (site, transport, hour, mask, data) VALUES (?, ?, ?, ?, ?)")
	if err != nil {
		return 0, err
	}
	defer put.Close()
	del, err := tx.PrepareContext(ctx, "DELETE FROM rollup_1m WHERE site = ? AND transport = ? AND ts >= ? AND ts <= ?")
	if err != nil {
		return 0, err
	}
	defer del.Close()
	b := new(block)
	var data []byte
	for i := 0; i < len(moved); {
		// One series-hour: merge its rows into the block stored, if any.
		k, h := moved[i].key, floorTo(moved[i].ts, 3600)
		var mask int64
		var stored []byte
		switch err = get.QueryRowContext(ctx, k.site, k.transport, h).Scan(&mask, &stored); {
		case errors.Is(err, sql.ErrNoRows):
			b.hour, b.mask = h, 0
		case err != nil:
			return 0, err
		default:
			if err = b.decode(h, uint64(mask), stored); err != nil {
				return 0, fmt.Errorf("%s %s: %w", k.site, k.transport, err)
			}
		}
		j := i
		for ; j < len(moved) && moved[j].key == k && moved[j].ts < h+3600; j++ {
			b.add(&moved[j].agg)
		}
		data, mask = b.encode(data[:0])
		if _, err = put.ExecContext(ctx, k.site, k.transport, h, mask, data); err != nil {
			return 0, err
		}
		if _, err = del.ExecContext(ctx, k.site, k.transport, moved[i].ts, moved[j-1].ts); err != nil {
			return 0, err
		}
		i = j
	}
	last := moved[len(moved)-1].key
	*site, *transport = last.site, last.transport
	return len(moved), nil
}

// scanMinutes calls fn with site's minute aggregates of transport (every transport if "")
// whose minute starts in [from, to), in transport and time order, merging the hour blocks and
// the minute rows. Both are read in one read transaction (one snapshot of the database), so a
// compaction moving rows into blocks meanwhile is seen wholly or not at all. fn's transport
// string is shared by the calls of one transport.
func (s *EmbeddedSink) scanMinutes(ctx context.Context, site, transport string, from, to int64, fn func(transport string, a *agg)) error {
	from = floorTo(from+59, 60)
	if from >= to {
		return nil
	}
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true}) // a deferred BEGIN: no write lock
	if err != nil {
		return err
	}
	defer tx.Rollback()
	// The minute rows first: the current hour's and stragglers', few.
	rowsStmt, blocksStmt := s.minuteRows, s.minuteBlocks
	if transport != "" {
		if rowsStmt, err = tx.PrepareContext(ctx, minuteRowsSQL(transport)); err != nil {
			return err
		}
		if blocksStmt, err = tx.PrepareContext(ctx, minuteBlocksSQL(transport)); err != nil {
			return err
		}
	} else {
		rowsStmt, blocksStmt = tx.StmtContext(ctx, rowsStmt), tx.StmtContext(ctx, blocksStmt)
	}
	rows, err := rowsStmt.QueryContext(ctx, site, from, to, transport)
	if err != nil {
		return err
	}
	var loose []minuteRow
	// Declared once: Scan's pointers would move per-row variables to the heap, three
	// allocations a row.
	var (
		r     minuteRow
		tr    sql.RawBytes
		minMs sql.NullFloat64
	)
	for rows.Next() {
		r = minuteRow{}
		if err := rows.Scan(&tr, &r.ts, &r.windows, &r.sent, &r.lost, &r.down, &r.latSum, &r.p95Sum, &r.jitSum, &r.sdSum, &minMs, &r.maxMs); err != nil {
			rows.Close()
			return err
		}
		r.minMs, r.hasMin = minMs.Float64, minMs.Valid
		if n := len(loose); n > 0 && loose[n-1].key.transport == string(tr) {
			r.key.transport = loose[n-1].key.transport
		} else {
			r.key.transport = string(tr)
		}
		loose = append(loose, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	rows, err = blocksStmt.QueryContext(ctx, site, floorTo(from, 3600), to, transport)
	if err != nil {
		return err
	}
	defer rows.Close()
	var (
		data sql.RawBytes
		name string
		hour int64
		mask int64
		b    = blocks.Get().(*block)
		li   int // loose[:li] handed to fn
	)
	defer blocks.Put(b)
	// before reports whether loose row r comes before minute ts of transport name.
	before := func(r *minuteRow, name string, ts int64) bool {
		return r.key.transport < name || (r.key.transport == name && r.ts < ts)
	}
	for rows.Next() {
		if err := rows.Scan(&tr, &hour, &mask, &data); err != nil {
			return err
		}
		if string(tr) != name {
			name = string(tr)
		}
		if err := b.decode(hour, uint64(mask), data); err != nil {
			return fmt.Errorf("%s %s: %w", site, name, err)
		}
		for ; li < len(loose) && before(&loose[li], name, hour); li++ {
			fn(loose[li].key.transport, &loose[li].agg)
		}
		for ; li < len(loose) && before(&loose[li], name, hour+3600); li++ {
			b.add(&loose[li].agg) // a straggler of this block's hour
		}
		for m := b.mask; m != 0; m &= m - 1 {
			if a := &b.min[bits.TrailingZeros64(m)]; a.ts >= from && a.ts < to {
				fn(name, a)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for ; li < len(loose); li++ {
		fn(loose[li].key.transport, &loose[li].agg)
	}
	return nil
}

// blocks recycles scanMinutes' decoded block (60 minutes' aggregates, about 7 KB).
var blocks = sync.Pool{New: func() any { return new(block) }}

// minuteRowsSQL and minuteBlocksSQL are scanMinutes' statements: ?1 site, ?2 from (the hour
// of from for blocks), ?3 to, ?4 the transport if one is given.
func minuteRowsSQL(transport string) string {
	return `SELECT transport, ts, windows, sent, lost, down, lat_sum, p95_sum, jit_sum, sd_sum, min_ms, max_ms
FROM rollup_1m WHERE site = ?1 AND ts >= ?2 AND ts < ?3` + cond(transport, " AND transport = ?4") + ` ORDER BY transport, ts`
}

func minuteBlocksSQL(transport string) string {
	return `SELECT transport, hour, mask, data FROM minute_blocks
WHERE site = ?1 AND hour >= ?2 AND hour < ?3` + cond(transport, " AND transport = ?4") + ` ORDER BY transport, hour`
}

func cond(v, clause string) string {
	if v == "" {
		return ""
	}
	return clause
}

// pruneBlocks deletes the minutes before cutoff from the blocks: whole blocks by hour (one
// hour per statement), and the older minutes of the blocks of cutoff's hour. It returns the
// minutes deleted.
func (s *EmbeddedSink) pruneBlocks(ctx context.Context, cutoff int64) (int64, error) {
	var total int64
	for {
		var oldest sql.NullInt64
		if err := s.db.QueryRowContext(ctx, "SELECT min(hour) FROM minute_blocks WHERE hour <= ?", cutoff-3600).Scan(&oldest); err != nil {
			return total, err
		}
		if !oldest.Valid {
			break
		}
		n, err := s.pruneHour(ctx, oldest.Int64, cutoff)
		total += n
		if err != nil {
			return total, err
		}
	}
	if h := floorTo(cutoff, 3600); h < cutoff {
		n, err := s.pruneHour(ctx, h, cutoff)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// pruneHour deletes the minutes before cutoff from the blocks of hour.
func (s *EmbeddedSink) pruneHour(ctx context.Context, hour, cutoff int64) (n int64, err error) {
	old := uint64(maxMask)
	if cutoff < hour+3600 {
		old = 1<<((cutoff-hour+59)/60) - 1 // the minutes starting before cutoff
	}
	err = s.writeTx(ctx, func(tx *sql.Tx) error {
		n, err = pruneHourTx(ctx, tx, hour, old)
		return err
	})
	return n, err
}

func pruneHourTx(ctx context.Context, tx *sql.Tx, hour int64, old uint64) (n int64, err error) {
	rows, err := tx.QueryContext(ctx, "SELECT site, transport, mask, data FROM minute_blocks WHERE hour = ? AND mask & ? != 0", hour, int64(old))
	if err != nil {
		return 0, err
	}
	type kept struct {
		site, transport string
		mask            int64
		data            []byte
	}
	var rewrite []kept
	b := new(block)
	for rows.Next() {
		var k kept
		if err = rows.Scan(&k.site, &k.transport, &k.mask, &k.data); err != nil {
			rows.Close()
			return 0, err
		}
		n += int64(bits.OnesCount64(uint64(k.mask) & old))
		if uint64(k.mask)&maxMask&^old == 0 {
			continue // deleted whole below
		}
		if err = b.decode(hour, uint64(k.mask), k.data); err != nil {
			rows.Close()
			return 0, fmt.Errorf("%s %s: %w", k.site, k.transport, err)
		}
		b.mask &^= old
		k.data, k.mask = b.encode(nil)
		rewrite = append(rewrite, k)
	}
	rows.Close()
	if err = rows.Err(); err != nil {
		return 0, err
	}
	if _, err = tx.ExecContext(ctx, "DELETE FROM minute_blocks WHERE hour = ? AND mask & ? = mask & ?", hour, int64(old), int64(maxMask)); err != nil {
		return 0, err
	}
	for _, k := range rewrite {
		if _, err = tx.ExecContext(ctx, "UPDATE minute_blocks SET mask = ?, data = ? WHERE site = ? AND transport = ? AND hour = ?",
			k.mask, k.data, k.site, k.transport, hour); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// writeTx runs fn in a transaction, as the one writer (flushes, compactions and prunes take
// turns), and commits if fn returns nil.
func (s *EmbeddedSink) writeTx(ctx context.Context, fn func(*sql.Tx) error) error {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}
