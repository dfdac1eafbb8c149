package server_test

// The NOC page (controller/noc) in a real headless Chromium against a real controller fed by
// simulated agents: sign-in, sites and statuses, charts, SLA, events and path switches, what-if, a
// live update, the Content-Security-Policy, and a screenshot kept as a test artifact.

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/edgewan/edgewan/agent/sim"
	"github.com/edgewan/edgewan/controller/noc"
	"github.com/edgewan/edgewan/controller/sdwan"
	"github.com/edgewan/edgewan/controller/server/servertest"
	"github.com/edgewan/edgewan/coreapi/event"
	"github.com/edgewan/edgewan/telemetry"
)

// chromiumPath is the browser the test drives; missing, the test fails (never skips).
func chromiumPath(t *testing.T) string {
	t.Helper()
	p := os.Getenv("EDGEWAN_CHROMIUM")
	if p == "" {
		p = "/usr/bin/chromium"
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("Chromium not found at %s (%v): install it with scripts/chromium.sh install, or set EDGEWAN_CHROMIUM", p, err)
	}
	return p
}

// artifactDir is where tests keep files for people to look at: $EDGEWAN_TEST_ARTIFACTS, else
// a fixed directory under the system's temp dir (kept after the test, unlike t.TempDir).
func artifactDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("EDGEWAN_TEST_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "edgewan-test-artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// spkiPin is the base64 SHA-256 of the server certificate's public key, so Chromium trusts the
// test controller's certificate and nothing else (--ignore-certificate-errors-spki-list).
func spkiPin(t *testing.T, s *servertest.Server) string {
	t.Helper()
	resp, err := s.Client.Get(s.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	sum := sha256.Sum256(resp.TLS.PeerCertificates[0].RawSubjectPublicKeyInfo)
	return base64.StdEncoding.EncodeToString(sum[:])
}

// newBrowser starts a headless Chromium for the test and returns a tab's context.
func newBrowser(t *testing.T, s *servertest.Server) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("ignore-certificate-errors-spki-list", spkiPin(t, s)),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1440, 1000),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	ctx, cancelT := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancelT(); cancelC(); cancelA() })
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("starting Chromium: %v", err)
	}
	return ctx
}

// waitText polls the text of selector in the page until it contains want.
func waitText(t *testing.T, ctx context.Context, selector, want string) string {
	t.Helper()
	var text string
	deadline := time.Now().Add(20 * time.Second)
	for {
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%q) || {}).innerText || ""`, selector)))
		if err != nil {
			t.Fatalf("reading %s: %v", selector, err)
		}
		text = got
		if strings.Contains(text, want) {
			return text
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: got text %q; want it to contain %q", selector, text, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestNOCHeaders(t *testing.T) {
	s := servertest.Start(t, servertest.Options{})
	for _, p := range noc.Paths {
		r := s.Do("GET", p, "", nil)
		if r.Status != http.StatusOK {
			t.Fatalf("GET %s without a token: %d; want 200 (the page is public, its data is not)", p, r.Status)
		}
		if got := r.Header.Get("Content-Security-Policy"); got != noc.CSP || !strings.Contains(got, "script-src 'self'") || strings.Contains(got, "unsafe") {
			t.Errorf("GET %s: Content-Security-Policy %q; want %q", p, got, noc.CSP)
		}
		if r.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: no X-Content-Type-Options: nosniff", p)
		}
	}
	page := string(s.Do("GET", "/noc", "", nil).Body)
	if strings.Contains(page, "<script>") || strings.Contains(page, "http://") || strings.Contains(page, "https://") || strings.Contains(page, " style=") {
		t.Errorf("the page has inline script or style or an external resource:\n%s", page)
	}
	if r := s.Do("POST", "/noc", "", nil); r.Status != http.StatusMethodNotAllowed {
		t.Errorf("POST /noc: %d; want 405", r.Status)
	}
}

func TestNOCPage(t *testing.T) {
	s := servertest.Start(t, servertest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	rw := s.Key("sdwan:read", "sdwan:write")

	// Three sites: Paris with a voice SLA over mpls then inet, Lyon on inet and lte, Nice not
	// claimed yet.
	create := func(body string) sdwan.Site {
		var site sdwan.Site
		r := s.Do("POST", "/sd-wan/v1/sites", rw, body)
		wantStatus(t, r, 201)
		r.JSON(t, &site)
		return site
	}
	paris := create(`{"name":"Paris HQ","role":"hub","transports":[
		{"name":"mpls","kind":"mpls","interface":"eth1","cost":10},{"name":"inet","kind":"broadband","interface":"eth2","cost":1}]}`)
	lyon := create(`{"name":"Lyon Branch","transports":[
		{"name":"inet","kind":"broadband","interface":"eth1","cost":1},{"name":"lte","kind":"lte","interface":"wwan0","cost":50}]}`)
	create(`{"name":"Nice Shop"}`)
	create(`{"name":"<img src=x onerror=\"window.pwned=1\">"}`) // API data is text, never HTML
	var pol sdwan.Policy
	s.Do("POST", "/sd-wan/v1/policies", rw, `{"name":"std","type":"steering","content":{"classes":[{"name":"voice","max_latency_ms":150,"max_loss_pct":2}],"paths":{"voice":["mpls","inet"]}}}`).JSON(t, &pol)
	wantStatus(t, s.Do("POST", "/sd-wan/v1/policies/"+pol.ID+"/publish", rw, map[string]any{"version": 1, "sites": []string{paris.ID}}), 202)

	agent := func(site sdwan.Site, host string) *sim.Agent {
		acc, err := sim.Claim(ctx, s.Client, s.URL, site.Claim, host)
		if err != nil {
			t.Fatal(err)
		}
		ag, err := sim.Connect(ctx, acc)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(ag.Close)
		return ag
	}
	pa, ly := agent(paris, "paris-r1"), agent(lyon, "lyon-r1")
	report := func(ag *sim.Agent, tws ...telemetry.TransportWindow) {
		t.Helper()
		if err := ag.Report(ctx, time.Now(), time.Second, tws...); err != nil {
			t.Fatal(err)
		}
	}
	// Twelve minutes of history (windows stamped in the past land in past buckets), so the
	// sparklines have a shape; then the present.
	for k := 12; k >= 1; k-- {
		at, wave := time.Now().Add(-time.Duration(k)*time.Minute), float64((k*7)%5)
		for _, r := range []struct {
			ag  *sim.Agent
			tws []telemetry.TransportWindow
		}{
			{pa, []telemetry.TransportWindow{sim.Window("mpls", 5, 0, 18+2*wave, 1+wave/2), sim.Window("inet", 5, k%4/3, 30+4*wave, 3+wave)}},
			{ly, []telemetry.TransportWindow{sim.Window("inet", 5, 0, 25+3*wave, 2), sim.Window("lte", 5, 0, 55+6*wave, 8+wave)}},
		} {
			if err := r.ag.Report(ctx, at, time.Second, r.tws...); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range 4 {
		report(pa, sim.Window("mpls", 5, 0, 20+float64(i), 1), sim.Window("inet", 5, 0, 35, 4))
		report(ly, sim.Window("inet", 5, 0, 28, 2), sim.Window("lte", 5, 0, 60, 9))
	}
	// Paris's mpls goes down: transport.down, and voice switches to inet.
	report(pa, sim.Window("mpls", 5, 5, 0, 0), sim.Window("inet", 5, 0, 35, 4))
	waitFor(t, func() bool {
		var evs struct{ Data []event.Envelope }
		s.Do("GET", "/sd-wan/v1/events?type=path.switched&site="+paris.ID, rw, nil).JSON(t, &evs)
		var l sdwan.Site
		s.Do("GET", "/sd-wan/v1/sites/"+lyon.ID, rw, nil).JSON(t, &l)
		return len(evs.Data) == 1 && l.Status == sdwan.SiteUp
	})

	b := newBrowser(t, s)
	// Exceptions and errors in the page's console (a CSP violation is one), read until the end.
	var pmu sync.Mutex
	var problems []string
	messages := chromedp.Console(b)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.IsException() || m.Type == chromedp.ConsoleError {
				pmu.Lock()
				problems = append(problems, string(m.Type)+": "+m.Text)
				pmu.Unlock()
			}
		}
	}()
	if err := chromedp.Do(b, chromedp.EmulateViewport(1280, 1000), chromedp.Navigate(s.URL+"/noc?refresh=1"), chromedp.WaitVisible(chromedp.CSS("#key"))); err != nil {
		t.Fatalf("opening the NOC page: %v", err)
	}

	// A key without sdwan:read is refused at sign-in, and nothing is shown.
	signIn := func(key string) {
		t.Helper()
		if err := chromedp.Do(b, chromedp.SendKeys(chromedp.CSS("#key"), key), chromedp.Click(chromedp.CSS(`#signin-form button[type="submit"]`))); err != nil {
			t.Fatal(err)
		}
	}
	signIn(s.Key("soc:read"))
	waitText(t, b, "#signin-error", "lacks the sdwan:read scope")

	signIn(s.Key("sdwan:read"))
	sites := waitText(t, b, "#sites tbody", "Paris HQ")
	for _, want := range []string{"Lyon Branch", "Nice Shop", "degraded", "up", "pending", "hub"} {
		if !strings.Contains(sites, want) {
			t.Errorf("sites table: got %q; want it to contain %q", sites, want)
		}
	}
	// Worst first: degraded Paris, then up Lyon, then pending Nice.
	order, err := chromedp.Run(b, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#sites tbody tr td:first-child')].map(td => td.innerText)`))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(order, ",") != `Paris HQ,Lyon Branch,<img src=x onerror="window.pwned=1">,Nice Shop` {
		t.Errorf("site order: got %v; want Paris HQ (degraded), Lyon Branch (up), then the pending ones by name", order)
	}
	injected, err := chromedp.Run(b, chromedp.Evaluate[bool](`document.querySelector('main img') !== null || window.pwned === 1`))
	if err != nil || injected {
		t.Errorf("a site name was rendered as HTML (%v)", err)
	}
	summary := waitText(t, b, "#summary", "degraded")
	if !strings.Contains(summary, "1\nup") && !strings.Contains(summary, "1 up") {
		t.Logf("summary: %q", summary)
	}
	detail := waitText(t, b, `#detail[data-site="`+paris.ID+`"]`, "voice → inet")
	for _, want := range []string{"mpls", "inet", "down", "SLA", "std v1", "voice mpls → inet"} {
		if !strings.Contains(detail, want) {
			t.Errorf("Paris detail: got %q; want it to contain %q", detail, want)
		}
	}
	// Three uPlot charts (latency, loss, jitter), one series per transport, the voice SLA drawn
	// on latency (150 ms) and loss (2 %), the switch marked.
	charts, err := chromedp.Run(b, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#detail .chart')].map(c =>
		c.dataset.chart + ':' + c.querySelectorAll('canvas').length + ':' + c.dataset.thresholds + ':' + (c.dataset.marks > 0) + ':' +
		[...c.querySelectorAll('.u-legend .u-label')].map(l => l.innerText).join('/'))`))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(charts, " "); got != "latency_ms:1:150:true:Time/inet/mpls loss_pct:1:2:true:Time/inet/mpls jitter_ms:1::true:Time/inet/mpls" {
		t.Errorf("charts: %s", got)
	}
	waitText(t, b, "#switches", "Paris HQ: voice mpls → inet (down, by controller)")
	waitText(t, b, "#events", "Paris HQ: mpls down")

	// Live: Lyon's inet fails, and the page shows it without a reload.
	report(ly, sim.Window("inet", 5, 5, 0, 0), sim.Window("lte", 5, 0, 60, 9))
	waitText(t, b, "#events", "Lyon Branch: inet down")
	waitText(t, b, "#switches", "Lyon Branch: default inet → lte")
	waitText(t, b, `#sites tbody tr[data-site="`+lyon.ID+`"]`, "degraded")

	// What-if: a draft of Paris's policy is offered, and simulated for Paris over the window.
	wantStatus(t, s.Do("POST", "/sd-wan/v1/policies/"+pol.ID+"/versions", rw, `{"content":{"classes":[{"name":"voice","max_latency_ms":100,"max_loss_pct":2}],"paths":{"voice":["mpls","inet"]}}}`), 201)
	waitText(t, b, "#detail .whatif", "Simulate v2 here")
	if err := chromedp.Do(b, chromedp.Click(chromedp.CSS("#detail .whatif button.simulate"))); err != nil {
		t.Fatal(err)
	}
	waitText(t, b, "#detail .whatif", "needs a key with sdwan:write") // the page's key only reads
	if _, err := chromedp.Run(b, chromedp.Evaluate[any](fmt.Sprintf(`sessionStorage.setItem('edgewan.noc.key', %q)`, rw))); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(b, chromedp.Click(chromedp.CSS("#detail .whatif button.simulate"))); err != nil {
		t.Fatal(err)
	}
	sim := waitText(t, b, "#detail .whatif table.sim", "voice")
	for _, want := range []string{"draft v2", "published v1", "mpls"} {
		if !strings.Contains(sim, want) {
			t.Errorf("what-if table: got %q; want it to contain %q", sim, want)
		}
	}
	// No horizontal scrolling at 1280 px.
	wide, err := chromedp.Run(b, chromedp.Evaluate[[]int](`[document.documentElement.scrollWidth, document.documentElement.clientWidth]`))
	if err != nil {
		t.Fatal(err)
	}
	if wide[0] > wide[1] {
		t.Errorf("the page scrolls horizontally at 1280 px: %d px of content in %d", wide[0], wide[1])
	}

	png, err := chromedp.Run(b, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(artifactDir(t), "noc.png")
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot of the NOC page: %s (%d bytes)", shot, len(png))
	if len(png) < 10_000 || !strings.HasPrefix(string(png), "\x89PNG") {
		t.Errorf("screenshot: %d bytes, not a PNG of a drawn page", len(png))
	}

	// Signing out forgets the key.
	if err := chromedp.Do(b, chromedp.Click(chromedp.CSS("#signout")), chromedp.WaitVisible(chromedp.CSS("#key"))); err != nil {
		t.Fatal(err)
	}
	stored, err := chromedp.Run(b, chromedp.Evaluate[string](`sessionStorage.getItem('edgewan.noc.key') || ""`))
	if err != nil {
		t.Fatal(err)
	}
	if stored != "" {
		t.Errorf("after sign-out the key is still in sessionStorage")
	}
	pmu.Lock()
	defer pmu.Unlock()
	for _, p := range problems {
		if strings.Contains(p, "Content Security Policy") || strings.HasPrefix(p, "exception") {
			t.Errorf("page problem: %s", p)
		}
	}
}

// TestSDWANEventsAndSeries checks the two read endpoints the NOC page relies on, on both
// databases: events filtered by type and site and paged, and per-bucket series.
func TestSDWANEventsAndSeries(t *testing.T) {
	for _, pg := range []bool{false, true} {
		t.Run(map[bool]string{false: "sqlite", true: "postgres"}[pg], func(t *testing.T) {
			t.Parallel()
			s := servertest.Start(t, servertest.Options{Postgres: pg})
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			rw := s.Key("sdwan:read", "sdwan:write")
			var site, other sdwan.Site
			s.Do("POST", "/sd-wan/v1/sites", rw, branchSite).JSON(t, &site)
			s.Do("POST", "/sd-wan/v1/sites", rw, `{"name":"Other","transports":[{"name":"inet","interface":"eth0"}]}`).JSON(t, &other)
			acc, err := sim.Claim(ctx, s.Client, s.URL, site.Claim, "r1")
			if err != nil {
				t.Fatal(err)
			}
			ag, err := sim.Connect(ctx, acc)
			if err != nil {
				t.Fatal(err)
			}
			defer ag.Close()
			for _, lost := range []int{0, 0, 5} { // two good windows, then inet (the preferred, cheaper) down
				if err := ag.Report(ctx, time.Now(), time.Second, sim.Window("mpls", 5, 0, 20, 1), sim.Window("inet", 5, lost, 35, 4)); err != nil {
					t.Fatal(err)
				}
			}
			type list struct {
				Data       []event.Envelope
				NextCursor *string `json:"next_cursor"`
			}
			var all list
			waitFor(t, func() bool {
				s.Do("GET", "/sd-wan/v1/events?site="+site.ID, rw, nil).JSON(t, &all)
				return len(all.Data) >= 3 // device online, transport.down, path.switched
			})
			for i := 1; i < len(all.Data); i++ {
				if all.Data[i].CreatedAt.After(all.Data[i-1].CreatedAt) {
					t.Errorf("events not newest first: %v after %v", all.Data[i].CreatedAt, all.Data[i-1].CreatedAt)
				}
			}
			tests := []struct {
				name, query string
				want        int
			}{
				{"by type and site", "?type=transport.down&site=" + site.ID, 1},
				{"path switches", "?type=path.switched", 1},
				{"another site", "?site=" + other.ID, 0},
				{"a type no one raised", "?type=sla.breach", 0},
			}
			for _, tc := range tests {
				var l list
				r := s.Do("GET", "/sd-wan/v1/events"+tc.query, rw, nil)
				wantStatus(t, r, 200)
				r.JSON(t, &l)
				if len(l.Data) != tc.want {
					t.Errorf("%s: got %d events; want %d (%s)", tc.name, len(l.Data), tc.want, r.Body)
				}
			}
			// Paging one at a time, oldest first, visits every event once.
			var seen []string
			for q := "?order=asc&limit=1&site=" + site.ID; ; {
				var l list
				s.Do("GET", "/sd-wan/v1/events"+q, rw, nil).JSON(t, &l)
				for _, e := range l.Data {
					seen = append(seen, e.ID)
				}
				if l.NextCursor == nil || len(seen) > 10 {
					break
				}
				q = "?order=asc&limit=1&site=" + site.ID + "&cursor=" + *l.NextCursor
			}
			if len(seen) != len(all.Data) || seen[0] != all.Data[len(all.Data)-1].ID {
				t.Errorf("paged %v; want the %d events oldest first", seen, len(all.Data))
			}

			var se sdwan.Series
			s.Do("GET", "/sd-wan/v1/sites/"+site.ID+"/series?window=5m", rw, nil).JSON(t, &se)
			if se.Step != "1m" || len(se.Transports) != 2 {
				t.Fatalf("series: %+v", se)
			}
			for _, tr := range se.Transports {
				n := 0
				for _, p := range tr.Points {
					n += p.Samples
				}
				if len(tr.Points) < 5 || n != 3 {
					t.Errorf("series of %s: %d points, %d samples; want at least 5 points and 3 samples", tr.Name, len(tr.Points), n)
				}
			}
			var pending sdwan.Series
			s.Do("GET", "/sd-wan/v1/sites/"+other.ID+"/series", rw, nil).JSON(t, &pending)
			if pending.Window != "15m" || len(pending.Transports) != 1 || len(pending.Transports[0].Points) != 0 {
				t.Errorf("series of an unclaimed site: %+v", pending)
			}
		})
	}
}
