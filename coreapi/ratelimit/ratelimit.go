// Package ratelimit is a per-token token-bucket limiter with the response headers clients use
// to pace themselves. One node keeps its buckets in memory.
package ratelimit

import (
	"math"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Response headers, documented in docs/api.md.
const (
	HeaderLimit     = "X-RateLimit-Limit"     // bucket size (burst)
	HeaderRemaining = "X-RateLimit-Remaining" // whole requests left in the bucket now
	HeaderReset     = "X-RateLimit-Reset"     // seconds until the bucket is full again
	HeaderRetry     = "Retry-After"           // on 429: seconds to wait before retrying
)

// Options configure a Limiter. A zero Rate disables limiting.
type Options struct {
	Rate  float64 // sustained requests per second per key
	Burst int     // bucket size; 0 means max(1, 2*Rate)
}

// Limiter hands out one bucket per key (a token ID, or "ip:ADDR" for unauthenticated callers).
type Limiter struct {
	o       Options
	mu      sync.Mutex
	buckets map[string]*bucket
	sweep   time.Time
}

type bucket struct {
	lim  *rate.Limiter
	seen time.Time
}

// New returns a Limiter.
func New(o Options) *Limiter {
	if o.Burst <= 0 {
		o.Burst = max(1, int(math.Ceil(2*o.Rate)))
	}
	return &Limiter{o: o, buckets: make(map[string]*bucket)}
}

// Enabled reports whether the limiter limits at all.
func (l *Limiter) Enabled() bool { return l != nil && l.o.Rate > 0 }

// Decision is the outcome of Allow, with what the headers should say.
type Decision struct {
	OK         bool
	Limit      int
	Remaining  int
	Reset      time.Duration // until the bucket is full
	RetryAfter time.Duration // when !OK: until one token is available
}

// Headers returns the rate-limit headers for d.
func (d Decision) Headers() map[string]string {
	h := map[string]string{
		HeaderLimit:     strconv.Itoa(d.Limit),
		HeaderRemaining: strconv.Itoa(d.Remaining),
		HeaderReset:     strconv.Itoa(int(math.Ceil(d.Reset.Seconds()))),
	}
	if !d.OK {
		h[HeaderRetry] = strconv.Itoa(max(1, int(math.Ceil(d.RetryAfter.Seconds()))))
	}
	return h
}

// Allow takes one token from key's bucket at now.
func (l *Limiter) Allow(key string, now time.Time) Decision {
	if !l.Enabled() {
		return Decision{OK: true}
	}
	l.mu.Lock()
	b := l.buckets[key]
	if b == nil {
		b = &bucket{lim: rate.NewLimiter(rate.Limit(l.o.Rate), l.o.Burst)}
		l.buckets[key] = b
	}
	b.seen = now
	l.evictIdle(now)
	l.mu.Unlock()

	d := Decision{Limit: l.o.Burst}
	r := b.lim.ReserveN(now, 1)
	if delay := r.DelayFrom(now); delay > 0 {
		r.CancelAt(now)
		d.RetryAfter = delay
	} else {
		d.OK = true
	}
	tokens := b.lim.TokensAt(now)
	d.Remaining = max(0, int(math.Floor(tokens)))
	d.Reset = time.Duration((float64(l.o.Burst) - tokens) / l.o.Rate * float64(time.Second))
	return d
}

// evictIdle drops buckets idle long enough to be full again, at most once a minute, so the
// map does not grow with every key or address ever seen. Called with l.mu held.
func (l *Limiter) evictIdle(now time.Time) {
	if now.Sub(l.sweep) < time.Minute {
		return
	}
	l.sweep = now
	full := time.Duration(float64(l.o.Burst)/l.o.Rate*float64(time.Second)) + time.Second
	for k, b := range l.buckets {
		if now.Sub(b.seen) > full {
			delete(l.buckets, k)
		}
	}
}
