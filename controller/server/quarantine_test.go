package server_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/edgewan/edgewan/agent/sim"
	"github.com/edgewan/edgewan/controller/config"
	"github.com/edgewan/edgewan/controller/sdwan"
	"github.com/edgewan/edgewan/controller/server/servertest"
	"github.com/edgewan/edgewan/coreapi/event"
	"github.com/edgewan/edgewan/coreapi/soc"
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
