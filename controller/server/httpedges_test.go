package server_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/edgewan/edgewan/controller/sdwan"
	"github.com/edgewan/edgewan/controller/server/servertest"
	"github.com/edgewan/edgewan/coreapi/auth"
	"github.com/edgewan/edgewan/coreapi/soc"
)

// TestHugeRequestHead: a 1 MiB query string or header gets 431 with the error body and a
// request ID, not Go's bare text/plain answer.
func TestHugeRequestHead(t *testing.T) {
	s := servertest.Start(t, servertest.Options{})
	huge := strings.Repeat("a", 1<<20)
	for _, tc := range []struct {
		name string
		mod  func(*http.Request)
	}{
		{"query", func(r *http.Request) { r.URL.RawQuery = "q=" + huge }},
		{"header", func(r *http.Request) { r.Header.Set("X-Big", huge) }},
		{"many headers", func(r *http.Request) {
			for i := 0; i < 2000; i++ {
				r.Header.Add("X-Many", strings.Repeat("b", 100))
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest("GET", s.URL+"/v1/ping", nil)
			if err != nil {
				t.Fatal(err)
			}
			tc.mod(req)
			resp, err := s.Client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			r := &servertest.Response{Status: resp.StatusCode, Header: resp.Header, Body: body}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Fatalf("Content-Type %q; want application/json (%d %.200s)", ct, resp.StatusCode, body)
			}
			wantError(t, r, 431, "header_too_large")
		})
	}
	// A normal request on a fresh connection still works.
	wantStatus(t, s.Do("GET", "/v1/ping", s.Key("org:read"), nil), 200)
}

// TestPatchNull: null for any field of a partial update is a 400 naming it, on every PATCH
// operation (none of their fields can be cleared with null); nothing changes.
func TestPatchNull(t *testing.T) {
	s := servertest.Start(t, servertest.Options{})
	var c soc.Case
	s.Do("POST", "/v1/soc/cases", s.Key("soc:write"), `{"title":"keep me"}`).JSON(t, &c)
	rw := s.Key("sdwan:read", "sdwan:write")
	var site sdwan.Site
	s.Do("POST", "/sd-wan/v1/sites", rw, branchSite).JSON(t, &site)
	var pol sdwan.Policy
	s.Do("POST", "/sd-wan/v1/policies", rw, `{"name":"p","type":"steering"}`).JSON(t, &pol)
	_, admin, err := auth.Create(context.Background(), s.Store, "aigw admin", []string{auth.ScopeAIGWAdmin}, "proj1")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path, token, body, field string
	}{
		{"/v1/soc/cases/" + c.ID, s.Key("soc:write"), `{"title": null}`, "title"},
		{"/v1/soc/cases/" + c.ID, s.Key("soc:write"), `{"severity": "low", "note": null}`, "note"},
		{"/sd-wan/v1/sites/" + site.ID, rw, `{"name": null}`, "name"},
		{"/sd-wan/v1/sites/" + site.ID, rw, `{"location": {"city": null}}`, "location.city"},
		{"/sd-wan/v1/sites/" + site.ID, rw, `{"segments": ["a", null]}`, "segments[1]"},
		{"/sd-wan/v1/policies/" + pol.ID, rw, `{"require_simulation_minutes": null}`, "require_simulation_minutes"},
		{"/ai-gateway/v1/projects/proj1", admin, `{"store_raw_input": null}`, "store_raw_input"},
	} {
		r := s.Do("PATCH", tc.path, tc.token, tc.body)
		wantError(t, r, 400, "bad_request")
		if msg := r.Err(t).Error.Message; !strings.Contains(msg, tc.field+" must not be null") {
			t.Errorf("PATCH %s %s: message %q; want it to name %s", tc.path, tc.body, msg, tc.field)
		}
	}
	var got soc.Case
	s.Do("GET", "/v1/soc/cases/"+c.ID, s.Key("soc:read"), nil).JSON(t, &got)
	if got.Title != "keep me" || got.Severity != c.Severity {
		t.Fatalf("case changed: %+v", got)
	}
}

// TestMetricLabelsClosed: made-up methods and paths do not create metric series.
func TestMetricLabelsClosed(t *testing.T) {
	s := servertest.Start(t, servertest.Options{})
	for i := 0; i < 20; i++ {
		req, err := http.NewRequest("X"+strings.Repeat("Y", i), s.URL+"/v1/ping/"+strings.Repeat("z", i), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := s.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	for _, l := range strings.Split(scrape(t, s), "\n") {
		if strings.HasPrefix(l, "edgewan_http_requests_total{") && (strings.Contains(l, `method="X`) || strings.Contains(l, "zzz")) {
			t.Errorf("a series made up by a client: %s", l)
		}
	}
}
