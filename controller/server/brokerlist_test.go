package server_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/edgewan/edgewan/controller/config"
	"github.com/edgewan/edgewan/controller/sdwan"
	"github.com/edgewan/edgewan/controller/server/servertest"
)

// TestClaimBrokerList: with several broker nodes (--mqtt-public-url a,b,c, the scaled-out
// mode), a claim gives the agent all of them as urls, in their order rotated by a hash of the
// device (so that a fleet spreads over the nodes), and the first of those as url; no broker
// kind (only the scaled-out mode names NATS).
func TestClaimBrokerList(t *testing.T) {
	nodes := []string{"mqtts://nats-1.example.net:8883", "mqtts://nats-2.example.net:8883", "mqtts://nats-3.example.net:8883"}
	s := servertest.Start(t, servertest.Options{Config: func(c *config.Config) {
		c.MQTTPublicURL = nodes[0] + ", " + nodes[1] + "," + nodes[2]
	}})
	rw := s.Key("sdwan:read", "sdwan:write")
	first := map[string]int{}
	for i := range 12 {
		var site sdwan.Site
		s.Do("POST", "/sd-wan/v1/sites", rw, strings.Replace(branchSite, "Branch 12", fmt.Sprintf("Branch %d", 100+i), 1)).JSON(t, &site)
		var res sdwan.ClaimResult
		r := s.Do("POST", "/sd-wan/v1/claim", "", map[string]string{"claim_token": site.Claim, "hostname": "br12-r1"})
		wantStatus(t, r, 200)
		r.JSON(t, &res)
		k := slices.Index(nodes, res.MQTT.URL)
		if k < 0 || !slices.Equal(res.MQTT.URLs, append(slices.Clone(nodes[k:]), nodes[:k]...)) {
			t.Fatalf("claim gave url %q, urls %q; want one of %q first, then the others in order", res.MQTT.URL, res.MQTT.URLs, nodes)
		}
		if res.MQTT.Broker != "" { // several nodes, but not the scaled-out mode: TestClusterProcesses has "nats"
			t.Fatalf("claim gave broker kind %q without NATS; want none (the MQTT profile)", res.MQTT.Broker)
		}
		first[res.MQTT.URL]++
	}
	if len(first) < 2 { // 12 random device IDs all on one node: odds 1 in 177,147
		t.Errorf("12 devices all start on %v; want them spread over the nodes", first)
	}
}
