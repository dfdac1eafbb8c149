package ingest

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/edgewan/edgewan/controller/sdwan"
	"github.com/edgewan/edgewan/coreapi/event"
)

// gatedStore is a benchStore whose status writes wait for gate, and are logged.
type gatedStore struct {
	*benchStore
	gate chan struct{}
	mu   sync.Mutex
	log  []string // "site status events"
}

func (g *gatedStore) SetSiteStatus(ctx context.Context, id, status string, _, _ time.Time, evs ...*event.Envelope) (int, error) {
	select {
	case <-g.gate:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.log = append(g.log, id+" "+status+" "+string(rune('0'+len(evs))))
	return 0, nil
}

func (g *gatedStore) written() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.log...)
}

// While Run runs, a change made while another is being stored does not wait for the database:
// it is queued, merged with the site's other queued changes, in order. Run's end stores what is
// queued; after it, changes are stored at once.
func TestRecordOffTheMessagePath(t *testing.T) {
	g := &gatedStore{benchStore: newBenchStore(3), gate: make(chan struct{})}
	e := New(g, &nopBus{}, nil, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	waitRec := func(what string, cond func(r *recorder) bool) { t.Helper(); waitRecorder(t, e, what, cond) }
	waitRec("writer running", func(r *recorder) bool { return r.running })
	ev := e.newEvent(event.DeviceStatusChanged, map[string]any{"site": "x"})
	now := time.Now()
	first := make(chan struct{})
	go func() { // nothing being stored: stored at once, so it waits for the database
		defer close(first)
		e.record("s0", sdwan.SiteUp, sdwan.SiteOffline, now, ev)
	}()
	waitRec("first store started", func(r *recorder) bool { return r.busy })
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		e.record("s1", sdwan.SiteUp, sdwan.SiteOffline, now, ev)
		e.record("s1", sdwan.SiteDegraded, sdwan.SiteUp, now, ev, ev)
		e.record("s2", sdwan.SiteOffline, sdwan.SiteUp, now, ev)
	}()
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		t.Fatal("record waited for the database while another change was being stored")
	}
	if got := g.written(); len(got) != 0 {
		t.Fatalf("written before the database answered: %v", got)
	}
	close(g.gate)
	<-first
	waitRec("queue stored", func(r *recorder) bool { return len(r.order) == 0 && !r.busy })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want := []string{"s0 up 1", "s1 degraded 3", "s2 offline 1"}
	if got := g.written(); len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("written: got %v; want %v", got, want)
	}
	e.record("s0", sdwan.SiteOffline, sdwan.SiteUp, now) // after Run: at once
	if got := g.written(); len(got) != 4 || got[3] != "s0 offline 0" {
		t.Fatalf("after Run: got %v; want s0 offline written at once", got)
	}
}

// Run's end stores what is still queued.
func TestRecordDrainsAtStop(t *testing.T) {
	g := &gatedStore{benchStore: newBenchStore(3), gate: make(chan struct{})}
	e := New(g, &nopBus{}, nil, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	waitRecorder(t, e, "writer running", func(r *recorder) bool { return r.running })
	go e.record("s0", sdwan.SiteUp, sdwan.SiteOffline, time.Now()) // holds the store
	waitRecorder(t, e, "first store started", func(r *recorder) bool { return r.busy })
	e.record("s1", sdwan.SiteUp, sdwan.SiteOffline, time.Now())
	cancel()
	close(g.gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := g.written(); len(got) != 2 || got[1] != "s1 up 0" {
		t.Fatalf("written: got %v; want s0 then s1 stored by Run's end", got)
	}
}

// waitRecorder polls the recorder's state until cond holds, for at most 10 seconds.
func waitRecorder(t *testing.T, e *Engine, what string, cond func(r *recorder) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !func() bool { e.rec.mu.Lock(); defer e.rec.mu.Unlock(); return cond(&e.rec) }() {
		if time.Now().After(deadline) {
			t.Fatalf("recorder: %s: not after 10s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
