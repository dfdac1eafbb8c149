package ingest

import (
	"sync"
	"testing"
	"time"

	"github.com/edgewan/edgewan/controller/sdwan"
)

// setOwner is an Owner over a set of site IDs that the test changes.
type setOwner struct {
	mu   sync.Mutex
	mine map[string]bool
}

func (o *setOwner) Owns(id string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.mine[id]
}

func (o *setOwner) set(id string, own bool) {
	o.mu.Lock()
	o.mine[id] = own
	o.mu.Unlock()
}

// TestOwner: with several controllers, an engine evaluates, publishes for and watches the
// liveness of the sites it owns only; a site it takes over gets a full OfflineAfter before it
// is called offline; a site added through another controller is loaded on its first report.
func TestOwner(t *testing.T) {
	bus := &nopBus{}
	be := newBenchEngine(t, 4, bus)
	ids := be.st.order
	own := &setOwner{mine: map[string]bool{ids[0]: true, ids[1]: true}}
	be.e.o.Owner = own

	be.gen.next(t)
	for i, p := range be.gen.payloads {
		be.e.onTelemetry(be.gen.topics[i], p)
	}
	if got, rej := counter(be.e.m.reports), counter(be.e.m.rejected.WithLabelValues("not_owner")); got != 2 || rej != 2 {
		t.Fatalf("reports %v, not_owner %v; want 2 and 2", got, rej)
	}
	published := bus.published.Load()
	if err := be.e.publishDecisions(be.e.site(ids[2]), true); err != nil || bus.published.Load() != published {
		t.Errorf("decisions of a site owned elsewhere were published (err %v)", err)
	}
	if err := be.e.publishDecisions(be.e.site(ids[0]), true); err != nil || bus.published.Load() != published+1 {
		t.Errorf("decisions of an owned site were not published (err %v)", err)
	}

	// Site 2 is up by another controller's reports; this engine takes it over later.
	st2 := be.e.site(ids[2])
	st2.mu.Lock()
	st2.status, st2.lastSeen = sdwan.SiteUp, be.clock.now().Add(-time.Hour)
	st2.mu.Unlock()
	be.e.checkLiveness()
	if s := status(be.e, ids[2]); s != sdwan.SiteUp {
		t.Fatalf("site owned elsewhere: status %q after liveness; want it left alone (up)", s)
	}
	own.set(ids[2], true)
	be.e.checkLiveness()
	if s := status(be.e, ids[2]); s != sdwan.SiteUp {
		t.Errorf("site just taken over: status %q; want up until OfflineAfter passes here", s)
	}
	be.clock.ns.Add(int64(be.e.o.OfflineAfter + time.Second))
	be.e.checkLiveness()
	if s := status(be.e, ids[2]); s != sdwan.SiteOffline {
		t.Errorf("site taken over, silent for OfflineAfter: status %q; want offline", s)
	}

	// A site this engine never loaded (claimed through another controller) is loaded on its
	// first report once owned.
	be.e.mu.Lock()
	delete(be.e.sites, ids[3])
	be.e.mu.Unlock()
	own.set(ids[3], true)
	be.gen.next(t)
	be.e.onTelemetry(be.gen.topics[3], be.gen.payloads[3])
	if got := counter(be.e.m.reports); got != 3 {
		t.Errorf("reports %v after the adopted site's first one; want 3 (rejected %v)", got, be.rejected())
	}
}

func status(e *Engine, id string) string {
	st := e.site(id)
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.status
}
