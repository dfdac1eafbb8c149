package sdwan

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/edgewan/edgewan/coreapi/apierr"
	"github.com/edgewan/edgewan/coreapi/page"
)

// StreamRequest is what GET /sd-wan/v1/stream watches: every site's status, the SD-WAN events,
// and the transport figures of up to MaxOverviewLimit sites (the NOC page's visible rows).
type StreamRequest struct {
	Sites    []string
	Interval time.Duration // how often the stream looks for changes; default 1s
}

// CloseStreams ends every open stream (and any opened later): the server calls it when it
// starts shutting down, which would otherwise wait for streams that never end by themselves.
func (s *Service) CloseStreams() { s.closeOnce.Do(func() { close(s.streamsDone) }) }

// ParseStreamSites reads the comma-separated site IDs of the stream's sites parameter.
func ParseStreamSites(v string) ([]string, error) {
	if v == "" {
		return nil, nil
	}
	ids := strings.Split(v, ",")
	if len(ids) > MaxOverviewLimit {
		return nil, apierr.BadRequest("sites: at most %d site IDs", MaxOverviewLimit)
	}
	for _, id := range ids {
		if !validSiteID(id) {
			return nil, apierr.BadRequest("sites: %q is not a site ID", id)
		}
	}
	return ids, nil
}

// streamCounts shares the live sites' counts by status among the open streams: each stream
// that sees a site change needs them, and counting is a pass over the fleet, so it is done
// once per change seen, not once per stream.
type streamCounts struct {
	mu     sync.Mutex
	key    page.Key // the newest site change the counts were taken after
	counts map[string]int
}

// get returns counts taken after the site change at key (the newest a stream has seen),
// counting again only if the ones held were taken before it. Streams share the map: read only.
func (c *streamCounts) get(ctx context.Context, st Store, key page.Key) (map[string]int, error) {
	c.mu.Lock() // held while counting: streams that tick meanwhile wait and take the result
	defer c.mu.Unlock()
	if c.counts != nil && !keyBefore(c.key, key) {
		return c.counts, nil
	}
	p, err := st.SearchSites(ctx, SiteQuery{Sort: "status", Limit: 1})
	if err != nil {
		return nil, err
	}
	c.key, c.counts = key, p.Counts
	return c.counts, nil
}

// keyBefore reports whether a sorts before b in (updated_at, id) order.
func keyBefore(a, b page.Key) bool {
	if !a.UpdatedAt.Equal(b.UpdatedAt) {
		return a.UpdatedAt.Before(b.UpdatedAt)
	}
	return a.ID < b.ID
}

// StreamSite is a site whose status changed (event "site").
type StreamSite struct {
	ID        string    `json:"id"`
	Status    string    `json:"status"`
	LastSeen  time.Time `json:"last_seen,omitzero"`
	UpdatedAt time.Time `json:"updated_at"`
}

// StreamFigures are a watched site's latest transport figures (event "figures").
type StreamFigures struct {
	Site       string       `json:"site"`
	Transports []*Transport `json:"transports"`
}

// maxStreamBatch bounds what one tick sends of each kind; past it the client is told to
// reload ("resync") rather than sent a flood.
const maxStreamBatch = 200

// Stream writes server-sent events to w until ctx ends: "site" for each site whose status
// changed, "counts" (live sites by status) after such changes, "event" for each new SD-WAN
// event, "figures" for each watched site whose transports' figures changed, "resync" when more
// changed at once than one tick sends, and a comment every 15 s to keep proxies from closing
// an idle stream. Each tick costs two small indexed queries and the watched sites' figures
// from memory; the counts, a pass over the fleet, are taken once per site change and shared
// by every stream (streamCounts).
func (s *Service) Stream(ctx context.Context, req StreamRequest, w io.Writer, flush func()) error {
	if req.Interval <= 0 {
		req.Interval = time.Second
	}
	watched := map[string][]*Transport{}
	for _, id := range req.Sites {
		site, err := s.store.GetSite(ctx, id)
		if err != nil {
			continue // a site that does not exist has no figures
		}
		watched[id] = site.Transports
	}
	send := func(name string, v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		return err
	}
	now := s.now()
	siteKey := page.Key{UpdatedAt: now}
	evKey := page.Key{UpdatedAt: now}
	last := map[string]string{} // watched site -> its figures as last sent
	if _, err := io.WriteString(w, "retry: 2000\n: edgewan sd-wan stream\n\n"); err != nil {
		return err
	}
	flush()
	tick := time.NewTicker(req.Interval)
	defer tick.Stop()
	idle := 0
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.streamsDone:
			return nil
		case <-tick.C:
		}
		sent := false
		sites, err := s.store.ListSites(ctx, page.Params{Limit: maxStreamBatch, After: &siteKey}, SiteFilter{})
		if err != nil {
			return err
		}
		for i, site := range sites {
			if i == maxStreamBatch {
				if err := send("resync", map[string]string{"reason": "more sites changed than one update carries"}); err != nil {
					return err
				}
				break
			}
			siteKey = page.Key{UpdatedAt: site.UpdatedAt, ID: site.ID}
			if err := send("site", StreamSite{ID: site.ID, Status: site.Status, LastSeen: site.LastSeen, UpdatedAt: site.UpdatedAt}); err != nil {
				return err
			}
			sent = true
		}
		if len(sites) > 0 {
			counts, err := s.streamCounts.get(ctx, s.store, siteKey)
			if err != nil {
				return err
			}
			if err := send("counts", counts); err != nil {
				return err
			}
		}
		evs, err := s.store.ListEvents(ctx, page.Params{Limit: maxStreamBatch, After: &evKey}, EventFilter{Types: EventTypes})
		if err != nil {
			return err
		}
		for _, ev := range evs[:min(len(evs), maxStreamBatch)] {
			evKey = page.Key{UpdatedAt: ev.CreatedAt, ID: ev.ID}
			if err := send("event", ev); err != nil {
				return err
			}
			sent = true
		}
		if s.live != nil {
			for id, ts := range watched {
				s.live.Overlay(id, ts)
				b, _ := json.Marshal(ts)
				if last[id] == string(b) {
					continue
				}
				last[id] = string(b)
				if err := send("figures", StreamFigures{Site: id, Transports: ts}); err != nil {
					return err
				}
				sent = true
			}
		}
		if !sent {
			if idle++; idle*int(req.Interval/time.Millisecond) >= 15000 {
				idle = 0
				if _, err := io.WriteString(w, ": ping\n\n"); err != nil {
					return err
				}
				sent = true
			}
		}
		if sent {
			flush()
		}
	}
}
