package provider

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	r := retrier{base: 100 * time.Millisecond, cap: time.Second}
	tests := []struct {
		n      int
		lo, hi time.Duration
	}{
		{0, 50 * time.Millisecond, 100 * time.Millisecond},
		{1, 100 * time.Millisecond, 200 * time.Millisecond},
		{2, 200 * time.Millisecond, 400 * time.Millisecond},
		{3, 400 * time.Millisecond, 800 * time.Millisecond},
		{4, 500 * time.Millisecond, time.Second}, // capped
		{60, 500 * time.Millisecond, time.Second},
	}
	for _, tt := range tests {
		seen := map[time.Duration]bool{}
		for range 200 {
			d := r.backoff(tt.n)
			if d < tt.lo || d > tt.hi {
				t.Fatalf("backoff(%d) = %s; want in [%s, %s]", tt.n, d, tt.lo, tt.hi)
			}
			seen[d] = true
		}
		if len(seen) < 10 {
			t.Errorf("backoff(%d): %d distinct values in 200; want jitter", tt.n, len(seen))
		}
	}
}

func TestRetryAfterHeader(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		header http.Header
		want   time.Duration
	}{
		{"absent", http.Header{}, 0},
		{"seconds", http.Header{"Retry-After": {"7"}}, 7 * time.Second},
		{"fraction", http.Header{"Retry-After": {"0.5"}}, 500 * time.Millisecond},
		{"spaces", http.Header{"Retry-After": {" 2 "}}, 2 * time.Second},
		{"date", http.Header{"Retry-After": {now.Add(90 * time.Second).Format(http.TimeFormat)}}, 90 * time.Second},
		{"date in the past", http.Header{"Retry-After": {now.Add(-time.Minute).Format(http.TimeFormat)}}, 0},
		{"ms wins", http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"7"}}, 250 * time.Millisecond},
		{"bad ms falls back", http.Header{"Retry-After-Ms": {"x"}, "Retry-After": {"7"}}, 7 * time.Second},
		{"negative", http.Header{"Retry-After": {"-3"}}, 0},
		{"huge", http.Header{"Retry-After": {"1e300"}}, 0},
		{"garbage", http.Header{"Retry-After": {"tomorrow"}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := retryAfter(tt.header, now); got != tt.want {
				t.Errorf("got %s; want %s", got, tt.want)
			}
		})
	}
}

func TestClean(t *testing.T) {
	key := "sk-live-0123456789abcdef"
	tests := []struct{ in, want string }{
		{"bad key " + key + "!", "bad key [redacted]!"},
		{"two\nlines\t here", "two lines here"},
		{"bad \xff utf8", "bad ? utf8"},
		{strings.Repeat("é", 400), strings.Repeat("é", maxErrorMsg/2) + "..."},
	}
	for _, tt := range tests {
		if got := clean(tt.in, key); got != tt.want {
			t.Errorf("clean(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

func TestUpstreamErrorMessage(t *testing.T) {
	tests := []struct {
		e    UpstreamError
		want string
	}{
		{UpstreamError{Model: "m", Status: 429, Code: "rate_limit_error", Msg: "slow down"}, "provider: m: upstream status 429 (rate_limit_error): slow down"},
		{UpstreamError{Model: "m", Status: 502}, "provider: m: upstream status 502"},
		{UpstreamError{Model: "m", Msg: "timed out after 1s"}, "provider: m: timed out after 1s"},
		{UpstreamError{Model: "m", Msg: "stream", Err: http.ErrHandlerTimeout}, "provider: m: stream: http: Handler timeout"},
		{UpstreamError{Model: "m", Status: 200, Msg: "malformed answer", Err: http.ErrBodyNotAllowed}, "provider: m: upstream status 200: malformed answer: http: request method or response status code does not allow body"},
	}
	for _, tt := range tests {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("got %q; want %q", got, tt.want)
		}
	}
}

func TestFinishReason(t *testing.T) {
	for in, want := range map[string]string{
		"end_turn": FinishStop, "stop_sequence": FinishStop, "max_tokens": FinishLength,
		"model_context_window_exceeded": FinishLength, "tool_use": FinishToolCalls,
		"refusal": FinishContentFilter, "pause_turn": "pause_turn", "": "",
	} {
		if got := finishReason(in); got != want {
			t.Errorf("finishReason(%q) = %q; want %q", in, got, want)
		}
	}
}
