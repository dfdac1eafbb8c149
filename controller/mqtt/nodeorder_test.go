package mqtt_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/edgewan/edgewan/controller/mqtt"
	"github.com/edgewan/edgewan/controller/mqtt/natstest"
)

// TestNodeOrder: a rotation of the list (every node once), by the key's trailing number when
// it has one (consecutive numbers on distinct nodes), else by a hash that spreads many keys
// about evenly.
func TestNodeOrder(t *testing.T) {
	nodes := []string{"n1", "n2", "n3"}
	for _, tc := range []struct {
		key  string
		want []string
	}{
		{"edgewan-controller-controller-1", []string{"n2", "n3", "n1"}},
		{"edgewan-controller-controller-2", []string{"n3", "n1", "n2"}},
		{"edgewan-controller-controller-3", []string{"n1", "n2", "n3"}},
		{"edgewan-controller-edgewan-0", []string{"n1", "n2", "n3"}}, // a StatefulSet's ordinal
		{"ctl-10", []string{"n2", "n3", "n1"}},
	} {
		if got := mqtt.NodeOrder(nodes, tc.key); !slices.Equal(got, tc.want) {
			t.Errorf("NodeOrder(%v, %q) = %v; want %v", nodes, tc.key, got, tc.want)
		}
	}
	if got := mqtt.NodeOrder([]string{"n1"}, "x-2"); !slices.Equal(got, []string{"n1"}) {
		t.Errorf("one node: %v", got)
	}
	first := map[string]int{}
	for i := range 300 {
		got := mqtt.NodeOrder(nodes, fmt.Sprintf("edgewan-controller-host-%c%c", 'a'+i%26, 'a'+i/26))
		if s := slices.Sorted(slices.Values(got)); !slices.Equal(s, nodes) {
			t.Fatalf("NodeOrder = %v; want a rotation of %v", got, nodes)
		}
		if i := slices.Index(nodes, got[0]); !slices.Equal(got, append(slices.Clone(nodes[i:]), nodes[:i]...)) {
			t.Fatalf("NodeOrder = %v; want a rotation of %v", got, nodes)
		}
		first[got[0]]++
	}
	for _, n := range nodes {
		if first[n] < 60 || first[n] > 140 { // 100 expected of 300
			t.Errorf("hashed keys: node %s first for %d of 300; want about a third (%v)", n, first[n], first)
		}
	}
}

// TestNATSBusNodeOrder: on a real 3-node NATS cluster, each controller's NATS connection and
// MQTT publisher are on the first node of its own order (controllers 1, 2 and 3 on nodes 2, 3
// and 1), as the nodes' /connz say.
func TestNATSBusNodeOrder(t *testing.T) {
	c := natstest.Start(t)
	for _, id := range []string{"ctl-1", "ctl-2", "ctl-3"} {
		newNATSBus(t, c, id)
	}
	type connz struct {
		Connections []struct {
			Name       string `json:"name"`
			MQTTClient string `json:"mqtt_client"`
		} `json:"connections"`
	}
	on := map[string][]int{} // a client's name or MQTT client ID -> nodes (1-3) it is on
	for n := 1; n <= 3; n++ {
		resp, err := http.Get(c.MonitorURLs[n-1] + "/connz?limit=1024")
		if err != nil {
			t.Fatal(err)
		}
		var z connz
		err = json.NewDecoder(resp.Body).Decode(&z)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range z.Connections {
			if x.MQTTClient != "" {
				on["mqtt:"+x.MQTTClient] = append(on["mqtt:"+x.MQTTClient], n)
			} else if x.Name != "" {
				on["nats:"+x.Name] = append(on["nats:"+x.Name], n)
			}
		}
	}
	for id, node := range map[string]int{"ctl-1": 2, "ctl-2": 3, "ctl-3": 1} {
		for _, kind := range []string{"nats:", "mqtt:"} {
			if got := on[kind+id]; !slices.Equal(got, []int{node}) {
				t.Errorf("%s%s on nodes %v; want [%d] (all: %v)", kind, id, got, node, on)
			}
		}
	}
}
