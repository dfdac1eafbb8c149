package mqtt

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/edgewan/edgewan/telemetry"
)

// Defaults of NATSOptions.
const (
	DefaultNATSStream   = "EDGEWAN_IN"
	DefaultNATSReplicas = 3
	DefaultNATSInFlight = 64
	DefaultNATSAckDelay = 200 * time.Millisecond
)

// NATSOptions configure a NATSBus.
type NATSOptions struct {
	URLs     []string // nats://host:port of the cluster's nodes
	MQTTURLs []string // the nodes' MQTT listeners (tcp:// on loopback, else mqtts://), for publishing
	User     string
	Password string
	// JWT and Seed, if set, are this controller's user in NATS operator mode (natsauth.Issuer's
	// Controller) instead of User/Password: the NATS connection signs the server's nonce with
	// Seed; the MQTT publisher logs in with MQTTJWT, a bearer user, as its password.
	JWT, Seed, MQTTJWT string
	ClientID           string // the MQTT client ID of this controller's publisher; unique per controller
	// Partitions is the number of partitions of the server's subject mapping
	// (edgewan.in.{partition}.{site}.{kind}, see scripts/nats.sh); 0 means 16.
	Partitions int
	Stream     string // JetStream stream of the agents' messages; "" means DefaultNATSStream
	Replicas   int    // of the stream; 0 means DefaultNATSReplicas
	// MaxAge is how long the stream keeps messages nobody consumed (all controllers down);
	// 0 means 24h.
	MaxAge time.Duration
	// AckWait is how long a delivered message waits for its ack before it is delivered again:
	// to the partition's next owner after a silent death, so it bounds the takeover; 0 means 5s.
	AckWait time.Duration
	// InFlight is how many messages of a partition the server hands out before their acks
	// (the consumer's MaxAckPending); 0 means DefaultNATSInFlight. 1 costs a round trip and a
	// wake-up per message.
	InFlight int
	// AckBatch and AckDelay batch the acknowledgements of a partition: its consumer acks
	// cumulatively (AckAll), so one ack of the last message handled covers every earlier one.
	// It goes out after AckBatch messages handled or AckDelay after the first one not yet
	// acknowledged, whichever comes first, and always when the partition stops. 0 means
	// InFlight/2 (at least 1) and DefaultNATSAckDelay. AckBatch 1 acks every message.
	AckBatch int
	AckDelay time.Duration
	// ReadCoalesce is how long the NATS connection lets messages gather before it reads
	// again (coalescingConn): one read and one wake-up for all of them, at the cost of up to
	// that much latency per message. 0 means DefaultNATSReadCoalesce; negative turns it off.
	ReadCoalesce time.Duration
	// Owns, if set, is asked before each message: a partition whose lease is no longer valid
	// gets its message back (NAK) instead of a handler call, and is not pulled from again
	// until it is owned again (then through a new consumer: see StartPartition).
	// controller/cluster's Member.Epoch fits.
	Owns   func(partition int) bool
	Logger *slog.Logger
}

// NATSBus is the Bus of the scaled-out mode (docs/scale-out.md): agents speak MQTT to any node
// of a NATS cluster; the server maps their messages to edgewan.in.{partition}.{site}.{kind}
// into a replicated JetStream stream, and this controller consumes only the partitions it
// owns (StartPartition/StopPartition, driven by controller/cluster), each through the durable
// consumer of that partition, so a partition's next owner continues where the last one
// acknowledged. A partition's messages reach the handlers one at a time, in order, and are
// acknowledged after the handler returns, a run of them with one cumulative ack (AckAll). Publish goes through the cluster's MQTT listeners
// (paho, all nodes), so retained policies and decisions are MQTT retained messages that any
// node serves to an agent.
type NATSBus struct {
	o   NATSOptions
	log *slog.Logger
	nc  *nats.Conn
	js  jetstream.JetStream
	pub paho.Client
	d   *dispatcher // only its run: a partition's messages are handled on its own goroutine

	mu     sync.Mutex
	routes map[string]Handler // by kind
	parts  map[int]*natsPart
	closed bool
}

type natsPart struct {
	ctx     context.Context // ends at stop: cuts short the JetStream calls of the partition's goroutine
	cancel  context.CancelFunc
	mu      sync.Mutex
	it      jetstream.MessagesContext // the current iterator (nil until bound); replaced when it fails
	name    string                    // the consumer bound (p{N}-g{generation}); "" until bound
	stopped bool
	done    chan struct{}

	// The acknowledgement not sent yet (consume's, and the timer's that sends it).
	ackMu    sync.Mutex
	unacked  jetstream.Msg // the last message handled and not acknowledged; nil if none
	nUnacked int
	timerSet bool
	timer    *time.Timer
}

// stop ends the partition's consumption and waits for its goroutine: at once, but for a
// handler call in progress (a JetStream call in flight is cancelled).
func (np *natsPart) stop() {
	np.mu.Lock()
	np.stopped = true
	it := np.it
	np.mu.Unlock()
	np.cancel()
	if it != nil {
		it.Stop()
	}
	<-np.done
}

// bindTimeout bounds one attempt at binding a partition's consumer. After a NATS node
// restarts, JetStream may take tens of seconds to answer for some consumers (their replica
// on the node is catching up): an attempt gives up and is retried, on the partition's own
// goroutine.
const bindTimeout = 5 * time.Second

var _ Bus = (*NATSBus)(nil)

// NewNATSBus connects to the cluster, creates (or updates) the stream and connects the
// publisher. It consumes nothing until StartPartition.
func NewNATSBus(ctx context.Context, o NATSOptions) (*NATSBus, error) {
	if len(o.URLs) == 0 || len(o.MQTTURLs) == 0 {
		return nil, errors.New("mqtt.NewNATSBus: URLs and MQTTURLs are required")
	}
	if o.ClientID == "" {
		return nil, errors.New("mqtt.NewNATSBus: ClientID is required (unique per controller)")
	}
	if o.Partitions <= 0 {
		o.Partitions = 16
	}
	if o.Stream == "" {
		o.Stream = DefaultNATSStream
	}
	if o.Replicas <= 0 {
		o.Replicas = DefaultNATSReplicas
	}
	if o.MaxAge <= 0 {
		o.MaxAge = 24 * time.Hour
	}
	if o.AckWait <= 0 {
		o.AckWait = 5 * time.Second
	}
	if o.InFlight <= 0 {
		o.InFlight = DefaultNATSInFlight
	}
	if o.AckBatch <= 0 {
		o.AckBatch = max(o.InFlight/2, 1)
	}
	if o.AckDelay <= 0 {
		o.AckDelay = DefaultNATSAckDelay
	}
	if o.ReadCoalesce == 0 {
		o.ReadCoalesce = DefaultNATSReadCoalesce
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	b := &NATSBus{o: o, log: o.Logger.With("bus", "nats"), routes: map[string]Handler{}, parts: map[int]*natsPart{}}
	b.d = &dispatcher{log: b.log}
	auth, mqttUser, mqttPassword := nats.UserInfo(o.User, o.Password), o.User, o.Password
	if o.JWT != "" {
		if o.Seed == "" || o.MQTTJWT == "" {
			return nil, errors.New("mqtt.NewNATSBus: JWT needs Seed and MQTTJWT")
		}
		auth, mqttUser, mqttPassword = nats.UserJWTAndSeed(o.JWT, o.Seed), o.ClientID, o.MQTTJWT
	}
	// The nodes in this controller's own order (NodeOrder), the same for both connections.
	urls, mqttURLs := NodeOrder(o.URLs, o.ClientID), NodeOrder(o.MQTTURLs, o.ClientID)
	dial := nats.Option(func(*nats.Options) error { return nil })
	if o.ReadCoalesce > 0 {
		dial = nats.SetCustomDialer(&coalescingDialer{Dialer: net.Dialer{Timeout: nats.DefaultTimeout}, d: o.ReadCoalesce})
	}
	nc, err := nats.Connect(strings.Join(urls, ","), auth, dial, nats.DontRandomize(),
		nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond), nats.Name(o.ClientID),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) { b.log.Warn("NATS disconnected", "err", err) }),
		nats.ReconnectHandler(func(c *nats.Conn) { b.log.Info("NATS reconnected", "url", c.ConnectedUrlRedacted()) }))
	if err != nil {
		return nil, fmt.Errorf("mqtt.NewNATSBus: connecting to %v: %w", o.URLs, err)
	}
	b.nc = nc
	if b.js, err = jetstream.New(nc); err != nil {
		nc.Close()
		return nil, fmt.Errorf("mqtt.NewNATSBus: %w", err)
	}
	// The JetStream API answers only with a meta leader: a node that just restarted, or one
	// lost, leaves the cluster without one for seconds (TestClusterProcesses saw a controller
	// started then exit on the first timeout). Retried for up to a minute.
	retryUntil := time.Now().Add(time.Minute)
	for {
		_, err = b.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
			Name: o.Stream, Subjects: []string{"edgewan.in.>"}, Storage: jetstream.FileStorage,
			Replicas: o.Replicas, MaxAge: o.MaxAge, Discard: jetstream.DiscardOld,
			Description: "agents' messages, partitioned by site (edgewan.in.{partition}.{site}.{kind})",
		})
		if err == nil || ctx.Err() != nil || time.Now().After(retryUntil) {
			break
		}
		b.log.Warn("NATS: creating the stream; retrying", "stream", o.Stream, "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("mqtt.NewNATSBus: creating stream %s: %w", o.Stream, err)
	}
	po := paho.NewClientOptions().SetClientID(o.ClientID).SetUsername(mqttUser).SetPassword(mqttPassword).
		SetCleanSession(true).SetAutoReconnect(true).SetConnectRetry(true).
		SetMaxReconnectInterval(2 * time.Second).SetConnectTimeout(5 * time.Second).SetWriteTimeout(10 * time.Second)
	for _, u := range mqttURLs {
		po.AddBroker(u)
	}
	b.pub = paho.NewClient(po)
	tok := b.pub.Connect()
	select {
	case <-tok.Done():
		if err := tok.Error(); err != nil {
			nc.Close()
			return nil, fmt.Errorf("mqtt.NewNATSBus: connecting the publisher to %v: %w", o.MQTTURLs, err)
		}
	case <-ctx.Done():
		b.pub.Disconnect(0)
		nc.Close()
		return nil, fmt.Errorf("mqtt.NewNATSBus: connecting the publisher: %w", ctx.Err())
	}
	return b, nil
}

// Subscribe routes one kind of agent message (filter edgewan/v1/sites/+/{kind}) to handler.
// Other filters are refused: the bus consumes the agents' partitioned stream only.
func (b *NATSBus) Subscribe(filter string, handler Handler) error {
	rest, ok := strings.CutPrefix(filter, telemetry.TopicRoot+"+/")
	if !ok || rest == "" || strings.ContainsAny(rest, "/+#") {
		return fmt.Errorf("mqtt.NATSBus.Subscribe %q: only %s+/{kind} filters are supported", filter, telemetry.TopicRoot)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return ErrClosed
	}
	b.routes[rest] = handler
	return nil
}

// canPublish refuses a payload over telemetry.MaxPayload and a closed bus, for op.
func (b *NATSBus) canPublish(op, topic string, payload []byte) error {
	if len(payload) > telemetry.MaxPayload {
		return fmt.Errorf("mqtt.NATSBus.%s %s: payload of %d bytes is over %d", op, topic, len(payload), telemetry.MaxPayload)
	}
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if closed {
		return ErrClosed
	}
	return nil
}

// Publish sends payload to agents over MQTT at QoS 1, retained or not.
func (b *NATSBus) Publish(topic string, payload []byte, retain bool) error {
	if err := b.canPublish("Publish", topic, payload); err != nil {
		return err
	}
	tok := b.pub.Publish(topic, 1, retain, payload)
	if !tok.WaitTimeout(10 * time.Second) {
		return fmt.Errorf("mqtt.NATSBus.Publish %s: no acknowledgement within 10s", topic)
	}
	if err := tok.Error(); err != nil {
		return fmt.Errorf("mqtt.NATSBus.Publish %s: %w", topic, err)
	}
	return nil
}

// PublishLive delivers payload, not retained, to the MQTT clients subscribed to topic now
// (at QoS 0), as a plain NATS publish on the controller's NATS connection: NATS's MQTT
// listener maps topic levels to subject tokens, so an agent's subscription is a NATS
// subscription on the same subject. Unlike Publish it touches no MQTT connection and no
// JetStream asset: after a node's death the MQTT publisher may wait for $MQTT_sess's election
// to reconnect and each retained publish for $MQTT_rmsgs's (4-9 s plus NATS's 4 s MQTT
// timeout), while the NATS connection is back on another node within its reconnect wait
// (250 ms; what it publishes meanwhile is buffered and sent then). It does not wait for
// delivery; no retained state: whoever needs the latest value at subscribe needs Publish too.
func (b *NATSBus) PublishLive(topic string, payload []byte) error {
	if strings.ContainsAny(topic, ".+#* ") {
		return fmt.Errorf("mqtt.NATSBus.PublishLive %q: not a plain topic", topic)
	}
	if err := b.canPublish("PublishLive", topic, payload); err != nil {
		return err
	}
	if err := b.nc.Publish(strings.ReplaceAll(topic, "/", "."), payload); err != nil {
		return fmt.Errorf("mqtt.NATSBus.PublishLive %s: %w", topic, err)
	}
	return nil
}

// StartPartition starts consuming partition p, until ctx ends or StopPartition. It does not
// wait for JetStream: the consumer is bound on the partition's own goroutine, each attempt
// bounded by bindTimeout and retried until it succeeds, so a JetStream slow to answer for one
// partition (a node just restarted) never holds up the caller, which takes and renews every
// partition's lease on one goroutine (controller/cluster). Starting a partition already
// consumed does nothing; the error is for a bad partition or a closed bus.
//
// Each start (a takeover) consumes through a new durable consumer, p{N}-g{generation}, that
// starts after the highest ack floor of the partition's earlier consumers, which it deletes
// (takeOver). The consumers acknowledge cumulatively (AckAll), and an ack of a later message
// on a consumer that a previous owner still has messages out on would cover those too, unread;
// a consumer of its own, starting where the acknowledgements end, gives the new owner every
// message not acknowledged, in order and at once (not after AckWait), and leaves nothing to a
// previous owner that is still pulling. The released version's consumers (p{N}, AckExplicit)
// are taken over the same way: their ack floor is where the new one starts; p{N} itself is
// kept for a while (keepReleased), for a controller of the released version during a rolling
// upgrade.
func (b *NATSBus) StartPartition(ctx context.Context, p int) error {
	if p < 0 || p >= b.o.Partitions {
		return fmt.Errorf("mqtt.NATSBus.StartPartition: partition %d of %d", p, b.o.Partitions)
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return ErrClosed
	}
	if b.parts[p] != nil {
		b.mu.Unlock()
		return nil
	}
	pctx, cancel := context.WithCancel(ctx)
	np := &natsPart{ctx: pctx, cancel: cancel, done: make(chan struct{})}
	np.timer = time.AfterFunc(time.Hour, func() { b.flushAck(p, np, false) })
	np.timer.Stop()
	b.parts[p] = np
	b.mu.Unlock()
	go b.consume(p, np)
	return nil
}

// bind binds p's consumer, each attempt bounded by timeout, retrying with a growing back-off
// (up to 2 s) until it succeeds or the partition stops (false). With fresh (a start, or the
// partition owned again), or when the bound consumer is gone, it takes the partition over
// through a new consumer (takeOver); else it pulls again from the one bound.
//
// The Messages iterator, not Consume or Fetch: each of the three hands every message from the
// connection's reader to another goroutine (Fetch through two), so none saves the wake-up per
// delivery. Consume (the handler on the subscription's goroutine, woken through a sync.Cond)
// spares the iterator's select and its heartbeat timer per Next: 5 allocations of 11 per
// message, but no CPU that paired runs could see (docs/benchmarks.md, "the 1 -> 3 rise"), so
// the simpler loop stayed.
func (b *NATSBus) bind(p int, np *natsPart, timeout time.Duration, fresh bool) bool {
	backoff := 250 * time.Millisecond
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(np.ctx, timeout)
		np.mu.Lock()
		name := np.name
		np.mu.Unlock()
		var c jetstream.Consumer
		var err error
		if !fresh && name != "" {
			if c, err = b.js.Consumer(ctx, b.o.Stream, name); errors.Is(err, jetstream.ErrConsumerNotFound) {
				b.log.Warn("NATS partition consumer gone; taking the partition over again", "partition", p, "consumer", name)
				fresh = true
			}
		}
		if fresh || name == "" {
			c, err = b.takeOver(ctx, p)
		}
		var it jetstream.MessagesContext
		if err == nil {
			it, err = c.Messages(jetstream.PullMaxMessages(256), jetstream.PullExpiry(4*time.Second), jetstream.PullHeartbeat(500*time.Millisecond))
		}
		cancel()
		if err == nil {
			fresh = false
			np.mu.Lock()
			if np.stopped {
				np.mu.Unlock()
				it.Stop()
				return false
			}
			np.it, np.name = it, c.CachedInfo().Name
			np.mu.Unlock()
			if attempt > 1 {
				b.log.Info("NATS partition consumer bound", "partition", p, "attempts", attempt)
			}
			return true
		}
		if np.ctx.Err() != nil {
			return false
		}
		b.log.Warn("NATS partition consumer: binding; retrying", "partition", p, "attempt", attempt, "err", err)
		select {
		case <-np.ctx.Done():
			return false
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// partitionConsumer is the name of generation gen of partition p's durable consumer; gen 0 is
// the released version's (AckExplicit).
func partitionConsumer(p, gen int) string {
	if gen == 0 {
		return "p" + strconv.Itoa(p)
	}
	return "p" + strconv.Itoa(p) + "-g" + strconv.Itoa(gen)
}

// consumerGeneration returns the generation of a durable consumer of partition p's, or false
// if name is not one.
func consumerGeneration(name string, p int) (int, bool) {
	prefix := "p" + strconv.Itoa(p)
	if name == prefix {
		return 0, true
	}
	rest, ok := strings.CutPrefix(name, prefix+"-g")
	if !ok {
		return 0, false
	}
	g, err := strconv.Atoi(rest)
	return g, err == nil && g > 0
}

// takeOver creates partition p's next consumer (see StartPartition): AckAll, starting after
// the highest ack floor of the partition's existing consumers (whatever one of them
// acknowledged was handled: acks are sent only for messages handled, and cover only earlier
// ones of the same consumer), then deletes those, but for the released p{N} (keepReleased).
// Repeating it after a failure at any step is safe: the consumers left over are found again
// next time, and a new one's floor is where it started. The names come from the meta leader; each floor from its consumer's
// leader, so a consumer without one fails the attempt (retried) rather than being missed
// and its partition read again from the start.
func (b *NATSBus) takeOver(ctx context.Context, p int) (jetstream.Consumer, error) {
	st, err := b.js.Stream(ctx, b.o.Stream)
	if err != nil {
		return nil, err
	}
	names := st.ConsumerNames(ctx)
	var old []string
	gen := 0
	for n := range names.Name() {
		if g, ok := consumerGeneration(n, p); ok {
			old = append(old, n)
			gen = max(gen, g)
		}
	}
	if err := names.Err(); err != nil {
		return nil, fmt.Errorf("listing consumers: %w", err)
	}
	var floor uint64
	var released jetstream.Consumer // the released version's p{N}: kept (keepReleased)
	for _, n := range old {
		c, err := st.Consumer(ctx, n)
		if errors.Is(err, jetstream.ErrConsumerNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("the ack floor of %s: %w", n, err)
		}
		floor = max(floor, c.CachedInfo().AckFloor.Stream)
		if n == partitionConsumer(p, 0) {
			released = c
		}
	}
	cfg := jetstream.ConsumerConfig{
		Durable: partitionConsumer(p, gen+1), FilterSubject: "edgewan.in." + strconv.Itoa(p) + ".>",
		// Several messages in flight: the server sends them in stream order and consume handles
		// them one after the other, so a site's reports stay in order, and acks the last one
		// handled now and then (AckAll). Only a message handed back (NAK) or one whose ack
		// came too late (AckWait) can come again after later ones; the engine then stores it
		// as a hole filled late (the contiguous watermark waits for it), it is just not
		// evaluated as current. One in flight, acked each, cost a round trip and a wake-up per
		// message; an ack per message, a write and a flusher wake-up per message: controller
		// CPU per report rose as controllers shared the load.
		AckPolicy: jetstream.AckAllPolicy, AckWait: b.o.AckWait, MaxAckPending: b.o.InFlight,
		DeliverPolicy: jetstream.DeliverAllPolicy, Replicas: b.o.Replicas,
	}
	if len(old) > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, floor+1
	}
	c, err := b.js.CreateConsumer(ctx, b.o.Stream, cfg)
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", cfg.Durable, err)
	}
	for _, n := range old {
		if c := released; c != nil && n == c.CachedInfo().Name {
			b.keepReleased(ctx, p, c)
			continue
		}
		if err := b.js.DeleteConsumer(ctx, b.o.Stream, n); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
			b.log.Warn("NATS partition: deleting a previous consumer; the next takeover does", "partition", p, "consumer", n, "err", err)
		}
	}
	b.log.Debug("NATS partition taken over", "partition", p, "consumer", cfg.Durable, "from", old, "start", cfg.OptStartSeq)
	return c, nil
}

// keepReleased leaves the released version's consumer p{N} in place, instead of deleting it
// with the other consumers taken over, and has the server remove it once nobody used it for
// MaxAge (InactiveThreshold). In a rolling upgrade a controller of the released version can
// take back a partition this version consumes (a new controller dies while older ones run, or
// a rollback): it binds p{N} with CreateOrUpdateConsumer, which, were p{N} gone, created it
// again from the start of the stream and delivered the partition's whole retention (24 h)
// again, acknowledged messages all (TestRollingUpgrade with EDGEWAN_TEST_UPGRADE_NEW_DIES
// measured about 780 per partition after 40 s). Kept, p{N} resumes after its own ack floor:
// only what this version handled since the upgrade comes again, recognised as duplicates. The
// older controller's bind resets the threshold (an update of the consumer); the next takeover
// sets it again. Its floor, still read at each takeover, is never above the others'.
func (b *NATSBus) keepReleased(ctx context.Context, p int, c jetstream.Consumer) {
	cfg := c.CachedInfo().Config
	if cfg.InactiveThreshold == b.o.MaxAge {
		return
	}
	cfg.InactiveThreshold = b.o.MaxAge
	if _, err := b.js.UpdateConsumer(ctx, b.o.Stream, cfg); err != nil {
		b.log.Warn("NATS partition: setting the released consumer to expire; the next takeover does", "partition", p, "consumer", cfg.Durable, "err", err)
	}
}

// PartitionConsumer returns partition p's current durable consumer on stream (the one of
// the highest generation, see StartPartition): for diagnostics and benchmarks.
func PartitionConsumer(ctx context.Context, stream jetstream.Stream, p int) (jetstream.Consumer, error) {
	names := stream.ConsumerNames(ctx)
	best, found := 0, false
	for n := range names.Name() {
		if g, ok := consumerGeneration(n, p); ok && (!found || g > best) {
			best, found = g, true
		}
	}
	if err := names.Err(); err != nil {
		return nil, err
	}
	if !found {
		return nil, jetstream.ErrConsumerNotFound
	}
	return stream.Consumer(ctx, partitionConsumer(p, best))
}

// StopPartition stops consuming p and returns once its handler is done and the last message
// handled is acknowledged: the rest goes to the partition's next consumer.
func (b *NATSBus) StopPartition(p int) {
	b.mu.Lock()
	np := b.parts[p]
	delete(b.parts, p)
	b.mu.Unlock()
	if np != nil {
		np.stop()
	}
}

// handled records m as handled: its ack (covering every earlier message) goes out now if
// AckBatch are waiting, else within AckDelay (the timer's flushAck).
func (b *NATSBus) handled(p int, np *natsPart, m jetstream.Msg) {
	np.ackMu.Lock()
	np.unacked = m
	np.nUnacked++
	if np.nUnacked < b.o.AckBatch {
		if !np.timerSet {
			np.timerSet = true
			np.timer.Reset(b.o.AckDelay)
		}
		np.ackMu.Unlock()
		return
	}
	np.unacked, np.nUnacked = nil, 0
	if np.timerSet {
		np.timerSet = false
		np.timer.Stop()
	}
	np.ackMu.Unlock()
	if err := m.Ack(); err != nil {
		b.log.Debug("NATS ack", "partition", p, "err", err) // redelivered: handlers tolerate duplicates
	}
}

// flushAck acknowledges the last message handled, if it is not yet; with wait, the ack is
// on the server before it returns (a PING round trip, up to 250 ms): the partition is being
// given up and its next owner starts after the ack floor. It does not wait for the consumer's
// own confirmation (DoubleAck): StopPartition runs on the member's lease goroutine, and an ack
// the consumer takes a moment later costs only duplicates (handlers tolerate them).
func (b *NATSBus) flushAck(p int, np *natsPart, wait bool) {
	np.ackMu.Lock()
	m := np.unacked
	np.unacked, np.nUnacked, np.timerSet = nil, 0, false
	np.timer.Stop()
	np.ackMu.Unlock()
	if m == nil {
		return
	}
	err := m.Ack()
	if err == nil && wait && b.nc.IsConnected() {
		err = b.nc.FlushTimeout(250 * time.Millisecond)
	}
	if err != nil {
		b.log.Debug("NATS ack", "partition", p, "err", err) // redelivered: handlers tolerate duplicates
	}
}

// awaitOwned waits until Owns(p) again (false: the partition stopped first). The member
// normally stops the partition soon after its lease ends; a lease renewed late is owned again.
func (b *NATSBus) awaitOwned(p int, np *natsPart) bool {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-np.ctx.Done():
			return false
		case <-t.C:
			if b.o.Owns(p) {
				return true
			}
		}
	}
}

// consume runs p's messages through the handlers, in order, acknowledging them (handled) as
// it goes, and the last one handled when it stops.
func (b *NATSBus) consume(p int, np *natsPart) {
	defer close(np.done)
	defer np.cancel()
	defer b.flushAck(p, np, true)
	if !b.bind(p, np, bindTimeout, true) {
		return
	}
	b.replayStatus(p, np)
	var resumed time.Time // the first error of a run without messages; zero once one came
	for {
		np.mu.Lock()
		it := np.it
		np.mu.Unlock()
		m, err := it.Next()
		if err != nil {
			np.mu.Lock()
			stopped := np.stopped
			np.mu.Unlock()
			if stopped {
				return
			}
			if errors.Is(err, jetstream.ErrNoHeartbeat) {
				// The consumer's leader died with its node (or the connection's node did): the
				// iterator has forgotten its pull and pulls again on the next Next, every two
				// heartbeats, so it is served as soon as a new leader is elected (NATS raft:
				// 4-9 s). Creating the consumer again instead waited for the API's answer, which
				// a leaderless consumer never gives: 10 s lost after every election.
				if resumed.IsZero() {
					resumed = time.Now()
				}
				b.log.Debug("NATS partition consumer: no heartbeat; pulling again", "partition", p)
				continue
			}
			// The iterator ended (its consumer deleted, the connection closed): start pulling
			// afresh (the durable consumer keeps the position; what was delivered and not acked
			// comes again).
			b.log.Warn("NATS partition consumer; resubscribing", "partition", p, "err", err)
			it.Stop()
			b.flushAck(p, np, false)
			select { // back off between attempts: a new iterator may fail at once again
			case <-np.ctx.Done():
				return
			case <-time.After(250 * time.Millisecond):
			}
			fresh := false
			if b.o.Owns != nil && !b.o.Owns(p) { // another owner's consumer, if any, is not ours to pull from
				if !b.awaitOwned(p, np) {
					return
				}
				fresh = true
			}
			// Short attempts: a consumer without a leader never answers; trying again soon is
			// better.
			if !b.bind(p, np, 2*time.Second, fresh) {
				return
			}
			if fresh {
				b.replayStatus(p, np)
			}
			if resumed.IsZero() {
				resumed = time.Now()
			}
			continue
		}
		if !resumed.IsZero() {
			b.log.Info("NATS partition consumer: delivering again", "partition", p, "since the first error", time.Since(resumed))
			resumed = time.Time{}
		}
		// edgewan.in.{p}.{site}.{kind} -> edgewan/v1/sites/{site}/{kind}
		site, kind, ok := subjectSite(m.Subject())
		if !ok {
			_ = m.Term()
			continue
		}
		if b.o.Owns != nil && !b.o.Owns(p) {
			// Not ours any more: StopPartition follows, and the next owner starts a consumer
			// of its own after the ack floor. What was handled is acknowledged; nothing more is
			// pulled (an ack of a later message would cover this one), until the partition is
			// owned again, which takes it over afresh.
			b.flushAck(p, np, true)
			_ = m.NakWithDelay(time.Second)
			it.Stop()
			if !b.awaitOwned(p, np) {
				return
			}
			if !b.bind(p, np, bindTimeout, true) {
				return
			}
			b.replayStatus(p, np) // the engine took its sites as lost: it waits for their paths again
			continue
		}
		b.mu.Lock()
		h := b.routes[kind]
		b.mu.Unlock()
		if h != nil {
			b.d.run(delivery{h: h, topic: telemetry.TopicRoot + site + "/" + kind, payload: m.Data()})
		}
		b.handled(p, np, m)
	}
}

// subjectSite splits edgewan.in.{partition}.{site}.{kind} (kind may hold dots) as
// strings.SplitN(subject, ".", 5) would, without allocating the slice: once per message.
func subjectSite(subject string) (site, kind string, ok bool) {
	rest := subject
	for range 3 {
		if _, rest, ok = strings.Cut(rest, "."); !ok {
			return "", "", false
		}
	}
	if site, kind, ok = strings.Cut(rest, "."); !ok {
		return "", "", false
	}
	return site, kind, true
}

// replayStatus hands the status handler the last status message of each site of partition p,
// before the partition's own messages: a new owner learns which paths every agent is on (an
// agent says so when it connects and when its paths change, not again for a new owner).
// Errors are logged: the engine then decides from the evidence after its sync delay.
//
// It reads through an ephemeral consumer (in memory, one replica, removed by the server
// after a minute unused) that the partition's context cancels: nats.go's ordered consumer
// recreated itself at every Fetch with its own 10 s timeouts and retries, which a stop could
// not cut short (StopPartition, on the member's lease goroutine, waited 8.5 s once after a
// NATS node's restart), and left a consumer behind per fetch.
func (b *NATSBus) replayStatus(p int, np *natsPart) {
	b.mu.Lock()
	h := b.routes[telemetry.KindStatus]
	b.mu.Unlock()
	if h == nil {
		return
	}
	ctx, cancel := context.WithTimeout(np.ctx, 30*time.Second)
	defer cancel()
	c, err := b.js.CreateConsumer(ctx, b.o.Stream, jetstream.ConsumerConfig{
		FilterSubject: "edgewan.in." + strconv.Itoa(p) + ".*." + telemetry.KindStatus,
		DeliverPolicy: jetstream.DeliverLastPerSubjectPolicy, AckPolicy: jetstream.AckNonePolicy,
		MemoryStorage: true, Replicas: 1, InactiveThreshold: time.Minute,
	})
	if err == nil {
		defer func() {
			if np.ctx.Err() == nil { // else it goes by itself (InactiveThreshold)
				dctx, dcancel := context.WithTimeout(np.ctx, 2*time.Second)
				if err := b.js.DeleteConsumer(dctx, b.o.Stream, c.CachedInfo().Name); err != nil {
					b.log.Debug("NATS partition: removing the status replay's consumer", "partition", p, "err", err)
				}
				dcancel()
			}
		}()
		for left := c.CachedInfo().NumPending; left > 0 && err == nil && ctx.Err() == nil; {
			// A short wait: StopPartition waits for this, and a batch short of what was asked
			// is all there is.
			var batch jetstream.MessageBatch
			want := int(min(left, 256))
			if batch, err = c.Fetch(want, jetstream.FetchMaxWait(time.Second)); err != nil {
				break
			}
			n := 0
			for m := range batch.Messages() {
				n++
				if site, kind, ok := subjectSite(m.Subject()); ok {
					b.d.run(delivery{h: h, topic: telemetry.TopicRoot + site + "/" + kind, payload: m.Data()})
				}
			}
			if n < want { // all there is (the batch's error is then its wait's end)
				break
			}
			if err = batch.Error(); err != nil {
				break
			}
			left -= uint64(n)
		}
	}
	if err != nil && np.ctx.Err() == nil {
		b.log.Warn("NATS partition: replaying the agents' last status", "partition", p, "err", err)
	}
}

// Connected reports whether both the NATS connection and the MQTT publisher are up (the
// controller's /readyz).
func (b *NATSBus) Connected() bool {
	return b.nc.IsConnected() && b.pub.IsConnectionOpen()
}

// Partitions lists the partitions being consumed.
func (b *NATSBus) Partitions() []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	ps := make([]int, 0, len(b.parts))
	for p := range b.parts {
		ps = append(ps, p)
	}
	return ps
}

// Close stops every partition, then disconnects.
func (b *NATSBus) Close() {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	b.closed = true
	ps := make([]int, 0, len(b.parts))
	for p := range b.parts {
		ps = append(ps, p)
	}
	b.mu.Unlock()
	for _, p := range ps {
		b.mu.Lock()
		np := b.parts[p]
		delete(b.parts, p)
		b.mu.Unlock()
		if np != nil { // else a concurrent StopPartition has it
			np.stop()
		}
	}
	b.pub.Disconnect(250)
	b.nc.Close()
}
