package sdwan_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/edgewan/edgewan/controller/sdwan"
	"github.com/edgewan/edgewan/controller/store/storetest"
	"github.com/edgewan/edgewan/controller/whatif"
	"github.com/edgewan/edgewan/coreapi/auth"
	"github.com/edgewan/edgewan/coreapi/page"
)

// FuzzParseStreamSites: any query value gives IDs that are all site IDs, at most 200, or an
// error, never a panic.
func FuzzParseStreamSites(f *testing.F) {
	for _, s := range []string{"", "site_abc", "site_a,site_b", "site_,x", strings.Repeat("site_a,", 201), "site_A", ",,,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		ids, err := sdwan.ParseStreamSites(v)
		if err != nil {
			return
		}
		if len(ids) > sdwan.MaxOverviewLimit {
			t.Fatalf("%d IDs accepted", len(ids))
		}
		for _, id := range ids {
			rest, ok := strings.CutPrefix(id, "site_")
			if !ok || rest == "" || strings.ContainsFunc(rest, func(r rune) bool { return (r < 'a' || r > 'z') && (r < '0' || r > '9') }) {
				t.Fatalf("%q accepted as a site ID", id)
			}
		}
	})
}

func FuzzParseStatistic(f *testing.F) {
	for _, s := range []string{"", "mean", "p95", "P95", "max"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		st, err := whatif.ParseStatistic(v)
		if err == nil && st != whatif.Mean && st != whatif.P95 {
			t.Fatalf("%q parsed as %q", v, st)
		}
	})
}

// countingStore is the real store, counting the fleet-wide counts queries.
type countingStore struct {
	sdwan.Store
	searches atomic.Int32
}

func (c *countingStore) SearchSites(ctx context.Context, q sdwan.SiteQuery) (*sdwan.SitePage, error) {
	c.searches.Add(1)
	return c.Store.SearchSites(ctx, q)
}

// streamOut is one stream's output; flushed is signalled at each flush.
type streamOut struct {
	mu      sync.Mutex
	b       strings.Builder
	flushed chan struct{}
}

func (o *streamOut) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.Write(p)
}

func (o *streamOut) flush() {
	select {
	case o.flushed <- struct{}{}:
	default:
	}
}

// waitCounts waits for a flush after which the output holds n "counts" events and returns the last.
func (o *streamOut) waitCounts(t *testing.T, n int) string {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		o.mu.Lock()
		out := o.b.String()
		o.mu.Unlock()
		if parts := strings.Split(out, "event: counts\ndata: "); len(parts) > n+1 {
			t.Fatalf("stream sent %d counts events; want %d:\n%s", len(parts)-1, n, out)
		} else if len(parts) == n+1 {
			last, _, _ := strings.Cut(parts[n], "\n")
			return last
		}
		select {
		case <-o.flushed:
		case <-timeout:
			t.Fatalf("no %d counts events after 20 s:\n%s", n, out)
		}
	}
}

// TestStreamCountsShared: several open streams that see the same site change share one count
// of the fleet by status, and a later change is counted again.
func TestStreamCountsShared(t *testing.T) {
	st := &countingStore{Store: storetest.SQLite(t)}
	svc := sdwan.NewService(st, sdwan.Options{}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	outs := make([]*streamOut, 3)
	for i := range outs {
		o := &streamOut{flushed: make(chan struct{}, 1)}
		outs[i] = o
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := svc.Stream(ctx, sdwan.StreamRequest{Interval: 5 * time.Millisecond}, o, o.flush); err != nil && ctx.Err() == nil {
				t.Error(err)
			}
		}()
		<-o.flushed // the stream has started: it sees changes from now on
	}
	for n := 1; n <= 2; n++ {
		if _, err := svc.CreateSite(ctx, sdwan.CreateSiteRequest{Name: fmt.Sprint("s", n)}); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf(`{"%s":%d}`, sdwan.SitePending, n)
		for i, o := range outs {
			if got := o.waitCounts(t, n); got != want {
				t.Errorf("stream %d, change %d: counts %s; want %s", i, n, got, want)
			}
		}
		if got := st.searches.Load(); got != int32(n) {
			t.Errorf("after %d site changes seen by %d streams: %d counts queries; want %d", n, len(outs), got, n)
		}
	}
}

// blockingStore is the real store whose ListSites, once armed, waits for the request to end
// and fails with its context's error: a client leaving while a stream queries.
type blockingStore struct {
	sdwan.Store
	armed   atomic.Bool
	entered chan struct{}
}

func (b *blockingStore) ListSites(ctx context.Context, p page.Params, f sdwan.SiteFilter) ([]*sdwan.Site, error) {
	if b.armed.Load() {
		b.entered <- struct{}{}
		<-ctx.Done()
		return nil, fmt.Errorf("store.ListSites: %w", ctx.Err())
	}
	return b.Store.ListSites(ctx, p, f)
}

// TestStreamClientGoneNotWarned: a client leaving mid-query, how every stream ends, is logged
// at debug, not as a warning.
func TestStreamClientGoneNotWarned(t *testing.T) {
	base := storetest.SQLite(t)
	st := &blockingStore{Store: base, entered: make(chan struct{})}
	var logs strings.Builder
	var logMu sync.Mutex
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		logMu.Lock()
		defer logMu.Unlock()
		return logs.Write(p)
	}), &slog.HandlerOptions{Level: slog.LevelDebug})))
	defer slog.SetDefault(prev)

	ctx := context.Background()
	_, token, err := auth.Create(ctx, base, "noc", []string{auth.ScopeSDWANRead}, "")
	if err != nil {
		t.Fatal(err)
	}
	pages, err := page.NewCodec([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	a := &auth.Authenticator{Keys: base}
	sdwan.Register(e.Group("/sd-wan/v1", a.Middleware()), sdwan.NewService(st, sdwan.Options{}, nil), pages)
	srv := httptest.NewServer(e)
	defer srv.Close()

	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, _ := http.NewRequestWithContext(rctx, "GET", srv.URL+"/sd-wan/v1/stream", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	st.armed.Store(true)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET /stream: %d %s", resp.StatusCode, b)
	}
	select {
	case <-st.entered:
	case <-time.After(20 * time.Second):
		t.Fatal("the stream did not query the sites within 20 s")
	}
	cancel()
	srv.Close() // waits for the handler to return
	logMu.Lock()
	defer logMu.Unlock()
	if out := logs.String(); strings.Contains(out, "level=WARN") || !strings.Contains(out, `level=DEBUG msg="sdwan: stream ended: client gone"`) {
		t.Errorf("log:\n%s\nwant the end at debug, no warning", out)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
