package server_test

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/edgewan/edgewan/aigw/gateway"
)

// TestAIGWBodyLimitBeforeRead: a body over a route's limit is a 413 on its Content-Length,
// before anything is read; a client that sent Expect: 100-continue gets the 413 in place of
// 100 Continue, and never has to send the body.
func TestAIGWBodyLimitBeforeRead(t *testing.T) {
	e := agStart(t, false, nil)
	tr := e.Client.Transport.(*http.Transport)
	host := strings.TrimPrefix(e.URL, "https://")
	for _, path := range []string{"/ai-gateway/v1/sanitize", "/ai-gateway/v1/chat", "/ai-gateway/v1/openai/chat/completions", "/ai-gateway/v1/policies/x/test"} {
		t.Run(path, func(t *testing.T) {
			conn, err := tls.Dial("tcp", host, tr.TLSClientConfig)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"+
				"Content-Length: %d\r\nExpect: 100-continue\r\n\r\n", path, host, e.tok, 64<<20)
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("no answer before the body was sent: %v", err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusRequestEntityTooLarge {
				t.Fatalf("status %d; want 413 (not 100 Continue)", resp.StatusCode)
			}
		})
	}
	// The same through a client that sends the body: still a 413 with the error body.
	r := e.Do("POST", "/ai-gateway/v1/sanitize", e.tok, `{"project":"proj","text":"`+strings.Repeat("a", gateway.MaxText+8192)+`"}`)
	wantStatus(t, r, http.StatusRequestEntityTooLarge)
	if r.Err(t).Error.Code != "payload_too_large" {
		t.Errorf("413 body: %s", r.Body)
	}
}

// TestAIGWRequiredFields: null, missing and mistyped fields are a 400 naming the field.
func TestAIGWRequiredFields(t *testing.T) {
	e := agStart(t, false, nil)
	tests := []struct {
		path, body, field string
	}{
		{"/ai-gateway/v1/sanitize", `{"project":"proj","text":null}`, "text"},
		{"/ai-gateway/v1/sanitize", `{"project":"proj"}`, "text"},
		{"/ai-gateway/v1/sanitize", `{"project":"proj","text":5}`, "text"},
		{"/ai-gateway/v1/sanitize", `{"project":"proj","text":["a"]}`, "text"},
		{"/ai-gateway/v1/chat", `{"project":"proj","model":"echo","messages":[{"role":"user","content":null}]}`, "messages[0].content"},
		{"/ai-gateway/v1/chat", `{"project":"proj","model":"echo","messages":[{"role":"user"}]}`, "messages[0].content"},
		{"/ai-gateway/v1/chat", `{"project":"proj","model":"echo","messages":[{"role":"user","content":{}}]}`, "content"},
	}
	for _, tc := range tests {
		r := e.Do("POST", tc.path, e.tok, tc.body)
		wantStatus(t, r, http.StatusBadRequest)
		if msg := r.Err(t).Error.Message; !strings.Contains(msg, tc.field) {
			t.Errorf("%s %s: message %q does not name %s", tc.path, tc.body, msg, tc.field)
		}
	}
	// An empty text is a text.
	if got := e.sanitize(t, e.tok, ""); got.Text != "" {
		t.Errorf("empty text: %+v", got)
	}
}

// TestAIGWBoundedCost: a text of nothing but e-mail addresses gives an answer at most a
// bounded factor larger than the request, an audit record of bounded size, and pages of
// GET /logs bounded in bytes that still reach every record.
func TestAIGWBoundedCost(t *testing.T) {
	e := agStart(t, false, nil)
	text := strings.Repeat("a@b.co ", (250<<10)/7) // under the default policy's 256 KiB
	const n = 40
	ids := map[string]bool{}
	for i := 0; i < n; i++ {
		body := fmt.Sprintf(`{"project":"proj","text":%q}`, text)
		r := e.Do("POST", "/ai-gateway/v1/sanitize", e.tok, body)
		wantStatus(t, r, http.StatusOK)
		if limit := 2*len(body) + 64<<10; len(r.Body) > limit {
			t.Fatalf("a %d-byte request got a %d-byte answer; want at most %d", len(body), len(r.Body), limit)
		}
		var got gateway.SanitizeResponse
		r.JSON(t, &got)
		if strings.Contains(got.Text, "a@b.co") || len(got.Redactions) > gateway.MaxListedRedactions ||
			len(got.Redactions)+got.RedactionsOmitted != strings.Count(text, "a@b.co") {
			t.Fatalf("%d redactions listed, %d omitted, value left: %v", len(got.Redactions), got.RedactionsOmitted, strings.Contains(got.Text, "a@b.co"))
		}
		ids[got.RequestID] = true
	}
	for id := range ids {
		r := e.Do("GET", "/ai-gateway/v1/logs/"+id, e.admin, nil)
		wantStatus(t, r, http.StatusOK)
		if len(r.Body) > 2*gateway.AuditMaxText+64<<10 {
			t.Errorf("audit record %s is %d bytes", id, len(r.Body))
		}
		break
	}
	pages, seen := 0, 0
	q := "/ai-gateway/v1/logs?limit=200"
	for {
		r := e.Do("GET", q, e.tok, nil)
		wantStatus(t, r, http.StatusOK)
		if len(r.Body) > gateway.MaxLogPageBytes+256<<10 {
			t.Fatalf("a page of /logs is %d bytes; want about %d at most", len(r.Body), gateway.MaxLogPageBytes)
		}
		var page struct {
			Data       []gateway.Record `json:"data"`
			NextCursor *string          `json:"next_cursor"`
		}
		r.JSON(t, &page)
		pages++
		for _, rec := range page.Data {
			if ids[rec.ID] {
				seen++
			}
		}
		if page.NextCursor == nil {
			break
		}
		q = "/ai-gateway/v1/logs?limit=200&cursor=" + *page.NextCursor
	}
	if seen != n || pages < 2 {
		t.Errorf("walked %d pages and saw %d of %d records; want every record over more than one page", pages, seen, n)
	}
}
