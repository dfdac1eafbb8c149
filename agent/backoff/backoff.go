// Package backoff is full-jitter exponential backoff: the agent's schedule for reconnecting to
// its broker, shared with scripts/loadgen so that a simulated fleet reconnects exactly as agents do.
package backoff

import (
	"math/rand/v2"
	"time"
)

// Agent reconnect schedule. paho's own backoff has no jitter (1 s doubling to its maximum, 30 s
// in the agent before): every agent of a restarted controller retried in lockstep, and one that
// just missed the controller's return waited up to 30 s. With a low cap an agent retries at least
// every ReconnectCap, so it is back within ReconnectCap/2 of the broker's return on median, while
// a fleet spreads its attempts evenly over the cap (10,000 agents: about 10,000/ReconnectCap
// connections a second once every agent is at the cap).
const (
	ReconnectBase = 500 * time.Millisecond
	ReconnectCap  = 8 * time.Second
)

// Backoff is full-jitter exponential backoff: the n-th wait since the last Reset is uniform in
// [0, min(Cap, Base*2^n)). The zero value is not useful; use Reconnect or set Base and Cap.
// A Backoff belongs to one goroutine.
type Backoff struct {
	Base, Cap time.Duration
	n         int
}

// Reconnect is the agent's broker reconnect schedule.
func Reconnect() Backoff { return Backoff{Base: ReconnectBase, Cap: ReconnectCap} }

// Next returns the next wait and advances the exponent.
func (b *Backoff) Next() time.Duration {
	d := b.Cap
	if b.n < 16 && b.Base<<b.n < b.Cap {
		d = b.Base << b.n
	}
	b.n++
	if d <= 0 {
		return 0
	}
	return rand.N(d)
}

// Reset starts the schedule again from Base (after a successful connection).
func (b *Backoff) Reset() { b.n = 0 }
