package mqtt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// TestCoalescingConn reads, over real TCP on loopback, messages written one write at a time
// (paced, as a NATS server delivers them to a lightly loaded controller) and in bursts larger
// than the reader's buffer: every byte arrives, in order, and a paced run is taken in fewer
// reads than messages. Latency is not asserted (timing goals go in benchmarks:
// BenchmarkNATSBusConsume's paced mode).
func TestCoalescingConn(t *testing.T) {
	tests := []struct {
		name  string
		msgs  int
		size  int           // bytes per message
		pace  time.Duration // between writes; 0: all in one write
		buf   int           // the reader's buffer
		fewer bool          // reads must be at most a quarter of the messages
		d     time.Duration // the coalescing window
	}{
		{name: "paced run", msgs: 200, size: 100, pace: 200 * time.Microsecond, buf: 32 << 10, d: 20 * time.Millisecond, fewer: true},
		{name: "burst larger than the buffer", msgs: 50, size: 4000, buf: 1024, d: 20 * time.Millisecond},
		{name: "a lone message", msgs: 1, size: 600, buf: 32 << 10, d: 20 * time.Millisecond},
		{name: "paced, larger than the buffer", msgs: 100, size: 3000, pace: 100 * time.Microsecond, buf: 1024, d: 5 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			var want bytes.Buffer
			for i := range tc.msgs { // each message: its number, then filler
				m := make([]byte, tc.size)
				binary.BigEndian.PutUint32(m, uint32(i))
				for j := 4; j < len(m); j++ {
					m[j] = byte(i + j)
				}
				want.Write(m)
			}
			wrote := make(chan error, 1)
			go func() {
				c, err := ln.Accept()
				if err != nil {
					wrote <- err
					return
				}
				defer c.Close()
				if tc.pace == 0 {
					_, err = c.Write(want.Bytes())
					wrote <- err
					return
				}
				for i := range tc.msgs {
					if _, err := c.Write(want.Bytes()[i*tc.size : (i+1)*tc.size]); err != nil {
						wrote <- err
						return
					}
					time.Sleep(tc.pace)
				}
				wrote <- nil
			}()
			cd := &coalescingDialer{Dialer: net.Dialer{Timeout: 5 * time.Second}, d: tc.d}
			c, err := cd.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, ok := c.(*coalescingConn); !ok {
				t.Fatalf("Dial returned a %T, want a *coalescingConn", c)
			}
			// A deadline against a hang only: far beyond any coalescing window.
			if err := c.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			buf := make([]byte, tc.buf)
			reads := 0
			for {
				n, err := c.Read(buf)
				reads++
				got.Write(buf[:n])
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatalf("read %d, after %d of %d bytes: %v", reads, got.Len(), want.Len(), err)
				}
			}
			if err := <-wrote; err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Fatalf("got %d bytes, want %d; first difference at %d", got.Len(), want.Len(), firstDiff(got.Bytes(), want.Bytes()))
			}
			t.Logf("%d messages of %d bytes in %d reads", tc.msgs, tc.size, reads)
			if tc.fewer && reads-1 > tc.msgs/4 { // the last read is the EOF
				t.Fatalf("%d messages took %d reads: not coalesced", tc.msgs, reads-1)
			}
		})
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestCoalescingConnIdle: a message that comes after a pause longer than the window (an idle
// connection's heartbeat) marks the connection idle, so the next Read does not wait first (it
// would only add the timer's wake-up).
func TestCoalescingConnIdle(t *testing.T) {
	const d = 10 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	next := make(chan struct{})
	wrote := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			wrote <- err
			return
		}
		defer c.Close()
		for _, m := range []string{"a", "b"} {
			<-next
			if m == "b" {
				time.Sleep(3 * d) // the pause of an idle connection (pacing the writer, not a sync)
			}
			if _, err := c.Write([]byte(m)); err != nil {
				wrote <- err
				return
			}
		}
		wrote <- nil
	}()
	c, err := (&coalescingDialer{Dialer: net.Dialer{Timeout: 5 * time.Second}, d: d}).Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cc := c.(*coalescingConn)
	buf := make([]byte, 16)
	for _, want := range []string{"a", "b"} {
		next <- struct{}{}
		n, err := c.Read(buf)
		if err != nil || string(buf[:n]) != want {
			t.Fatalf("read %q, %v; want %q", buf[:n], err, want)
		}
	}
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if cc.blocked < d {
		t.Fatalf("the read after a pause of %v blocked %v: want the connection taken as idle (at least %v)", 3*d, cc.blocked, d)
	}
}
