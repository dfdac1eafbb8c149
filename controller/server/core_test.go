package server_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/edgewan/edgewan/controller/server/servertest"
	"github.com/edgewan/edgewan/coreapi/org"
	"github.com/edgewan/edgewan/coreapi/soc"
)

// backends runs f against a real controller on SQLite and on PostgreSQL.
func backends(t *testing.T, f func(t *testing.T, s *servertest.Server)) {
	for _, pg := range []bool{false, true} {
		name := "sqlite"
		if pg {
			name = "postgres"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f(t, servertest.Start(t, servertest.Options{Postgres: pg}))
		})
	}
}

type caseList struct {
	Data       []soc.Case `json:"data"`
	NextCursor *string    `json:"next_cursor"`
}

func TestPingOrgDevices(t *testing.T) {
	backends(t, func(t *testing.T, s *servertest.Server) {
		tok := s.Key("org:read", "devices:read")

		r := s.Do("GET", "/v1/ping", tok, nil)
		var ping struct {
			Pong      bool   `json:"pong"`
			RequestID string `json:"request_id"`
		}
		r.JSON(t, &ping)
		if r.Status != 200 || !ping.Pong || ping.RequestID != r.Header.Get("X-Request-Id") {
			t.Fatalf("ping: got %d %s; want 200 pong with the request id", r.Status, r.Body)
		}

		r = s.Do("GET", "/v1/org", tok, nil)
		var o org.Org
		r.JSON(t, &o)
		if r.Status != 200 || o.ID == "" || o.Name == "" {
			t.Fatalf("org: got %d %s; want 200 with id and name", r.Status, r.Body)
		}

		ctx := context.Background()
		base := time.Now().UTC().Truncate(time.Microsecond)
		for i, st := range []string{org.DeviceOnline, org.DeviceOffline, org.DeviceOnline} {
			d := &org.Device{ID: fmt.Sprintf("dev_%d", i), SiteID: fmt.Sprintf("site_%d", i%2), Name: fmt.Sprintf("r%d", i),
				Status: st, Version: "1.2.3", LastSeen: base, CreatedAt: base, UpdatedAt: base.Add(time.Duration(i) * time.Second)}
			if err := s.Store.PutDevice(ctx, d); err != nil {
				t.Fatal(err)
			}
		}
		tests := []struct {
			query string
			want  []string
		}{
			{"", []string{"dev_2", "dev_1", "dev_0"}},
			{"?order=asc", []string{"dev_0", "dev_1", "dev_2"}},
			{"?status=online", []string{"dev_2", "dev_0"}},
			{"?site=site_1", []string{"dev_1"}},
			{"?status=online&site=site_0&order=asc", []string{"dev_0", "dev_2"}},
		}
		for _, tc := range tests {
			r := s.Do("GET", "/v1/devices"+tc.query, tok, nil)
			var env struct {
				Data []org.Device `json:"data"`
			}
			r.JSON(t, &env)
			var got []string
			for _, d := range env.Data {
				got = append(got, d.ID)
				if d.SiteID == "" || d.Status == "" || d.LastSeen.IsZero() || d.Version == "" {
					t.Errorf("device %s lacks site, status, last_seen or version: %+v", d.ID, d)
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("GET /v1/devices%s: got %v; want %v", tc.query, got, tc.want)
			}
		}
	})
}

// TestPaginationWithInserts walks more than 200 cases in both orders while new cases are
// inserted between pages: every case that existed at the start is seen exactly once, in order.
func TestPaginationWithInserts(t *testing.T) {
	backends(t, func(t *testing.T, s *servertest.Server) {
		ctx := context.Background()
		tok := s.Key("soc:read")
		base := time.Now().UTC().Add(-time.Hour).Truncate(time.Microsecond)
		const n = 450
		orig := map[string]bool{}
		next := 0
		insert := func(t *testing.T, at time.Time) string {
			next++
			c := &soc.Case{ID: fmt.Sprintf("case_%05d", next), Title: "t", Severity: "low", Status: soc.StatusOpen,
				Source: soc.SourceManual, CreatedAt: at, UpdatedAt: at}
			if err := s.Store.CreateCase(ctx, c, nil); err != nil {
				t.Fatal(err)
			}
			return c.ID
		}
		for i := 0; i < n; i++ {
			// Pairs of rows share an updated_at, so the id tie-break is exercised.
			orig[insert(t, base.Add(time.Duration(i/2)*time.Millisecond))] = true
		}
		for _, order := range []string{"desc", "asc"} {
			for _, limit := range []int{200, 37} {
				t.Run(fmt.Sprintf("%s/limit=%d", order, limit), func(t *testing.T) {
					seen := map[string]int{}
					var prev *soc.Case
					cursor, pages := "", 0
					for {
						q := url.Values{"order": {order}, "limit": {fmt.Sprint(limit)}}
						if cursor != "" {
							q.Set("cursor", cursor)
						}
						r := s.Do("GET", "/v1/soc/cases?"+q.Encode(), tok, nil)
						if r.Status != 200 {
							t.Fatalf("page %d: got %d %s; want 200", pages, r.Status, r.Body)
						}
						var env caseList
						r.JSON(t, &env)
						if len(env.Data) > limit {
							t.Fatalf("page %d has %d rows; limit %d", pages, len(env.Data), limit)
						}
						for i := range env.Data {
							c := &env.Data[i]
							seen[c.ID]++
							if prev != nil {
								before := prev.UpdatedAt.Before(c.UpdatedAt) || prev.UpdatedAt.Equal(c.UpdatedAt) && prev.ID < c.ID
								if (order == "asc") != before {
									t.Fatalf("%s order broken: %s (%s) then %s (%s)", order, prev.ID, prev.UpdatedAt, c.ID, c.UpdatedAt)
								}
							}
							prev = c
						}
						pages++
						// Insert between pages: new rows are newer than everything.
						for j := 0; j < 3; j++ {
							insert(t, time.Now().UTC().Truncate(time.Microsecond))
						}
						if env.NextCursor == nil {
							break
						}
						cursor = *env.NextCursor
						if pages > 100 {
							t.Fatal("pagination does not end")
						}
					}
					for id := range orig {
						if seen[id] != 1 {
							t.Errorf("case %s seen %d times; want 1", id, seen[id])
						}
					}
					for id, k := range seen {
						if k != 1 {
							t.Errorf("case %s seen %d times", id, k)
						}
					}
				})
			}
		}
	})
}

func TestCasesLifecycle(t *testing.T) {
	backends(t, func(t *testing.T, s *servertest.Server) {
		w := s.Key("soc:write")
		r := s.Key("soc:read")
		var c soc.Case
		resp := s.Do("POST", "/v1/soc/cases", w, map[string]any{"title": "Phishing at branch 12", "severity": "high", "description": "reported by user"})
		resp.JSON(t, &c)
		if resp.Status != 201 || c.ID == "" || c.Status != "open" || c.Severity != "high" || c.Source != "manual" {
			t.Fatalf("create: got %d %s; want 201 open high manual", resp.Status, resp.Body)
		}
		if loc := resp.Header.Get("Location"); loc != "/v1/soc/cases/"+c.ID {
			t.Errorf("Location %q; want /v1/soc/cases/%s", loc, c.ID)
		}
		steps := []struct {
			name       string
			body       string
			wantStatus int
			wantCase   string // status after
			wantNotes  int
		}{
			{"investigate with note", `{"status":"investigating","note":"looking"}`, 200, "investigating", 1},
			{"note only", `{"note":"found the mail"}`, 200, "investigating", 2},
			{"resolve", `{"status":"resolved"}`, 200, "resolved", 2},
			{"reopen", `{"status":"open","severity":"critical"}`, 200, "open", 2},
			{"bad status", `{"status":"closed"}`, 400, "open", 2},
			{"bad severity", `{"severity":"urgent"}`, 400, "open", 2},
			{"nothing", `{}`, 400, "open", 2},
			{"empty note", `{"note":"  "}`, 400, "open", 2},
		}
		for _, st := range steps {
			resp := s.Do("PATCH", "/v1/soc/cases/"+c.ID, w, st.body)
			if resp.Status != st.wantStatus {
				t.Fatalf("%s: got %d %s; want %d", st.name, resp.Status, resp.Body, st.wantStatus)
			}
			if resp.Status >= 400 {
				resp.Err(t)
			}
			var got soc.Case
			s.Do("GET", "/v1/soc/cases/"+c.ID, r, nil).JSON(t, &got)
			if got.Status != st.wantCase || len(got.Notes) != st.wantNotes {
				t.Fatalf("%s: case is %s with %d notes; want %s with %d", st.name, got.Status, len(got.Notes), st.wantCase, st.wantNotes)
			}
		}
		if resp := s.Do("GET", "/v1/soc/cases/case_nope", r, nil); resp.Status != 404 || resp.Err(t).Error.Code != "not_found" {
			t.Fatalf("missing case: got %d %s; want 404 not_found", resp.Status, resp.Body)
		}
		for _, junk := range []string{"%00", "%FF%FE", "case_%00x"} {
			if resp := s.Do("GET", "/v1/soc/cases/"+junk, r, nil); resp.Status != 400 || resp.Err(t).Error.Code != "bad_request" {
				t.Fatalf("GET /v1/soc/cases/%s: got %d %s; want 400 bad_request", junk, resp.Status, resp.Body)
			}
		}
		if resp := s.Do("PATCH", "/v1/soc/cases/case_nope", w, `{"note":"x"}`); resp.Status != 404 {
			t.Fatalf("patch missing case: got %d; want 404", resp.Status)
		}

		// Filters.
		s.Do("POST", "/v1/soc/cases", w, `{"title":"low one","severity":"low"}`)
		for _, tc := range []struct {
			q    string
			want int
		}{{"?severity=critical", 1}, {"?severity=low", 1}, {"?status=open", 2}, {"?status=resolved", 0}, {"?source=system", 0}} {
			var env caseList
			s.Do("GET", "/v1/soc/cases"+tc.q, r, nil).JSON(t, &env)
			if len(env.Data) != tc.want {
				t.Errorf("GET /v1/soc/cases%s: got %d cases; want %d", tc.q, len(env.Data), tc.want)
			}
		}
	})
}

// TestSystemCases checks the rules that open cases by themselves (docs/soc.md).
func TestSystemCases(t *testing.T) {
	backends(t, func(t *testing.T, s *servertest.Server) {
		reader := s.Key("soc:read")
		revoked := s.Key("org:read")
		id := strings.Join(strings.SplitN(strings.TrimPrefix(revoked, "ewk_"), "_", 2)[:1], "")
		if err := s.Store.RevokeKey(context.Background(), "key_"+id, time.Now()); err != nil {
			t.Fatal(err)
		}
		if r := s.Do("GET", "/v1/org", revoked, nil); r.Status != 401 {
			t.Fatalf("revoked key: got %d; want 401", r.Status)
		}
		for i := 0; i < 25; i++ {
			if r := s.Do("GET", "/v1/ping", "ewk_00000000000000000000_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", nil); r.Status != 401 {
				t.Fatalf("bad token: got %d; want 401", r.Status)
			}
		}
		want := map[string]string{"auth.revoked_key": "medium", "auth.brute_force": "high"}
		deadline := time.Now().Add(10 * time.Second)
		for {
			var env caseList
			s.Do("GET", "/v1/soc/cases?source=system", reader, nil).JSON(t, &env)
			got := map[string]string{}
			for _, c := range env.Data {
				got[c.Rule] = c.Severity
			}
			if fmt.Sprint(got) == fmt.Sprint(want) {
				if len(env.Data) != 2 {
					t.Fatalf("got %d system cases; want one per rule: %+v", len(env.Data), env.Data)
				}
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("system cases by rule: got %v; want %v", got, want)
			}
			time.Sleep(20 * time.Millisecond) // polling an asynchronous effect, with a deadline
		}
	})
}
