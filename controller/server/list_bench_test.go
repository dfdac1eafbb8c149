package server_test

// BenchmarkListCases measures the latency of the core API's keyset-paginated list endpoint
// GET /v1/soc/cases over real HTTPS (loopback, kept-alive TLS connections, the servertest client)
// with 100,000 cases in the database, on SQLite and on PostgreSQL. It reports, per query shape,
// the per-request p50 and p99 in microseconds (p50-us, p99-us; ns/op is the mean).
//
// Reproduce with scripts/bench-list.sh. Each request is one timed iteration, so -benchtime Nx
// sets how many requests each percentile is computed over. The seed is built once per backend
// and shared by that backend's sub-benchmarks; seeding is never timed.
//
// The query plans of the statements behind each shape are logged (EXPLAIN QUERY PLAN on SQLite,
// EXPLAIN ANALYZE on PostgreSQL) so a regression to a scan + sort shows up next to the figures.

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgewan/edgewan/controller/server/servertest"
	"github.com/edgewan/edgewan/coreapi/event"
	"github.com/edgewan/edgewan/coreapi/ids"
	"github.com/edgewan/edgewan/coreapi/soc"
)

var benchListRows = flag.Int("bench-list-rows", 100_000, "cases seeded by BenchmarkListCases (fewer for quick trials; filtered-rare needs about 15,000 for a full page)")

// listSeedSpan is how far back the seeded cases' updated_at reach.
const listSeedSpan = 90 * 24 * time.Hour

// listSeedEnd anchors the seed's time range so every run sees the same shape of data.
var listSeedEnd = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func BenchmarkListCases(b *testing.B) {
	for _, backend := range []struct {
		name     string
		postgres bool
	}{{"sqlite", false}, {"postgres", true}} {
		b.Run(backend.name, func(b *testing.B) {
			s := servertest.Start(b, servertest.Options{Postgres: backend.postgres})
			ctx := context.Background()

			start := time.Now()
			seedCases(b, s.Store.CreateCase, *benchListRows, backend.postgres)
			b.Logf("seeded %d cases in %s", *benchListRows, time.Since(start).Round(time.Millisecond))

			db := openRaw(b, s)
			if backend.postgres {
				// Steady state: autovacuum would analyze a table this size within a minute;
				// do it now so the benchmark does not race with it.
				if _, err := db.ExecContext(ctx, "ANALYZE cases"); err != nil {
					b.Fatalf("ANALYZE: %v", err)
				}
			}

			lc := &listClient{b: b, c: s.Client, base: s.URL + "/v1/soc/cases", token: s.Key("soc:read")}

			// Cursors for the deep pages, reached by walking the list as a client would.
			p21, k21 := lc.walk("limit=50", 20)
			// The far one sits halfway down the list (page 1001 of 2000 with 100k rows).
			deep := min(1000, *benchListRows/50/2)
			p1001, k1001 := lc.walk("limit=50", deep)
			since := listSeedEnd.Add(-listSeedSpan / 2).Format(time.RFC3339Nano)

			shapes := []struct {
				name, query string
				sql         string // the statement the store runs for it, for the plan
				args        []any
			}{
				{"first-page", "limit=50",
					"SELECT " + benchCaseCols + " FROM cases ORDER BY updated_at DESC, id DESC LIMIT 51", nil},
				{"deep-page-21", "limit=50&cursor=" + url.QueryEscape(p21),
					"SELECT " + benchCaseCols + " FROM cases WHERE (updated_at, id) < (?, ?) ORDER BY updated_at DESC, id DESC LIMIT 51",
					[]any{k21.UpdatedAt.UnixMicro(), k21.ID}},
				{fmt.Sprintf("deep-page-%d", deep+1), "limit=50&cursor=" + url.QueryEscape(p1001),
					"SELECT " + benchCaseCols + " FROM cases WHERE (updated_at, id) < (?, ?) ORDER BY updated_at DESC, id DESC LIMIT 51",
					[]any{k1001.UpdatedAt.UnixMicro(), k1001.ID}},
				{"filtered-open", "status=open&limit=50",
					"SELECT " + benchCaseCols + " FROM cases WHERE status = ? ORDER BY updated_at DESC, id DESC LIMIT 51",
					[]any{"open"}},
				{"filtered-open-high", "status=open&severity=high&limit=50",
					"SELECT " + benchCaseCols + " FROM cases WHERE status = ? AND severity = ? ORDER BY updated_at DESC, id DESC LIMIT 51",
					[]any{"open", "high"}},
				// A selective filter (about 0.45% of the rows match): the page has to be found
				// among many rows that do not.
				{"filtered-rare", "status=investigating&severity=critical&source=manual&limit=50",
					"SELECT " + benchCaseCols + " FROM cases WHERE status = ? AND severity = ? AND source = ? ORDER BY updated_at DESC, id DESC LIMIT 51",
					[]any{"investigating", "critical", "manual"}},
				{"asc-since", "order=asc&since=" + url.QueryEscape(since) + "&limit=50",
					"SELECT " + benchCaseCols + " FROM cases WHERE updated_at >= ? ORDER BY updated_at ASC, id ASC LIMIT 51",
					[]any{listSeedEnd.Add(-listSeedSpan / 2).UnixMicro()}},
			}
			for _, sh := range shapes {
				logPlan(b, db, backend.postgres, sh.name, sh.sql, sh.args)
			}
			for _, sh := range shapes {
				b.Run(sh.name, func(b *testing.B) {
					u := lc.base + "?" + sh.query
					checkPage(b, sh.query, lc.page(u))
					for range 20 { // warm caches and the connection pool, untimed
						lc.get(u)
					}
					lat := make([]time.Duration, 0, b.N)
					b.ResetTimer()
					for range b.N {
						t0 := time.Now()
						lc.get(u)
						lat = append(lat, time.Since(t0))
					}
					b.StopTimer()
					slices.Sort(lat)
					b.ReportMetric(float64(percentile(lat, 50).Nanoseconds())/1e3, "p50-us")
					b.ReportMetric(float64(percentile(lat, 99).Nanoseconds())/1e3, "p99-us")
				})
			}
		})
	}
}

// checkPage checks a page of the list with query is full, matches its filters and since, and is
// in its order: the figures are only worth having for correct answers.
func checkPage(b *testing.B, query string, p casePage) {
	b.Helper()
	q, err := url.ParseQuery(query)
	if err != nil {
		b.Fatal(err)
	}
	if len(p.Data) != 50 || p.NextCursor == nil {
		b.Fatalf("%s: got %d rows (next cursor %v), want a full page of 50 and a next cursor", query, len(p.Data), p.NextCursor != nil)
	}
	var since time.Time
	if v := q.Get("since"); v != "" {
		since, _ = time.Parse(time.RFC3339Nano, v)
	}
	asc := q.Get("order") == "asc"
	for i, c := range p.Data {
		for f, got := range map[string]string{"status": c.Status, "severity": c.Severity, "source": c.Source} {
			if want := q.Get(f); want != "" && got != want {
				b.Fatalf("%s: row %d has %s %q", query, i, f, got)
			}
		}
		if c.UpdatedAt.Before(since) {
			b.Fatalf("%s: row %d updated at %s, before since", query, i, c.UpdatedAt)
		}
		if i > 0 {
			prev := p.Data[i-1]
			cmp := c.UpdatedAt.Compare(prev.UpdatedAt)
			if cmp == 0 {
				cmp = strings.Compare(c.ID, prev.ID)
			}
			if (asc && cmp <= 0) || (!asc && cmp >= 0) {
				b.Fatalf("%s: rows %d and %d out of order", query, i-1, i)
			}
		}
	}
}

const benchCaseCols = "id, title, description, severity, status, source, rule, subject, created_at, updated_at, resolved_at"

// percentile returns the p-th percentile (nearest rank) of sorted latencies.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := (len(sorted)*p + 99) / 100 // ceil(n*p/100), 1-based
	if rank < 1 {
		rank = 1
	}
	return sorted[rank-1]
}

// seedCases stores n cases through the store's own CreateCase, from several goroutines
// (SQLite serialises them on its one writer connection; PostgreSQL takes them in parallel).
// Statuses, severities and sources are mixed with fixed weights and updated_at is spread over
// listSeedSpan, all from fixed random seeds, so every run lists the same data (but for the random IDs).
func seedCases(b *testing.B, create func(context.Context, *soc.Case, *event.Envelope) error, n int, postgres bool) {
	b.Helper()
	workers := 4
	if postgres {
		workers = 16
	}
	ctx := context.Background()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				r := rand.New(rand.NewPCG(uint64(i), 42)) // per case: the same rows whatever the scheduling
				if err := create(ctx, seedCase(r, i, n), nil); err != nil {
					errs <- fmt.Errorf("seeding case %d: %w", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
}

// Weights of the seeded statuses and severities (percent): most cases of a SOC end resolved.
var (
	seedStatuses   = []weighted{{soc.StatusResolved, 60}, {soc.StatusInvestigating, 15}, {soc.StatusOpen, 25}}
	seedSeverities = []weighted{{"low", 35}, {"medium", 35}, {"high", 20}, {"critical", 10}}
)

type weighted struct {
	v string
	w int
}

func pick(r *rand.Rand, ws []weighted) string {
	x := r.IntN(100)
	for _, w := range ws {
		if x < w.w {
			return w.v
		}
		x -= w.w
	}
	return ws[len(ws)-1].v
}

func seedCase(r *rand.Rand, i, n int) *soc.Case {
	// Case i is updated at an evenly spaced point of the span, jittered, so updated_at is
	// mostly distinct but not strictly in insertion order.
	step := listSeedSpan / time.Duration(n)
	updated := listSeedEnd.Add(-listSeedSpan + time.Duration(i)*step + time.Duration(r.Int64N(int64(step)+1))).Truncate(time.Microsecond)
	created := updated.Add(-time.Duration(r.Int64N(int64(48 * time.Hour)))).Truncate(time.Microsecond)
	c := &soc.Case{
		ID:          ids.New("case"),
		Title:       fmt.Sprintf("Seeded case %d", i),
		Description: "Synthetic case for the list benchmark: repeated authentication failures from one address.",
		Severity:    pick(r, seedSeverities),
		Status:      pick(r, seedStatuses),
		Source:      soc.SourceManual,
		CreatedAt:   created,
		UpdatedAt:   updated,
	}
	if r.IntN(100) < 70 {
		c.Source, c.Rule = soc.SourceSystem, soc.RuleAuthBruteForce
		c.Subject = fmt.Sprintf("198.18.%d.%d", r.IntN(256), r.IntN(256))
	}
	if c.Status == soc.StatusResolved {
		c.ResolvedAt = updated
	}
	return c
}

// listClient makes the benchmark's requests with the servertest HTTPS client.
type listClient struct {
	b     *testing.B
	c     *http.Client
	base  string
	token string
}

// get fetches u and reads the whole body; anything but 200 fails the benchmark.
func (lc *listClient) get(u string) []byte {
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		lc.b.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+lc.token)
	resp, err := lc.c.Do(req)
	if err != nil {
		lc.b.Fatalf("GET %s: %v", u, err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		lc.b.Fatalf("GET %s: reading body: %v", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		lc.b.Fatalf("GET %s: status %d: %s", u, resp.StatusCode, body)
	}
	return body
}

type casePage struct {
	Data       []soc.Case `json:"data"`
	NextCursor *string    `json:"next_cursor"`
}

func (lc *listClient) page(u string) casePage {
	var p casePage
	if err := json.Unmarshal(lc.get(u), &p); err != nil {
		lc.b.Fatalf("GET %s: %v", u, err)
	}
	return p
}

// walk follows next_cursor through pages pages of the list with query and returns the cursor of
// the page after them, with the key of the last row walked (the cursor's position).
func (lc *listClient) walk(query string, pages int) (cursor string, last struct {
	UpdatedAt time.Time
	ID        string
}) {
	u := lc.base + "?" + query
	for i := range pages {
		p := lc.page(u)
		if p.NextCursor == nil || len(p.Data) == 0 {
			lc.b.Fatalf("walk: list ended at page %d of %d", i+1, pages)
		}
		l := p.Data[len(p.Data)-1]
		last.UpdatedAt, last.ID = l.UpdatedAt, l.ID
		cursor = *p.NextCursor
		u = lc.base + "?" + query + "&cursor=" + url.QueryEscape(cursor)
	}
	return cursor, last
}

// openRaw opens the server's database directly (read-only use: plans, ANALYZE).
func openRaw(b *testing.B, s *servertest.Server) *sql.DB {
	b.Helper()
	var db *sql.DB
	var err error
	if s.Config.DatabaseURL != "" {
		db, err = sql.Open("pgx", s.Config.DatabaseURL)
	} else {
		db, err = sql.Open("sqlite", "file:"+filepath.Join(s.Config.DataDir, "edgewan.db")+"?_pragma=busy_timeout(10000)")
	}
	if err != nil {
		b.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	b.Cleanup(func() { db.Close() })
	return db
}

// logPlan logs the plan of query: EXPLAIN QUERY PLAN on SQLite; on PostgreSQL, EXPLAIN ANALYZE
// (which runs it, so the log shows rows actually visited) of both the custom plan (planned for
// these values) and the generic one (planned for any values), because the controller's pgx
// driver prepares and caches its statements and PostgreSQL switches a prepared statement to the
// generic plan after five executions when it does not estimate it dearer.
func logPlan(b *testing.B, db *sql.DB, postgres bool, name, query string, args []any) {
	b.Helper()
	ctx := context.Background()
	if !postgres {
		b.Logf("plan %s:\n\t%s", name, strings.Join(planLines(b, ctx, db, "EXPLAIN QUERY PLAN "+query, args...), "\n\t"))
		return
	}
	n := 0
	var sb strings.Builder
	for _, c := range query {
		if c == '?' {
			n++
			fmt.Fprintf(&sb, "$%d", n)
			continue
		}
		sb.WriteRune(c)
	}
	// Literal arguments for EXECUTE: only int64 and simple strings occur here.
	lits := make([]string, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case int64:
			lits[i] = fmt.Sprint(v)
		case string:
			lits[i] = "'" + strings.ReplaceAll(v, "'", "''") + "'"
		default:
			b.Fatalf("plan of %s: argument type %T", name, a)
		}
	}
	conn, err := db.Conn(ctx) // PREPARE and SET are per session
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	for _, stmt := range []string{"DEALLOCATE ALL", "PREPARE benchplan AS " + sb.String()} {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			b.Fatalf("plan of %s: %s: %v", name, stmt, err)
		}
	}
	exec := "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) EXECUTE benchplan"
	if len(lits) > 0 {
		exec += "(" + strings.Join(lits, ", ") + ")"
	}
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		if _, err := conn.ExecContext(ctx, "SET plan_cache_mode = "+mode); err != nil {
			b.Fatal(err)
		}
		b.Logf("plan %s (%s):\n\t%s", name, mode, strings.Join(planLines(b, ctx, conn, exec), "\n\t"))
	}
}

func planLines(b *testing.B, ctx context.Context, db interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, query string, args ...any) []string {
	b.Helper()
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		b.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var lines []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			b.Fatalf("%s: %v", query, err)
		}
		lines = append(lines, fmt.Sprint(vals[len(vals)-1])) // SQLite: detail; PostgreSQL: the line
	}
	if err := rows.Err(); err != nil {
		b.Fatalf("%s: %v", query, err)
	}
	return lines
}
