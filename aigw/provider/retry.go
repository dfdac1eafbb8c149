package provider

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// errAttemptTimeout is the cancel cause of an attempt that ran past ModelConfig.Timeout.
var errAttemptTimeout = errors.New("attempt timed out")

// attempt is one try of a call, with its own deadline.
type attempt struct {
	ctx     context.Context
	cancel  context.CancelCauseFunc
	timer   *time.Timer
	timeout time.Duration
	sent    bool // text went to onDelta: the call can no longer be retried or fall back
}

func startAttempt(ctx context.Context, timeout time.Duration) *attempt {
	a := &attempt{timeout: timeout}
	a.ctx, a.cancel = context.WithCancelCause(ctx)
	a.timer = time.AfterFunc(timeout, func() { a.cancel(errAttemptTimeout) })
	return a
}

// touch restarts the clock: a stream is alive as long as events keep coming.
func (a *attempt) touch() { a.timer.Reset(a.timeout) }

func (a *attempt) stop() {
	a.timer.Stop()
	a.cancel(context.Canceled)
}

func (a *attempt) timedOut() bool { return context.Cause(a.ctx) == errAttemptTimeout }

// retrier runs the attempts of one call of one model.
type retrier struct {
	model   string
	timeout time.Duration
	max     int
	base    time.Duration
	cap     time.Duration
	sleep   func(context.Context, time.Duration) error
	log     *slog.Logger
}

func newRetrier(c ModelConfig, o Options) retrier {
	return retrier{
		model: c.Name, timeout: c.Timeout, max: c.MaxRetries,
		base: o.RetryBase, cap: o.RetryMax, sleep: o.Sleep, log: o.Logger,
	}
}

// do calls f until it succeeds, fails for good, or retries run out. Only an *UpstreamError
// that is Retryable is retried, and only while nothing was streamed; a Retry-After longer
// than the cap, or a wait past ctx's deadline, ends the retries at once (so a fallback can
// answer instead). ctx ending is returned as ctx's error, not an UpstreamError.
func (r *retrier) do(ctx context.Context, f func(*attempt) error) error {
	for n := 0; ; n++ {
		a := startAttempt(ctx, r.timeout)
		err := f(a)
		a.stop()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil && !a.sent {
			return fmt.Errorf("provider: %s: %w", r.model, ctx.Err())
		}
		var ue *UpstreamError
		if !errors.As(err, &ue) {
			return err
		}
		if a.sent {
			ue.Retryable = false // part of the answer is out: only the caller can decide
		}
		if !ue.Retryable || n >= r.max {
			return err
		}
		wait := r.backoff(n)
		if ue.RetryAfter > 0 {
			if ue.RetryAfter > r.cap {
				return err
			}
			wait = max(wait, ue.RetryAfter)
		}
		if d, ok := ctx.Deadline(); ok && time.Until(d) < wait {
			return err
		}
		r.log.Warn("provider: retrying", "model", r.model, "retry", n+1, "wait", wait, "error", err.Error())
		if err := r.sleep(ctx, wait); err != nil {
			return fmt.Errorf("provider: %s: %w", r.model, ctx.Err())
		}
	}
}

// backoff is the wait before retry n+1: base doubled n times, capped, with jitter in [50%, 100%]
// so that clients rejected together do not come back together.
func (r *retrier) backoff(n int) time.Duration {
	w := r.base
	for i := 0; i < n && w < r.cap; i++ {
		w *= 2
	}
	w = min(w, r.cap)
	return w/2 + rand.N(w/2+1)
}

// retryable tells whether an HTTP status is worth another try: timeouts, conflicts (Anthropic's
// lock timeouts), rate limits and server errors. The upstream's x-should-retry header, as the
// official SDKs read it, overrides.
func retryable(status int, h http.Header) bool {
	switch h.Get("X-Should-Retry") {
	case "true":
		return true
	case "false":
		return false
	}
	return status == http.StatusRequestTimeout || status == http.StatusConflict ||
		status == http.StatusTooManyRequests || status >= 500
}

// retryAfter reads retry-after-ms (OpenAI and Anthropic) or Retry-After (seconds or an HTTP
// date); 0 when absent or unusable.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && ms < 1e9 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 && s < 1e6 {
			return time.Duration(s * float64(time.Second))
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
