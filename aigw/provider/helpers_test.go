package provider_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgewan/edgewan/aigw/provider"
	"github.com/edgewan/edgewan/aigw/provider/providertest"
)

// httpKinds are the kinds behind an HTTP API; most tests run against each.
var httpKinds = []string{provider.KindOpenAI, provider.KindAnthropic}

// fake starts the fake upstream of an HTTP kind.
func fake(t testing.TB, kind string) *providertest.Server {
	if kind == provider.KindAnthropic {
		return providertest.Anthropic(t)
	}
	return providertest.OpenAI(t)
}

// forEachWire runs f as a subtest per HTTP API, with a fresh fake; the APIs in parallel.
func forEachWire(t *testing.T, f func(t *testing.T, kind string, up *providertest.Server)) {
	for _, kind := range httpKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			f(t, kind, fake(t, kind))
		})
	}
}

// modelFor configures model name at the fake, as upstream model "up-"+name.
func modelFor(name, kind string, up *providertest.Server) provider.ModelConfig {
	return provider.ModelConfig{
		Name: name, Kind: kind, BaseURL: up.URL, APIKey: up.Key(), UpstreamModel: "up-" + name,
		Timeout: 10 * time.Second,
	}
}

// recorder stands in for Options.Sleep and Options.Logger: it records the waits between
// attempts without waiting, and keeps the log.
type recorder struct {
	mu    sync.Mutex
	waits []time.Duration
	log   bytes.Buffer
}

func (r *recorder) sleep(ctx context.Context, d time.Duration) error {
	r.mu.Lock()
	r.waits = append(r.waits, d)
	r.mu.Unlock()
	return ctx.Err()
}

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.log.Write(p)
}

func (r *recorder) Waits() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.waits...)
}

func (r *recorder) Log() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.log.String()
}

func (r *recorder) options() provider.Options {
	return provider.Options{Sleep: r.sleep, Logger: slog.New(slog.NewTextHandler(r, &slog.HandlerOptions{Level: slog.LevelDebug}))}
}

// newModel builds one provider, failing t on error.
func newModel(t testing.TB, c provider.ModelConfig, o provider.Options) provider.Provider {
	t.Helper()
	p, err := provider.New(c, o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func ask(text string) provider.Request {
	return provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Content: text}}}
}

// collect returns an onDelta that appends to deltas.
func collect(deltas *[]string) func(string) error {
	return func(s string) error {
		*deltas = append(*deltas, s)
		return nil
	}
}

// call runs Chat or Stream; for Stream it also returns the deltas.
func call(p provider.Provider, stream bool, req provider.Request) (*provider.Response, []string, error) {
	if !stream {
		resp, err := p.Chat(context.Background(), req)
		return resp, nil, err
	}
	var deltas []string
	resp, err := p.Stream(context.Background(), req, collect(&deltas))
	return resp, deltas, err
}

// upstreamError returns err's *UpstreamError or fails t.
func upstreamError(t *testing.T, err error) *provider.UpstreamError {
	t.Helper()
	var ue *provider.UpstreamError
	if !errors.As(err, &ue) {
		t.Fatalf("got error %v (%T); want an *UpstreamError", err, err)
	}
	return ue
}

func modes() []bool { return []bool{false, true} }

func modeName(stream bool) string {
	if stream {
		return "stream"
	}
	return "chat"
}

// contains reports whether any of ss contains sub.
func contains(sub string, ss ...string) bool {
	for _, s := range ss {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
