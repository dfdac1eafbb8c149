package server_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/edgewan/edgewan/agent/sim"
	"github.com/edgewan/edgewan/controller/config"
	"github.com/edgewan/edgewan/controller/sdwan"
	"github.com/edgewan/edgewan/controller/server/servertest"
	"github.com/edgewan/edgewan/coreapi/event"
	"github.com/edgewan/edgewan/coreapi/quarantine"
	"github.com/edgewan/edgewan/coreapi/soc"
	"github.com/edgewan/edgewan/coreapi/webhook"
)

// TestCrashOnlyStart: a site claimed before it has transports is a normal state (the claim
// succeeds, the agent reports, evaluation begins with its first transport, and the controller
// restarts), and a site whose stored row no longer decodes is quarantined at start, reported
// in the API, /metrics and a SOC case, while every other site runs; a damaged cursor key is
// replaced.
func TestCrashOnlyStart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dir := t.TempDir()
	cfg := func(c *config.Config) { c.DataDir = dir }
	s := servertest.Start(t, servertest.Options{Config: cfg})
	rw := s.Key("sdwan:read", "sdwan:write")
	socKey := s.Key("soc:read")

	var bare, broken, good sdwan.Site
	s.Do("POST", "/sd-wan/v1/sites", rw, `{"name":"x"}`).JSON(t, &bare)
	s.Do("POST", "/sd-wan/v1/sites", rw, `{"name":"broken","transports":[{"name":"inet","interface":"eth0"}]}`).JSON(t, &broken)
	s.Do("POST", "/sd-wan/v1/sites", rw, `{"name":"good","transports":[{"name":"inet","interface":"eth0"}]}`).JSON(t, &good)
	for _, site := range []sdwan.Site{bare, broken, good} {
		if _, err := sim.Claim(ctx, s.Client, s.URL, site.Claim, site.Name); err != nil {
			t.Fatalf("claiming %s: %v", site.Name, err)
		}
	}
	var got sdwan.Site // decoded into afresh each time: an omitted quarantine leaves the field
	s.Do("GET", "/sd-wan/v1/sites/"+bare.ID, rw, nil).JSON(t, &got)
	if got.ClaimedAt.IsZero() || got.Quarantine != nil || len(got.Transports) != 0 {
		t.Fatalf("claimed site without transports: %+v", got)
	}

	s.Stop()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "edgewan.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("UPDATE sites SET location = '{not json' WHERE id = ?", broken.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("UPDATE settings SET value = 'not hex' WHERE key = 'cursor_key'"); err != nil {
		t.Fatal(err)
	}
	db.Close()

	s = servertest.Start(t, servertest.Options{Config: cfg})
	got = sdwan.Site{}
	s.Do("GET", "/sd-wan/v1/sites/"+broken.ID, rw, nil).JSON(t, &got)
	if got.Quarantine == nil || got.Quarantine.Kind != sdwan.QuarantineData || !strings.Contains(got.Quarantine.Reason, "location") {
		t.Fatalf("broken site after restart: quarantine %+v", got.Quarantine)
	}
	var list struct {
		Data       []sdwan.Site
		NextCursor string `json:"next_cursor"`
	}
	s.Do("GET", "/sd-wan/v1/sites?limit=2", rw, nil).JSON(t, &list) // paging works with the replaced cursor key
	if list.NextCursor == "" {
		t.Fatal("no cursor")
	}
	wantStatus(t, s.Do("GET", "/sd-wan/v1/sites?limit=2&cursor="+list.NextCursor, rw, nil), 200)
	s.Do("GET", "/sd-wan/v1/sites", rw, nil).JSON(t, &list)
	for _, x := range list.Data {
		if (x.ID == broken.ID) != (x.Quarantine != nil) {
			t.Fatalf("site list: %s quarantine %+v", x.ID, x.Quarantine)
		}
	}
	if m := scrape(t, s); !strings.Contains(m, `edgewan_sites_quarantined{kind="data"} 1`) || !strings.Contains(m, `edgewan_sites_quarantined{kind="steering"} 0`) {
		t.Fatalf("metrics lack the quarantine gauge:\n%s", grepLines(m, "quarantined"))
	}
	waitFor(t, func() bool {
		var cases struct{ Data []soc.Case }
		s.Do("GET", "/v1/soc/cases?source=system", socKey, nil).JSON(t, &cases)
		return len(cases.Data) == 1 && cases.Data[0].Rule == soc.RuleSiteQuarantined && cases.Data[0].Subject == broken.ID
	})

	// The other sites run: the bare one gets a transport and is evaluated from then on.
	rec := newReceiver(t)
	rec.register(t, s, event.TransportDown)
	wantStatus(t, s.Do("POST", "/sd-wan/v1/sites/"+bare.ID+"/transports", rw, `{"name":"lte","interface":"wwan0"}`), 201)
	var fresh sdwan.Site
	s.Do("POST", "/sd-wan/v1/sites", rw, `{"name":"y"}`).JSON(t, &fresh)
	_, ag := claimAgent(ctx, t, s, fresh.Claim, "y")
	defer ag.Close()
	// Reporting before the site has transports: kept as history, the site is up, nothing is
	// evaluated.
	if err := ag.Report(ctx, time.Now(), time.Second, sim.Window("inet", 5, 5, 0, 0)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		got = sdwan.Site{}
		s.Do("GET", "/sd-wan/v1/sites/"+fresh.ID, rw, nil).JSON(t, &got)
		return got.Status == sdwan.SiteUp
	})
	wantStatus(t, s.Do("POST", "/sd-wan/v1/sites/"+fresh.ID+"/transports", rw, `{"name":"inet","interface":"eth0"}`), 201)
	if err := ag.Report(ctx, time.Now(), time.Second, sim.Window("inet", 5, 5, 0, 0)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		return len(rec.find(event.TransportDown, map[string]string{"site": fresh.ID, "transport": "inet"})) == 1
	})

	// Fixing the row through the API lifts the quarantine.
	wantStatus(t, s.Do("PATCH", "/sd-wan/v1/sites/"+broken.ID, rw, `{"location":{"city":"Lyon"}}`), 200)
	var fixed sdwan.Site
	s.Do("GET", "/sd-wan/v1/sites/"+broken.ID, rw, nil).JSON(t, &fixed)
	if fixed.Quarantine != nil || fixed.Location.City != "Lyon" {
		t.Fatalf("site after the fix: %+v", fixed)
	}
	if m := scrape(t, s); !strings.Contains(m, `edgewan_sites_quarantined{kind="data"} 0`) {
		t.Fatalf("metrics after the fix:\n%s", grepLines(m, "quarantined"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestCrashOnlyStartObjects: stored objects other than sites that cannot be used do not stop
// the start either, on SQLite and PostgreSQL. Damaged in the real database while the controller
// is stopped: a webhook's sealed secret (copied from another webhook, so it does not open for
// this one), another webhook's URL, a policy version's content; and the SIEM cursor file. After
// the restart the controller serves; each damaged object's API representation says it is
// quarantined and why; edgewan_objects_quarantined counts them; each has a SOC case
// (controller.object_quarantined); the quarantined version cannot be published while the other
// policy's can; and the healthy webhook keeps receiving its deliveries (the cases' case.opened
// events) while the broken ones fail theirs.
func TestCrashOnlyStartObjects(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			dir := t.TempDir()
			var dbURL string
			cfg := func(c *config.Config) {
				c.DataDir = dir
				c.SIEMSinks = []string{"syslog+tcp://127.0.0.1:9"} // nobody listens: the stream only retries
				if dbURL != "" {
					c.DatabaseURL = dbURL
				}
			}
			s := servertest.Start(t, servertest.Options{Config: cfg, Postgres: backend == "postgres"})
			dbURL = s.Config.DatabaseURL
			rw := s.Key("sdwan:read", "sdwan:write")
			wh := s.Key("webhooks:write")
			socKey := s.Key("soc:read")

			good := newReceiver(t)
			good.register(t, s, event.CaseOpened)
			var badSecret, badURL webhook.Webhook
			s.Do("POST", "/v1/webhooks", wh, map[string]any{"url": good.URL + "/b", "events": []string{event.CaseOpened}}).JSON(t, &badSecret)
			s.Do("POST", "/v1/webhooks", wh, map[string]any{"url": good.URL + "/c", "events": []string{event.CaseOpened}}).JSON(t, &badURL)
			var site sdwan.Site
			s.Do("POST", "/sd-wan/v1/sites", rw, `{"name":"s","transports":[{"name":"inet","interface":"eth0"}]}`).JSON(t, &site)
			content := `{"classes":[{"name":"voice","max_latency_ms":150,"max_loss_pct":2}],"paths":{"voice":["inet"]}}`
			var broken, fine sdwan.Policy
			s.Do("POST", "/sd-wan/v1/policies", rw, `{"name":"broken","type":"steering","content":`+content+`}`).JSON(t, &broken)
			s.Do("POST", "/sd-wan/v1/policies", rw, `{"name":"fine","type":"steering","content":`+content+`}`).JSON(t, &fine)
			s.Stop()

			driver, dsn := "sqlite", "file:"+filepath.Join(dir, "edgewan.db")
			if backend == "postgres" {
				driver, dsn = "pgx", dbURL
			}
			db, err := sql.Open(driver, dsn)
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range []struct {
				sql  string
				args []any
			}{
				{"UPDATE webhooks SET secret = (SELECT secret FROM webhooks WHERE url = ?) WHERE id = ?", []any{good.URL, badSecret.ID}},
				{"UPDATE webhooks SET url = '::not a url' WHERE id = ?", []any{badURL.ID}},
				{"UPDATE policy_versions SET content = '{not json' WHERE policy_id = ?", []any{broken.ID}},
			} {
				stmt := q.sql
				if backend == "postgres" {
					for i := 1; strings.Contains(stmt, "?"); i++ {
						stmt = strings.Replace(stmt, "?", "$"+strconv.Itoa(i), 1)
					}
				}
				if _, err := db.Exec(stmt, q.args...); err != nil {
					t.Fatalf("%s: %v", q.sql, err)
				}
			}
			db.Close()
			if err := os.WriteFile(filepath.Join(dir, "siem-cursors.json"), []byte("{not json"), 0o600); err != nil {
				t.Fatal(err)
			}

			s = servertest.Start(t, servertest.Options{Config: cfg})
			var list struct{ Data []webhook.Webhook }
			s.Do("GET", "/v1/webhooks", wh, nil).JSON(t, &list)
			kinds := map[string]string{}
			for _, w := range list.Data {
				if w.Quarantine != nil {
					kinds[w.ID] = w.Quarantine.Kind
				}
			}
			if len(list.Data) != 3 || len(kinds) != 2 || kinds[badSecret.ID] != quarantine.Secret || kinds[badURL.ID] != quarantine.Data {
				t.Fatalf("webhooks after the restart: %d listed, quarantined %v; want 3, %s secret and %s data", len(list.Data), kinds, badSecret.ID, badURL.ID)
			}
			var one webhook.Webhook
			s.Do("GET", "/v1/webhooks/"+badSecret.ID, wh, nil).JSON(t, &one)
			if one.Quarantine == nil || !strings.Contains(one.Quarantine.Reason, "does not open") {
				t.Errorf("GET of the webhook whose secret does not open: %+v", one)
			}

			var pol sdwan.Policy
			s.Do("GET", "/sd-wan/v1/policies/"+broken.ID, rw, nil).JSON(t, &pol)
			if len(pol.Versions) != 1 || pol.Versions[0].Quarantine == nil || pol.Versions[0].Quarantine.Kind != quarantine.Data {
				t.Fatalf("policy with a damaged version: %+v", pol.Versions)
			}
			wantStatus(t, s.Do("GET", "/sd-wan/v1/policies", rw, nil), 200)
			res := s.Do("POST", "/sd-wan/v1/policies/"+broken.ID+"/publish", rw, map[string]any{"version": 1, "sites": []string{site.ID}})
			if res.Status/100 != 4 || !strings.Contains(string(res.Body), "quarantined") {
				t.Errorf("publishing the quarantined version: %d %s; want a 4xx naming the quarantine", res.Status, res.Body)
			}
			wantStatus(t, s.Do("POST", "/sd-wan/v1/policies/"+fine.ID+"/publish", rw, map[string]any{"version": 1, "sites": []string{site.ID}}), 202)

			// The audit runs beside the API from the start: wait for its figures.
			wantMetrics := []string{`edgewan_objects_quarantined{object="webhook"} 2`, `edgewan_objects_quarantined{object="sdwan_policy_version"} 1`,
				`edgewan_objects_quarantined{object="siem_cursors"} 1`, `edgewan_objects_quarantined{object="aigw_policy_version"} 0`}
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				m, missing := scrape(t, s), ""
				for _, want := range wantMetrics {
					if !strings.Contains(m, want) {
						missing = want
					}
				}
				if missing == "" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("metrics lack %s after 10 s:\n%s", missing, grepLines(m, "objects_quarantined"))
				}
			}
			wantCases := []string{"webhook/" + badSecret.ID, "webhook/" + badURL.ID, "sdwan_policy_version/" + broken.ID + "/1", "siem_cursors/siem-cursors.json"}
			waitFor(t, func() bool {
				var cases struct{ Data []soc.Case }
				s.Do("GET", "/v1/soc/cases?source=system&limit=100", socKey, nil).JSON(t, &cases)
				n := 0
				for _, c := range cases.Data {
					if c.Rule == soc.RuleObjectQuarantined && slices.Contains(wantCases, c.Subject) {
						n++
					}
				}
				return n == len(wantCases)
			})
			// The healthy webhook delivers the cases' events; the broken ones get none.
			waitFor(t, func() bool { return len(good.find(event.CaseOpened, nil)) >= len(wantCases) })
			good.mu.Lock()
			bad := good.bad
			good.mu.Unlock()
			if bad != 0 {
				t.Errorf("%d deliveries reached the receiver with a bad signature", bad)
			}
			if entries, _ := filepath.Glob(filepath.Join(dir, "siem-cursors.json.damaged-*")); len(entries) != 1 {
				t.Errorf("damaged SIEM cursor file moved aside: %v; want one", entries)
			}
		})
	}
}
