package sink

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgewan/edgewan/telemetry"
)

// refKey is a minute of a series in the reference rollups.
type refKey struct {
	site, transport string
	ts              int64
}

// reference is the definition of the minute rollups: every window added to its minute's agg,
// as the sink did before hour blocks existed.
type reference map[refKey]*agg

func (ref reference) add(r *telemetry.Report) {
	for i := range r.Transport {
		k := refKey{r.Site, r.Transport[i].Name, floorTo(r.Time.Unix(), 60)}
		a := ref[k]
		if a == nil {
			a = &agg{ts: k.ts}
			ref[k] = a
		}
		a.add(&r.Transport[i])
	}
}

// rollups returns what History should: site's rollups of transport ("" all) in [from, to) at
// resolution, ordered by transport and time.
func (ref reference) rollups(site, transport string, from, to time.Time, res time.Duration) []Rollup {
	step := int64(res / time.Second)
	lo, hi := floorTo(from.Unix()+step-1, step), to.Unix()
	sums := map[refKey]*agg{}
	for k, a := range ref {
		if k.site != site || (transport != "" && k.transport != transport) {
			continue
		}
		p := refKey{k.site, k.transport, floorTo(k.ts, step)}
		if p.ts < lo || p.ts >= hi {
			continue
		}
		s := sums[p]
		if s == nil {
			s = &agg{ts: p.ts}
			sums[p] = s
		}
		s.merge(a)
	}
	var out []Rollup
	for k, a := range sums {
		out = append(out, a.rollup(site, k.transport, res))
	}
	slices.SortFunc(out, func(a, b Rollup) int {
		return cmp.Or(strings.Compare(a.Transport, b.Transport), a.Time.Compare(b.Time))
	})
	return out
}

// randomReports are n reports of random windows over hours hours from base, for 2 sites and 3
// transports, in random order: some all lost, some down, some late by hours.
func randomReports(rng *rand.Rand, n, hours int) []*telemetry.Report {
	sites := []string{"s1", "s2"}
	trs := []string{"inet", "lte", "mpls"}
	out := make([]*telemetry.Report, n)
	for i := range out {
		at := base.Add(time.Duration(rng.IntN(hours*3600)) * time.Second)
		r := report(sites[rng.IntN(len(sites))], fmt.Sprintf("d%d", rng.IntN(2)), at)
		for _, tr := range trs {
			if rng.IntN(4) == 0 {
				continue
			}
			sent := 1 + rng.IntN(20)
			lost := 0
			if rng.IntN(5) == 0 {
				lost = rng.IntN(sent + 1)
			}
			lat := rng.Float64() * 200
			r.Transport = append(r.Transport, win(tr, sent, lost, lat, lat*1.3, lat*0.8, lat*1.5, rng.Float64()*10, rng.Float64()*5, lost == sent && rng.IntN(2) == 0))
		}
		out[i] = r
	}
	return out
}

// TestBlocksMatchRows is the property of the hour blocks: random windows written in random
// order, flushed and compacted at random moments (late windows merging into blocks already
// written), give the same rollups from any window of time as the definition, at minutes
// (History and Minutes) and hours.
func TestBlocksMatchRows(t *testing.T) {
	ctx := context.Background()
	for seed := range uint64(6) {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 14))
			const hours = 6
			s := openEmbedded(t, EmbeddedOptions{FlushInterval: time.Hour, PruneInterval: -1})
			ref := reference{}
			for _, r := range randomReports(rng, 3000, hours) {
				if err := s.Write(ctx, r); err != nil {
					t.Fatal(err)
				}
				ref.add(r)
				switch rng.IntN(300) {
				case 0:
					if err := s.Flush(ctx); err != nil {
						t.Fatal(err)
					}
				case 1:
					if err := s.Flush(ctx); err != nil {
						t.Fatal(err)
					}
					if _, err := s.Compact(ctx, base.Add(time.Duration(rng.IntN(hours+2))*time.Hour)); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := s.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			if seed%2 == 0 { // the odd seeds leave the last compaction's state
				if _, err := s.Compact(ctx, base.Add(time.Duration(rng.IntN(hours+2))*time.Hour)); err != nil {
					t.Fatal(err)
				}
			}
			var blocks, rows int
			if err := s.db.QueryRow("SELECT (SELECT count(*) FROM minute_blocks), (SELECT count(*) FROM rollup_1m)").Scan(&blocks, &rows); err != nil {
				t.Fatal(err)
			}
			t.Logf("%d blocks, %d minute rows", blocks, rows)
			for range 40 {
				from := base.Add(time.Duration(rng.IntN(hours*3600+600)-300) * time.Second)
				to := from.Add(time.Duration(rng.IntN(hours*3600)) * time.Second)
				site := []string{"s1", "s2", "s3"}[rng.IntN(3)]
				tr := []string{"", "inet", "lte", "mpls", "nope"}[rng.IntN(5)]
				for _, res := range []time.Duration{time.Minute, time.Hour} {
					got, err := s.History(ctx, site, tr, from, to, res)
					if err != nil {
						t.Fatal(err)
					}
					checkRollups(t, got, ref.rollups(site, tr, from, to, res))
				}
				got, err := s.Minutes(ctx, site, from, to, nil)
				if err != nil {
					t.Fatal(err)
				}
				want := ref.rollups(site, "", from, to, time.Minute)
				for i := range want {
					want[i].Site, want[i].MinMs, want[i].MaxMs, want[i].StdDevMs = "", 0, 0, 0
				}
				checkRollups(t, got, want)
			}
		})
	}
}

// TestBlocksReadWhileCompacting: a reader sees every minute exactly once while Compact moves
// rows into blocks (one statement reads both layouts, so one snapshot).
func TestBlocksReadWhileCompacting(t *testing.T) {
	ctx := context.Background()
	s := openEmbedded(t, EmbeddedOptions{FlushInterval: time.Hour, PruneInterval: -1})
	var windows int64
	for m := range 4 * 60 {
		for _, site := range []string{"s1", "s2", "s3"} {
			r := report(site, "d1", base.Add(time.Duration(m)*time.Minute), win("inet", 10, 1, 20, 30, 10, 40, 2, 3, false), win("lte", 10, 1, 20, 30, 10, 40, 2, 3, false))
			if err := s.Write(ctx, r); err != nil {
				t.Fatal(err)
			}
			if site == "s2" {
				windows += 2
			}
		}
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var reads int
	var readErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var buf []Rollup
		for {
			var err error
			buf, err = s.Minutes(ctx, "s2", base, base.Add(5*time.Hour), buf[:0])
			var got int64
			for _, r := range buf {
				got += r.Windows
			}
			if err == nil && got != windows {
				err = fmt.Errorf("read %d: %d windows in %d rollups; want %d", reads, got, len(buf), windows)
			}
			reads++
			if err != nil {
				readErr = err
				return
			}
			select {
			case <-done:
				return
			default:
			}
		}
	}()
	n, err := s.Compact(ctx, base.Add(5*time.Hour))
	close(done)
	wg.Wait()
	if err != nil || n != 3*2*4*60 {
		t.Fatalf("Compact: %d rows, %v; want %d", n, err, 3*2*4*60)
	}
	if readErr != nil {
		t.Fatal(readErr)
	}
	t.Logf("%d reads during the compaction", reads)
}

// TestBlocksMigrate: a database written before the blocks existed (minute rows only) is read
// as it was at once, and converted by the sink in the background when it opens.
func TestBlocksMigrate(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, DefaultEmbeddedFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(embeddedSchema); err != nil { // the tables of the previous release
		t.Fatal(err)
	}
	ref := reference{}
	rng := rand.New(rand.NewPCG(3, 14))
	for _, r := range randomReports(rng, 2000, 30) {
		ref.add(r)
	}
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for k, a := range ref {
		var minMs any
		if a.hasMin {
			minMs = a.minMs
		}
		if _, err := tx.Exec(upsertSQL("rollup_1m", 1), k.site, k.transport, a.ts, a.windows, a.sent, a.lost, a.down,
			a.latSum, a.p95Sum, a.jitSum, a.sdSum, minMs, a.maxMs); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// A short flush interval: the background converts in many calls of half of it each.
	s := openEmbedded(t, EmbeddedOptions{DataDir: dir, PruneInterval: -1, FlushInterval: 20 * time.Millisecond})
	check := func() {
		t.Helper()
		for _, site := range []string{"s1", "s2"} {
			got, err := s.History(ctx, site, "", base, base.Add(31*time.Hour), time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			checkRollups(t, got, ref.rollups(site, "", base, base.Add(31*time.Hour), time.Minute))
		}
	}
	check() // while the sink converts
	deadline := time.Now().Add(time.Minute)
	for s.Stats().Compacted < int64(len(ref)) {
		if time.Now().After(deadline) {
			t.Fatalf("the sink converted %d of %d minute rows in a minute", s.Stats().Compacted, len(ref))
		}
		check()
		time.Sleep(10 * time.Millisecond) // polling the background conversion, with a deadline
	}
	var blocks, rows int
	if err := s.db.QueryRow("SELECT (SELECT count(*) FROM minute_blocks), (SELECT count(*) FROM rollup_1m)").Scan(&blocks, &rows); err != nil {
		t.Fatal(err)
	}
	if rows != 0 || blocks == 0 || blocks > 2*3*31 {
		t.Errorf("after Compact: %d minute rows, %d blocks; want 0 and at most 2 sites x 3 transports x 31 hours", rows, blocks)
	}
	check()
}

// TestBlocksCorrupt: a block whose data does not match its mask is an error to its reader,
// not a panic or a wrong figure.
func TestBlocksCorrupt(t *testing.T) {
	ctx := context.Background()
	s := openEmbedded(t, EmbeddedOptions{FlushInterval: time.Hour, PruneInterval: -1})
	if _, err := s.db.Exec("INSERT INTO minute_blocks (site, transport, hour, mask, data) VALUES ('s1', 'inet', ?, 7, x'0000')", base.Unix()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.History(ctx, "s1", "", base, base.Add(time.Hour), time.Minute); !errors.Is(err, errCorruptBlock) {
		t.Errorf("History: got %v; want errCorruptBlock", err)
	}
	if _, err := s.Minutes(ctx, "s1", base, base.Add(time.Hour), nil); !errors.Is(err, errCorruptBlock) {
		t.Errorf("Minutes: got %v; want errCorruptBlock", err)
	}
}

// BenchmarkMinutesDay is Minutes over one site-day of 3 transports into a reused buffer: from
// minute rows only (the layout before hour blocks, or a database not yet converted), and from
// the hour blocks (23 closed hours compacted, the last hour in minute rows).
func BenchmarkMinutesDay(b *testing.B) {
	for _, compact := range []bool{false, true} {
		name := "rows"
		if compact {
			name = "blocks"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			s := openEmbedded(b, EmbeddedOptions{FlushInterval: time.Hour, PruneInterval: -1})
			for m := range 1440 {
				r := report("s1", "d1", base.Add(time.Duration(m)*time.Minute+30*time.Second),
					win("inet", 10, 1, 20, 30, 10, 40, 2, 3, false), win("lte", 10, 1, 20, 30, 10, 40, 2, 3, false), win("mpls", 10, 1, 20, 30, 10, 40, 2, 3, false))
				if err := s.Write(ctx, r); err != nil {
					b.Fatal(err)
				}
			}
			if err := s.Flush(ctx); err != nil {
				b.Fatal(err)
			}
			if compact {
				if _, err := s.Compact(ctx, base.Add(23*time.Hour)); err != nil {
					b.Fatal(err)
				}
			}
			var buf []Rollup
			b.ReportAllocs()
			for b.Loop() {
				var err error
				buf, err = s.Minutes(ctx, "s1", base, base.Add(24*time.Hour), buf[:0])
				if err != nil || len(buf) != 3*1440 {
					b.Fatalf("%d rollups, %v", len(buf), err)
				}
			}
		})
	}
}

// TestBlocksWide: counts that do not fit a block's uint32 records make the block wide (int64
// records), before or after it was written narrow; nothing is clamped.
func TestBlocksWide(t *testing.T) {
	ctx := context.Background()
	s := openEmbedded(t, EmbeddedOptions{FlushInterval: time.Hour, PruneInterval: -1})
	k := seriesKey{"s1", "wan1"}
	row := func(ts time.Time, sent, lost int64) minuteRow {
		a := agg{ts: ts.Unix(), windows: 1, sent: sent, lost: lost, latSum: 10 * float64(sent-lost), maxMs: 20, minMs: 5, hasMin: true}
		return minuteRow{k, a}
	}
	steps := [][]minuteRow{
		{row(base, 10, 1), row(base.Add(time.Minute), 20, 0)},                // narrow
		{row(base.Add(2*time.Minute), 1<<40, 1<<39)},                         // the block turns wide
		{row(base.Add(time.Hour), 1<<33, 0)},                                 // wide from the start
		{row(base.Add(2*time.Minute), 5, 0), row(base.Add(time.Hour), 1, 1)}, // late rows merge into wide blocks
	}
	for _, rows := range steps {
		if err := s.writeRows(ctx, rows); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Compact(ctx, base.Add(2*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	var wide int
	if err := s.db.QueryRow("SELECT count(*) FROM minute_blocks WHERE mask & ? != 0", maskWide).Scan(&wide); err != nil || wide != 2 {
		t.Fatalf("%d wide blocks, %v; want 2", wide, err)
	}
	got, err := s.History(ctx, "s1", "wan1", base, base.Add(2*time.Hour), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		windows, sent, lost int64
	}{{1, 10, 1}, {1, 20, 0}, {2, 1<<40 + 5, 1 << 39}, {2, 1<<33 + 1, 1}}
	if len(got) != len(want) {
		t.Fatalf("got %d rollups %+v; want %d", len(got), got, len(want))
	}
	for i, w := range want {
		if g := got[i]; g.Windows != w.windows || g.Sent != w.sent || g.Lost != w.lost || g.LatencyMs != 10 || g.MinMs != 5 || g.MaxMs != 20 {
			t.Errorf("rollup %d: %+v; want %d windows, %d sent, %d lost, 10 ms", i, g, w.windows, w.sent, w.lost)
		}
	}
	// Pruning the older minutes of the first (wide) block rewrites it, still wide.
	if n, err := s.pruneBlocks(ctx, base.Add(90*time.Second).Unix()); err != nil || n != 2 {
		t.Fatalf("pruneBlocks: %d, %v; want the 2 minutes before 00:01:30", n, err)
	}
	if got, err := s.History(ctx, "s1", "wan1", base, base.Add(time.Hour), time.Minute); err != nil || len(got) != 1 || got[0].Sent != 1<<40+5 {
		t.Fatalf("after pruning: %+v, %v; want minute 2 of 1<<40+5 sent", got, err)
	}
}

// FuzzBlockDecode: any stored mask and data decode to an error or to minutes that encode and
// decode again to the same figures; never a panic.
func FuzzBlockDecode(f *testing.F) {
	var b block
	b.hour = base.Unix()
	b.add(&agg{ts: base.Unix() + 60, windows: 2, sent: 10, lost: 1, latSum: 90, maxMs: 20, minMs: 5, hasMin: true})
	data, mask := b.encode(nil)
	f.Add(uint64(mask), data)
	b.add(&agg{ts: base.Unix() + 120, windows: 1, sent: 1 << 40})
	data, mask = b.encode(nil)
	f.Add(uint64(mask), data)
	f.Add(uint64(7), []byte{0, 0})
	f.Fuzz(func(t *testing.T, mask uint64, data []byte) {
		var b1, b2 block
		if err := b1.decode(base.Unix(), mask, data); err != nil {
			if !errors.Is(err, errCorruptBlock) {
				t.Fatalf("decode: %v; want errCorruptBlock", err)
			}
			return
		}
		again, mask2 := b1.encode(nil)
		if err := b2.decode(base.Unix(), uint64(mask2), again); err != nil {
			t.Fatalf("decode of encode: %v", err)
		}
		if b1.mask != b2.mask {
			t.Fatalf("mask %#x, again %#x", b1.mask, b2.mask)
		}
		for m := b1.mask; m != 0; m &= m - 1 {
			i := bits.TrailingZeros64(m)
			x, y := b1.min[i], b2.min[i]
			if x.ts != y.ts || x.windows != y.windows || x.sent != y.sent || x.lost != y.lost || x.down != y.down || x.hasMin != y.hasMin {
				t.Fatalf("minute %d: %+v, again %+v", i, x, y)
			}
			for k, f := range [][2]float64{{x.latSum, y.latSum}, {x.p95Sum, y.p95Sum}, {x.jitSum, y.jitSum}, {x.sdSum, y.sdSum}, {x.minMs, y.minMs}, {x.maxMs, y.maxMs}} {
				if math.Float64bits(f[0]) != math.Float64bits(f[1]) {
					t.Fatalf("minute %d figure %d: %v, again %v", i, k, f[0], f[1])
				}
			}
		}
	})
}

// BenchmarkCompact is the conversion rate: 20 site-days of 3 transports (86,400 minute rows)
// compacted into hour blocks, per op; it reports rows/s.
func BenchmarkCompact(b *testing.B) {
	ctx := context.Background()
	var rows int64
	for b.Loop() {
		b.StopTimer()
		s := openEmbedded(b, EmbeddedOptions{FlushInterval: time.Hour, PruneInterval: -1})
		for site := range 20 {
			for m := range 1440 {
				r := report(fmt.Sprintf("s%d", site), "d1", base.Add(time.Duration(m)*time.Minute+30*time.Second),
					win("inet", 10, 1, 20, 30, 10, 40, 2, 3, false), win("lte", 10, 1, 20, 30, 10, 40, 2, 3, false), win("mpls", 10, 1, 20, 30, 10, 40, 2, 3, false))
				if err := s.Write(ctx, r); err != nil {
					b.Fatal(err)
				}
			}
		}
		if err := s.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		n, err := s.Compact(ctx, base.Add(48*time.Hour))
		if err != nil || n != 20*1440*3 {
			b.Fatalf("Compact: %d, %v", n, err)
		}
		rows += n
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
}
