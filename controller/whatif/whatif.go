// Package whatif replays stored telemetry through the steering code that runs live, under a
// draft policy and under the policy in force, and counts per class what each would have done:
// the SD-WAN policy simulation behind POST /sd-wan/v1/policies/{id}/versions/{v}/simulate.
package whatif

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/edgewan/edgewan/steering"
	"github.com/edgewan/edgewan/telemetry/sink"
)

// Statistic is the latency figure a replayed minute is judged on.
type Statistic string

// The latency statistics: the minute's mean latency (what the live loop judges each window
// on, averaged), or the mean of its windows' p95 (stricter: counts a minute whose windows had
// slow tails as bad).
const (
	Mean Statistic = "mean"
	P95  Statistic = "p95"
)

// Step is the resolution of the replay: the stored 1-minute rollups, which both sinks keep.
const Step = time.Minute

// MaxSwitchesListed bounds the switches listed per class and side (all are counted).
const MaxSwitchesListed = 20

// Options says how history is replayed.
type Options struct {
	// Steering are the options of the live loop; Scale turns them into the replay's.
	Steering steering.Options
	// LiveWindow is the length of the agents' windows the live options count in (1 s).
	LiveWindow time.Duration
	Latency    Statistic
}

// Scale turns the live loop's options, which count windows of LiveWindow, into options for
// replaying minutes: BreachAfter and RecoverAfter become the minutes that hold as many windows
// (at least 1), so 3 bad seconds breach in the minute they fall in, and 10 good ones recover
// in the next; HoldDown, damping, the Degraded thresholds and the score margin are times and
// figures, kept as they are. Hysteresis finer than a minute (a breach and its recovery within
// one minute, say) cannot be seen in minute rollups: the replay shows it as one bad minute.
func Scale(live steering.Options, liveWindow time.Duration) steering.Options {
	if liveWindow <= 0 {
		liveWindow = time.Second
	}
	o := live
	perStep := float64(Step) / float64(liveWindow)
	o.BreachAfter = max(1, int(math.Ceil(float64(live.BreachAfter)/perStep)))
	o.RecoverAfter = max(1, int(math.Ceil(float64(live.RecoverAfter)/perStep)))
	return o
}

// Switch is one path switch of a class.
type Switch struct {
	At     time.Time `json:"at"`
	From   string    `json:"from"`
	To     string    `json:"to"`
	Reason string    `json:"reason"`
}

// Outcome is what one policy did to one class of one site over the replay.
type Outcome struct {
	SLABreaches  int              `json:"sla_breaches"`   // sla.breach decisions
	SLAMissedS   int64            `json:"sla_missed_s"`   // seconds with the SLA not met on the path
	PathSwitches int              `json:"path_switches"`  // path.switched decisions
	TimeOnPathS  map[string]int64 `json:"time_on_path_s"` // seconds on each transport
	Switches     []Switch         `json:"switches"`       // the first MaxSwitchesListed
	FinalPath    string           `json:"final_path"`     // the path at the end
}

// Same reports whether two outcomes count the same breaches, switches and times.
func (o *Outcome) Same(p *Outcome) bool {
	if o == nil || p == nil {
		return o == p
	}
	if o.SLABreaches != p.SLABreaches || o.SLAMissedS != p.SLAMissedS || o.PathSwitches != p.PathSwitches || len(o.TimeOnPathS) != len(p.TimeOnPathS) {
		return false
	}
	for k, v := range o.TimeOnPathS {
		if p.TimeOnPathS[k] != v {
			return false
		}
	}
	return true
}

// Policy is one side of the comparison for a site: its steering classes, or nil for none.
type Policy []steering.Class

// Site replays one site's history. It keeps the steering state of each policy; Run feeds it.
type Site struct {
	transports []string
	o          Options
	sides      []side
	scratch    []steering.Decision
	minutes    int
}

// runScratch is Run's ordering of rows: their times in unix seconds (ordering without
// time.Time) and the order.
type runScratch struct {
	unix  []int64
	order []int32
}

var runScratches = sync.Pool{New: func() any { return new(runScratch) }}

type side struct {
	site     *steering.Site
	classes  []steering.Class
	outcomes []Outcome
	onPath   []int64 // seconds per (class, transport)
	err      error
}

// NewSite prepares a replay of a site with these transports under each policy (a nil policy
// is skipped: its outcomes stay nil). A policy the site cannot run (a preferred transport it
// lacks) gets an error, reported by Err, and no outcomes.
func NewSite(transports []string, o Options, policies ...Policy) *Site {
	s := &Site{transports: transports, o: o, sides: make([]side, len(policies))}
	opts := Scale(o.Steering, o.LiveWindow)
	for i, p := range policies {
		if p == nil {
			continue
		}
		st, err := steering.NewSite(transports, p, opts)
		if err != nil {
			s.sides[i].err = err
			continue
		}
		out := make([]Outcome, len(p))
		for c := range out {
			out[c].TimeOnPathS = map[string]int64{}
		}
		s.sides[i] = side{site: st, classes: p, outcomes: out}
	}
	return s
}

// Err is the error of policy i on this site, if it cannot run there.
func (s *Site) Err(i int) error { return s.sides[i].err }

// Outcomes are policy i's outcomes per class, in the policy's order (nil if it did not run).
func (s *Site) Outcomes(i int) []Outcome { return s.sides[i].outcomes }

// Classes are policy i's classes.
func (s *Site) Classes(i int) []steering.Class { return s.sides[i].classes }

// Minutes is how many minutes with data were replayed.
func (s *Site) Minutes() int { return s.minutes }

// Metrics is how a minute is judged: Down if any of its windows was (the live loop would
// have failed over at once), loss over the whole minute, mean jitter, and the latency
// statistic chosen.
func Metrics(r *sink.Rollup, stat Statistic) steering.Metrics {
	m := steering.Metrics{LatencyMs: r.LatencyMs, LossPct: r.LossPct, JitterMs: r.JitterMs, Down: r.DownWindows > 0}
	if stat == P95 {
		m.LatencyMs = r.P95Ms
	}
	return m
}

// Run replays rows, one site's minute rollups of every transport, in any order: by time (as
// generated) or by transport then time (as the sinks return them) cost no sort. Each minute is
// observed at its end, then every policy evaluates once; the path each class has then counts
// for the minute.
func (s *Site) Run(rows []sink.Rollup) {
	// The ordering's scratch (12 bytes a row, 52 KB a site-day) is shared by the sites a
	// simulation replays one after another, not made per site.
	sc := runScratches.Get().(*runScratch)
	defer runScratches.Put(sc)
	unix, order := sc.unix[:0], sc.order[:0]
	for i := range rows {
		unix = append(unix, rows[i].Time.Unix())
	}
	order = timeOrder(unix, order)
	sc.unix, sc.order = unix, order
	step := int64(Step / time.Second)
	for k := range s.sides {
		sd := &s.sides[k]
		if sd.site != nil && len(sd.onPath) == 0 {
			sd.onPath = make([]int64, len(sd.classes)*len(s.transports))
		}
	}
	for i := 0; i < len(order); {
		at, sec := rows[order[i]].Time, unix[order[i]]
		j := i
		for j < len(order) && unix[order[j]] == sec {
			j++
		}
		now := at.Add(Step)
		s.minutes++
		for k := range s.sides {
			sd := &s.sides[k]
			if sd.site == nil {
				continue
			}
			for _, r := range order[i:j] {
				sd.site.Observe(now, rows[r].Transport, Metrics(&rows[r], s.o.Latency))
			}
			s.scratch = sd.site.Evaluate(now, s.scratch[:0])
			for _, d := range s.scratch {
				if d.Kind != steering.SLABreach && d.Kind != steering.PathSwitched {
					continue
				}
				c := slices.IndexFunc(sd.classes, func(c steering.Class) bool { return c.Name == d.Class })
				if c < 0 {
					continue
				}
				oc := &sd.outcomes[c]
				if d.Kind == steering.SLABreach {
					oc.SLABreaches++
					continue
				}
				oc.PathSwitches++
				if len(oc.Switches) < MaxSwitchesListed {
					oc.Switches = append(oc.Switches, Switch{At: now.UTC(), From: d.From, To: d.To, Reason: string(d.Reason)})
				}
			}
			T := len(s.transports)
			for c := range sd.classes {
				name := sd.classes[c].Name
				path := sd.site.Path(name)
				if t := s.transportIndex(path); t >= 0 {
					sd.onPath[c*T+t] += step
				}
				if !sd.site.SLAMet(name) {
					sd.outcomes[c].SLAMissedS += step
				}
			}
		}
		i = j
	}
	for k := range s.sides {
		sd := &s.sides[k]
		T := len(s.transports)
		for c := range sd.outcomes {
			oc := &sd.outcomes[c]
			for t, name := range s.transports {
				if v := sd.onPath[c*T+t]; v > 0 {
					oc.TimeOnPathS[name] = v
				}
			}
			oc.FinalPath = sd.site.Path(sd.classes[c].Name)
			if oc.Switches == nil {
				oc.Switches = []Switch{}
			}
		}
	}
}

func (s *Site) transportIndex(name string) int {
	for i, t := range s.transports {
		if t == name {
			return i
		}
	}
	return -1
}

// timeOrder appends to order the indices of rows (given by their times) by time, ties in row
// order: at once when rows are in time order, by merging when they are in (transport, time)
// order, else sorted.
func timeOrder(times []int64, order []int32) []int32 {
	byTime, blocks := true, 1
	for i := 1; i < len(times); i++ {
		if times[i] < times[i-1] {
			byTime = false
			blocks++
		}
	}
	if byTime {
		for i := range times {
			order = append(order, int32(i))
		}
		return order
	}
	if blocks <= 64 { // runs of ascending time, one per transport: merge them
		var starts, ends [64]int
		b := 0
		for i := range times {
			if i > 0 && times[i] < times[i-1] {
				ends[b] = i
				b++
				starts[b] = i
			}
		}
		ends[b] = len(times)
		for {
			best := -1
			for k := 0; k < blocks; k++ {
				if starts[k] < ends[k] && (best < 0 || times[starts[k]] < times[starts[best]]) {
					best = k
				}
			}
			if best < 0 {
				return order
			}
			order = append(order, int32(starts[best]))
			starts[best]++
		}
	}
	for i := range times {
		order = append(order, int32(i))
	}
	slices.SortStableFunc(order, func(a, b int32) int { return cmp.Compare(times[a], times[b]) })
	return order
}

// ParseStatistic reads a latency statistic; "" is Mean.
func ParseStatistic(v string) (Statistic, error) {
	switch Statistic(v) {
	case "", Mean:
		return Mean, nil
	case P95:
		return P95, nil
	}
	return "", fmt.Errorf("latency %q: want mean or p95", v)
}
