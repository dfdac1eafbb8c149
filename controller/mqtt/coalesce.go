package mqtt

import (
	"net"
	"time"
)

// DefaultNATSReadCoalesce is the default of NATSOptions.ReadCoalesce (docs/benchmarks.md,
// "Read coalescing").
const DefaultNATSReadCoalesce = 20 * time.Millisecond

// coalescingDialer dials connections whose reads are coalesced over d (coalescingConn); it is
// the NATS connection's dialer (nats.SetCustomDialer), so every reconnect gets one too.
type coalescingDialer struct {
	net.Dialer
	d time.Duration
}

func (cd *coalescingDialer) Dial(network, address string) (net.Conn, error) {
	c, err := cd.Dialer.Dial(network, address)
	if err != nil {
		return nil, err
	}
	return &coalescingConn{Conn: c, d: cd.d, blocked: cd.d}, nil
}

// coalescingConn coalesces reads as a NIC moderates interrupts: while messages come closer
// together than d (the previous Read found data within d of being called), a Read first waits
// out the rest of d since the previous one returned, so one read syscall and one wake-up of
// the reading goroutine take every message that arrived meanwhile, instead of one each. A
// lightly loaded controller otherwise pays a read, a netpoller wake-up and a thread wake-up per
// message that a busier one shares among several (docs/benchmarks.md, "the 1 -> 3 rise").
// Messages further apart than d (an idle connection: heartbeats, PINGs) are read at once: a
// wait there would only add the timer's own wake-up. A message waits at most d more; a Read
// that filled its buffer does not wait (more is pending: the throughput is never capped).
// Only Read is changed: writes (the client's flusher, PONGs) go out at once. Reads come from
// one goroutine (nats.go's readLoop), so the fields need no lock.
type coalescingConn struct {
	net.Conn
	d       time.Duration
	last    time.Time     // when the previous Read returned
	blocked time.Duration // how long the previous Read waited for data; d before the first
	full    bool          // the previous Read filled its buffer
}

func (c *coalescingConn) Read(p []byte) (int, error) {
	if !c.full && c.blocked < c.d {
		if w := c.d - time.Since(c.last); w > 0 {
			time.Sleep(w)
		}
	}
	start := time.Now()
	n, err := c.Conn.Read(p)
	c.last = time.Now()
	c.blocked, c.full = c.last.Sub(start), n == len(p)
	return n, err
}
