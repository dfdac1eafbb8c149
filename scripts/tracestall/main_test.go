package main

import (
	"bytes"
	"context"
	"database/sql"
	"io"
	"path/filepath"
	"runtime/trace"
	"strings"
	"sync"
	"testing"
	"time"

	_ "modernc.org/sqlite"
)

// TestAnalyzeCountsPoolWaits: 20 goroutines wait for the one connection of a real SQLite pool
// while a transaction holds it for 300 ms, as the broker's CONNECTs waited for the store's
// readers; the analysis of the execution trace finds them blocked there, all at once, for
// about 20 x 300 ms in all.
func TestAnalyzeCountsPoolWaits(t *testing.T) {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, "CREATE TABLE c (u TEXT)"); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	tx, err := db.BeginTx(ctx, nil) // holds the only connection
	if err != nil {
		trace.Stop()
		t.Fatal(err)
	}
	const waiters = 20
	const hold = 300 * time.Millisecond
	var wg sync.WaitGroup
	for range waiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var n int
			_ = db.QueryRowContext(ctx, "SELECT COUNT(*) FROM c").Scan(&n)
		}()
	}
	time.Sleep(hold) // the holder's work; the waiters are what is measured
	_ = tx.Rollback()
	wg.Wait()
	trace.Stop()

	var out strings.Builder
	tot, most, err := analyze(&out, &buf, 100*time.Millisecond, "")
	if err != nil {
		t.Fatal(err)
	}
	const k = "db pool wait (credential lookup etc.)"
	if most[k] != waiters {
		t.Errorf("%d goroutines at most in the pool wait; want %d\n%s", most[k], waiters, out.String())
	}
	// Each waited from its start (within the hold) to the rollback: more than half the hold
	// each on any machine, and not more than the whole test.
	if s := tot[k] / 1e9; s < waiters*hold.Seconds()/2 || s > waiters*2 {
		t.Errorf("%.2f goroutine-s in the pool wait; want about %.1f\n%s", s, waiters*hold.Seconds(), out.String())
	}
	if !strings.Contains(out.String(), "blocked on") {
		t.Errorf("no totals printed:\n%s", out.String())
	}
	_, _, err = analyze(io.Discard, strings.NewReader("not a trace"), time.Second, "")
	if err == nil {
		t.Error("garbage analysed without an error")
	}
}
