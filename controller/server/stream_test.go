package server_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/edgewan/edgewan/controller/config"
	"github.com/edgewan/edgewan/controller/sdwan"
	"github.com/edgewan/edgewan/controller/server/servertest"
	"github.com/edgewan/edgewan/coreapi/event"
)

// TestStream reads the event stream: a site's status change and an event arrive as "site",
// "counts" and "event", and a stream still open when the controller stops does not hold the
// shutdown (servertest's cleanup fails on a shutdown that times out).
func TestStream(t *testing.T) {
	backends(t, func(t *testing.T, s *servertest.Server) {
		rw := s.Key("sdwan:read", "sdwan:write")
		var site sdwan.Site
		r := s.Do("POST", "/sd-wan/v1/sites", rw, `{"name":"Streamed","transports":[{"name":"inet","interface":"eth0"}]}`)
		wantStatus(t, r, 201)
		r.JSON(t, &site)
		// Neither the request's context nor its body is closed here: the stream must still be
		// open when the controller stops (the client's 30 s timeout ends it otherwise).
		ctx := context.Background()
		req, _ := http.NewRequestWithContext(ctx, "GET", s.URL+"/sd-wan/v1/stream?sites="+site.ID, nil)
		req.Header.Set("Authorization", "Bearer "+s.Key("sdwan:read"))
		resp, err := s.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		rd := bufio.NewReader(resp.Body)
		if line, _ := rd.ReadString('\n'); line != "retry: 2000\n" { // the stream is open before any change
			t.Fatalf("first line %q", line)
		}
		ev, _ := event.New(event.SiteOffline, map[string]any{"site": site.ID, "reason": "test"})
		at := time.Now().UTC()
		if _, err := s.Store.SetSiteStatus(ctx, site.ID, sdwan.SiteOffline, at, at, ev); err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"site": `"status":"offline"`, "counts": `"offline":1`, "event": ev.ID}
		for len(want) > 0 {
			line, err := rd.ReadString('\n')
			if err != nil {
				t.Fatalf("stream ended before %v: %v", want, err)
			}
			name, ok := strings.CutPrefix(strings.TrimSpace(line), "event: ")
			if !ok {
				continue
			}
			data, _ := rd.ReadString('\n')
			if w, ok := want[name]; ok && strings.Contains(data, w) && (name == "counts" || strings.Contains(data, site.ID)) {
				delete(want, name)
			}
		}
		// The controller stops with this stream open (cleanup): it must not wait for it.
	})
}

// TestStreamEndsAtShutdown: an open stream ends when the controller starts shutting down,
// instead of holding the drain for its whole timeout (a minute here; without CloseStreams the
// subtest below lasts until the client gives up, 30 s).
func TestStreamEndsAtShutdown(t *testing.T) {
	start := time.Now()
	t.Run("open a stream, then stop", func(t *testing.T) {
		s := servertest.Start(t, servertest.Options{Config: func(c *config.Config) { c.ShutdownTimeout = time.Minute }})
		req, _ := http.NewRequest("GET", s.URL+"/sd-wan/v1/stream", nil)
		req.Header.Set("Authorization", "Bearer "+s.Key("sdwan:read"))
		resp, err := s.Client.Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("stream: %v %v", resp, err)
		}
		go func() { _, _ = io.Copy(io.Discard, resp.Body); resp.Body.Close() }()
	})
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("the controller took %v to stop with a stream open", d.Round(time.Second))
	}
}
