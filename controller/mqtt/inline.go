package mqtt

import (
	"fmt"
	"sync"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/edgewan/edgewan/telemetry"
)

// InlineBus is the Bus over the embedded broker's inline client: no network hop and no login.
// mochi calls inline subscriptions synchronously from the publishing client's goroutine; the
// bus queues the message and returns, so a slow handler slows down only its own site's agents.
// Close the broker before the bus: mochi has acknowledged a message before the bus sees it, so
// the bus must still take what the closing broker hands it (see Broker.Close).
type InlineBus struct {
	b *Broker
	d *dispatcher

	mu     sync.Mutex
	closed bool
	subs   map[int]string // subscription id -> filter, to unsubscribe on Close
}

var _ Bus = (*InlineBus)(nil)

// NewInlineBus returns a bus over b. It may be created and subscribed before b.Start.
func NewInlineBus(b *Broker, opts BusOptions) *InlineBus {
	opts.defaults()
	return &InlineBus{b: b, d: newDispatcher(opts, b.abandon), subs: make(map[int]string)}
}

// Subscribe implements Bus. Retained messages matching filter are delivered at once.
func (ib *InlineBus) Subscribe(filter string, handler Handler) error {
	if !validFilter(filter) {
		return fmt.Errorf("mqtt.InlineBus.Subscribe: bad filter %q", filter)
	}
	if handler == nil {
		return fmt.Errorf("mqtt.InlineBus.Subscribe: nil handler")
	}
	ib.mu.Lock()
	defer ib.mu.Unlock()
	if ib.closed {
		return ErrClosed
	}
	// mochi gathers a message's inline subscribers in a map keyed by subscription ID: two
	// subscriptions with one ID, even on different filters, would lose one's messages. So IDs
	// are unique per broker, not per bus.
	id := int(ib.b.inlineSubID.Add(1))
	err := ib.b.srv.Subscribe(filter, id, func(_ *mochi.Client, _ packets.Subscription, pk packets.Packet) {
		if !ib.d.dispatch(handler, pk.TopicName, pk.Payload) {
			ib.b.abandoned.Add(1)
		}
	})
	if err != nil {
		return fmt.Errorf("mqtt.InlineBus.Subscribe %q: %w", filter, err)
	}
	ib.subs[id] = filter
	return nil
}

// Publish implements Bus. mochi delivers an inline publish before returning; subscribers get it
// at QoS 1 (their subscription's QoS at most).
func (ib *InlineBus) Publish(topic string, payload []byte, retain bool) error {
	if !validTopic(topic) {
		return fmt.Errorf("mqtt.InlineBus.Publish: bad topic %q", topic)
	}
	if len(payload) > telemetry.MaxPayload {
		return fmt.Errorf("mqtt.InlineBus.Publish %s: payload of %d bytes is over %d", topic, len(payload), telemetry.MaxPayload)
	}
	ib.mu.Lock()
	closed := ib.closed
	ib.mu.Unlock()
	if closed {
		return ErrClosed
	}
	if err := ib.b.srv.Publish(topic, payload, retain, 1); err != nil {
		return fmt.Errorf("mqtt.InlineBus.Publish %s: %w", topic, err)
	}
	return nil
}

// Close implements Bus: it unsubscribes, then runs what is queued. The broker keeps running.
func (ib *InlineBus) Close() {
	ib.mu.Lock()
	if ib.closed {
		ib.mu.Unlock()
		return
	}
	ib.closed = true
	for id, filter := range ib.subs {
		_ = ib.b.srv.Unsubscribe(filter, id)
	}
	ib.subs = nil
	ib.mu.Unlock()
	ib.d.close()
}
