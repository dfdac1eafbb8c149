package ingest

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/edgewan/edgewan/telemetry"
)

// liveBus is a bus that can also deliver a message to the clients subscribed now without
// keeping it (mqtt.NATSBus: a plain NATS publish, no MQTT connection, no JetStream asset).
type liveBus interface {
	PublishLive(topic string, payload []byte) error
}

// retainer publishes the sites' watermarks retained, off the engine's loop, the latest per
// site only, while the engine runs on a liveBus (see publishStored).
//
// Why: on NATS a retained publish goes through the controller's MQTT publisher connection and
// NATS's $MQTT_rmsgs stream. After a node's kill -9 that connection may wait for $MQTT_sess's
// election to reconnect (it was on the dead node) and each retained publish for $MQTT_rmsgs's,
// 4-9 s plus NATS's 4 s MQTT timeout; the checkpoint published watermark after watermark on the
// engine's loop, so every site's watermark waited for it (TestScaleOut: none for 9 s after the
// kill, for any site), and the agents kept (and sent again) what the controllers had stored.
// The live copy reaches the connected agents at once; the retained one, for the agents that
// subscribe later, follows when the MQTT side can take it.
type retainer struct {
	on      bool // retainMarks runs: publishStored queues
	mu      sync.Mutex
	pending map[string]retained // by site
	wake    chan struct{}
}

type retained struct {
	topic   string
	payload []byte
}

// retainRetry is the wait after a failed retained publish before the next attempt.
const retainRetry = time.Second

// publishStored publishes a site's watermark: retained, and on a liveBus while Run runs, first
// live (at once, to the agents connected now) with the retained copy queued (retainMarks).
func (e *Engine) publishStored(siteID, device string, seq uint64) {
	b, err := e.storedMessage(siteID, device, seq, nil)
	topic := telemetry.Topic(siteID, telemetry.KindStored)
	switch lb, live := e.bus.(liveBus); {
	case err != nil:
	case live && e.retain.queue(siteID, retained{topic, b}):
		err = lb.PublishLive(topic, b)
	default:
		err = e.bus.Publish(topic, b, true)
	}
	if err != nil {
		e.o.Logger.Warn("ingest: publishing a watermark", "site", siteID, "err", err)
	}
}

// storedMessage is the payload of a site's watermark seq, with a resend request when hole is set.
func (e *Engine) storedMessage(siteID, device string, seq uint64, hole *telemetry.SeqRange) ([]byte, error) {
	return json.Marshal(telemetry.Stored{V: telemetry.SchemaVersion, Site: siteID, Device: device, Seq: seq, Boot: e.boot, Time: e.o.Now().UTC(), Hole: hole})
}

// queue queues m as site's latest retained watermark; false (nothing queued) unless
// retainMarks runs.
func (r *retainer) queue(site string, m retained) bool {
	r.mu.Lock()
	on := r.on
	if on {
		r.pending[site] = m
	}
	r.mu.Unlock()
	if on {
		select {
		case r.wake <- struct{}{}:
		default:
		}
	}
	return on
}

// take returns what is pending and empties it.
func (r *retainer) take() map[string]retained {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.pending
	r.pending = map[string]retained{}
	return p
}

// retainMarks publishes the queued retained watermarks until ctx ends (then what is still
// queued is published by drainRetained). A failed one is queued again unless a newer one
// came meanwhile; a site this engine no longer owns is left to its new owner.
func (e *Engine) retainMarks(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	r := &e.retain
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		}
		failed := false
		for site, m := range r.take() {
			if ctx.Err() != nil {
				r.requeue(site, m)
				continue
			}
			if err := e.publishRetained(site, m); err != nil {
				e.o.Logger.Warn("ingest: publishing a watermark, retained; retrying", "site", site, "err", err)
				r.requeue(site, m)
				failed = true
			}
		}
		if failed {
			select {
			case <-ctx.Done():
				return
			case <-time.After(retainRetry):
			}
			select {
			case r.wake <- struct{}{}:
			default:
			}
		}
	}
}

// requeue puts m back unless a newer watermark of site was queued meanwhile.
func (r *retainer) requeue(site string, m retained) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, newer := r.pending[site]; !newer {
		r.pending[site] = m
	}
}

func (e *Engine) publishRetained(site string, m retained) error {
	if e.o.Owner != nil && !e.o.Owner.Owns(site) {
		return nil
	}
	return e.bus.Publish(m.topic, m.payload, true)
}

// startRetaining starts retainMarks if the bus is a liveBus; stop ends it, publishes what is
// still queued (once each, as the checkpoint did) and makes publishStored synchronous again.
func (e *Engine) startRetaining(ctx context.Context) (stop func()) {
	if _, ok := e.bus.(liveBus); !ok {
		return func() {}
	}
	r := &e.retain
	r.mu.Lock()
	r.on = true
	r.mu.Unlock()
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go e.retainMarks(rctx, done)
	return func() {
		cancel()
		<-done
		r.mu.Lock()
		r.on = false
		r.mu.Unlock()
		// Bounded as the last checkpoint is: a publisher that cannot publish must not hold the
		// stop for 10 s per site. What is left was delivered live; an agent that subscribes
		// later gets an older retained watermark and sends again what it does not cover.
		deadline := time.Now().Add(retainDrain)
		left := 0
		for site, m := range r.take() {
			if time.Now().After(deadline) {
				left++
				continue
			}
			if err := e.publishRetained(site, m); err != nil {
				e.o.Logger.Warn("ingest: publishing a watermark, retained", "site", site, "err", err)
			}
		}
		if left > 0 {
			e.o.Logger.Warn("ingest: stopping: watermarks not published retained (delivered live)", "sites", left)
		}
	}
}

// retainDrain bounds the publishing of the queued retained watermarks at the engine's stop.
const retainDrain = 10 * time.Second
