package backoff

import (
	"testing"
	"time"
)

// Full jitter: each wait within [0, min(cap, base*2^n)), spread over that range (not the same
// value every time, which would keep a fleet in lockstep), and back to the base after a reset.
func TestBackoff(t *testing.T) {
	b := Reconnect()
	for n := range 40 {
		limit := min(b.Cap, b.Base<<min(n, 16))
		seen := map[time.Duration]bool{}
		for range 20 {
			c := b
			d := c.Next()
			if d < 0 || d >= limit {
				t.Fatalf("attempt %d: wait %v outside [0, %v)", n, d, limit)
			}
			seen[d] = true
		}
		if len(seen) < 10 {
			t.Fatalf("attempt %d: only %d distinct waits in 20: no jitter", n, len(seen))
		}
		b.Next()
	}
	b.Reset()
	if d := b.Next(); d >= b.Base {
		t.Fatalf("after reset: wait %v, want < %v", d, b.Base)
	}
	if d := (&Backoff{}).Next(); d != 0 {
		t.Fatalf("zero Backoff: wait %v, want 0 (not a panic)", d)
	}
}
