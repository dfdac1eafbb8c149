package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/edgewan/edgewan/controller/sdwan"
	"github.com/edgewan/edgewan/controller/server/servertest"
	"github.com/edgewan/edgewan/coreapi/event"
	"github.com/edgewan/edgewan/coreapi/ids"
)

// TestNOCFleet opens the NOC page in Chromium at 1280 px on a controller with 10,000 sites and
// checks that it pages, searches and filters on the server, takes live updates over the stream
// and never scrolls sideways. Its timings (first page, each update's main-thread time) are
// logged and written to the artifacts as figures, not asserted: docs/benchmarks.md has them.
func TestNOCFleet(t *testing.T) {
	const fleet = 10_000
	s := servertest.Start(t, servertest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	now := time.Now().UTC().Truncate(time.Microsecond)
	statuses := map[int]string{}
	var figures []sdwan.TransportFigures
	seen := map[string]sdwan.SiteFigures{}
	var first []string // the IDs of sites 0..49 by name, the first page when sorted by name
	for i := range fleet {
		site := &sdwan.Site{ID: ids.New("site"), Name: fmt.Sprintf("Site %05d", i), Status: sdwan.SitePending, Role: "branch",
			Segments: []string{"corporate"}, CreatedAt: now, UpdatedAt: now}
		ts := []*sdwan.Transport{
			{ID: ids.New("tr"), SiteID: site.ID, Name: "mpls", Kind: "mpls", Interface: "eth1", ProbeTargets: []string{}, Status: sdwan.TransportUnknown, CreatedAt: now, UpdatedAt: now},
			{ID: ids.New("tr"), SiteID: site.ID, Name: "inet", Kind: "broadband", Interface: "eth2", ProbeTargets: []string{}, Status: sdwan.TransportUnknown, CreatedAt: now, UpdatedAt: now},
		}
		if err := s.Store.CreateSite(ctx, site, ids.New("claim"), ts); err != nil {
			t.Fatal(err)
		}
		if i < 50 {
			first = append(first, site.ID)
		}
		st := sdwan.SiteUp
		switch {
		case i%97 == 0:
			st = sdwan.SiteDegraded
		case i%89 == 0:
			st = sdwan.SiteOffline
		case i%83 == 0:
			continue // pending
		}
		statuses[i] = st
		if _, err := s.Store.SetSiteStatus(ctx, site.ID, st, now, now); err != nil {
			t.Fatal(err)
		}
		seen[site.ID] = sdwan.SiteFigures{LastSeen: now}
		figures = append(figures, sdwan.TransportFigures{SiteID: site.ID, Name: "mpls", Status: "up", LatencyMs: 20 + float64(i%7), At: now},
			sdwan.TransportFigures{SiteID: site.ID, Name: "inet", Status: map[bool]string{true: "degraded", false: "up"}[st == sdwan.SiteDegraded], LatencyMs: 35 + float64(i%11), At: now})
	}
	if err := s.Store.SaveFigures(ctx, seen, figures); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d sites stored in %v", fleet, time.Since(start).Round(time.Millisecond))

	// The API answers a page of the fleet, searched, filtered and sorted by the database.
	ro := s.Key("sdwan:read")
	var p sdwan.SitePage
	wantStatus(t, s.Do("GET", "/sd-wan/v1/overview?q=site%2009999", ro, nil), 200)
	s.Do("GET", "/sd-wan/v1/overview?q=site%2009999", ro, nil).JSON(t, &p)
	if p.Total != 1 || len(p.Data) != 1 || p.Data[0].Name != "Site 09999" || len(p.Data[0].Transports) != 2 {
		t.Fatalf("search for Site 09999: %+v", p)
	}
	s.Do("GET", "/sd-wan/v1/overview?status=degraded&sort=-name&limit=10&offset=10", ro, nil).JSON(t, &p)
	wantDegraded := 0
	for i := range fleet {
		if statuses[i] == sdwan.SiteDegraded {
			wantDegraded++
		}
	}
	if p.Total != wantDegraded || len(p.Data) != 10 || p.Data[0].Status != sdwan.SiteDegraded || p.Data[0].Name <= p.Data[1].Name ||
		p.Counts[sdwan.SiteDegraded] != wantDegraded || p.Counts[sdwan.SiteUp]+p.Counts[sdwan.SiteDegraded]+p.Counts[sdwan.SiteOffline]+p.Counts[sdwan.SitePending] != fleet {
		t.Fatalf("degraded, by name descending, second page of 10: total %d (want %d), counts %v, %d rows", p.Total, wantDegraded, p.Counts, len(p.Data))
	}
	for _, bad := range []string{"?sort=color", "?status=decommissioned", "?limit=500", "?offset=-1", "?page=2", "?q=a&q=b"} {
		if r := s.Do("GET", "/sd-wan/v1/overview"+bad, ro, nil); r.Status != 400 {
			t.Errorf("GET /overview%s: %d; want 400", bad, r.Status)
		}
	}

	b := newBrowser(t, s)
	if err := chromedp.Do(b, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(s.URL+"/noc?refresh=300"), chromedp.WaitVisible(chromedp.CSS("#key"))); err != nil {
		t.Fatal(err)
	}
	// Signed in before the load that is measured: the key is in the tab's session storage.
	if _, err := chromedp.Run(b, chromedp.Evaluate[any](fmt.Sprintf(`sessionStorage.setItem('edgewan.noc.key', %q)`, ro))); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(b, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("body[data-first-paint]"))); err != nil {
		t.Fatal(err)
	}
	type timing struct {
		FirstPage, FirstPaint, FCP float64
		Rows                       int
		Range                      string
	}
	tm, err := chromedp.Run(b, chromedp.Evaluate[timing](`({FirstPage: nocStats.firstPage, FirstPaint: nocStats.firstPaint,
		FCP: (performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime || 0,
		Rows: document.querySelectorAll('#sites tbody tr[data-site]').length, Range: document.getElementById('range').innerText})`))
	if err != nil {
		t.Fatal(err)
	}
	if tm.Rows != 50 || tm.Range != "1–50 of 10,000" {
		t.Errorf("first page: %d rows, range %q; want 50 of 10,000", tm.Rows, tm.Range)
	}
	t.Logf("first page of 10,000 sites: rows in the DOM %.0f ms, painted %.0f ms after navigation (first contentful paint %.0f ms)", tm.FirstPage, tm.FirstPaint, tm.FCP)
	waitText(t, b, "#detail", "Site ") // the worst site is opened

	// Live: status changes and events of sites on the page arrive over the stream.
	before, err := chromedp.Run(b, chromedp.Evaluate[int](`Number(document.body.dataset.updates || 0)`))
	if err != nil {
		t.Fatal(err)
	}
	onPage, err := chromedp.Run(b, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#sites tbody tr[data-site]')].map(tr => tr.dataset.site)`))
	if err != nil || len(onPage) == 0 {
		t.Fatalf("rows: %v %v", onPage, err)
	}
	const rounds = 20
	for k := range rounds {
		id := onPage[k%len(onPage)]
		st := []string{sdwan.SiteDegraded, sdwan.SiteUp}[k%2]
		ev, _ := event.New(event.PathSwitched, map[string]any{"site": id, "class": "default", "from": "inet", "to": "mpls", "reason": "down", "by": "controller"})
		at := time.Now().UTC()
		if _, err := s.Store.SetSiteStatus(ctx, id, st, at, at, ev); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(20 * time.Second)
		for {
			got, err := chromedp.Run(b, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector('#sites tr[data-site=%q]') || {dataset: {}}).dataset.status`, id)))
			if err != nil {
				t.Fatal(err)
			}
			if got == st {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: site %s shows %q; want %q from the stream", k, id, got, st)
			}
			time.Sleep(20 * time.Millisecond) // polls the page; the change crosses the stream's 1 s tick
		}
	}
	upd, err := chromedp.Run(b, chromedp.Evaluate[[]float64](`nocStats.updates`))
	if err != nil || len(upd) == 0 {
		t.Fatalf("update timings: %v %v", upd, err)
	}
	after, _ := chromedp.Run(b, chromedp.Evaluate[int](`Number(document.body.dataset.updates || 0)`))
	if after-before < rounds*2 { // a site and an event each round, and counts
		t.Errorf("%d updates handled for %d rounds of a status change and an event", after-before, rounds)
	}
	sorted := slices.Clone(upd)
	slices.Sort(sorted)
	pct := func(q float64) float64 { return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))] }
	t.Logf("live updates: %d handled, main-thread time per update (handler + style + layout): median %.2f ms, p95 %.2f ms, max %.2f ms",
		len(upd), pct(0.5), pct(0.95), sorted[len(sorted)-1])

	// Server-side paging and search from the page.
	if err := chromedp.Do(b, chromedp.Click(chromedp.CSS("#next"))); err != nil {
		t.Fatal(err)
	}
	waitText(t, b, "#range", "51–100 of 10,000")
	if err := chromedp.Do(b, chromedp.SendKeys(chromedp.CSS("#search"), "Site 0421")); err != nil {
		t.Fatal(err)
	}
	waitText(t, b, "#range", "1–10 of 10")
	wide, err := chromedp.Run(b, chromedp.Evaluate[[]int](`[document.documentElement.scrollWidth, document.documentElement.clientWidth]`))
	if err != nil {
		t.Fatal(err)
	}
	if wide[0] > wide[1] {
		t.Errorf("the page scrolls horizontally at 1280 px: %d px of content in %d", wide[0], wide[1])
	}
	if _, err := chromedp.Run(b, chromedp.Evaluate[any](`document.getElementById('search').value = ''; document.getElementById('search').dispatchEvent(new Event('input'))`)); err != nil {
		t.Fatal(err)
	}
	waitText(t, b, "#range", "1–50 of 10,000")
	png, err := chromedp.Run(b, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	dir := artifactDir(t)
	shot := filepath.Join(dir, "noc-10k.png")
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	figs, _ := json.MarshalIndent(map[string]any{"sites": fleet, "first_page_ms": tm.FirstPage, "first_paint_ms": tm.FirstPaint, "fcp_ms": tm.FCP,
		"updates": len(upd), "update_median_ms": pct(0.5), "update_p95_ms": pct(0.95), "update_max_ms": sorted[len(sorted)-1]}, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "noc-10k.json"), figs, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("artifacts: %s, %s", shot, filepath.Join(dir, "noc-10k.json"))
}
