// Command simagent runs simulated branch agents against a controller for demos: it pre-stages
// sites with three transports, publishes a steering policy to them, claims them like a real
// agent, and reports synthetic telemetry every second (mpls steady, broadband noisy, LTE
// dropping out now and then) until interrupted.
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/edgewan/edgewan/agent/sim"
)

func main() {
	api := flag.String("api", "https://127.0.0.1:8443", "controller API base URL")
	caFile := flag.String("ca", "./data/tls/ca.crt", "the controller's CA certificate")
	token := flag.String("token", os.Getenv("EDGEWAN_TOKEN"), "API key with sdwan:read,sdwan:write (or EDGEWAN_TOKEN)")
	sites := flag.Int("sites", 2, "number of simulated sites")
	interval := flag.Duration("interval", time.Second, "report interval")
	flag.Parse()
	if *token == "" {
		log.Fatal("simagent: give --token or EDGEWAN_TOKEN")
	}
	pem, err := os.ReadFile(*caFile)
	if err != nil {
		log.Fatalf("simagent: %v", err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	c := &client{hc: hc, api: *api, token: *token}
	var policy struct{ ID string }
	if err := c.do("POST", "/sd-wan/v1/policies", `{"name":"demo-steering-`+fmt.Sprint(time.Now().Unix())+`","type":"steering","content":{
		"classes":[{"name":"voice","max_latency_ms":150,"max_loss_pct":1,"max_jitter_ms":30},{"name":"business","max_latency_ms":250,"max_loss_pct":3},{"name":"bulk"}],
		"rules":[{"name":"sip","class":"voice","application":"sip"},{"name":"ef","class":"voice","dscp":[46]},{"name":"crm","class":"business","destinations":["198.18.50.0/24"]}],
		"paths":{"voice":["mpls","inet","lte"],"business":["mpls","inet","lte"],"bulk":["inet","lte","mpls"]},"default_class":"bulk"}}`, &policy); err != nil {
		log.Fatalf("simagent: creating the policy: %v", err)
	}
	var agents []*sim.Agent
	var siteIDs []string
	for i := 0; i < *sites; i++ {
		var site struct {
			ID    string
			Claim string `json:"claim_token"`
		}
		body := fmt.Sprintf(`{"name":"Demo branch %d (%d)","location":{"city":"Lyon","country":"FR"},"transports":[
			{"name":"mpls","kind":"mpls","interface":"eth1","gateway":"198.18.1.1","probe_targets":["198.18.100.1"],"bandwidth_kbps":20000,"cost":10},
			{"name":"inet","kind":"broadband","interface":"eth2","gateway":"198.18.2.1","probe_targets":["198.18.100.1"],"bandwidth_kbps":100000,"cost":1},
			{"name":"lte","kind":"lte","interface":"wwan0","probe_targets":["198.18.100.1"],"bandwidth_kbps":10000,"cost":50}]}`, i+1, time.Now().Unix())
		if err := c.do("POST", "/sd-wan/v1/sites", body, &site); err != nil {
			log.Fatalf("simagent: pre-staging a site: %v", err)
		}
		siteIDs = append(siteIDs, site.ID)
		acc, err := sim.Claim(ctx, hc, *api, site.Claim, fmt.Sprintf("demo-router-%d", i+1))
		if err != nil {
			log.Fatalf("simagent: %v", err)
		}
		ag, err := sim.Connect(ctx, acc)
		if err != nil {
			log.Fatalf("simagent: %v", err)
		}
		defer ag.Close()
		agents = append(agents, ag)
		log.Printf("site %s claimed by %s", site.ID, acc.Device)
	}
	if err := c.do("POST", "/sd-wan/v1/policies/"+policy.ID+"/publish", fmt.Sprintf(`{"version":1,"sites":%s,"comment":"demo"}`, mustJSON(siteIDs)), nil); err != nil {
		log.Fatalf("simagent: publishing the policy: %v", err)
	}
	for _, ag := range agents { // acknowledge the policy as a real agent would once applied
		_ = ag.Ack(ctx, policy.ID, 1, "applied", "")
	}
	log.Printf("reporting every %s for %d sites; Ctrl-C to stop", *interval, len(agents))
	tick := time.NewTicker(*interval)
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			for i, ag := range agents {
				phase := float64(n+7*i) / 30
				inetLoss := 0
				if rand.IntN(10) == 0 {
					inetLoss = 1
				}
				lteDown := (n/40+i)%5 == 4 // LTE drops out for 40 s in every 200
				lte := sim.Window("lte", 5, 0, 60+10*math.Sin(phase), 8)
				if lteDown {
					lte = sim.Window("lte", 5, 5, 0, 0)
				}
				err := ag.Report(ctx, now, *interval,
					sim.Window("mpls", 5, 0, 18+2*math.Sin(phase), 1),
					sim.Window("inet", 5, inetLoss, 28+12*math.Abs(math.Sin(phase*3)), 4+3*rand.Float64()),
					lte)
				if err != nil && ctx.Err() == nil {
					log.Printf("report from %s: %v", ag.Site, err)
				}
			}
		}
	}
}

type client struct {
	hc         *http.Client
	api, token string
}

func (c *client) do(method, path, body string, out any) error {
	req, err := http.NewRequest(method, c.api+path, bytes.NewReader([]byte(body)))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, raw)
	}
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
