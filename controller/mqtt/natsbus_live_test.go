package mqtt_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/edgewan/edgewan/controller/mqtt"
	"github.com/edgewan/edgewan/controller/mqtt/natstest"
	"github.com/edgewan/edgewan/telemetry"
)

// TestNATSBusPublishLive: PublishLive reaches an MQTT client subscribed at QoS 0 on another
// node, not retained (a later subscriber gets the retained value Publish left), and it does so
// while the bus's MQTT publisher cannot: the node it was connected to is killed while it leads
// $MQTT_sess, so the publisher's reconnection waits for that stream's election, and a retained
// Publish begun before the live one returns only after the live one was delivered.
func TestNATSBusPublishLive(t *testing.T) {
	c := natstest.Start(t)
	// Its MQTT publisher is on node 1: a ClientID ending in 0 keeps the list's order
	// (NodeOrder). Its first connection creates NATS's MQTT streams (R3), which on a loaded
	// machine took longer than newNATSBus's 20 s.
	ctx, cancel := context.WithTimeout(context.Background(), 3*wait)
	defer cancel()
	bus, err := mqtt.NewNATSBus(ctx, mqtt.NATSOptions{URLs: c.URLs, MQTTURLs: c.MQTTURLs, User: natstest.User,
		Password: natstest.Password, ClientID: "ctl-live-0", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(bus.Close)
	c.LeadOn(t, "$MQTT_sess", 1) // the stream exists once an MQTT client connected
	topic := telemetry.Topic("site-live", telemetry.KindStored)

	if err := bus.PublishLive("edgewan/v1/sites/+/stored", []byte("x")); err == nil {
		t.Error("PublishLive to a filter: got nil; want an error")
	}
	if err := bus.Publish(topic, []byte("r1"), true); err != nil {
		t.Fatal(err)
	}
	type msg struct {
		payload  string
		retained bool
	}
	got := make(chan msg, 16)
	sub := agentClient(t, "agent-live", c.MQTTURLs[2:]) // node 3 only: it stays up
	if tok := sub.Subscribe(topic, 0, func(_ paho.Client, m paho.Message) {
		got <- msg{string(m.Payload()), m.Retained()}
	}); !tok.WaitTimeout(wait) || tok.Error() != nil {
		t.Fatalf("subscribe: %v", tok.Error())
	}
	next := func() msg {
		t.Helper()
		select {
		case m := <-got:
			return m
		case <-time.After(wait):
			t.Fatal("no message within the wait")
			return msg{}
		}
	}
	if m := next(); m != (msg{"r1", true}) {
		t.Fatalf("at subscribe: %+v; want the retained r1", m)
	}
	// A live publish is core NATS, fire and forget: one sent before node 3's interest has
	// reached the publishing node over the routes is dropped (the product sends the next
	// watermark anyway, and the retained copy follows), so send it until one arrives.
	var m msg
	deadline := time.After(wait)
live:
	for {
		if err := bus.PublishLive(topic, []byte("l2")); err != nil {
			t.Fatal(err)
		}
		select {
		case m = <-got:
			break live
		case <-time.After(200 * time.Millisecond):
		case <-deadline:
			t.Fatal("no live message within the wait")
		}
	}
	if m != (msg{"l2", false}) {
		t.Fatalf("live: %+v; want l2, not retained", m)
	}

	c.Kill(t, 1)
	retainedDone := make(chan error, 1)
	go func() { retainedDone <- bus.Publish(topic, []byte("r3"), true) }()
	if err := bus.PublishLive(topic, []byte("l4")); err != nil {
		t.Fatal(err)
	}
	afterKill := time.After(wait)
	for done := false; !done; {
		select {
		case err := <-retainedDone:
			t.Fatalf("the retained publish returned (%v) before the live one was delivered", err)
		case m := <-got:
			if m == (msg{"l2", false}) {
				continue // a late copy of the retries above
			}
			if m != (msg{"l4", false}) {
				t.Fatalf("after the kill: %+v; want l4 first, live", m)
			}
			done = true
		case <-afterKill:
			t.Fatal("the live publish was not delivered after the node's death")
		}
	}
	if err := <-retainedDone; err != nil {
		t.Logf("the retained publish after the node's death: %v", err) // NATS's to deliver or not
	}
	late := agentClient(t, "agent-late", c.MQTTURLs[2:])
	lateGot := make(chan msg, 4)
	if tok := late.Subscribe(topic, 0, func(_ paho.Client, m paho.Message) {
		lateGot <- msg{string(m.Payload()), m.Retained()}
	}); !tok.WaitTimeout(wait) || tok.Error() != nil {
		t.Fatalf("subscribe: %v", tok.Error())
	}
	select {
	case m := <-lateGot:
		if !m.retained || (m.payload != "r1" && m.payload != "r3") {
			t.Errorf("a later subscriber got %+v; want a retained value left by Publish (r1 or r3), never a live one", m)
		}
	case <-time.After(wait):
		t.Error("a later subscriber got no retained value")
	}
}
