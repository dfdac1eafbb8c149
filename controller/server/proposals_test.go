package server_test

// Automatic mode over HTTPS: audit records made by real sanitize requests, proposals with
// evidence, the policy.proposed event, accept into a draft version, dismiss.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgewan/edgewan/aigw/gateway"
	"github.com/edgewan/edgewan/aigw/proposal"
	"github.com/edgewan/edgewan/controller/server/servertest"
	"github.com/edgewan/edgewan/coreapi/auth"
)

func TestProposals(t *testing.T) {
	for _, pg := range []bool{false, true} {
		name := map[bool]string{false: "sqlite", true: "postgres"}[pg]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testProposals(t, pg)
		})
	}
}

func propList(t *testing.T, s *servertest.Server, tok, query string) []gateway.Proposal {
	t.Helper()
	r := s.Do("GET", "/ai-gateway/v1/projects/auto/proposals"+query, tok, nil)
	if r.Status != 200 {
		t.Fatalf("list proposals: %d %s", r.Status, r.Body)
	}
	var l struct{ Data []gateway.Proposal }
	r.JSON(t, &l)
	return l.Data
}

func testProposals(t *testing.T, pg bool) {
	var mu sync.Mutex
	var events []map[string]any
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev map[string]any
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &ev)
		mu.Lock()
		events = append(events, ev)
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(recv.Close)
	s := servertest.Start(t, servertest.Options{Postgres: pg})
	if r := s.Do("POST", "/v1/webhooks", s.Key("webhooks:write"), map[string]any{"url": recv.URL, "events": []string{"policy.proposed"}}); r.Status != 201 {
		t.Fatalf("webhook: %d %s", r.Status, r.Body)
	}
	const project = "auto"
	tok := s.ProjectKey(project)
	_, admin, err := auth.Create(context.Background(), s.Store, "admin", []string{auth.ScopeAIGWAdmin}, project)
	if err != nil {
		t.Fatal(err)
	}

	// A policy that lets URLs through, has a hand-written rule for a codename and one that
	// can never match what the project sends.
	r := s.Do("POST", "/ai-gateway/v1/policies", admin, map[string]any{"name": "main", "content": map[string]any{
		"entities": map[string]string{"url": "allow"},
		"block": map[string]any{
			"keywords": []map[string]any{{"name": "codename", "words": []string{"falcon"}, "case_insensitive": true}},
			"patterns": []map[string]any{{"name": "legacy-ticket", "regex": `TCK-\d{9}`}},
		}}})
	var pol gateway.Policy
	r.JSON(t, &pol)
	if r := s.Do("POST", "/ai-gateway/v1/policies/"+pol.ID+"/publish", admin, map[string]any{"version": 1}); r.Status != 200 {
		t.Fatalf("publish: %d %s", r.Status, r.Body)
	}

	// Too few records: nothing proposed.
	r = s.Do("POST", "/ai-gateway/v1/projects/auto/proposals", admin, nil)
	var res gateway.AnalyzeResult
	r.JSON(t, &res)
	if r.Status != 200 || len(res.Proposed) != 0 {
		t.Fatalf("analysis of an empty log: %d %s", r.Status, r.Body)
	}

	// 30 requests: 10 with a URL, 6 mentioning the codename, each with an e-mail address.
	for i := range 30 {
		text := fmt.Sprintf("request %d about the quarterly numbers", i)
		switch {
		case i < 10:
			text += fmt.Sprintf(", see https://wiki.example.com/page/%d", i)
		case i < 16:
			text += fmt.Sprintf(": project Falcon update from worker%d@example.com", i)
		}
		if r := s.Do("POST", "/ai-gateway/v1/sanitize", tok, map[string]any{"project": project, "text": text}); r.Status != 200 {
			t.Fatalf("sanitize: %d %s", r.Status, r.Body)
		}
	}
	r = s.Do("POST", "/ai-gateway/v1/projects/auto/proposals", admin, nil)
	r.JSON(t, &res)
	if r.Status != 200 || res.Records != 30 || len(res.Proposed) != 3 || res.Policy.ID != pol.ID {
		t.Fatalf("analysis: %d %s", r.Status, r.Body)
	}
	byKind := map[string]gateway.Proposal{}
	for _, p := range propList(t, s, tok, "?status=open") {
		byKind[p.Kind] = p
	}
	url, block, never := byKind["entity_passed_through"], byKind["recurring_block"], byKind["rule_never_fires"]
	if url.Change.Entity != "url" || url.Change.Action != "redact" || url.Evidence.Matches != 10 || url.Evidence.Records != 30 || len(url.Evidence.Samples) != 5 {
		t.Errorf("url proposal: %+v", url)
	}
	if block.Change.Entity != "email" || block.Change.Action != "block" || block.Evidence.Matches != 6 {
		t.Errorf("recurring block proposal: %+v", block)
	}
	if never.Change.Op != "remove_rule" || never.Change.Rule != "legacy-ticket" {
		t.Errorf("never-fires proposal: %+v", never)
	}
	if url.Policy.ID != pol.ID || url.Policy.Version != 1 || url.Status != "open" {
		t.Errorf("proposal policy/status: %+v", url)
	}

	// Analysing again proposes nothing new.
	r = s.Do("POST", "/ai-gateway/v1/projects/auto/proposals", admin, nil)
	r.JSON(t, &res)
	if len(res.Proposed) != 0 {
		t.Errorf("second analysis proposed %d again", len(res.Proposed))
	}
	if got := propList(t, s, tok, "?kind=rule_never_fires"); len(got) != 1 {
		t.Errorf("kind filter: %d", len(got))
	}

	// Accept: a new draft version with the change; the published version is unchanged.
	r = s.Do("POST", "/ai-gateway/v1/proposals/"+url.ID+"/accept", admin, map[string]any{"comment": "yes"})
	var acc gateway.Proposal
	r.JSON(t, &acc)
	if r.Status != 200 || acc.Status != "accepted" || acc.Resolution == nil || acc.Resolution.Policy != pol.ID || acc.Resolution.Version != 2 {
		t.Fatalf("accept: %d %s", r.Status, r.Body)
	}
	r = s.Do("GET", "/ai-gateway/v1/policies/"+pol.ID, tok, nil)
	r.JSON(t, &pol)
	if len(pol.Versions) != 2 || pol.Versions[1].Status != "draft" || pol.PublishedVersion != 1 {
		t.Fatalf("policy after accept: %s", r.Body)
	}
	var content struct {
		Entities map[string]string
	}
	_ = json.Unmarshal(pol.Versions[1].Content, &content)
	if content.Entities["url"] != "redact" {
		t.Errorf("draft entities %v; want url: redact", content.Entities)
	}
	if r := s.Do("POST", "/ai-gateway/v1/proposals/"+url.ID+"/accept", admin, map[string]any{}); r.Status != 409 {
		t.Errorf("accepting twice: %d; want 409", r.Status)
	}
	r = s.Do("POST", "/ai-gateway/v1/proposals/"+never.ID+"/dismiss", admin, map[string]any{"comment": "keep it"})
	if r.Status != 200 || !json.Valid(r.Body) {
		t.Fatalf("dismiss: %d %s", r.Status, r.Body)
	}
	if r := s.Do("POST", "/ai-gateway/v1/proposals/"+never.ID+"/accept", admin, map[string]any{}); r.Status != 409 {
		t.Errorf("accepting a dismissed proposal: %d; want 409", r.Status)
	}
	if r := s.Do("POST", "/ai-gateway/v1/proposals/"+block.ID+"/dismiss", tok, map[string]any{}); r.Status != 403 {
		t.Errorf("dismiss without aigw:admin: %d; want 403", r.Status)
	}
	if got := propList(t, s, tok, "?status=open"); len(got) != 1 || got[0].ID != block.ID {
		t.Errorf("open proposals after accept and dismiss: %+v", got)
	}
	if r := s.Do("GET", "/ai-gateway/v1/proposals/"+block.ID, s.ProjectKey("auto-other"), nil); r.Status != 404 {
		t.Errorf("another project's proposal: %d; want 404", r.Status)
	}
	if r := s.Do("GET", "/ai-gateway/v1/projects/auto/proposals", s.ProjectKey("auto-other"), nil); r.Status != 403 {
		t.Errorf("another project's proposals: %d; want 403", r.Status)
	}

	// policy.proposed: one event per proposal.
	deadline := time.Now().Add(15 * time.Second)
	for {
		mu.Lock()
		n := len(events)
		mu.Unlock()
		if n >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d policy.proposed events; want 3", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, ev := range events {
		data, _ := ev["data"].(map[string]any)
		if ev["type"] != "policy.proposed" || data["project"] != project || data["proposal_id"] == nil || data["change"] == nil {
			t.Errorf("event %v", ev)
		}
	}
}

// TestProposalDefaultPolicy: the analysis of a project on the default policy.
func TestProposalDefaultPolicy(t *testing.T) {
	s := servertest.Start(t, servertest.Options{})
	const project = "auto"
	_, admin, err := auth.Create(context.Background(), s.Store, "admin", []string{auth.ScopeAIGWAdmin}, project)
	if err != nil {
		t.Fatal(err)
	}
	// The default policy redacts every entity and has no hand-written rules: nothing to propose.
	for i := range 25 {
		s.Do("POST", "/ai-gateway/v1/sanitize", admin, map[string]any{"project": project, "text": fmt.Sprintf("mail me at a%d@example.com", i)})
	}
	r := s.Do("POST", "/ai-gateway/v1/projects/auto/proposals", admin, nil)
	var res gateway.AnalyzeResult
	r.JSON(t, &res)
	if r.Status != 200 || res.Records != 25 || len(res.Proposed) != 0 || res.Policy.ID != "default" {
		t.Fatalf("analysis under the default policy: %d %s", r.Status, r.Body)
	}

	// A proposal made for it (stored directly: the default leaves nothing to propose) is
	// accepted into version 1 of a new policy "automatic"; the project still runs the default.
	now := time.Now().UTC().Truncate(time.Microsecond)
	p := &gateway.Proposal{ID: "prop_test_default", Project: project, Status: gateway.ProposalOpen, Kind: "entity_passed_through",
		Title: "url: mask", Change: proposal.Change{Op: proposal.OpSetEntityAction, Entity: "url", Action: "mask"},
		Evidence: proposal.Evidence{Samples: []string{}}, Policy: gateway.PolicyRef{ID: "default"}, CreatedAt: now, UpdatedAt: now, Fingerprint: "test"}
	if ok, _, err := s.Store.Gateway().InsertProposal(context.Background(), p, nil); err != nil || !ok {
		t.Fatalf("InsertProposal: %v %v", ok, err)
	}
	r = s.Do("POST", "/ai-gateway/v1/proposals/"+p.ID+"/accept", admin, map[string]any{})
	var acc gateway.Proposal
	r.JSON(t, &acc)
	if r.Status != 200 || acc.Resolution == nil || acc.Resolution.Version != 1 {
		t.Fatalf("accept: %d %s", r.Status, r.Body)
	}
	r = s.Do("GET", "/ai-gateway/v1/policies/"+acc.Resolution.Policy, admin, nil)
	var pol gateway.Policy
	r.JSON(t, &pol)
	if pol.Name != gateway.AutomaticPolicy || len(pol.Versions) != 1 || pol.Versions[0].Status != "draft" || pol.Active {
		t.Fatalf("the automatic policy: %s", r.Body)
	}
	if r := s.Do("GET", "/ai-gateway/v1/projects/auto", admin, nil); !json.Valid(r.Body) || strings.Contains(string(r.Body), pol.ID) {
		t.Errorf("the project runs the new draft: %s", r.Body)
	}
}
