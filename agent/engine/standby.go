package engine

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/edgewan/edgewan/agent/backoff"
	"github.com/edgewan/edgewan/agent/config"
	"github.com/edgewan/edgewan/telemetry"
)

// standby is the warm second connection on NATS: connected to another node than the primary,
// subscribed at QoS 0 to the controller's watermark, publishing nothing while the primary is up.
//
// Why: every MQTT CONNECT to NATS 2.9 reads and writes the client's session record in the
// replicated $MQTT_sess stream (clean session or not). When a node's kill -9 takes that stream's
// Raft leader with it, every CONNECT waits for the election (4-9 s) plus the 4 s MQTT JetStream
// timeout, so the dead node's agents could report again only after 9-17 s. A QoS 0 PUBLISH on an
// open connection touches no MQTT stream: when the primary drops, the agent sends its spool on
// the standby at once (active) while connectLoop reconnects the primary, which then takes over
// again; the standby is then re-established on another node than the primary's, in the
// background. docs/scale-out.md, "The warm standby connection", has the decision and the cost.
//
// The standby has its own client ID (the device's ID + standbySuffix: '.' is not allowed in a
// device ID, so it cannot be another device's), a clean session, and no will: the agent's
// presence stays the primary's (a standby that drops alone says nothing to the controllers).
type standby struct {
	u  *uplink
	c  paho.Client
	up atomic.Bool // connected and subscribed
	// active: the primary is down and the spool goes out here (sendLoop, client).
	active atomic.Bool
	node   atomic.Int32 // index in urls of the standby's node; -1 when down
	id     atomic.Int64 // UnixNano of its connection: its connAt while active
	// heard: a watermark came on the current connection's subscription; subAt: when it was
	// (last) subscribed. See resubscribe.
	heard atomic.Bool
	subAt time.Time // loop's goroutine only
	resub int       // subscriptions sent again on this connection
	lost  chan struct{}
	kick  chan struct{} // the primary connected or dropped: look again at once
	move  time.Duration // standbyMove; shorter in tests

	urls   []*url.URL
	spread int
	mu     sync.Mutex
	next   int // dials of the running Connect
	dialed int
}

// standbySuffix makes the standby's client ID.
const standbySuffix = ".standby"

// standbyDelay bounds the random wait before the standby (re)connects, after the primary is up:
// after a node's death a third of the fleet's standbys reconnect, and they must not add to the
// primaries' reconnect storm (which takes the first half second).
const standbyDelay = 3 * time.Second

// standbyMove: how long the primary may share the standby's node before the standby moves.
const standbyMove = 15 * time.Second

// newStandby returns the standby of u, or nil where it is not used: off, not on NATS, or one
// node only (then there is no other node to stand by on).
func newStandby(u *uplink, opts *paho.ClientOptions, mode string) *standby {
	if mode == config.StandbyOff || !u.nats || u.servers == nil || len(u.servers.urls) < 2 {
		return nil
	}
	s := &standby{u: u, lost: make(chan struct{}, 1), kick: make(chan struct{}, 1), move: standbyMove, urls: u.servers.urls, spread: u.servers.spread}
	s.node.Store(-1)
	so := paho.NewClientOptions().SetClientID(u.creds.Device + standbySuffix).
		SetUsername(u.creds.Username).SetPassword(u.creds.Password).SetTLSConfig(opts.TLSConfig).
		SetCleanSession(true).SetAutoReconnect(false).SetConnectRetry(false).
		SetConnectTimeout(opts.ConnectTimeout).SetKeepAlive(time.Duration(opts.KeepAlive) * time.Second).SetPingTimeout(opts.PingTimeout).
		SetWriteTimeout(opts.WriteTimeout).SetOrderMatters(true)
	for _, b := range s.urls {
		so.AddBroker(b.String())
	}
	so.SetCustomOpenConnectionFn(s.dial)
	so.SetConnectionLostHandler(func(_ paho.Client, err error) {
		s.up.Store(false)
		s.node.Store(-1)
		if s.active.Swap(false) {
			u.e.log.Warn("agent: the standby broker connection was lost too", "err", err)
		} else {
			u.e.log.Info("agent: standby broker connection lost; connecting it again", "err", err)
		}
		u.e.m.standby.Set(0)
		select {
		case s.lost <- struct{}{}:
		default:
		}
	})
	s.c = paho.NewClient(so)
	return s
}

// order is the nodes the standby dials in turn: every node but the primary's, rotated by the
// device's hash (shifted by one from the primary's rotation, so that the standbys of one node's
// agents spread over the others).
func (s *standby) order() []int {
	primary := s.u.servers.current()
	n := len(s.urls)
	out := make([]int, 0, n)
	for i := range n {
		if j := (s.spread + 1 + i) % n; j != primary {
			out = append(out, j)
		}
	}
	return out
}

// dial opens the network connection of the standby's next attempt (see servers.dial).
func (s *standby) dial(_ *url.URL, o paho.ClientOptions) (net.Conn, error) {
	s.mu.Lock()
	ord := s.order()
	i := ord[s.next%len(ord)]
	s.next++
	s.dialed = i
	s.mu.Unlock()
	return dialNode(s.urls[i], o)
}

func (s *standby) wake() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// usable reports whether the primary's loss can move the spool to the standby: it is up, and
// the spool goes at QoS 0 (the controller publishes the watermark): before that, records go at
// QoS 1 and the PUBACK fallback may apply, which the standby never takes part in.
func (s *standby) usable() bool { return s != nil && s.up.Load() && s.u.reportQoS() == 0 }

// loop keeps the standby connected to a node other than the primary's while the primary is up
// and the spool goes at QoS 0, until ctx ends.
func (s *standby) loop(ctx context.Context) {
	u := s.u
	b := backoff.Reconnect()
	defer func() {
		if s.c.IsConnected() {
			s.c.Disconnect(100)
		}
	}()
	sleep := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			return true
		}
	}
	for {
		// Only with a primary: a standby while nothing else is connected would take the
		// primary's role without its will, and it adds nothing before the first watermark.
		for !u.connected() || u.reportQoS() != 0 {
			select {
			case <-ctx.Done():
				return
			case <-s.kick:
			case <-time.After(time.Second):
			}
		}
		if !sleep(rand.N(standbyDelay)) {
			return
		}
		if !u.connected() {
			continue
		}
		select {
		case <-s.lost:
		default:
		}
		s.mu.Lock()
		s.next = 0
		s.mu.Unlock()
		if err := s.connect(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			u.e.log.Debug("agent: connecting the standby broker connection", "err", err)
			if !sleep(b.Next()) {
				return
			}
			continue
		}
		b.Reset()
		// Hold it until it drops, or until the primary has been on its node for standbyMove
		// (then it would stand by for nothing: move it). Not at once: right after a failover
		// the records it sent are not covered yet, and the watermark comes on it too.
		var shared time.Time
		for held := true; held; {
			select {
			case <-ctx.Done():
				return
			case <-s.lost:
				held = false
			case <-s.kick:
			case <-time.After(min(5*time.Second, s.move)):
			}
			if held {
				s.resubscribe()
			}
			if !u.connected() || int(s.node.Load()) != u.servers.current() {
				shared = time.Time{}
			} else if shared.IsZero() {
				shared = time.Now()
			}
			if held && !shared.IsZero() && time.Since(shared) >= s.move {
				u.e.log.Info("agent: the primary broker connection is on the standby's node; moving the standby")
				s.up.Store(false)
				s.node.Store(-1)
				u.e.m.standby.Set(0)
				s.c.Disconnect(100)
				held = false
			}
		}
	}
}

// connect connects the standby and subscribes it to the watermark at QoS 0.
func (s *standby) connect(ctx context.Context) error {
	tok := s.c.Connect()
	select {
	case <-tok.Done():
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := tok.Error(); err != nil {
		return err
	}
	s.mu.Lock()
	node := s.dialed
	s.mu.Unlock()
	s.id.Store(time.Now().UnixNano())
	s.heard.Store(false)
	s.resub = 0
	if err := s.subscribe(); err != nil {
		s.c.Disconnect(100)
		return err
	}
	s.node.Store(int32(node))
	s.up.Store(true)
	s.u.e.m.standby.Set(1)
	s.u.e.log.Debug("agent: standby broker connection up", "url", s.urls[node].String())
	return nil
}

// activate moves the spool to the standby, the primary being lost; false when it cannot.
func (s *standby) activate() bool {
	if !s.usable() {
		return false
	}
	u := s.u
	u.connAt.Store(s.id.Load()) // the connection the spool goes out on
	u.resend.Store(true)        // what the lost connection carried may be lost with it
	s.active.Store(true)
	u.e.m.standbyActivations.Inc()
	u.e.log.Info("agent: broker connection lost; sending on the standby connection while reconnecting", "url", s.urls[max(s.node.Load(), 0)].String())
	u.publishOnlineOn(s.c)
	return true
}

// subscribe subscribes the current connection to the site's watermark at QoS 0 and waits for
// the SUBACK.
func (s *standby) subscribe() error {
	id := s.id.Load()
	topic := telemetry.Topic(s.u.creds.Site, telemetry.KindStored)
	st := s.c.Subscribe(topic, 0, func(_ paho.Client, m paho.Message) {
		s.heard.Store(true)
		s.u.onStored(m.Payload(), id)
	})
	s.subAt = time.Now()
	err := errors.New("no SUBACK in time")
	if st.WaitTimeout(10 * time.Second) {
		err = st.Error()
		if t, ok := st.(*paho.SubscribeToken); ok && err == nil && t.Result()[topic] == 0x80 {
			err = errors.New("the broker refused the subscription to " + topic)
		}
	}
	return err
}

// standbyResubscribes bounds the subscriptions the standby sends again on one connection.
const standbyResubscribes = 3

// resubscribe subscribes the standby again when its subscription has brought no watermark
// for resubscribeAfter, as the primary does (uplink.subscribe): nats-server 2.9 now and then
// confirms a subscription it never serves, and a standby that hears no watermark cannot
// confirm what it sends while the primary is down (the spool keeps it until the primary is
// back). The retained watermark comes with each subscription (the standby connects only
// after the primary heard one), so silence means a subscription not served, or no retained
// copy; at most standbyResubscribes times per connection, for the latter.
func (s *standby) resubscribe() {
	if s.heard.Load() || !s.up.Load() || s.resub >= standbyResubscribes || time.Since(s.subAt) < resubscribeAfter {
		return
	}
	s.resub++
	s.u.e.log.Warn("agent: no watermark on the standby connection since subscribing; subscribing again", "after", time.Since(s.subAt).Round(time.Second))
	if err := s.subscribe(); err != nil {
		s.u.e.log.Info("agent: subscribing the standby connection again", "err", err)
	}
}
