package cluster

import (
	"context"
	"fmt"
	"log/slog"
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
	"github.com/edgewan/edgewan/controller/mqtt"
	"github.com/edgewan/edgewan/controller/mqtt/natstest"
)

// timeline is the agents' uplink log with times, per site (every level: the uplink logs the
// phases of a reconnect at Debug); the phases of the agents' failover after a NATS node's death
// are measured from it. Records at next's level also go to next (the verbose test log).
type timeline struct {
	mu   *sync.Mutex
	ev   map[string][]logEvent
	site string
	next slog.Handler
}

type logEvent struct {
	at     time.Time
	msg    string
	err    bool   // an "err" attribute: a failed attempt
	reason string // its text
	attrs  string // every attribute, "k=v ...", for the slowest agents' story
}

func newTimeline(next slog.Handler) *timeline {
	return &timeline{mu: &sync.Mutex{}, ev: map[string][]logEvent{}, next: next}
}

func (l *timeline) Enabled(context.Context, slog.Level) bool { return true }

func (l *timeline) Handle(ctx context.Context, r slog.Record) error {
	e := logEvent{at: r.Time, msg: r.Message}
	var kv []string
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "err" {
			e.err, e.reason = true, a.Value.String()
		}
		kv = append(kv, a.Key+"="+a.Value.String())
		return true
	})
	e.attrs = strings.Join(kv, " ")
	l.mu.Lock()
	l.ev[l.site] = append(l.ev[l.site], e)
	l.mu.Unlock()
	if l.next != nil && l.next.Enabled(ctx, r.Level) {
		return l.next.Handle(ctx, r)
	}
	return nil
}

func (l *timeline) WithAttrs(as []slog.Attr) slog.Handler {
	c := *l
	for _, a := range as {
		if a.Key == "site" {
			c.site = a.Value.String()
		}
	}
	if l.next != nil {
		c.next = l.next.WithAttrs(as)
	}
	return &c
}

func (l *timeline) WithGroup(string) slog.Handler { return l }

// The uplink's log messages that mark the phases of a reconnect (agent/engine).
const (
	msgLost       = "agent: broker connection lost; reconnecting"
	msgWait       = "agent: reconnecting to the broker"
	msgDial       = "agent: dialing a broker node"
	msgConnected  = "agent: connected to the broker"
	msgSubscribed = "agent: subscribed to the controller's topics"
	msgPuback     = "agent: first PUBACK on this connection"
	msgSent       = "agent: first report sent on this connection (QoS 0)" // on NATS, once the watermark is known
	msgWatermark  = "agent: first watermark on this connection"
	msgHeard      = "agent: watermark heard" // every one, with the connection ("on") and "seq"
)

// failover is, for each agent whose connection dropped after since, how long each phase of its
// reconnect took: the drop noticed, the first dial (the backoff), the connection accepted (the
// dials, CONNECT and CONNACK: NATS restores the MQTT session), the subscriptions confirmed, the
// first PUBACK, the first watermark; and how many connection attempts it took.
func (l *timeline) failover(since time.Time) map[string][]time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string][]time.Duration{}
	for _, evs := range l.ev {
		var lost, dial, conn time.Time
		attempts := 0
		first := func(msg string, after time.Time) time.Time {
			for _, e := range evs {
				if e.msg == msg && !(e.err && msg == msgDial) && !e.at.Before(after) {
					return e.at
				}
			}
			return time.Time{}
		}
		if lost = first(msgLost, since); lost.IsZero() {
			continue
		}
		dial, conn = first(msgDial, lost), first(msgConnected, lost)
		if conn.IsZero() {
			continue
		}
		dials := 0
		for _, e := range evs {
			if e.at.After(lost) && e.at.Before(conn) {
				switch {
				case e.msg == msgWait:
					attempts++
				case e.msg == msgDial && !e.err:
					dials++
				}
			}
		}
		add := func(phase string, from, to time.Time) {
			if !from.IsZero() && !to.IsZero() {
				out[phase] = append(out[phase], to.Sub(from))
			}
		}
		add("1 kill to drop noticed", since, lost)
		add("2 drop to first dial (backoff)", lost, dial)
		add("3 first dial to CONNACK", dial, conn)
		add("4 CONNACK to SUBACK", conn, first(msgSubscribed, conn))
		firstOut := first(msgPuback, conn) // QoS 1; at QoS 0 the first report written
		if s := first(msgSent, conn); !s.IsZero() && (firstOut.IsZero() || s.Before(firstOut)) {
			firstOut = s
		}
		add("5 CONNACK to first PUBACK/QoS 0 send", conn, firstOut)
		add("6 CONNACK to first watermark", conn, first(msgWatermark, conn))
		add("7 kill to first PUBACK/QoS 0 send", since, firstOut)
		out["attempts"] = append(out["attempts"], time.Duration(attempts))
		out["dials"] = append(out["dials"], time.Duration(dials))
	}
	return out
}

// accepts records, per site, when the broker accepted each report (engine.Options.OnAccepted:
// its PUBACK at QoS 1; at QoS 0 its send on the connection, known once a watermark covers it).
type accepts struct {
	mu sync.Mutex
	at map[string][]time.Time
	// told: when the hook was told of each (at QoS 0: when the watermark covering it came)
	told map[string][]time.Time
}

func newAccepts() *accepts {
	return &accepts{at: map[string][]time.Time{}, told: map[string][]time.Time{}}
}

// hook is the OnAccepted of site's agent.
func (a *accepts) hook(site string) func(time.Time) {
	return func(at time.Time) {
		now := time.Now()
		a.mu.Lock()
		a.at[site] = append(a.at[site], at)
		a.told[site] = append(a.told[site], now)
		a.mu.Unlock()
	}
}

// confirmed is how long after since each of sites first had a report sent at or after since
// confirmed: at QoS 0, when a watermark covering it came on the connection it was sent on (at
// QoS 1, its PUBACK). The agent deletes it then; until then it keeps it and may send it again.
func (a *accepts) confirmed(since time.Time, sites []string) map[string]time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	per := map[string]time.Duration{}
	for _, s := range sites {
		var best time.Time
		for i, at := range a.at[s] {
			if told := a.told[s][i]; !at.Before(since) && (best.IsZero() || told.Before(best)) {
				best = told
			}
		}
		if !best.IsZero() {
			per[s] = best.Sub(since)
		}
	}
	return per
}

// again is how long after since each of sites had a report accepted again: the earliest
// acceptance at or after since (the minimum: at QoS 1 a report sent again is acknowledged
// after later ones); ok is false while some site has none yet.
func (a *accepts) again(since time.Time, sites []string) (per map[string]time.Duration, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	per = map[string]time.Duration{}
	for _, s := range sites {
		var best time.Time
		for _, at := range a.at[s] {
			if !at.Before(since) && (best.IsZero() || at.Before(best)) {
				best = at
			}
		}
		if best.IsZero() {
			return per, false
		}
		per[s] = best.Sub(since)
	}
	return per, true
}

// maxOf is the largest duration of per, and the median.
func maxOf(per map[string]time.Duration) (worst, median time.Duration) {
	d := make([]time.Duration, 0, len(per))
	for _, v := range per {
		d = append(d, v)
	}
	if len(d) == 0 {
		return 0, 0
	}
	slices.Sort(d)
	return d[len(d)-1], d[len(d)/2]
}

// agentBroker is the broker kind the tests' agents are given: claim.BrokerNATS (QoS 0 reports,
// QoS 0 subscriptions, nothing retained), or "" (the MQTT profile: QoS 1, retained status)
// with EDGEWAN_TEST_AGENT_QOS1=1, to compare the two on one machine (docs/benchmarks.md).
func agentBroker() string {
	if os.Getenv("EDGEWAN_TEST_AGENT_QOS1") != "" {
		return ""
	}
	return claim.BrokerNATS
}

// agentStandby is the tests' agents' warm standby connection mode: config.StandbyAuto (on, as
// on NATS by default), or config.StandbyOff with EDGEWAN_TEST_AGENT_STANDBY=off, to compare the
// two on one machine (docs/benchmarks.md).
func agentStandby() string {
	if os.Getenv("EDGEWAN_TEST_AGENT_STANDBY") == "off" {
		return config.StandbyOff
	}
	return config.StandbyAuto
}

// drops counts, by error, the connections the agents lost after since (their first loss each).
func (l *timeline) drops(since time.Time) map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]int{}
	for _, evs := range l.ev {
		for _, e := range evs {
			if e.msg == msgLost && !e.at.Before(since) {
				out[e.reason]++
				break
			}
		}
	}
	return out
}

// logFailover logs the phases of failover under title (median and maximum over the agents).
func logFailover(t *testing.T, title string, ph map[string][]time.Duration) {
	t.Helper()
	names := make([]string, 0, len(ph))
	for k := range ph {
		names = append(names, k)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, k := range names {
		d := ph[k]
		slices.Sort(d)
		if k == "attempts" || k == "dials" {
			what := map[string]string{"attempts": "connection attempts (paho Connect calls)", "dials": "nodes dialed"}[k]
			fmt.Fprintf(&b, "\n  %s: median %d, max %d (%d agents)", what, d[len(d)/2], d[len(d)-1], len(d))
			continue
		}
		fmt.Fprintf(&b, "\n  %-32s median %7v  max %7v  (%d agents)", k, d[len(d)/2].Round(time.Millisecond), d[len(d)-1].Round(time.Millisecond), len(d))
	}
	t.Logf("%s:%s", title, b.String())
}

// jsWatch polls, from a node that stays up, the leaders of the JetStream assets a node's death
// interrupts (the controllers' stream and its partition consumers, the MQTT sessions stream)
// and when the stream stores a message again, every 100 ms from since until stopped: the
// broker's share of the failover.
type jsWatch struct {
	since time.Time
	stop  chan struct{}
	done  chan struct{}
	lines []string
}

func watchJetStream(t *testing.T, url, dead string, since time.Time) *jsWatch {
	t.Helper()
	w := &jsWatch{since: since, stop: make(chan struct{}), done: make(chan struct{})}
	conn, err := nats.Connect(url, nats.UserInfo(natstest.User, natstest.Password), nats.NoReconnect())
	if err != nil {
		t.Fatalf("jsWatch: %v", err)
	}
	js, _ := jetstream.New(conn)
	go func() {
		defer close(w.done)
		defer conn.Close()
		seen := map[string]bool{}
		note := func(what string) {
			if !seen[what] {
				seen[what] = true
				w.lines = append(w.lines, fmt.Sprintf("%7v %s", time.Since(since).Round(time.Millisecond), what))
			}
		}
		var seq0 uint64
		live := func(name string) (*jetstream.StreamInfo, bool) { // one request each: a slow one must not starve the others
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			st, err := js.Stream(ctx, name)
			if err != nil {
				return nil, false
			}
			si := st.CachedInfo()
			return si, si.Cluster != nil && si.Cluster.Leader != "" && si.Cluster.Leader != dead
		}
		for {
			if si, ok := live(mqtt.DefaultNATSStream); si != nil {
				if seq0 == 0 {
					seq0 = si.State.LastSeq
				}
				if ok {
					note("stream " + mqtt.DefaultNATSStream + " has a live leader")
				}
				if si.State.LastSeq > seq0 {
					note("stream " + mqtt.DefaultNATSStream + " stores again")
				}
			}
			for _, name := range []string{"$MQTT_sess", "$MQTT_msgs", "$MQTT_rmsgs"} { // NATS's MQTT sessions, QoS 1 messages, retained
				if _, ok := live(name); ok {
					note("stream " + name + " has a live leader")
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			led := 0
			st, _ := js.Stream(ctx, mqtt.DefaultNATSStream)
			for p := range 16 {
				if st == nil {
					break
				}
				if c, err := mqtt.PartitionConsumer(ctx, st, p); err == nil {
					if ci := c.CachedInfo(); ci.Cluster != nil && ci.Cluster.Leader != "" && ci.Cluster.Leader != dead {
						led++
					}
				}
			}
			if led == 16 {
				note("all 16 partition consumers have a live leader")
			}
			cancel()
			select {
			case <-w.stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return w
}

// log stops the watch and logs when each asset came back.
func (w *jsWatch) log(t *testing.T) {
	t.Helper()
	close(w.stop)
	<-w.done
	t.Logf("JetStream after the node's death (since the kill):\n  %s", strings.Join(w.lines, "\n  "))
}

// natsErrors counts, in the logs of the nodes that stayed up, the MQTT errors NATS logs while a
// JetStream asset has no leader (a client's CONNECT or retained publish waiting 4 s for it), and
// the clients it closed.
func natsErrors(dir string, nodes ...int) map[string]int {
	out := map[string]int{}
	for _, n := range nodes {
		b, err := os.ReadFile(fmt.Sprintf("%s/node%d.log", dir, n))
		if err != nil {
			out["unreadable log: "+err.Error()]++
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			for _, what := range []string{"unable to connect: loading session record", "unable to store retained message",
				"Readloop processing time", "timeout for request type", "Client connection closed"} {
				if strings.Contains(line, what) {
					out[what]++
				}
			}
		}
	}
	return out
}

// sameNodes reports whether a and b list the same broker nodes, in any order (a claim rotates
// the list per device).
func sameNodes(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

// natsLoad is what each node of the cluster holds now, from its /varz: client connections
// (MQTT ones included) and resident memory, for the standby's cost (docs/scale-out.md,
// capacity model).
func natsLoad(nc *natstest.Cluster, nodes ...int) string {
	var out []string
	for _, n := range nodes {
		l, err := nc.Varz(n)
		if err != nil {
			out = append(out, err.Error())
			continue
		}
		out = append(out, fmt.Sprintf("n%d: %d connections, %.1f MiB RSS", n, l.Connections, float64(l.Mem)/(1<<20)))
	}
	return strings.Join(out, "; ")
}

// story is what site's uplink logged from since on, each line with its time since then: the
// connections lost, the standby's activation, the reconnect, which connection heard which
// watermark; for the agents slowest to report again (TestScaleOut).
func (l *timeline) story(site string, since time.Time) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	heard := map[string]int{} // watermarks told per connection: the first 3 are enough
	for _, e := range l.ev[site] {
		if e.at.Before(since) || e.at.After(since.Add(20*time.Second)) {
			continue
		}
		if e.msg == msgHeard {
			on, _, _ := strings.Cut(e.attrs, " ")
			if heard[on]++; heard[on] > 3 {
				continue
			}
		}
		out = append(out, fmt.Sprintf("%7v %s %s", e.at.Sub(since).Round(time.Millisecond), strings.TrimPrefix(e.msg, "agent: "), e.attrs))
	}
	return out
}
