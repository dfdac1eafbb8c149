package engine

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/edgewan/edgewan/agent/backoff"
	"github.com/edgewan/edgewan/agent/claim"
	"github.com/edgewan/edgewan/agent/spool"
	"github.com/edgewan/edgewan/telemetry"
)

// uplink is the MQTT session with the controller: a persistent session (clean session off)
// that connectLoop (re)connects with full-jitter backoff; the spool feeds it in order, and the
// controller's retained policy and decisions come back on it.
type uplink struct {
	e     *Engine
	creds *claim.Credentials
	c     paho.Client
	up    atomic.Bool
	wakeC chan struct{}
	lost  chan struct{} // the connection dropped; capacity 1

	mark   atomic.Uint64 // the controller's watermark (telemetry.Stored) for this device
	boot   atomic.Value  // string: the controller start that published it
	resend atomic.Bool   // send again everything the watermark does not cover
	marked atomic.Int64  // UnixNano when the watermark last moved
	// oldest: the ID of the oldest record the sender found in the spool (it may send it
	// again); reports carry it (Held), with what the spool has acked, so that the controller
	// gives up what the agent no longer holds rather than wait for it.
	oldest atomic.Uint64
	// holeAfter: a record PUBACKed this long ago and still not covered while the watermark
	// has not moved for as long is taken as lost by the broker (see sendLoop); holeAfter,
	// shorter in tests.
	holeAfter atomic.Int64
	lostAt    atomic.Int64 // UnixNano when the connection last dropped
	servers   *servers     // the order in which the nodes are dialed; nil: paho's (one node)

	// speaks: the controller publishes the watermark (a stored message was seen, now or by an
	// earlier run: the spool's flagWatermark). Until then, each connection waits grace for one,
	// then deletes at PUBACK (an older controller). Never cleared.
	speaks atomic.Bool
	grace  atomic.Int64 // time.Duration; watermarkGrace, shorter in tests
	connAt atomic.Int64 // UnixNano of the current connection
	subAt  atomic.Int64 // UnixNano of its confirmed subscriptions; 0 until then
	// ackedOn: the connAt of the last PUBACK (the first on each connection is logged)
	ackedOn, markedOn atomic.Int64 // and of the last watermark heard
	primaryAt         atomic.Int64 // the connAt of the primary's current or last connection
	// storedOnly: the uplink alone (Uplink), with no engine to take policies and decisions
	storedOnly bool
	// nats: the broker is a NATS cluster (claim.BrokerNATS): see reportQoS.
	nats bool
	// sb: the warm standby connection (NATS only; nil: none), see standby.
	sb *standby
	// hole: the controller's latest request for records it is missing (telemetry.Stored.Hole),
	// until sendLoop serves it; olderAgent: ignore such requests (tests: an agent from before
	// them, which falls back on holeAfter).
	hole       atomic.Pointer[telemetry.SeqRange]
	olderAgent atomic.Bool
	// heard: per connection (its connAt; the standby's id), the highest watermark heard on it,
	// for Options.OnAccepted only (accepted.covered).
	heardMu sync.Mutex
	heard   map[int64]uint64
}

// reportQoS is the QoS spooled records are published at now: 0 on NATS once the controller
// is known to publish the watermark (speaks is never cleared, so a record sent at QoS 0 can
// never be deleted by the PUBACK fallback, which only runs while !speaks), else 1.
//
// On NATS (the scaled-out mode) the agent uses no MQTT feature that NATS keeps in its own
// replicated streams, because each waits on that stream's Raft leader, and a node's death
// takes the leaders it held with it for NATS's election (4-9 s; nats-server constants): a
// QoS 1 PUBLISH is stored in $MQTT_msgs from the connection's read loop (while it has no leader
// NATS fails it after 4 s and closes the connection, on every node), a retained one in
// $MQTT_rmsgs (the read loop waits 4 s), and a QoS 1 subscription is a durable JetStream
// consumer per agent. So on NATS:
//   - spooled records (reports, events) go at QoS 0 once the controller is known to publish
//     the stored watermark (speaks): the spool deletes a record only when the watermark
//     covers it, and sends again what a watermark does not cover (after a reconnect, a new
//     controller boot, a stalled watermark). NATS's PUBACK never meant stored either: the
//     controllers read the EDGEWAN_IN stream, which takes the message as a plain NATS
//     publish without telling the MQTT layer whether it stored it. Before the
//     first watermark ever (an older controller: the PUBACK fallback) they stay at QoS 1.
//   - subscriptions are at QoS 0: what they carry (policy, decisions, watermark) is retained,
//     the latest state, and comes again with each SUBSCRIBE, which the agent sends at every
//     connection.
//   - the status (online, the will, offline) is at QoS 0 and not retained: the controllers
//     read it from EDGEWAN_IN, replaying each site's last one when they take a partition.
//
// On the embedded broker and Mosquitto (one broker, nothing to elect) everything stays at
// QoS 1 and retained: there a PUBACK costs nothing, and a QoS 0 report dropped by the broker
// (a full queue, a controller restart with Mosquitto) would wait for holeAfter to be sent again.
// docs/scale-out.md, "Agents on NATS", has the measurements.
func (u *uplink) reportQoS() byte {
	if u.nats && u.speaks.Load() {
		return 0
	}
	return 1
}

// statusQoS is the QoS and retain flag of the agent's status messages (online, will, offline).
func (u *uplink) statusQoS() (byte, bool) {
	if u.nats {
		return 0, false
	}
	return 1, true
}

// How the agent deletes its spooled records (Status, the metric, the logs).
const (
	modeWatermark = "watermark" // when the controller's watermark covers them
	modeWaiting   = "waiting"   // not known yet: as watermark, for the grace of this connection
	modePuback    = "puback"    // at the broker's PUBACK: an older controller, no watermark seen
)

// The compatibility rule: a controller older than the watermark publishes none, and the agent
// would stop sending after maxUnconfirmed records. So it deletes at PUBACK while it has never
// seen a watermark and none came within watermarkGrace of connecting (the controller's
// watermark is retained: it arrives at subscribe). Once one is seen, that is persisted in the
// spool and the agent never falls back: a stalled newer controller must not make it drop data.
const (
	watermarkGrace = 30 * time.Second
	flagWatermark  = 1 << 0 // spool flag: the controller speaks the watermark
)

// decisionGrace: the controller's decisions still hold this long after the connection drops. A
// controller restart takes seconds; switching every class to the agent's own choice for them,
// and back, moved traffic on every restart wherever the two differed (a local SLA breach the
// controller did not share). A transport the agent holds down is left at once regardless.
const decisionGrace = time.Minute

// decisionsHold reports whether the controller's decisions apply: connected, or not for long.
func (u *uplink) decisionsHold() bool {
	return u.connected() || time.Since(time.Unix(0, u.lostAt.Load())) < decisionGrace
}

const (
	publishBatch   = 64               // spooled messages in flight at once
	publishTimeout = 15 * time.Second // for the broker's PUBACKs of one batch
	// maxUnconfirmed bounds the records sent but not yet covered by the watermark: the sender
	// waits for the controller past it (its spool, not memory, holds the rest).
	maxUnconfirmed = 1024
	// holeAfter: how long the watermark may stay below a record the broker acknowledged,
	// without moving, before the agent takes it as lost between the broker and the controller
	// and sends the oldest uncovered records again: three of the controller's default flush
	// intervals (5 s), so a controller that is merely slow (its watermark moves) never
	// triggers it. It also covers a controller restart with an external broker (the
	// connections stay up) until the new boot's watermark arrives.
	holeAfter = 15 * time.Second
)

func newUplink(e *Engine, creds *claim.Credentials, standbyMode string) (*uplink, error) {
	u := &uplink{e: e, creds: creds, wakeC: make(chan struct{}, 1), lost: make(chan struct{}, 1), nats: creds.Broker == claim.BrokerNATS}
	if creds.Broker != "" && !u.nats {
		e.log.Warn("agent: unknown broker kind in the credentials; using it as an MQTT broker (QoS 1, retained status)", "broker", creds.Broker)
	}
	statusQoS, statusRetained := u.statusQoS()
	u.grace.Store(int64(watermarkGrace))
	u.holeAfter.Store(int64(holeAfter))
	u.speaks.Store(e.sp.Flags()&flagWatermark != 0)
	// The session cache lets a reconnect resume the TLS session (no certificate exchange or
	// chain verification), also after a controller restart: the controller's ticket key
	// outlives its process. About a quarter less CPU per reconnect for the agent and an eighth
	// less for the controller, which matters when a whole fleet reconnects at once
	// (docs/benchmarks.md, "Reconnect rate at 10,000 agents").
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ClientSessionCache: tls.NewLRUClientSessionCache(0)}
	if creds.CAPEM != "" {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(creds.CAPEM)) {
			return nil, errors.New("agent: the stored broker CA holds no certificate")
		}
		tc.RootCAs = pool
	}
	will, _ := json.Marshal(telemetry.Status{V: telemetry.SchemaVersion, Device: creds.Device, State: "offline"})
	opts := paho.NewClientOptions().AddBroker(creds.MQTTURL).SetClientID(creds.Device).
		SetUsername(creds.Username).SetPassword(creds.Password).SetTLSConfig(tc).
		SetCleanSession(false).SetAutoReconnect(false).SetConnectRetry(false). // connectLoop reconnects
		SetConnectTimeout(10*time.Second).SetKeepAlive(15*time.Second).SetPingTimeout(5*time.Second).
		SetWriteTimeout(5*time.Second). // a stalled connection must not hold a publish (or shutdown) for 30 s

		SetBinaryWill(telemetry.Topic(creds.Site, telemetry.KindStatus), will, statusQoS, statusRetained).
		SetOrderMatters(true)
	for _, b := range creds.MQTTURLs { // the other broker nodes: paho moves to the next when one fails
		if b != creds.MQTTURL {
			opts.AddBroker(b)
		}
	}
	if s, err := newServers(opts.Servers, creds.Device, e.log); err != nil {
		return nil, err
	} else if s != nil {
		u.servers = s
		opts.SetCustomOpenConnectionFn(u.servers.dial)
	}
	u.sb = newStandby(u, opts, standbyMode)
	opts.SetOnConnectHandler(u.onConnect)
	opts.SetConnectionLostHandler(func(_ paho.Client, err error) {
		u.lostAt.Store(time.Now().UnixNano())
		u.up.Store(false)
		e.m.connected.Set(0)
		time.AfterFunc(decisionGrace, e.kickReconcile) // then the agent's own choices apply
		e.log.Warn("agent: broker connection lost; reconnecting", "err", err)
		e.kickReconcile() // a transport held down locally is left now, not after the grace
		if u.sb != nil {
			u.sb.activate()
			u.sb.wake()
		}
		u.wake()
		select {
		case u.lost <- struct{}{}:
		default:
		}
	})
	u.c = paho.NewClient(opts)
	return u, nil
}

// connectLoop connects, and connects again whenever the connection drops, after a full-jitter
// backoff (not at once: when a broker comes back, all its agents lost it together), until ctx
// is done.
func (u *uplink) connectLoop(ctx context.Context) {
	if u.sb != nil { // owned here: it follows the primary's connection
		done := make(chan struct{})
		go func() { defer close(done); u.sb.loop(ctx) }()
		defer func() { <-done }()
	}
	b := backoff.Reconnect() // full jitter, low cap: see package backoff
	for {
		select {
		case <-u.lost: // a loss of a previous connection
		default:
		}
		if u.servers != nil {
			u.servers.reset()
		}
		tok := u.c.Connect()
		select {
		case <-tok.Done():
		case <-ctx.Done():
			return
		}
		if err := tok.Error(); err != nil {
			u.e.log.Debug("agent: connecting to the broker", "err", err)
		} else {
			b.Reset()
			select {
			case <-u.lost:
			case <-ctx.Done():
				return
			}
		}
		wait := b.Next()
		u.e.log.Debug("agent: reconnecting to the broker", "in", wait)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}

func (u *uplink) connected() bool { return u.up.Load() }

// onStandby reports whether the spool goes out on the standby connection (the primary is down).
func (u *uplink) onStandby() bool { return u.sb != nil && u.sb.active.Load() }

// client is the connection the spool goes out on: the primary, or the active standby.
func (u *uplink) client() paho.Client {
	if !u.connected() && u.onStandby() {
		return u.sb.c
	}
	return u.c
}

func (u *uplink) onConnect(c paho.Client) {
	e := u.e
	connAt := time.Now().UnixNano()
	onStored := func(p []byte) { u.onStored(p, connAt) }
	handlers := map[string]func([]byte){telemetry.KindPolicy: e.onPolicy, telemetry.KindDecisions: e.onDecisions, telemetry.KindStored: onStored}
	if u.storedOnly {
		handlers = map[string]func([]byte){telemetry.KindStored: onStored}
	}
	filters := make(map[string]byte, len(handlers))
	byTopic := make(map[string]func([]byte), len(handlers))
	subQoS := byte(1)
	if u.nats {
		subQoS = 0 // see reportQoS
	}
	for kind, h := range handlers {
		topic := telemetry.Topic(u.creds.Site, kind)
		filters[topic], byTopic[topic] = subQoS, h
	}
	on := func(_ paho.Client, m paho.Message) {
		if h := byTopic[m.Topic()]; h != nil {
			h(m.Payload())
		}
	}
	u.subAt.Store(0)
	if u.sb != nil {
		if u.sb.active.Swap(false) {
			e.log.Info("agent: back on the primary broker connection; the standby stands by again")
		}
		u.sb.wake()
	}
	u.connAt.Store(connAt)
	u.primaryAt.Store(connAt)
	go u.subscribe(c, filters, on, connAt)
	u.publishOnline()
	u.resend.Store(true) // what the controller has not confirmed may be lost with the old connection
	if !u.speaks.Load() {
		time.AfterFunc(time.Duration(u.grace.Load())+time.Second, u.wake) // sendLoop then decides (subscribe wakes it too)
	}
	u.up.Store(true)
	e.m.connected.Set(1)
	url := u.creds.MQTTURL
	if u.servers != nil {
		url = u.servers.connected()
	}
	e.log.Info("agent: connected to the broker", "url", url)
	u.wake()
	e.kickReconcile()
}

// subscribe subscribes to the controller's topics on the connection of connAt, and again
// (backing off) while the broker refuses or does not answer: a broker whose session store is not
// ready (NATS right after a start or a node's death) can refuse a subscription, and an agent
// that never hears the watermark would take its controller for an older one and delete at
// PUBACK after the grace. The grace counts from the confirmed subscription (subAt).
func (u *uplink) subscribe(c paho.Client, filters map[string]byte, on paho.MessageHandler, connAt int64) {
	wait := time.Second
	for u.connAt.Load() == connAt && c.IsConnectionOpen() {
		tok := c.SubscribeMultiple(filters, on)
		err := errors.New("no SUBACK in time")
		if tok.WaitTimeout(10 * time.Second) {
			err = tok.Error()
			if st, ok := tok.(*paho.SubscribeToken); ok && err == nil {
				for topic, code := range st.Result() {
					if code == 0x80 {
						err = fmt.Errorf("the broker refused the subscription to %s", topic)
					}
				}
			}
		}
		if err == nil {
			if u.subAt.Load() == 0 {
				u.subAt.Store(time.Now().UnixNano())
				u.e.log.Debug("agent: subscribed to the controller's topics", "after", time.Since(time.Unix(0, connAt)))
				u.wake() // the grace starts now
			}
			// A subscription the broker confirmed and never serves (seen with NATS 2.9 now
			// and then) would also make the agent fall back to PUBACK: until a watermark is
			// heard, subscribe again (the retained watermark comes with each subscription).
			grace := time.Duration(u.grace.Load())
			if u.speaks.Load() || time.Since(time.Unix(0, u.subAt.Load())) >= grace || // an older controller: PUBACK from now on
				!u.awaitWatermark(connAt, min(resubscribeAfter, grace)) {
				return
			}
			u.e.log.Warn("agent: no watermark since subscribing; subscribing again", "after", resubscribeAfter)
			wait = time.Second
			continue
		}
		u.e.log.Warn("agent: subscribing to the controller's topics; retrying", "err", err, "in", wait)
		time.Sleep(wait)
		wait = min(2*wait, 30*time.Second)
	}
}

// resubscribeAfter: without a watermark this long after subscribing, the agent subscribes
// again (well within watermarkGrace).
const resubscribeAfter = 8 * time.Second

// awaitWatermark waits until a watermark is heard (false), or d passes on the connection of
// connAt (true: subscribe again); false too when that connection is gone.
func (u *uplink) awaitWatermark(connAt int64, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if u.speaks.Load() || u.connAt.Load() != connAt || !u.connected() {
			return false
		}
		time.Sleep(100 * time.Millisecond) // polling a flag, bounded by d
	}
	return !u.speaks.Load() && u.connAt.Load() == connAt && u.connected()
}

// publishOnline publishes the agent's presence, retained, with the paths its classes use now.
func (u *uplink) publishOnline() { u.publishOnlineOn(u.c) }

// publishOnlineOn publishes the agent's presence on the connection c.
func (u *uplink) publishOnlineOn(c paho.Client) {
	e := u.e
	e.mu.Lock()
	paths := make(map[string]string, len(e.paths))
	for c, p := range e.paths {
		paths[c] = p
	}
	e.mu.Unlock()
	online, _ := json.Marshal(telemetry.Status{V: telemetry.SchemaVersion, Device: u.creds.Device, State: "online",
		Version: e.o.Version, Time: time.Now().UTC(), Paths: paths})
	qos, retained := u.statusQoS()
	c.Publish(telemetry.Topic(u.creds.Site, telemetry.KindStatus), qos, retained, online)
}

func (u *uplink) wake() {
	select {
	case u.wakeC <- struct{}{}:
	default:
	}
}

// deleteMode says how spooled records are deleted now: modeWatermark, modeWaiting or modePuback.
func (u *uplink) deleteMode() string {
	switch {
	case u.speaks.Load():
		return modeWatermark
	case u.connected() && u.subAt.Load() != 0 && time.Since(time.Unix(0, u.subAt.Load())) >= time.Duration(u.grace.Load()):
		return modePuback
	default:
		return modeWaiting
	}
}

// onStored takes the controller's watermark, heard on the connection conn (the primary's
// connAt, or the standby's id): the spooled records it covers may go.
func (u *uplink) onStored(payload []byte, conn int64) {
	var m telemetry.Stored
	if len(payload) > telemetry.MaxPayload || json.Unmarshal(payload, &m) != nil || m.Site != u.creds.Site {
		return
	}
	// Any device's watermark of the site shows that the controller speaks it.
	if !u.speaks.Load() {
		if err := u.e.sp.SetFlags(flagWatermark); err != nil {
			u.e.log.Error("agent: remembering that the controller publishes the watermark", "err", err)
		}
		u.speaks.Store(true)
		u.wake()
	}
	if m.Device != u.creds.Device {
		return
	}
	if c := u.connAt.Load(); c == conn && u.markedOn.Swap(c) != c {
		u.e.log.Debug("agent: first watermark on this connection", "after", time.Since(time.Unix(0, c)), "seq", m.Seq)
	}
	// Which connection heard which watermark, for reading a failover (TestScaleOut's timeline):
	// the primary and the standby both hear each one.
	if u.e.log.Enabled(context.Background(), slog.LevelDebug) {
		on := "primary"
		if u.sb != nil && conn == u.sb.id.Load() {
			on = "standby"
		}
		u.e.log.Debug(msgWatermarkHeard, "on", on, "seq", m.Seq)
	}
	if u.e.o.OnAccepted != nil {
		u.heardMu.Lock()
		if u.heard == nil {
			u.heard = map[int64]uint64{}
		}
		u.heard[conn] = max(u.heard[conn], m.Seq)
		if len(u.heard) > 4 { // the primary's and the standby's current connections are enough
			var sb int64
			if u.sb != nil {
				sb = u.sb.id.Load()
			}
			maps.DeleteFunc(u.heard, func(c int64, _ uint64) bool { return c != u.primaryAt.Load() && c != sb })
		}
		u.heardMu.Unlock()
	}
	if old, _ := u.boot.Load().(string); old != m.Boot {
		u.boot.Store(m.Boot)
		u.resend.Store(true) // a restarted controller lost what it had not stored
	}
	for {
		old := u.mark.Load()
		if m.Seq <= old || u.mark.CompareAndSwap(old, m.Seq) {
			break
		}
	}
	if h := m.Hole; h != nil && !u.olderAgent.Load() && h.From <= h.To && h.To > u.mark.Load() {
		u.hole.Store(&telemetry.SeqRange{From: h.From, To: h.To})
	}
	u.wake()
}

// msgWatermarkHeard is the Debug log of each watermark heard, with the connection ("on":
// primary or standby) and its sequence.
const msgWatermarkHeard = "agent: watermark heard"

// sent is a record published but not yet covered by the watermark.
type sent struct {
	id     uint64
	report bool
	at     int64 // UnixNano of its PUBACK (at QoS 0, of its publication)
}

// accepted tells Options.OnAccepted of the reports sent at QoS 0 that a watermark covers: the
// time each was first sent on the connection that then heard the watermark covering it (the
// copy stored may be one sent again, as for a PUBACKed report the broker dropped). Its own
// list, as pending is cleared at each resend; kept only with a hook (tests).
type accepted struct {
	sent []sentOn
	told map[uint64]bool // reports of sent already told
	// held: when a copy of a report was first found covered on its connection while an
	// earlier copy, on a connection still up, was not yet (see covered)
	held map[uint64]time.Time
}

// acceptWait bounds how long a report's copy confirmed on one connection waits for an earlier
// copy on another connection, still up, to be confirmed there too.
const acceptWait = 5 * time.Second

type sentOn struct {
	id       uint64
	at, conn int64 // UnixNano of the send, and the connAt of its connection
}

// add notes reports sent at QoS 0 on the connection of conn.
func (a *accepted) add(u *uplink, recs []spool.Record, at, conn int64) {
	if u.e.o.OnAccepted == nil {
		return
	}
	for _, r := range recs {
		if kind, _, _ := splitMessage(r.Payload); kind == telemetry.KindTelemetry {
			a.sent = append(a.sent, sentOn{id: r.ID, at: at, conn: conn})
		}
	}
}

// covered tells the hook of the reports up to w sent on a connection that then heard a
// watermark covering them (it stayed up from the send to the watermark), once each (the first
// send of a report on that connection); the others up to w are forgotten.
func (a *accepted) covered(u *uplink, w uint64) {
	if u.e.o.OnAccepted == nil || len(a.sent) == 0 {
		return
	}
	u.heardMu.Lock()
	heard := maps.Clone(u.heard)
	u.heardMu.Unlock()
	if a.told == nil {
		a.told, a.held = map[uint64]bool{}, map[uint64]time.Time{}
	}
	confirmed := map[uint64]bool{} // a copy is covered on its own connection
	for _, x := range a.sent {
		if x.id <= w && heard[x.conn] >= x.id {
			confirmed[x.id] = true
		}
	}
	// The time told is that of the first copy confirmed on its own connection: around a switch
	// between the primary and the standby a report has a copy on each (the standby's sent at
	// once, the primary's sent again at its reconnect), and both connections hear the same
	// watermark in either order. Telling the first copy confirmed, whichever that was, made
	// a standby's report sent 0.04 s after a node's death count as sent at the primary's
	// reconnect, 9 s later, whenever the primary heard the watermark a millisecond first.
	waiting := map[uint64]bool{} // an earlier copy, on a connection still up, may yet be confirmed
	keep := a.sent[:0]
	for _, x := range a.sent { // in the order sent; resends put lower IDs after higher ones
		switch {
		case x.id > w:
			keep = append(keep, x)
		case a.told[x.id]:
		case heard[x.conn] >= x.id && !waiting[x.id]:
			a.told[x.id] = true
			u.e.o.OnAccepted(time.Unix(0, x.at))
		case heard[x.conn] >= x.id: // behind an earlier copy still waited for
			keep = append(keep, x)
		case u.live(x.conn) && time.Since(time.Unix(0, x.at)) < time.Minute:
			// The watermark came on the other connection first (the primary and the standby
			// both hear it); this one's copy may be on its way.
			if confirmed[x.id] {
				if a.held[x.id].IsZero() {
					a.held[x.id] = time.Now()
				}
				if time.Since(a.held[x.id]) >= acceptWait { // its connection does not hear it
					continue
				}
				waiting[x.id] = true
			}
			keep = append(keep, x)
		}
	}
	a.sent = keep
	ids := make(map[uint64]bool, len(keep))
	for _, x := range keep {
		ids[x.id] = true
	}
	maps.DeleteFunc(a.told, func(id uint64, _ bool) bool { return !ids[id] })
	maps.DeleteFunc(a.held, func(id uint64, _ time.Time) bool { return !ids[id] })
}

// live reports whether the connection conn (a connAt, or the standby's id) is up.
func (u *uplink) live(conn int64) bool {
	return (conn == u.primaryAt.Load() && u.connected()) || (u.sb != nil && conn == u.sb.id.Load() && u.sb.up.Load())
}

// held is the oldest spool sequence the agent may still send, for its reports (Held): below
// it, what the controller never received will not come.
func (e *Engine) held() uint64 {
	h := e.sp.Stats().Acked + 1
	if e.up != nil {
		h = max(h, e.up.oldest.Load())
	}
	return h
}

// sendLoop publishes the spool, oldest first, and deletes records once the controller's
// watermark covers them (not at the broker's PUBACK: see telemetry.Stored). It keeps at most
// maxUnconfirmed records unconfirmed, and sends the unconfirmed ones again after a reconnect
// or a controller restart. The watermark is the highest contiguous sequence the controller
// stored, so a record the broker acknowledged and lost (NATS 2.9 around a node's death)
// holds it back: when it has not moved for holeAfter while records PUBACKed longer ago are
// uncovered, the oldest uncovered ones are sent again (probe). In modePuback (a controller
// that has never published a watermark) it deletes at PUBACK instead.
func (u *uplink) sendLoop(ctx context.Context) {
	retry := time.Second
	var last uint64    // the last record published (PUBACKed) on this connection
	var pending []sent // published, not yet covered, in ID order
	acked := uint64(0)
	var probe prober
	var acc accepted
	var served time.Time // the last hole request served, and its lower bound
	var servedFrom uint64
	u.marked.Store(time.Now().UnixNano())
	mode := ""
	deletePublished := func() { // at PUBACK: everything published so far
		if err := u.e.sp.Ack(last); err != nil {
			u.e.log.Error("agent: deleting published records from the spool", "err", err)
		} else {
			acked, pending = last, pending[:0]
		}
	}
	for {
		if m := u.deleteMode(); m != mode {
			u.logMode(m, mode)
			if m == modePuback {
				u.e.m.pubackFallbacks.Inc()
			}
			mode = m
		}
		if mode == modePuback && last > acked { // sent while waiting for a watermark
			deletePublished()
		}
		if w := u.mark.Load(); w > acked {
			n := 0
			for n < len(pending) && pending[n].id <= w {
				if pending[n].report {
					u.e.m.stored.Inc()
				}
				n++
			}
			pending = pending[n:]
			acc.covered(u, w)
			if err := u.e.sp.Ack(w); err != nil {
				u.e.log.Error("agent: deleting stored records from the spool", "err", err)
			} else {
				acked = w
				u.marked.Store(time.Now().UnixNano())
			}
		}
		// Without a watermark there is nothing to wait for before sending again.
		if u.resend.Swap(false) {
			last, pending = 0, pending[:0]
			u.marked.Store(time.Now().UnixNano())
		}
		if !u.connected() && !u.onStandby() {
			if !u.waitWake(ctx, time.Second) {
				return
			}
			continue
		}
		// The controller asked for records it is missing (a hole below newer ones it holds):
		// sent now; the same hole at most once per holeRequestEvery (a controller repeats its
		// own while the hole stays open), the next one up at once.
		if h := u.hole.Swap(nil); h != nil && mode != modePuback && (h.From != servedFrom || time.Since(served) >= holeRequestEvery) {
			served, servedFrom = time.Now(), h.From
			if err := u.sendRequested(ctx, *h, pending, &acc); err != nil {
				u.e.log.Warn("agent: sending records the controller asked for; retrying at its next request", "err", err)
			}
			continue
		}
		// In modeWaiting too: a controller that took over a site and waits for a hole its
		// previous owner stored (unheard by this agent) publishes no watermark at all; without
		// the probe the agent waited out the grace and fell back to PUBACK, and lost what the
		// broker acknowledged and dropped meanwhile (TestScaleOut, around a NATS node's kill).
		if mode != modePuback && probe.due(u, pending, acked) {
			if err := u.sendHole(ctx, &probe, pending, &acc); err != nil {
				u.e.log.Warn("agent: sending uncovered records again; retrying", "err", err)
				if !u.waitWake(ctx, retry) {
					return
				}
			}
			continue
		}
		base := u.e.sp.Stats().Acked
		ahead := 0
		if last > base {
			ahead = int(last - base) // an upper bound: IDs skipped by corruption or the cap count too
		}
		if ahead >= maxUnconfirmed {
			if !u.waitWake(ctx, time.Second) { // until the watermark moves
				return
			}
			continue
		}
		recs, err := u.e.sp.Peek(min(ahead+publishBatch, maxUnconfirmed)) // never past maxUnconfirmed ahead
		if err != nil {
			u.e.log.Error("agent: reading the spool", "err", err)
			if !u.waitWake(ctx, retry) {
				return
			}
			continue
		}
		if len(recs) > 0 {
			u.oldest.Store(recs[0].ID)
		}
		i := 0
		for i < len(recs) && recs[i].ID <= last {
			i++
		}
		recs = recs[i:]
		if len(recs) == 0 {
			idle := 5 * time.Second
			if len(pending) > 0 { // look at the watermark's progress often enough for holeAfter
				idle = min(idle, time.Duration(u.holeAfter.Load())/2)
			}
			if !u.waitWake(ctx, idle) {
				return
			}
			continue
		}
		qos, conn := u.reportQoS(), u.connAt.Load()
		if err := u.publish(ctx, recs, qos); err != nil {
			u.e.log.Warn("agent: publishing the spool; retrying", "err", err, "in", retry)
			if !u.waitWake(ctx, retry) {
				return
			}
			retry = min(2*retry, 30*time.Second)
			continue
		}
		now := time.Now().UnixNano()
		for _, r := range recs {
			kind, _, _ := splitMessage(r.Payload)
			pending = append(pending, sent{id: r.ID, report: kind == telemetry.KindTelemetry, at: now})
		}
		last = recs[len(recs)-1].ID
		if qos == 0 {
			acc.add(u, recs, now, conn)
		}
		retry = time.Second
		// An older controller: the broker's PUBACK is all there is (unless a watermark came
		// while this batch was out). Never after a QoS 0 batch (no PUBACK; reportQoS).
		if mode == modePuback && qos == 1 && !u.speaks.Load() {
			deletePublished()
		}
	}
}

// prober decides when to send uncovered records again: the watermark (contiguous) has not
// moved for holeAfter, and the oldest uncovered record was PUBACKed longer ago than that, so
// the controller has had the time to store it and publish a watermark, and did not: the
// broker lost it. A controller that is merely slow moves its watermark, which resets the
// wait, so it causes no resend; and a probe sends at most n records, n starting at
// publishBatch and doubling (up to maxUnconfirmed) only while each probe was wholly covered
// and the watermark still stalled after it (a long run lost), so one probe per holeAfter. A
// probe of which nothing was covered (a controller that stores nothing at all: its database
// is failing) doubles the wait before the next, up to 16 holeAfter (4 minutes), so a fleet
// does not resend to a controller that cannot store.
type prober struct {
	n        int    // records the next probe sends
	from     uint64 // the first record of the previous probe; 0: none yet
	upTo     uint64 // the last record of the previous probe
	slowdown int64  // the wait is holeAfter times this
}

func (p *prober) due(u *uplink, pending []sent, acked uint64) bool {
	after := time.Duration(u.holeAfter.Load())
	if len(pending) == 0 || time.Since(time.Unix(0, pending[0].at)) < after {
		return false
	}
	if p.from != 0 && acked < p.from && pending[0].id <= p.from { // the last probe changed nothing
		next := min(2*max(p.slowdown, 1), 16)
		if time.Since(time.Unix(0, u.marked.Load())) < after*time.Duration(next) {
			return false
		}
		p.slowdown = next
	} else if time.Since(time.Unix(0, u.marked.Load())) < after {
		return false
	} else {
		p.slowdown = 1
	}
	switch {
	case p.n == 0:
		p.n = publishBatch
	case p.from != 0 && acked >= p.upTo: // the last probe was stored, and more is missing
		p.n = min(2*p.n, maxUnconfirmed)
	default:
		p.n = publishBatch
	}
	return true
}

// holeRequestEvery: the agent serves the controller's requests for one hole at most this often
// (the controller asks again after 2, 4, ... grace periods while the hole stays open, or one
// grace (1 s) after its last request when newer reports came: half of it here, so that such a
// request is never refused for arriving a few milliseconds early).
const holeRequestEvery = 500 * time.Millisecond

// sendRequested sends again the records of h that were published and are not covered
// (pending, so at most maxUnconfirmed), in order, in batches: the controller holds newer
// ones and is missing these. The stall probe's wait starts again.
func (u *uplink) sendRequested(ctx context.Context, h telemetry.SeqRange, pending []sent, acc *accepted) error {
	n := 0 // pending is in ID order, and the spool's oldest records are pending's
	for n < len(pending) && pending[n].id <= h.To {
		n++
	}
	if n == 0 || pending[n-1].id < h.From {
		return nil // nothing of it published and uncovered: sent anyway, or covered already
	}
	u.marked.Store(time.Now().UnixNano())
	recs, err := u.e.sp.Peek(n)
	if err != nil {
		return err
	}
	i := 0
	for i < len(recs) && recs[i].ID < h.From {
		i++
	}
	recs = recs[i:]
	if len(recs) == 0 {
		return nil
	}
	if err := u.resendRecords(ctx, recs, acc); err != nil {
		return err
	}
	u.e.m.holeRequests.Inc()
	u.e.log.Info("agent: the controller is missing records below newer ones: sent them again",
		"watermark", u.mark.Load(), "from", recs[0].ID, "to", recs[len(recs)-1].ID, "records", len(recs))
	return nil
}

// resendRecords publishes records sent before again, in order, in batches, and counts them.
func (u *uplink) resendRecords(ctx context.Context, recs []spool.Record, acc *accepted) error {
	qos, conn := u.reportQoS(), u.connAt.Load()
	for i := 0; i < len(recs); i += publishBatch {
		batch := recs[i:min(i+publishBatch, len(recs))]
		if err := u.publish(ctx, batch, qos); err != nil {
			return err
		}
		if qos == 0 {
			acc.add(u, batch, time.Now().UnixNano(), conn)
		}
	}
	u.e.m.resent.Add(float64(len(recs)))
	return nil
}

// sendHole sends again the oldest uncovered records, at most p.n and at most those published
// (pending), in order, in batches; the watermark's wait starts again.
func (u *uplink) sendHole(ctx context.Context, p *prober, pending []sent, acc *accepted) error {
	u.marked.Store(time.Now().UnixNano())
	recs, err := u.e.sp.Peek(min(p.n, len(pending)))
	if err != nil || len(recs) == 0 {
		return err
	}
	if err := u.resendRecords(ctx, recs, acc); err != nil {
		return err
	}
	p.from, p.upTo = recs[0].ID, recs[len(recs)-1].ID
	u.e.log.Warn("agent: the controller's watermark is stuck below records the broker acknowledged: sending the oldest again (lost between broker and controller)",
		"watermark", u.mark.Load(), "from", recs[0].ID, "to", p.upTo, "records", len(recs))
	return nil
}

// logMode says which deletion rule is in force, when it changes.
func (u *uplink) logMode(mode, was string) {
	log := u.e.log
	switch mode {
	case modeWatermark:
		log.Info("agent: the controller publishes the stored watermark: spooled records are deleted only once it covers them (remembered in the spool; no fallback to PUBACK)", "was", was)
	case modePuback:
		log.Warn("agent: no stored watermark from the controller within the grace after connecting (an older controller): deleting spooled records at the broker's PUBACK until one is seen",
			"grace", time.Duration(u.grace.Load()))
	case modeWaiting:
		log.Info("agent: waiting for the controller's stored watermark: spooled records are kept until it covers them or the grace ends without one",
			"grace", time.Duration(u.grace.Load()))
	}
}

// publish sends recs at qos and waits for the broker's PUBACKs (at QoS 0, for paho to have
// written them).
func (u *uplink) publish(ctx context.Context, recs []spool.Record, qos byte) error {
	toks := make([]paho.Token, 0, len(recs))
	c := u.client()
	if c != u.c {
		qos = 0 // the standby is used only at QoS 0 (standby.usable)
	}
	for _, r := range recs {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		kind, payload, ok := splitMessage(r.Payload)
		if !ok {
			continue // not ours: skip it (the watermark moves past it)
		}
		// copy: the spool reuses its buffer on the next Peek, paho writes asynchronously
		toks = append(toks, c.Publish(telemetry.Topic(u.creds.Site, kind), qos, false, append([]byte(nil), payload...)))
	}
	deadline := time.NewTimer(publishTimeout)
	defer deadline.Stop()
	for _, t := range toks {
		select {
		case <-t.Done():
			if err := t.Error(); err != nil {
				return err
			}
		case <-deadline.C:
			if qos == 0 {
				return errors.New("the connection did not take the records in time")
			}
			return errors.New("no PUBACK from the broker in time")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	u.e.m.published.Add(float64(len(toks)))
	if c != u.c {
		u.e.m.standbyPublished.Add(float64(len(toks)))
	}
	if qos == 1 && u.e.o.OnAccepted != nil {
		now := time.Now()
		for _, r := range recs {
			if kind, _, _ := splitMessage(r.Payload); kind == telemetry.KindTelemetry {
				u.e.o.OnAccepted(now)
			}
		}
	}
	if c := u.connAt.Load(); u.ackedOn.Swap(c) != c { // the phases of a reconnect, for diagnosis
		if qos == 0 {
			u.e.log.Debug("agent: first report sent on this connection (QoS 0)", "after", time.Since(time.Unix(0, c)))
		} else {
			u.e.log.Debug("agent: first PUBACK on this connection", "after", time.Since(time.Unix(0, c)))
		}
	}
	return nil
}

func (u *uplink) waitWake(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-u.wakeC:
	case <-t.C:
	}
	return true
}

// close says goodbye: an offline status (a clean DISCONNECT suppresses the last will).
func (u *uplink) close() {
	if u.connected() {
		off, _ := json.Marshal(telemetry.Status{V: telemetry.SchemaVersion, Device: u.creds.Device, State: "offline", Time: time.Now().UTC()})
		qos, retained := u.statusQoS()
		u.c.Publish(telemetry.Topic(u.creds.Site, telemetry.KindStatus), qos, retained, off).WaitTimeout(2 * time.Second)
	}
	u.c.Disconnect(500)
}
