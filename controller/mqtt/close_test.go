package mqtt_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/edgewan/edgewan/controller/mqtt"
	"github.com/edgewan/edgewan/telemetry"
)

// Closing the broker under an agent publishing as fast as it can, into a bus whose one queue is
// nearly always full (a slow handler): every message the broker PUBACKed reaches the handler
// once the bus is closed after the broker, as the controller's shutdown does. mochi PUBACKs a
// message before handing it to the bus, so a message acknowledged while the broker closes must
// not be dropped on the way (a graceful restart lost one that way).
func TestEmbeddedCloseKeepsAcknowledged(t *testing.T) {
	for round := range 5 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			e := startEmbedded(t)
			var mu sync.Mutex
			handled := make(map[string]bool)
			slow := mqtt.NewInlineBus(e.broker, mqtt.BusOptions{Workers: 1, QueueLen: 2, Logger: quietLogger()})
			err := slow.Subscribe(topic(e.a.site, telemetry.KindTelemetry), func(_ string, p []byte) {
				time.Sleep(200 * time.Microsecond) // a handler slower than the agent: the queue fills
				mu.Lock()
				handled[string(p)] = true
				mu.Unlock()
			})
			if err != nil {
				t.Fatal(err)
			}
			a := e.dial(t, e.a, func(o *paho.ClientOptions) { o.SetMaxResumePubInFlight(32) })

			var acked []string
			var ackMu sync.Mutex
			var wg sync.WaitGroup
			first := make(chan struct{})
			var once sync.Once
			for w := range 4 { // 4 publishers: several messages in flight when the broker closes
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; ; i++ {
						p := fmt.Sprintf("w%d-%d", w, i)
						tok := a.c.Publish(topic(e.a.site, telemetry.KindTelemetry), 1, false, p)
						if !tok.WaitTimeout(wait) || tok.Error() != nil {
							return // the broker closed: not acknowledged
						}
						ackMu.Lock()
						acked = append(acked, p)
						n := len(acked)
						ackMu.Unlock()
						if n == 200 {
							once.Do(func() { close(first) })
						}
					}
				}()
			}
			select {
			case <-first:
			case <-time.After(wait):
				t.Fatal("200 messages not acknowledged in time")
			}
			e.broker.Close()
			wg.Wait()
			slow.Close() // runs what is queued
			mu.Lock()
			defer mu.Unlock()
			var lost []string
			for _, p := range acked {
				if !handled[p] {
					lost = append(lost, p)
				}
			}
			if len(lost) > 0 {
				t.Fatalf("%d of %d acknowledged messages not handled after close, e.g. %q", len(lost), len(acked), lost[0])
			}
			t.Logf("%d acknowledged, all handled", len(acked))
		})
	}
}

// A broker that closes does not fire its clients' wills: a shutdown is not the agents' loss of
// their link, and their "offline" wills would mark every site offline while the engine still
// takes messages.
func TestEmbeddedCloseFiresNoWill(t *testing.T) {
	e := startEmbedded(t)
	status := topic("site-a", telemetry.KindStatus)
	code, _ := rawConnect(t, e.url, e.tc, "dev-a", e.a.password, status, `{"state":"offline"}`)
	if code != 0 {
		t.Fatalf("CONNACK %d; want accepted", code)
	}
	b := e.dial(t, e.b)
	e.marker(t, b, "connected") // dev-a's session is established too (it connected first)
	e.broker.Close()
	e.bus.Close() // every message the broker handed over has been handled
	e.rec.mu.Lock()
	defer e.rec.mu.Unlock()
	for _, m := range e.rec.msgs {
		if m.topic == status {
			t.Fatalf("the broker's close fired dev-a's will (%q)", m.payload)
		}
	}
}
