// Package rollup keeps the controller's rolling aggregates of transport windows, per site and
// transport, in a few kilobytes each, and summarises them over any window from 1m to 30d.
//
// Each transport has a Series: three rings of buckets, one per resolution (see Resolutions):
//
//	1 minute  x  61 buckets   windows up to 1 hour
//	15 minutes x 97 buckets   windows up to 24 hours
//	6 hours   x 121 buckets   windows up to 30 days
//
// Every Add goes into the current bucket of all three rings (no cascading, so a coarse bucket
// is as exact as a fine one). Summary answers from the finest ring that holds every bucket
// overlapping the window, so a window of w is answered with between w and w+resolution of
// history: "5m" at 12:00:30 sums the minutes 11:55 to 12:00 (the last one partial).
//
// In a bucket, latency and jitter are sums weighted by answered probes (sent - lost), so the
// summary's mean latency is the mean RTT of all answered probes, and its jitter the mean of the
// windows' jitter weighted the same way. Sums are float32 (about 7 significant digits).
package rollup

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/edgewan/edgewan/telemetry"
)

// Resolution is one ring of a Series: Buckets buckets of Step each.
type Resolution struct {
	Step    time.Duration
	Buckets int
}

// Resolutions are the rings of every Series, finest first. A ring of n buckets answers
// windows up to (n-1) x Step: the buckets overlapping such a window are at most n.
var Resolutions = [...]Resolution{
	{Step: time.Minute, Buckets: 61},
	{Step: 15 * time.Minute, Buckets: 97},
	{Step: 6 * time.Hour, Buckets: 121},
}

// Window limits accepted by ParseWindow.
const (
	MinWindow = time.Minute
	MaxWindow = 30 * 24 * time.Hour
)

const (
	nTiers   = len(Resolutions)
	nBuckets = 61 + 97 + 121
)

// tier is a Resolution laid out in Series.buckets.
type tier struct {
	step int64 // seconds
	n    int64
	off  int
}

var tiers = func() (ts [nTiers]tier) {
	off := 0
	for i, r := range Resolutions {
		ts[i] = tier{step: int64(r.Step / time.Second), n: int64(r.Buckets), off: off}
		off += r.Buckets
	}
	if off != nBuckets {
		panic("rollup: nBuckets does not match Resolutions")
	}
	return ts
}()

// bucket aggregates the windows of one Step. 28 bytes.
type bucket struct {
	windows uint32  // transport windows added
	sent    uint32  // probes sent
	lost    uint32  // probes lost
	down    uint32  // windows reported down
	latSum  float32 // Σ LatencyMs x answered
	jitSum  float32 // Σ JitterMs x answered
	maxLat  float32 // max of MaxMs
}

// Series is one transport's rolling aggregates: about 7.8 KB, allocation-free to update and
// summarise. The zero value is empty and ready. A Series is not safe for concurrent use
// (Store locks around it).
type Series struct {
	heads   [nTiers]int64 // per ring, the epoch (unix seconds / step) of its newest bucket
	buckets [nBuckets]bucket
}

// Stats summarise a transport over a window.
type Stats struct {
	Samples      int     `json:"samples"`        // transport windows aggregated
	Sent         int64   `json:"sent"`           // probes sent
	Lost         int64   `json:"lost"`           // probes lost
	LatencyMs    float64 `json:"latency_ms"`     // mean RTT of answered probes
	LossPct      float64 `json:"loss_pct"`       // Lost / Sent in percent; 0 when nothing was sent
	JitterMs     float64 `json:"jitter_ms"`      // mean window jitter, weighted by answered probes
	MaxLatencyMs float64 `json:"max_latency_ms"` // highest RTT seen
	DownPct      float64 `json:"down_pct"`       // share of windows reported down, in percent

	// What answered: buckets of Resolution from From (inclusive) to the end of the bucket
	// holding the summary's now.
	Resolution time.Duration `json:"-"`
	From       time.Time     `json:"from"`
}

// epoch is floor(sec / step), also for negative sec.
func epoch(sec, step int64) int64 {
	e := sec / step
	if sec%step < 0 {
		e--
	}
	return e
}

// Add adds tw, a window that ended at t, to the buckets holding t. A window older than a
// ring's span is left out of that ring; Add reports whether any ring took it. A t later than
// the newest bucket moves the rings forward, clearing what they drop.
func (s *Series) Add(t time.Time, tw *telemetry.TransportWindow) bool {
	sec := t.Unix()
	answered := tw.Sent - tw.Lost
	if answered < 0 {
		answered = 0
	}
	lat := float32(tw.LatencyMs * float64(answered))
	jit := float32(tw.JitterMs * float64(answered))
	maxLat := float32(tw.MaxMs)
	added := false
	for i := range tiers {
		tr := &tiers[i]
		e := epoch(sec, tr.step)
		head := s.heads[i]
		if e > head {
			s.advance(i, e)
		} else if head-e >= tr.n {
			continue // older than this ring holds
		}
		b := &s.buckets[tr.off+int(mod(e, tr.n))]
		b.windows = addSat(b.windows, 1)
		b.sent = addSat(b.sent, tw.Sent)
		b.lost = addSat(b.lost, tw.Lost)
		if tw.Down {
			b.down = addSat(b.down, 1)
		}
		b.latSum += lat
		b.jitSum += jit
		b.maxLat = max(b.maxLat, maxLat)
		added = true
	}
	return added
}

// advance makes e the newest epoch of ring i, clearing the buckets from the old head (exclusive)
// to e (inclusive), which now hold data a full ring old.
func (s *Series) advance(i int, e int64) {
	tr := &tiers[i]
	ring := s.buckets[tr.off : tr.off+int(tr.n)]
	if e-s.heads[i] >= tr.n {
		clear(ring)
	} else {
		for k := s.heads[i] + 1; k <= e; k++ {
			ring[mod(k, tr.n)] = bucket{}
		}
	}
	s.heads[i] = e
}

// Summary summarises the window (now-window, now] from the finest ring that holds every
// bucket overlapping it; windows longer than the coarsest ring's span get what it holds.
func (s *Series) Summary(now time.Time, window time.Duration) Stats {
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
	st := Stats{Resolution: time.Duration(tr.step) * time.Second, From: time.Unix(lo*tr.step, 0).UTC()}

	// Buckets past the head have no data yet; those a full ring behind it were cleared.
	head := s.heads[i]
	var windows, down, sent, lost uint64
	var latSum, jitSum float64
	var maxLat float32
	for k := max(lo, head-tr.n+1); k <= min(hi, head); k++ {
		b := &s.buckets[tr.off+int(mod(k, tr.n))]
		windows += uint64(b.windows)
		down += uint64(b.down)
		sent += uint64(b.sent)
		lost += uint64(min(b.lost, b.sent))
		latSum += float64(b.latSum)
		jitSum += float64(b.jitSum)
		maxLat = max(maxLat, b.maxLat)
	}
	st.Samples = int(windows)
	st.Sent, st.Lost = int64(sent), int64(lost)
	st.MaxLatencyMs = float64(maxLat)
	if sent > 0 {
		st.LossPct = 100 * float64(lost) / float64(sent)
	}
	if answered := sent - lost; answered > 0 {
		st.LatencyMs = latSum / float64(answered)
		st.JitterMs = jitSum / float64(answered)
	}
	if windows > 0 {
		st.DownPct = 100 * float64(down) / float64(windows)
	}
	return st
}

func mod(a, n int64) int64 {
	m := a % n
	if m < 0 {
		m += n
	}
	return m
}

// addSat adds v (clamped to >= 0) to a, saturating at the largest uint32.
func addSat(a uint32, v int) uint32 {
	if v <= 0 {
		return a
	}
	s := uint64(a) + uint64(v)
	if s > math.MaxUint32 {
		return math.MaxUint32
	}
	return uint32(s)
}

// ParseWindow parses a summary window such as "5m", "90s", "24h", "7d" or "1d12h": a Go
// duration, optionally preceded by a whole number of days ("d"), from MinWindow to MaxWindow.
func ParseWindow(s string) (time.Duration, error) {
	bad := func(why string) (time.Duration, error) {
		return 0, fmt.Errorf("rollup.ParseWindow: window %q %s; want a duration from 1m to 30d such as 5m, 24h or 7d", s, why)
	}
	var d time.Duration
	rest := s
	if i := strings.IndexByte(s, 'd'); i >= 0 {
		days, err := strconv.ParseUint(s[:i], 10, 16)
		if err != nil || i == 0 {
			return bad("is not a duration")
		}
		d = time.Duration(days) * 24 * time.Hour
		rest = s[i+1:]
		if days > 1000 {
			return bad("is too long")
		}
	}
	if rest != "" {
		r, err := time.ParseDuration(rest)
		if err != nil || strings.HasPrefix(rest, "-") || strings.HasPrefix(rest, "+") {
			return bad("is not a duration")
		}
		d += r
	}
	switch {
	case s == "":
		return bad("is empty")
	case d < MinWindow:
		return bad("is too short")
	case d > MaxWindow:
		return bad("is too long")
	}
	return d, nil
}
