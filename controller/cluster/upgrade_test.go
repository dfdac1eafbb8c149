package cluster

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/edgewan/edgewan/controller/mqtt"
	"github.com/edgewan/edgewan/controller/mqtt/natstest"
)

// preAckAll is main just before the merge of cumulative acks (e5db614, "Merge ackall"): its
// controllers consume each partition through one durable consumer p{N} with explicit acks
// (AckExplicit, MaxAckPending 64, created with CreateOrUpdateConsumer at every bind), the
// consumers the released version leaves in a running cluster.
const preAckAll = "ed7921d5d44e70557a12b08fb0a2e49b772a0202"

// controllerBinaryAt builds the controller as it was at commit, from the repository's history:
// `git archive` of the commit into a temporary directory (nothing in the checkout or its .git
// changes), built by the same go with the same module and build caches (7 s with a warm build
// cache; 23 s after a cold build of the current controller on a loaded 2-core box; no network
// as long as the commit's go.mod needs nothing the current one does not).
func controllerBinaryAt(t testing.TB, commit string) string {
	t.Helper()
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("the older controller is built from the repository's history; git rev-parse: %v", err)
	}
	root := strings.TrimSpace(string(top))
	if out, err := exec.Command("git", "-C", root, "cat-file", "-e", commit+"^{commit}").CombinedOutput(); err != nil {
		t.Fatalf("commit %s (the controller before cumulative acks) is not in this clone: %v %s (a shallow clone? git fetch --unshallow)", commit, err, out)
	}
	dir := t.TempDir()
	src, bin := filepath.Join(dir, "src"), filepath.Join(dir, "controller-"+commit[:7])
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	// git archive | tar -x: the tree as committed.
	archive := exec.Command("git", "-C", root, "archive", "--format=tar", commit)
	untar := exec.Command("tar", "-x", "-C", src)
	var err1, err2 strings.Builder
	archive.Stderr, untar.Stderr = &err1, &err2
	pipe, err := archive.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	untar.Stdin = pipe
	if err := untar.Start(); err != nil {
		t.Fatalf("tar: %v", err)
	}
	if err := archive.Run(); err != nil {
		t.Fatalf("git archive %s: %v %s", commit, err, err1.String())
	}
	if err := untar.Wait(); err != nil {
		t.Fatalf("tar -x of %s: %v %s", commit, err, err2.String())
	}
	build := exec.Command("go", "build", "-o", bin, "./controller")
	build.Dir = src
	build.Env = append(os.Environ(), "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build of the controller at %s: %v\n%s", commit, err, out)
	}
	t.Logf("the controller at %s built in %v", commit[:7], time.Since(start).Round(time.Millisecond))
	return bin
}

// TestRollingUpgrade is the rolling upgrade of a running cluster from the release before
// cumulative acks (preAckAll: one consumer p{N} per partition with explicit acks) to this
// version (AckAll, a consumer p{N}-g{generation} per takeover), with the older controller's
// real binary built from the repository's history: 3 `controller serve` processes of the older
// version on a 3-node NATS cluster, PostgreSQL and InfluxDB, 50 agents running the agent's own
// engine (spool, uplink, watermark), then one controller at a time replaced by the new binary
// under continuous reporting. The first older controller hangs with messages delivered and not
// acknowledged on its consumers (SIGSTOP until each of its p{N} has some: a redelivery is
// pending) and is killed (SIGKILL), its replacement starting at once under the same cluster
// ID, as a process manager would; the other two are stopped gracefully (SIGTERM, they release
// their leases) and replaced. Afterwards: every report an agent deleted from its spool is in
// InfluxDB (0 lost), each partition's lease epoch only moved forward with one owner per epoch
// (sampled every 100 ms through the roll) and no controller event repeats its site's last
// transition (what two owners would write), the p{N} consumers are all gone (each partition
// has one consumer, of a generation, acknowledging cumulatively), and the reports the
// controllers refused as duplicates are counted and bounded.
func TestRollingUpgrade(t *testing.T) {
	const sites = 50
	so := newScaledOut(t, 3*time.Second)
	oldBin := controllerBinaryAt(t, preAckAll)
	start := time.Now()
	ids := []string{"ctl-1", "ctl-2", "ctl-3"}
	procs := map[string]*versioned{}
	var gone []*versioned // stopped: their counters read just before
	run := func(id, version string) {
		bin := so.bin
		if version == "old" {
			bin = oldBin
		}
		addr := freeAddr(t)
		env := append(slices.Clone(so.env), "EDGEWAN_METRICS_LISTEN="+addr)
		sp := startServe(t, bin, env, id)
		procs[id] = &versioned{serveProc: sp, version: version, metrics: "http://" + addr + "/metrics", readyAt: time.Now()}
	}
	for _, id := range ids {
		run(id, "old")
	}
	waitFor(t, 60*time.Second, "3 older controllers share the 16 partitions", func() bool { return shared(so.db, ids) })
	token := so.apiKey(t, procs[ids[0]].dataDir)
	obs := observe(t, so.nc.MQTTURLs[0])
	js := jetStream(t, so.nc)
	agentLog, acc := newTimeline(nil), newAccepts()
	agents := claimFleet(t, so, []*serveProc{procs[ids[0]].serveProc, procs[ids[1]].serveProc, procs[ids[2]].serveProc},
		token, sites, tcpTarget(t), agentLog, acc)
	waitFor(t, 60*time.Second, "every agent's reports covered by an older controller's watermark", func() bool {
		for _, a := range agents {
			if obs.last(a.site).seq == 0 {
				return false
			}
		}
		return true
	})
	// The released state: one explicit-ack consumer p{N} per partition, nothing else.
	before := partitionConsumers(t, js)
	for p := range 16 {
		if cs := before[p]; len(cs) != 1 || cs[0].Name != fmt.Sprintf("p%d", p) || cs[0].Config.AckPolicy != jetstream.AckExplicitPolicy {
			t.Fatalf("partition %d before the upgrade: consumers %v; want p%d with explicit acks (the older controller's)", p, names(cs), p)
		}
	}
	t.Logf("setup (older controller built, 3 NATS nodes, 3 older controllers, %d sites claimed, agents reporting): %v", sites, time.Since(start).Round(time.Millisecond))

	leases := watchLeases(t, so.db)
	consumers := watchConsumers(t, js)
	var phases []phase

	// 1. The older controller holding the most partitions hangs, with messages delivered to it
	// and not acknowledged, and is killed; its replacement (same ID) starts at once.
	victim := ids[0]
	for _, id := range ids {
		if leasesHeld(so.db, id) > leasesHeld(so.db, victim) {
			victim = id
		}
	}
	owned := ownedPartitions(t, so.db, victim)
	procs[victim].readCounters(t) // a stopped process does not answer
	frozenAt := time.Now()
	if err := procs[victim].cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	phases = append(phases, phase{frozenAt, "SIGSTOP of older " + victim})
	// Polled (the server announces no delivery): every partition of the victim's with
	// messages out to it, or, at a low rate or once its pulls expired (4 s), most of them.
	var unacked, redelivered, with int
	var state []string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		cs := partitionConsumers(t, js)
		unacked, redelivered, with, state = 0, 0, 0, state[:0]
		for _, p := range owned {
			for _, c := range cs[p] {
				unacked += c.NumAckPending
				redelivered += c.NumRedelivered
				if c.NumAckPending > 0 {
					with++
				}
				state = append(state, fmt.Sprintf("%s: %d out", c.Name, c.NumAckPending))
			}
		}
		if with == len(owned) || with*2 > len(owned) && time.Since(frozenAt) > 3*time.Second {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("messages delivered to the hung older controller and not acknowledged on %d of its %d partitions after 10 s; want most: %v", with, len(owned), state)
		}
	}
	procs[victim].kill(t)
	gone = append(gone, procs[victim])
	killedAt := time.Now()
	phases = append(phases, phase{killedAt, "kill -9 of older " + victim})
	oldBoots := obs.boots(killedAt)
	run(victim, "new")
	waitFor(t, 60*time.Second, "new "+victim+" holds its share", func() bool { return shared(so.db, ids) })
	t.Logf("1. older %s (%d partitions) hung %v with %d messages delivered and not acknowledged on %d of its p{N} consumers (%d redelivered), killed; the new %s ready %v after the kill, the 3 sharing the partitions at %v",
		victim, len(owned), killedAt.Sub(frozenAt).Round(time.Millisecond), unacked, with, redelivered, victim,
		procs[victim].readyAt.Sub(killedAt).Round(time.Millisecond), time.Since(killedAt).Round(time.Millisecond))
	waitFor(t, 60*time.Second, "the new "+victim+"'s partitions consumed through generations", func() bool {
		cs := partitionConsumers(t, js)
		for _, p := range ownedPartitions(t, so.db, victim) {
			if !slices.ContainsFunc(cs[p], func(c *jetstream.ConsumerInfo) bool { return c.Config.AckPolicy == jetstream.AckAllPolicy }) {
				return false
			}
		}
		return true
	})
	t.Logf("consumers with 1 new and 2 older controllers: %s", consumerKinds(partitionConsumers(t, js)))
	if os.Getenv("EDGEWAN_TEST_UPGRADE_NEW_DIES") != "" {
		// The new controller dies while the older ones run: they take its upgraded partitions.
		upgraded := ownedPartitions(t, so.db, victim)
		procs[victim].readCounters(t)
		procs[victim].kill(t)
		gone = append(gone, procs[victim])
		t0 := time.Now()
		phases = append(phases, phase{t0, "kill -9 of new " + victim})
		others := slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return id == victim })
		waitFor(t, 60*time.Second, "the older controllers hold the 16 partitions", func() bool { return shared(so.db, others) })
		time.Sleep(5 * time.Second) // pacing: the older controllers consume the upgraded partitions for a while
		t.Logf("new %s killed; the older controllers took its %d upgraded partitions in %v; consumers: %s",
			victim, len(upgraded), time.Since(t0).Round(time.Millisecond), consumerKinds(partitionConsumers(t, js)))
		run(victim, "new")
		waitFor(t, 60*time.Second, "new "+victim+" holds its share again", func() bool { return shared(so.db, ids) })
	}

	// 2, 3. The others, one at a time: SIGTERM (leases released after draining), the new
	// version started under the same ID, until the three share the partitions again.
	step := 1
	for _, id := range ids {
		if id == victim {
			continue
		}
		step++
		t0 := time.Now()
		phases = append(phases, phase{t0, "SIGTERM to older " + id})
		procs[id].readCounters(t)
		procs[id].terminate(t)
		gone = append(gone, procs[id])
		stopped := time.Since(t0)
		run(id, "new")
		waitFor(t, 60*time.Second, "new "+id+" holds its share", func() bool { return shared(so.db, ids) })
		t.Logf("%d. older %s stopped (SIGTERM to exit) in %v, the new one ready at %v, the 3 sharing the partitions at %v; consumers: %s",
			step, id, stopped.Round(time.Millisecond), procs[id].readyAt.Sub(t0).Round(time.Millisecond), time.Since(t0).Round(time.Millisecond),
			consumerKinds(partitionConsumers(t, js)))
	}
	rolled := time.Now()

	// Every site reports through the new controllers: its last watermark is from one (a boot
	// not seen before the first new controller started) and came after the roll.
	waitFor(t, 60*time.Second, "every site's watermark published by a new controller after the roll", func() bool {
		for _, a := range agents {
			if w := obs.last(a.site); w.at.Before(rolled) || oldBoots[w.boot] {
				return false
			}
		}
		return true
	})
	stopDrained(t, agents)
	leases.stop()
	consumers.stop()
	for _, p := range procs {
		p.readCounters(t)
	}

	lost := checkDelivered(t, so.idb, agents, phases)
	// One owner at a time: each partition's epoch only moved forward, one owner per epoch,
	// and no status change or path switch of a site is announced twice.
	if bad := leases.violations(); len(bad) > 0 {
		t.Errorf("partition leases owned twice or moved back during the roll: %v", bad)
	}
	if dup := repeatedTransitions(t, so.db); len(dup) > 0 {
		t.Errorf("one transition of a site recorded twice in a row (two owners?): %v", dup)
	}
	// The released consumers are upgraded: each partition is consumed through one generation
	// (AckAll); its p{N} is kept unused, set to be removed by the server after the stream's
	// MaxAge without use (mqtt's keepReleased), or gone.
	after := partitionConsumers(t, js)
	keptReleased := 0
	for p := range 16 {
		var gens []string
		for _, c := range after[p] {
			switch {
			case c.Name == fmt.Sprintf("p%d", p):
				keptReleased++
				// Messages it had out to the killed older controller stay out (nobody pulls it);
				// its successor delivered them.
				if c.Config.InactiveThreshold <= 0 || c.NumWaiting != 0 {
					t.Errorf("partition %d after the upgrade: the released p%d is kept with inactive threshold %v, %d pulls waiting; want unused and set to expire",
						p, p, c.Config.InactiveThreshold, c.NumWaiting)
				}
			case c.Config.AckPolicy == jetstream.AckAllPolicy:
				gens = append(gens, c.Name)
			default:
				t.Errorf("partition %d after the upgrade: consumer %s with %v", p, c.Name, c.Config.AckPolicy)
			}
		}
		if len(gens) != 1 {
			t.Errorf("partition %d after the upgrade: consumers %v; want one p%d-g{generation} acknowledging cumulatively", p, names(after[p]), p)
		}
	}
	// No consumer delivers again what an earlier one of its partition had acknowledged.
	replayed, made := consumers.replayed()
	t.Logf("%d partition consumers created during the roll; acknowledged messages delivered again by a new one: %v; released p{N} bound again by an older controller (messages acknowledged above their floors, all partitions' sequences: an upper bound): %v; %d released p{N} kept unused (set to expire)",
		made, replayed, consumers.resumedByOlder(), keptReleased)
	if len(replayed) > 0 {
		t.Errorf("consumers started below their partition's ack floor (acknowledged messages delivered again: a replay): %v", replayed)
	}
	// Duplicates: reports the controllers refused as already taken (an agent sending again
	// what a takeover's watermark did not cover yet, a message delivered again by NATS).
	all := append(slices.Clone(gone), procs[ids[0]], procs[ids[1]], procs[ids[2]])
	var dups, handled, late, fenced float64
	var each []string
	for _, p := range all {
		dups += p.counters["duplicate"]
		handled += p.counters["reports"]
		late += p.counters["late"]
		fenced += p.counters["fenced"]
		each = append(each, fmt.Sprintf("%s %s %.0f", p.version, p.id, p.counters["duplicate"]))
	}
	t.Logf("duplicates refused by the controllers: %.0f (%s) against %.0f reports evaluated and %.0f stored late; %d partition moves; %.0f fenced writes refused",
		dups, strings.Join(each, ", "), handled, late, leases.moves(), fenced)
	// Bound: each partition move may bring again what the agents' last watermark did not cover
	// yet (a checkpoint every 5 s: about 8 reports per site at most) and what the previous
	// owner had out unacknowledged (InFlight, 64). A storm (a partition's stream delivered
	// again) is also caught by the consumers' starts above.
	if limit := float64(leases.moves()) * (float64((sites+15)/16)*8 + 64); dups > limit {
		t.Errorf("%.0f duplicates in the roll; want at most %.0f for %d partition moves (a duplicate storm?)", dups, limit, leases.moves())
	}
	t.Logf("whole test: %v; lost %d", time.Since(start).Round(time.Millisecond), lost)
}

// versioned is a controller process of one version, with its Prometheus endpoint.
type versioned struct {
	*serveProc
	version  string // "old" (preAckAll) or "new"
	metrics  string
	readyAt  time.Time          // /readyz answered 200
	counters map[string]float64 // read last (before the process stopped)
}

// ingestCounters are the controller's counters the upgrade test reads, by short name.
var ingestCounters = map[string]string{
	`edgewan_ingest_rejected_total{reason="duplicate"}`: "duplicate",
	`edgewan_ingest_reports_total`:                      "reports",
	`edgewan_ingest_late_reports_total`:                 "late",
	`edgewan_ingest_fenced_writes_total`:                "fenced", // every write label, summed
}

// readCounters reads p's ingest counters from its /metrics (the text format).
func (p *versioned) readCounters(t *testing.T) {
	t.Helper()
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(p.metrics)
	if err != nil {
		t.Fatalf("%s metrics: %v", p.id, err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") {
			continue
		}
		short := ingestCounters[name]
		if short == "" {
			if base, _, labelled := strings.Cut(name, "{"); labelled {
				short = ingestCounters[base]
			}
		}
		if short == "" {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			t.Fatalf("%s metrics: %q: %v", p.id, sc.Text(), err)
		}
		out[short] += v
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s metrics: %v", p.id, err)
	}
	p.counters = out
}

// jetStream is a JetStream client of the test cluster's stream of agents' messages.
func jetStream(t *testing.T, c *natstest.Cluster) jetstream.Stream {
	t.Helper()
	conn, err := nats.Connect(strings.Join(c.URLs, ","), nats.UserInfo(natstest.User, natstest.Password))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	js, err := jetstream.New(conn)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, mqtt.DefaultNATSStream)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// partitionName is a partition consumer's name: p{N} (the released version's) or
// p{N}-g{generation}.
var partitionName = regexp.MustCompile(`^p(\d+)(?:-g\d+)?$`)

// partitionConsumers lists the durable consumers of each partition (the status replay's
// ephemeral consumers left out), sorted by name.
func partitionConsumers(t *testing.T, st jetstream.Stream) map[int][]*jetstream.ConsumerInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out := map[int][]*jetstream.ConsumerInfo{}
	list := st.ListConsumers(ctx)
	for ci := range list.Info() {
		m := partitionName.FindStringSubmatch(ci.Name)
		if m == nil {
			continue
		}
		p, _ := strconv.Atoi(m[1])
		out[p] = append(out[p], ci)
	}
	if err := list.Err(); err != nil {
		t.Fatalf("listing consumers: %v", err)
	}
	for _, cs := range out {
		slices.SortFunc(cs, func(a, b *jetstream.ConsumerInfo) int { return strings.Compare(a.Name, b.Name) })
	}
	return out
}

func names(cs []*jetstream.ConsumerInfo) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

// consumerKinds summarises the partitions' consumers: how many partitions have a released
// p{N}, a generation, or both.
func consumerKinds(by map[int][]*jetstream.ConsumerInfo) string {
	var released, gens, both, extra int
	for p := range 16 {
		var r, g int
		for _, c := range by[p] {
			if c.Name == fmt.Sprintf("p%d", p) {
				r++
			} else {
				g++
			}
		}
		switch {
		case r > 0 && g > 0:
			both++
		case r > 0:
			released++
		case g > 0:
			gens++
		}
		if r+g > 1 {
			extra++
		}
	}
	return fmt.Sprintf("%d partitions on p{N}, %d on a generation, %d with both; %d with more than one consumer", released, gens, both, extra)
}

// leaseWatch samples the partition leases (owner, epoch) every 100 ms.
type leaseWatch struct {
	*sampler
	mu    sync.Mutex
	owner map[int64]string // "partition/epoch" -> owner seen
	epoch map[int]int64
	bad   []string
	moved int
}

func watchLeases(t *testing.T, db *sql.DB) *leaseWatch {
	t.Helper()
	w := &leaseWatch{owner: map[int64]string{}, epoch: map[int]int64{}}
	w.sampler = sampleEvery(t, 100*time.Millisecond, func(ctx context.Context) { w.sample(ctx, db) })
	return w
}

// sampler runs a sample function now and then on its own goroutine, until stop (or the
// test's end).
type sampler struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func sampleEvery(t *testing.T, every time.Duration, sample func(context.Context)) *sampler {
	ctx, cancel := context.WithCancel(context.Background())
	s := &sampler{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			sample(ctx)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(s.stop)
	return s
}

func (s *sampler) stop() {
	s.cancel()
	<-s.done
}

func (w *leaseWatch) sample(ctx context.Context, db *sql.DB) {
	rows, err := db.QueryContext(ctx, `SELECT partition, coalesce(owner, ''), epoch FROM edgewan_partition_leases`)
	if err != nil {
		return // the context ended
	}
	defer rows.Close()
	w.mu.Lock()
	defer w.mu.Unlock()
	for rows.Next() {
		var p int
		var owner string
		var epoch int64
		if rows.Scan(&p, &owner, &epoch) != nil {
			return
		}
		if prev, ok := w.epoch[p]; ok && epoch < prev {
			w.bad = append(w.bad, fmt.Sprintf("partition %d: epoch %d after %d", p, epoch, prev))
		} else if ok && epoch > prev {
			w.moved++
		}
		w.epoch[p] = max(w.epoch[p], epoch)
		if owner == "" {
			continue // released
		}
		key := epoch<<8 | int64(p)
		if o, ok := w.owner[key]; ok && o != owner {
			w.bad = append(w.bad, fmt.Sprintf("partition %d: epoch %d held by %s and %s", p, epoch, o, owner))
		}
		w.owner[key] = owner
	}
}

func (w *leaseWatch) violations() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.bad)
}

func (w *leaseWatch) moves() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.moved
}

// boots returns the controller starts (Boot) of the watermarks observed before t.
func (w *watermarks) boots(before time.Time) map[string]bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]bool{}
	for _, ms := range w.seen {
		for _, m := range ms {
			if m.at.Before(before) {
				out[m.boot] = true
			}
		}
	}
	return out
}

// consumerWatch samples the partitions' consumers every 200 ms and checks where each new one
// starts against what the partition's consumers had acknowledged before it appeared: a
// consumer starting at or below an ack floor already seen delivers those messages again (a
// replay: a consumer created from the start of the stream is the storm of a whole partition).
type consumerWatch struct {
	*sampler
	mu     sync.Mutex
	floor  map[int]uint64    // the highest ack floor seen per partition
	seen   map[string]bool   // consumers seen, by name and creation time
	replay map[string]uint64 // consumers that started below their partition's floor: messages
	made   int               // consumers that appeared after the first sample
	// A released p{N} kept by this version (InactiveThreshold set) and bound again by an older
	// controller (its bind clears the threshold): it resumes after its own floor, delivering
	// again what this version acknowledged since (messages, by partition).
	kept    map[string]bool
	resumed map[string]uint64
}

func watchConsumers(t *testing.T, st jetstream.Stream) *consumerWatch {
	t.Helper()
	w := &consumerWatch{floor: map[int]uint64{}, seen: map[string]bool{}, replay: map[string]uint64{},
		kept: map[string]bool{}, resumed: map[string]uint64{}}
	first := true
	w.sampler = sampleEvery(t, 200*time.Millisecond, func(ctx context.Context) {
		if w.sample(ctx, st, first) {
			first = false
		}
	})
	return w
}

// sample reads every consumer's info once; false if the listing failed (a NATS node's
// election: sampled again next time).
func (w *consumerWatch) sample(ctx context.Context, st jetstream.Stream, first bool) bool {
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var infos []*jetstream.ConsumerInfo
	list := st.ListConsumers(lctx)
	for ci := range list.Info() {
		infos = append(infos, ci)
	}
	if list.Err() != nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, ci := range infos {
		m := partitionName.FindStringSubmatch(ci.Name)
		if m == nil {
			continue
		}
		p, _ := strconv.Atoi(m[1])
		key := ci.Name + "@" + ci.Created.String()
		if !w.seen[key] {
			w.seen[key] = true
			if !first {
				w.made++
				start := uint64(1) // DeliverAll: the stream's first message (nothing is purged here)
				if ci.Config.DeliverPolicy == jetstream.DeliverByStartSequencePolicy {
					start = ci.Config.OptStartSeq
				}
				if f := w.floor[p]; f >= start {
					w.replay[ci.Name] += f - start + 1
				}
			}
		}
	}
	for _, ci := range infos {
		if ci.Config.AckPolicy != jetstream.AckExplicitPolicy {
			continue
		}
		if ci.Config.InactiveThreshold > 0 {
			w.kept[ci.Name] = true
		} else if w.kept[ci.Name] {
			delete(w.kept, ci.Name)
			p, _ := strconv.Atoi(ci.Name[1:])
			if f := w.floor[p]; f > ci.AckFloor.Stream {
				w.resumed[ci.Name] += f - ci.AckFloor.Stream
			}
		}
	}
	// Floors after the starts: a consumer's own floor never counts against its start.
	for _, ci := range infos {
		if m := partitionName.FindStringSubmatch(ci.Name); m != nil {
			p, _ := strconv.Atoi(m[1])
			w.floor[p] = max(w.floor[p], ci.AckFloor.Stream)
		}
	}
	return true
}

// replayed returns the consumers that started below what was acknowledged before them, with
// the number of acknowledged messages each delivers again, and how many consumers appeared.
func (w *consumerWatch) replayed() (map[string]uint64, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.replay), w.made
}

// resumedByOlder returns the kept p{N} consumers an older controller bound again, with about
// how many messages this version had acknowledged above their floors then (stream sequences,
// every partition's messages counted: an upper bound).
func (w *consumerWatch) resumedByOlder() map[string]uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.resumed)
}
