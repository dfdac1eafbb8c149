// Package influxtest runs real InfluxDB 1.8 servers for tests.
//
// A package whose tests use it calls Main from TestMain:
//
//	func TestMain(m *testing.M) { influxtest.Main(m) }
//
//	func TestThing(t *testing.T) {
//		db := influxtest.NewDatabase(t) // a fresh database on the shared server, dropped when t ends
//		s, err := sink.NewInflux(sink.InfluxOptions{URL: db.URL, Bucket: db.Bucket})
//		...
//	}
//
// The shared server is the one at EDGEWAN_TEST_INFLUX_URL (e.g. http://127.0.0.1:8086, auth
// off, Flux on), else one this test binary starts once with scripts/influxdb.sh and stops in
// Main. Start runs a server of the test's own, for tests that stop and restart it. When
// InfluxDB cannot be started or reached, tests fail; they never skip.
package influxtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/edgewan/edgewan/scripts/scriptpath"
	"github.com/edgewan/edgewan/scripts/testserver"
)

// EnvURL names the environment variable with the URL of a running InfluxDB 1.8 server for
// tests (auth off, Flux on). Unset means each test binary starts its own.
const EnvURL = "EDGEWAN_TEST_INFLUX_URL"

// URL returns the base URL of the shared test server, starting it on first use, or fails t.
func URL(t testing.TB) string {
	t.Helper()
	if !mainCalled.Load() {
		t.Fatalf("influxtest: this package needs\n\tfunc TestMain(m *testing.M) { influxtest.Main(m) }\nso the InfluxDB server it may start is stopped when the tests end")
	}
	srvOnce.Do(func() {
		srvMu.Lock()
		defer srvMu.Unlock()
		shared, sharedErr = startShared()
	})
	srvMu.Lock()
	s, err := shared, sharedErr
	srvMu.Unlock()
	if err != nil {
		t.Fatalf("influxtest: no InfluxDB server for tests: %v", err)
	}
	return s.URL
}

// Database is a database on a test server, as an InfluxDB 2 client addresses it.
type Database struct {
	URL    string // server base URL
	Name   string // database name
	Bucket string // Name + "/autogen", the bucket of the v2 API
}

// NewDatabase creates a fresh, uniquely named database on the shared server, dropped via
// t.Cleanup.
func NewDatabase(t testing.TB) Database {
	t.Helper()
	return CreateDatabase(t, URL(t))
}

// CreateDatabase creates a fresh, uniquely named database on the server at base, dropped via
// t.Cleanup (if the server is still up then).
func CreateDatabase(t testing.TB, base string) Database {
	t.Helper()
	name := fmt.Sprintf("edgewan_test_%d_%d_%s", os.Getpid(), dbSeq.Add(1), randHex(4))
	if err := Exec(base, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("influxtest: %v", err)
	}
	t.Cleanup(func() {
		if err := Exec(base, "DROP DATABASE "+name); err != nil && !isConnRefused(err) {
			t.Errorf("influxtest: %v", err)
		}
	})
	return Database{URL: base, Name: name, Bucket: name + "/autogen"}
}

// Exec runs an InfluxQL statement (CREATE DATABASE, DROP DATABASE, ...) with POST /query.
func Exec(base, stmt string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/query", strings.NewReader(url.Values{"q": {stmt}}.Encode()))
	if err != nil {
		return fmt.Errorf("%s: %w", stmt, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%s on %s: %w", stmt, base, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK || bytes.Contains(body, []byte(`"error"`)) {
		return fmt.Errorf("%s on %s: %s: %s", stmt, base, resp.Status, bytes.TrimSpace(body))
	}
	return nil
}

// Server is a test's own InfluxDB server, which it may stop and start again.
type Server struct {
	URL    string
	dir    string
	port   int
	script string
}

// Start starts a server of t's own on a free port, with its data in a temporary directory;
// it is stopped via t.Cleanup.
func Start(t testing.TB) *Server {
	t.Helper()
	script, err := scriptpath.Find("influxdb.sh")
	if err != nil {
		t.Fatalf("influxtest: %v", err)
	}
	s := &Server{dir: t.TempDir(), script: script}
	t.Cleanup(func() {
		if _, err := testserver.Run(nil, s.script, 2*time.Minute, "stop", s.dir); err != nil {
			t.Errorf("influxtest: %v", err)
		}
	})
	var errs []error
	for attempt := 0; attempt < 3; attempt++ { // another process may grab the free port first
		s.port, err = testserver.FreePort()
		if err == nil {
			s.URL, err = testserver.Run(nil, script, 15*time.Minute, "start", s.dir, strconv.Itoa(s.port))
		}
		if err == nil {
			return s
		}
		errs = append(errs, err)
	}
	t.Fatalf("influxtest: could not start InfluxDB with %s:\n%v", script, errors.Join(errs...))
	return nil
}

// Stop stops the server; its data stays for Restart.
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	if _, err := testserver.Run(nil, s.script, 2*time.Minute, "stop", s.dir); err != nil {
		t.Fatalf("influxtest: %v", err)
	}
}

// Restart starts the stopped server again, on the same port with the same data.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	if _, err := testserver.Run(nil, s.script, 15*time.Minute, "start", s.dir, strconv.Itoa(s.port)); err != nil {
		t.Fatalf("influxtest: %v", err)
	}
}

// Main runs the package's tests and then stops the InfluxDB server this binary started, if any.
func Main(m *testing.M) { os.Exit(Wrap(m.Run)) }

// Wrap is Main for a binary that needs the servers of several packages: it runs run (m.Run, or
// another package's Wrap of it), stops the InfluxDB server this binary started, and returns
// run's code:
//
//	func TestMain(m *testing.M) { os.Exit(influxtest.Wrap(func() int { return storetest.Wrap(m.Run) })) }
func Wrap(run func() int) int {
	mainCalled.Store(true)
	return testserver.Wrap(run, shutdown)
}

type sharedServer struct {
	URL    string
	dir    string // when this binary started it, else ""
	script string
}

var (
	srvOnce    sync.Once
	srvMu      sync.Mutex // guards shared and sharedErr
	shared     *sharedServer
	sharedErr  error
	dbSeq      atomic.Int64
	mainCalled atomic.Bool
)

const (
	stalePrefix = "edgewan-influxtest-"
)

// startShared uses EDGEWAN_TEST_INFLUX_URL or starts a server. Called with srvMu held.
func startShared() (*sharedServer, error) {
	if u := os.Getenv(EnvURL); u != "" {
		u = strings.TrimRight(u, "/")
		if err := ping(u); err != nil {
			return nil, fmt.Errorf("%s=%s: %w", EnvURL, u, err)
		}
		return &sharedServer{URL: u}, nil
	}
	script, err := scriptpath.Find("influxdb.sh")
	if err != nil {
		return nil, fmt.Errorf("%w (or set %s to a running server's URL)", err, EnvURL)
	}
	testserver.ReapStale(stalePrefix, func(dir string) error {
		_, err := testserver.Run(nil, script, time.Minute, "stop", filepath.Join(dir, "influxdb"))
		return err
	})
	dir, err := testserver.OwnedDir(stalePrefix)
	if err != nil {
		return nil, err
	}
	var errs []error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := testserver.FreePort()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		u, err := testserver.Run(nil, script, 15*time.Minute, "start", filepath.Join(dir, "influxdb"), strconv.Itoa(port))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		return &sharedServer{URL: u, dir: dir, script: script}, nil
	}
	_, _ = testserver.Run(nil, script, time.Minute, "stop", filepath.Join(dir, "influxdb"))
	os.RemoveAll(dir)
	return nil, fmt.Errorf("could not start one with %s (or set %s to a running server's URL):\n%w", script, EnvURL, errors.Join(errs...))
}

func shutdown() {
	srvMu.Lock()
	defer srvMu.Unlock()
	s := shared
	if s == nil {
		return
	}
	shared, sharedErr = nil, errors.New("influxtest: server already shut down")
	if s.dir == "" {
		return
	}
	if _, err := testserver.Run(nil, s.script, 2*time.Minute, "stop", filepath.Join(s.dir, "influxdb")); err != nil {
		fmt.Fprintf(os.Stderr, "influxtest: stopping the test InfluxDB server: %v\n", err)
		return // keep the dir: the next run's reapStale tries again
	}
	os.RemoveAll(s.dir)
}

func ping(base string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/ping", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("GET %s/ping: %s; want 204 No Content", base, resp.Status)
	}
	return nil
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func isConnRefused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

// Count returns the number of points of measurement "transport" in db (InfluxQL
// SELECT count(sent)), optionally restricted by an InfluxQL condition such as
// "site = 'site-1'" ("" for none).
func Count(db Database, where string) (int64, error) {
	q := "SELECT count(sent) FROM transport"
	if where != "" {
		q += " WHERE " + where
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	u := db.URL + "/query?" + url.Values{"db": {db.Name}, "q": {q}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, fmt.Errorf("influxtest.Count: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("influxtest.Count: %w", err)
	}
	defer resp.Body.Close()
	var out struct {
		Results []struct {
			Error  string `json:"error"`
			Series []struct {
				Values [][]any `json:"values"`
			} `json:"series"`
		} `json:"results"`
	}
	dec := json.NewDecoder(resp.Body)
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil {
		return 0, fmt.Errorf("influxtest.Count: %s: %w", resp.Status, err)
	}
	if len(out.Results) != 1 {
		return 0, fmt.Errorf("influxtest.Count: %d results", len(out.Results))
	}
	if e := out.Results[0].Error; e != "" {
		return 0, fmt.Errorf("influxtest.Count: %s", e)
	}
	if len(out.Results[0].Series) == 0 {
		return 0, nil // no points
	}
	v := out.Results[0].Series[0].Values
	if len(v) != 1 || len(v[0]) != 2 {
		return 0, fmt.Errorf("influxtest.Count: unexpected answer %v", v)
	}
	c, ok := v[0][1].(json.Number)
	if !ok {
		return 0, fmt.Errorf("influxtest.Count: unexpected answer %v", v)
	}
	return c.Int64()
}
