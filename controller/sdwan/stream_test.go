package sdwan_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgewan/edgewan/controller/sdwan"
	"github.com/edgewan/edgewan/controller/store/storetest"
	"github.com/edgewan/edgewan/controller/whatif"
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
