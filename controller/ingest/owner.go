package ingest

import (
	"context"
	"errors"
	"time"

	"github.com/edgewan/edgewan/controller/sdwan"
)

// owns reports whether this engine may act for st now. When a site becomes this engine's
// (another controller died or handed it over), its last-seen time restarts now, so that the
// liveness check gives its agent a full OfflineAfter to report here before calling it offline,
// and what the previous owner changed meanwhile is taken over (stored, see stored).
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
	status, mark, device := e.stored(st.id)
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.owned { // another goroutine took it over meanwhile
		return true
	}
	now := e.o.Now()
	if st.lastSeen.Before(now) {
		st.lastSeen = now
	}
	if status != "" {
		st.status = status
	}
	// The paths the agent is on may have changed under the previous owner: decide nothing
	// until the agent's last status says which they are (the NATS bus replays it when it
	// starts a partition), or SyncWithin. Deciding from what this engine knew announced the
	// previous owner's path switches a second time, at every takeover.
	st.synced, st.syncBy = false, now.Add(e.o.SyncWithin)
	st.fenced = false
	st.resyncTill = now.Add(time.Minute) // what the agent no longer holds, the previous owner stored (takeSeq)
	// The previous owner's watermark: what it stored is not waited for here (it will not
	// come: the agent deletes what a watermark covers), or this engine's contiguous mark stays
	// below it and it publishes no watermark at all, while an agent that did not hear the
	// previous owner's has nothing to skip. The next checkpoint publishes it.
	if device == st.device && mark > st.win.mark {
		st.win.skipTo(mark + 1)
		if st.busy == 0 {
			st.safe = st.win.mark
		}
	}
	st.owned = true
	return true
}

// stored returns the status the database holds for a site ("" if it cannot be read), with its
// watermark (StoredSeq) and device: a site
// taken over from another controller has what the previous owner last stored, and the one
// this engine loaded may be long past (a device was announced online again by each new owner).
func (e *Engine) stored(id string) (status string, mark uint64, device string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := e.store.GetSite(ctx, id)
	if err != nil || s == nil {
		e.o.Logger.Warn("ingest: reading a site taken over; keeping what was loaded", "site", id, "err", err)
		return "", 0, ""
	}
	if s.Status == sdwan.SiteDecommissioned {
		return "", 0, ""
	}
	return s.Status, s.StoredSeq, s.DeviceID
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
