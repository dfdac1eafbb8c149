package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/edgewan/edgewan/coreapi/event"
)

// ErrFenced is what a fenced write returns (wrapped in a *FencedError): another controller
// holds the lease of the site's partition now, and nothing was written for that site.
var ErrFenced = errors.New("store: fenced: another controller holds the site's lease")

// FencedError names the sites a write refused because this controller no longer holds their
// partitions' leases. It is ErrFenced for errors.Is.
type FencedError struct {
	Sites []string // sorted
}

func (e *FencedError) Error() string {
	const most = 5
	s := e.Sites
	more := ""
	if len(s) > most {
		s, more = s[:most], fmt.Sprintf(" and %d more", len(e.Sites)-most)
	}
	return fmt.Sprintf("%v: site %s%s", ErrFenced, strings.Join(s, ", "), more)
}

// Is makes errors.Is(err, ErrFenced) true.
func (e *FencedError) Is(target error) bool { return target == ErrFenced }

// FencedSites returns the sites not written: callers that do not import store read them through
// an interface of this method.
func (e *FencedError) FencedSites() []string { return e.Sites }

// Fencer says, inside a write's transaction, whether this controller may still write for a
// site (controller/cluster's Member: the site's partition lease).
type Fencer interface {
	PartitionOf(site string) int
	// HoldsPartition reports whether partition p is still this controller's; the answer stands
	// until tx ends. err is a database failure (tx is unusable then).
	HoldsPartition(ctx context.Context, tx *sql.Tx, p int) (bool, error)
}

// SetFence makes the writes only a site's owner may make check f in their own transaction:
// status changes with their events (SetSiteStatus), other site events (InsertEvents), the
// latest figures and stored watermarks (SaveFigures) and rollout states (SetRollout). A
// controller that lost a site's lease, even while paused, then cannot write for it. Call it
// before the store is used; without it (one controller, SQLite) nothing is checked.
func (s *Store) SetFence(f Fencer) { s.fence = f }

// fenced checks, in tx, the partitions of sites once each in ascending order (the order lease
// renewals lock them in), and returns the sites whose partition is no longer held here.
func (s *Store) fenced(ctx context.Context, tx *sql.Tx, sites []string) (map[string]bool, error) {
	if s.fence == nil || len(sites) == 0 {
		return nil, nil
	}
	byPart := map[int][]string{}
	for _, id := range sites {
		p := s.fence.PartitionOf(id)
		byPart[p] = append(byPart[p], id)
	}
	parts := make([]int, 0, len(byPart))
	for p := range byPart {
		parts = append(parts, p)
	}
	slices.Sort(parts)
	var out map[string]bool
	for _, p := range parts {
		held, err := s.fence.HoldsPartition(ctx, tx, p)
		if err != nil {
			return nil, fmt.Errorf("checking the lease of partition %d: %w", p, err)
		}
		if !held {
			if out == nil {
				out = map[string]bool{}
			}
			for _, id := range byPart[p] {
				out[id] = true
			}
		}
	}
	return out, nil
}

// fencedError returns a *FencedError for the sites in fenced, or nil.
func fencedError(fenced map[string]bool) error {
	if len(fenced) == 0 {
		return nil
	}
	e := &FencedError{Sites: make([]string, 0, len(fenced))}
	for id := range fenced {
		e.Sites = append(e.Sites, id)
	}
	slices.Sort(e.Sites)
	return e
}

// fenceAll refuses the whole write when any of sites is fenced.
func (s *Store) fenceAll(ctx context.Context, tx *sql.Tx, sites ...string) error {
	f, err := s.fenced(ctx, tx, sites)
	if err != nil {
		return err
	}
	return fencedError(f)
}

// eventSites returns the distinct sites events are about: the "site" of their data, as every
// site event carries (ListEvents filters on it too). Events about no site are not fenced.
func eventSites(evs []*event.Envelope) []string {
	var out []string
	for _, ev := range evs {
		var v struct {
			Site string `json:"site"`
		}
		if ev == nil || json.Unmarshal(ev.Data, &v) != nil || v.Site == "" || slices.Contains(out, v.Site) {
			continue
		}
		out = append(out, v.Site)
	}
	return out
}
