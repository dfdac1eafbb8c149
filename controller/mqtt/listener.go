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
//
// It also owns its connections' goroutines: Close closes every connection and waits for them.
// mochi's own listener does not, and mochi adds to its client WaitGroup from inside those
// goroutines, racing with the Wait in Server.Close (the race detector reports it when a
// connection is still being set up at Close); waiting here orders every Add before that Wait.
type tlsListener struct {
	id, address    string
	tls            *tls.Config
	connectTimeout time.Duration

	mu     sync.Mutex
	ln     net.Listener
	log    *slog.Logger
	closed bool
	conns  map[net.Conn]struct{} // open connections
	wg     sync.WaitGroup        // their goroutines
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
		if l.closed {
			l.mu.Unlock()
			_ = conn.Close()
			return
		}
		if l.conns == nil {
			l.conns = make(map[net.Conn]struct{})
		}
		l.conns[conn] = struct{}{}
		l.wg.Add(1)
		l.mu.Unlock()
		_ = conn.SetDeadline(time.Now().Add(l.connectTimeout))
		go func() {
			defer l.wg.Done()
			// Every refused or dropped client ends here (bad password, ACL disconnect, EOF).
			if err := establish(l.id, conn); err != nil {
				l.log.Debug("mqtt: client connection ended", "remote", conn.RemoteAddr().String(), "error", err)
			}
			l.mu.Lock()
			delete(l.conns, conn)
			l.mu.Unlock()
		}()
	}
}

func (l *tlsListener) Close(closeClients listeners.CloseFn) {
	l.mu.Lock()
	first := !l.closed
	l.closed = true
	l.mu.Unlock()
	if first {
		closeClients(l.id) // a DISCONNECT to every connected client
	}
	l.mu.Lock()
	if l.ln != nil {
		_ = l.ln.Close()
	}
	for c := range l.conns { // and the ones still in TLS or CONNECT
		_ = c.Close()
	}
	l.mu.Unlock()
	l.wg.Wait()
}
