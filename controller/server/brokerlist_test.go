package server_test

import (
	"slices"
	"testing"

	"github.com/edgewan/edgewan/controller/config"
	"github.com/edgewan/edgewan/controller/sdwan"
	"github.com/edgewan/edgewan/controller/server/servertest"
)

// TestClaimBrokerList: with several broker nodes (--mqtt-public-url a,b,c, the scaled-out
// mode), a claim gives the agent the first as url and all of them as urls, in order.
func TestClaimBrokerList(t *testing.T) {
	nodes := []string{"mqtts://nats-1.example.net:8883", "mqtts://nats-2.example.net:8883", "mqtts://nats-3.example.net:8883"}
	s := servertest.Start(t, servertest.Options{Config: func(c *config.Config) {
		c.MQTTPublicURL = nodes[0] + ", " + nodes[1] + "," + nodes[2]
	}})
	rw := s.Key("sdwan:read", "sdwan:write")
	var site sdwan.Site
	s.Do("POST", "/sd-wan/v1/sites", rw, branchSite).JSON(t, &site)
	var res sdwan.ClaimResult
	r := s.Do("POST", "/sd-wan/v1/claim", "", map[string]string{"claim_token": site.Claim, "hostname": "br12-r1"})
	wantStatus(t, r, 200)
	r.JSON(t, &res)
	if res.MQTT.URL != nodes[0] || !slices.Equal(res.MQTT.URLs, nodes) {
		t.Fatalf("claim gave url %q, urls %q; want %q and %q", res.MQTT.URL, res.MQTT.URLs, nodes[0], nodes)
	}
}
