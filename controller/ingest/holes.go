package ingest

import (
	"sync"
	"time"

	"github.com/edgewan/edgewan/telemetry"
)

// Controller-driven hole repair. The contiguous watermark stays below a sequence the broker
// acknowledged and lost (NATS 2.9 while EDGEWAN_IN elects a leader; Mosquitto dropping QoS 0
// for a reconnecting controller; the embedded broker's restart), and the agent used to find
// that out by itself only after holeAfter (15 s) of a stalled watermark. The engine knows
// better and sooner: it holds sequences above the hole. When a site's lowest hole stays open
// past the reorder grace (Options.HoleGrace), its owner asks the agent for exactly that range
// (telemetry.Stored.Hole, live, not retained), again after 2, 4, ... up to 30 grace-periods
// while it stays open, or one grace after the last request when newer reports came since (the
// answer was lost: NATS's stream had no leader yet); a hole filled makes the next checkpoint
// come within a second, so the agent deletes the records soon after.
//
// Why a grace of 1 s: a site's messages reach the engine in the order the agent sent them on
// one connection (the broker keeps a connection's order, the NATS stream and its partition
// consumer keep the stream's, the engine takes a site's messages one at a time). Reordering
// comes from elsewhere: an agent moving to another connection (a reconnect, or its standby on
// NATS) sends again what is uncovered while copies may still be in flight on the old one,
// which arrive within milliseconds or never; and a takeover, after which the new owner's
// consumer delivers the unacknowledged messages again, in order, within the ack wait (5 s;
// no request is made until takeoverQuiet has passed). A second is far beyond the first and
// far below NATS's election (4-9 s) and holeAfter; a request made too early costs only
// duplicates that the sequence window drops.

// DefaultHoleGrace is Options.HoleGrace's default.
const DefaultHoleGrace = time.Second

const (
	holeRepeatMax = 30 * time.Second
	// takeoverQuiet: after a takeover, no hole is asked for this long: the partition's new
	// consumer is delivering what the previous owner had not acknowledged (ack wait 5 s).
	takeoverQuiet = 5 * time.Second
)

// holeState is a site's open hole, as the engine tracks it (under the site's mutex). Times are
// UnixNano of Options.Now: 48 bytes a site rather than 112 with time.Time.
type holeState struct {
	from  uint64 // its lower bound (the contiguous mark + 1); 0: no hole tracked
	top   uint64 // the newest sequence taken when it was last asked for
	seen  int64  // when a hole with this lower bound was first seen
	asked int64  // when it was last asked for
	next  int64  // when it may be asked for again, with nothing newer taken since
	quiet int64  // no request before this (a takeover)
	asks  int32  // requests made for it
}

// holes is the set of sites with an open hole, so that the check looks at those only.
type holes struct {
	mu    sync.Mutex
	sites map[*site]struct{}
}

func (h *holes) add(st *site) {
	h.mu.Lock()
	if h.sites == nil {
		h.sites = map[*site]struct{}{}
	}
	h.sites[st] = struct{}{}
	h.mu.Unlock()
}

func (h *holes) list() []*site {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]*site, 0, len(h.sites))
	for st := range h.sites {
		out = append(out, st)
	}
	return out
}

func (h *holes) remove(st *site) {
	h.mu.Lock()
	delete(h.sites, st)
	h.mu.Unlock()
}

// noteHole starts tracking st's hole if it has one and none is tracked (called with st.mu held,
// after a sequence was taken or given back): the hot path pays two comparisons.
func (e *Engine) noteHole(st *site, now time.Time) {
	if e.o.HoleGrace < 0 || st.hole.from != 0 || st.win.newest <= st.win.mark {
		return
	}
	st.hole.open(st.win.mark+1, now.UnixNano(), e.o.HoleGrace)
	e.holes.add(st)
}

// open starts the grace of a new lowest hole at from, seen at n (UnixNano).
func (h *holeState) open(from uint64, n int64, grace time.Duration) {
	h.from, h.seen, h.asks, h.next = from, n, 0, n+int64(grace)
}

// untrackHole forgets st's hole, keeping its takeover quiet time (called with st.mu held:
// noteHole adds under it too).
func (e *Engine) untrackHole(st *site) {
	st.hole = holeState{quiet: st.hole.quiet}
	e.holes.remove(st)
}

// askHoles asks the agents of the sites whose hole outlasted the grace to send it again, and
// reports whether a hole that was asked for has closed (then a checkpoint should come soon,
// so that the agent hears the watermark over it).
func (e *Engine) askHoles(now time.Time) (filled bool) {
	n := now.UnixNano()
	for _, st := range e.holes.list() {
		gone := e.site(st.id) != st // decommissioned or reloaded
		st.mu.Lock()
		from, to, open := st.win.hole()
		if !open || gone {
			filled = filled || st.hole.asks > 0
			e.untrackHole(st)
			st.mu.Unlock()
			continue
		}
		if from != st.hole.from { // the old one filled, or moved: a new hole, a new grace
			filled = filled || st.hole.asks > 0
			st.hole.open(from, n, e.o.HoleGrace)
		}
		// Asked again sooner when newer reports came since the last request but the hole did
		// not fill: the path works again, and the agent's answer was lost on it before (sent
		// while NATS's stream had no leader, say), so backing off further would only wait.
		again := st.hole.asks > 0 && st.win.newest > st.hole.top && n >= st.hole.asked+int64(e.o.HoleGrace)
		if e.o.Owner != nil && !e.o.Owner.Owns(st.id) { // its new owner's to ask; tracked again if it comes back
			e.untrackHole(st)
			st.mu.Unlock()
			continue
		}
		if (n < st.hole.next && !again) || n < st.hole.quiet {
			st.mu.Unlock()
			continue
		}
		st.hole.asks++
		st.hole.asked, st.hole.top = n, st.win.newest
		st.hole.next = n + int64(min(e.o.HoleGrace<<min(st.hole.asks, 10), holeRepeatMax)) // 2, 4, 8 ... grace
		device, seq, asks, age := st.device, st.stored, st.hole.asks, time.Duration(n-st.hole.seen)
		st.mu.Unlock()
		e.askHole(st.id, device, seq, from, to)
		e.m.holeAsks.Inc()
		if asks == 1 {
			e.o.Logger.Info("ingest: sequences missing below newer ones; asking the agent to send them again",
				"site", st.id, "device", device, "from", from, "to", to, "open_for", age)
		}
	}
	return filled
}

// askHole publishes a resend request for from..to to the site's agent: its watermark (seq,
// the one already published) with Hole set, live and not retained (an agent connecting later
// is sent everything uncovered anyway, and a retained request would outlive its hole).
func (e *Engine) askHole(siteID, device string, seq, from, to uint64) {
	b, err := e.storedMessage(siteID, device, seq, &telemetry.SeqRange{From: from, To: to})
	topic := telemetry.Topic(siteID, telemetry.KindStored)
	if err == nil {
		if lb, live := e.bus.(liveBus); live {
			err = lb.PublishLive(topic, b)
		} else {
			err = e.bus.Publish(topic, b, false)
		}
	}
	if err != nil {
		e.o.Logger.Warn("ingest: asking an agent for missing sequences", "site", siteID, "err", err)
	}
}

// holeTick is how often Run looks at the open holes: a quarter of the grace (10-250 ms), so a
// request goes out at most a quarter grace late.
func (e *Engine) holeTick() time.Duration {
	return min(max(e.o.HoleGrace/4, 10*time.Millisecond), 250*time.Millisecond)
}
