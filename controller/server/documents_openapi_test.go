package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	"github.com/edgewan/edgewan/aigw/document/documenttest"
	"github.com/edgewan/edgewan/aigw/gateway"
	"github.com/edgewan/edgewan/aigw/proposal"
	"github.com/edgewan/edgewan/controller/server/servertest"
)

// documentsFamily exercises document capture and Automatic mode for TestOpenAPIConformance:
// every status each operation documents, bodies checked against their schemas.
func (c *oaChecker) documentsFamily(all string) {
	t, s := c.t, c.s
	const project = "oa-docs"
	user, admin := s.ProjectKey(project), oaAdminKey(t, s, project)

	// document.captured and policy.proposed go to a receiver of their own.
	var mu sync.Mutex
	var delivered [][]byte
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		delivered = append(delivered, b)
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(recv.Close)
	c.want(c.do("POST", "/v1/webhooks", "/v1/webhooks", all, map[string]any{
		"url": recv.URL + "/docs", "events": []string{"document.captured", "policy.proposed"},
	}), 201)

	upload := func(token string, f docForm) *servertest.Response {
		t.Helper()
		ct, body := f.encode(t)
		return c.raw("POST", "/ai-gateway/v1/documents", "/ai-gateway/v1/documents", token, ct, body)
	}
	docsDoc, docDoc := "/ai-gateway/v1/documents", "/ai-gateway/v1/documents/{id}"
	r := upload(user, docForm{file: []byte(documenttest.Invoice), filename: "invoice.txt", fields: [][2]string{{"webhook", "true"}}})
	c.want(r, 201)
	var d gateway.Document
	r.JSON(t, &d)
	r = upload(user, docForm{file: documenttest.TextPDF(t, documenttest.Invoice), fields: [][2]string{{"project", project}, {"async", "true"}}})
	c.want(r, 202)
	var queued gateway.Document
	r.JSON(t, &queued)
	c.wantErr(upload(user, docForm{file: documenttest.Corrupt(t)}), 422, "unprocessable")
	c.wantErr(upload(user, docForm{file: documenttest.HugePNG(t, 8000, 6000)}), 413, "payload_too_large")
	c.wantErr(upload(user, docForm{file: []byte("GIF89a\x01\x00\x01\x00")}), 415, "unsupported_media_type")
	c.wantErr(c.raw("POST", docsDoc, docsDoc, user, "application/json", []byte(`{"project":"oa-docs"}`)), 415, "unsupported_media_type")
	c.wantErr(upload(user, docForm{file: []byte("x"), fields: [][2]string{{"colour", "red"}}}), 400, "bad_request")
	c.wantErr(upload(user, docForm{file: []byte("x"), fields: [][2]string{{"project", "oa-other"}}}), 403, "forbidden")
	c.wantErr(upload(all, docForm{file: []byte("x")}), 403, "forbidden")
	c.want(upload("", docForm{file: []byte("x")}), 401)

	c.want(c.do("GET", docsDoc, docsDoc+"?limit=1&status=captured&type=invoice", user, nil), 200)
	c.wantErr(c.do("GET", docsDoc, docsDoc+"?status=lost", user, nil), 400, "bad_request")
	c.wantErr(c.do("GET", docsDoc, docsDoc, all, nil), 403, "forbidden")
	c.want(c.do("GET", docsDoc, docsDoc, "", nil), 401)
	c.want(c.do("GET", docDoc, docsDoc+"/"+d.ID, user, nil), 200)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		r := c.do("GET", docDoc, docsDoc+"/"+queued.ID, user, nil)
		c.want(r, 200)
		r.JSON(t, &queued)
		if queued.Status != gateway.DocProcessing || time.Now().After(deadline) {
			break
		}
	}
	if queued.Status != gateway.DocCaptured {
		t.Errorf("queued document: %+v", queued)
	}
	c.wantErr(c.do("GET", docDoc, docsDoc+"/doc_nope", user, nil), 404, "not_found")
	c.wantErr(c.do("GET", docDoc, docsDoc+"/"+d.ID, s.ProjectKey("oa-other"), nil), 404, "not_found")
	c.wantErr(c.do("GET", docDoc, docsDoc+"/"+d.ID, all, nil), 403, "forbidden")
	c.want(c.do("GET", docDoc, docsDoc+"/"+d.ID, "", nil), 401)

	// Automatic mode: an analysis (too few records: nothing proposed), and proposals stored
	// directly to accept and dismiss.
	listDoc, path := "/ai-gateway/v1/projects/{id}/proposals", "/ai-gateway/v1/projects/"+project+"/proposals"
	c.want(c.do("POST", listDoc, path, admin, nil), 200)
	// A policy that lets URLs through and 20 requests with one: the analysis proposes to
	// redact them (policy.proposed).
	r = c.do("POST", "/ai-gateway/v1/policies", "/ai-gateway/v1/policies", admin, map[string]any{"name": "oa-docs", "content": map[string]any{"entities": map[string]string{"url": "allow"}}})
	c.want(r, 201)
	var pol gateway.Policy
	r.JSON(t, &pol)
	c.want(c.do("POST", "/ai-gateway/v1/policies/{id}/publish", "/ai-gateway/v1/policies/"+pol.ID+"/publish", admin, map[string]any{"version": 1}), 200)
	for i := range 20 {
		c.want(c.do("POST", "/ai-gateway/v1/sanitize", "/ai-gateway/v1/sanitize", user, map[string]any{"project": project, "text": fmt.Sprintf("see https://wiki.example.com/%d", i)}), 200)
	}
	r = c.do("POST", listDoc, path, admin, nil)
	c.want(r, 200)
	var res gateway.AnalyzeResult
	r.JSON(t, &res)
	if len(res.Proposed) != 1 {
		t.Errorf("analysis: %s", r.Body)
	}
	c.wantErr(c.do("POST", listDoc, path, user, nil), 403, "invalid_scope")
	c.want(c.do("POST", listDoc, path, "", nil), 401)
	now := time.Now().UTC().Truncate(time.Microsecond)
	var ps []*gateway.Proposal
	for i, ch := range []proposal.Change{{Op: proposal.OpSetEntityAction, Entity: "url", Action: "redact"}, {Op: proposal.OpSetEntityAction, Entity: "ip_address", Action: "mask"}} {
		p := &gateway.Proposal{ID: fmt.Sprintf("prop_oa%d", i), Project: project, Status: gateway.ProposalOpen, Kind: proposal.KindEntityPassedThrough,
			Title: ch.Entity, Change: ch, Evidence: proposal.Evidence{Records: 20, Matches: 5, Share: 0.25, Samples: []string{"req_x"}, Since: now, Until: now, Detail: "test"},
			Policy: gateway.PolicyRef{ID: "default"}, CreatedAt: now, UpdatedAt: now, Fingerprint: ch.Entity}
		if _, _, err := s.Store.Gateway().InsertProposal(context.Background(), p, nil); err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	c.want(c.do("GET", listDoc, path+"?status=open&kind=entity_passed_through&limit=1", user, nil), 200)
	c.wantErr(c.do("GET", listDoc, path+"?status=maybe", user, nil), 400, "bad_request")
	c.wantErr(c.do("GET", listDoc, "/ai-gateway/v1/projects/oa-other/proposals", user, nil), 403, "forbidden")
	c.want(c.do("GET", listDoc, path, "", nil), 401)
	oneDoc := "/ai-gateway/v1/proposals/{id}"
	c.want(c.do("GET", oneDoc, "/ai-gateway/v1/proposals/"+ps[0].ID, user, nil), 200)
	c.wantErr(c.do("GET", oneDoc, "/ai-gateway/v1/proposals/prop_nope", user, nil), 404, "not_found")
	c.wantErr(c.do("GET", oneDoc, "/ai-gateway/v1/proposals/"+ps[0].ID, all, nil), 403, "forbidden")
	c.want(c.do("GET", oneDoc, "/ai-gateway/v1/proposals/"+ps[0].ID, "", nil), 401)
	big := append([]byte(`{"comment":"`), bytes.Repeat([]byte("a"), 1<<20)...)
	for i, verb := range []string{"accept", "dismiss"} {
		doc, p := "/ai-gateway/v1/proposals/{id}/"+verb, "/ai-gateway/v1/proposals/"+ps[i].ID+"/"+verb
		c.wantErr(c.do("POST", doc, p, admin, map[string]any{"colour": "red"}), 400, "bad_request")
		c.wantErr(c.raw("POST", doc, p, admin, "text/plain", []byte(`{}`)), 415, "unsupported_media_type")
		c.wantErr(c.raw("POST", doc, p, admin, "application/json", append(big, `"}`...)), 413, "payload_too_large")
		c.wantErr(c.do("POST", doc, p, user, map[string]any{}), 403, "invalid_scope")
		c.want(c.do("POST", doc, p, "", map[string]any{}), 401)
		c.wantErr(c.do("POST", doc, "/ai-gateway/v1/proposals/prop_nope/"+verb, admin, map[string]any{}), 404, "not_found")
		c.want(c.do("POST", doc, p, admin, map[string]any{"comment": "oa"}), 200)
		c.wantErr(c.do("POST", doc, p, admin, map[string]any{}), 409, "conflict")
	}

	// The events: their envelope and data as documented.
	envelope := c.doc.Components.Schemas["EventEnvelope"]
	schemas := map[string]string{"document.captured": "DocumentCapturedData", "policy.proposed": "PolicyProposedData"}
	seen := map[string]int{}
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		mu.Lock()
		n := len(delivered)
		mu.Unlock()
		if n >= 3 || time.Now().After(deadline) { // 2 documents captured, 1 proposal
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for i, b := range delivered {
		var ev map[string]any
		if err := json.Unmarshal(b, &ev); err != nil {
			t.Fatalf("event %d: %s", i, b)
		}
		typ, _ := ev["type"].(string)
		seen[typ]++
		c.validate(fmt.Sprintf("%s event envelope", typ), envelope, ev)
		c.validate(fmt.Sprintf("%s event data", typ), c.doc.Components.Schemas[schemas[typ]], ev["data"])
	}
	if seen["document.captured"] != 2 || seen["policy.proposed"] != 1 {
		t.Errorf("events %v; want 2 document.captured and 1 policy.proposed", seen)
	}
}
