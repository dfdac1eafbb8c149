package cluster

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/edgewan/edgewan/agent/claim"
	"github.com/edgewan/edgewan/agent/config"
	"github.com/edgewan/edgewan/agent/engine"
	"github.com/edgewan/edgewan/agent/spool"
	"github.com/edgewan/edgewan/controller/ingest"
	"github.com/edgewan/edgewan/controller/mqtt"
	"github.com/edgewan/edgewan/controller/mqtt/natstest"
	"github.com/edgewan/edgewan/controller/sdwan"
	"github.com/edgewan/edgewan/coreapi/event"
	"github.com/edgewan/edgewan/telemetry"
)

// fleet is the sites of the scale test as the engines' Store sees them: claimed sites with 3
// transports each, in memory (the leases are in the real PostgreSQL); writes are accepted.
type fleet struct{ sites map[string]*sdwan.Site }

func newFleet(n int) *fleet {
	f := &fleet{sites: map[string]*sdwan.Site{}}
	for i := range n {
		id := fmt.Sprintf("site-%03d", i)
		s := &sdwan.Site{ID: id, Name: id, Status: sdwan.SiteOffline, Role: "branch", DeviceID: "dev-" + id, ClaimedAt: time.Now()}
		for c, name := range []string{"mpls", "inet", "lte"} {
			s.Transports = append(s.Transports, &sdwan.Transport{ID: fmt.Sprintf("tr-%s-%d", id, c), SiteID: id, Name: name, Cost: c})
		}
		f.sites[id] = s
	}
	return f
}

func (f *fleet) LiveSites(context.Context) ([]*sdwan.Site, error) {
	var out []*sdwan.Site
	for _, s := range f.sites {
		out = append(out, s)
	}
	return out, nil
}
func (f *fleet) GetSite(_ context.Context, id string) (*sdwan.Site, error) { return f.sites[id], nil }
func (f *fleet) Assignments(context.Context, string) ([]*sdwan.Assignment, error) {
	return nil, nil
}
func (f *fleet) SetSiteStatus(context.Context, string, string, time.Time, time.Time, ...*event.Envelope) (int, error) {
	return 0, nil
}
func (f *fleet) SaveFigures(context.Context, map[string]sdwan.SiteFigures, []sdwan.TransportFigures) error {
	return nil
}
func (f *fleet) SetRollout(context.Context, string, string, int, string, string, time.Time) (bool, error) {
	return true, nil
}
func (f *fleet) InsertEvents(_ context.Context, evs ...*event.Envelope) (int, error) {
	return len(evs), nil
}

// handled records which controller evaluated each site's reports, in order: the engines'
// time-series Sink (this test checks ownership and loss, not storage).
type handled struct {
	mu    sync.Mutex
	log   map[string][]handling
	marks map[string][]string // site -> the watermarks published ("ctl:seq"), to read a failure
	pubs  map[string][]markPub
}

// markingBus notes the watermarks a controller publishes.
type markingBus struct {
	*mqtt.NATSBus
	h   *handled
	ctl string
}

func (b markingBus) Publish(topic string, payload []byte, retain bool) error {
	site, kind, ok := telemetry.ParseTopic(topic)
	if !ok || kind != telemetry.KindStored {
		return b.NATSBus.Publish(topic, payload, retain)
	}
	var m telemetry.Stored
	_ = json.Unmarshal(payload, &m)
	start := time.Now()
	err := b.NATSBus.Publish(topic, payload, retain)
	b.h.mu.Lock()
	b.h.marks[site] = append(b.h.marks[site], fmt.Sprintf("%s:%d@%s", b.ctl, m.Seq, start.Format("05.000")))
	b.h.pubs[site] = append(b.h.pubs[site], markPub{ctl: b.ctl, seq: m.Seq, at: start, took: time.Since(start), err: err})
	b.h.mu.Unlock()
	return err
}

// published lists site's watermarks published from since on: controller, sequence, when the
// publish began (since since) and how long it took.
func (h *handled) published(site string, since time.Time) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, p := range h.pubs[site] {
		if p.at.After(since) || p.at.Add(p.took).After(since) {
			how := "retained"
			if p.live {
				how = "live"
			}
			s := fmt.Sprintf("%s:%d(%s)@%v+%v", p.ctl, p.seq, how, p.at.Sub(since).Round(time.Millisecond), p.took.Round(time.Millisecond))
			if p.err != nil {
				s += "(" + p.err.Error() + ")"
			}
			out = append(out, s)
		}
	}
	if len(out) > 16 {
		out = append(out[:16], "...")
	}
	return strings.Join(out, " ")
}

// publishDelays sums up, per controller, its watermark publishes from since on: how many, the
// longest, and when the first one returned (since since).
func (h *handled) publishDelays(since time.Time) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	type sum struct {
		n, failed int
		longest   time.Duration
		first     time.Duration
	}
	per := map[string]*sum{}
	for _, ps := range h.pubs {
		for _, p := range ps {
			end := p.at.Add(p.took)
			if end.Before(since) {
				continue
			}
			key := p.ctl + " retained"
			if p.live {
				key = p.ctl + " live"
			}
			x := per[key]
			if x == nil {
				x = &sum{first: time.Hour}
				per[key] = x
			}
			x.n++
			if p.err != nil {
				x.failed++
			}
			x.longest = max(x.longest, p.took)
			if p.err == nil {
				x.first = min(x.first, end.Sub(since))
			}
		}
	}
	var out []string
	for _, ctl := range slices.Sorted(maps.Keys(per)) {
		x := per[ctl]
		out = append(out, fmt.Sprintf("%s: %d (%d failed), longest %v, first done %v after the kill", ctl, x.n, x.failed, x.longest.Round(time.Millisecond), x.first.Round(time.Millisecond)))
	}
	return strings.Join(out, "; ")
}

// PublishLive notes the live copy of a watermark (mqtt.NATSBus.PublishLive; ingest sends it
// first and the retained one after it, off its loop).
func (b markingBus) PublishLive(topic string, payload []byte) error {
	site, kind, ok := telemetry.ParseTopic(topic)
	if !ok || kind != telemetry.KindStored {
		return b.NATSBus.PublishLive(topic, payload)
	}
	var m telemetry.Stored
	_ = json.Unmarshal(payload, &m)
	start := time.Now()
	err := b.NATSBus.PublishLive(topic, payload)
	b.h.mu.Lock()
	b.h.pubs[site] = append(b.h.pubs[site], markPub{ctl: b.ctl, seq: m.Seq, at: start, took: time.Since(start), err: err, live: true})
	b.h.mu.Unlock()
	return err
}

// retainedOnly hides PublishLive: the engine publishes its watermarks retained only, on its
// loop, as it did before.
type retainedOnly struct{ mqtt.Bus }

// markPub is one watermark a controller published: when Publish was called and how long it
// took to return (the MQTT publisher's PUBACK), for reading a failover.
type markPub struct {
	ctl  string
	seq  uint64
	at   time.Time
	took time.Duration
	err  error
	live bool // PublishLive: not retained, no MQTT connection
}

type handling struct {
	ctl   string
	seq   uint64
	at    time.Time
	epoch int64 // of the site's partition lease the controller held when it evaluated the report
}

type recordingSink struct {
	h   *handled
	ctl string
	m   *Member
}

func (s recordingSink) Write(ctx context.Context, r *telemetry.Report) error {
	epoch, _ := s.m.Epoch(Partition(r.Site, s.m.o.Partitions))
	s.h.mu.Lock()
	s.h.log[r.Site] = append(s.h.log[r.Site], handling{ctl: s.ctl, seq: r.Seq, at: time.Now(), epoch: epoch})
	s.h.mu.Unlock()
	return nil
}
func (s recordingSink) Flush(context.Context) error { return nil }

// controller is one controller of the test: lease member, NATS bus, ingest engine.
type controller struct {
	id     string
	m      *Member
	bus    *mqtt.NATSBus
	cancel context.CancelFunc
	done   sync.WaitGroup
}

func startController(t *testing.T, id string, db *sql.DB, nc *natstest.Cluster, f *fleet, h *handled) *controller {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c := &controller{id: id, cancel: cancel}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	var err error
	c.m, err = New(ctx, Options{DB: db, ID: id, TTL: 3 * time.Second, Logger: quiet,
		OnAcquire: func(p int, _ int64) {
			if err := c.bus.StartPartition(ctx, p); err != nil && ctx.Err() == nil {
				t.Errorf("%s: StartPartition %d: %v", id, p, err)
			}
		},
		OnRelease: func(p int) { c.bus.StopPartition(p) }})
	if err != nil {
		t.Fatal(err)
	}
	c.bus, err = mqtt.NewNATSBus(ctx, mqtt.NATSOptions{URLs: nc.URLs, MQTTURLs: nc.MQTTURLs, User: natstest.User,
		Password: natstest.Password, ClientID: "ctl-" + id, AckWait: 2 * time.Second, Logger: buslog(id),
		Owns: func(p int) bool { _, ok := c.m.Epoch(p); return ok }})
	if err != nil {
		t.Fatal(err)
	}
	// FlushEvery 1 s: the watermarks move faster than the default 5 s, to keep the test short
	elog := quiet
	if testing.Verbose() { // the ingest's warnings (e.g. sequences given up) help read a failure
		elog = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})).With("ctl", id)
	}
	var bus mqtt.Bus = markingBus{NATSBus: c.bus, h: h, ctl: id}
	if os.Getenv("EDGEWAN_TEST_RETAINED_MARKS_ONLY") != "" { // as before PublishLive, to compare (docs/benchmarks.md)
		bus = retainedOnly{bus}
	}
	e := ingest.New(f, bus, recordingSink{h: h, ctl: id, m: c.m}, ingest.Options{Owner: c.m, Logger: elog, FlushEvery: time.Second,
		HoleGrace: testHoleGrace(t)})
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	c.done.Add(2)
	go func() { defer c.done.Done(); _ = e.Run(ctx) }()
	go func() { defer c.done.Done(); _ = c.m.Run(ctx) }()
	return c
}

// buslog is the NATS bus's log: its warnings (a consumer resubscribing after a node's death) and
// its notes (delivering again) help read the failover's figures; discarded unless verbose.
func buslog(ctl string) *slog.Logger {
	if !testing.Verbose() {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})).With("ctl", ctl)
}

// kill stops c as kill -9 would: its leases are not released (they expire), its bus stops
// consuming without acknowledging what it had not handled.
func (c *controller) kill() {
	c.m.mu.Lock()
	c.m.abandon = true
	c.m.mu.Unlock()
	c.cancel()
	c.bus.Close()
	c.done.Wait()
	c.m.mu.Lock()
	c.m.held = map[int]lease{}
	c.m.mu.Unlock()
}

// TestScaleOut runs 3 controllers (lease member + NATS bus + ingest engine each, in this
// process) on a real 3-node NATS cluster and PostgreSQL, with 50 agents (the agent's own spool
// and uplink, engine.Uplink) reporting twice a second. One controller is killed: its sites are
// evaluated again by the others (goal 10 s: the time is logged; docs/benchmarks.md) and every
// report spooled so far is evaluated. Then a NATS node is killed and every agent reports again
// (goal 5 s, logged); once the agents stop reporting their spools empty, and every report they
// deleted was evaluated: 0 lost. No site is ever evaluated by two controllers alternately.
func TestScaleOut(t *testing.T) {
	const sites, perSecond = 50, 2
	db := openDB(t)
	nc := natstest.Start(t)
	f := newFleet(sites)
	h := &handled{log: map[string][]handling{}, marks: map[string][]string{}, pubs: map[string][]markPub{}}
	ctls := map[string]*controller{}
	// Controllers 1, 2 and 3 sit on NATS nodes 2, 3 and 1 (mqtt.NodeOrder, by the trailing
	// number of their client IDs); 2 is killed below, so node 1's kill later takes the
	// connections of controller 3, as one node's death does in a cluster of 3 on 3.
	for _, id := range []string{"1", "2", "3"} {
		ctls[id] = startController(t, id, db, nc, f, h)
	}
	t.Cleanup(func() {
		for _, c := range ctls {
			c.cancel()
			c.bus.Close()
			c.done.Wait()
		}
	})
	waitFor(t, 30*time.Second, "3 controllers share the partitions", func() bool {
		return balanced(&node{m: ctls["1"].m}, &node{m: ctls["2"].m}, &node{m: ctls["3"].m})
	})

	// 50 agents, each the agent's own spool and uplink (agent/engine.Uplink) on its own MQTT
	// connection to the nodes in turn, reporting twice a second: a report leaves the spool only
	// once the owning controller's watermark covers it, and one the broker acknowledged and
	// lost is sent again when the watermark stalls below it.
	ctx, stopAgents := context.WithCancel(context.Background())
	ids := make([]string, 0, sites)
	for id := range f.sites {
		ids = append(ids, id)
	}
	fl := startAgents(t, ctx, nc, ids, perSecond)
	time.Sleep(5 * time.Second) // steady state under load (pacing, not synchronisation)

	// kill -9 of controller 2.
	victim := ctls["2"]
	lost := victim.m.Owned()
	killedAt := time.Now()
	victim.kill()
	delete(ctls, "2")
	var victimSites []string
	for _, id := range ids {
		for _, p := range lost {
			if Partition(id, 16) == p {
				victimSites = append(victimSites, id)
			}
		}
	}
	took := waitFor(t, 30*time.Second, "the killed controller's sites evaluated again", func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, id := range victimSites {
			l := h.log[id]
			if len(l) == 0 || l[len(l)-1].ctl == "2" || l[len(l)-1].at.Before(killedAt) {
				return false
			}
		}
		return true
	})
	t.Logf("kill -9 of a controller owning %d partitions (%d sites): all evaluated again after %v (goal 10 s)", len(lost), len(victimSites), took)

	// Nothing spooled so far is lost across the controller's death.
	time.Sleep(time.Second) // a little more reporting on the new owners (pacing)
	snapshot := fl.spooled()
	var want, missing int
	var examples []string
	count := func(upTo map[string]uint64) bool {
		want, missing, examples = 0, 0, nil
		h.mu.Lock()
		defer h.mu.Unlock()
		for site, last := range upTo {
			have := map[uint64]bool{}
			for _, x := range h.log[site] {
				have[x.seq] = true
			}
			for q := uint64(1); q <= last; q++ {
				want++
				if !have[q] {
					missing++
					if len(examples) < 20 {
						examples = append(examples, fmt.Sprintf("%s#%d(p%d)", site, q, Partition(site, 16)))
					}
				}
			}
		}
		return missing == 0
	}
	if !waitCond(60*time.Second, func() bool { return count(snapshot) }) {
		t.Errorf("after a controller's kill -9: %d of %d spooled reports never evaluated, e.g. %v", missing, want, examples)
		debugConsumers(t, nc)
	}
	t.Logf("controller kill: %d reports spooled, %d never evaluated", want, missing)

	// The warm standby connections (on by default on NATS) are up before the node's death: each
	// connects a random 0-3 s after its agent's first watermark, and again after the controller
	// kill if it was on the primary's node.
	if agentStandby() != config.StandbyOff {
		standbys := func() int {
			n := 0
			for _, up := range fl.ups {
				if up.StandbyUp() {
					n++
				}
			}
			return n
		}
		if !waitCond(30*time.Second, func() bool { return standbys() == len(fl.ups) }) {
			t.Errorf("%d of %d agents' standby connections up before the node kill; want all", standbys(), len(fl.ups))
		}
	}
	t.Logf("NATS nodes before the node kill (agents' standby %s): %s", agentStandby(), natsLoad(nc, 1, 2, 3))

	// kill -9 of a broker node: every agent reports again (a report evaluated by a controller)
	// within 5 s (the time is logged).
	// EDGEWAN_TEST_KILLED_LEADS=$MQTT_sess (or any streams, comma-separated): the killed node
	// leads them at the kill, the worst cases made on purpose (docs/benchmarks.md).
	for _, stream := range strings.FieldsFunc(os.Getenv("EDGEWAN_TEST_KILLED_LEADS"), func(r rune) bool { return r == ',' }) {
		nc.LeadOn(t, stream, 1)
		t.Logf("%s led by the node to be killed (n1)", stream)
	}
	steady := steadySpools(fl.spoolRecords, time.Second)
	t.Logf("the node to be killed (n1) leads: %v", ledBy(t, nc.URLs[1], "n1"))
	sw := watchSpools(fl.spoolRecords, steady)
	nodeKilledAt := time.Now()
	jw := watchJetStream(t, nc.URLs[1], "n1", nodeKilledAt)
	if os.Getenv("EDGEWAN_TEST_NODE_STOP") == "lameduck" { // a graceful stop instead (docs/benchmarks.md)
		nc.LameDuck(t, 1)
	} else {
		nc.Kill(t, 1)
	}
	acked := fl.published()
	sentAgain := waitFor(t, 30*time.Second, "every agent has a report written (QoS 0) or acknowledged (QoS 1) again after a broker node died", func() bool {
		now := fl.published()
		for id, n := range now {
			if n <= acked[id] {
				return false
			}
		}
		return true
	})
	// "Reports again": the agent's first report after the kill that a live node accepted:
	// its PUBACK at QoS 1; at QoS 0 (NATS) the first report sent on a connection that then
	// got a watermark covering it. Known at QoS 0 only once the watermark comes, so the wait
	// is longer than the figure.
	var accepted map[string]time.Duration
	waitFor(t, 60*time.Second, "every agent has a report accepted again after a broker node died", func() bool {
		var ok bool
		accepted, ok = fl.acc.again(nodeKilledAt, ids)
		return ok
	})
	acceptedMax, acceptedMedian := maxOf(accepted)
	confirmedMax, confirmedMedian := maxOf(fl.acc.confirmed(nodeKilledAt, ids))
	t.Logf("kill -9 of a NATS node: every agent had a report sent after the kill confirmed by a watermark on its connection after %v (median %v)",
		confirmedMax.Round(time.Millisecond), confirmedMedian.Round(time.Millisecond))
	slowest := slices.SortedFunc(maps.Keys(accepted), func(a, b string) int { return cmp.Compare(accepted[b], accepted[a]) })
	for _, id := range slowest[:min(3, len(slowest))] {
		t.Logf("reported again after %v: %s (its standby: %v activations)", accepted[id].Round(time.Millisecond), id, fl.ups[id].StandbyActivations())
		if testing.Verbose() { // why: its uplink's story, and the watermarks published for it
			t.Logf("  %s's uplink since the kill:\n    %s", id, strings.Join(fl.log.story(id, nodeKilledAt), "\n    "))
			t.Logf("  %s's watermarks published since the kill: %s", id, h.published(id, nodeKilledAt))
		}
	}
	t.Logf("the controllers' watermark publishes after the node kill: %s", h.publishDelays(nodeKilledAt))
	waitFor(t, 30*time.Second, "every agent reports again after a broker node died", func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, id := range ids {
			l := h.log[id]
			if len(l) == 0 || l[len(l)-1].at.Before(nodeKilledAt) {
				return false
			}
		}
		return true
	})
	evaluatedAgain := time.Since(nodeKilledAt)
	t.Logf("kill -9 of a NATS node (agents' broker profile %q): every agent reported again (a report accepted by a live node) after %v (median %v; goal 5 s); every agent's report written (QoS 0) or PUBACKed (QoS 1) again after %v; every site evaluated by a controller again after %v",
		agentBroker(), acceptedMax.Round(time.Millisecond), acceptedMedian.Round(time.Millisecond), sentAgain.Round(time.Millisecond), evaluatedAgain.Round(time.Millisecond))
	logFailover(t, "failover phases of the agents whose node died", fl.log.failover(nodeKilledAt))
	var activations, onStandby float64
	for _, up := range fl.ups {
		activations += up.StandbyActivations()
		onStandby += up.StandbyPublished()
	}
	t.Logf("standby connections: %v agents moved to theirs at the node kill, %v messages sent on them", activations, onStandby)
	t.Logf("connections the agents lost, by error: %v", fl.log.drops(nodeKilledAt))
	t.Logf("the live NATS nodes' logs: %v", natsErrors(nc.Dir, 2, 3))
	h.mu.Lock()
	var firstEval []time.Duration
	for _, id := range ids {
		for _, x := range h.log[id] {
			if x.at.After(nodeKilledAt) {
				firstEval = append(firstEval, x.at.Sub(nodeKilledAt))
				break
			}
		}
	}
	h.mu.Unlock()
	logFailover(t, "all agents", map[string][]time.Duration{"kill to a site's first report evaluated": firstEval})
	jw.log(t)
	time.Sleep(2 * time.Second) // keep reporting on the two nodes left (pacing)

	// NATS 2.9 acknowledges an MQTT QoS 1 publish before the stream has stored it, so a few
	// reports in flight on the dead node are lost (seen: 0-14 of ~1,000). The watermark is the
	// highest contiguous sequence stored, so it stays below such a hole and the agents send the
	// hole again: once the agents stop reporting, their spools empty, and then every report
	// they deleted must have been evaluated (docs/scale-out.md). 0 lost.
	final := fl.stop(stopAgents)
	if !waitCond(90*time.Second, fl.drained) {
		t.Errorf("agents' spools not emptied by the watermark within 90 s: %v", fl.undelivered())
	}
	t.Logf("kill -9 of a NATS node (controllers' hole grace %v, -1: no requests; agents' holeAfter %v): every site's history complete again (no hole below its newest stored report) after %s sites with a hole; every agent's spool back to its steady size after %s agents whose spool grew",
		testHoleGrace(t), testHoleAfter(t), spread(h.historyComplete(nodeKilledAt)), spread(sw.back(nodeKilledAt)))
	for id, up := range fl.ups { // deleting at PUBACK (no watermark heard), even for a while, would hide losses
		if m := up.DeleteMode(); m != "watermark" {
			t.Errorf("agent of %s: delete mode %q; want watermark", id, m)
		}
		if n := up.PubackFallbacks(); n != 0 {
			t.Errorf("agent of %s: fell back to deleting at PUBACK %v times during the run; want never", id, n)
		}
	}
	deleted := fl.deleted()
	if !count(deleted) {
		t.Errorf("broker node kill: %d of %d reports the agents deleted from their spools were never evaluated: %v", missing, want, examples)
		h.mu.Lock()
		for _, ex := range examples[:1] {
			site := strings.Split(ex, "#")[0]
			var seqs []string
			for _, x := range h.log[site] {
				seqs = append(seqs, fmt.Sprintf("%s:%d@%s", x.ctl, x.seq, x.at.Format("05.000")))
			}
			t.Logf("%s: handled %v", site, seqs)
			t.Logf("%s: watermarks %v", site, h.marks[site])
		}
		h.mu.Unlock()
		debugConsumers(t, nc)
	}
	t.Logf("broker node kill: %d reports spooled in all, %d deleted from the spools, %d of those never evaluated; %v sent again (asked for by a controller, or for a stalled watermark)",
		sum(final), want, missing, fl.resent())
	fl.wait()

	// No site was evaluated by two owners at once: whenever evaluation moves to another
	// controller, it does so under a newer lease epoch than any before it. A lease may come back
	// to a controller (it was starved past its TTL on a loaded machine, then rebalanced), but
	// only with a new epoch: evaluating under an epoch older than one already used by another
	// controller would be two owners at once.
	h.mu.Lock()
	defer h.mu.Unlock()
	for id, l := range h.log {
		var top int64
		cur := ""
		for _, x := range l {
			if x.epoch == 0 {
				// The lease ended between the engine's ownership check and this record: the
				// store's fence refuses such a controller's writes (TestFencedWrites).
				continue
			}
			if x.ctl != cur && cur != "" && x.epoch <= top {
				t.Errorf("site %s: evaluated by %s under lease epoch %d after another controller used epoch %d", id, x.ctl, x.epoch, top)
				break
			}
			cur, top = x.ctl, max(top, x.epoch)
		}
	}
}

func debugConsumers(t *testing.T, c *natstest.Cluster) {
	conn, err := nats.Connect(strings.Join(c.URLs, ","), nats.UserInfo(natstest.User, natstest.Password))
	if err != nil {
		t.Log(err)
		return
	}
	defer conn.Close()
	js, _ := jetstream.New(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, mqtt.DefaultNATSStream)
	if err != nil {
		t.Log(err)
		return
	}
	si, _ := st.Info(ctx)
	t.Logf("stream: %+v cluster %+v", si.State, si.Cluster)
	for p := range 16 {
		c, err := mqtt.PartitionConsumer(ctx, st, p)
		if err != nil {
			t.Logf("p%d: %v", p, err)
			continue
		}
		ci, _ := c.Info(ctx)
		t.Logf("p%d: pending %d ackpending %d waiting %d delivered %+v ackfloor %+v leader %s", p, ci.NumPending, ci.NumAckPending, ci.NumWaiting, ci.Delivered, ci.AckFloor, ci.Cluster.Leader)
	}
}

// waitCond polls cond until it holds (true) or within passes (false).
func waitCond(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

// agentFleet is the test's agents: each the agent's own spool and uplink (engine.Uplink),
// spooling a report per tick.
type agentFleet struct {
	ups    map[string]*engine.Uplink
	spools map[string]*spool.Spool
	tick   sync.WaitGroup // the reporting goroutines
	run    sync.WaitGroup // the uplinks
	cancel context.CancelFunc
	log    *timeline // the uplinks' log, for the phases of their failover
	acc    *accepts  // when the broker accepted each report
}

func startAgents(t *testing.T, ctx context.Context, nc *natstest.Cluster, ids []string, perSecond int) *agentFleet {
	t.Helper()
	runCtx, cancel := context.WithCancel(context.Background()) // the uplinks outlive the reporting
	fl := &agentFleet{ups: map[string]*engine.Uplink{}, spools: map[string]*spool.Spool{}, cancel: cancel, acc: newAccepts()}
	var verbose slog.Handler
	if testing.Verbose() {
		verbose = slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})
	}
	fl.log = newTimeline(verbose)
	quiet := slog.New(fl.log)
	for i, id := range ids {
		sp, err := spool.Open(spool.Options{Dir: t.TempDir(), NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		creds := &claim.Credentials{Site: id, Device: "dev-" + id, Username: natstest.User, Password: natstest.Password, MQTTURL: nc.MQTTURLs[i%3],
			Broker: agentBroker()}
		for k := range 3 {
			creds.MQTTURLs = append(creds.MQTTURLs, nc.MQTTURLs[(i+k)%3])
		}
		up, err := engine.NewUplink(creds, sp, quiet.With("site", id))
		if err != nil {
			t.Fatal(err)
		}
		up.SetStandby(agentStandby())
		up.SetHoleAfter(testHoleAfter(t)) // the product's 15 s: the controllers' hole requests come first
		up.OnAccepted(fl.acc.hook(id))
		fl.ups[id], fl.spools[id] = up, sp
		fl.run.Add(1)
		go func() { defer fl.run.Done(); up.Run(runCtx) }()
		fl.tick.Add(1)
		go func() {
			defer fl.tick.Done()
			tick := time.NewTicker(time.Second / time.Duration(perSecond))
			defer tick.Stop()
			var tws []telemetry.TransportWindow
			for _, n := range []string{"mpls", "inet", "lte"} {
				tws = append(tws, telemetry.TransportWindow{Name: n, Method: "icmp", Sent: 5, LatencyMs: 20, P50Ms: 20, P95Ms: 25, MinMs: 18, MaxMs: 30, JitterMs: 1, StdDevMs: 1})
			}
			for {
				select {
				case <-ctx.Done():
					return
				case now := <-tick.C:
					up.Report(now, time.Second/time.Duration(perSecond), tws)
				}
			}
		}()
	}
	t.Cleanup(func() {
		fl.cancel()
		fl.run.Wait()
		for _, sp := range fl.spools {
			_ = sp.Close()
		}
	})
	return fl
}

// spooled is each site's last spooled report.
func (fl *agentFleet) spooled() map[string]uint64 {
	out := map[string]uint64{}
	for id, sp := range fl.spools {
		out[id] = sp.Stats().LastID
	}
	return out
}

// deleted is, per site, the last report deleted from the spool: every one up to it was
// covered by a controller's watermark.
func (fl *agentFleet) deleted() map[string]uint64 {
	out := map[string]uint64{}
	for id, sp := range fl.spools {
		out[id] = sp.Stats().Acked
	}
	return out
}

// stop ends the reporting (the uplinks keep delivering) and returns what was spooled.
func (fl *agentFleet) stop(stopReporting context.CancelFunc) map[string]uint64 {
	stopReporting()
	fl.tick.Wait()
	return fl.spooled()
}

// drained reports whether every spool is empty: every report covered by a watermark.
func (fl *agentFleet) drained() bool { return len(fl.undelivered()) == 0 }

func (fl *agentFleet) undelivered() map[string]string {
	out := map[string]string{}
	for id, sp := range fl.spools {
		if st := sp.Stats(); st.Records > 0 {
			out[id] = fmt.Sprintf("%d records above %d (watermark %d)", st.Records, st.Acked, fl.ups[id].Watermark())
		}
	}
	return out
}

// published is, per site, how many spooled messages the broker acknowledged so far.
func (fl *agentFleet) published() map[string]float64 {
	out := map[string]float64{}
	for id, up := range fl.ups {
		out[id] = up.Published()
	}
	return out
}

func (fl *agentFleet) resent() float64 {
	n := 0.0
	for _, up := range fl.ups {
		n += up.Resent()
	}
	return n
}

// wait stops the uplinks.
func (fl *agentFleet) wait() {
	fl.cancel()
	fl.run.Wait()
}

func sum(m map[string]uint64) uint64 {
	var n uint64
	for _, v := range m {
		n += v
	}
	return n
}
