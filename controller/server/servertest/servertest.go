// Package servertest runs a real controller for tests: HTTPS on a loopback port with its own
// generated CA, on SQLite or PostgreSQL, with helpers to mint keys and make requests.
package servertest

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgewan/edgewan/controller/config"
	"github.com/edgewan/edgewan/controller/server"
	"github.com/edgewan/edgewan/controller/store/storetest"
	"github.com/edgewan/edgewan/coreapi/auth"
)

var quietLogs sync.Once

// Server is a controller running for one test.
type Server struct {
	*server.Server
	URL    string // https://127.0.0.1:PORT
	Client *http.Client
	Config config.Config
	t      testing.TB
	once   sync.Once
	stop   func()
}

// Stop shuts the controller down gracefully (as SIGTERM does) and waits for it; a test may
// then start another on the same Config.DataDir.
func (s *Server) Stop() { s.stop() }

// Options adjust the test server's configuration before it starts.
type Options struct {
	Postgres bool                 // use a fresh PostgreSQL database instead of SQLite
	Config   func(*config.Config) // may change anything
}

// Start runs a controller until the test ends. Rate limiting is off unless Config turns it on;
// webhook retries start after 50ms so retry tests run quickly.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	quietLogs.Do(func() {
		if os.Getenv("EDGEWAN_TEST_LOGS") == "" { // set it to see the controllers' logs
			slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
		}
	})
	cfg := config.Default()
	cfg.DataDir = t.TempDir() // Config may set another, e.g. a stopped server's
	cfg.Listen = "127.0.0.1:0"
	cfg.MetricsListen = "127.0.0.1:0"
	cfg.MQTTListen = "127.0.0.1:0"
	cfg.RateLimit = 0
	cfg.AllowHTTPWebhooks = true
	cfg.WebhookRetryBase = 50 * time.Millisecond
	cfg.WebhookRetryMax = time.Second
	cfg.WebhookTimeout = 5 * time.Second
	cfg.ShutdownTimeout = 10 * time.Second
	if o.Postgres {
		cfg.DatabaseURL = storetest.PostgresURL(t)
	}
	if o.Config != nil {
		o.Config(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := server.New(ctx, cfg)
	if err != nil {
		cancel()
		t.Fatalf("servertest: starting controller: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	s := &Server{Server: srv, Config: cfg, t: t, URL: "https://" + srv.Addr()}
	s.stop = func() {
		s.once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("servertest: controller stopped with error: %v", err)
			}
		})
	}
	t.Cleanup(s.stop)
	switch {
	case cfg.PlainHTTP:
		s.URL = "http://" + srv.Addr()
		s.Client = &http.Client{Timeout: 30 * time.Second}
	case srv.CAFile != "":
		s.Client = ClientTrusting(t, srv.CAFile)
	default: // the test gave its own certificate and brings its own client
		s.Client = &http.Client{Timeout: 30 * time.Second}
	}
	s.waitReady()
	return s
}

// waitReady waits until /readyz answers 200: Run marks the server ready once it serves.
func (s *Server) waitReady() {
	c := s.Client
	if s.CAFile == "" && !s.Config.PlainHTTP {
		// The test brought its own certificate; readiness is all this client checks.
		c = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := c.Get(s.URL + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("servertest: controller not ready after 10s (last error %v)", err)
		}
		time.Sleep(5 * time.Millisecond) // polling readiness, bounded by the deadline
	}
}

// ClientTrusting returns an HTTP client that trusts only the CA in caFile.
func ClientTrusting(t testing.TB, caFile string) *http.Client {
	t.Helper()
	pem, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatalf("servertest: reading CA: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("servertest: no certificate in %s", caFile)
	}
	return &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, MaxIdleConnsPerHost: 64},
	}
}

// Key creates an API key with scopes and returns its token.
func (s *Server) Key(scopes ...string) string {
	s.t.Helper()
	_, tok, err := auth.Create(context.Background(), s.Store, "test", scopes, "")
	if err != nil {
		s.t.Fatalf("servertest: creating key: %v", err)
	}
	return tok
}

// ProjectKey creates an AI gateway key for project and returns its token.
func (s *Server) ProjectKey(project string) string {
	s.t.Helper()
	_, tok, err := auth.Create(context.Background(), s.Store, "test", nil, project)
	if err != nil {
		s.t.Fatalf("servertest: creating key: %v", err)
	}
	return tok
}

// Response is a finished request.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into v, failing the test if it is not JSON.
func (r *Response) JSON(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("response body is not the JSON expected (%v): %s", err, r.Body)
	}
}

// ErrorBody is the error body's shape, for assertions.
type ErrorBody struct {
	Error struct {
		Code      string `json:"code"`
		Message   string `json:"message"`
		RequestID string `json:"request_id"`
	} `json:"error"`
}

// Err decodes the error body and checks it is complete and matches the X-Request-Id header.
func (r *Response) Err(t testing.TB) ErrorBody {
	t.Helper()
	var e ErrorBody
	r.JSON(t, &e)
	if e.Error.Code == "" || e.Error.Message == "" || e.Error.RequestID == "" {
		t.Fatalf("incomplete error body: %s", r.Body)
	}
	if got := r.Header.Get("X-Request-Id"); got != e.Error.RequestID {
		t.Fatalf("error body request_id %q; X-Request-Id header %q", e.Error.RequestID, got)
	}
	return e
}

// Do sends a request with token (none if empty) and body (marshalled unless it is a string or
// []byte, sent as is) and returns the response.
func (s *Server) Do(method, path, token string, body any) *Response {
	s.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			s.t.Fatalf("servertest: marshalling body: %v", err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, s.URL+path, rd)
	if err != nil {
		s.t.Fatalf("servertest: %v", err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := s.Client.Do(req)
	if err != nil {
		s.t.Fatalf("servertest: %s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatalf("servertest: reading body: %v", err)
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: raw}
}
