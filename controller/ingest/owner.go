package ingest

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/edgewan/edgewan/controller/sdwan"
)

// owns reports whether this engine may act for st now. When a site becomes this engine's
// (another controller died or handed it over) and SitesTaken has not taken it over yet, its
// stored state is read here (takeOver).
func (e *Engine) owns(st *site) bool {
	if e.o.Owner == nil {
		return true
	}
	own := e.o.Owner.Owns(st.id)
	st.mu.Lock()
	taken := own && !st.owned
	if !own {
		st.owned = false
	}
	st.mu.Unlock()
	if !taken {
		return own
	}
	// Read before the site counts as owned: a report handled meanwhile (on another goroutine)
	// would otherwise have its status overwritten by the older stored one.
	e.takeOver(st, e.stored(st.id))
	return true
}

// storedSite is what a takeover needs of a site's row: a site taken over from another
// controller has what the previous owner last stored, and the one this engine loaded may be
// long past (a device was announced online again by each new owner).
type storedSite struct {
	ok     bool // read; else what was loaded is kept
	status string
	mark   uint64 // the watermark (StoredSeq)
	device string
}

func storedOf(s *sdwan.Site) storedSite {
	if s == nil || s.Status == sdwan.SiteDecommissioned {
		return storedSite{}
	}
	return storedSite{ok: true, status: s.Status, mark: s.StoredSeq, device: s.DeviceID}
}

// stored reads one site's stored state.
func (e *Engine) stored(id string) storedSite {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := e.store.GetSite(ctx, id)
	if err != nil || s == nil {
		e.o.Logger.Warn("ingest: reading a site taken over; keeping what was loaded", "site", id, "err", err)
		return storedSite{}
	}
	return storedOf(s)
}

// takeOver makes st this engine's from what the previous owner stored, unless it is already,
// and publishes its watermark at once: the agent learns that this controller (a new boot)
// holds its site, and sends again what the previous owner had not stored, without waiting
// for the next checkpoint (FlushEvery). The liveness clock restarts now, so that the agent
// gets a full OfflineAfter to report here before it is called offline.
func (e *Engine) takeOver(st *site, s storedSite) {
	st.mu.Lock()
	if st.owned { // another goroutine took it over meanwhile
		st.mu.Unlock()
		return
	}
	now := e.o.Now()
	if st.lastSeen.Before(now) {
		st.lastSeen = now
	}
	if s.status != "" {
		st.status = s.status
	}
	// The paths the agent is on may have changed under the previous owner: decide nothing
	// until the agent's last status says which they are (the NATS bus replays it when it
	// starts a partition), or SyncWithin. Deciding from what this engine knew announced the
	// previous owner's path switches a second time, at every takeover.
	st.synced, st.syncBy = false, now.Add(e.o.SyncWithin)
	st.fenced = false
	st.resyncTill = now.Add(time.Minute)              // what the agent no longer holds, the previous owner stored (takeSeq)
	st.hole.quiet = now.Add(takeoverQuiet).UnixNano() // the new consumer redelivers first (holes.go)
	// The previous owner's watermark: what it stored is not waited for here (it will not
	// come: the agent deletes what a watermark covers), or this engine's contiguous mark stays
	// below it and it publishes no watermark at all, while an agent that did not hear the
	// previous owner's has nothing to skip. It is stored already: it goes out now.
	if s.device == st.device && s.mark > st.win.mark {
		st.win.skipTo(s.mark + 1)
		if st.busy == 0 {
			st.safe = st.win.mark
		}
	}
	if s.device == st.device {
		st.stored = max(st.stored, s.mark)
	}
	st.owned = true
	device, mark := st.device, st.stored
	st.mu.Unlock()
	e.m.takeovers.Inc()
	if s.ok {
		e.publishStored(st.id, device, mark)
	}
}

// takeOverBatch is the size of one read of the sites taken over (SitesByID's own batch).
const takeOverBatch = 256

// sitesByID is the batch read of the store (controller/store has it); without it each site
// is read with GetSite.
type sitesByID interface {
	SitesByID(ctx context.Context, ids []string) (map[string]*sdwan.Site, error)
}

// SitesTaken tells the engine that the sites for which in reports true have just become its
// own (a partition's lease, controller/cluster). It does not block: Run's takeover goroutine
// reads their stored state, takeOverBatch sites per query, and takes them over (takeOver),
// so that a takeover costs a few queries rather than one per site at its next message; each
// site's watermark goes out at once, and the next checkpoint comes within a second.
func (e *Engine) SitesTaken(in func(siteID string) bool) {
	e.takeMu.Lock()
	e.taking = append(e.taking, in)
	e.takeMu.Unlock()
	select {
	case e.takeWake <- struct{}{}:
	default:
	}
}

// takeOvers runs the takeovers SitesTaken asks for until ctx ends.
func (e *Engine) takeOvers(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	for {
		select {
		case <-ctx.Done():
			return
		case <-e.takeWake:
		}
		e.takeMu.Lock()
		ins := e.taking
		e.taking = nil
		e.takeMu.Unlock()
		e.takeOverSites(ctx, func(id string) bool {
			return slices.ContainsFunc(ins, func(in func(string) bool) bool { return in(id) })
		})
	}
}

// takeOverSites takes over the sites of in that this engine owns and has not taken over yet,
// and publishes the policies of those it owns whose policy it has not published yet.
func (e *Engine) takeOverSites(ctx context.Context, in func(string) bool) {
	if e.o.Owner == nil {
		return
	}
	e.mu.RLock()
	var ids []string
	for id := range e.sites {
		// Those taken over already (owns, at a message) too: their policies are published here.
		if in(id) && e.o.Owner.Owns(id) {
			ids = append(ids, id)
		}
	}
	e.mu.RUnlock()
	if len(ids) == 0 {
		return
	}
	defer func() {
		select {
		case e.took <- struct{}{}:
		default:
		}
	}()
	slices.Sort(ids)
	batch, _ := e.store.(sitesByID)
	for chunk := range slices.Chunk(ids, takeOverBatch) {
		var rows map[string]*sdwan.Site
		if batch != nil {
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			var err error
			rows, err = batch.SitesByID(rctx, chunk)
			cancel()
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				// Each site is read at its next message instead (owns).
				e.o.Logger.Warn("ingest: reading the sites taken over", "sites", len(chunk), "err", err)
				continue
			}
		}
		owned := make([]string, 0, len(chunk))
		for _, id := range chunk {
			st := e.site(id)
			if st == nil || !e.o.Owner.Owns(id) {
				continue
			}
			if rows != nil {
				e.takeOver(st, storedOf(rows[id]))
			} else {
				e.owns(st)
			}
			st.mu.Lock()
			if !st.policyOut {
				st.policyOut = true
				owned = append(owned, id)
			}
			st.mu.Unlock()
		}
		// Their policies, retained, once per start of this engine: only an owner publishes
		// them (publishAll does not, with an Owner), so that N controllers do not each publish
		// the whole fleet's; what changed while this engine was down, or before this version,
		// reaches the agents.
		if len(owned) > 0 {
			e.publishPolicies(ctx, owned, rows)
		}
	}
}

// adopt loads a site this engine does not follow yet, with several controllers: it was
// claimed or changed through another controller's API. Without an Owner it does nothing
// (the one controller follows every site already).
func (e *Engine) adopt(siteID string) *site {
	if e.o.Owner == nil || !e.o.Owner.Owns(siteID) {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := e.store.GetSite(ctx, siteID)
	if err != nil {
		return nil
	}
	e.load(ctx, s, true) // a site that cannot be loaded is quarantined, and followed
	return e.site(siteID)
}

// fencedSites returns the sites a store write refused because another controller holds their
// lease now (controller/store's FencedError), or nil.
func fencedSites(err error) []string {
	var f interface{ FencedSites() []string }
	if errors.As(err, &f) {
		return f.FencedSites()
	}
	return nil
}

// fenced reports whether err is a fenced write, and logs it once per site until this engine
// owns the site again. A fenced write is not retried: the controller that refused it dropped
// the lease (controller/cluster), so this engine stops acting for the site at its next
// ownership check, and the site's new owner writes for it.
func (e *Engine) fenced(err error, what string) bool {
	sites := fencedSites(err)
	if sites == nil {
		return false
	}
	for _, id := range sites {
		first := true
		if st := e.site(id); st != nil {
			st.mu.Lock()
			first, st.fenced = !st.fenced, true
			st.owned = false
			st.mu.Unlock()
		}
		if first {
			e.o.Logger.Warn("ingest: another controller holds this site's lease now; not writing for it until it is owned here again",
				"site", id, "write", what, "err", err)
		}
	}
	e.m.fenced.WithLabelValues(what).Inc()
	return true
}
