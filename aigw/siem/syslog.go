package siem

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/edgewan/edgewan/aigw/gateway"
)

// SyslogOptions configure a SyslogSink. Zero values take the defaults named.
type SyslogOptions struct {
	Addr string      // host:port of the receiver; required
	TLS  *tls.Config // nil: plain TCP (RFC 6587); else TLS (RFC 5425), verifying the receiver
	// Name is the sink's name and cursor key; default "syslog+tcp://Addr" or "syslog+tls://Addr".
	Name         string
	Facility     string        // a name (local0-local7, auth, ...) or a code 0-23; default local0
	Hostname     string        // the HOSTNAME field; default os.Hostname(), "-" when not valid there
	DialTimeout  time.Duration // default 10s
	WriteTimeout time.Duration // for writing one Send's messages; default 30s
	// MaxMessage bounds one syslog message in bytes; a larger record goes without its input and
	// output, marked "truncated":true. Default 64 KiB.
	MaxMessage int
	// Messages written up to ResendWindow before a connection is found broken are written again,
	// first, on the next connection (TCP syslog has no acknowledgements). Default 5m.
	ResendWindow time.Duration
	ResendBytes  int // at most this many bytes of messages are kept for that; default 1 MiB
}

// Defaults of SyslogOptions.
const (
	DefaultSyslogDialTimeout  = 10 * time.Second
	DefaultSyslogWriteTimeout = 30 * time.Second
	DefaultMaxMessage         = 64 << 10
	DefaultResendWindow       = 5 * time.Minute
	DefaultResendBytes        = 1 << 20
)

var _ Sink = (*SyslogSink)(nil)

// SyslogSink sends records as RFC 5424 messages, octet-counted (RFC 6587), over TCP or TLS.
//
// TCP syslog has no acknowledgement: a Send is accepted once its messages are written to the
// connection without error, so a receiver that dies may lose what it had not yet read. To keep
// delivery at least once, the sink remembers what it wrote recently (ResendWindow, ResendBytes)
// and, when it finds the connection broken (a failed write, or the receiver closing it, which
// each Send checks first), writes those messages again on the next connection before anything
// new. A receiver may therefore see a record more than once; seq and request_id identify it.
type SyslogSink struct {
	o       SyslogOptions
	f       *formatter
	network func(ctx context.Context) (net.Conn, error)

	sendMu sync.Mutex // one Send at a time; guards f and ring
	ring   resendRing

	mu     sync.Mutex // guards conn and closed
	conn   net.Conn
	closed bool
}

// NewSyslogSink returns a sink for o; it connects on the first Send.
func NewSyslogSink(o SyslogOptions) (*SyslogSink, error) {
	if _, _, err := net.SplitHostPort(o.Addr); err != nil {
		return nil, fmt.Errorf("siem.NewSyslogSink: address %q: %w", o.Addr, err)
	}
	facility, err := parseFacility(o.Facility)
	if err != nil {
		return nil, fmt.Errorf("siem.NewSyslogSink: %w", err)
	}
	if o.Hostname == "" {
		o.Hostname, _ = os.Hostname()
		if !validHeaderField(o.Hostname, 255) {
			o.Hostname = "-"
		}
	} else if !validHeaderField(o.Hostname, 255) {
		return nil, fmt.Errorf("siem.NewSyslogSink: hostname %q: want 1-255 printable ASCII characters", o.Hostname)
	}
	if o.TLS != nil && o.TLS.InsecureSkipVerify {
		return nil, errors.New("siem.NewSyslogSink: TLS must verify the receiver (InsecureSkipVerify is not allowed)")
	}
	if o.Name == "" {
		o.Name = "syslog+tcp://" + o.Addr
		if o.TLS != nil {
			o.Name = "syslog+tls://" + o.Addr
		}
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = DefaultSyslogDialTimeout
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultSyslogWriteTimeout
	}
	if o.MaxMessage <= 0 {
		o.MaxMessage = DefaultMaxMessage
	}
	if o.ResendWindow <= 0 {
		o.ResendWindow = DefaultResendWindow
	}
	if o.ResendBytes <= 0 {
		o.ResendBytes = DefaultResendBytes
	}
	s := &SyslogSink{o: o, f: newFormatter(facility, o.Hostname, o.MaxMessage)}
	s.ring = resendRing{window: o.ResendWindow, max: o.ResendBytes}
	d := &net.Dialer{Timeout: o.DialTimeout, KeepAlive: 15 * time.Second}
	if o.TLS == nil {
		s.network = func(ctx context.Context) (net.Conn, error) { return d.DialContext(ctx, "tcp", o.Addr) }
	} else {
		td := &tls.Dialer{NetDialer: d, Config: o.TLS.Clone()}
		s.network = func(ctx context.Context) (net.Conn, error) { return td.DialContext(ctx, "tcp", o.Addr) }
	}
	return s, nil
}

// Name implements Sink.
func (s *SyslogSink) Name() string { return s.o.Name }

// Send implements Sink: it writes rs as one burst of messages, after any messages the last
// broken connection may have lost, and reconnects as needed.
func (s *SyslogSink) Send(ctx context.Context, rs []*gateway.Record) error {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	c, err := s.current()
	if err != nil {
		return err
	}
	if c != nil {
		if err := probe(c, time.Now()); err != nil {
			s.drop(c)
		}
	}
	if len(rs) == 0 && !s.ring.hasPending() {
		return nil
	}
	buf := s.ring.buffer()
	for _, r := range rs {
		if buf, err = s.f.appendFrame(buf, r); err != nil {
			return fmt.Errorf("siem: %s: %w", s.o.Name, err)
		}
	}
	c, err = s.connect(ctx)
	if err != nil {
		return fmt.Errorf("siem: %s: %w", s.o.Name, err)
	}
	deadline := time.Now().Add(s.o.WriteTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = c.SetWriteDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = c.SetWriteDeadline(time.Unix(1, 0)) })
	defer stop()
	if err := s.ring.writePending(c); err != nil {
		s.drop(c)
		return fmt.Errorf("siem: %s: writing again what the last connection may have lost: %w", s.o.Name, err)
	}
	if len(buf) > 0 {
		if _, err := c.Write(buf); err != nil {
			s.drop(c)
			return fmt.Errorf("siem: %s: %w", s.o.Name, err)
		}
		s.ring.add(buf, time.Now())
	}
	return nil
}

// Close implements Sink.
func (s *SyslogSink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.conn == nil {
		return nil
	}
	err := s.conn.Close()
	s.conn = nil
	return err
}

// current returns the open connection, if any.
func (s *SyslogSink) current() (net.Conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	return s.conn, nil
}

// connect returns the open connection or dials a new one.
func (s *SyslogSink) connect(ctx context.Context) (net.Conn, error) {
	if c, err := s.current(); c != nil || err != nil {
		return c, err
	}
	start := time.Now()
	c, err := s.network(ctx)
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*tls.Conn); ok && tc.ConnectionState().Version == tls.VersionTLS13 {
		// In TLS 1.3 the receiver checks our certificate (or its absence) after the handshake
		// and refuses it with an alert about one round trip later. Wait that long (the handshake
		// took at least two) so that nothing is written, and counted as accepted, on a
		// connection about to be refused, as with an expired client certificate.
		wait := min(max(time.Since(start), 10*time.Millisecond), s.o.DialTimeout)
		if err := probe(c, time.Now().Add(wait)); err != nil {
			_ = c.Close()
			return nil, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = c.Close()
		return nil, ErrClosed
	}
	s.conn = c
	return c, nil
}

// drop closes a broken connection and marks what was recently written on it to be written again.
func (s *SyslogSink) drop(c net.Conn) {
	_ = c.Close()
	s.mu.Lock()
	if s.conn == c {
		s.conn = nil
	}
	s.mu.Unlock()
	s.ring.failed(time.Now())
}

// probe reports an error when the receiver closes or resets the connection (or refuses it with
// a TLS alert) before deadline. Syslog receivers never write, so a read that does not time out
// means the connection is over; data, if a receiver sends any, is ignored.
func probe(c net.Conn, deadline time.Time) error {
	if err := c.SetReadDeadline(deadline); err != nil {
		return err
	}
	var b [64]byte
	_, err := c.Read(b[:])
	_ = c.SetReadDeadline(time.Time{})
	if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		return nil
	}
	return err
}

// resendRing keeps recently written bursts of messages, to write them again after a connection
// breaks. It is owned by the sink's Send.
type resendRing struct {
	window time.Duration
	max    int

	entries []ringEntry
	bytes   int
	spare   [][]byte // evicted buffers, reused for new bursts
}

type ringEntry struct {
	buf     []byte
	at      time.Time // when first written
	pending bool      // to be written on the next connection
}

// buffer returns an empty buffer for the next burst.
func (r *resendRing) buffer() []byte {
	if n := len(r.spare); n > 0 {
		b := r.spare[n-1]
		r.spare = r.spare[:n-1]
		return b[:0]
	}
	return nil
}

// add keeps a burst that was just written.
func (r *resendRing) add(buf []byte, now time.Time) {
	r.entries = append(r.entries, ringEntry{buf: buf, at: now})
	r.bytes += len(buf)
	r.evict(now)
}

// evict forgets the oldest bursts beyond max bytes and those too old to be in doubt.
func (r *resendRing) evict(now time.Time) {
	n := 0
	for n < len(r.entries) {
		e := r.entries[n]
		if r.bytes <= r.max && (e.pending || now.Sub(e.at) <= r.window) {
			break
		}
		r.bytes -= len(e.buf)
		if len(r.spare) < 4 {
			r.spare = append(r.spare, e.buf)
		}
		n++
	}
	if n > 0 {
		r.entries = append(r.entries[:0], r.entries[n:]...)
	}
}

// failed marks the bursts written within the window before now as lost with the connection.
func (r *resendRing) failed(now time.Time) {
	for i := range r.entries {
		if now.Sub(r.entries[i].at) <= r.window {
			r.entries[i].pending = true
		}
	}
	r.evict(now)
}

func (r *resendRing) hasPending() bool {
	for _, e := range r.entries {
		if e.pending {
			return true
		}
	}
	return false
}

// writePending writes the pending bursts, in order, to w.
func (r *resendRing) writePending(w io.Writer) error {
	for _, e := range r.entries {
		if e.pending {
			if _, err := w.Write(e.buf); err != nil {
				return err
			}
		}
	}
	for i := range r.entries {
		r.entries[i].pending = false
	}
	return nil
}
