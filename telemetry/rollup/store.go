package rollup

import (
	"hash/maphash"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/edgewan/edgewan/telemetry"
)

// MaxTransportsPerSite bounds the transports a Store keeps for one site; windows of further
// transport names are dropped (Add reports false), so a misbehaving agent cannot grow memory.
const MaxTransportsPerSite = telemetry.MaxTransports

const nShards = 64

// Store holds a Series per site and transport, safe for concurrent use. Adding to a known
// transport allocates nothing; the first window of a new site or transport allocates its Series.
// The zero value is not usable: make one with NewStore.
type Store struct {
	seed   maphash.Seed
	shards [nShards]shard

	allocMu sync.Mutex // guards the Series allocator below; taken under a shard's lock
	slab    []Series   // allocated, not yet used
	chunk   int        // size of the last slab
	free    []*Series  // of deleted sites, cleared
}

type shard struct {
	mu    sync.RWMutex
	sites map[string]*siteSeries
	_     [32]byte // keep shards on separate cache lines
}

// maxChunk caps slabs at about 1 MB.
const maxChunk = 128

// newSeries hands out Series from slabs that double up to maxChunk: one Series alone would be
// rounded up to the 8 KiB size class, a slab rounds to pages only once.
func (s *Store) newSeries() *Series {
	s.allocMu.Lock()
	defer s.allocMu.Unlock()
	if n := len(s.free); n > 0 {
		se := s.free[n-1]
		s.free = s.free[:n-1]
		return se
	}
	if len(s.slab) == 0 {
		s.chunk = min(max(2*s.chunk, 1), maxChunk)
		s.slab = make([]Series, s.chunk)
	}
	se := &s.slab[0]
	s.slab = s.slab[1:]
	return se
}

type siteSeries struct {
	names  []string
	series []*Series
}

func (ss *siteSeries) find(transport string) *Series {
	for i, n := range ss.names {
		if n == transport {
			return ss.series[i]
		}
	}
	return nil
}

// TransportStats is one transport's Stats, as Site returns them.
type TransportStats struct {
	Transport string `json:"transport"`
	Stats
}

// NewStore returns an empty Store.
func NewStore() *Store {
	s := &Store{seed: maphash.MakeSeed()}
	for i := range s.shards {
		s.shards[i].sites = make(map[string]*siteSeries)
	}
	return s
}

func (s *Store) shard(site string) *shard {
	return &s.shards[maphash.String(s.seed, site)%nShards]
}

// Add adds site's transport window tw, which ended at t, and reports whether it was kept
// (see Series.Add).
func (s *Store) Add(t time.Time, site string, tw *telemetry.TransportWindow) bool {
	sh := s.shard(site)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.add(s, t, site, tw)
}

// AddReport adds every transport window of r at r.Time under one lock, and reports how many
// were kept. r.Time is capped at now, the controller's clock, so an agent whose clock runs
// ahead cannot push the rings forward; reports an agent replays from its spool after an outage
// land at their own (past) time.
func (s *Store) AddReport(now time.Time, r *telemetry.Report) int {
	t := r.Time
	if t.After(now) {
		t = now
	}
	sh := s.shard(r.Site)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	n := 0
	for i := range r.Transport {
		if sh.add(s, t, r.Site, &r.Transport[i]) {
			n++
		}
	}
	return n
}

func (sh *shard) add(s *Store, t time.Time, site string, tw *telemetry.TransportWindow) bool {
	ss := sh.sites[site]
	if ss == nil {
		ss = &siteSeries{}
		sh.sites[strings.Clone(site)] = ss
	}
	se := ss.find(tw.Name)
	if se == nil {
		if len(ss.names) >= MaxTransportsPerSite {
			return false
		}
		se = s.newSeries()
		ss.names = append(ss.names, strings.Clone(tw.Name))
		ss.series = append(ss.series, se)
	}
	return se.Add(t, tw)
}

// Summary summarises site's transport over (now-window, now]; ok is false for an unknown one.
func (s *Store) Summary(now time.Time, site, transport string, window time.Duration) (st Stats, ok bool) {
	sh := s.shard(site)
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	ss := sh.sites[site]
	if ss == nil {
		return Stats{}, false
	}
	se := ss.find(transport)
	if se == nil {
		return Stats{}, false
	}
	return se.Summary(now, window), true
}

// Site summarises every transport of site over (now-window, now], sorted by transport name;
// nil for an unknown site.
func (s *Store) Site(now time.Time, site string, window time.Duration) []TransportStats {
	sh := s.shard(site)
	sh.mu.RLock()
	ss := sh.sites[site]
	var out []TransportStats
	if ss != nil {
		out = make([]TransportStats, len(ss.names))
		for i, n := range ss.names {
			out[i] = TransportStats{Transport: n, Stats: ss.series[i].Summary(now, window)}
		}
	}
	sh.mu.RUnlock()
	slices.SortFunc(out, func(a, b TransportStats) int { return strings.Compare(a.Transport, b.Transport) })
	return out
}

// Delete forgets a site (deleted from the inventory); its memory is reused for new transports.
func (s *Store) Delete(site string) {
	sh := s.shard(site)
	sh.mu.Lock()
	if ss := sh.sites[site]; ss != nil {
		s.allocMu.Lock()
		for _, se := range ss.series {
			*se = Series{}
			s.free = append(s.free, se)
		}
		s.allocMu.Unlock()
		delete(sh.sites, site)
	}
	sh.mu.Unlock()
}

// Len returns the number of transports held.
func (s *Store) Len() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.RLock()
		for _, ss := range sh.sites {
			n += len(ss.names)
		}
		sh.mu.RUnlock()
	}
	return n
}
