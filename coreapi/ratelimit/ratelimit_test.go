package ratelimit

import (
	"fmt"
	"reflect"
	"testing"
	"time"
)

var t0 = time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)

// step is one Allow call at t0+at and what its decision must be.
type step struct {
	key           string
	at            time.Duration
	wantOK        bool
	wantRemaining int
	wantRetry     time.Duration // when !wantOK
}

func TestRateAllow(t *testing.T) {
	tests := []struct {
		name  string
		o     Options
		steps []step
	}{
		{
			name: "burst then refused",
			o:    Options{Rate: 1, Burst: 3},
			steps: []step{
				{key: "k", at: 0, wantOK: true, wantRemaining: 2},
				{key: "k", at: 0, wantOK: true, wantRemaining: 1},
				{key: "k", at: 0, wantOK: true, wantRemaining: 0},
				{key: "k", at: 0, wantRemaining: 0, wantRetry: time.Second},
				// A refused request takes nothing: the wait does not grow.
				{key: "k", at: 0, wantRemaining: 0, wantRetry: time.Second},
				{key: "k", at: 400 * time.Millisecond, wantRemaining: 0, wantRetry: 600 * time.Millisecond},
			},
		},
		{
			name: "refill after time passes",
			o:    Options{Rate: 1, Burst: 3},
			steps: []step{
				{key: "k", at: 0, wantOK: true, wantRemaining: 2},
				{key: "k", at: 0, wantOK: true, wantRemaining: 1},
				{key: "k", at: 0, wantOK: true, wantRemaining: 0},
				{key: "k", at: time.Second, wantOK: true, wantRemaining: 0},
				{key: "k", at: time.Second, wantRemaining: 0, wantRetry: time.Second},
				{key: "k", at: 10 * time.Second, wantOK: true, wantRemaining: 2}, // never above the burst
			},
		},
		{
			name: "separate keys are independent",
			o:    Options{Rate: 1, Burst: 1},
			steps: []step{
				{key: "a", at: 0, wantOK: true, wantRemaining: 0},
				{key: "a", at: 0, wantRemaining: 0, wantRetry: time.Second},
				{key: "b", at: 0, wantOK: true, wantRemaining: 0},
				{key: "ip:192.0.2.1", at: 0, wantOK: true, wantRemaining: 0},
				{key: "b", at: 0, wantRemaining: 0, wantRetry: time.Second},
			},
		},
		{
			name: "fractional rate",
			o:    Options{Rate: 0.5, Burst: 1},
			steps: []step{
				{key: "k", at: 0, wantOK: true, wantRemaining: 0},
				{key: "k", at: time.Second, wantRemaining: 0, wantRetry: time.Second},
				{key: "k", at: 2 * time.Second, wantOK: true, wantRemaining: 0},
			},
		},
		{
			name: "default burst is twice the rate",
			o:    Options{Rate: 1.5},
			steps: []step{
				{key: "k", at: 0, wantOK: true, wantRemaining: 2},
				{key: "k", at: 0, wantOK: true, wantRemaining: 1},
				{key: "k", at: 0, wantOK: true, wantRemaining: 0},
				{key: "k", at: 0, wantRemaining: 0, wantRetry: 666666666 * time.Nanosecond},
			},
		},
		{
			name: "clock going backwards",
			o:    Options{Rate: 1, Burst: 1},
			steps: []step{
				{key: "k", at: 5 * time.Second, wantOK: true, wantRemaining: 0},
				{key: "k", at: 0, wantRemaining: 0, wantRetry: time.Second},
				{key: "k", at: 6 * time.Second, wantOK: true, wantRemaining: 0},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := New(tc.o)
			if !l.Enabled() {
				t.Fatalf("Enabled() = false for %+v; want true", tc.o)
			}
			for i, s := range tc.steps {
				d := l.Allow(s.key, t0.Add(s.at))
				if d.OK != s.wantOK || d.Remaining != s.wantRemaining || d.Limit != l.o.Burst {
					t.Fatalf("step %d (%s at %v): got ok %v remaining %d limit %d; want %v %d %d", i, s.key, s.at, d.OK, d.Remaining, d.Limit, s.wantOK, s.wantRemaining, l.o.Burst)
				}
				if s.wantOK && d.RetryAfter != 0 {
					t.Fatalf("step %d: got RetryAfter %v on an allowed request; want 0", i, d.RetryAfter)
				}
				if !s.wantOK && (d.RetryAfter <= 0 || absDiff(d.RetryAfter, s.wantRetry) > time.Millisecond) {
					t.Fatalf("step %d: got RetryAfter %v; want %v (> 0)", i, d.RetryAfter, s.wantRetry)
				}
			}
		})
	}
}

func absDiff(a, b time.Duration) time.Duration {
	if a > b {
		return a - b
	}
	return b - a
}

func TestRateHeaders(t *testing.T) {
	l := New(Options{Rate: 1, Burst: 3})
	tests := []struct {
		name string
		at   time.Duration
		want map[string]string
	}{
		{name: "first", at: 0, want: map[string]string{HeaderLimit: "3", HeaderRemaining: "2", HeaderReset: "1"}},
		{name: "second", at: 0, want: map[string]string{HeaderLimit: "3", HeaderRemaining: "1", HeaderReset: "2"}},
		{name: "third", at: 0, want: map[string]string{HeaderLimit: "3", HeaderRemaining: "0", HeaderReset: "3"}},
		{name: "refused", at: 0, want: map[string]string{HeaderLimit: "3", HeaderRemaining: "0", HeaderReset: "3", HeaderRetry: "1"}},
		{name: "refused, retry rounded up", at: 100 * time.Millisecond, want: map[string]string{HeaderLimit: "3", HeaderRemaining: "0", HeaderReset: "3", HeaderRetry: "1"}},
		{name: "partly refilled", at: 1500 * time.Millisecond, want: map[string]string{HeaderLimit: "3", HeaderRemaining: "0", HeaderReset: "3"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := l.Allow("k", t0.Add(tc.at)).Headers()
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got headers %v; want %v", got, tc.want)
			}
		})
	}
}

func TestRateRetryAfterAtLeastOneSecond(t *testing.T) {
	d := Decision{Limit: 10, RetryAfter: 10 * time.Millisecond}
	if got := d.Headers()[HeaderRetry]; got != "1" {
		t.Fatalf("got Retry-After %q for a 10ms wait; want \"1\" (0 would invite an immediate retry)", got)
	}
}

func TestRateDisabled(t *testing.T) {
	tests := []struct {
		name string
		l    *Limiter
	}{
		{name: "zero rate", l: New(Options{Burst: 5})},
		{name: "zero options", l: New(Options{})},
		{name: "nil limiter", l: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.l.Enabled() {
				t.Fatalf("Enabled() = true; want false")
			}
			for i := range 1000 {
				if d := tc.l.Allow("k", t0); !d.OK {
					t.Fatalf("request %d refused: %+v; want every request allowed", i, d)
				}
			}
			if tc.l != nil && len(tc.l.buckets) != 0 {
				t.Fatalf("got %d buckets; want none kept when disabled", len(tc.l.buckets))
			}
		})
	}
}

func TestRateEvictIdle(t *testing.T) {
	// Burst 3 at 1/s is full again after 3s; idle buckets go at the next sweep (at most once a minute).
	tests := []struct {
		name        string
		later       time.Duration // when the next key arrives
		keepActive  bool          // "busy" keeps making requests until then
		wantBuckets int
	}{
		{name: "within the sweep interval nothing is dropped", later: 30 * time.Second, wantBuckets: 1001},
		{name: "after the sweep interval idle buckets are dropped", later: 2 * time.Minute, wantBuckets: 1},
		{name: "an active bucket is kept", later: 2 * time.Minute, keepActive: true, wantBuckets: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := New(Options{Rate: 1, Burst: 3})
			for i := range 1000 {
				l.Allow(fmt.Sprintf("ip:192.0.2.%d", i), t0)
			}
			if tc.keepActive {
				l.Allow("busy", t0.Add(tc.later-time.Second))
				l.Allow("busy", t0.Add(tc.later-time.Second))
				l.Allow("busy", t0.Add(tc.later-time.Second))
			}
			l.Allow("new", t0.Add(tc.later))
			if got := len(l.buckets); got != tc.wantBuckets {
				t.Fatalf("got %d buckets; want %d", got, tc.wantBuckets)
			}
			if tc.keepActive {
				// The busy bucket kept its state: it is still nearly empty.
				if d := l.Allow("busy", t0.Add(tc.later)); d.Remaining != 0 {
					t.Fatalf("busy bucket has %d left; want 0 (its state kept, not reset)", d.Remaining)
				}
			}
		})
	}
}
