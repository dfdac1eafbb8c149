package netlab

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
)

// Impairment is what a Responder does to the echo replies it sends. The zero
// value answers at once and drops nothing.
type Impairment struct {
	Delay  time.Duration // added to every reply
	Jitter time.Duration // uniform random in [-Jitter, +Jitter] added to Delay; the sum is never negative
	Loss   float64       // probability in [0, 1] that a request gets no reply
}

// ResponderStats counts what a Responder has done since it started.
type ResponderStats struct {
	Requests uint64 // echo requests received
	Replies  uint64 // echo replies sent; counted before the write, so a receiver never sees a reply that is not counted yet
	Dropped  uint64 // requests left unanswered on purpose (Loss)
	Errors   uint64 // replies the socket refused (e.g. the link is down); not in Replies
}

// Responder answers ICMP echo requests to any address of its namespace from a
// raw socket, in place of the kernel (icmp_echo_ignore_all=1), so that delay,
// jitter and loss can be set at run time without netem.
type Responder struct {
	conn *icmp.PacketConn
	p    *ipv4.PacketConn

	imp atomic.Pointer[Impairment]

	// setAt is when Set last changed the impairment and firstAfter when the first request after
	// it was received (unix ns; 0: none yet): a benchmark's fault phase against the probes.
	setAt, firstAfter atomic.Int64

	requests, replies, dropped, errors atomic.Uint64

	done chan struct{} // closed by Close: pending delayed replies are abandoned
	wg   sync.WaitGroup
	once sync.Once
}

// startResponder opens the raw socket inside ns and starts answering.
func startResponder(ns *NS) (*Responder, error) {
	r := &Responder{done: make(chan struct{})}
	r.imp.Store(&Impairment{})
	err := ns.Do(func() error {
		c, err := icmp.ListenPacket("ip4:icmp", "0.0.0.0")
		if err != nil {
			return err
		}
		r.conn = c
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("netlab.startResponder %s: %w", ns.Name, err)
	}
	r.p = r.conn.IPv4PacketConn()
	// The destination of each request becomes the source of its reply, so
	// a probe of the probe target is answered from the probe target.
	if err := r.p.SetControlMessage(ipv4.FlagDst, true); err != nil {
		r.conn.Close()
		return nil, fmt.Errorf("netlab.startResponder %s: %w", ns.Name, err)
	}
	r.wg.Add(1)
	go r.serve()
	return r, nil
}

// Set changes the impairment for requests received from now on.
func (r *Responder) Set(imp Impairment) {
	imp.Loss = min(max(imp.Loss, 0), 1)
	imp.Delay = max(imp.Delay, 0)
	imp.Jitter = max(imp.Jitter, 0)
	r.firstAfter.Store(0)
	r.setAt.Store(time.Now().UnixNano())
	r.imp.Store(&imp)
}

// FirstRequestAfterSet returns how long after the last Set the first echo request was received
// (the first one the new impairment applied to); false before any Set or before that request.
// A benchmark that sets a fault at a random moment expects it uniform over the probe interval.
func (r *Responder) FirstRequestAfterSet() (time.Duration, bool) {
	set, first := r.setAt.Load(), r.firstAfter.Load()
	if set == 0 || first == 0 {
		return 0, false
	}
	return time.Duration(first - set), true
}

// Impairment returns the current impairment.
func (r *Responder) Impairment() Impairment { return *r.imp.Load() }

// Stats returns the counters.
func (r *Responder) Stats() ResponderStats {
	return ResponderStats{Requests: r.requests.Load(), Replies: r.replies.Load(), Dropped: r.dropped.Load(), Errors: r.errors.Load()}
}

// Close closes the socket, abandons replies still waiting for their delay and
// waits for every goroutine of the responder to end.
func (r *Responder) Close() error {
	var err error
	r.once.Do(func() {
		close(r.done)
		err = r.conn.Close()
		r.wg.Wait()
	})
	return err
}

func (r *Responder) serve() {
	defer r.wg.Done()
	buf := make([]byte, 65536)
	for {
		n, cm, src, err := r.p.ReadFrom(buf)
		at := time.Now().UnixNano()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			select {
			case <-r.done:
				return
			default:
				continue
			}
		}
		// Type 8, code 0: an echo request. Everything else (including
		// replies to the namespace's own pings) is not ours to answer.
		if n < 8 || buf[0] != byte(ipv4.ICMPTypeEcho) || buf[1] != 0 {
			continue
		}
		msg, err := icmp.ParseMessage(1, buf[:n])
		if err != nil {
			continue
		}
		echo, ok := msg.Body.(*icmp.Echo)
		if !ok {
			continue
		}
		r.requests.Add(1)
		imp := r.imp.Load()
		if set := r.setAt.Load(); set != 0 && at >= set && r.firstAfter.Load() == 0 {
			r.firstAfter.CompareAndSwap(0, at)
		}
		if imp.Loss > 0 && rand.Float64() < imp.Loss {
			r.dropped.Add(1)
			continue
		}
		reply, err := (&icmp.Message{
			Type: ipv4.ICMPTypeEchoReply,
			Body: &icmp.Echo{ID: echo.ID, Seq: echo.Seq, Data: echo.Data}, // Data is copied by Marshal
		}).Marshal(nil)
		if err != nil {
			continue
		}
		var out *ipv4.ControlMessage
		if cm != nil && cm.Dst != nil && !cm.Dst.IsMulticast() && !cm.Dst.Equal(net.IPv4bcast) {
			out = &ipv4.ControlMessage{Src: cm.Dst}
		}
		d := delay(imp)
		if d <= 0 {
			r.send(reply, out, src)
			continue
		}
		// One timer per reply: replies overtake each other under jitter,
		// as they do on a real path.
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-t.C:
				r.send(reply, out, src)
			case <-r.done:
			}
		}()
	}
}

func (r *Responder) send(b []byte, cm *ipv4.ControlMessage, dst net.Addr) {
	r.replies.Add(1)
	if _, err := r.p.WriteTo(b, cm, dst); err != nil {
		r.replies.Add(^uint64(0))
		r.errors.Add(1)
	}
}

// delay draws the delay of one reply.
func delay(imp *Impairment) time.Duration {
	d := imp.Delay
	if imp.Jitter > 0 {
		d += time.Duration(rand.Int64N(2*int64(imp.Jitter)+1)) - imp.Jitter
	}
	return max(d, 0)
}
