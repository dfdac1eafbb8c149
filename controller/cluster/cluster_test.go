package cluster

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/edgewan/edgewan/controller/store/storetest"
)

func TestMain(m *testing.M) {
	code := storetest.Wrap(m.Run)
	if binDir != "" { // the controller binary built once for the run (procs_test.go)
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

const testTTL = 1500 * time.Millisecond

func openDB(t *testing.T) *sql.DB {
	t.Helper()
	return openDBURL(t, storetest.PostgresURL(t))
}

func openDBURL(t testing.TB, u string) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// node is a running member with the partitions its callbacks say it holds.
type node struct {
	m      *Member
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	active map[int]bool // between OnAcquire and OnRelease
}

func start(t *testing.T, db *sql.DB, id string) *node {
	t.Helper()
	n := &node{done: make(chan struct{}), active: map[int]bool{}}
	m, err := New(context.Background(), Options{DB: db, ID: id, TTL: testTTL,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		OnAcquire: func(p int, _ int64) {
			n.mu.Lock()
			n.active[p] = true
			n.mu.Unlock()
		},
		OnRelease: func(p int) {
			n.mu.Lock()
			delete(n.active, p)
			n.mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	n.m = m
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	go func() { defer close(n.done); _ = m.Run(ctx) }()
	t.Cleanup(n.stop)
	return n
}

// stop leaves gracefully; kill stops the member without releasing anything, as kill -9 (or
// a process frozen for good) would. Its Member keeps its last view of its leases, so the
// watcher checks that this view expires before anyone else takes them.
func (n *node) stop() { n.cancel(); <-n.done }
func (n *node) kill() {
	n.m.mu.Lock()
	n.m.abandon = true
	n.m.mu.Unlock()
	n.stop()
}

// watch checks, every millisecond until the test ends, that no partition is ever owned by two
// members at once, by Owns/Epoch or by the callbacks; it counts violations.
func watch(t *testing.T, nodes *[]*node, mu *sync.Mutex) *atomic.Int64 {
	var bad atomic.Int64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			mu.Lock()
			ns := *nodes
			mu.Unlock()
			for p := range DefaultPartitions {
				owners := 0
				for _, n := range ns {
					if _, ok := n.m.Epoch(p); ok {
						owners++
					}
				}
				if owners > 1 {
					bad.Add(1)
				}
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
	return &bad
}

// waitFor polls cond (the state lives in PostgreSQL and in each member's lease clock: there is
// no event to wait on) until it holds or within fails.
func waitFor(t testing.TB, within time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > within {
			t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(start)
}

// balanced reports whether ns own every partition between them, each within one of the fair
// share.
func balanced(ns ...*node) bool {
	total := 0
	share := (DefaultPartitions + len(ns) - 1) / len(ns)
	for _, n := range ns {
		k := len(n.m.Owned())
		if k > share || k < DefaultPartitions/len(ns)-1 {
			return false
		}
		total += k
	}
	return total == DefaultPartitions
}

func TestLeases(t *testing.T) {
	db := openDB(t)
	var mu sync.Mutex
	var nodes []*node
	bad := watch(t, &nodes, &mu)
	add := func(id string) *node {
		n := start(t, db, id)
		mu.Lock()
		nodes = append(nodes, n)
		mu.Unlock()
		return n
	}
	a, b, c := add("a"), add("b"), add("c")
	waitFor(t, 10*testTTL, "3 members share 16 partitions", func() bool { return balanced(a, b, c) })

	// kill -9 of c: its partitions move to a and b within TTL + one renewal period (+ slack
	// for a loaded machine), with a new epoch; c's old epoch is fenced.
	lost := c.m.Owned()
	oldEpoch, _ := c.m.Epoch(lost[0])
	c.kill()
	took := waitFor(t, 4*testTTL, "a and b take c's partitions", func() bool { return balanced(a, b) })
	t.Logf("takeover after kill: %v (TTL %v)", took, testTTL)
	tx, err := db.BeginTx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckEpoch(context.Background(), tx, lost[0], oldEpoch); !errors.Is(err, ErrFenced) {
		t.Errorf("CheckEpoch with the dead member's epoch: got %v; want ErrFenced", err)
	}
	_ = tx.Rollback()
	owner := a
	if _, ok := a.m.Epoch(lost[0]); !ok {
		owner = b
	}
	e, _ := owner.m.Epoch(lost[0])
	tx, err = db.BeginTx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckEpoch(context.Background(), tx, lost[0], e); err != nil || e <= oldEpoch {
		t.Errorf("CheckEpoch with the new owner's epoch %d (old %d): %v", e, oldEpoch, err)
	}
	_ = tx.Rollback()

	// A member joins: it gets its share.
	d := add("d")
	waitFor(t, 10*testTTL, "d gets its share", func() bool { return balanced(a, b, d) })

	// Graceful stop of a: its partitions move without waiting for the lease to expire.
	a.stop()
	took = waitFor(t, 4*testTTL, "b and d take a's partitions", func() bool { return balanced(b, d) })
	t.Logf("takeover after a graceful stop: %v", took)

	// The callbacks agree with Owned.
	for _, n := range []*node{b, d} {
		n.mu.Lock()
		got := len(n.active)
		n.mu.Unlock()
		if want := len(n.m.Owned()); got != want {
			t.Errorf("callbacks say %d partitions active; Owned says %d", got, want)
		}
	}
	if n := bad.Load(); n != 0 {
		t.Errorf("%d samples saw a partition owned by two members at once", n)
	}
}

func TestPartitionCountMismatch(t *testing.T) {
	db := openDB(t)
	if _, err := New(context.Background(), Options{DB: db, ID: "a"}); err != nil {
		t.Fatal(err)
	}
	_, err := New(context.Background(), Options{DB: db, ID: "b", Partitions: 8})
	if err == nil || !errorContains(err, "all controllers must agree") {
		t.Errorf("got %v; want a refusal naming the mismatch", err)
	}
}

func errorContains(err error, s string) bool { return err != nil && strings.Contains(err.Error(), s) }

func TestPartitionMatchesFNV(t *testing.T) {
	// Values the NATS server 2.9.10 mapping partition(16, site) produced for these sites
	// (scripts/nats.sh; TestNATSPartitionMapping in controller/mqtt checks it live).
	want := map[string]int{"site-0": 11, "site-1": 8, "site-2": 1, "site-3": 14, "site-9": 0}
	for s, p := range want {
		if got := Partition(s, 16); got != p {
			t.Errorf("Partition(%q, 16) = %d; want %d", s, got, p)
		}
	}
}
