package server

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/edgewan/edgewan/controller/config"
)

// loadTLSFrom is the TLS configuration a controller with dataDir starts with.
func loadTLSFrom(t *testing.T, dataDir string) (*tls.Config, string) {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir = dataDir
	s := &Server{cfg: cfg}
	if err := s.loadTLS(); err != nil {
		t.Fatal(err)
	}
	return s.tls, s.caPEM
}

// handshake connects to a TLS server with srv, reads one byte (a TLS 1.3 session ticket comes
// after the handshake: reading processes it) and reports whether the session was resumed.
func handshake(t *testing.T, srv, cli *tls.Config) bool {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", srv)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = c.Write([]byte{1})
		_, _ = io.Copy(io.Discard, c) // until the client closes
	}()
	c, err := tls.Dial("tcp", ln.Addr().String(), cli)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	return c.ConnectionState().DidResume
}

// A client's TLS session resumes on a restarted controller (same key pair: same ticket key),
// not on one with another key pair.
func TestSessionTicketsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	first, caPEM := loadTLSFrom(t, dir)
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(caPEM)) {
		t.Fatal("no CA")
	}
	host, _, _ := net.SplitHostPort("127.0.0.1:0")
	cli := &tls.Config{RootCAs: pool, ServerName: host, ClientSessionCache: tls.NewLRUClientSessionCache(1)}
	if handshake(t, first, cli) {
		t.Fatal("the first connection resumed a session it never had")
	}
	restarted, _ := loadTLSFrom(t, dir)
	if !handshake(t, restarted, cli) {
		t.Fatal("the session did not resume on the restarted controller")
	}
	other, otherCA := loadTLSFrom(t, t.TempDir()) // another controller: its own CA and key
	if !pool.AppendCertsFromPEM([]byte(otherCA)) {
		t.Fatal("no CA")
	}
	if handshake(t, other, cli) {
		t.Fatal("a session resumed on a controller with another key pair")
	}
}

// BenchmarkHandshake is one agent's TLS connection to the controller's broker certificate, the
// client's and the server's work together (both in this process, over loopback): a full
// handshake (first connection, or an agent without a session cache) against a resumed one
// (every reconnect of an agent with a cache, also after a controller restart).
//
//	go test -run '^$' -bench BenchmarkHandshake -benchtime 2000x ./controller/server/
func BenchmarkHandshake(b *testing.B) {
	srv, caPEM := loadTLSFrom(&testing.T{}, b.TempDir())
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM([]byte(caPEM))
	ln, err := tls.Listen("tcp", "127.0.0.1:0", srv)
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = c.Write([]byte{1})
				_, _ = io.Copy(io.Discard, c)
			}()
		}
	}()
	for _, resume := range []bool{false, true} {
		name := "full"
		if resume {
			name = "resumed"
		}
		b.Run(name, func(b *testing.B) {
			cli := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"} // Go's defaults, as the agent
			one := make([]byte, 1)
			connect := func(resume bool) {
				c, err := tls.Dial("tcp", ln.Addr().String(), cli)
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				if _, err := io.ReadFull(c, one); err != nil { // also takes in the session ticket
					b.Fatal(err)
				}
				if resume != c.ConnectionState().DidResume {
					b.Fatalf("resumed: %v, want %v", c.ConnectionState().DidResume, resume)
				}
			}
			if resume { // not timed: the first connection gets the ticket
				cli.ClientSessionCache = tls.NewLRUClientSessionCache(1)
				connect(false)
			}
			cpu0 := processCPU(b)
			for b.Loop() {
				connect(resume)
			}
			// CPU, not wall time: on a shared machine the wall time includes others' work.
			b.ReportMetric(float64((processCPU(b)-cpu0).Microseconds())/float64(b.N), "cpu-us/op")
		})
	}
}

// processCPU is the user and system CPU this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
