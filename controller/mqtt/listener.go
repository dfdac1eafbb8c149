package mqtt

import (
	"crypto/tls"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/mochi-mqtt/server/v2/listeners"
)

// tlsListener is mochi's TCP listener with TLS mandatory and a deadline on every new
// connection: mochi sets no read deadline until it has a CONNECT packet, so without one a
// client that never finishes the TLS handshake or never sends CONNECT holds a goroutine and a
// socket forever. mochi replaces the deadline with the keepalive one once CONNECT is read.
type tlsListener struct {
	id, address    string
	tls            *tls.Config
	connectTimeout time.Duration

	mu     sync.Mutex
	ln     net.Listener
	log    *slog.Logger
	closed bool
}

var _ listeners.Listener = (*tlsListener)(nil)

func (l *tlsListener) ID() string       { return l.id }
func (l *tlsListener) Protocol() string { return "tls" }

func (l *tlsListener) Address() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ln != nil {
		return l.ln.Addr().String()
	}
	return l.address
}

func (l *tlsListener) Init(log *slog.Logger) error {
	ln, err := net.Listen("tcp", l.address)
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.ln = tls.NewListener(ln, l.tls)
	l.log = log
	l.mu.Unlock()
	return nil
}

func (l *tlsListener) Serve(establish listeners.EstablishFn) {
	l.mu.Lock()
	ln := l.ln
	l.mu.Unlock()
	if ln == nil {
		return
	}
	for {
		conn, err := ln.Accept()
		if err != nil {
			return // closed
		}
		l.mu.Lock()
		closed := l.closed
		l.mu.Unlock()
		if closed {
			_ = conn.Close()
			return
		}
		_ = conn.SetDeadline(time.Now().Add(l.connectTimeout))
		go func() {
			// Every refused or dropped client ends here (bad password, ACL disconnect, EOF).
			if err := establish(l.id, conn); err != nil {
				l.log.Debug("mqtt: client connection ended", "remote", conn.RemoteAddr().String(), "error", err)
			}
		}()
	}
}

func (l *tlsListener) Close(closeClients listeners.CloseFn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.closed = true
		closeClients(l.id)
	}
	if l.ln != nil {
		_ = l.ln.Close()
	}
}
