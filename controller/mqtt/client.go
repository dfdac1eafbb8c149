package mqtt

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"sync"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	pahopackets "github.com/eclipse/paho.mqtt.golang/packets"

	"github.com/edgewan/edgewan/telemetry"
)

// ClientOptions configures a ClientBus. Zero values mean the defaults given.
type ClientOptions struct {
	// URL of the broker: mqtts://host:port (also ssl://, tls://), or tcp://host:port (mqtt://)
	// for tests on loopback only. Required.
	URL string
	// Username is the controller's identity on the broker. "" means ControllerUsername.
	Username string
	// Password is the controller's own password.
	Password string
	// ClientID is the fixed client ID of the persistent session. "" means Username (which is
	// what a Mosquitto with use_username_as_clientid uses anyway). Two controllers with the
	// same ID take the session from each other.
	ClientID string
	// TLS configures mqtts. nil means the system roots plus CAFile.
	TLS *tls.Config
	// CAFile is a PEM bundle of CAs to trust for the broker, added to TLS.RootCAs (or to an
	// empty pool when TLS.RootCAs is nil). "" adds none.
	CAFile string
	// KeepAlive between pings. 0 means 30s.
	KeepAlive time.Duration
	// ConnectTimeout bounds one connection attempt. 0 means 10s.
	ConnectTimeout time.Duration
	// MaxReconnectInterval caps the reconnect backoff, which starts at 1s and doubles.
	// 0 means 30s.
	MaxReconnectInterval time.Duration
	// PublishTimeout bounds Publish's and Subscribe's wait for the broker's acknowledgement.
	// 0 means 10s.
	PublishTimeout time.Duration
	// OnConnectionChange is told each time the connection comes up (err nil; subscriptions
	// renewed) or goes down (err why). nil means only log.
	OnConnectionChange func(up bool, err error)
	// Bus tunes handler dispatch.
	Bus BusOptions
}

// ClientBus is the Bus over any MQTT broker, through paho.mqtt.golang: a persistent session
// (CleanSession false, fixed client ID) so the broker queues QoS 1 messages while the
// controller is away, automatic reconnection with backoff, and every subscription renewed on
// each connection (the broker may have lost the session, e.g. after a restart).
type ClientBus struct {
	opts ClientOptions
	log  *slog.Logger
	c    paho.Client
	d    *dispatcher

	mu      sync.RWMutex
	routes  []route
	started bool
	closed  bool

	stop    chan struct{} // closed by Close
	up      chan error    // onConnect's outcome, for Start
	closeMu sync.Once
}

type route struct {
	filter string
	h      Handler
}

var _ Bus = (*ClientBus)(nil)

// ErrSubscribeRefused is returned when the broker refuses a subscription (SUBACK 0x80).
var ErrSubscribeRefused = errors.New("mqtt: subscription refused by the broker")

// NewClientBus prepares a bus; Subscribe, then Start it.
func NewClientBus(opts ClientOptions) (*ClientBus, error) {
	u, err := url.Parse(opts.URL)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("mqtt.NewClientBus: bad URL %q", opts.URL)
	}
	tlsScheme := false
	switch u.Scheme {
	case "mqtts", "ssl", "tls", "tcps", "mqtt+ssl":
		tlsScheme = true
	case "tcp", "mqtt":
	default:
		return nil, fmt.Errorf("mqtt.NewClientBus: URL %q: scheme must be mqtts (or tcp for tests)", opts.URL)
	}
	if opts.Username == "" {
		opts.Username = ControllerUsername
	}
	if opts.ClientID == "" {
		opts.ClientID = opts.Username
	}
	if opts.KeepAlive <= 0 {
		opts.KeepAlive = 30 * time.Second
	}
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = 10 * time.Second
	}
	if opts.MaxReconnectInterval <= 0 {
		opts.MaxReconnectInterval = 30 * time.Second
	}
	if opts.PublishTimeout <= 0 {
		opts.PublishTimeout = 10 * time.Second
	}
	opts.Bus.defaults()

	var tc *tls.Config
	if tlsScheme || opts.TLS != nil || opts.CAFile != "" {
		tc = &tls.Config{MinVersion: tls.VersionTLS12}
		if opts.TLS != nil {
			tc = opts.TLS.Clone()
		}
		if opts.CAFile != "" {
			pem, err := os.ReadFile(opts.CAFile)
			if err != nil {
				return nil, fmt.Errorf("mqtt.NewClientBus: CAFile: %w", err)
			}
			pool := tc.RootCAs
			if pool == nil {
				pool = x509.NewCertPool()
			} else {
				pool = pool.Clone()
			}
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("mqtt.NewClientBus: CAFile %s holds no PEM certificate", opts.CAFile)
			}
			tc.RootCAs = pool
		}
	}

	cb := &ClientBus{opts: opts, log: opts.Bus.Logger, d: newDispatcher(opts.Bus, nil),
		stop: make(chan struct{}), up: make(chan error, 1)}
	po := paho.NewClientOptions().
		AddBroker(opts.URL).
		SetClientID(opts.ClientID).
		SetUsername(opts.Username).
		SetPassword(opts.Password).
		SetCleanSession(false).
		SetResumeSubs(false).  // the bus renews its own subscriptions in onConnect
		SetOrderMatters(true). // one router goroutine: messages reach dispatch in arrival order
		SetKeepAlive(opts.KeepAlive).
		SetConnectTimeout(opts.ConnectTimeout).
		SetAutoReconnect(true).
		SetMaxReconnectInterval(opts.MaxReconnectInterval).
		SetWriteTimeout(opts.PublishTimeout).
		SetDefaultPublishHandler(cb.route). // also gets a persistent session's messages that arrive before any Subscribe
		SetOnConnectHandler(cb.onConnect).
		SetConnectionLostHandler(cb.onLost)
	if tc != nil {
		po.SetTLSConfig(tc)
	}
	cb.c = paho.NewClient(po)
	return cb, nil
}

// Start connects, retrying network errors with backoff until ctx ends, and returns once
// connected and subscribed; a refusal (bad credentials, an untrusted certificate) is returned
// at once.
// After that the connection is kept up until ctx ends or Close.
func (cb *ClientBus) Start(ctx context.Context) error {
	cb.mu.Lock()
	if cb.started || cb.closed {
		cb.mu.Unlock()
		return errors.New("mqtt.ClientBus.Start: already started or closed")
	}
	cb.started = true
	cb.mu.Unlock()

	wait := time.Second
	for {
		tok := cb.c.Connect()
		var err error
		select {
		case <-tok.Done():
			err = tok.Error()
		case <-ctx.Done():
			cb.Close()
			return fmt.Errorf("mqtt.ClientBus.Start: %w", ctx.Err())
		case <-cb.stop:
			return fmt.Errorf("mqtt.ClientBus.Start: %w", ErrClosed)
		}
		if err == nil {
			break
		}
		if refused(err) {
			cb.Close()
			return fmt.Errorf("mqtt.ClientBus.Start: %s: %w", cb.opts.URL, err)
		}
		cb.log.Warn("mqtt: cannot connect to the broker; retrying", "url", cb.opts.URL, "in", wait, "error", err)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			cb.Close()
			return fmt.Errorf("mqtt.ClientBus.Start: %w", ctx.Err())
		case <-cb.stop:
			t.Stop()
			return fmt.Errorf("mqtt.ClientBus.Start: %w", ErrClosed)
		}
		wait = min(2*wait, cb.opts.MaxReconnectInterval)
	}
	// onConnect (run by paho in its own goroutine) makes the subscriptions: wait for it, so
	// Start returns with them in place.
	select {
	case err := <-cb.up:
		if err != nil {
			cb.Close()
			return fmt.Errorf("mqtt.ClientBus.Start: %w", err)
		}
	case <-ctx.Done():
		cb.Close()
		return fmt.Errorf("mqtt.ClientBus.Start: %w", ctx.Err())
	case <-cb.stop:
		return fmt.Errorf("mqtt.ClientBus.Start: %w", ErrClosed)
	}
	go func() {
		select {
		case <-ctx.Done():
			cb.Close()
		case <-cb.stop:
		}
	}()
	return nil
}

// refused reports whether err is a refusal that retrying will not fix: the broker's CONNACK
// (bad credentials, ...) or its TLS certificate failing verification.
func refused(err error) bool {
	var cv *tls.CertificateVerificationError
	if errors.As(err, &cv) {
		return true
	}
	for _, e := range []error{
		pahopackets.ErrorRefusedBadProtocolVersion, pahopackets.ErrorRefusedIDRejected,
		pahopackets.ErrorRefusedBadUsernameOrPassword, pahopackets.ErrorRefusedNotAuthorised,
	} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// Subscribe implements Bus. Before Start it only records the subscription; after, it also
// subscribes at once and returns the broker's answer. Either way it is renewed on every
// reconnection.
func (cb *ClientBus) Subscribe(filter string, handler Handler) error {
	if !validFilter(filter) {
		return fmt.Errorf("mqtt.ClientBus.Subscribe: bad filter %q", filter)
	}
	if handler == nil {
		return fmt.Errorf("mqtt.ClientBus.Subscribe: nil handler")
	}
	cb.mu.Lock()
	if cb.closed {
		cb.mu.Unlock()
		return ErrClosed
	}
	cb.routes = append(cb.routes, route{filter: filter, h: handler})
	started := cb.started
	cb.mu.Unlock()
	if !started || !cb.c.IsConnectionOpen() {
		return nil // onConnect subscribes
	}
	if err := cb.subscribe(map[string]byte{filter: 1}); err != nil {
		return fmt.Errorf("mqtt.ClientBus.Subscribe: %w", err)
	}
	return nil
}

func (cb *ClientBus) subscribeAll() error {
	cb.mu.RLock()
	filters := make(map[string]byte, len(cb.routes))
	for _, r := range cb.routes {
		filters[r.filter] = 1
	}
	cb.mu.RUnlock()
	if len(filters) == 0 {
		return nil
	}
	return cb.subscribe(filters)
}

// subscribe sends one SUBSCRIBE (QoS 1 each) and checks every granted QoS. Handlers are routed
// by the bus itself (route), not by paho, so none is given here.
func (cb *ClientBus) subscribe(filters map[string]byte) error {
	tok := cb.c.SubscribeMultiple(filters, nil)
	if !tok.WaitTimeout(cb.opts.PublishTimeout) {
		return fmt.Errorf("subscribe: no SUBACK within %v", cb.opts.PublishTimeout)
	}
	if err := tok.Error(); err != nil {
		return fmt.Errorf("subscribe: %w", err)
	}
	st, _ := tok.(*paho.SubscribeToken)
	if st == nil {
		return nil
	}
	var bad []string
	for f, code := range st.Result() {
		if code >= 0x80 {
			bad = append(bad, f)
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%w: %q", ErrSubscribeRefused, bad)
	}
	return nil
}

// route hands a message to the handler of every matching subscription. paho calls it from its
// single router goroutine (OrderMatters), so arrival order is kept into the dispatcher.
func (cb *ClientBus) route(_ paho.Client, m paho.Message) {
	topic, payload := m.Topic(), m.Payload()
	matched := false
	cb.mu.RLock()
	routes := cb.routes
	cb.mu.RUnlock()
	for _, r := range routes {
		if MatchTopic(r.filter, topic) {
			matched = true
			cb.d.dispatch(r.h, topic, payload)
		}
	}
	if !matched {
		cb.log.Warn("mqtt: message matches no subscription; dropped", "topic", topic)
	}
}

func (cb *ClientBus) onConnect(paho.Client) {
	err := cb.subscribeAll()
	if err != nil {
		cb.log.Error("mqtt: connected, but renewing subscriptions failed", "url", cb.opts.URL, "error", err)
	} else {
		cb.log.Info("mqtt: connected to the broker", "url", cb.opts.URL)
	}
	select {
	case cb.up <- err:
	default: // Start is not waiting
	}
	if f := cb.opts.OnConnectionChange; f != nil {
		f(true, err)
	}
}

func (cb *ClientBus) onLost(_ paho.Client, err error) {
	cb.log.Warn("mqtt: connection to the broker lost; reconnecting", "url", cb.opts.URL, "error", err)
	if f := cb.opts.OnConnectionChange; f != nil {
		f(false, err)
	}
}

// Publish implements Bus: QoS 1, waiting up to PublishTimeout for the broker's PUBACK. While
// disconnected it fails rather than queueing: the caller knows the state it meant to publish
// and publishes it again (retained) after reconnecting.
func (cb *ClientBus) Publish(topic string, payload []byte, retain bool) error {
	if !validTopic(topic) {
		return fmt.Errorf("mqtt.ClientBus.Publish: bad topic %q", topic)
	}
	if len(payload) > telemetry.MaxPayload {
		return fmt.Errorf("mqtt.ClientBus.Publish %s: payload of %d bytes is over %d", topic, len(payload), telemetry.MaxPayload)
	}
	cb.mu.RLock()
	closed := cb.closed
	cb.mu.RUnlock()
	if closed {
		return ErrClosed
	}
	if !cb.c.IsConnectionOpen() {
		return fmt.Errorf("mqtt.ClientBus.Publish %s: not connected to %s", topic, cb.opts.URL)
	}
	tok := cb.c.Publish(topic, 1, retain, payload)
	if !tok.WaitTimeout(cb.opts.PublishTimeout) {
		return fmt.Errorf("mqtt.ClientBus.Publish %s: no PUBACK within %v", topic, cb.opts.PublishTimeout)
	}
	if err := tok.Error(); err != nil {
		return fmt.Errorf("mqtt.ClientBus.Publish %s: %w", topic, err)
	}
	return nil
}

// Connected reports whether the connection to the broker is up now.
func (cb *ClientBus) Connected() bool { return cb.c.IsConnectionOpen() }

// Close implements Bus: it disconnects (the broker keeps the session and queues for it), then
// runs what is queued.
func (cb *ClientBus) Close() {
	cb.closeMu.Do(func() {
		cb.mu.Lock()
		cb.closed = true
		cb.mu.Unlock()
		close(cb.stop)
		cb.c.Disconnect(250)
		cb.d.close()
	})
}
