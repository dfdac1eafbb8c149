package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/edgewan/edgewan/agent/sim"
	"github.com/edgewan/edgewan/telemetry"
)

// TestCrashOnlyStartProperty drives random sequences of API calls and agent messages (sites
// with and without transports, claims, new transports, steering policies published to random
// sites, decommissions, reports valid and not, statuses with paths, acks, events), restarting
// the real controller binary after each sequence, alternately with SIGTERM and SIGKILL. It
// requires that the controller always starts and serves (every claimed site listed and
// readable), and never answers 5xx. Before every other restart it damages one stored object
// other than a site in the database, as a bad disk or a hand edit would (a webhook's sealed
// secret or URL, a draft policy version's content): the controller must still start and serve,
// show that object quarantined, and list the rest. EDGEWAN_CRASHONLY_SEQS sets the number of sequences (6),
// EDGEWAN_CRASHONLY_SEED the seed (logged, to replay a failure).
func TestCrashOnlyStartProperty(t *testing.T) {
	seqs := 6
	if v := os.Getenv("EDGEWAN_CRASHONLY_SEQS"); v != "" {
		seqs, _ = strconv.Atoi(v)
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("EDGEWAN_CRASHONLY_SEED"); v != "" {
		seed, _ = strconv.ParseUint(v, 10, 64)
	}
	t.Logf("seed %d (EDGEWAN_CRASHONLY_SEED replays it)", seed)
	rng := rand.New(rand.NewPCG(seed, 7))

	bin := ctlBinary(t)
	dir := t.TempDir()
	tok := ctlKey(t, bin, dir, "sdwan:read", "sdwan:write", "webhooks:write")
	w := &world{t: t, rng: rng, tok: tok, broken: map[string]bool{}}
	extra := []string{"--mqtt-listen", "127.0.0.1:0", "--offline-after", "5s", "--allow-http-webhooks"}
	p := ctlStart(t, bin, dir, extra...)
	w.p = p
	for range 3 { // nobody listens there: deliveries only fail and retry
		code, raw := w.call("POST", "/v1/webhooks", map[string]any{"url": "http://127.0.0.1:9/hook", "events": []string{"case.opened"}}, true)
		var wh struct{ ID string }
		if code != 201 || json.Unmarshal(raw, &wh) != nil {
			t.Fatalf("creating a webhook: %d %s", code, raw)
		}
		w.webhooks = append(w.webhooks, wh.ID)
	}
	for i := range seqs {
		w.p = p
		for range 15 + rng.IntN(20) {
			w.step()
		}
		w.closeAgents()
		if i%2 == 0 {
			p.signal(t, syscall.SIGKILL, 10*time.Second)
		} else if code, _ := p.signal(t, syscall.SIGTERM, 30*time.Second); code != 0 {
			t.Fatalf("sequence %d: graceful stop exited %d:\n%s", i, code, p.log())
		}
		if i%2 == 1 {
			w.damage(filepath.Join(dir, "edgewan.db"))
		}
		p = ctlStart(t, bin, dir, extra...) // fails the test if it does not start and serve
		w.p = p
		w.checkServes(i)
	}
	t.Logf("%d sequences, %d steps: %d sites (%d claimed), %d policies, %d reports sent", seqs, w.steps, len(w.sites), w.claimed(), len(w.policies), w.reports)
}

// world is what the random sequences built, as the test knows it.
type world struct {
	t        *testing.T
	rng      *rand.Rand
	p        *ctlProcess
	tok      string
	sites    []*propSite
	policies []string
	agents   []*sim.Agent
	steps    int
	reports  int
	webhooks []string
	broken   map[string]bool // API paths of objects damaged in the database: shown quarantined
}

// damage breaks one stored webhook or draft policy version in the stopped controller's
// database, picked at random, and notes its API path.
func (w *world) damage(dbPath string) {
	db, err := sql.Open("sqlite", "file:"+dbPath)
	if err != nil {
		w.t.Fatal(err)
	}
	defer db.Close()
	wh := w.webhooks[w.rng.IntN(len(w.webhooks))]
	other := w.webhooks[(slices.Index(w.webhooks, wh)+1)%len(w.webhooks)]
	var pol string
	var ver int
	draft := db.QueryRow("SELECT policy_id, version FROM policy_versions WHERE status = 'draft' ORDER BY policy_id, version LIMIT 1 OFFSET ?",
		w.rng.IntN(3)).Scan(&pol, &ver) == nil
	var path, q string
	var args []any
	switch op := w.rng.IntN(3); {
	case op == 0: // a sealed secret moved to another row does not open there
		path, q, args = "/v1/webhooks/"+wh, "UPDATE webhooks SET secret = (SELECT secret FROM webhooks WHERE id = ?) WHERE id = ?", []any{other, wh}
	case op == 1 || !draft:
		path, q, args = "/v1/webhooks/"+wh, "UPDATE webhooks SET url = '::damaged' WHERE id = ?", []any{wh}
	default:
		path, q, args = "/sd-wan/v1/policies/"+pol, "UPDATE policy_versions SET content = '{damaged' WHERE policy_id = ? AND version = ?", []any{pol, ver}
	}
	if _, err := db.Exec(q, args...); err != nil {
		w.t.Fatalf("damaging %s: %v", path, err)
	}
	w.t.Logf("damaged %s: %s %v", path, q, args)
	w.broken[path] = true
}

type propSite struct {
	id, claim, device string
	transports        []string
	access            *sim.Access
	decommissioned    bool
}

func (w *world) claimed() int {
	n := 0
	for _, s := range w.sites {
		if s.access != nil {
			n++
		}
	}
	return n
}

var propTransports = []string{"mpls", "inet", "lte", "sat"}

// call makes a request and requires an answer below 500; it returns the status and body.
func (w *world) call(method, path string, body any, auth bool) (int, []byte) {
	w.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, w.p.URL+path, rd)
	if auth {
		req.Header.Set("Authorization", "Bearer "+w.tok)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := w.p.Client.Do(req)
	if err != nil {
		w.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 500 {
		w.t.Fatalf("%s %s %s: %d %s\n%s", method, path, jsonOf(body), resp.StatusCode, raw, w.p.log())
	}
	return resp.StatusCode, raw
}

func jsonOf(v any) string { b, _ := json.Marshal(v); return string(b) }

func (w *world) pickSite() *propSite {
	if len(w.sites) == 0 {
		return nil
	}
	return w.sites[w.rng.IntN(len(w.sites))]
}

func (w *world) someTransports(max int) []string {
	var out []string
	for _, name := range propTransports[:w.rng.IntN(max+1)] {
		out = append(out, name)
	}
	return out
}

// step does one random thing.
func (w *world) step() {
	w.steps++
	r := w.rng
	switch op := r.IntN(10); {
	case op < 2 || len(w.sites) == 0: // a site, maybe without transports
		names := w.someTransports(3)
		var ts []map[string]any
		for i, n := range names {
			ts = append(ts, map[string]any{"name": n, "interface": "eth" + strconv.Itoa(i), "cost": r.IntN(5)})
		}
		body := map[string]any{"name": fmt.Sprintf("s%d-%d", w.steps, r.IntN(1000))}
		if ts != nil {
			body["transports"] = ts
		}
		code, raw := w.call("POST", "/sd-wan/v1/sites", body, true)
		if code == 201 {
			var s struct {
				ID    string `json:"id"`
				Claim string `json:"claim_token"`
			}
			_ = json.Unmarshal(raw, &s)
			w.sites = append(w.sites, &propSite{id: s.ID, claim: s.Claim, transports: names})
		}
	case op == 2: // claim (again, sometimes)
		s := w.pickSite()
		code, raw := w.call("POST", "/sd-wan/v1/claim", map[string]any{"claim_token": s.claim, "hostname": "h" + strconv.Itoa(w.steps)}, false)
		if code == 200 {
			var a sim.Access
			if err := json.Unmarshal(raw, &a); err != nil {
				w.t.Fatal(err)
			}
			s.access, s.device = &a, a.Device
		} else if s.access == nil && !s.decommissioned {
			w.t.Fatalf("claim of an unclaimed site %s: %d %s", s.id, code, raw)
		}
	case op == 3: // a transport more
		s := w.pickSite()
		name := propTransports[r.IntN(len(propTransports))]
		if code, _ := w.call("POST", "/sd-wan/v1/sites/"+s.id+"/transports", map[string]any{"name": name, "interface": "wan" + strconv.Itoa(r.IntN(9))}, true); code == 201 {
			s.transports = append(s.transports, name)
		}
	case op == 4: // a steering policy, its paths naming transports sites may not have, published
		paths := map[string][]string{"voice": w.someTransports(4), "default": w.someTransports(4)}
		content := map[string]any{"classes": []map[string]any{{"name": "voice", "max_latency_ms": 100 + r.IntN(100)}, {"name": "default"}},
			"paths": paths, "default_class": "default"}
		code, raw := w.call("POST", "/sd-wan/v1/policies", map[string]any{"name": "p" + strconv.Itoa(w.steps), "type": "steering", "content": content}, true)
		if code != 201 {
			return
		}
		var pol struct{ ID string }
		_ = json.Unmarshal(raw, &pol)
		w.policies = append(w.policies, pol.ID)
		var targets []string
		for _, s := range w.sites {
			if r.IntN(2) == 0 {
				targets = append(targets, s.id)
			}
		}
		w.call("POST", "/sd-wan/v1/policies/"+pol.ID+"/publish", map[string]any{"version": 1, "sites": targets}, true)
	case op == 5: // decommission, rarely
		if r.IntN(3) == 0 {
			s := w.pickSite()
			w.call("DELETE", "/sd-wan/v1/sites/"+s.id, nil, true)
			s.decommissioned = true
		}
	case op == 6: // an edit
		s := w.pickSite()
		w.call("PATCH", "/sd-wan/v1/sites/"+s.id, map[string]any{"location": map[string]any{"city": "c" + strconv.Itoa(r.IntN(9))}}, true)
	default: // agent messages from a claimed site
		var claimed []*propSite
		for _, s := range w.sites {
			if s.access != nil && !s.decommissioned {
				claimed = append(claimed, s)
			}
		}
		if len(claimed) == 0 {
			return
		}
		s := claimed[r.IntN(len(claimed))]
		a := w.agent(s)
		if a == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		names := append(w.someTransports(4), "ghost")
		var tws []telemetry.TransportWindow
		for _, n := range names[:1+r.IntN(len(names))] {
			lost := 0
			if r.IntN(4) == 0 {
				lost = 5
			}
			tws = append(tws, sim.Window(n, 5, lost, float64(10+r.IntN(300)), float64(r.IntN(40))))
		}
		age := time.Duration(r.IntN(3)) * 20 * time.Second // some late
		_ = a.Report(ctx, time.Now().Add(-age), time.Second, tws...)
		w.reports++
		switch r.IntN(4) {
		case 0:
			b, _ := json.Marshal(telemetry.Status{V: 1, Device: s.device, State: "online", Time: time.Now(), Paths: map[string]string{"voice": names[0], "ghost": "x"}})
			_ = a.Publish(ctx, telemetry.KindStatus, b, true)
		case 1:
			_ = a.Publish(ctx, telemetry.KindTelemetry, []byte(`{"v":1,"site":"`+s.id+`","seq":-1}`), false)
		case 2:
			if len(w.policies) > 0 {
				_ = a.Ack(ctx, w.policies[r.IntN(len(w.policies))], 1, "applied", "")
			}
		}
	}
}

// agent returns a connected simulated agent for a claimed site (nil if it cannot connect:
// its site may have been decommissioned meanwhile).
func (w *world) agent(s *propSite) *sim.Agent {
	for _, a := range w.agents {
		if a.Site == s.id && a.Connected() {
			return a
		}
	}
	acc := *s.access
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// The broker's port changes at each start (--mqtt-listen 127.0.0.1:0).
	acc.MQTT.URL = w.brokerURL()
	a, err := sim.Connect(ctx, &acc)
	if err != nil {
		return nil
	}
	w.agents = append(w.agents, a)
	return a
}

// brokerURL is the embedded broker's address as claims give it now.
func (w *world) brokerURL() string {
	b := w.p.log() // the controller logs it when it starts serving
	i := bytes.LastIndex([]byte(b), []byte("mqtt=127.0.0.1:"))
	if i < 0 {
		w.t.Fatalf("no broker address in the log:\n%s", b)
	}
	rest := b[i+len("mqtt="):]
	j := 0
	for j < len(rest) && rest[j] != ' ' && rest[j] != '\n' {
		j++
	}
	return "mqtts://" + rest[:j]
}

func (w *world) closeAgents() {
	for _, a := range w.agents {
		a.Kill()
	}
	w.agents = nil
}

// checkServes requires that the restarted controller serves every site it holds.
func (w *world) checkServes(i int) {
	code, raw := w.call("GET", "/sd-wan/v1/sites?limit=200", nil, true)
	if code != 200 {
		w.t.Fatalf("after restart %d: listing sites: %d %s", i, code, raw)
	}
	for _, s := range w.sites {
		code, raw := w.call("GET", "/sd-wan/v1/sites/"+s.id, nil, true)
		if code != 200 {
			w.t.Fatalf("after restart %d: site %s: %d %s", i, s.id, code, raw)
		}
		var got struct {
			ClaimedAt  string          `json:"claimed_at"`
			Quarantine json.RawMessage `json:"quarantine"`
		}
		_ = json.Unmarshal(raw, &got)
		if (s.access != nil) != (got.ClaimedAt != "") {
			w.t.Fatalf("after restart %d: site %s claimed %v here, %q there", i, s.id, s.access != nil, got.ClaimedAt)
		}
		if len(got.Quarantine) > 0 {
			w.t.Fatalf("after restart %d: site %s quarantined by data made through the API: %s", i, s.id, got.Quarantine)
		}
		w.call("GET", "/sd-wan/v1/sites/"+s.id+"/health?window=5m", nil, true)
	}
	for _, list := range []string{"/v1/webhooks?limit=100", "/sd-wan/v1/policies?limit=100"} {
		if code, raw := w.call("GET", list, nil, true); code != 200 {
			w.t.Fatalf("after restart %d: %s: %d %s", i, list, code, raw)
		}
	}
	for path := range w.broken {
		code, raw := w.call("GET", path, nil, true)
		if code != 200 || !bytes.Contains(raw, []byte(`"quarantine"`)) {
			w.t.Fatalf("after restart %d: damaged %s: %d %s; want it shown quarantined", i, path, code, raw)
		}
	}
}
