package ingest

import (
	"context"
	"time"
)

// owns reports whether this engine may act for st now. When a site becomes this engine's
// (another controller died or handed it over), its last-seen time restarts now, so that the
// liveness check gives its agent a full OfflineAfter to report here before calling it offline.
func (e *Engine) owns(st *site) bool {
	if e.o.Owner == nil {
		return true
	}
	own := e.o.Owner.Owns(st.id)
	st.mu.Lock()
	if own && !st.owned {
		if now := e.o.Now(); st.lastSeen.Before(now) {
			st.lastSeen = now
		}
		st.resyncTill = e.o.Now().Add(time.Minute) // what the agent no longer holds, the previous owner stored (takeSeq)
	}
	st.owned = own
	st.mu.Unlock()
	return own
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
