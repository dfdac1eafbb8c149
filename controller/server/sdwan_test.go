package server_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/edgewan/edgewan/controller/sdwan"
	"github.com/edgewan/edgewan/controller/server/servertest"
	"github.com/edgewan/edgewan/coreapi/soc"
)

func wantStatus(t *testing.T, r *servertest.Response, status int) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("got %d %s; want %d", r.Status, r.Body, status)
	}
}

func wantError(t *testing.T, r *servertest.Response, status int, code string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("got %d %s; want %d %s", r.Status, r.Body, status, code)
	}
	if got := r.Err(t).Error.Code; got != code {
		t.Fatalf("error code %q; want %q (%s)", got, code, r.Body)
	}
}

const branchSite = `{"name":"Branch 12","role":"branch","location":{"city":"Lyon","country":"FR"},"segments":["corporate","guest"],
 "transports":[{"name":"mpls","kind":"mpls","interface":"eth1","gateway":"198.18.1.1","probe_targets":["198.18.100.1"],"bandwidth_kbps":20000,"cost":10},
               {"name":"inet","kind":"broadband","interface":"eth2","gateway":"198.18.2.1","probe_targets":["198.18.100.1"],"bandwidth_kbps":100000,"cost":1}]}`

func TestSitesAndClaim(t *testing.T) {
	backends(t, func(t *testing.T, s *servertest.Server) {
		rw := s.Key("sdwan:read", "sdwan:write")
		var site sdwan.Site
		r := s.Do("POST", "/sd-wan/v1/sites", rw, branchSite)
		wantStatus(t, r, 201)
		r.JSON(t, &site)
		if site.Status != "pending" || !strings.HasPrefix(site.Claim, "ewc_") || site.ClaimExpiresAt.Before(time.Now().Add(6*24*time.Hour)) || len(site.Transports) != 2 {
			t.Fatalf("created site: %s", r.Body)
		}
		wantError(t, s.Do("POST", "/sd-wan/v1/sites", rw, `{"name":"Branch 12"}`), 409, "conflict")

		// The claim token is shown only at creation.
		r = s.Do("GET", "/sd-wan/v1/sites/"+site.ID, rw, nil)
		wantStatus(t, r, 200)
		if strings.Contains(string(r.Body), site.Claim) || strings.Contains(string(r.Body), "claim_token") {
			t.Fatalf("GET shows the claim token: %s", r.Body)
		}

		// Transports: add one, a duplicate is 409, bad input is 400.
		wantStatus(t, s.Do("POST", "/sd-wan/v1/sites/"+site.ID+"/transports", rw, `{"name":"lte","kind":"lte","interface":"wwan0"}`), 201)
		wantError(t, s.Do("POST", "/sd-wan/v1/sites/"+site.ID+"/transports", rw, `{"name":"lte","kind":"lte","interface":"wwan0"}`), 409, "conflict")
		for _, body := range []string{`{"name":"Bad Name","interface":"x"}`, `{"name":"x","kind":"pigeon","interface":"x"}`,
			`{"name":"x","interface":"eth0","gateway":"not-ip"}`, `{"name":"x","interface":"a/b"}`, `{"name":"x","interface":"e","probe_targets":["1.2.3"]}`} {
			wantError(t, s.Do("POST", "/sd-wan/v1/sites/"+site.ID+"/transports", rw, body), 400, "bad_request")
		}
		wantError(t, s.Do("POST", "/sd-wan/v1/sites/site_nope/transports", rw, `{"name":"x","interface":"e"}`), 404, "not_found")
		var trs struct{ Data []sdwan.Transport }
		s.Do("GET", "/sd-wan/v1/sites/"+site.ID+"/transports?order=asc", rw, nil).JSON(t, &trs)
		if len(trs.Data) != 3 {
			t.Fatalf("got %d transports; want 3", len(trs.Data))
		}

		// Claim: wrong serial is refused when one was pre-staged; the right token works once.
		var pinned sdwan.Site
		s.Do("POST", "/sd-wan/v1/sites", rw, `{"name":"Pinned","serial":"SN-1"}`).JSON(t, &pinned)
		wantError(t, s.Do("POST", "/sd-wan/v1/claim", "", map[string]string{"claim_token": pinned.Claim, "serial": "SN-2"}), 401, sdwan.CodeClaimSerial)

		var res sdwan.ClaimResult
		r = s.Do("POST", "/sd-wan/v1/claim", "", map[string]string{"claim_token": site.Claim, "hostname": "br12-r1", "version": "1.0.0"})
		wantStatus(t, r, 200)
		r.JSON(t, &res)
		if res.Device == "" || res.MQTT.Username != res.Device || len(res.MQTT.Password) < 22 || res.Site.ID != site.ID {
			t.Fatalf("claim result: %s", r.Body)
		}
		wantError(t, s.Do("POST", "/sd-wan/v1/claim", "", map[string]string{"claim_token": site.Claim}), 401, sdwan.CodeClaimUsed)
		wantError(t, s.Do("POST", "/sd-wan/v1/claim", "", map[string]string{"claim_token": "ewc_nope"}), 401, sdwan.CodeClaimUnknown)
		wantError(t, s.Do("POST", "/sd-wan/v1/claim", "", `{"claim_token":1}`), 400, "bad_request")

		// The device appears in the core inventory.
		var devs struct {
			Data []struct{ ID, Site, Status, Version string }
		}
		s.Do("GET", "/v1/devices?site="+site.ID, s.Key("devices:read"), nil).JSON(t, &devs)
		if len(devs.Data) != 1 || devs.Data[0].ID != res.Device || devs.Data[0].Version != "1.0.0" {
			t.Fatalf("devices after claim: %+v", devs.Data)
		}
		// Reuse opened a SOC case.
		waitFor(t, func() bool {
			var cases struct{ Data []soc.Case }
			s.Do("GET", "/v1/soc/cases?source=system", s.Key("soc:read"), nil).JSON(t, &cases)
			return len(cases.Data) == 1 && cases.Data[0].Rule == soc.RuleClaimReuse && cases.Data[0].Subject == site.ID
		})

		var short sdwan.Site
		s.Do("POST", "/sd-wan/v1/sites", rw, `{"name":"Short","claim_ttl":"1m"}`).JSON(t, &short)
		wantError(t, s.Do("POST", "/sd-wan/v1/sites", rw, `{"name":"x","claim_ttl":"2s"}`), 400, "bad_request")

		// Lists and filters.
		var sites struct{ Data []sdwan.Site }
		s.Do("GET", "/sd-wan/v1/sites?status=pending", rw, nil).JSON(t, &sites)
		if len(sites.Data) != 2 {
			t.Fatalf("pending sites: got %d; want 2 (Pinned, Short)", len(sites.Data))
		}
		wantError(t, s.Do("GET", "/sd-wan/v1/sites?status=happy", rw, nil), 400, "bad_request")

		// PATCH and DELETE (decommission).
		r = s.Do("PATCH", "/sd-wan/v1/sites/"+site.ID, rw, `{"name":"Branch 12 Lyon","segments":["corporate","iot"]}`)
		wantStatus(t, r, 200)
		wantStatus(t, s.Do("DELETE", "/sd-wan/v1/sites/"+short.ID, rw, nil), 204)
		var gone sdwan.Site
		s.Do("GET", "/sd-wan/v1/sites/"+short.ID, rw, nil).JSON(t, &gone)
		if gone.Status != "decommissioned" {
			t.Fatalf("after DELETE status %q; want decommissioned", gone.Status)
		}
		wantError(t, s.Do("POST", "/sd-wan/v1/claim", "", map[string]string{"claim_token": short.Claim}), 401, sdwan.CodeClaimUsed)

		// Health of a site with no live state yet, and bad windows.
		wantStatus(t, s.Do("GET", "/sd-wan/v1/sites/"+site.ID+"/health?window=1h", rw, nil), 200)
		for _, w := range []string{"30s", "31d", "abc", "-5m", "0"} {
			wantError(t, s.Do("GET", "/sd-wan/v1/sites/"+site.ID+"/health?window="+w, rw, nil), 400, "bad_request")
		}
	})
}

func TestPoliciesPublish(t *testing.T) {
	backends(t, func(t *testing.T, s *servertest.Server) {
		rw := s.Key("sdwan:read", "sdwan:write")
		var site, small sdwan.Site
		s.Do("POST", "/sd-wan/v1/sites", rw, branchSite).JSON(t, &site)
		s.Do("POST", "/sd-wan/v1/sites", rw, `{"name":"Kiosk","transports":[{"name":"inet","interface":"eth0"}]}`).JSON(t, &small)

		v1 := `{"classes":[{"name":"voice","max_latency_ms":150,"max_loss_pct":1,"max_jitter_ms":30},{"name":"bulk"}],
		  "rules":[{"name":"sip","class":"voice","application":"sip"},{"class":"voice","dscp":[46]}],
		  "paths":{"voice":["mpls","inet"],"bulk":["inet","mpls"]},"default_class":"bulk"}`
		var pol sdwan.Policy
		r := s.Do("POST", "/sd-wan/v1/policies", rw, `{"name":"standard","type":"steering","content":`+v1+`}`)
		wantStatus(t, r, 201)
		r.JSON(t, &pol)
		if len(pol.Versions) != 1 || pol.Versions[0].Status != "draft" || pol.PublishedVersion != 0 {
			t.Fatalf("created policy: %s", r.Body)
		}
		bad := []string{
			`{"name":"x","type":"firewall"}`,
			`{"name":"x","type":"steering","content":{"classes":[]}}`,
			`{"name":"x","type":"steering","content":{"classes":[{"name":"a"}],"paths":{"b":["x"]}}}`,
			`{"name":"x","type":"steering","content":{"classes":[{"name":"a"}],"paths":{"a":["x"]},"rules":[{"class":"a"}]}}`,
			`{"name":"x","type":"steering","content":{"classes":[{"name":"a"}],"paths":{"a":["x"]},"rules":[{"class":"a","dscp":[64]}]}}`,
			`{"name":"x","type":"steering","content":{"classes":[{"name":"a"}],"paths":{"a":["x"]},"rules":[{"class":"a","ports":["80"]}]}}`,
			`{"name":"x","type":"steering","content":{"classes":[{"name":"a"}],"paths":{"a":["x"]},"surprise":1}}`,
			`{"name":"x","type":"qos","content":{"transports":[{"transport":"x","rate_kbps":100,"classes":[{"class":"a","rate_kbps":80,"ceil_kbps":100},{"class":"b","rate_kbps":30,"ceil_kbps":50}]}]}}`,
		}
		for _, b := range bad {
			wantError(t, s.Do("POST", "/sd-wan/v1/policies", rw, b), 400, "bad_request")
		}
		wantError(t, s.Do("POST", "/sd-wan/v1/policies", rw, `{"name":"standard","type":"qos"}`), 409, "conflict")

		// Publishing to a site lacking a transport is 422 and changes nothing.
		r = s.Do("POST", "/sd-wan/v1/policies/"+pol.ID+"/publish", rw, map[string]any{"version": 1, "sites": []string{site.ID, small.ID}})
		wantError(t, r, 422, "unprocessable")
		if !strings.Contains(r.Err(t).Error.Message, "mpls") {
			t.Fatalf("422 message does not name the missing transport: %s", r.Body)
		}
		wantError(t, s.Do("POST", "/sd-wan/v1/policies/"+pol.ID+"/publish", rw, `{"version":9,"sites":["`+site.ID+`"]}`), 422, "unprocessable")
		wantError(t, s.Do("POST", "/sd-wan/v1/policies/"+pol.ID+"/publish", rw, `{"version":1}`), 422, "unprocessable")

		var pub sdwan.PublishResult
		r = s.Do("POST", "/sd-wan/v1/policies/"+pol.ID+"/publish", rw, map[string]any{"version": 1, "sites": []string{site.ID}, "comment": "first"})
		wantStatus(t, r, 202)
		r.JSON(t, &pub)
		if pub.Change.Version != 1 || pub.Change.FromVersion != 0 || len(pub.Rollout) != 1 || pub.Rollout[0].State != "pending" || len(pub.Change.Diff) == 0 {
			t.Fatalf("publish: %s", r.Body)
		}

		// Version 2 swaps the voice path; its change record's diff says exactly that.
		v2 := strings.Replace(v1, `"voice":["mpls","inet"]`, `"voice":["inet","mpls"]`, 1)
		wantStatus(t, s.Do("POST", "/sd-wan/v1/policies/"+pol.ID+"/versions", rw, `{"content":`+v2+`,"comment":"prefer inet"}`), 201)
		r = s.Do("POST", "/sd-wan/v1/policies/"+pol.ID+"/publish", rw, `{"version":2}`) // the same sites as before
		wantStatus(t, r, 202)
		r.JSON(t, &pub)
		want := `~ paths.voice: ["mpls","inet"] -> ["inet","mpls"]`
		if pub.Change.FromVersion != 1 || len(pub.Change.Diff) != 1 || pub.Change.Diff[0] != want {
			t.Fatalf("diff: %q; want [%q]", pub.Change.Diff, want)
		}
		s.Do("GET", "/sd-wan/v1/policies/"+pol.ID, rw, nil).JSON(t, &pol)
		if pol.PublishedVersion != 2 || pol.Versions[0].Status != "superseded" || pol.Versions[1].Status != "published" || len(pol.Rollout) != 1 || pol.Rollout[0].Version != 2 {
			b, _ := json.Marshal(pol)
			t.Fatalf("policy after v2: %s", b)
		}
		var changes struct{ Data []sdwan.Change }
		s.Do("GET", "/sd-wan/v1/changes?target="+pol.ID, rw, nil).JSON(t, &changes)
		if len(changes.Data) != 2 || changes.Data[0].Version != 2 || changes.Data[0].Actor == "" {
			t.Fatalf("changes: %+v", changes.Data)
		}
		var list struct{ Data []sdwan.Policy }
		s.Do("GET", "/sd-wan/v1/policies?type=steering", rw, nil).JSON(t, &list)
		if len(list.Data) != 1 || len(list.Data[0].Versions) != 2 {
			t.Fatalf("policies list: %+v", list.Data)
		}
		wantError(t, s.Do("GET", "/sd-wan/v1/policies", s.Key("sdwan:write"), nil), 403, "invalid_scope")
		wantError(t, s.Do("POST", "/sd-wan/v1/policies", s.Key("sdwan:read"), `{}`), 403, "invalid_scope")
	})
}

// waitFor polls an asynchronous effect until it holds, for at most 10 seconds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
