package netlab

import (
	"bytes"
	"crypto/rand"
	"errors"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
)

// pinger sends ICMP echo from a raw socket opened in a namespace, bound to a
// source address, as the agent's prober does.
type pinger struct {
	t    testing.TB
	c    *icmp.PacketConn
	id   int
	sent map[int]sentEcho
}

type sentEcho struct {
	at   time.Time
	data []byte
}

type echoReply struct {
	seq  int
	rtt  time.Duration
	from netip.Addr
}

func openPinger(t testing.TB, ns *NS, src netip.Addr) *pinger {
	t.Helper()
	var c *icmp.PacketConn
	err := ns.Do(func() (err error) {
		c, err = icmp.ListenPacket("ip4:icmp", src.String())
		return err
	})
	if err != nil {
		t.Fatalf("pinger in %s from %s: %v", ns.Name, src, err)
	}
	t.Cleanup(func() { c.Close() })
	var id [2]byte
	rand.Read(id[:])
	return &pinger{t: t, c: c, id: int(id[0])<<8 | int(id[1]), sent: map[int]sentEcho{}}
}

// send sends echo request seq to dst with a random payload.
func (p *pinger) send(dst netip.Addr, seq int) error {
	data := make([]byte, 24)
	rand.Read(data)
	b, err := (&icmp.Message{Type: ipv4.ICMPTypeEcho, Body: &icmp.Echo{ID: p.id, Seq: seq, Data: data}}).Marshal(nil)
	if err != nil {
		return err
	}
	p.sent[seq] = sentEcho{at: time.Now(), data: data}
	_, err = p.c.WriteTo(b, &net.IPAddr{IP: dst.AsSlice()})
	return err
}

// collect reads replies to this pinger's requests, in arrival order, until n
// have arrived or wait has passed. A reply must echo ID, Seq and Data exactly.
func (p *pinger) collect(n int, wait time.Duration) []echoReply {
	p.t.Helper()
	var got []echoReply
	deadline := time.Now().Add(wait)
	buf := make([]byte, 1500)
	for len(got) < n {
		if err := p.c.SetReadDeadline(deadline); err != nil {
			p.t.Fatal(err)
		}
		nr, from, err := p.c.ReadFrom(buf)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return got
		}
		if err != nil {
			p.t.Fatalf("read: %v", err)
		}
		now := time.Now()
		m, err := icmp.ParseMessage(1, buf[:nr])
		if err != nil || m.Type != ipv4.ICMPTypeEchoReply {
			continue
		}
		e, ok := m.Body.(*icmp.Echo)
		if !ok || e.ID != p.id {
			continue
		}
		s, ok := p.sent[e.Seq]
		if !ok {
			continue
		}
		if !bytes.Equal(e.Data, s.data) {
			p.t.Errorf("reply seq %d: data %x; want %x", e.Seq, e.Data, s.data)
			continue
		}
		addr, _ := netip.AddrFromSlice(from.(*net.IPAddr).IP)
		got = append(got, echoReply{seq: e.Seq, rtt: now.Sub(s.at), from: addr.Unmap()})
	}
	return got
}

// pingN sends count requests one at a time, each waiting up to wait for its
// reply, and returns the replies.
func (p *pinger) pingN(dst netip.Addr, firstSeq, count int, wait time.Duration) []echoReply {
	p.t.Helper()
	var got []echoReply
	for seq := firstSeq; seq < firstSeq+count; seq++ {
		if err := p.send(dst, seq); err != nil {
			continue // a link without carrier may refuse at once: no reply
		}
		got = append(got, p.collect(1, wait)...)
	}
	return got
}

// await polls cond until it holds or timeout passes: for conditions that no
// event announces.
func await(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still not %s after %v", what, timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
