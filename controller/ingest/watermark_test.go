package ingest

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/edgewan/edgewan/controller/mqtt"
	"github.com/edgewan/edgewan/telemetry"
)

// stallingBus is a liveBus whose retained publishes can be held, as NATS holds the controller's
// MQTT publisher after a node's death (reconnecting while $MQTT_sess has no leader, or a
// retained publish waiting for $MQTT_rmsgs's election): it records each watermark, live and
// retained.
type stallingBus struct {
	mu       sync.Mutex
	live     []uint64
	retained []uint64
	hold     chan struct{} // non-nil: retained publishes wait until it is closed
	entered  chan struct{} // told when a retained publish starts waiting
}

func (b *stallingBus) Subscribe(string, mqtt.Handler) error { return nil }
func (b *stallingBus) Close()                               {}

func seqOf(payload []byte) uint64 {
	var s telemetry.Stored
	_ = json.Unmarshal(payload, &s)
	return s.Seq
}

func (b *stallingBus) Publish(topic string, payload []byte, retain bool) error {
	if _, kind, _ := telemetry.ParseTopic(topic); kind != telemetry.KindStored || !retain {
		return nil
	}
	b.mu.Lock()
	hold := b.hold
	b.mu.Unlock()
	if hold != nil {
		b.entered <- struct{}{}
		<-hold
	}
	b.mu.Lock()
	b.retained = append(b.retained, seqOf(payload))
	b.mu.Unlock()
	return nil
}

func (b *stallingBus) PublishLive(_ string, payload []byte) error {
	b.mu.Lock()
	b.live = append(b.live, seqOf(payload))
	b.mu.Unlock()
	return nil
}

func (b *stallingBus) seqs() (live, retained []uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.live), slices.Clone(b.retained)
}

// TestWatermarkLiveWhileRetainedStalls: on a bus that can publish live (NATS), a watermark goes
// out live at once even while the retained publishes are held (the MQTT publisher after a
// node's death), and the retained copies follow once they can, the latest per site only (a
// watermark superseded while held is not published retained); once the engine stops, a
// watermark is published retained before publishStored returns, as on any other bus.
func TestWatermarkLiveWhileRetainedStalls(t *testing.T) {
	bus := &stallingBus{entered: make(chan struct{}, 1)}
	be := newBenchEngine(t, 1, bus)
	e, site := be.e, be.st.order[0]
	device := be.st.sites[site].DeviceID
	stop := e.startRetaining(context.Background())

	release := make(chan struct{})
	bus.mu.Lock()
	bus.hold = release
	bus.mu.Unlock()
	published := make(chan struct{})
	go func() {
		defer close(published)
		e.publishStored(site, device, 5)
	}()
	select {
	case <-published:
	case <-time.After(10 * time.Second):
		t.Fatal("publishStored waited for the held retained publish")
	}
	select {
	case <-bus.entered: // the retained copy of 5 is being published, held
	case <-time.After(10 * time.Second):
		t.Fatal("the retained copy of watermark 5 was never published")
	}
	e.publishStored(site, device, 6)
	e.publishStored(site, device, 7)
	if live, retained := bus.seqs(); !slices.Equal(live, []uint64{5, 6, 7}) || len(retained) != 0 {
		t.Fatalf("while the retained publish is held: live %v, retained %v; want live [5 6 7], none retained", live, retained)
	}
	bus.mu.Lock()
	bus.hold = nil
	bus.mu.Unlock()
	close(release)
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, retained := bus.seqs()
		if len(retained) > 0 && retained[len(retained)-1] == 7 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("retained %v; want the latest, 7, published after the release", retained)
		}
		time.Sleep(10 * time.Millisecond) // polling the recorder, bounded by the deadline
	}
	if _, retained := bus.seqs(); !slices.Equal(retained, []uint64{5, 7}) {
		t.Errorf("retained %v; want [5 7] (6 superseded while held)", retained)
	}

	stop()
	e.publishStored(site, device, 8)
	if live, retained := bus.seqs(); retained[len(retained)-1] != 8 || live[len(live)-1] != 7 {
		t.Errorf("after stop: live %v, retained %v; want 8 published retained at once (not live)", live, retained)
	}
}
