package siem

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/edgewan/edgewan/aigw/gateway"
	"github.com/edgewan/edgewan/controller/store/storetest"
)

// TestSyslog streams over TCP and over TLS with a client certificate to a strict receiver:
// every record arrives once, in order, well formed, and the cursor and metrics follow.
func TestSyslog(t *testing.T) {
	for _, tc := range []struct {
		name string
		tls  bool
	}{
		{name: "tcp"},
		{name: "tls", tls: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := storetest.SQLite(t)
			insert(t, st, 1, 40)
			var url string
			var rcv *syslogReceiver
			if tc.tls {
				p := newPKI(t)
				rcv = startReceiver(t, "127.0.0.1:0", p.server, 0)
				url = "syslog+tls://" + rcv.addr() + "?facility=local3&hostname=gw-1&ca=" + p.caFile + "&cert=" + p.certFile + "&key=" + p.keyFile
			} else {
				rcv = startReceiver(t, "127.0.0.1:0", nil, 0)
				url = "syslog+tcp://" + rcv.addr() + "?facility=local3&hostname=gw-1"
			}
			sink, err := ParseSinkURL(url)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = sink.Close() })
			cursors := newWatchedCursors(t, filepath.Join(t.TempDir(), CursorFile))
			reg := prometheus.NewRegistry()
			o := testOptions(7)
			o.Registerer = reg
			s, err := New(st.Gateway(), []Sink{sink}, cursors, o)
			if err != nil {
				t.Fatal(err)
			}
			start(t, s)

			for want := int64(1); want <= 40; want++ {
				m := rcv.next(t)
				if m.Record.Seq != want {
					t.Fatalf("got seq %d; want %d", m.Record.Seq, want)
				}
				checkMessage(t, m, 19, "gw-1")
			}
			cursors.waitFor(t, sink.Name(), 40)

			// Records arriving later follow at once on Notify.
			insert(t, st, 41, 45)
			s.Notify()
			for want := int64(41); want <= 45; want++ {
				if m := rcv.next(t); m.Record.Seq != want {
					t.Fatalf("got seq %d; want %d", m.Record.Seq, want)
				}
			}
			cursors.waitFor(t, sink.Name(), 45)
			if got := gauge(t, reg, "edgewan_siem_lag_records", sink.Name()); got != 0 {
				t.Errorf("lag: got %v; want 0", got)
			}
			if got := gauge(t, reg, "edgewan_siem_records_sent_total", sink.Name()); got != 45 {
				t.Errorf("sent: got %v; want 45", got)
			}
			select {
			case m := <-rcv.msgs:
				t.Errorf("unexpected message %d: nothing failed, nothing is sent twice", m.Record.Seq)
			default:
			}
		})
	}
}

// TestSyslogReceiverRestart kills the receiver mid-stream, losing what it had not read, and
// starts another on the same address: every record still arrives (some twice). A new Streamer
// on the same cursor file then sends only the records that came after.
func TestSyslogReceiverRestart(t *testing.T) {
	for _, tc := range []struct {
		name string
		tls  bool
	}{
		{name: "tcp"},
		{name: "tls", tls: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := storetest.SQLite(t)
			insert(t, st, 1, 300)
			var p *pki
			if tc.tls {
				p = newPKI(t)
			}
			receiver := func(addr string, dieAfter int) *syslogReceiver {
				if p != nil {
					return startReceiver(t, addr, p.server, dieAfter)
				}
				return startReceiver(t, addr, nil, dieAfter)
			}
			url := func(addr string) string {
				if p != nil {
					return "syslog+tls://" + addr + "?name=siem-main&ca=" + p.caFile + "&cert=" + p.certFile + "&key=" + p.keyFile
				}
				return "syslog+tcp://" + addr + "?name=siem-main"
			}
			cursorPath := filepath.Join(t.TempDir(), CursorFile)

			first := receiver("127.0.0.1:0", 70)
			addr := first.addr()
			inner, err := ParseSinkURL(url(addr))
			if err != nil {
				t.Fatal(err)
			}
			sink := &failSink{Sink: inner, failed: make(chan error, 1)}
			cursors := newWatchedCursors(t, cursorPath)
			s, err := New(st.Gateway(), []Sink{sink}, cursors, testOptions(10))
			if err != nil {
				t.Fatal(err)
			}
			stop := start(t, s)

			select {
			case <-first.died:
			case <-time.After(wait):
				t.Fatalf("the first receiver did not get 70 messages within %v", wait)
			}
			// The sink notices and fails to reconnect (nothing listens) before the next receiver starts.
			select {
			case err := <-sink.failed:
				t.Logf("sink failed as expected: %v", err)
			case <-time.After(wait):
				t.Fatalf("the sink did not fail within %v of the receiver's death", wait)
			}
			second := receiver(addr, 0)

			got := map[int64]int{}
			var firstSeqs []int64
			for len(first.msgs) > 0 {
				m := <-first.msgs
				firstSeqs = append(firstSeqs, m.Record.Seq)
				got[m.Record.Seq]++
			}
			if !slices.Equal(firstSeqs, span(1, 70)) {
				t.Fatalf("first receiver: got %v; want 1..70", firstSeqs)
			}
			deadline := time.After(wait)
			for len(got) < 300 {
				var m *syslogMsg
				select {
				case m = <-second.msgs:
				case <-deadline:
					var missing []int64
					for seq := int64(1); seq <= 300; seq++ {
						if got[seq] == 0 {
							missing = append(missing, seq)
						}
					}
					t.Fatalf("records never delivered: %v", missing)
				}
				checkMessage(t, m, 16, m.Hostname)
				got[m.Record.Seq]++
			}
			for seq := range got {
				if seq < 1 || seq > 300 {
					t.Errorf("unexpected seq %d", seq)
				}
			}
			dups := 0
			for _, n := range got {
				dups += n - 1
			}
			t.Logf("300 records delivered, %d of them twice or more", dups)
			cursors.waitFor(t, "siem-main", 300)
			stop()
			_ = sink.Close()

			// Restart: a new Streamer and sink with the same name and cursor file.
			insert(t, st, 301, 320)
			third := receiver("127.0.0.1:0", 0)
			sink2, err := ParseSinkURL(url(third.addr()))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = sink2.Close() })
			cursors2 := newWatchedCursors(t, cursorPath)
			s2, err := New(st.Gateway(), []Sink{sink2}, cursors2, testOptions(10))
			if err != nil {
				t.Fatal(err)
			}
			start(t, s2)
			for want := int64(301); want <= 320; want++ {
				if m := third.next(t); m.Record.Seq != want {
					t.Fatalf("after restart: got seq %d; want %d (resuming from the stored cursor)", m.Record.Seq, want)
				}
			}
			cursors2.waitFor(t, "siem-main", 320)
		})
	}
}

// TestSyslogTLSVerifies refuses a receiver whose certificate the configured CA did not sign.
func TestSyslogTLSVerifies(t *testing.T) {
	trusted, other := newPKI(t), newPKI(t)
	rcv := startReceiver(t, "127.0.0.1:0", other.server, 0)
	sink, err := ParseSinkURL("syslog+tls://" + rcv.addr() + "?ca=" + trusted.caFile + "&cert=" + trusted.certFile + "&key=" + trusted.keyFile)
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	err = sink.Send(context.Background(), []*gateway.Record{record(1)})
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("Send: got %v; want a certificate verification error", err)
	}
}

// gauge returns the value of a metric with the sink label.
func gauge(t *testing.T, reg *prometheus.Registry, name, sink string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if labelIs(m, "sink", sink) {
				if m.GetCounter() != nil {
					return m.GetCounter().GetValue()
				}
				return m.GetGauge().GetValue()
			}
		}
	}
	t.Fatalf("no metric %s{sink=%q}", name, sink)
	return 0
}

func labelIs(m *dto.Metric, k, v string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == k && l.GetValue() == v {
			return true
		}
	}
	return false
}

// TestSyslogTLSClientCertRefused: a receiver that refuses the client (here: no certificate)
// does so after a TLS 1.3 handshake; Send must fail rather than count the records as accepted.
func TestSyslogTLSClientCertRefused(t *testing.T) {
	p := newPKI(t)
	rcv := startReceiver(t, "127.0.0.1:0", p.server, 0)
	sink, err := ParseSinkURL("syslog+tls://" + rcv.addr() + "?ca=" + p.caFile)
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	if err := sink.Send(context.Background(), []*gateway.Record{record(1)}); err == nil {
		t.Fatal("Send without the client certificate the receiver requires: got nil; want an error")
	}
	select {
	case err := <-rcv.handshakeErrs:
		if !strings.Contains(err.Error(), "certificate") {
			t.Errorf("receiver's handshake error: got %v; want one about the certificate", err)
		}
	case <-time.After(wait):
		t.Fatal("the receiver saw no handshake")
	}
}

func TestResendRing(t *testing.T) {
	t0 := time.Unix(1000, 0)
	r := resendRing{window: time.Minute, max: 10}
	r.add([]byte("aa"), t0)                     // old by the failure
	r.add([]byte("bb"), t0.Add(50*time.Second)) // in the window
	r.add([]byte("cc"), t0.Add(70*time.Second)) // in the window
	r.failed(t0.Add(100 * time.Second))
	var w strings.Builder
	if err := r.writePending(&w); err != nil {
		t.Fatal(err)
	}
	if w.String() != "bbcc" {
		t.Errorf("written again: got %q; want %q", w.String(), "bbcc")
	}
	if r.hasPending() {
		t.Errorf("pending after writing: got true; want false")
	}
	w.Reset()
	if err := r.writePending(&w); err != nil || w.Len() != 0 {
		t.Errorf("second writePending: got %q, %v; want nothing", w.String(), err)
	}

	// Pending bursts wait however long reconnecting takes, but not beyond max bytes.
	r.failed(t0.Add(110 * time.Second))
	r.add([]byte("dddd"), t0.Add(time.Hour))
	r.add([]byte("eeee"), t0.Add(time.Hour))
	r.add([]byte("ffff"), t0.Add(time.Hour))
	r.failed(t0.Add(time.Hour))
	w.Reset()
	_ = r.writePending(&w)
	if w.String() != "eeeeffff" {
		t.Errorf("written again: got %q; want %q (bb, cc and dddd beyond 10 bytes)", w.String(), "eeeeffff")
	}
}
