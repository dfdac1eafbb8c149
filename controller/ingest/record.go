package ingest

import (
	"context"
	"sync"
	"time"

	"github.com/edgewan/edgewan/coreapi/event"
)

// maxPendingEvents bounds the events waiting for the database: past it, record waits (the bus
// then holds back the agents, as it did when every change was written on the message's path).
const maxPendingEvents = 100_000

// recorder stores sites' status changes and events without making the bus workers queue for
// the database. Writing every change on the message's path made all the workers wait for the
// database's single writer when thousands of sites change status at once (the controller
// restarts and marks them offline, then their agents reconnect and each one's first report
// brings it back): ingest stalled for as long as thousands of transactions took, and the
// reports of every site queued behind them.
//
// While Run runs: a change made when nothing is being stored is stored at once by its caller,
// as before (so a reader sees it as soon as the report is evaluated); a change made while
// something is being stored is queued and the caller goes on. Run's writer stores the queue in
// arrival order, a site's queued changes merged (its events all kept, in order; its latest
// status). Outside Run (before it, and after it stopped) every change is stored at once.
type recorder struct {
	mu      sync.Mutex
	cond    sync.Cond // signalled when busy ends or pending events are taken
	running bool      // Run's writer is there to store the queue
	drain   bool      // Run's writer is storing what was queued when it stopped
	busy    bool      // a caller or the writer is storing
	pending map[string]*pendingRecord
	order   []*pendingRecord // in arrival order
	events  int              // events queued
	wake    chan struct{}    // something was queued; capacity 1
	queued  uint64           // changes queued, ever
	taken   uint64           // queued when the writer last took the queue
	done    uint64           // of those, how many are stored (or failed and logged)
}

// pendingRecord is what one site has waiting: its latest status change, if any, and its events.
type pendingRecord struct {
	site   string
	status string    // "": no status change, only events
	at     time.Time // the status's time
	evs    []*event.Envelope
}

func (r *recorder) init() {
	r.cond.L = &r.mu
	r.pending = make(map[string]*pendingRecord)
	r.wake = make(chan struct{}, 1)
}

func (r *recorder) signal() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// record stores a site's status (when it differs from prev) and events in one transaction, at
// once or queued (see recorder). Failures are logged.
func (e *Engine) record(siteID, status, prev string, now time.Time, evs ...*event.Envelope) {
	if status == prev {
		status = ""
	}
	if status == "" && len(evs) == 0 {
		return
	}
	r := &e.rec
	r.mu.Lock()
	for r.drain || (r.running && r.events >= maxPendingEvents) {
		r.cond.Wait() // a site's changes must not overtake its queued ones
	}
	switch {
	case !r.running:
		r.mu.Unlock()
		e.store1(context.Background(), &pendingRecord{site: siteID, status: status, at: now, evs: evs})
		return
	case !r.busy && len(r.order) == 0:
		r.busy = true
		r.mu.Unlock()
		e.store1(context.Background(), &pendingRecord{site: siteID, status: status, at: now, evs: evs})
		r.mu.Lock()
		r.busy = false
		if len(r.order) > 0 {
			r.signal()
		}
		r.cond.Broadcast()
		r.mu.Unlock()
		return
	}
	p := r.pending[siteID]
	if p == nil {
		p = &pendingRecord{site: siteID}
		r.pending[siteID] = p
		r.order = append(r.order, p)
	}
	if status != "" {
		p.status, p.at = status, now
	}
	p.evs = append(p.evs, evs...)
	r.events += len(evs)
	r.queued++
	r.mu.Unlock()
	r.signal()
}

// mark returns a position in the queue for waitStored: every change recorded before it.
func (r *recorder) mark() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.queued
}

// waitStored waits until the changes queued up to gen are stored (or ctx is done; then false).
// Changes not queued were stored by their caller before record returned.
func (r *recorder) waitStored(ctx context.Context, gen uint64) bool {
	stop := context.AfterFunc(ctx, func() {
		r.mu.Lock()
		r.cond.Broadcast()
		r.mu.Unlock()
	})
	defer stop()
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.done < gen && ctx.Err() == nil {
		r.cond.Wait()
	}
	return r.done >= gen
}

// takeLocked returns everything queued, oldest first, and makes room. Call with mu held.
func (r *recorder) takeLocked() []*pendingRecord {
	out := r.order
	r.taken = r.queued
	r.order = nil
	clear(r.pending)
	r.events = 0
	r.cond.Broadcast()
	return out
}

// writeRecords is Run's writer: it stores what record queues until ctx is done, then what is
// still queued (within 10 seconds), and closes done. From then on record stores at once.
func (e *Engine) writeRecords(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	r := &e.rec
	r.mu.Lock()
	r.running = true
	r.mu.Unlock()
	for {
		select {
		case <-r.wake:
			r.mu.Lock()
			if r.busy || len(r.order) == 0 { // a caller is storing; it signals when done
				r.mu.Unlock()
				continue
			}
			r.busy = true
			batch := r.takeLocked()
			batch0 := r.taken
			r.mu.Unlock()
			e.storeAll(context.Background(), batch)
			r.mu.Lock()
			r.done = max(r.done, batch0)
			r.busy = false
			if len(r.order) > 0 {
				r.signal()
			}
			r.cond.Broadcast()
			r.mu.Unlock()
		case <-ctx.Done():
			r.mu.Lock()
			r.running, r.drain = false, true
			for r.busy {
				r.cond.Wait()
			}
			last := r.takeLocked()
			last0 := r.taken
			r.mu.Unlock()
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			e.storeAll(sctx, last)
			r.mu.Lock()
			r.done = max(r.done, last0)
			r.drain = false
			r.cond.Broadcast()
			r.mu.Unlock()
			return
		}
	}
}
func (e *Engine) storeAll(ctx context.Context, ps []*pendingRecord) {
	for _, p := range ps {
		e.store1(ctx, p)
	}
}

// store1 writes one site's pending status and events, in one transaction.
func (e *Engine) store1(ctx context.Context, p *pendingRecord) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var queued int
	var err error
	if p.status != "" {
		queued, err = e.store.SetSiteStatus(ctx, p.site, p.status, p.at, p.at, p.evs...)
	} else {
		queued, err = e.store.InsertEvents(ctx, p.evs...)
	}
	if e.fenced(err, "status_events") {
		return
	}
	if err != nil {
		e.o.Logger.Error("ingest: recording site state and events", "site", p.site, "status", p.status, "events", len(p.evs), "err", err)
		return
	}
	for _, ev := range p.evs {
		e.m.events.WithLabelValues(ev.Type).Inc()
	}
	if queued > 0 { // wake the dispatcher only when a webhook wants these events
		e.o.Notify()
	}
}
