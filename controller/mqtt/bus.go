// Package mqtt connects the controller to its agents: the embedded broker, or an external one,
// behind one small Bus interface.
//
// Delivery guarantees, the same for both Bus implementations:
//   - QoS 1 both ways. A handler runs after the broker has acknowledged the agent's publish:
//     what was queued for handlers when the controller stops is lost (an agent's Report.Seq
//     shows the gap). Handlers must tolerate duplicates (QoS 1 redelivery, retained messages
//     replayed on every (re)subscription).
//   - Order: messages of one site (every topic edgewan/v1/sites/{site}/...) reach the handlers
//     one at a time, in the order the bus received them, which for one publishing client is the
//     order it published in. Different sites are handled concurrently (BusOptions.Workers).
//     Other topics are ordered per topic.
//   - Backpressure: when a site's queue is full the bus stops taking messages from the broker
//     (the embedded broker then stops reading from that agent; the external one queues), so
//     nothing is dropped while the controller runs.
package mqtt

import (
	"errors"
	"log/slog"
	"strings"
	"sync"

	"github.com/edgewan/edgewan/telemetry"
)

// Handler receives one message. It must not modify payload (it may be shared with other
// subscribers and the broker's retained copy) and should not block for long: it holds up its
// site's queue. It may Publish, but not to a topic its own bus subscribes to (a full queue
// would then wait on itself).
type Handler func(topic string, payload []byte)

// Bus is the controller's view of MQTT, used by the ingest and the policy publisher.
type Bus interface {
	// Subscribe delivers messages matching filter (MQTT wildcards allowed) to handler, at QoS 1.
	Subscribe(filter string, handler Handler) error
	// Publish sends payload to topic at QoS 1, retained or not. The payload may not be over
	// telemetry.MaxPayload (agents could not receive it from an external broker).
	Publish(topic string, payload []byte, retain bool) error
	// Close stops deliveries, lets the handlers finish what is queued, and releases the bus.
	Close()
}

// BusOptions tunes handler dispatch. Zero values mean the defaults given.
type BusOptions struct {
	Workers  int          // goroutines running handlers (sites are spread over them). 0 means 4.
	QueueLen int          // messages queued per worker before backpressure. 0 means 256.
	Logger   *slog.Logger // nil means slog.Default()
}

func (o *BusOptions) defaults() {
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.QueueLen <= 0 {
		o.QueueLen = 256
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// ErrClosed is returned by a Bus used after Close.
var ErrClosed = errors.New("mqtt: bus closed")

type delivery struct {
	h       Handler
	topic   string
	payload []byte
}

// dispatcher runs handlers on a fixed set of workers, each message on the worker its site (or
// topic) hashes to, so one site's messages stay in order while sites run in parallel.
type dispatcher struct {
	log      *slog.Logger
	abort    <-chan struct{} // closed when the message source shuts down (nil: never)
	stopping chan struct{}   // closed first thing in close: senders waiting on a full queue give up
	stopOnce sync.Once
	mu       sync.RWMutex // held for reading while enqueueing; close takes it to close the queues
	closed   bool
	queues   []chan delivery
	wg       sync.WaitGroup
}

// newDispatcher starts o.Workers workers. A dispatch blocked on a full queue gives up when
// abort is closed: the embedded broker's client goroutines block there, and the broker's
// Close waits for them.
func newDispatcher(o BusOptions, abort <-chan struct{}) *dispatcher {
	d := &dispatcher{log: o.Logger, abort: abort, stopping: make(chan struct{}), queues: make([]chan delivery, o.Workers)}
	for i := range d.queues {
		q := make(chan delivery, o.QueueLen)
		d.queues[i] = q
		d.wg.Add(1)
		go d.work(q)
	}
	return d
}

// orderKey is the part of topic whose messages must stay in order: the site for agent topics.
func orderKey(topic string) string {
	if rest, ok := strings.CutPrefix(topic, telemetry.TopicRoot); ok {
		if site, _, ok := strings.Cut(rest, "/"); ok {
			return topic[:len(telemetry.TopicRoot)+len(site)]
		}
	}
	return topic
}

// shard returns the queue of topic's order key.
func (d *dispatcher) shard(topic string) int {
	key := orderKey(topic)
	var sum uint32 = 2166136261 // FNV-1a, inline: no allocation per message
	for i := 0; i < len(key); i++ {
		sum ^= uint32(key[i])
		sum *= 16777619
	}
	return int(sum % uint32(len(d.queues)))
}

// dispatch queues a delivery, waiting while its queue is full. It reports false, dropping the
// message, once the dispatcher is closing or its source aborts.
func (d *dispatcher) dispatch(h Handler, topic string, payload []byte) bool {
	i := d.shard(topic)
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.closed {
		return false
	}
	select {
	case d.queues[i] <- delivery{h: h, topic: topic, payload: payload}:
		return true
	case <-d.stopping:
	case <-d.abort:
	}
	return false
}

func (d *dispatcher) work(q chan delivery) {
	defer d.wg.Done()
	for m := range q {
		d.run(m)
	}
}

// run calls one handler; a panic is logged, not fatal: one bad message must not stop ingest.
func (d *dispatcher) run(m delivery) {
	defer func() {
		if r := recover(); r != nil {
			d.log.Error("mqtt: handler panicked", "topic", m.topic, "panic", r)
		}
	}()
	m.h(m.topic, m.payload)
}

// close stops intake (senders waiting on a full queue drop their message), runs what is
// queued and waits for the workers.
func (d *dispatcher) close() {
	d.stopOnce.Do(func() { close(d.stopping) })
	d.mu.Lock() // senders hold the read lock only until queued, stopping or aborted
	if !d.closed {
		d.closed = true
		for _, q := range d.queues {
			close(q)
		}
	}
	d.mu.Unlock()
	d.wg.Wait()
}
