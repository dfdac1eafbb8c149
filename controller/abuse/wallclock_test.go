package abuse

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/edgewan/edgewan/agent/claim"
	"github.com/edgewan/edgewan/coreapi/soc"
)

// TestClockWallTime steps the controller's test clock an hour forward and checks that every
// controller-side decision on wall time follows it, and that windows measured as durations do
// not: a claim token of 30 minutes has expired and is valid again once the clock is back, an
// API key's last use, a case's, an AI gateway audit record's and the server time of /v1/ping
// are the controller's; failed authentications before and after the step still count in one window
// (the brute-force case is raised).
func TestClockWallTime(t *testing.T) {
	t.Parallel()
	c, step := newClockCtl(t)
	_, tok := c.Key("", "sdwan:read", "sdwan:write", "soc:read", "soc:write")
	c.Start()
	var site struct {
		Claim string `json:"claim_token"`
	}
	c.JSON("POST", "/sd-wan/v1/sites", tok, map[string]any{"name": "clock-claim", "claim_ttl": "30m", "transports": []map[string]any{
		{"name": "inet", "kind": "broadband", "interface": "eth0", "probe_targets": []string{"198.18.100.1"}}}}, &site)
	// Failed authentications from this client, half before the step and half after: one
	// window of 5 minutes (threshold 20) on the machine's monotonic clock.
	fail := func(n int) {
		for range n {
			if r := c.Do("GET", "/v1/ping", "ewk_0123456789abcdef0123_"+strings.Repeat("x", 43), nil); r.Status != 401 {
				t.Fatalf("a wrong token: %v %d %s", r.Err, r.Status, r.Body)
			}
		}
	}
	fail(10)

	step("1h")
	var ping struct{ Time time.Time }
	deadline := time.Now().Add(30 * time.Second)
	for { // the controller reads the offset file every 100 ms
		c.JSON("GET", "/v1/ping", tok, nil, &ping)
		if ping.Time.Sub(time.Now()) > 50*time.Minute {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/v1/ping's time %v: the controller's clock did not move an hour", ping.Time)
		}
		time.Sleep(100 * time.Millisecond) // polling the controller's reading of the file
	}
	near := func(what string, got time.Time) {
		t.Helper()
		if want := time.Now().Add(time.Hour); got.Before(want.Add(-5*time.Minute)) || got.After(want.Add(5*time.Minute)) {
			t.Errorf("%s is %v; want the controller's clock, about %v", what, got.UTC(), want.UTC())
		}
	}
	near("/v1/ping's time", ping.Time)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := claim.Claim(ctx, c.client(), c.URL, claim.Request{ClaimToken: site.Claim, Hostname: "clock-router"})
	var ce *claim.Error
	if !errors.As(err, &ce) || ce.Code != "claim_token_expired" {
		t.Errorf("a 30-minute claim token an hour later on the controller's clock: %v; want 401 claim_token_expired", err)
	}

	// A key first used now: its last use is the controller's time.
	keyID, fresh := c.Key("", "soc:read", "soc:write")
	var kase struct {
		ID        string
		CreatedAt time.Time `json:"created_at"`
	}
	c.JSON("POST", "/v1/soc/cases", fresh, map[string]any{"title": "made an hour ahead"}, &kase)
	near("a case's created_at", kase.CreatedAt)
	near("the key's last use", keyLastUsed(t, c, keyID))
	// The AI gateway's audit record (and its events) are dated by the controller's clock too.
	_, pk := c.Key("clockproj")
	r := c.Do("POST", "/ai-gateway/v1/sanitize", pk, []byte(`{"project":"clockproj","text":"mail zebra.quokka@example.org"}`))
	if r.Err != nil || r.Status != 200 {
		t.Fatalf("sanitize: %v %d %s", r.Err, r.Status, r.Body)
	}
	var rec struct {
		CreatedAt time.Time `json:"created_at"`
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) { // the audit writer commits in batches
		lr := c.Do("GET", "/ai-gateway/v1/logs/"+r.Header.Get("X-Request-Id"), pk, nil)
		if lr.Status == 200 && json.Unmarshal(lr.Body, &rec) == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sanitize's audit record: %d %s", lr.Status, lr.Body)
		}
	}
	near("an AI gateway audit record's created_at", rec.CreatedAt)
	fail(10)

	step("")
	deadline = time.Now().Add(30 * time.Second)
	for {
		c.JSON("GET", "/v1/ping", tok, nil, &ping)
		if ping.Time.Sub(time.Now()).Abs() < 10*time.Minute {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/v1/ping's time %v: the controller's clock did not come back", ping.Time)
		}
		time.Sleep(100 * time.Millisecond) // polling the controller's reading of the file
	}
	if _, err := claim.Claim(ctx, c.client(), c.URL, claim.Request{ClaimToken: site.Claim, Hostname: "clock-router"}); err != nil {
		t.Errorf("the same claim token with the clock back, within its 30 minutes: %v", err)
	}
	var cases struct {
		Data []struct{ ID, Rule string }
	}
	var brute bool
	for deadline := time.Now().Add(30 * time.Second); !brute && time.Now().Before(deadline); {
		c.JSON("GET", "/v1/soc/cases?source=system&limit=100", tok, nil, &cases)
		for _, k := range cases.Data {
			brute = brute || k.Rule == soc.RuleAuthBruteForce
		}
		if !brute {
			time.Sleep(200 * time.Millisecond) // the watcher raises its cases asynchronously
		}
	}
	if !brute {
		t.Errorf("20 failed authentications in a few seconds, half of them after a step of the clock: no %s case (cases: %+v)", soc.RuleAuthBruteForce, cases.Data)
	}
	figures.add(t, "clock wall time", "a 30 min claim token expired an hour ahead and valid again after; key last use, case, AI gateway audit record and ping times on the controller's clock; brute-force window across the step: case raised %v", brute)
}

// keyLastUsed reads a key's last use with `controller keys list` (written in the background,
// at most once a minute per key).
func keyLastUsed(t *testing.T, c *ctl, id string) time.Time {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		out, err := exec.Command(ctlBin, "keys", "list", "--data-dir", c.DataDir).Output()
		if err != nil {
			t.Fatalf("controller keys list: %v", err)
		}
		for _, l := range strings.Split(string(out), "\n") {
			f := strings.Fields(l)
			if len(f) >= 6 && f[0] == id && f[4] != "never" {
				at, err := time.Parse(time.RFC3339, f[4])
				if err != nil {
					t.Fatalf("keys list: %q: %v", l, err)
				}
				return at
			}
		}
	}
	t.Fatalf("key %s: no last use recorded within 30 s", id)
	return time.Time{}
}
