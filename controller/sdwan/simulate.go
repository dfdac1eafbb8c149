package sdwan

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/edgewan/edgewan/controller/whatif"
	"github.com/edgewan/edgewan/coreapi/apierr"
	"github.com/edgewan/edgewan/coreapi/ids"
	"github.com/edgewan/edgewan/steering"
	"github.com/edgewan/edgewan/telemetry/rollup"
	"github.com/edgewan/edgewan/telemetry/sink"
)

// History is the stored telemetry a simulation replays: either time-series sink.
type History interface {
	Flush(ctx context.Context) error
	// Minutes appends a site's minute rollups of every transport in [from, to) to buf.
	Minutes(ctx context.Context, site string, from, to time.Time, buf []sink.Rollup) ([]sink.Rollup, error)
}

// rowBufs recycles the history buffers of replayed sites: a day of 3 transports is 4320 rows.
var rowBufs = sync.Pool{New: func() any { return new([]sink.Rollup) }}

// SimulationOptions configure policy simulation (Service.SetHistory).
type SimulationOptions struct {
	Steering   steering.Options // the live loop's; scaled to minutes (whatif.Scale)
	LiveWindow time.Duration    // the agents' window length the live options count in; default 1s
	MaxWindow  time.Duration    // the longest window, the retention of minute history; default 7 days
	Workers    int              // sites replayed at once; default GOMAXPROCS
	// Batch is how many sites' database rows (site, transports, assignments) are read at once,
	// in three queries; default 256.
	Batch int
	// Concurrent bounds the simulations running at once (each uses Workers goroutines); past
	// it a simulation is refused with 429. Default 2.
	Concurrent int
	// FlushTimeout bounds the wait for the telemetry store to take what the sink buffers
	// before the replay; past it (the store down or far behind) the simulation fails with a
	// 503 message rather than hold its slot until the client leaves. Default 10s.
	FlushTimeout time.Duration
}

// SimulateRequest is the body of POST /policies/{id}/versions/{v}/simulate.
type SimulateRequest struct {
	Window      string   `json:"window"`       // how far back, "1h" .. the retention; default 24h
	Sites       []string `json:"sites"`        // default: the sites running this policy
	Latency     string   `json:"latency"`      // mean (default) or p95
	ChangedOnly bool     `json:"changed_only"` // list only the sites where something changes
}

// Simulation is one run of a policy version over history: its parameters and totals. It is
// stored, so that a publish can require a recent one and its change record can link it.
type Simulation struct {
	ID         string        `json:"id"`
	Policy     string        `json:"policy"`
	Version    int           `json:"version"`
	Window     string        `json:"window"`
	From       time.Time     `json:"from"`
	To         time.Time     `json:"to"`
	Resolution SimResolution `json:"resolution"`
	Sites      int           `json:"sites"`
	// SiteIDs are the sites replayed, sorted: a publish that requires a simulation must
	// target only these.
	SiteIDs   []string           `json:"site_ids,omitempty"`
	Summary   *SimulationSummary `json:"summary,omitempty"` // at the end of the stream, and stored
	CreatedBy string             `json:"created_by"`
	CreatedAt time.Time          `json:"created_at"`
}

// SimResolution says how finely history was replayed, and what that cannot show.
type SimResolution struct {
	Step         string `json:"step"`          // 1m: the stored minute rollups
	Latency      string `json:"latency"`       // mean or p95
	BreachAfter  int    `json:"breach_after"`  // minutes (scaled from the live windows)
	RecoverAfter int    `json:"recover_after"` // minutes
	HoldDown     string `json:"hold_down"`     // as live
	Note         string `json:"note"`
}

// SimulationSummary totals a simulation.
type SimulationSummary struct {
	Sites        int               `json:"sites"`         // simulated
	SitesNoData  int               `json:"sites_no_data"` // with no history in the window
	SitesChanged int               `json:"sites_changed"` // where a class's outcome differs
	SitesFailed  int               `json:"sites_failed"`  // where the draft cannot run (e.g. a transport the site lacks)
	Classes      []SimClassTotals  `json:"classes"`
	Changes      []SimChangedClass `json:"changes"` // the sites and classes that change, first 1000
	Truncated    bool              `json:"changes_truncated"`
}

// SimClassTotals are one class's totals over every site, under each side.
type SimClassTotals struct {
	Class        string   `json:"class"`
	SitesChanged int      `json:"sites_changed"`
	Draft        SimTotal `json:"draft"`
	Published    SimTotal `json:"published"`
}

// SimTotal adds up outcomes.
type SimTotal struct {
	SLABreaches  int   `json:"sla_breaches"`
	SLAMissedS   int64 `json:"sla_missed_s"`
	PathSwitches int   `json:"path_switches"`
}

// SimChangedClass names a site and class whose outcome changes.
type SimChangedClass struct {
	Site  string `json:"site"`
	Class string `json:"class"`
}

// SimulationSite is one site's result, streamed.
type SimulationSite struct {
	Site      string            `json:"site"`
	Name      string            `json:"name"`
	Minutes   int               `json:"minutes"`   // minutes with history replayed
	Published *SimPolicyRef     `json:"published"` // the steering policy the site runs now; null: none (one class "default" by cost)
	Changed   bool              `json:"changed"`
	Error     string            `json:"error,omitempty"` // the draft cannot run on this site
	Classes   []SimulationClass `json:"classes"`
}

// SimPolicyRef names a policy version.
type SimPolicyRef struct {
	Policy  string `json:"policy"`
	Version int    `json:"version"`
}

// SimulationClass compares one class: null on a side that has no such class.
type SimulationClass struct {
	Class     string          `json:"class"`
	Changed   bool            `json:"changed"`
	Draft     *whatif.Outcome `json:"draft"`
	Published *whatif.Outcome `json:"published"`
}

const simNote = "History is replayed from 1-minute rollups through the live steering code: each minute is judged on its loss, mean jitter and latency statistic, and is Down if any window in it was. Thresholds are judged honestly at this resolution; hysteresis counted in seconds is not: window counts are scaled to minutes (breach_after, recover_after), so a breach shorter than a minute shows as one bad minute and a spike averaged away within a minute does not show. Both sides are replayed the same way, so their difference is what the draft changes."

// SetHistory lets the service simulate policies over h.
func (s *Service) SetHistory(h History, o SimulationOptions) {
	if o.LiveWindow <= 0 {
		o.LiveWindow = time.Second
	}
	if o.MaxWindow <= 0 {
		o.MaxWindow = sink.DefaultMinuteRetention
	}
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	if o.Steering == (steering.Options{}) {
		o.Steering = steering.DefaultOptions()
	}
	if o.Concurrent <= 0 {
		o.Concurrent = 2
	}
	if o.Batch <= 0 {
		o.Batch = 256
	}
	if o.FlushTimeout <= 0 {
		o.FlushTimeout = 10 * time.Second
	}
	s.history, s.simOpts, s.simSlots = h, o, make(chan struct{}, o.Concurrent)
}

// SimulationRun is a validated simulation, ready to stream.
type SimulationRun struct {
	s     *Service
	sim   *Simulation
	draft whatif.Policy
	sites []string
	opts  whatif.Options
	only  bool
	done  sync.Once // releases the run's slot
}

// Release frees the run's slot among the concurrent simulations; Stream does it when it ends,
// call it for a run that is not streamed. It may be called more than once.
func (r *SimulationRun) Release() { r.done.Do(func() { <-r.s.simSlots }) }

// Simulation returns the run's header (its ID, window and resolution).
func (r *SimulationRun) Simulation() *Simulation { return r.sim }

// Simulate checks a simulation request and returns the run, which Stream then replays; all
// request errors come from here, before anything is written.
func (s *Service) Simulate(ctx context.Context, policyID string, version int, req SimulateRequest, actor string) (*SimulationRun, error) {
	if s.history == nil {
		return nil, apierr.New(503, "unavailable", "policy simulation needs the telemetry history, which this controller has not opened")
	}
	if req.Window == "" {
		req.Window = "24h"
	}
	window, err := rollup.ParseWindow(req.Window)
	if err != nil || window%time.Minute != 0 {
		return nil, apierr.BadRequest("window %q: use a duration from 1m to %s such as 1h, 24h or 7d", req.Window, formatStep(s.simOpts.MaxWindow))
	}
	if window > s.simOpts.MaxWindow {
		return nil, apierr.BadRequest("window %q is longer than the minute history kept (%s)", req.Window, formatStep(s.simOpts.MaxWindow))
	}
	stat, err := whatif.ParseStatistic(req.Latency)
	if err != nil {
		return nil, apierr.BadRequest("%v", err)
	}
	p, err := s.store.GetPolicy(ctx, policyID)
	if err != nil {
		return nil, err
	}
	if p.Type != TypeSteering {
		return nil, apierr.Invalid("only steering policies can be simulated; %s is a %s policy", policyID, p.Type)
	}
	i := slices.IndexFunc(p.Versions, func(v *Version) bool { return v.Version == version })
	if i < 0 {
		return nil, apierr.NotFound("policy %s has no version %d", policyID, version)
	}
	var content SteeringContent
	if err := json.Unmarshal(p.Versions[i].Content, &content); err != nil {
		return nil, fmt.Errorf("sdwan: version %d of %s: %w", version, policyID, err)
	}
	sites := slices.Clone(req.Sites)
	if len(sites) == 0 {
		for _, r := range p.Rollout {
			sites = append(sites, r.SiteID)
		}
	}
	if len(sites) == 0 {
		return nil, apierr.Invalid("give the sites to simulate: this policy runs on no site yet")
	}
	if len(sites) > 10000 {
		return nil, apierr.BadRequest("at most 10000 sites per simulation")
	}
	for _, id := range sites {
		if !validSiteID(id) {
			return nil, apierr.BadRequest("site %q is not a site ID", id)
		}
	}
	slices.Sort(sites)
	sites = slices.Compact(sites)
	select {
	case s.simSlots <- struct{}{}:
	default:
		return nil, apierr.New(429, "rate_limited", "%d simulations are running already; retry when one ends", cap(s.simSlots))
	}
	now := s.now()
	to := now.Truncate(whatif.Step)
	opts := whatif.Options{Steering: s.simOpts.Steering, LiveWindow: s.simOpts.LiveWindow, Latency: stat}
	scaled := whatif.Scale(opts.Steering, opts.LiveWindow)
	sim := &Simulation{ID: ids.New("sim"), Policy: policyID, Version: version, Window: req.Window,
		From: to.Add(-window), To: to, Sites: len(sites), SiteIDs: sites, CreatedBy: actor, CreatedAt: now,
		Resolution: SimResolution{Step: "1m", Latency: string(stat), BreachAfter: scaled.BreachAfter,
			RecoverAfter: scaled.RecoverAfter, HoldDown: scaled.HoldDown.String(), Note: simNote}}
	return &SimulationRun{s: s, sim: sim, draft: steering.ClassesOf(&content), sites: sites, opts: opts, only: req.ChangedOnly}, nil
}

// Stream replays the run's sites and writes the answer to w as one JSON object:
// {"simulation": {...}, "sites": [...one per site, as they are done...], "summary": {...},
// "complete": true}. Sites are replayed Workers at a time and written in order, at most
// Workers x 4 ahead of the one written, so memory holds that window of results and Workers
// sites' history, never the fleet's. flush is called every Workers x 4 sites. The
// simulation is stored once complete; an error after the first byte ends the object with
// "complete": false and "error", and nothing is stored.
func (r *SimulationRun) Stream(ctx context.Context, w io.Writer, flush func()) error {
	defer r.Release()
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	head, _ := json.Marshal(r.sim)
	bw.WriteString(`{"simulation":`)
	bw.Write(head)
	bw.WriteString(`,"sites":[`)
	sum, err := r.replay(ctx, func(res *SimulationSite, first bool) error {
		if !first {
			bw.WriteByte(',')
		}
		return enc.Encode(res)
	}, func() error {
		if err := bw.Flush(); err != nil {
			return err
		}
		if flush != nil {
			flush()
		}
		return nil
	})
	if err == nil {
		r.sim.Summary = sum
		if err = r.s.store.InsertSimulation(ctx, r.sim); err != nil {
			err = fmt.Errorf("sdwan: storing simulation: %w", err)
		}
	}
	bw.WriteString(`],"summary":`)
	enc.Encode(sum)
	if err != nil {
		msg, _ := json.Marshal(apierr.From(err).Message)
		fmt.Fprintf(bw, `,"complete":false,"error":%s}`, msg)
	} else {
		bw.WriteString(`,"complete":true}`)
	}
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	if flush != nil {
		flush()
	}
	return err
}

// replay runs the sites on Workers goroutines and hands each result to emit in order, calling
// flush every Workers x 4 sites. At most Workers x 4 sites are replayed or waiting to be
// emitted at once (memory holds their results and Workers sites' history), and the workers
// never wait for the encoding of the answer or for each other: a slow site holds up the emitting
// only, until the window of sites ahead of it is full.
func (r *SimulationRun) replay(ctx context.Context, emit func(*SimulationSite, bool) error, flush func() error) (*SimulationSummary, error) {
	fctx, cancel := context.WithTimeout(ctx, r.s.simOpts.FlushTimeout)
	err := r.s.history.Flush(fctx)
	cancel()
	switch {
	case err == nil, errors.Is(err, sink.ErrRejected):
		// Points the store refused for good are lost to any reader (counted and logged by
		// the sink): the replay goes on without them.
	case ctx.Err() != nil:
		return nil, ctx.Err()
	default:
		return nil, apierr.New(503, apierr.CodeUnavailable, "the telemetry store has not taken the recent points within %s (%v); retry when it has caught up",
			r.s.simOpts.FlushTimeout, err)
	}
	sum := &SimulationSummary{Classes: []SimClassTotals{}, Changes: []SimChangedClass{}}
	workers := r.s.simOpts.Workers
	window := workers * 4
	type result struct {
		res *SimulationSite
		err error
	}
	ring := make([]chan result, window) // site i's result arrives in ring[i%window]
	for i := range ring {
		ring[i] = make(chan result, 1)
	}
	free := make(chan struct{}, window) // a token per site that may be dispatched
	for range window {
		free <- struct{}{}
	}
	ctx, cancel = context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	// The database rows of the sites, a batch at a time, read one batch ahead of the dispatch
	// so that the workers do not wait for them.
	type siteRows struct {
		sites map[string]*Site
		as    map[string][]*Assignment
		err   error
	}
	batches := make(chan siteRows, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(batches)
		for i := 0; i < len(r.sites); i += r.s.simOpts.Batch {
			ids := r.sites[i:min(i+r.s.simOpts.Batch, len(r.sites))]
			var b siteRows
			if b.sites, b.err = r.s.store.SitesByID(ctx, ids); b.err == nil {
				b.as, b.err = r.s.store.AssignmentsOf(ctx, ids)
			}
			select {
			case batches <- b:
			case <-ctx.Done():
				return
			}
			if b.err != nil {
				return
			}
		}
	}()
	next := make(chan siteJob)
	wg.Add(1)
	go func() { // dispatches site i once site i-window has been emitted, so ring[i%window] is empty
		defer wg.Done()
		defer close(next)
		var b siteRows
		for i, id := range r.sites {
			select {
			case <-free:
			case <-ctx.Done():
				return
			}
			if i%r.s.simOpts.Batch == 0 {
				var ok bool
				select {
				case b, ok = <-batches:
				case <-ctx.Done():
					return
				}
				if !ok { // the reader stopped: ctx is done
					return
				}
				if b.err != nil {
					ring[i%window] <- result{nil, b.err}
					return
				}
			}
			select {
			case next <- siteJob{i, b.sites[id], b.as[id]}:
			case <-ctx.Done():
				return
			}
		}
	}()
	for range min(workers, len(r.sites)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range next {
				res, err := r.site(ctx, r.sites[j.i], j.site, j.as)
				ring[j.i%window] <- result{res, err}
			}
		}()
	}
	first := true
	for i := range r.sites {
		var rr result
		select {
		case rr = <-ring[i%window]:
		case <-ctx.Done():
			return sum, ctx.Err()
		}
		free <- struct{}{}
		if rr.err != nil {
			return sum, rr.err
		}
		r.total(sum, rr.res)
		if !r.only || rr.res.Changed {
			if err := emit(rr.res, first); err != nil {
				return sum, err
			}
			first = false
		}
		if (i+1)%window == 0 || i == len(r.sites)-1 {
			if err := flush(); err != nil {
				return sum, err
			}
		}
	}
	return sum, nil
}

// siteJob is site i of a run with its database rows (site nil: there is no such site).
type siteJob struct {
	i    int
	site *Site
	as   []*Assignment
}

// site replays one site: its transports and current steering policy (read from the database
// by the batch), its minutes from the history.
func (r *SimulationRun) site(ctx context.Context, id string, site *Site, as []*Assignment) (*SimulationSite, error) {
	if site == nil {
		return &SimulationSite{Site: id, Error: "no such site", Classes: []SimulationClass{}}, nil
	}
	res := &SimulationSite{Site: id, Name: site.Name, Classes: []SimulationClass{}}
	for _, a := range as {
		if a.Type == TypeSteering {
			res.Published = &SimPolicyRef{Policy: a.PolicyID, Version: a.Version}
		}
	}
	names := make([]string, len(site.Transports))
	for i, t := range site.Transports {
		names[i] = t.Name
	}
	if len(names) == 0 {
		res.Error = "the site has no transports"
		return res, nil
	}
	buf := rowBufs.Get().(*[]sink.Rollup)
	defer rowBufs.Put(buf)
	rows, err := r.s.history.Minutes(ctx, id, r.sim.From, r.sim.To, (*buf)[:0])
	*buf = rows
	if err != nil {
		return nil, fmt.Errorf("sdwan: reading the history of %s: %w", id, err)
	}
	rp := whatif.NewSite(names, r.opts, r.draft, SteeringClasses(as, site.Transports))
	if err := rp.Err(0); err != nil {
		res.Error = "the draft cannot run on this site: " + strings.TrimPrefix(err.Error(), "steering.NewSite: ")
		return res, nil
	}
	rp.Run(rows)
	res.Minutes = rp.Minutes()
	draft, pub := rp.Outcomes(0), rp.Outcomes(1)
	dc, pc := rp.Classes(0), rp.Classes(1)
	for i, c := range dc {
		sc := SimulationClass{Class: c.Name, Draft: &draft[i]}
		if j := slices.IndexFunc(pc, func(p steering.Class) bool { return p.Name == c.Name }); j >= 0 {
			sc.Published = &pub[j]
		}
		sc.Changed = !sc.Draft.Same(sc.Published)
		res.Classes = append(res.Classes, sc)
	}
	for j, c := range pc {
		if !slices.ContainsFunc(dc, func(d steering.Class) bool { return d.Name == c.Name }) {
			res.Classes = append(res.Classes, SimulationClass{Class: c.Name, Changed: true, Published: &pub[j]})
		}
	}
	for _, c := range res.Classes {
		res.Changed = res.Changed || c.Changed
	}
	return res, nil
}

const maxChangesListed = 1000

func (r *SimulationRun) total(sum *SimulationSummary, res *SimulationSite) {
	sum.Sites++
	switch {
	case res.Error != "":
		sum.SitesFailed++
		return
	case res.Minutes == 0:
		sum.SitesNoData++
	}
	if res.Changed {
		sum.SitesChanged++
	}
	add := func(t *SimTotal, o *whatif.Outcome) {
		if o != nil {
			t.SLABreaches += o.SLABreaches
			t.SLAMissedS += o.SLAMissedS
			t.PathSwitches += o.PathSwitches
		}
	}
	for _, c := range res.Classes {
		i := slices.IndexFunc(sum.Classes, func(t SimClassTotals) bool { return t.Class == c.Class })
		if i < 0 {
			sum.Classes = append(sum.Classes, SimClassTotals{Class: c.Class})
			i = len(sum.Classes) - 1
		}
		t := &sum.Classes[i]
		add(&t.Draft, c.Draft)
		add(&t.Published, c.Published)
		if c.Changed {
			t.SitesChanged++
			if len(sum.Changes) < maxChangesListed {
				sum.Changes = append(sum.Changes, SimChangedClass{Site: res.Site, Class: c.Class})
			} else {
				sum.Truncated = true
			}
		}
	}
}

// SteeringClasses are the classes a site steers by: its steering policy's or, without one, a
// single class "default" with no SLA preferring the transports by cost (as the live loop).
func SteeringClasses(as []*Assignment, ts []*Transport) []steering.Class {
	for _, a := range as {
		if a.Type != TypeSteering {
			continue
		}
		var c SteeringContent
		if err := json.Unmarshal(a.Content, &c); err != nil {
			break
		}
		return steering.ClassesOf(&c)
	}
	byCost := slices.Clone(ts)
	slices.SortStableFunc(byCost, func(a, b *Transport) int { return a.Cost - b.Cost })
	pref := make([]string, len(byCost))
	for i, t := range byCost {
		pref[i] = t.Name
	}
	return []steering.Class{{Name: steering.DefaultClass, Preferred: pref}}
}

// LatestSimulation returns the newest stored simulation of a policy version.
func (s *Service) LatestSimulation(ctx context.Context, policyID string, version int) (*Simulation, error) {
	return s.store.LatestSimulation(ctx, policyID, version)
}

// GetSimulation returns a stored simulation of a policy.
func (s *Service) GetSimulation(ctx context.Context, policyID, id string) (*Simulation, error) {
	sim, err := s.store.GetSimulation(ctx, id)
	if err != nil {
		return nil, err
	}
	if sim.Policy != policyID {
		return nil, apierr.NotFound("policy %s has no simulation %s", policyID, id)
	}
	return sim, nil
}
