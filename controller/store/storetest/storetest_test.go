package storetest_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/edgewan/edgewan/controller/store"
	"github.com/edgewan/edgewan/controller/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

func TestBackends(t *testing.T) {
	backends := storetest.Backends(t)
	if len(backends) != 2 {
		t.Fatalf("Backends: got %d, want sqlite and postgres", len(backends))
	}
	for i, want := range []string{"sqlite", "postgres"} {
		b := backends[i]
		if b.Name != want {
			t.Fatalf("Backends[%d].Name = %q, want %q", i, b.Name, want)
		}
		t.Run(b.Name, func(t *testing.T) {
			s := b.Open(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := s.Ping(ctx); err != nil {
				t.Fatalf("Ping: %v", err)
			}
			if got := s.Backend(); got != want {
				t.Fatalf("Backend() = %q, want %q", got, want)
			}
		})
	}
}

func TestPostgresDatabasesAreIndependent(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, b := storetest.Postgres(t), storetest.Postgres(t)
	for _, s := range []*store.Store{a, b} {
		if err := s.Ping(ctx); err != nil {
			t.Fatalf("Ping: %v", err)
		}
	}

	// Two URLs name two different, empty databases; a table made in one is not in the other.
	u1, u2 := storetest.PostgresURL(t), storetest.PostgresURL(t)
	if u1 == u2 {
		t.Fatalf("PostgresURL returned the same URL twice: %s", u1)
	}
	db1, db2 := openDB(t, u1), openDB(t, u2)
	if _, err := db1.ExecContext(ctx, "CREATE TABLE only_here (x int)"); err != nil {
		t.Fatalf("create table: %v", err)
	}
	var n int
	if err := db2.QueryRowContext(ctx, "SELECT count(*) FROM information_schema.tables WHERE table_name = 'only_here'").Scan(&n); err != nil {
		t.Fatalf("query: %v", err)
	}
	if n != 0 {
		t.Fatalf("table made in %s is visible in %s", u1, u2)
	}
	if !strings.HasPrefix(u1, "postgres://") && !strings.HasPrefix(u1, "postgresql://") {
		t.Fatalf("PostgresURL = %q, want a postgres:// URL", u1)
	}
	// The controller opens such a URL itself: it must migrate cleanly there.
	s, err := store.Open(ctx, store.Options{DatabaseURL: u2})
	if err != nil {
		t.Fatalf("store.Open(%s): %v", u2, err)
	}
	defer s.Close()
	if got := s.Backend(); got != "postgres" {
		t.Fatalf("Backend() = %q, want postgres", got)
	}
}

func openDB(t *testing.T, u string) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
