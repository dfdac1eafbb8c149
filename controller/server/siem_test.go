package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/edgewan/edgewan/controller/config"
	"github.com/edgewan/edgewan/controller/server/servertest"
)

// TestSIEMStreamsAuditRecords runs the controller with an HTTP SIEM sink and checks each audit
// record reaches it, sanitized, with the request ID the client got.
func TestSIEMStreamsAuditRecords(t *testing.T) {
	var mu sync.Mutex
	got := map[string]map[string]any{}
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var recs []map[string]any
		if err := json.Unmarshal(body, &recs); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		mu.Lock()
		for _, rec := range recs {
			got[rec["request_id"].(string)] = rec
		}
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer recv.Close()
	s := servertest.Start(t, servertest.Options{Config: func(c *config.Config) { c.SIEMSinks = []string{recv.URL + "/audit"} }})
	k := s.ProjectKey("siem")
	var ids []string
	for _, text := range []string{"mail me at alice@example.com", "nothing here", "card 4111 1111 1111 1111"} {
		var res struct {
			RequestID string `json:"request_id"`
		}
		r := s.Do("POST", "/ai-gateway/v1/sanitize", k, map[string]string{"project": "siem", "text": text})
		wantStatus(t, r, 200)
		r.JSON(t, &res)
		ids = append(ids, res.RequestID)
	}
	waitFor(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, id := range ids {
			if got[id] == nil {
				return false
			}
		}
		return true
	})
	mu.Lock()
	defer mu.Unlock()
	b, _ := json.Marshal(got[ids[0]])
	if strings.Contains(string(b), "alice@example.com") {
		t.Fatalf("the SIEM got the raw email: %s", b)
	}
	if got[ids[0]]["project"] != "siem" {
		t.Fatalf("record: %s", b)
	}
}
