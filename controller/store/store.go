// Package store is the controller's repository layer: one schema, migrated by goose, on
// SQLite (embedded default, WAL) or PostgreSQL (pgx), behind plain methods per resource.
package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
	"github.com/pressly/goose/v3"
	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/edgewan/edgewan/coreapi/apierr"
	"github.com/edgewan/edgewan/coreapi/page"
	"github.com/edgewan/edgewan/coreapi/seal"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Options say which database to open.
type Options struct {
	// DatabaseURL selects PostgreSQL (postgres:// or postgresql://). Empty means SQLite.
	DatabaseURL string
	// DataDir holds edgewan.db when DatabaseURL is empty.
	DataDir string
	// Secrets seals webhook signing secrets at rest (webhooks.go); Open seals any stored in
	// plain text before. nil keeps them as given (for tools that never touch webhooks).
	// PreviousSecrets, if set, opens values sealed with the key Secrets replaced: Open reseals
	// them with Secrets (key rotation, docs/security.md).
	Secrets, PreviousSecrets *seal.Key
}

// Store is the controller's database. Its methods are safe for concurrent use.
type Store struct {
	w        *sql.DB // writes (SQLite: one connection, so writers queue in Go, not in busy loops)
	r        *sql.DB // reads (SQLite: a pool of WAL readers; PostgreSQL: the same pool as w)
	postgres bool
	secrets  *seal.Key
	fence    Fencer // scaled-out mode: SetFence (fence.go)
	creds    credCache
}

// Open opens (creating if needed) and migrates the database.
func Open(ctx context.Context, o Options) (*Store, error) {
	s, err := open(o)
	if err != nil {
		return nil, err
	}
	if err := s.migrate(ctx); err != nil {
		s.Close()
		return nil, err
	}
	if o.Secrets != nil {
		s.secrets = o.Secrets
		if err := s.sealWebhookSecrets(ctx, o.PreviousSecrets); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

func open(o Options) (*Store, error) {
	if u := o.DatabaseURL; strings.HasPrefix(u, "postgres://") || strings.HasPrefix(u, "postgresql://") {
		db, err := sql.Open("pgx", u)
		if err != nil {
			return nil, fmt.Errorf("store.Open: postgres: %w", err)
		}
		db.SetMaxOpenConns(32)
		db.SetMaxIdleConns(32)
		db.SetConnMaxIdleTime(5 * time.Minute)
		return &Store{w: db, r: db, postgres: true}, nil
	} else if u != "" {
		return nil, fmt.Errorf("store.Open: database URL must start with postgres:// (got scheme %q); leave it empty for the embedded SQLite", strings.SplitN(u, ":", 2)[0])
	}
	if o.DataDir == "" {
		return nil, errors.New("store.Open: no data dir for SQLite")
	}
	if err := os.MkdirAll(o.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("store.Open: %w", err)
	}
	path := filepath.Join(o.DataDir, "edgewan.db")
	// SQLite creates the database as 0644 less the umask, and its -wal and -shm files with the
	// database's mode: create it 0600 first (and narrow an older one), whatever the umask.
	if err := privateFiles(path, path+"-wal", path+"-shm"); err != nil {
		return nil, fmt.Errorf("store.Open: %w", err)
	}
	dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_txlock=immediate"
	w, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("store.Open: sqlite: %w", err)
	}
	w.SetMaxOpenConns(1)
	r, err := sql.Open("sqlite", dsn+"&_pragma=query_only(1)")
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("store.Open: sqlite: %w", err)
	}
	r.SetMaxOpenConns(8)
	r.SetMaxIdleConns(8)
	return &Store{w: w, r: r}, nil
}

// privateFiles creates paths[0] empty at mode 0600 if it does not exist, and narrows every
// existing one of paths to 0600, whatever the umask.
func privateFiles(paths ...string) error {
	for i, p := range paths {
		if i == 0 {
			f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
			if err != nil {
				return err
			}
			f.Close()
		}
		fi, err := os.Stat(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if fi.Mode().Perm() != 0o600 {
			if err := os.Chmod(p, 0o600); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *Store) migrate(ctx context.Context) error {
	dialect := goose.DialectSQLite3
	if s.postgres {
		dialect = goose.DialectPostgres
	}
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return fmt.Errorf("store.migrate: %w", err)
	}
	p, err := goose.NewProvider(dialect, s.w, sub)
	if err != nil {
		return fmt.Errorf("store.migrate: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("store.migrate: %w", err)
	}
	return nil
}

// Close closes the database.
func (s *Store) Close() error {
	err := s.w.Close()
	if s.r != s.w {
		err = errors.Join(err, s.r.Close())
	}
	return err
}

// Ping checks the database answers (readiness).
func (s *Store) Ping(ctx context.Context) error {
	if err := s.w.PingContext(ctx); err != nil {
		return fmt.Errorf("store.Ping: %w", err)
	}
	return nil
}

// Backend names the database kind: "sqlite" or "postgres".
func (s *Store) Backend() string {
	if s.postgres {
		return "postgres"
	}
	return "sqlite"
}

// q rewrites ?-placeholders to $n for PostgreSQL. Queries never hold a literal '?'.
func (s *Store) q(query string) string {
	if !s.postgres {
		return query
	}
	var b strings.Builder
	b.Grow(len(query) + 16)
	n := 0
	for i := 0; i < len(query); i++ {
		if query[i] == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(query[i])
	}
	return b.String()
}

func (s *Store) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return s.w.ExecContext(ctx, s.q(query), args...)
}

// tx runs fn in a write transaction, committing if fn returns nil.
func (s *Store) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// isUnique reports whether err is a unique-constraint violation on either backend.
func isUnique(err error) bool {
	if err == nil {
		return false
	}
	m := err.Error()
	return strings.Contains(m, "UNIQUE constraint failed") || strings.Contains(m, "SQLSTATE 23505")
}

// Times are stored as Unix microseconds in BIGINT columns on both backends; 0 means unset.
func micros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

func fromMicros(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return time.UnixMicro(us).UTC()
}

// listQuery is one keyset-paginated SELECT over a table with updated_at and id columns.
type listQuery struct {
	cols        string // selected columns
	from        string // table, or tables joined
	tablePrefix string // qualifies updated_at and id when from joins tables, e.g. "d."
	where       []string
	args        []any
	params      page.Params
}

// filter adds "col = ?" when v is not empty.
func (l *listQuery) filter(col, v string) {
	if v != "" {
		l.where = append(l.where, col+" = ?")
		l.args = append(l.args, v)
	}
}

// sql builds the statement; it fetches Limit+1 rows so page.Page can tell if another page exists.
func (l *listQuery) sql() (string, []any) {
	where, args := append([]string(nil), l.where...), append([]any(nil), l.args...)
	if !l.params.Since.IsZero() {
		where = append(where, l.tablePrefix+"updated_at >= ?")
		args = append(args, micros(l.params.Since))
	}
	dir, cmp := "DESC", "<"
	if !l.params.Desc {
		dir, cmp = "ASC", ">"
	}
	if a := l.params.After; a != nil {
		where = append(where, "("+l.tablePrefix+"updated_at, "+l.tablePrefix+"id) "+cmp+" (?, ?)")
		args = append(args, a.UpdatedAt.UnixMicro(), a.ID)
	}
	var b strings.Builder
	b.WriteString("SELECT " + l.cols + " FROM " + l.from)
	if len(where) > 0 {
		b.WriteString(" WHERE " + strings.Join(where, " AND "))
	}
	fmt.Fprintf(&b, " ORDER BY %supdated_at %s, %sid %s LIMIT %d", l.tablePrefix, dir, l.tablePrefix, dir, l.params.Limit+1)
	return b.String(), args
}

// queryList runs l. On PostgreSQL a list with resource filters is planned for its actual filter
// values on every run (pgx's describe-cache mode, an unnamed statement) instead of being run as a
// cached prepared statement: after five runs PostgreSQL switches those to a generic plan, made for
// any value, which walks the (updated_at, id) index and discards the rows that do not match even
// where a filter index such as cases_status_updated would read only the page; with a selective
// filter that is thousands of rows per page. Planning costs about 60µs a run; unfiltered lists
// keep their cached plan (see BenchmarkListCases).
func (s *Store) queryList(ctx context.Context, l listQuery, scan func(*sql.Rows) error) error {
	query, args := l.sql()
	if s.postgres && len(l.where) > 0 {
		args = append([]any{pgx.QueryExecModeCacheDescribe}, args...)
	}
	return s.queryRows(ctx, query, args, scan)
}

func (s *Store) queryRows(ctx context.Context, query string, args []any, scan func(*sql.Rows) error) error {
	rows, err := s.r.QueryContext(ctx, s.q(query), args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// notFound wraps apierr.ErrNotFound with what was missing, as the client will read it.
func notFound(kind, id string) error {
	return apierr.NotFound("%s %q not found", kind, id)
}
