package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/edgewan/edgewan/controller/sdwan"
)

// overviewOrder maps the sort keys of SiteQuery to ORDER BY clauses; id breaks ties so pages
// never overlap. Status sorts worst first.
var overviewOrder = map[string]string{
	"status":     "CASE status WHEN 'degraded' THEN 0 WHEN 'offline' THEN 1 WHEN 'up' THEN 2 WHEN 'pending' THEN 3 ELSE 4 END, name, id",
	"-status":    "CASE status WHEN 'degraded' THEN 0 WHEN 'offline' THEN 1 WHEN 'up' THEN 2 WHEN 'pending' THEN 3 ELSE 4 END DESC, name DESC, id DESC",
	"name":       "name, id",
	"-name":      "name DESC, id DESC",
	"last_seen":  "last_seen, id",
	"-last_seen": "last_seen DESC, id DESC",
}

// SearchSites implements sdwan.Store: one page of the live (not decommissioned) sites matching
// q, with their transports, the number matching, and the matching sites counted by status
// (the status filter aside), in three queries plus one for the page's transports.
func (s *Store) SearchSites(ctx context.Context, q sdwan.SiteQuery) (*sdwan.SitePage, error) {
	order, ok := overviewOrder[q.Sort]
	if !ok {
		return nil, fmt.Errorf("store.SearchSites: sort %q", q.Sort)
	}
	where, args := []string{"status <> ?"}, []any{sdwan.SiteDecommissioned}
	if q.Search != "" {
		like := "%" + strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`).Replace(strings.ToLower(q.Search)) + "%"
		where = append(where, `(lower(name) LIKE ? ESCAPE '\' OR id LIKE ? ESCAPE '\')`)
		args = append(args, like, like)
	}
	out := &sdwan.SitePage{Counts: map[string]int{}, Data: []*sdwan.Site{}}
	cond := strings.Join(where, " AND ")
	err := s.queryRows(ctx, "SELECT status, count(*) FROM sites WHERE "+cond+" GROUP BY status", args, func(r *sql.Rows) error {
		var st string
		var n int
		if err := r.Scan(&st, &n); err != nil {
			return err
		}
		out.Counts[st] = n
		if q.Status == "" || q.Status == st {
			out.Total += n
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store.SearchSites: %w", err)
	}
	if q.Status != "" {
		cond += " AND status = ?"
		args = append(args, q.Status)
	}
	query := fmt.Sprintf("SELECT %s FROM sites WHERE %s ORDER BY %s LIMIT %d OFFSET %d", siteCols, cond, order, q.Limit, q.Offset)
	byID := map[string]*sdwan.Site{}
	err = s.queryRows(ctx, query, args, func(r *sql.Rows) error {
		site, err := scanSite(r)
		if err == nil {
			site.Transports = []*sdwan.Transport{}
			out.Data = append(out.Data, site)
			byID[site.ID] = site
		}
		return err
	})
	if err != nil || len(out.Data) == 0 {
		if err != nil {
			err = fmt.Errorf("store.SearchSites: %w", err)
		}
		return out, err
	}
	ids := make([]string, 0, len(out.Data))
	for _, site := range out.Data {
		ids = append(ids, site.ID)
	}
	in, args := inList(ids)
	err = s.queryRows(ctx, "SELECT "+transportCols+" FROM transports WHERE site_id IN "+in+" ORDER BY site_id, name", args, func(r *sql.Rows) error {
		t, err := scanTransport(r)
		if err == nil {
			byID[t.SiteID].Transports = append(byID[t.SiteID].Transports, t)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store.SearchSites: transports: %w", err)
	}
	return out, nil
}
