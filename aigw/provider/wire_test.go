package provider_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/edgewan/edgewan/aigw/provider"
	"github.com/edgewan/edgewan/aigw/provider/providertest"
)

func TestChatAndStream(t *testing.T) {
	temp := 0.25
	conv := provider.Request{
		Messages: []provider.Message{
			{Role: provider.RoleSystem, Content: "Be brief."},
			{Role: provider.RoleUser, Content: "first question"},
			{Role: provider.RoleAssistant, Content: "first answer"},
			{Role: provider.RoleUser, Content: "My card is [CREDIT_CARD_1], why was it declined?"},
		},
		MaxTokens:   100,
		Temperature: &temp,
	}
	tests := []struct {
		name       string
		reply      map[string]providertest.Reply // by kind
		req        provider.Request
		want       string
		wantDeltas []string // stream; nil: the answer cut after each space
		wantFinish string
	}{
		{
			name: "echo of the last user message",
			req:  conv, want: "My card is [CREDIT_CARD_1], why was it declined?", wantFinish: provider.FinishStop,
		},
		{
			name: "fixed answer cut for length",
			reply: map[string]providertest.Reply{
				provider.KindOpenAI:    {Content: "one two three", FinishReason: "length"},
				provider.KindAnthropic: {Content: "one two three", FinishReason: "max_tokens"},
			},
			req: ask("count"), want: "one two three", wantFinish: provider.FinishLength,
		},
		{
			name: "unicode chunks and CRLF lines",
			reply: map[string]providertest.Reply{
				provider.KindOpenAI:    {Content: "héllo wörld 👋", Chunks: []string{"hé", "llo w", "örld ", "👋"}, CRLF: true},
				provider.KindAnthropic: {Content: "héllo wörld 👋", Chunks: []string{"hé", "llo w", "örld ", "👋"}, CRLF: true},
			},
			req: ask("hi"), want: "héllo wörld 👋", wantDeltas: []string{"hé", "llo w", "örld ", "👋"}, wantFinish: provider.FinishStop,
		},
		{
			name: "empty answer",
			reply: map[string]providertest.Reply{
				provider.KindOpenAI:    {},
				provider.KindAnthropic: {},
			},
			req: ask("say nothing"), want: "", wantDeltas: []string{}, wantFinish: provider.FinishStop,
		},
	}
	forEachWire(t, func(t *testing.T, kind string, up *providertest.Server) {
		p := newModel(t, modelFor("m", kind, up), provider.Options{})
		for _, tt := range tests {
			for _, stream := range modes() {
				t.Run(tt.name+"/"+modeName(stream), func(t *testing.T) {
					if r, ok := tt.reply[kind]; ok {
						up.Queue(r)
					}
					before := len(up.Requests())
					resp, deltas, err := call(p, stream, tt.req)
					if err != nil {
						t.Fatal(err)
					}
					if resp.Content != tt.want || resp.Model != "m" || resp.FinishReason != tt.wantFinish {
						t.Errorf("got %+v; want content %q, model m, finish %q", resp, tt.want, tt.wantFinish)
					}
					wantPrompt := 0
					for _, m := range tt.req.Messages {
						wantPrompt += len(strings.Fields(m.Content))
					}
					if want := (provider.Usage{PromptTokens: wantPrompt, CompletionTokens: len(strings.Fields(tt.want))}); resp.Usage != want {
						t.Errorf("usage %+v; want %+v", resp.Usage, want)
					}
					if stream {
						want := tt.wantDeltas
						if want == nil {
							want = strings.SplitAfter(tt.want, " ")
						}
						if !slices.Equal(deltas, want) && !(len(deltas) == 0 && len(want) == 0) {
							t.Errorf("deltas %q; want %q", deltas, want)
						}
					}

					reqs := up.Requests()
					if len(reqs) != before+1 {
						t.Fatalf("%d requests upstream; want 1", len(reqs)-before)
					}
					got := reqs[before]
					if got.Model != "up-m" || got.Stream != stream {
						t.Errorf("upstream model %q, stream %v; want up-m, %v", got.Model, got.Stream, stream)
					}
					checkSent(t, kind, tt.req, got)
				})
			}
		}
	})
}

// checkSent compares the request that reached the upstream with the one asked.
func checkSent(t *testing.T, kind string, asked provider.Request, got providertest.Request) {
	t.Helper()
	var want []providertest.Message
	var system []string
	for _, m := range asked.Messages {
		if kind == provider.KindAnthropic && m.Role == provider.RoleSystem {
			system = append(system, m.Content)
			continue
		}
		want = append(want, providertest.Message{Role: m.Role, Content: m.Content})
	}
	if !reflect.DeepEqual(got.Messages, want) || got.System != strings.Join(system, "\n\n") {
		t.Errorf("upstream got system %q, messages %+v; want %q, %+v", got.System, got.Messages, system, want)
	}
	wantMax := asked.MaxTokens
	if wantMax == 0 && kind == provider.KindAnthropic {
		wantMax = provider.DefaultMaxTokens
	}
	if got.MaxTokens != wantMax {
		t.Errorf("upstream max tokens %d; want %d", got.MaxTokens, wantMax)
	}
	if (got.Temperature == nil) != (asked.Temperature == nil) || got.Temperature != nil && *got.Temperature != *asked.Temperature {
		t.Errorf("upstream temperature %v; want %v", got.Temperature, asked.Temperature)
	}
	if kind == provider.KindOpenAI && got.Stream && !got.IncludeUsage {
		t.Errorf("stream without stream_options.include_usage")
	}
}

func TestAuthHeaders(t *testing.T) {
	forEachWire(t, func(t *testing.T, kind string, up *providertest.Server) {
		key := up.Key()
		tests := []struct {
			name       string
			serverKey  string
			clientKey  string
			wantStatus int // 0: success
		}{
			{"right key", key, key, 0},
			{"wrong key", key, key + "x", http.StatusUnauthorized},
			{"no key", key, "", http.StatusUnauthorized},
			{"keyless server", "", "", 0},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				up.SetKey(tt.serverKey)
				c := modelFor("m", kind, up)
				c.APIKey, c.MaxRetries = tt.clientKey, 3
				before := len(up.Requests())
				_, err := newModel(t, c, provider.Options{}).Chat(context.Background(), ask("hi"))
				reqs := up.Requests()[before:]
				if len(reqs) != 1 {
					t.Fatalf("%d requests; want 1 (401 is not retried)", len(reqs))
				}
				h := reqs[0].Header
				switch kind {
				case provider.KindOpenAI:
					want := ""
					if tt.clientKey != "" {
						want = "Bearer " + tt.clientKey
					}
					if got := h.Get("Authorization"); got != want {
						t.Errorf("Authorization %q; want %q", got, want)
					}
				case provider.KindAnthropic:
					if got := h.Get("X-Api-Key"); got != tt.clientKey {
						t.Errorf("x-api-key %q; want %q", got, tt.clientKey)
					}
					if got := h.Get("Anthropic-Version"); got != "2023-06-01" {
						t.Errorf("anthropic-version %q; want 2023-06-01", got)
					}
					if h.Get("Authorization") != "" {
						t.Errorf("Authorization sent to Anthropic")
					}
				}
				if tt.wantStatus == 0 {
					if err != nil {
						t.Fatal(err)
					}
					return
				}
				ue := upstreamError(t, err)
				if ue.Status != tt.wantStatus || ue.Retryable {
					t.Errorf("got %+v; want status %d, not retryable", ue, tt.wantStatus)
				}
				if tt.clientKey != "" && strings.Contains(err.Error(), tt.clientKey) {
					t.Errorf("error %q contains the API key", err)
				}
			})
		}
	})
}

func TestRetries(t *testing.T) {
	const base = 100 * time.Millisecond
	type tc struct {
		name       string
		replies    []providertest.Reply
		stream     bool
		maxRetries int
		want       int // requests upstream
		wantStatus int // of the final error; -1: success
		retryable  bool
	}
	common := []tc{
		{"503 twice then success", providertest.Repeat(2, providertest.Reply{Status: 503}), false, 2, 3, -1, false},
		{"500 past max retries", providertest.Repeat(3, providertest.Reply{Status: 500}), false, 2, 3, 500, true},
		{"no retries configured", providertest.Repeat(1, providertest.Reply{Status: 502}), false, 0, 1, 502, true},
		{"400 is never retried", providertest.Repeat(1, providertest.Reply{Status: 400}), false, 3, 1, 400, false},
		{"404 is never retried", providertest.Repeat(1, providertest.Reply{Status: 404}), false, 3, 1, 404, false},
		{"408 is retried", providertest.Repeat(1, providertest.Reply{Status: 408}), false, 3, 2, -1, false},
		{"429 is retried", providertest.Repeat(2, providertest.Reply{Status: 429}), false, 3, 3, -1, false},
		{"x-should-retry false wins over 503", []providertest.Reply{{Status: 503, Header: http.Header{"X-Should-Retry": {"false"}}}}, false, 3, 1, 503, false},
		{"x-should-retry true wins over 400", []providertest.Reply{{Status: 400, Header: http.Header{"X-Should-Retry": {"true"}}}}, false, 3, 2, -1, false},
		{"dropped connection is retried", providertest.Repeat(2, providertest.Reply{Drop: true}), false, 2, 3, -1, false},
		{"HTML error page", []providertest.Reply{{Status: 502, Raw: "<html>bad gateway</html>", ContentType: "text/html"}}, false, 0, 1, 502, true},
		{"malformed answer is not retried", []providertest.Reply{{Raw: `{"choices": [`}}, false, 3, 1, 200, false},
		{"stream cut before any delta is retried", []providertest.Reply{{Content: "a b c", Cut: true}}, true, 1, 2, -1, false},
		{"stream cut after a delta is not retried", []providertest.Reply{{Content: "a b c", Cut: true, After: 1}}, true, 3, 1, 0, false},
		{"stream 503 before start is retried", []providertest.Reply{{Status: 503}}, true, 1, 2, -1, false},
		{"stream error event before any delta is retried", []providertest.Reply{{Content: "a b", StreamError: "server_error"}}, true, 1, 2, -1, false},
		{"stream error event after a delta is not retried", []providertest.Reply{{Content: "a b", StreamError: "server_error", After: 1}}, true, 3, 1, 500, false},
	}
	byKind := map[string][]tc{
		provider.KindOpenAI: {
			{"429 insufficient_quota is not retried", []providertest.Reply{{Status: 429, ErrorType: "insufficient_quota"}}, false, 3, 1, 429, false},
		},
		provider.KindAnthropic: {
			{"529 overloaded is retried", []providertest.Reply{{Status: 529}}, false, 1, 2, -1, false},
			{"stream overloaded event is retried", []providertest.Reply{{Content: "a", StreamError: "overloaded_error"}}, true, 1, 2, -1, false},
			{"stream invalid_request event is not retried", []providertest.Reply{{Content: "a", StreamError: "invalid_request_error"}}, true, 3, 1, 400, false},
		},
	}
	forEachWire(t, func(t *testing.T, kind string, up *providertest.Server) {
		for _, tt := range append(common, byKind[kind]...) {
			t.Run(tt.name, func(t *testing.T) {
				var rec recorder
				o := rec.options()
				o.RetryBase = base
				c := modelFor("m", kind, up)
				c.MaxRetries = tt.maxRetries
				up.Queue(tt.replies...)
				before := len(up.Requests())
				resp, _, err := call(newModel(t, c, o), tt.stream, ask("ping pong"))
				if n := len(up.Requests()) - before; n != tt.want {
					t.Errorf("%d requests upstream; want %d", n, tt.want)
				}
				waits := rec.Waits()
				if len(waits) != tt.want-1 {
					t.Errorf("%d waits %v; want %d", len(waits), waits, tt.want-1)
				}
				// Exponential backoff with jitter: wait i is in [base*2^i/2, base*2^i].
				for i, w := range waits {
					hi := base << i
					if w < hi/2 || w > hi {
						t.Errorf("wait %d = %s; want in [%s, %s]", i, w, hi/2, hi)
					}
				}
				if tt.wantStatus == -1 {
					if err != nil {
						t.Fatalf("got %v; want success", err)
					}
					if resp.Content != "ping pong" && resp.Content != "a b c" && resp.Content != "a b" && resp.Content != "a" {
						t.Errorf("content %q", resp.Content)
					}
					return
				}
				ue := upstreamError(t, err)
				if ue.Status != tt.wantStatus || ue.Retryable != tt.retryable || ue.Model != "m" {
					t.Errorf("got %+v (%v); want status %d, retryable %v, model m", ue, err, tt.wantStatus, tt.retryable)
				}
			})
		}
	})
}

func TestRetryAfter(t *testing.T) {
	tests := []struct {
		name      string
		header    http.Header
		wantWait  [2]time.Duration // range of the single wait; zero: no retry
		wantAfter time.Duration    // UpstreamError.RetryAfter when not retried
	}{
		{"seconds", http.Header{"Retry-After": {"3"}}, [2]time.Duration{3 * time.Second, 3 * time.Second}, 0},
		{"milliseconds header first", http.Header{"Retry-After-Ms": {"1500"}, "Retry-After": {"9"}}, [2]time.Duration{1500 * time.Millisecond, 1500 * time.Millisecond}, 0},
		{"shorter than the backoff", http.Header{"Retry-After": {"0.01"}}, [2]time.Duration{50 * time.Millisecond, 100 * time.Millisecond}, 0},
		{"HTTP date", http.Header{"Retry-After": {time.Now().Add(5 * time.Second).UTC().Format(http.TimeFormat)}}, [2]time.Duration{2 * time.Second, 5 * time.Second}, 0},
		{"garbage is ignored", http.Header{"Retry-After": {"soon"}}, [2]time.Duration{50 * time.Millisecond, 100 * time.Millisecond}, 0},
		{"past the cap: no retry", http.Header{"Retry-After": {"120"}}, [2]time.Duration{}, 120 * time.Second},
	}
	forEachWire(t, func(t *testing.T, kind string, up *providertest.Server) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				var rec recorder
				o := rec.options()
				o.RetryBase, o.RetryMax = 100*time.Millisecond, 10*time.Second
				c := modelFor("m", kind, up)
				c.MaxRetries = 1
				up.Queue(providertest.Reply{Status: 429, Header: tt.header})
				_, err := newModel(t, c, o).Chat(context.Background(), ask("x"))
				waits := rec.Waits()
				if tt.wantWait[1] == 0 {
					ue := upstreamError(t, err)
					if len(waits) != 0 || ue.RetryAfter != tt.wantAfter || !ue.Retryable {
						t.Errorf("waits %v, error %+v; want no wait, RetryAfter %s, retryable (for a fallback)", waits, ue, tt.wantAfter)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if len(waits) != 1 || waits[0] < tt.wantWait[0] || waits[0] > tt.wantWait[1] {
					t.Errorf("waits %v; want one in [%s, %s]", waits, tt.wantWait[0], tt.wantWait[1])
				}
			})
		}
	})
}

func TestRetryGivesUpBeforeTheCallersDeadline(t *testing.T) {
	forEachWire(t, func(t *testing.T, kind string, up *providertest.Server) {
		var rec recorder
		o := rec.options()
		c := modelFor("m", kind, up)
		c.MaxRetries = 3
		up.Queue(providertest.Reply{Status: 429, Header: http.Header{"Retry-After": {"8"}}})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := newModel(t, c, o).Chat(ctx, ask("x"))
		if ue := upstreamError(t, err); ue.Status != 429 || len(rec.Waits()) != 0 {
			t.Errorf("got %v after waits %v; want the 429 at once (the wait would outlast the deadline)", err, rec.Waits())
		}
	})
}

func TestTimeouts(t *testing.T) {
	tests := []struct {
		name       string
		reply      providertest.Reply
		stream     bool
		timeout    time.Duration // long enough for what is expected to arrive, on a loaded machine
		wantDeltas int
	}{
		{"no answer", providertest.Reply{Hang: true}, false, 100 * time.Millisecond, 0},
		{"no answer to a stream", providertest.Reply{Hang: true}, true, 100 * time.Millisecond, 0},
		{"stream stalls after two deltas", providertest.Reply{Content: "a b c d", Stall: true, After: 2}, true, time.Second, 2},
	}
	forEachWire(t, func(t *testing.T, kind string, up *providertest.Server) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				var rec recorder
				c := modelFor("m", kind, up)
				c.Timeout, c.MaxRetries = tt.timeout, 1
				up.Queue(tt.reply, tt.reply)
				start := time.Now()
				_, deltas, err := call(newModel(t, c, rec.options()), tt.stream, ask("x"))
				if d := time.Since(start); d > 10*tt.timeout {
					t.Errorf("took %s; want about 2 x %s", d, tt.timeout)
				}
				ue := upstreamError(t, err)
				if !strings.Contains(ue.Msg, "timed out after "+tt.timeout.String()) || ue.Status != 0 {
					t.Errorf("got %+v; want a timeout", ue)
				}
				if len(deltas) != tt.wantDeltas {
					t.Errorf("deltas %q; want %d", deltas, tt.wantDeltas)
				}
				wantWaits := 1 // retried once...
				if tt.wantDeltas > 0 {
					wantWaits = 0 // ...unless text was already streamed
				}
				if len(rec.Waits()) != wantWaits || ue.Retryable != (wantWaits == 1) {
					t.Errorf("waits %v, retryable %v; want %d waits", rec.Waits(), ue.Retryable, wantWaits)
				}
			})
		}
	})
}

func TestSlowStreamWithinTimeoutBetweenEvents(t *testing.T) {
	// Timeout bounds the silence between events, not the whole stream: five deltas 400ms apart
	// take 2s, past a 1.5s timeout, and must all arrive.
	for _, kind := range httpKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			up := fake(t, kind)
			c := modelFor("m", kind, up)
			c.Timeout = 1500 * time.Millisecond
			up.Queue(providertest.Reply{Content: "1 2 3 4 5", Pace: 400 * time.Millisecond})
			var deltas []string
			start := time.Now()
			resp, err := newModel(t, c, provider.Options{}).Stream(context.Background(), ask("x"), collect(&deltas))
			if err != nil || resp.Content != "1 2 3 4 5" || len(deltas) != 5 {
				t.Fatalf("got %+v, %q, %v; want all 5 deltas", resp, deltas, err)
			}
			if d := time.Since(start); d < c.Timeout {
				t.Errorf("took %s; want longer than the timeout, for the test to mean something", d)
			}
		})
	}
}

func TestCallerContextIsNotAnUpstreamError(t *testing.T) {
	forEachWire(t, func(t *testing.T, kind string, up *providertest.Server) {
		for _, stream := range modes() {
			t.Run(modeName(stream), func(t *testing.T) {
				var rec recorder
				c := modelFor("m", kind, up)
				c.MaxRetries = 3
				up.Queue(providertest.Reply{Hang: true})
				ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
				defer cancel()
				p := newModel(t, c, rec.options())
				var err error
				if stream {
					_, err = p.Stream(ctx, ask("x"), func(string) error { return nil })
				} else {
					_, err = p.Chat(ctx, ask("x"))
				}
				var ue *provider.UpstreamError
				if !errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ue) || len(rec.Waits()) != 0 {
					t.Errorf("got %v after waits %v; want the caller's deadline, no retry", err, rec.Waits())
				}
			})
		}
	})
}

func TestOnDeltaErrorStopsTheStream(t *testing.T) {
	stop := errors.New("blocked by the output check")
	forEachWire(t, func(t *testing.T, kind string, up *providertest.Server) {
		c := modelFor("m", kind, up)
		c.MaxRetries = 3
		n := 0
		_, err := newModel(t, c, provider.Options{}).Stream(context.Background(), ask("a b c d"), func(string) error {
			if n++; n == 2 {
				return stop
			}
			return nil
		})
		if !errors.Is(err, stop) || n != 2 || len(up.Requests()) != 1 {
			t.Errorf("got %v after %d deltas and %d requests; want the callback's error after 2, 1 request", err, n, len(up.Requests()))
		}
	})
}

func TestStreamIgnoredByServer(t *testing.T) {
	// A server that answers a stream request with plain JSON still gives one delta.
	up := providertest.OpenAI(t)
	up.Queue(providertest.Reply{Raw: `{"choices":[{"message":{"role":"assistant","content":"whole"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`, ContentType: "application/json"})
	var deltas []string
	resp, err := newModel(t, modelFor("m", provider.KindOpenAI, up), provider.Options{}).Stream(context.Background(), ask("x"), collect(&deltas))
	if err != nil || resp.Content != "whole" || !slices.Equal(deltas, []string{"whole"}) {
		t.Fatalf("got %+v, %q, %v; want one delta \"whole\"", resp, deltas, err)
	}
}

func TestWireStreamsRaw(t *testing.T) {
	// Streams as odd servers send them: comments, missing [DONE], event: lines on OpenAI,
	// multi-line data, CR line ends, unknown Anthropic events and delta types.
	tests := []struct {
		name    string
		kind    string
		raw     string
		want    string
		wantErr string
	}{
		{"openai without [DONE] after a finish reason", provider.KindOpenAI,
			"data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n", "hi", ""},
		{"openai without [DONE] or finish", provider.KindOpenAI,
			"data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n", "", "stream ended before [DONE]"},
		{"openai comments, event lines, CR ends, JSON over two data lines", provider.KindOpenAI,
			": hello\r\revent: message\rdata: {\"choices\":[{\"delta\":\rdata: {\"content\":\"a\"}}]}\r\rdata: [DONE]\r\r", "a", ""},
		{"openai error chunk", provider.KindOpenAI,
			"data: {\"error\":{\"message\":\"boom\",\"type\":\"server_error\",\"code\":null}}\n\n", "", "upstream status 500 (server_error): boom"},
		{"openai malformed chunk", provider.KindOpenAI, "data: {nope\n\n", "", "malformed stream chunk"},
		{"openai oversized line", provider.KindOpenAI, "data: " + strings.Repeat("x", 2<<20) + "\n\n", "", "line longer than"},
		{"anthropic unknown events and delta types", provider.KindAnthropic,
			"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3}}}\n\n" +
				"event: future_event\ndata: {\"type\":\"future_event\"}\n\n" +
				"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"hmm\"}}\n\n" +
				"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"ok\"}}\n\n" +
				"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n", "ok", ""},
		{"anthropic without message_stop", provider.KindAnthropic,
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"ok\"}}\n\n", "", "stream ended before message_stop"},
		{"anthropic last event cut before its blank line", provider.KindAnthropic,
			"event: message_stop\ndata: {\"type\":\"message_stop\"}\n", "", "stream ended before message_stop"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := fake(t, tt.kind)
			up.Queue(providertest.Reply{Raw: tt.raw})
			resp, err := newModel(t, modelFor("m", tt.kind, up), provider.Options{}).Stream(context.Background(), ask("x"), func(string) error { return nil })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v; want an error with %q", err, tt.wantErr)
				}
				upstreamError(t, err)
				return
			}
			if err != nil || resp.Content != tt.want {
				t.Fatalf("got %+v, %v; want %q", resp, err, tt.want)
			}
		})
	}
}

func TestRedirectIsNotFollowed(t *testing.T) {
	forEachWire(t, func(t *testing.T, kind string, up *providertest.Server) {
		elsewhere := providertest.OpenAI(t)
		up.Queue(providertest.Reply{Status: http.StatusTemporaryRedirect, Header: http.Header{"Location": {elsewhere.URL + "/chat/completions"}}})
		_, err := newModel(t, modelFor("m", kind, up), provider.Options{}).Chat(context.Background(), ask("x"))
		if ue := upstreamError(t, err); ue.Status != http.StatusTemporaryRedirect || len(elsewhere.Requests()) != 0 {
			t.Errorf("got %v; want the 307 as an error and nothing sent elsewhere", err)
		}
	})
}

func TestKeyNeverInErrorsOrLogs(t *testing.T) {
	forEachWire(t, func(t *testing.T, kind string, up *providertest.Server) {
		key := up.Key()
		tests := []struct {
			name      string
			serverKey string
			reply     providertest.Reply
			stream    bool
		}{
			{"401 quoting the key", "another-key", providertest.Reply{}, false},
			{"500 quoting the key", key, providertest.Reply{Status: 500, ErrorMsg: "upstream saw " + key + " and failed"}, false},
			{"raw body quoting the key", key, providertest.Reply{Status: 503, Raw: "proxy error for key=" + key, ContentType: "text/plain"}, false},
			{"stream error event quoting the key", key, providertest.Reply{Content: "a", StreamError: "server_error", ErrorMsg: "key " + key}, true},
			{"dropped connection", key, providertest.Reply{Drop: true}, false},
			{"timeout", key, providertest.Reply{Hang: true}, true},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				up.SetKey(tt.serverKey)
				defer up.SetKey(key)
				var rec recorder
				c := modelFor("m", kind, up)
				c.APIKey, c.MaxRetries, c.Timeout = key, 2, 200*time.Millisecond
				if tt.serverKey == key {
					up.Queue(providertest.Repeat(3, tt.reply)...)
				}
				_, _, err := call(newModel(t, c, rec.options()), tt.stream, ask("x"))
				if err == nil {
					t.Fatal("got no error")
				}
				if contains(key, err.Error(), rec.Log()) {
					t.Errorf("the key is in the error %q or the log %q", err, rec.Log())
				}
				if contains(key[len(key)-12:], err.Error(), rec.Log()) {
					t.Errorf("part of the key is in the error %q or the log %q", err, rec.Log())
				}
			})
		}
	})
}

func TestInvalidRequest(t *testing.T) {
	tests := []struct {
		name string
		req  provider.Request
	}{
		{"no messages", provider.Request{}},
		{"unknown role", provider.Request{Messages: []provider.Message{{Role: "tool", Content: "x"}}}},
		{"negative max tokens", provider.Request{Messages: []provider.Message{{Role: "user", Content: "x"}}, MaxTokens: -1}},
	}
	forEachWire(t, func(t *testing.T, kind string, up *providertest.Server) {
		p := newModel(t, modelFor("m", kind, up), provider.Options{})
		for _, tt := range tests {
			for _, stream := range modes() {
				t.Run(tt.name+"/"+modeName(stream), func(t *testing.T) {
					_, _, err := call(p, stream, tt.req)
					if !errors.Is(err, provider.ErrInvalidRequest) {
						t.Errorf("got %v; want ErrInvalidRequest", err)
					}
				})
			}
		}
		if n := len(up.Requests()); n != 0 {
			t.Errorf("%d requests sent upstream; want none", n)
		}
	})
}

func TestConcurrentCalls(t *testing.T) {
	forEachWire(t, func(t *testing.T, kind string, up *providertest.Server) {
		p := newModel(t, modelFor("m", kind, up), provider.Options{})
		errs := make(chan error, 16)
		for i := range 16 {
			go func() {
				text := strings.Repeat("w ", i) + "end"
				resp, _, err := call(p, i%2 == 0, ask(text))
				if err == nil && resp.Content != text {
					err = errors.New("got " + resp.Content + "; want " + text)
				}
				errs <- err
			}()
		}
		for range 16 {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
	})
}

func TestRealBackoffTimer(t *testing.T) {
	forEachWire(t, func(t *testing.T, kind string, up *providertest.Server) {
		c := modelFor("m", kind, up)
		c.MaxRetries = 1
		t.Run("waits and retries", func(t *testing.T) {
			up.Queue(providertest.Reply{Status: 503})
			resp, err := newModel(t, c, provider.Options{RetryBase: time.Millisecond}).Chat(context.Background(), ask("ok"))
			if err != nil || resp.Content != "ok" {
				t.Fatalf("got %+v, %v; want success after one retry", resp, err)
			}
		})
		t.Run("cancelled while waiting", func(t *testing.T) {
			up.Queue(providertest.Reply{Status: 503})
			before := len(up.Requests())
			ctx, cancel := context.WithCancel(context.Background())
			p := newModel(t, c, provider.Options{RetryBase: time.Hour, RetryMax: time.Hour})
			done := make(chan error, 1)
			go func() {
				_, err := p.Chat(ctx, ask("x"))
				done <- err
			}()
			if _, err := up.WaitRequests(context.Background(), before+1); err != nil {
				t.Fatal(err)
			}
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Errorf("got %v; want context.Canceled", err)
			}
		})
	})
}

func TestCutStreamUnwraps(t *testing.T) {
	forEachWire(t, func(t *testing.T, kind string, up *providertest.Server) {
		up.Queue(providertest.Reply{Content: "a b c", Cut: true, After: 1})
		_, err := newModel(t, modelFor("m", kind, up), provider.Options{}).Stream(context.Background(), ask("x"), func(string) error { return nil })
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("got %v; want it to wrap io.ErrUnexpectedEOF", err)
		}
	})
}
