package sdwan

import (
	"context"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/edgewan/edgewan/coreapi/apierr"
)

// SiteQuery selects a page of GET /sites-overview: a search, a status, a sort and an offset.
type SiteQuery struct {
	Search string // in the name (case-insensitive) or the ID
	Status string
	Sort   string // status (worst first), name, last_seen; "-" before it reverses
	Offset int
	Limit  int
}

// SitePage is the answer of GET /sites-overview: one page of sites with their transports and
// latest figures, how many match, and the matching sites by status (before the status filter),
// the NOC page's tiles.
type SitePage struct {
	Total  int            `json:"total"`
	Counts map[string]int `json:"counts"`
	Offset int            `json:"offset"`
	Data   []*Site        `json:"data"`
}

// MaxOverviewLimit bounds a page of the overview.
const MaxOverviewLimit = 200

// SitesOverview returns a page of live sites, searched, filtered and sorted by the database,
// with the transports' figures from memory: its cost follows the page, not the fleet.
func (s *Service) SitesOverview(ctx context.Context, q SiteQuery) (*SitePage, error) {
	if q.Status != "" && (!slices.Contains(SiteStatuses, q.Status) || q.Status == SiteDecommissioned) {
		return nil, apierr.BadRequest("status must be one of pending, up, degraded, offline; got %q", q.Status)
	}
	if q.Sort == "" {
		q.Sort = "status"
	}
	if !slices.Contains([]string{"status", "name", "last_seen"}, strings.TrimPrefix(q.Sort, "-")) {
		return nil, apierr.BadRequest("sort must be status, name or last_seen, with - before it for the reverse; got %q", q.Sort)
	}
	if len(q.Search) > 200 || !utf8.ValidString(q.Search) {
		return nil, apierr.BadRequest("q: at most 200 characters of UTF-8")
	}
	if q.Limit == 0 {
		q.Limit = 50
	}
	if q.Limit < 1 || q.Limit > MaxOverviewLimit || q.Offset < 0 || q.Offset > 1_000_000 {
		return nil, apierr.BadRequest("limit must be 1..%d and offset 0..1000000", MaxOverviewLimit)
	}
	p, err := s.store.SearchSites(ctx, q)
	if err != nil {
		return nil, err
	}
	p.Offset = q.Offset
	if s.live != nil {
		for _, site := range p.Data {
			s.live.Overlay(site.ID, site.Transports)
		}
	}
	return p, nil
}
