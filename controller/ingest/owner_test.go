package ingest

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/edgewan/edgewan/controller/sdwan"
	"github.com/edgewan/edgewan/telemetry"
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

	// Two rounds: an owned site decides once its agent said where it is, or SyncWithin after
	// it was taken (here the first report).
	for range 2 {
		be.gen.next(t)
		for i, p := range be.gen.payloads {
			be.e.onTelemetry(be.gen.topics[i], p)
		}
	}
	if got, rej := counter(be.e.m.reports), counter(be.e.m.rejected.WithLabelValues("not_owner")); got != 4 || rej != 4 {
		t.Fatalf("reports %v, not_owner %v; want 4 and 4", got, rej)
	}
	published := bus.published.Load()
	if err := be.e.publishDecisions(be.e.site(ids[2]), true); err != nil || bus.published.Load() != published {
		t.Errorf("decisions of a site owned elsewhere were published (err %v)", err)
	}
	if err := be.e.publishDecisions(be.e.site(ids[0]), true); err != nil || bus.published.Load() != published+1 {
		t.Errorf("decisions of an owned site were not published (err %v)", err)
	}

	// Site 2 is up by another controller's reports (stored); this engine, which loaded it
	// offline at its start, takes it over later: it takes the stored status, or it would
	// announce the device online a second time.
	st2 := be.e.site(ids[2])
	be.st.sites[ids[2]].Status = sdwan.SiteUp
	st2.mu.Lock()
	st2.status, st2.lastSeen = sdwan.SiteOffline, be.clock.now().Add(-time.Hour)
	st2.mu.Unlock()
	be.e.checkLiveness()
	if s := status(be.e, ids[2]); s != sdwan.SiteOffline {
		t.Fatalf("site owned elsewhere: status %q after liveness; want it left alone (offline)", s)
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
	if got := counter(be.e.m.reports); got != 5 {
		t.Errorf("reports %v after the adopted site's first one; want 3 (rejected %v)", got, be.rejected())
	}
}

func status(e *Engine, id string) string {
	st := e.site(id)
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.status
}

// TestOwnerRegained: a site this engine owned, lost (another controller decided for it
// meanwhile) and owns again decides nothing until its agent's status says which paths it is
// on, then starts from those: deciding from what it knew before announced the other
// controller's path switch a second time.
func TestOwnerRegained(t *testing.T) {
	bus := &nopBus{}
	be := newBenchEngine(t, 1, bus)
	id := be.st.order[0]
	own := &setOwner{mine: map[string]bool{id: true}}
	be.e.o.Owner = own
	be.e.o.SyncWithin = time.Minute
	for range 2 {
		be.gen.next(t)
		be.e.onTelemetry(be.gen.topics[0], be.gen.payloads[0])
	}
	st := be.e.site(id)
	online := func(paths map[string]string) {
		b, _ := json.Marshal(telemetry.Status{V: telemetry.SchemaVersion, Device: st.device, State: "online", Paths: paths})
		be.e.onStatus(telemetry.Topic(id, telemetry.KindStatus), b)
	}
	online(map[string]string{"voice": "mpls", "bulk": "inet"})
	synced := func() bool { st.mu.Lock(); defer st.mu.Unlock(); return st.synced }
	if !synced() {
		t.Fatal("the owner did not take the agent's paths")
	}

	own.set(id, false) // another controller moves bulk to lte meanwhile
	be.gen.next(t)
	be.e.onTelemetry(be.gen.topics[0], be.gen.payloads[0])
	own.set(id, true)
	be.e.checkLiveness()
	if synced() {
		t.Fatal("a site owned again is still synced on what this engine knew before")
	}
	published := bus.published.Load()
	be.gen.next(t)
	be.e.onTelemetry(be.gen.topics[0], be.gen.payloads[0])
	if bus.published.Load() != published {
		t.Error("decisions published for a site owned again before its agent said where it is")
	}
	online(map[string]string{"voice": "mpls", "bulk": "lte"}) // the NATS bus replays the last status
	st.mu.Lock()
	path := st.steer.Path("bulk")
	st.mu.Unlock()
	if !synced() || path != "lte" {
		t.Errorf("after the agent's status: synced %v, bulk on %q; want synced on lte", synced(), path)
	}
}

// TestTakeoverResync: a site taken over from another controller starts from what its agent
// still holds (the previous owner stored what is below: not counted as abandoned), while the
// same jump on a site owned for longer than the catch-up minute is a loss, counted.
func TestTakeoverResync(t *testing.T) {
	be := newBenchEngine(t, 2, &nopBus{})
	ids := be.st.order
	own := &setOwner{mine: map[string]bool{ids[0]: true}}
	be.e.o.Owner = own
	report := func(i int, seq, held uint64) {
		t.Helper()
		s := be.st.sites[ids[i]]
		r := telemetry.Report{V: telemetry.SchemaVersion, Site: s.ID, Device: s.DeviceID, Seq: seq, Held: held, Time: be.clock.now().UTC(), WindowMs: 1000,
			Transport: []telemetry.TransportWindow{{Name: "mpls", Method: "icmp", Sent: 10, LatencyMs: 20, P50Ms: 20, P95Ms: 22, MinMs: 19, MaxMs: 25, JitterMs: 1, StdDevMs: 1}}}
		b, _ := json.Marshal(r)
		be.e.onTelemetry(telemetry.Topic(s.ID, telemetry.KindTelemetry), b)
	}
	mark := func(i int) uint64 {
		st := be.e.site(ids[i])
		st.mu.Lock()
		defer st.mu.Unlock()
		return st.win.mark
	}
	report(0, 1, 1)
	report(1, 1, 1) // owned elsewhere: refused
	own.set(ids[1], true)
	report(1, 100, 95) // taken over: the previous owner stored up to 94
	if m, n := mark(1), counter(be.e.m.abandoned); m != 94 || n != 0 {
		t.Errorf("after a takeover: mark %d, abandoned %v; want 94 and 0", m, n)
	}
	be.clock.ns.Add(int64(2 * time.Minute)) // past the catch-up after site 0 became this engine's
	report(0, 100, 95)                      // owned all along: 2..94 never came and the agent no longer has them
	if m, n := mark(0), counter(be.e.m.abandoned); m != 94 || n != 93 {
		t.Errorf("owned all along: mark %d, abandoned %v; want 94 and 93", m, n)
	}
}

// TestNewDeviceStartsAgain: a site claimed by another device (replaced hardware; the claim
// stores watermark 0) takes the new device's sequence from 1, not as duplicates of the old one's.
func TestNewDeviceStartsAgain(t *testing.T) {
	be := newBenchEngine(t, 1, &nopBus{})
	for range 5 {
		be.gen.next(t)
		be.e.onTelemetry(be.gen.topics[0], be.gen.payloads[0])
	}
	s := *be.st.sites[be.st.order[0]]
	s.DeviceID, s.StoredSeq = "dev_replacement", 0
	be.st.sites[s.ID] = &s
	be.e.load(context.Background(), &s, true)
	r := telemetry.Report{V: telemetry.SchemaVersion, Site: s.ID, Device: s.DeviceID, Seq: 1, Held: 1, Time: be.clock.now().UTC(), WindowMs: 1000,
		Transport: []telemetry.TransportWindow{{Name: "mpls", Method: "icmp", Sent: 10, LatencyMs: 20, P50Ms: 20, P95Ms: 22, MinMs: 19, MaxMs: 25, JitterMs: 1, StdDevMs: 1}}}
	b, _ := json.Marshal(r)
	be.e.onTelemetry(telemetry.Topic(s.ID, telemetry.KindTelemetry), b)
	if got, dup := counter(be.e.m.reports), counter(be.e.m.rejected.WithLabelValues("duplicate")); got != 6 || dup != 0 {
		t.Errorf("the new device's first report: %v reports, %v duplicates; want 6 and 0", got, dup)
	}
}

// TestOwnerTakesPreviousWatermark: a site taken over starts from the watermark its previous
// owner stored (the database's StoredSeq), not from this engine's older window: the reports
// it covers will not come again (the agent deleted them), and waiting for them kept the new
// owner's contiguous mark, and so its watermark, where it was (TestScaleOut: no watermark at all
// from the new owner; its agent fell back to PUBACK and lost reports).
func TestOwnerTakesPreviousWatermark(t *testing.T) {
	be := newBenchEngine(t, 1, &nopBus{})
	id := be.st.order[0]
	own := &setOwner{mine: map[string]bool{}}
	be.e.o.Owner = own
	be.st.sites[id].StoredSeq = 40 // stored and published by the previous owner
	own.set(id, true)
	be.gen.next(t) // seq 1: before the takeover's watermark, a duplicate
	be.e.onTelemetry(be.gen.topics[0], be.gen.payloads[0])
	st := be.e.site(id)
	st.mu.Lock()
	mark, safe := st.win.mark, st.safe
	st.mu.Unlock()
	if mark != 40 || safe != 40 {
		t.Fatalf("after the takeover: mark %d, safe %d; want 40 (the previous owner's watermark)", mark, safe)
	}
	if d := counter(be.e.m.rejected.WithLabelValues("duplicate")); d != 1 {
		t.Errorf("report 1, covered by the previous owner: %v duplicates; want 1", d)
	}
}

// policyBus records the topics of the policies published, in order.
type policyBus struct {
	nopBus
	mu       sync.Mutex
	policies []string // site IDs
	more     chan struct{}
}

func (b *policyBus) Publish(topic string, payload []byte, retain bool) error {
	if site, kind, ok := telemetry.ParseTopic(topic); ok && kind == telemetry.KindPolicy {
		b.mu.Lock()
		b.policies = append(b.policies, site)
		b.mu.Unlock()
		select {
		case b.more <- struct{}{}:
		default:
		}
	}
	return b.nopBus.Publish(topic, payload, retain)
}

// waitPolicies waits for n policies published and returns their sites, sorted.
func (b *policyBus) waitPolicies(t *testing.T, n int) []string {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		b.mu.Lock()
		got := slices.Clone(b.policies)
		b.mu.Unlock()
		if len(got) >= n {
			slices.Sort(got)
			return got
		}
		select {
		case <-b.more:
		case <-deadline:
			t.Fatalf("%d policies published within 10s (%v); want %d", len(got), got, n)
		}
	}
}

// TestPoliciesPublishedByOwner: at start the one controller publishes every site's policy
// (retained); with several controllers (an Owner) a controller's start publishes none, and
// taking partitions over publishes those of the sites it owns in them, once each, whether
// a message took a site over before (owns) or not, and not again at a later takeover. N
// controllers do not each republish the whole fleet.
func TestPoliciesPublishedByOwner(t *testing.T) {
	for _, tc := range []struct {
		name  string
		owner bool
	}{{"one controller", false}, {"several controllers", true}} {
		t.Run(tc.name, func(t *testing.T) {
			bus := &policyBus{more: make(chan struct{}, 1)}
			be := newBenchEngine(t, 4, bus)
			ids := be.st.order
			want := slices.Clone(ids)
			if tc.owner {
				be.e.o.Owner = &setOwner{mine: map[string]bool{ids[0]: true, ids[1]: true, ids[2]: true}}
				be.e.owns(be.e.site(ids[0])) // taken over at a message, before its partition's takeover
				want = ids[:2]
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- be.e.Run(ctx) }()
			if tc.owner {
				// The partitions of sites 0, 1 and 3: site 2 is owned but not in them, site 3
				// in them but not owned.
				be.e.SitesTaken(func(id string) bool { return id != ids[2] })
			}
			got := bus.waitPolicies(t, len(want))
			if tc.owner {
				// The same partitions taken again (a lease lost and won back): published once
				// per start is enough, the retained policies are current.
				be.e.takeOverSites(ctx, func(id string) bool { return id != ids[2] })
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			bus.mu.Lock()
			all := slices.Sorted(slices.Values(bus.policies))
			bus.mu.Unlock()
			if !slices.Equal(got, want) || !slices.Equal(all, want) {
				t.Errorf("policies published for %v; want %v, once each", all, want)
			}
		})
	}
}
