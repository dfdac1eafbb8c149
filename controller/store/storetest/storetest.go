// Package storetest opens fresh stores on every backend for tests.
//
// Every test that touches the database runs on both backends, SQLite and a real PostgreSQL:
//
//	func TestMain(m *testing.M) { storetest.Main(m) }
//
//	func TestThing(t *testing.T) {
//		for _, b := range storetest.Backends(t) {
//			t.Run(b.Name, func(t *testing.T) {
//				s := b.Open(t) // fresh, migrated, closed (and dropped) when t ends
//				...
//			})
//		}
//	}
//
// The PostgreSQL server is the one at EDGEWAN_TEST_POSTGRES_URL (an admin URL such as
// postgres://postgres@127.0.0.1:5433/postgres?sslmode=disable; scripts/test.sh starts one and
// sets it), else one this test binary starts once with scripts/postgres.sh and stops in Main.
// Each Postgres or PostgresURL call gets its own database on that server. When PostgreSQL
// cannot be started or reached, tests fail; they never skip.
package storetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver

	"github.com/edgewan/edgewan/controller/store"
	"github.com/edgewan/edgewan/scripts/scriptpath"
	"github.com/edgewan/edgewan/scripts/testserver"
)

// EnvPostgresURL names the environment variable with the admin URL of a running PostgreSQL
// server for tests. Unset means each test binary starts its own.
const EnvPostgresURL = "EDGEWAN_TEST_POSTGRES_URL"

// Backend is one database kind a store can run on.
type Backend struct {
	Name string                          // "sqlite" or "postgres", as store.Store.Backend reports
	Open func(t testing.TB) *store.Store // a fresh, migrated store, closed when t ends
}

// Backends lists every backend the store supports; run each test on all of them.
func Backends(t testing.TB) []Backend {
	t.Helper()
	return []Backend{
		{Name: "sqlite", Open: SQLite},
		{Name: "postgres", Open: Postgres},
	}
}

// SQLite opens a fresh SQLite store in a temporary data dir, closed via t.Cleanup.
func SQLite(t testing.TB) *store.Store {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := store.Open(ctx, store.Options{DataDir: dir})
	if err != nil {
		t.Fatalf("storetest: open SQLite store in %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("storetest: close SQLite store: %v", err)
		}
	})
	return s
}

// Postgres opens a store on a fresh, uniquely named database of the shared test server. The
// store is closed and the database dropped via t.Cleanup.
func Postgres(t testing.TB) *store.Store {
	t.Helper()
	u := PostgresURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := store.Open(ctx, store.Options{DatabaseURL: u})
	if err != nil {
		t.Fatalf("storetest: open PostgreSQL store on %s: %v", u, err)
	}
	t.Cleanup(func() { // runs before PostgresURL's drop (cleanups run last-in, first-out)
		if err := s.Close(); err != nil {
			t.Errorf("storetest: close PostgreSQL store: %v", err)
		}
	})
	return s
}

// PostgresURL creates a fresh, empty database on the shared test server and returns its URL
// (for tests that run the controller binary with --database-url). The database is dropped
// via t.Cleanup, forcibly, so connections still open then do not stop it.
func PostgresURL(t testing.TB) string {
	t.Helper()
	srv := server(t)
	name := fmt.Sprintf("edgewan_test_%d_%d_%s", os.Getpid(), dbSeq.Add(1), randHex(4))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// template0: nobody is ever connected to it, so concurrent CREATEs cannot collide on it.
	if _, err := srv.admin.ExecContext(ctx, "CREATE DATABASE "+name+" TEMPLATE template0 ENCODING 'UTF8'"); err != nil {
		t.Fatalf("storetest: CREATE DATABASE %s on %s: %v", name, redact(srv.url), err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := srv.admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("storetest: DROP DATABASE %s: %v", name, err)
		}
	})
	u := *srv.parsed
	u.Path = "/" + name
	u.RawPath = ""
	return u.String()
}

// Main runs the package's tests and then stops the PostgreSQL server this binary started, if
// any. Every package that uses storetest calls it from TestMain:
//
//	func TestMain(m *testing.M) { storetest.Main(m) }
func Main(m *testing.M) { os.Exit(Wrap(m.Run)) }

// Wrap is Main for a binary that needs the servers of several packages: it runs run (m.Run, or
// another package's Wrap of it), stops the PostgreSQL server this binary started, and returns
// run's code:
//
//	func TestMain(m *testing.M) { os.Exit(influxtest.Wrap(func() int { return storetest.Wrap(m.Run) })) }
func Wrap(run func() int) int {
	mainCalled.Store(true)
	return testserver.Wrap(run, shutdown)
}

// pgServer is the shared PostgreSQL server of this test binary.
type pgServer struct {
	url    string   // admin URL
	parsed *url.URL // url, parsed
	admin  *sql.DB  // for CREATE/DROP DATABASE
	dir    string   // cluster dir when this binary started the server, else ""
	script string   // scripts/postgres.sh when dir != ""
}

var (
	srvOnce    sync.Once
	srv        *pgServer
	srvErr     error
	srvMu      sync.Mutex // guards srv and srvErr (a signal may shut down while a test starts)
	dbSeq      atomic.Int64
	mainCalled atomic.Bool
)

// server returns the shared server, starting it on first use, or fails the test.
func server(t testing.TB) *pgServer {
	t.Helper()
	if !mainCalled.Load() {
		t.Fatalf("storetest: this package needs\n\tfunc TestMain(m *testing.M) { storetest.Main(m) }\nso the PostgreSQL server it may start is stopped when the tests end")
	}
	srvOnce.Do(func() {
		srvMu.Lock()
		defer srvMu.Unlock()
		srv, srvErr = startServer()
	})
	srvMu.Lock()
	s, err := srv, srvErr
	srvMu.Unlock()
	if err != nil {
		t.Fatalf("storetest: no PostgreSQL server for tests: %v", err)
	}
	return s
}

// startServer connects to EDGEWAN_TEST_POSTGRES_URL or starts a server. Called with srvMu held.
func startServer() (*pgServer, error) {
	if u := os.Getenv(EnvPostgresURL); u != "" {
		s, err := connect(u)
		if err != nil {
			return nil, fmt.Errorf("%s=%s: %w", EnvPostgresURL, redact(u), err)
		}
		return s, nil
	}
	script, err := scriptpath.Find("postgres.sh")
	if err != nil {
		return nil, fmt.Errorf("%w (or set %s to a running server's admin URL)", err, EnvPostgresURL)
	}
	testserver.ReapStale(stalePrefix, func(dir string) error {
		_, err := testserver.Run(nil, script, time.Minute, "stop", dir)
		return err
	})
	dir, err := testserver.OwnedDir(stalePrefix)
	if err != nil {
		return nil, err
	}
	var errs []error
	for attempt := 0; attempt < 3; attempt++ { // another process may grab the free port first
		port, err := testserver.FreePort()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		u, err := testserver.Run(nil, script, 15*time.Minute, "start", dir, strconv.Itoa(port))
		if err != nil {
			errs = append(errs, err)
			if m := err.Error(); strings.Contains(m, "already in use") || strings.Contains(m, "could not start PostgreSQL") {
				continue // maybe lost the port to a neighbour: try another
			}
			break
		}
		s, err := connect(u)
		if err != nil {
			errs = append(errs, err)
			_, _ = testserver.Run(nil, script, time.Minute, "stop", dir)
			continue
		}
		s.dir, s.script = dir, script
		return s, nil
	}
	_, _ = testserver.Run(nil, script, time.Minute, "stop", dir)
	os.RemoveAll(dir)
	return nil, fmt.Errorf("could not start one with %s (or set %s to a running server's admin URL):\n%w", script, EnvPostgresURL, errors.Join(errs...))
}

// shutdown closes the admin pool and stops the server if this binary started it.
func shutdown() {
	srvMu.Lock()
	defer srvMu.Unlock()
	s := srv
	if s == nil {
		return
	}
	srv, srvErr = nil, errors.New("storetest: server already shut down")
	s.admin.Close()
	if s.dir == "" {
		return
	}
	if _, err := testserver.Run(nil, s.script, 2*time.Minute, "stop", s.dir); err != nil {
		fmt.Fprintf(os.Stderr, "storetest: stopping the test PostgreSQL server: %v\n", err)
		return // keep the dir: the next run's reapStale tries again
	}
	os.RemoveAll(s.dir)
}

// connect opens the admin pool on u and checks the server answers.
func connect(u string) (*pgServer, error) {
	parsed, err := url.Parse(u)
	if err != nil || (parsed.Scheme != "postgres" && parsed.Scheme != "postgresql") {
		return nil, fmt.Errorf("want a postgres:// URL, got %q", redact(u))
	}
	db, err := sql.Open("pgx", u)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(4)
	var lastErr error
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		lastErr = db.PingContext(ctx)
		cancel()
		if lastErr == nil {
			return &pgServer{url: u, parsed: parsed, admin: db}, nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	db.Close()
	return nil, fmt.Errorf("cannot reach PostgreSQL at %s: %w", redact(u), lastErr)
}

const (
	stalePrefix = "edgewan-storetest-pg-"
)

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// redact hides a password in a URL for messages.
func redact(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(unparsable URL)"
	}
	return p.Redacted()
}
