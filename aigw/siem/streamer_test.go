package siem

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/edgewan/edgewan/aigw/gateway"
	"github.com/edgewan/edgewan/controller/store/storetest"
)

// TestDeadSinkDoesNotDelayLive streams to a live syslog receiver beside an HTTP receiver that
// never answers and a syslog address that refuses connections: the live one gets everything
// while the others are stuck, and stopping the Streamer interrupts the stuck request.
func TestDeadSinkDoesNotDelayLive(t *testing.T) {
	st := storetest.SQLite(t)
	insert(t, st, 1, 50)

	live := startReceiver(t, "127.0.0.1:0", nil, 0)
	entered := make(chan struct{}, 100)
	var returned atomic.Int32
	returnedCh := make(chan struct{}, 100)
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // the server notices the client leaving only once the body is read
		entered <- struct{}{}
		<-r.Context().Done() // never answers; the client gives up
		returned.Add(1)
		returnedCh <- struct{}{}
	}))
	t.Cleanup(hung.Close) // after the Streamer stopped (cleanups run last first), or it would wait forever
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refusing := ln.Addr().String()
	ln.Close()

	var sinks []Sink
	for _, u := range []string{"syslog+tcp://" + live.addr(), hung.URL + "/hang?timeout=1h", "syslog+tcp://" + refusing} {
		k, err := ParseSinkURL(u)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k.Close() })
		sinks = append(sinks, k)
	}
	refused := &failSink{Sink: sinks[2], failed: make(chan error, 1)}
	sinks[2] = refused
	reg := prometheus.NewRegistry()
	o := testOptions(10)
	o.Registerer = reg
	s, err := New(st.Gateway(), sinks, newWatchedCursors(t, filepath.Join(t.TempDir(), CursorFile)), o)
	if err != nil {
		t.Fatal(err)
	}
	stop := start(t, s)

	select {
	case <-entered:
	case <-time.After(wait):
		t.Fatal("the hung receiver got no request")
	}
	for want := int64(1); want <= 50; want++ {
		if m := live.next(t); m.Record.Seq != want {
			t.Fatalf("live sink: got seq %d; want %d", m.Record.Seq, want)
		}
	}
	if n := returned.Load(); n != 0 {
		t.Fatalf("the hung request returned %d times before the live sink was done; want it still stuck", n)
	}
	if got := gauge(t, reg, "edgewan_siem_lag_records", sinks[1].Name()); got != 50 {
		t.Errorf("lag of the hung sink: got %v; want 50", got)
	}
	select {
	case <-refused.failed:
	case <-time.After(wait):
		t.Fatal("the refused sink never failed")
	}
	if got := failures(t, reg, sinks[2].Name(), "send"); got == 0 {
		t.Errorf("failures of the refused sink: got 0; want some")
	}

	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(wait):
		t.Fatal("Run did not return with a sink stuck in Send")
	}
	select {
	case <-returnedCh:
	case <-time.After(wait):
		t.Fatal("the hung request was not cancelled by the stop")
	}
}

// stubSink is a Sink that only has a name.
type stubSink string

func (s stubSink) Name() string                                  { return string(s) }
func (s stubSink) Send(context.Context, []*gateway.Record) error { return nil }
func (s stubSink) Close() error                                  { return nil }

func TestNewRejectsDuplicateNames(t *testing.T) {
	cursors, err := OpenFileCursors(filepath.Join(t.TempDir(), CursorFile))
	if err != nil {
		t.Fatal(err)
	}
	st := storetest.SQLite(t)
	for _, tc := range []struct {
		name  string
		sinks []Sink
		ok    bool
	}{
		{name: "distinct", sinks: []Sink{stubSink("a"), stubSink("b")}, ok: true},
		{name: "none", ok: true},
		{name: "twice", sinks: []Sink{stubSink("a"), stubSink("a")}},
		{name: "empty", sinks: []Sink{stubSink("")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(st.Gateway(), tc.sinks, cursors, Options{})
			if (err == nil) != tc.ok {
				t.Fatalf("New: got %v; want ok %v", err, tc.ok)
			}
			if s != nil {
				s.Notify() // never blocks, running or not
				s.Notify()
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	s := &Streamer{o: Options{RetryBase: time.Second, RetryMax: time.Minute}}
	for _, tc := range []struct {
		n        int
		min, max time.Duration
	}{
		{n: 1, min: 500 * time.Millisecond, max: time.Second},
		{n: 2, min: time.Second, max: 2 * time.Second},
		{n: 7, min: 30 * time.Second, max: time.Minute},
		{n: 100, min: 30 * time.Second, max: time.Minute},
	} {
		for range 100 {
			if d := s.backoff(tc.n); d < tc.min || d > tc.max {
				t.Fatalf("backoff(%d): got %v; want between %v and %v", tc.n, d, tc.min, tc.max)
			}
		}
	}
}

// TestRunAgain: a Streamer runs again after a run ended (a controller that gets the SIEM job
// back, docs/scale-out.md), from the stored cursor: nothing sent twice, nothing skipped.
func TestRunAgain(t *testing.T) {
	st := storetest.SQLite(t)
	insert(t, st, 1, 10)
	live := startReceiver(t, "127.0.0.1:0", nil, 0)
	k, err := ParseSinkURL("syslog+tcp://" + live.addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.Close() })
	s, err := New(st.Gateway(), []Sink{k}, st.SIEMCursors(), testOptions(4))
	if err != nil {
		t.Fatal(err)
	}
	for run, seqs := range [][2]int64{{1, 10}, {11, 20}} {
		if run > 0 {
			insert(t, st, seqs[0], seqs[1])
		}
		stop := start(t, s)
		for want := seqs[0]; want <= seqs[1]; want++ {
			if m := live.next(t); m.Record.Seq != want {
				t.Fatalf("run %d: got seq %d; want %d", run+1, m.Record.Seq, want)
			}
		}
		// The cursor is stored once the sink accepted the batch, a moment after it arrived.
		for deadline := time.Now().Add(wait); ; time.Sleep(10 * time.Millisecond) {
			if c, _ := st.SIEMCursors().Cursor(context.Background(), k.Name()); c == seqs[1] {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("run %d: the cursor did not reach %d", run+1, seqs[1])
			}
		}
		stop()
	}
}
