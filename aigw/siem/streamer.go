package siem

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/edgewan/edgewan/aigw/gateway"
)

// Options configure a Streamer. Zero values take the defaults named.
type Options struct {
	Batch        int                   // records read and sent at a time per sink; default 256
	PollInterval time.Duration         // how often an idle sink looks for new records (and checks its connection); default 1s
	RetryBase    time.Duration         // wait after a first failure, doubling with each further one; default 1s
	RetryMax     time.Duration         // longest wait between attempts; default 1m
	Logger       *slog.Logger          // default slog.Default()
	Registerer   prometheus.Registerer // nil: metrics are kept but not registered
}

func (o *Options) defaults() {
	if o.Batch <= 0 {
		o.Batch = 256
	}
	if o.PollInterval <= 0 {
		o.PollInterval = time.Second
	}
	if o.RetryBase <= 0 {
		o.RetryBase = time.Second
	}
	if o.RetryMax <= 0 {
		o.RetryMax = time.Minute
	}
	if o.RetryMax < o.RetryBase {
		o.RetryMax = o.RetryBase
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Streamer sends the audit log to sinks. Each sink has its own goroutine and cursor, so a slow
// or dead sink never delays the others: it reads the records after its cursor, sends them, and
// moves and stores its cursor only once the sink accepted them all; on failure it tries the
// same records again after a backoff. Every record therefore reaches every sink at least once
// (more than once after failures, or when the process stops between a send and the cursor write).
type Streamer struct {
	src     Source
	cursors CursorStore
	o       Options
	lanes   []*lane
	head    atomic.Int64 // the highest Seq read from src
	m       *metrics
	running atomic.Bool
}

// lane is one sink's state.
type lane struct {
	sink   Sink
	name   string
	wake   chan struct{}
	cursor atomic.Int64 // -1 until read from the cursor store
}

// New returns a Streamer sending src's records to sinks, with cursors kept in cursors.
func New(src Source, sinks []Sink, cursors CursorStore, o Options) (*Streamer, error) {
	if src == nil || cursors == nil {
		return nil, errors.New("siem.New: a source and a cursor store are required")
	}
	o.defaults()
	s := &Streamer{src: src, cursors: cursors, o: o}
	seen := map[string]bool{}
	for _, k := range sinks {
		name := k.Name()
		if name == "" || seen[name] {
			return nil, fmt.Errorf("siem.New: sink name %q is empty or used twice (names key the cursors)", name)
		}
		seen[name] = true
		l := &lane{sink: k, name: name, wake: make(chan struct{}, 1)}
		l.cursor.Store(-1)
		s.lanes = append(s.lanes, l)
	}
	s.m = newMetrics(s)
	if o.Registerer != nil {
		if err := s.m.register(o.Registerer); err != nil {
			return nil, fmt.Errorf("siem.New: %w", err)
		}
	}
	return s, nil
}

// Notify wakes idle sinks to look for new records now rather than at the next poll. It never
// blocks.
func (s *Streamer) Notify() {
	for _, l := range s.lanes {
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
}

// Run streams until ctx is cancelled and returns once every sink's goroutine has stopped. It
// does not close the sinks. It returns nil. Run may be called again once it returned (a
// controller that gets the stream back, docs/scale-out.md): each run starts from the stored
// cursors. Two runs at once are refused.
func (s *Streamer) Run(ctx context.Context) error {
	if !s.running.CompareAndSwap(false, true) {
		return errors.New("siem.Run: already running")
	}
	defer s.running.Store(false)
	var wg sync.WaitGroup
	for _, l := range s.lanes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.stream(ctx, l)
		}()
	}
	wg.Wait()
	<-ctx.Done() // with no sinks too
	return nil
}

// stream runs one sink until ctx is done.
func (s *Streamer) stream(ctx context.Context, l *lane) {
	log := s.o.Logger.With("sink", l.name)
	failures := 0
	fail := func(stage string, err error) bool {
		if ctx.Err() != nil {
			return false
		}
		failures++
		s.m.failures.WithLabelValues(l.name, stage).Inc()
		wait := s.backoff(failures)
		log.Warn("siem: sink failed; retrying", "stage", stage, "failures", failures, "retry_in", wait, "err", err)
		return sleep(ctx, wait)
	}
	recovered := func() {
		if failures > 0 {
			log.Info("siem: sink recovered", "after_failures", failures)
			failures = 0
		}
	}

	var cursor int64
	for {
		c, err := s.cursors.Cursor(ctx, l.name)
		if err == nil {
			cursor = c
			break
		}
		if !fail("cursor", err) {
			return
		}
	}
	l.cursor.Store(cursor)
	sent := s.m.sent.WithLabelValues(l.name)

	var batch []*gateway.Record // read and not yet accepted; kept across failed sends
	for ctx.Err() == nil {
		if batch == nil {
			rs, err := s.src.RecordsAfter(ctx, cursor, s.o.Batch)
			if err != nil {
				if !fail("read", err) {
					return
				}
				continue
			}
			if len(rs) > 0 {
				s.seen(rs[len(rs)-1].Seq)
			}
			batch = rs
		}
		if len(batch) == 0 {
			// Caught up: let the sink check its connection, then wait for news.
			batch = nil
			if err := l.sink.Send(ctx, nil); err != nil {
				if !fail("send", err) {
					return
				}
				continue
			}
			recovered()
			t := time.NewTimer(s.o.PollInterval)
			select {
			case <-ctx.Done():
			case <-l.wake:
			case <-t.C:
			}
			t.Stop()
			continue
		}
		if err := l.sink.Send(ctx, batch); err != nil {
			if !fail("send", err) {
				return
			}
			continue
		}
		recovered()
		sent.Add(float64(len(batch)))
		cursor = batch[len(batch)-1].Seq
		l.cursor.Store(cursor)
		batch = nil
		// A cursor that fails to persist is only sent again after a restart: carry on.
		if err := s.cursors.SetCursor(ctx, l.name, cursor); err != nil && ctx.Err() == nil {
			s.m.failures.WithLabelValues(l.name, "cursor").Inc()
			log.Warn("siem: storing cursor", "seq", cursor, "err", err)
		}
	}
}

// seen raises head to seq.
func (s *Streamer) seen(seq int64) {
	for {
		h := s.head.Load()
		if seq <= h || s.head.CompareAndSwap(h, seq) {
			return
		}
	}
}

// backoff returns the wait after the nth failure in a row: RetryBase doubling up to RetryMax,
// the second half of it random, so sinks failing together do not retry in lockstep.
func (s *Streamer) backoff(n int) time.Duration {
	d := s.o.RetryMax
	if n < 31 {
		if x := s.o.RetryBase << (n - 1); x > 0 && x < d {
			d = x
		}
	}
	return d/2 + rand.N(d/2+1)
}

// sleep waits d or until ctx is done; it reports whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
