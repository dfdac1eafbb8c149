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
// every ReconnectCap. Once a fleet of N is at the cap its waits average ReconnectCap/2, so it
// offers about 2N/ReconnectCap attempts a second, evenly spread; when the broker is back, the
// wait each agent is in has a residual with density (1 - x/cap)/(cap/2): reconnects start at
// 2N/cap a second and fall linearly to 0 after cap, median cap*(1-1/sqrt 2) (2.3 s at 8 s),
// p95 cap*(1-sqrt 0.05) (6.2 s). 10,000 agents: about 2,500 a second at first.
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
