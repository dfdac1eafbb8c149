package mqtt

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/edgewan/edgewan/coreapi/ratelimit"
	"github.com/edgewan/edgewan/telemetry"
)

// Violation is an agent's attempt to use a topic its ACL refuses. The broker refuses it; the
// controller may open a case.
type Violation struct {
	Username string // the agent (device ID)
	Site     string // the agent's own site
	Topic    string // the topic or filter it tried (cut to 512 bytes)
	Write    bool   // true: publish (or a last will); false: subscribe or receive
	Remote   string // the client's address
}

// Options configures the embedded broker. Zero values mean the defaults given.
type Options struct {
	// Listen is the TLS listener's address. "" means ":8883".
	Listen string
	// TLS is the listener's configuration (the controller reuses its HTTPS certificate).
	// Required: the broker has no plaintext listener. MinVersion 0 means TLS 1.2.
	TLS *tls.Config
	// Credentials looks up agents at CONNECT. Required.
	Credentials CredentialStore
	// ControllerHash is HashPassword of the controller's own password, for the
	// ControllerUsername identity over the network. "" means that identity cannot log in (the
	// controller itself uses the InlineBus, which needs no login).
	ControllerHash string
	// OnViolation is called for every refused publish, subscribe, delivery or last will of an
	// agent, from one goroutine of the broker's, in order, never blocking the broker: when it
	// falls 1024 behind, further violations are logged and dropped. nil means only log them.
	OnViolation func(Violation)
	// ConnectTimeout bounds a new connection's TLS handshake and CONNECT packet. 0 means 10s.
	ConnectTimeout time.Duration
	// LookupTimeout bounds one CredentialStore lookup. 0 means 5s.
	LookupTimeout time.Duration
	// DrainTimeout bounds how long Close waits for the messages it already acknowledged to
	// reach a full InlineBus queue (default 10 s).
	DrainTimeout time.Duration
	// RefusalLogEvery is how often refused CONNECTs from one address are logged: the first,
	// then at most one line per interval, counting those not logged. 0 means one minute.
	RefusalLogEvery time.Duration
	// Logger receives the broker's logs and mochi's. nil means slog.Default().
	Logger *slog.Logger
	// OnRefused is told of each client disconnected for a message the broker refuses before
	// any subscriber sees it, with a reason among the Refused* constants (e.g. to count it).
	// It must not block. nil: only logged.
	OnRefused func(reason string)
	// AuthFailures is the budget of failed CONNECTs per client address (the HTTP API's
	// limiter, keyed "mqtt:ADDR"): once it is spent, CONNECTs from that address are refused
	// without a password check until a token is back. nil: no throttling.
	AuthFailures *ratelimit.Limiter
	// OnAuthFailure is told of every refused CONNECT (wrong or unknown credentials, or
	// throttled), e.g. to open a SOC case on a guessing address. It must not block.
	OnAuthFailure func(AuthFailure)
}

// AuthFailure is a refused CONNECT.
type AuthFailure struct {
	Remote   string // the client's address without the port
	Username string // as given, cut to 64 bytes
	Reason   string // "bad credentials", "anonymous" or "throttled"
	At       time.Time
}

// Reasons given to Options.OnRefused.
const (
	RefusedOversize = "oversize" // a packet over MaxPacket or a payload over telemetry.MaxPayload
)

// Limits of the embedded broker.
const (
	// MaxPacket is the largest MQTT packet accepted: telemetry.MaxPayload plus room for the
	// topic and headers. A larger packet is refused before it is read (connection closed).
	MaxPacket = telemetry.MaxPayload + 1024
	// A message with a payload over telemetry.MaxPayload is refused and its client disconnected.

	violationQueue      = 1024
	maxInflight         = 64            // QoS 1 messages held per agent session (agents receive little)
	clientWritesPending = 256           // outbound packets queued per connection
	sessionExpiry       = 7 * 24 * 3600 // seconds a disconnected persistent session is kept
	sysInterval         = 60            // seconds between $SYS updates
	defaultListen       = ":8883"       // MQTT over TLS
	maxTopicReport      = 512           // bytes of a violation's topic kept
	maxUsernameReport   = 64            // bytes of a refused client's username logged or reported
)

// Broker is the embedded MQTT broker: mochi-mqtt with a TLS listener, each agent authenticated
// against the CredentialStore and held to AgentAllowed.
type Broker struct {
	opts Options
	log  *slog.Logger
	srv  *mochi.Server
	ln   *tlsListener

	principals principals // by username == client ID: one live session each

	violations chan Violation
	dropped    atomic.Uint64
	abandoned  atomic.Uint64 // acknowledged messages dropped because Close's drain timed out

	inlineSubID atomic.Int64 // last inline subscription ID given out (see InlineBus.Subscribe)

	throttleMu sync.Mutex
	throttled  map[string]time.Time  // client address -> until when its CONNECTs are refused
	refusals   map[string]refusalLog // client address -> its refused CONNECTs' last log line

	ctx      context.Context // Start's; cancels store lookups on shutdown
	started  atomic.Bool
	closing  chan struct{} // closed first thing in Close: publishes from then on are refused
	abandon  chan struct{} // closed when Close's drain runs out of time (see DrainTimeout)
	closeOne sync.Once
	wg       sync.WaitGroup // the violation reporter
}

// principal is an authenticated identity. Keyed by username, which the broker also makes the
// client ID (like Mosquitto's use_username_as_clientid): so one identity has at most one live
// session, and no client can take over or kick another identity's session.
type principal struct {
	username, site string
	controller     bool
}

// NewBroker validates opts and prepares a broker; Start starts it.
func NewBroker(opts Options) (*Broker, error) {
	if opts.TLS == nil {
		return nil, errors.New("mqtt.NewBroker: Options.TLS is required")
	}
	if opts.Credentials == nil {
		return nil, errors.New("mqtt.NewBroker: Options.Credentials is required")
	}
	if opts.ControllerHash != "" {
		if err := CheckHash(opts.ControllerHash); err != nil {
			return nil, fmt.Errorf("mqtt.NewBroker: ControllerHash: %w", err)
		}
	}
	if opts.Listen == "" {
		opts.Listen = defaultListen
	}
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = 10 * time.Second
	}
	if opts.LookupTimeout <= 0 {
		opts.LookupTimeout = 5 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.RefusalLogEvery <= 0 {
		opts.RefusalLogEvery = time.Minute
	}
	if opts.DrainTimeout <= 0 {
		opts.DrainTimeout = 10 * time.Second
	}
	tc := opts.TLS.Clone()
	if tc.MinVersion == 0 {
		tc.MinVersion = tls.VersionTLS12
	}

	caps := mochi.NewDefaultServerCapabilities()
	caps.MaximumPacketSize = MaxPacket
	// mochi's default (24h) deletes retained messages a day after they were published: an
	// agent reconnecting later would find no policy. Retained state lives until replaced.
	caps.MaximumMessageExpiryInterval = 0
	caps.MaximumInflight = maxInflight
	caps.MaximumSessionExpiryInterval = sessionExpiry
	// An agent receives a policy and decisions now and then; mochi's default outbound queue
	// (8192 slots) costs 64 KiB per connection, 0.9 GiB at 10,000 agents for nothing.
	caps.MaximumClientWritesPending = clientWritesPending

	b := &Broker{
		opts:       opts,
		log:        opts.Logger,
		throttled:  make(map[string]time.Time),
		refusals:   make(map[string]refusalLog),
		violations: make(chan Violation, violationQueue),
		ctx:        context.Background(),
		closing:    make(chan struct{}),
		abandon:    make(chan struct{}),
	}
	b.srv = mochi.New(&mochi.Options{
		Capabilities:           caps,
		InlineClient:           true,
		SysTopicResendInterval: sysInterval,
		Logger:                 mochiLogger(opts.Logger.With("component", "mqtt-broker")),
	})
	if err := b.srv.AddHook(&hook{b: b}, nil); err != nil {
		return nil, fmt.Errorf("mqtt.NewBroker: %w", err)
	}
	b.ln = &tlsListener{id: "tls", address: opts.Listen, tls: tc, connectTimeout: opts.ConnectTimeout}
	return b, nil
}

// Start listens and serves until ctx is cancelled or Close is called. Subscribe the InlineBus
// before Start so that nothing an agent publishes is missed.
func (b *Broker) Start(ctx context.Context) error {
	if !b.started.CompareAndSwap(false, true) {
		return errors.New("mqtt.Broker.Start: already started")
	}
	select {
	case <-b.closing:
		return errors.New("mqtt.Broker.Start: closed")
	default:
	}
	b.ctx = ctx
	if err := b.srv.AddListener(b.ln); err != nil {
		return fmt.Errorf("mqtt.Broker.Start: listen on %s: %w", b.opts.Listen, err)
	}
	if b.opts.OnViolation != nil {
		b.wg.Add(1)
		go b.reportViolations()
	}
	if err := b.srv.Serve(); err != nil {
		b.Close()
		return fmt.Errorf("mqtt.Broker.Start: %w", err)
	}
	go func() { // stops with ctx; ends when the broker closes either way
		select {
		case <-ctx.Done():
			b.Close()
		case <-b.closing:
		}
	}()
	return nil
}

// Addr returns the listener's address (useful with Listen ":0").
func (b *Broker) Addr() string { return b.ln.Address() }

// Close disconnects every client, stops the listener and waits for the broker's goroutines.
// Safe to call more than once and concurrently with ctx's cancellation.
//
// mochi PUBACKs a QoS 1 message before it hands it to the inline subscribers, so a message
// acknowledged to an agent must still reach the InlineBus's queues while the broker closes:
// from the moment Close starts, new publishes are refused unacknowledged (the agent sends them
// again after reconnecting), and those already past that check are queued even if a queue is
// full, waiting for the bus's workers, which must keep running until Close returns. Only if
// that takes longer than Options.DrainTimeout are they dropped (and counted); an agent's spool
// still sends them again, as it keeps every record until the controller's watermark.
func (b *Broker) Close() { b.Shutdown(context.Background()) }

// Shutdown is Close with a deadline: the drain also gives up when ctx ends (the process's own
// shutdown budget), whichever comes first with DrainTimeout.
func (b *Broker) Shutdown(ctx context.Context) {
	b.closeOne.Do(func() {
		close(b.closing)
		drained := make(chan struct{})
		go func() {
			t := time.NewTimer(b.opts.DrainTimeout)
			defer t.Stop()
			select {
			case <-drained:
				return
			case <-t.C:
			case <-ctx.Done():
			}
			b.log.Warn("mqtt: closing the broker took too long; dropping the messages still waiting for a full queue", "timeout", b.opts.DrainTimeout)
			close(b.abandon)
		}()
		_ = b.srv.Close() // closes listeners and clients, waits for client goroutines
		close(drained)
		b.wg.Wait()
		if n := b.abandoned.Load(); n > 0 {
			b.log.Warn("mqtt: acknowledged messages dropped at close (their agents send them again)", "messages", n)
		}
		if n := b.dropped.Load(); n > 0 {
			b.log.Warn("mqtt: ACL violations not reported (OnViolation too slow)", "dropped", n)
		}
	})
}

// Revoke forgets username's session and disconnects it if connected, e.g. when its device is
// deleted or re-claimed; its next CONNECT is checked against the CredentialStore again.
func (b *Broker) Revoke(username string) {
	b.principals.delete(username)
	if cl, ok := b.srv.Clients.Get(username); ok {
		_ = b.srv.DisconnectClient(cl, packets.ErrNotAuthorized)
	}
}

func (b *Broker) principal(username []byte) (principal, bool) { return b.principals.get(username) }

// authenticate checks a CONNECT's credentials. Every refusal costs one password hash, so an
// unknown user and a wrong password cannot be told apart by timing.
func (b *Broker) authenticate(user string, pass []byte) (principal, error) {
	switch {
	case user == ControllerUsername:
		if b.opts.ControllerHash == "" {
			VerifyPassword(dummyHash, string(pass))
			return principal{}, errors.New("controller login over the network is disabled")
		}
		if !VerifyPassword(b.opts.ControllerHash, string(pass)) {
			return principal{}, errors.New("bad password")
		}
		return principal{username: user, controller: true}, nil
	case !ValidAgentUsername(user):
		VerifyPassword(dummyHash, string(pass))
		return principal{}, errors.New("bad username")
	}
	c, err := b.lookup(user)
	switch {
	case err != nil:
		VerifyPassword(dummyHash, string(pass))
		return principal{}, fmt.Errorf("%w: %w", errLookup, err)
	case c == nil:
		VerifyPassword(dummyHash, string(pass))
		return principal{}, errors.New("unknown username")
	case c.Username != user || !telemetry.ValidID(c.Site):
		VerifyPassword(dummyHash, string(pass))
		return principal{}, fmt.Errorf("the store returned a bad credential (username %q, site %q)", c.Username, c.Site)
	case !VerifyPassword(c.Hash, string(pass)):
		return principal{}, errors.New("bad password")
	}
	return principal{username: user, site: c.Site}, nil
}

// lookup finds user's credential: from the store's memory if it keeps them there, else with
// LookupTimeout. (A timeout is a context derived from the broker's, and every derived context
// registers with its parent's one mutex: a fleet's CONNECTs all at once contend for it.)
func (b *Broker) lookup(user string) (*Credential, error) {
	if m, ok := b.opts.Credentials.(CredentialMemory); ok {
		if c, ok := m.CachedMQTTCredential(user); ok {
			return c, nil
		}
	}
	ctx, cancel := context.WithTimeout(b.ctx, b.opts.LookupTimeout)
	defer cancel()
	return b.opts.Credentials.MQTTCredential(ctx, user)
}

// errLookup is a CONNECT refused because the credential store did not answer: not the
// client's failure.
var errLookup = errors.New("credential lookup")

// isThrottled reports whether remote's failed CONNECTs have spent their budget.
func (b *Broker) isThrottled(remote string, now time.Time) bool {
	b.throttleMu.Lock()
	defer b.throttleMu.Unlock()
	until, ok := b.throttled[remote]
	if ok && !now.Before(until) {
		delete(b.throttled, remote)
		return false
	}
	return ok
}

// authFailed spends one token of remote's failure budget and reports the failure.
func (b *Broker) authFailed(remote, user, reason string, now time.Time) {
	if b.opts.AuthFailures.Enabled() && reason != "throttled" {
		if d := b.opts.AuthFailures.Allow("mqtt:"+remote, now); !d.OK {
			b.throttleMu.Lock()
			if len(b.throttled) > 100_000 { // a flood from many addresses: bounded memory
				clear(b.throttled)
			}
			b.throttled[remote] = now.Add(d.RetryAfter)
			b.throttleMu.Unlock()
		}
	}
	if b.opts.OnAuthFailure != nil {
		b.opts.OnAuthFailure(AuthFailure{Remote: remote, Username: cutUsername(user), Reason: reason, At: now})
	}
}

// cutUsername bounds a client-supplied username (up to 64 KiB) before it is logged or reported.
func cutUsername(user string) string {
	if len(user) > maxUsernameReport {
		return user[:maxUsernameReport]
	}
	return user
}

// refusalLog is the last logged refused CONNECT of one address and how many came since.
type refusalLog struct {
	at      time.Time
	skipped int
}

// logRefusal logs a refused CONNECT from remote unless one from there was logged less than
// RefusalLogEvery ago: a client retrying in a loop must not flood the log. The line counts the
// refusals not logged since the previous one ("skipped").
func (b *Broker) logRefusal(remote string, now time.Time, msg string, args ...any) {
	b.throttleMu.Lock()
	r, ok := b.refusals[remote]
	if ok && now.Sub(r.at) < b.opts.RefusalLogEvery {
		r.skipped++
		b.refusals[remote] = r
		b.throttleMu.Unlock()
		return
	}
	if len(b.refusals) > 100_000 { // a flood from many addresses: bounded memory
		clear(b.refusals)
	}
	b.refusals[remote] = refusalLog{at: now}
	b.throttleMu.Unlock()
	b.log.Info(msg, append(args, "skipped", r.skipped)...)
}

// remoteHost is a client address without its port.
func remoteHost(remote string) string {
	if h, _, err := net.SplitHostPort(remote); err == nil {
		return h
	}
	return remote
}

// violation refuses and reports: never blocks the broker.
func (b *Broker) violation(v Violation) {
	if len(v.Topic) > maxTopicReport {
		v.Topic = v.Topic[:maxTopicReport]
	}
	if b.opts.OnViolation == nil {
		b.log.Warn("mqtt: ACL violation", "username", v.Username, "site", v.Site, "topic", v.Topic, "write", v.Write, "remote", v.Remote)
		return
	}
	select {
	case b.violations <- v:
	default:
		b.dropped.Add(1)
		b.log.Warn("mqtt: ACL violation (not reported: OnViolation is behind)", "username", v.Username, "site", v.Site, "topic", v.Topic, "write", v.Write, "remote", v.Remote)
	}
}

func (b *Broker) reportViolations() {
	defer b.wg.Done()
	for {
		select {
		case v := <-b.violations:
			b.opts.OnViolation(v)
		case <-b.closing:
			for { // report what was already refused, then stop
				select {
				case v := <-b.violations:
					b.opts.OnViolation(v)
				default:
					return
				}
			}
		}
	}
}

// hook plugs authentication, the ACL and the payload limit into mochi.
type hook struct {
	mochi.HookBase
	b *Broker
}

func (h *hook) ID() string { return "edgewan" }

func (h *hook) Provides(b byte) bool {
	return bytes.Contains([]byte{mochi.OnConnectAuthenticate, mochi.OnWill, mochi.OnACLCheck, mochi.OnPublish, mochi.OnPacketRead, mochi.OnDisconnect}, []byte{b})
}

// OnConnectAuthenticate admits a client whose username and password match, whose last will
// (if any) its ACL allows, and renames the client after its username.
func (h *hook) OnConnectAuthenticate(cl *mochi.Client, pk packets.Packet) bool {
	b := h.b
	user := string(pk.Connect.Username)
	now := time.Now()
	remote := remoteHost(cl.Net.Remote)
	if b.isThrottled(remote, now) {
		b.logRefusal(remote, now, "mqtt: refused client: too many failed logins from its address", "username", cutUsername(user), "remote", cl.Net.Remote)
		b.authFailed(remote, user, "throttled", now)
		return false
	}
	if !pk.Connect.UsernameFlag || user == "" {
		b.logRefusal(remote, now, "mqtt: refused anonymous client", "remote", cl.Net.Remote)
		b.authFailed(remote, "", "anonymous", now)
		return false
	}
	p, err := b.authenticate(user, pk.Connect.Password)
	if err != nil {
		b.logRefusal(remote, now, "mqtt: refused client", "username", cutUsername(user), "remote", cl.Net.Remote, "error", err)
		if !errors.Is(err, errLookup) {
			b.authFailed(remote, user, "bad credentials", now)
		}
		return false
	}
	// mochi publishes a last will without any ACL check (mochi-mqtt/server#503): check it here.
	if pk.Connect.WillFlag && !p.controller && !agentAllowed(p.site, pk.Connect.WillTopic, true) {
		b.violation(Violation{Username: user, Site: p.site, Topic: pk.Connect.WillTopic, Write: true, Remote: cl.Net.Remote})
		return false
	}
	cl.ID = user // one session per identity, see principal
	if cl.Properties.Props.AssignedClientID != "" {
		cl.Properties.Props.AssignedClientID = user
	}
	b.principals.put(user, p)
	return true
}

// OnWill drops a client's will while the broker closes: a shutdown is not the agents' loss of
// their link, and their "offline" wills would mark every site offline, with events, while the
// engine still takes messages. mochi publishes the will it gets back; an empty topic reaches no
// subscriber and is not retained.
func (h *hook) OnWill(_ *mochi.Client, will mochi.Will) (mochi.Will, error) {
	select {
	case <-h.b.closing:
		return mochi.Will{}, nil
	default:
		return will, nil
	}
}

// OnACLCheck holds agents to AgentAllowed, for publishes (write), subscription filters and each
// delivery (read). A refusal also disconnects the client (MQTT 3.1.1 has no negative PUBACK;
// closing the connection is what [MQTT-3.3.5-2] allows; a refused subscribe is treated the
// same, as docs/telemetry.md says), which bounds how fast a misbehaving agent can try.
func (h *hook) OnACLCheck(cl *mochi.Client, topic string, write bool) bool {
	p, ok := h.b.principal(cl.Properties.Username)
	if ok && (p.controller || agentAllowed(p.site, topic, write)) {
		return true
	}
	h.b.violation(Violation{Username: string(cl.Properties.Username), Site: p.site, Topic: topic, Write: write, Remote: cl.Net.Remote})
	cl.Stop(packets.ErrNotAuthorized)
	return false
}

// OnDisconnect counts a client dropped for an oversize packet: mochi refuses a packet over
// MaxPacket while reading its header, before any other hook sees it, and OnPublish stops a
// client whose payload is over telemetry.MaxPayload; either way the cause ends up here, once.
func (h *hook) OnDisconnect(cl *mochi.Client, err error, _ bool) {
	if cl.Net.Inline || h.b.opts.OnRefused == nil {
		return
	}
	if errors.Is(err, packets.ErrPacketTooLarge) || errors.Is(cl.StopCause(), packets.ErrPacketTooLarge) {
		h.b.opts.OnRefused(RefusedOversize)
	}
}

// OnPacketRead reports an agent's publish to $SYS/...: mochi drops those silently before any
// ACL check, without a PUBACK, so they would go unreported. The connection is closed, as for
// any refused publish. (A topic with wildcards fails to decode: mochi closes the connection.)
func (h *hook) OnPacketRead(cl *mochi.Client, pk packets.Packet) (packets.Packet, error) {
	if pk.FixedHeader.Type != packets.Publish || cl.Net.Inline || pk.TopicName == "" || mochi.IsValidFilter(pk.TopicName, true) {
		return pk, nil
	}
	p, ok := h.b.principal(cl.Properties.Username)
	if ok && p.controller {
		return pk, nil
	}
	h.b.violation(Violation{Username: string(cl.Properties.Username), Site: p.site, Topic: pk.TopicName, Write: true, Remote: cl.Net.Remote})
	cl.Stop(packets.ErrNotAuthorized)
	return pk, packets.ErrRejectPacket // the only error mochi does not ignore here
}

// OnPublish refuses an agent's publish once the broker is closing, and a payload over
// telemetry.MaxPayload (the packet limit lets a little more through for the topic and headers),
// disconnecting its client.
func (h *hook) OnPublish(cl *mochi.Client, pk packets.Packet) (packets.Packet, error) {
	if !cl.Net.Inline {
		select {
		case <-h.b.closing:
			// Refused before mochi's PUBACK: unacknowledged, the agent sends it again.
			return pk, packets.ErrRejectPacket
		default:
		}
	}
	if !cl.Net.Inline && len(pk.Payload) > telemetry.MaxPayload {
		h.b.log.Info("mqtt: refused oversize message", "username", string(cl.Properties.Username), "topic", pk.TopicName, "bytes", len(pk.Payload))
		cl.Stop(packets.ErrPacketTooLarge)
		return pk, packets.ErrRejectPacket
	}
	return pk, nil
}
