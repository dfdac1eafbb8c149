package rollup

import (
	"slices"
	"strings"
	"time"
)

// Point is one bucket of a Series: the transport's figures over [At, At+Step).
type Point struct {
	At           time.Time `json:"at"`             // start of the bucket
	Samples      int       `json:"samples"`        // transport windows in it; 0: no data (a gap)
	LatencyMs    float64   `json:"latency_ms"`     // mean RTT of answered probes
	LossPct      float64   `json:"loss_pct"`       // lost / sent, in percent
	JitterMs     float64   `json:"jitter_ms"`      // mean window jitter, weighted by answered probes
	MaxLatencyMs float64   `json:"max_latency_ms"` // highest RTT seen
}

// Points returns the buckets overlapping (now-window, now], oldest first, from the same ring
// Summary would answer from, and that ring's step. Buckets with no data have Samples 0.
func (s *Series) Points(now time.Time, window time.Duration) (time.Duration, []Point) {
	sec := now.Unix()
	from := sec - int64(window/time.Second)
	i := 0
	for ; i < nTiers-1; i++ {
		tr := &tiers[i]
		if epoch(sec, tr.step)-epoch(from, tr.step)+1 <= tr.n {
			break
		}
	}
	tr := &tiers[i]
	hi := epoch(sec, tr.step)
	lo := max(epoch(from, tr.step), hi-tr.n+1)
	head := s.heads[i]
	out := make([]Point, 0, hi-lo+1)
	for k := lo; k <= hi; k++ {
		p := Point{At: time.Unix(k*tr.step, 0).UTC()}
		if k <= head && k > head-tr.n { // past the head: no data yet; a full ring behind: cleared
			b := &s.buckets[tr.off+int(mod(k, tr.n))]
			p.Samples = int(b.windows)
			sent, lost := uint64(b.sent), uint64(min(b.lost, b.sent))
			if sent > 0 {
				p.LossPct = 100 * float64(lost) / float64(sent)
			}
			if answered := sent - lost; answered > 0 {
				p.LatencyMs = float64(b.latSum) / float64(answered)
				p.JitterMs = float64(b.jitSum) / float64(answered)
			}
			p.MaxLatencyMs = float64(b.maxLat)
		}
		out = append(out, p)
	}
	return time.Duration(tr.step) * time.Second, out
}

// TransportPoints is one transport's Points, as SitePoints returns them.
type TransportPoints struct {
	Transport string  `json:"transport"`
	Points    []Point `json:"points"`
}

// SitePoints returns the Points of every transport of site over (now-window, now], sorted by
// transport name, and their step; nil for an unknown site.
func (s *Store) SitePoints(now time.Time, site string, window time.Duration) (time.Duration, []TransportPoints) {
	sh := s.shard(site)
	sh.mu.RLock()
	ss := sh.sites[site]
	var out []TransportPoints
	var step time.Duration
	if ss != nil {
		out = make([]TransportPoints, len(ss.names))
		for i, n := range ss.names {
			var pts []Point
			step, pts = ss.series[i].Points(now, window)
			out[i] = TransportPoints{Transport: n, Points: pts}
		}
	}
	sh.mu.RUnlock()
	slices.SortFunc(out, func(a, b TransportPoints) int { return strings.Compare(a.Transport, b.Transport) })
	return step, out
}
