package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgewan/edgewan/agent/sim"
	"github.com/edgewan/edgewan/controller/config"
	"github.com/edgewan/edgewan/controller/sdwan"
	"github.com/edgewan/edgewan/controller/server/servertest"
	"github.com/edgewan/edgewan/coreapi/event"
	"github.com/edgewan/edgewan/coreapi/soc"
	"github.com/edgewan/edgewan/coreapi/webhook"
	"github.com/edgewan/edgewan/telemetry"
)

// receiver is a webhook endpoint that verifies signatures and keeps the events.
type receiver struct {
	*httptest.Server
	secret string
	mu     sync.Mutex
	events []event.Envelope
	bad    int
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		if !webhook.Verify(r.secret, body, req.Header.Get(webhook.HeaderSignature), req.Header.Get(webhook.HeaderSigned),
			req.Header.Get(webhook.HeaderTimestamp), time.Minute, time.Now()) {
			r.bad++
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var ev event.Envelope
		if json.Unmarshal(body, &ev) == nil {
			r.events = append(r.events, ev)
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.Close)
	return r
}

// find returns the received events of typ whose data contains every key=value of want.
func (r *receiver) find(typ string, want map[string]string) []map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []map[string]any
	for _, ev := range r.events {
		if ev.Type != typ {
			continue
		}
		var d map[string]any
		_ = json.Unmarshal(ev.Data, &d)
		ok := true
		for k, v := range want {
			if s, _ := d[k].(string); s != v {
				ok = false
			}
		}
		if ok {
			out = append(out, d)
		}
	}
	return out
}

func (r *receiver) register(t *testing.T, s *servertest.Server, events ...string) {
	var w webhook.Webhook
	res := s.Do("POST", "/v1/webhooks", s.Key("webhooks:write"), map[string]any{"url": r.URL, "events": events})
	wantStatus(t, res, 201)
	res.JSON(t, &w)
	r.mu.Lock()
	r.secret = w.Secret
	r.mu.Unlock()
}

// claimAgent claims a site with its token as a simulated agent named host and connects it to
// the broker; the caller closes (or kills) the agent.
func claimAgent(ctx context.Context, t *testing.T, s *servertest.Server, claim, host string) (*sim.Access, *sim.Agent) {
	t.Helper()
	acc, err := sim.Claim(ctx, s.Client, s.URL, claim, host)
	if err != nil {
		t.Fatal(err)
	}
	ag, err := sim.Connect(ctx, acc)
	if err != nil {
		t.Fatal(err)
	}
	return acc, ag
}

// nextOf waits for the agent's next message on kind and decodes it.
func nextOf(t *testing.T, ag *sim.Agent, kind string, v any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		m, err := ag.Next(ctx)
		if err != nil {
			t.Fatalf("no %s message: %v", kind, err)
		}
		if strings.HasSuffix(m.Topic, "/"+kind) {
			if err := json.Unmarshal(m.Payload, v); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
}

// TestTelemetryLoop runs the controller's side of the loop with a simulated agent through the
// embedded broker: claim, policy push and ack, telemetry to health, a transport going down
// switching the path (events at a webhook, decisions to the agent), refused topics, bad
// payloads, and the site going offline.
func TestTelemetryLoop(t *testing.T) {
	for _, pg := range []bool{false, true} {
		name := map[bool]string{false: "sqlite", true: "postgres"}[pg]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := servertest.Start(t, servertest.Options{Postgres: pg, Config: func(c *config.Config) { c.OfflineAfter = 2 * time.Second }})
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			rec := newReceiver(t)
			rec.register(t, s, event.TransportDown, event.PathSwitched, event.SiteOffline, event.DeviceStatusChanged, event.SLABreach, event.TransportDegraded)
			rw := s.Key("sdwan:read", "sdwan:write")

			var site, other sdwan.Site
			s.Do("POST", "/sd-wan/v1/sites", rw, branchSite).JSON(t, &site)
			s.Do("POST", "/sd-wan/v1/sites", rw, `{"name":"Other","transports":[{"name":"inet","interface":"eth0"}]}`).JSON(t, &other)
			var pol sdwan.Policy
			s.Do("POST", "/sd-wan/v1/policies", rw, `{"name":"std","type":"steering","content":{"classes":[{"name":"voice","max_latency_ms":150,"max_loss_pct":2}],"paths":{"voice":["mpls","inet"]}}}`).JSON(t, &pol)
			wantStatus(t, s.Do("POST", "/sd-wan/v1/policies/"+pol.ID+"/publish", rw, map[string]any{"version": 1, "sites": []string{site.ID}}), 202)

			acc, err := sim.Claim(ctx, s.Client, s.URL, site.Claim, "br12")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(acc.MQTT.URL, "mqtts://127.0.0.1:") || acc.MQTT.CAPEM == "" {
				t.Fatalf("claim's broker access: %+v", acc.MQTT)
			}
			ag, err := sim.Connect(ctx, acc)
			if err != nil {
				t.Fatal(err)
			}
			defer ag.Close()

			// The retained policy reaches the agent; its ack moves the rollout to applied.
			var p struct {
				Transports []struct{ Name, Interface string }
				Policies   []struct {
					Policy  string
					Version int
				}
			}
			nextOf(t, ag, telemetry.KindPolicy, &p)
			if len(p.Transports) != 2 || len(p.Policies) != 1 || p.Policies[0].Policy != pol.ID {
				t.Fatalf("policy message: %+v", p)
			}
			if err := ag.Ack(ctx, pol.ID, 1, "applied", ""); err != nil {
				t.Fatal(err)
			}
			waitFor(t, func() bool {
				var got sdwan.Policy
				s.Do("GET", "/sd-wan/v1/policies/"+pol.ID, rw, nil).JSON(t, &got)
				return len(got.Rollout) == 1 && got.Rollout[0].State == "applied"
			})

			// Healthy telemetry: the site is up, health reports the figures, the SLA is met on mpls.
			for i := 0; i < 3; i++ {
				if err := ag.Report(ctx, time.Now(), time.Second, sim.Window("mpls", 5, 0, 20, 1), sim.Window("inet", 5, 0, 35, 4)); err != nil {
					t.Fatal(err)
				}
			}
			var h sdwan.Health
			waitFor(t, func() bool {
				s.Do("GET", "/sd-wan/v1/sites/"+site.ID+"/health?window=5m", rw, nil).JSON(t, &h)
				return h.Status == "up" && len(h.Transports) == 2 && h.Transports[0].Samples == 3
			})
			if h.Transports[0].Name != "inet" || h.Transports[0].LatencyMs != 35 || h.Transports[1].LatencyMs != 20 || len(h.SLA) != 1 ||
				!h.SLA[0].TargetMet || h.SLA[0].Path != "mpls" || h.SLA[0].Class != "voice" {
				t.Fatalf("health: %+v", h)
			}
			var devs struct{ Data []struct{ Status string } }
			s.Do("GET", "/v1/devices?site="+site.ID, s.Key("devices:read"), nil).JSON(t, &devs)
			if len(devs.Data) != 1 || devs.Data[0].Status != "online" {
				t.Fatalf("device after reports: %+v", devs.Data)
			}

			// Hostile payloads change nothing and crash nothing.
			_ = ag.Publish(ctx, telemetry.KindTelemetry, []byte(`{"v":1,"site":"`+site.ID+`","transports":[{"name":"mpls","sent":-1}]}`), false)
			_ = ag.Publish(ctx, telemetry.KindTelemetry, []byte("\x00\xff not json"), false)

			// mpls goes hard down: transport.down, voice switches to inet at once, decisions say so.
			if err := ag.Report(ctx, time.Now(), time.Second, sim.Window("mpls", 5, 5, 0, 0), sim.Window("inet", 5, 0, 35, 4)); err != nil {
				t.Fatal(err)
			}
			waitFor(t, func() bool {
				return len(rec.find(event.PathSwitched, map[string]string{"site": site.ID, "class": "voice", "from": "mpls", "to": "inet", "reason": "down"})) == 1 &&
					len(rec.find(event.TransportDown, map[string]string{"site": site.ID, "transport": "mpls"})) == 1
			})
			for {
				var d telemetry.Decisions
				nextOf(t, ag, telemetry.KindDecisions, &d)
				if d.Paths["voice"] == "inet" {
					break
				}
			}
			s.Do("GET", "/sd-wan/v1/sites/"+site.ID+"/health?window=1m", rw, nil).JSON(t, &h)
			if h.Status != "degraded" || h.SLA[0].Path != "inet" {
				t.Fatalf("health after mpls down: %+v", h)
			}
			var tr struct{ Data []sdwan.Transport }
			s.Do("GET", "/sd-wan/v1/sites/"+site.ID+"/transports", rw, nil).JSON(t, &tr)
			for _, x := range tr.Data {
				if x.Name == "mpls" && (x.Status != "down" || x.LossPct != 100) {
					t.Fatalf("mpls after the down report: %+v", x)
				}
			}

			// Publishing to another site's topic is refused (the broker drops the connection) and
			// opens a SOC case.
			pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
			_ = ag.PublishTopic(pctx, telemetry.Topic(other.ID, telemetry.KindTelemetry), []byte(`{}`))
			pcancel()
			waitFor(t, func() bool {
				var cases struct{ Data []soc.Case }
				s.Do("GET", "/v1/soc/cases?source=system", s.Key("soc:read"), nil).JSON(t, &cases)
				return len(cases.Data) == 1 && cases.Data[0].Rule == soc.RuleMQTTACL && cases.Data[0].Subject == acc.Device
			})

			// Silence: offline after --offline-after, announced.
			waitFor(t, func() bool {
				return len(rec.find(event.SiteOffline, map[string]string{"site": site.ID})) == 1 &&
					len(rec.find(event.DeviceStatusChanged, map[string]string{"site": site.ID, "status": "offline"})) == 1
			})
			var got sdwan.Site
			s.Do("GET", "/sd-wan/v1/sites/"+site.ID, rw, nil).JSON(t, &got)
			if got.Status != "offline" {
				t.Fatalf("site status %q; want offline", got.Status)
			}
			rec.mu.Lock()
			bad := rec.bad
			rec.mu.Unlock()
			if bad != 0 {
				t.Fatalf("%d deliveries failed signature checks", bad)
			}
		})
	}
}

// TestDecommissionDisconnects decommissions a reporting site: its agent is disconnected, cannot
// connect again, and the site leaves the controller's live state.
func TestDecommissionDisconnects(t *testing.T) {
	s := servertest.Start(t, servertest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rw := s.Key("sdwan:read", "sdwan:write")
	var site sdwan.Site
	s.Do("POST", "/sd-wan/v1/sites", rw, branchSite).JSON(t, &site)
	acc, ag := claimAgent(ctx, t, s, site.Claim, "br")
	defer ag.Close()
	if err := ag.Report(ctx, time.Now(), time.Second, sim.Window("mpls", 5, 0, 20, 1), sim.Window("inet", 5, 0, 30, 1)); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, s.Do("DELETE", "/sd-wan/v1/sites/"+site.ID, rw, nil), 204)
	waitFor(t, func() bool { return !ag.Connected() })
	if _, err := sim.Connect(ctx, acc); err == nil {
		t.Fatal("a decommissioned site's agent connected again")
	}
	var h sdwan.Health
	s.Do("GET", "/sd-wan/v1/sites/"+site.ID+"/health", rw, nil).JSON(t, &h)
	if h.Status != "decommissioned" || len(h.SLA) != 0 {
		t.Fatalf("health of a decommissioned site: %+v", h)
	}
}
