package engine

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/edgewan/edgewan/controller/mqtt/natstest"
	"github.com/edgewan/edgewan/telemetry"
)

// BenchmarkStandbyCost is what the warm standby connections cost a NATS node (the capacity
// model of docs/scale-out.md): b.N connections as an agent's standby makes them (clean
// session, one QoS 0 subscription to its site's watermark, nothing published) to one node of a
// real cluster, and the node's resident memory before and after, per connection. Run it with
// a fixed count: go test -run '^$' -bench BenchmarkStandbyCost -benchtime 2000x ./agent/engine
func BenchmarkStandbyCost(b *testing.B) {
	nc := natstest.Start(b)
	settle := func() natstest.Load {
		runtime.GC()
		time.Sleep(2 * time.Second) // let the node's own GC and the connections' setup settle (pacing, not synchronisation)
		l, err := nc.Varz(1)
		if err != nil {
			b.Fatal(err)
		}
		return l
	}
	before := settle()
	clients := make([]paho.Client, 0, b.N)
	defer func() {
		for _, c := range clients {
			c.Disconnect(0)
		}
	}()
	b.ResetTimer()
	for i := range b.N {
		site := fmt.Sprintf("site-%06d", i)
		c := paho.NewClient(paho.NewClientOptions().AddBroker(nc.MQTTURLs[0]).SetClientID("dev-" + site + standbySuffix).
			SetUsername(natstest.User).SetPassword(natstest.Password).SetCleanSession(true).SetAutoReconnect(false).
			SetKeepAlive(15 * time.Second))
		if tok := c.Connect(); !tok.WaitTimeout(wait) || tok.Error() != nil {
			b.Fatalf("connection %d: %v", i, tok.Error())
		}
		clients = append(clients, c)
		if tok := c.Subscribe(telemetry.Topic(site, telemetry.KindStored), 0, func(paho.Client, paho.Message) {}); !tok.WaitTimeout(wait) || tok.Error() != nil {
			b.Fatalf("subscription %d: %v", i, tok.Error())
		}
	}
	b.StopTimer()
	after := settle()
	if got := after.Connections - before.Connections; got != b.N {
		b.Fatalf("node 1 holds %d more connections; want %d", got, b.N)
	}
	b.ReportMetric(float64(after.Mem-before.Mem)/1024/float64(b.N), "KiB-RSS/conn")
	b.ReportMetric(0, "ns/op")
}
