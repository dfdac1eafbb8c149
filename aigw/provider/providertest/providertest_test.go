package providertest_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/edgewan/edgewan/aigw/provider/providertest"
)

// post sends body to the fake with the headers a correct client sends, changed by hdr.
func post(t *testing.T, s *providertest.Server, path, body string, hdr map[string]string) (int, http.Header, string) {
	t.Helper()
	return send(t, context.Background(), s, http.MethodPost, path, body, hdr)
}

func send(t *testing.T, ctx context.Context, s *providertest.Server, method, path, body string, hdr map[string]string) (int, http.Header, string) {
	t.Helper()
	status, h, b, err := do(ctx, s, method, path, body, hdr)
	if err != nil {
		t.Fatal(err)
	}
	return status, h, b
}

// do is send for other goroutines than the test's: status 0 when there was no answer.
func do(ctx context.Context, s *providertest.Server, method, path, body string, hdr map[string]string) (int, http.Header, string, error) {
	req, err := http.NewRequestWithContext(ctx, method, s.URL+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+s.Key())
	req.Header.Set("X-Api-Key", s.Key())
	req.Header.Set("Anthropic-Version", providertest.Version)
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	res, err := s.Client().Do(req)
	if err != nil {
		return 0, nil, err.Error(), nil
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, string(b), nil
}

// errorType digs the error type out of either API's error body.
func errorType(body string) string {
	var v struct {
		Error struct{ Type string } `json:"error"`
	}
	_ = json.Unmarshal([]byte(body), &v)
	return v.Error.Type
}

const (
	oaPath = "/chat/completions"
	anPath = "/v1/messages"
	oaOK   = `{"model":"gpt-x","messages":[{"role":"system","content":"s"},{"role":"user","content":"hello there"}]}`
	anOK   = `{"model":"claude-x","max_tokens":10,"system":"s","messages":[{"role":"user","content":"hello there"}]}`
)

func TestRequestChecks(t *testing.T) {
	tests := []struct {
		name     string
		server   func(testing.TB) *providertest.Server
		method   string
		path     string
		body     string
		hdr      map[string]string
		want     int
		wantType string
	}{
		{"openai ok", providertest.OpenAI, "POST", oaPath, oaOK, nil, 200, ""},
		{"openai no key", providertest.OpenAI, "POST", oaPath, oaOK, map[string]string{"Authorization": ""}, 401, "invalid_api_key"},
		{"openai wrong key", providertest.OpenAI, "POST", oaPath, oaOK, map[string]string{"Authorization": "Bearer nope"}, 401, "invalid_api_key"},
		{"openai wrong path", providertest.OpenAI, "POST", "/completions", oaOK, nil, 404, "model_not_found"},
		{"openai GET", providertest.OpenAI, "GET", oaPath, "", nil, 405, "invalid_request_error"},
		{"openai not JSON", providertest.OpenAI, "POST", oaPath, `{"model":`, nil, 400, "invalid_request_error"},
		{"openai form body", providertest.OpenAI, "POST", oaPath, oaOK, map[string]string{"Content-Type": "text/plain"}, 400, "invalid_request_error"},
		{"openai unknown field", providertest.OpenAI, "POST", oaPath, `{"model":"m","messages":[{"role":"user","content":"x"}],"colour":1}`, nil, 400, "invalid_request_error"},
		{"openai no model", providertest.OpenAI, "POST", oaPath, `{"messages":[{"role":"user","content":"x"}]}`, nil, 400, "invalid_request_error"},
		{"openai no messages", providertest.OpenAI, "POST", oaPath, `{"model":"m","messages":[]}`, nil, 400, "invalid_request_error"},
		{"openai bad role", providertest.OpenAI, "POST", oaPath, `{"model":"m","messages":[{"role":"robot","content":"x"}]}`, nil, 400, "invalid_request_error"},
		{"openai content parts", providertest.OpenAI, "POST", oaPath, `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"x"}]}]}`, nil, 400, "invalid_request_error"},
		{"openai temperature", providertest.OpenAI, "POST", oaPath, `{"model":"m","messages":[{"role":"user","content":"x"}],"temperature":2.5}`, nil, 400, "invalid_request_error"},
		{"openai stream_options without stream", providertest.OpenAI, "POST", oaPath, `{"model":"m","messages":[{"role":"user","content":"x"}],"stream_options":{"include_usage":true}}`, nil, 400, "invalid_request_error"},
		{"anthropic ok", providertest.Anthropic, "POST", anPath, anOK, nil, 200, ""},
		{"anthropic no version", providertest.Anthropic, "POST", anPath, anOK, map[string]string{"Anthropic-Version": ""}, 400, "invalid_request_error"},
		{"anthropic no key", providertest.Anthropic, "POST", anPath, anOK, map[string]string{"X-Api-Key": ""}, 401, "authentication_error"},
		{"anthropic bearer is not enough", providertest.Anthropic, "POST", anPath, anOK, map[string]string{"X-Api-Key": "", "Authorization": "Bearer x"}, 401, "authentication_error"},
		{"anthropic no max_tokens", providertest.Anthropic, "POST", anPath, `{"model":"m","messages":[{"role":"user","content":"x"}]}`, nil, 400, "invalid_request_error"},
		{"anthropic system role", providertest.Anthropic, "POST", anPath, `{"model":"m","max_tokens":5,"messages":[{"role":"system","content":"x"}]}`, nil, 400, "invalid_request_error"},
		{"anthropic temperature", providertest.Anthropic, "POST", anPath, `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"}],"temperature":1.5}`, nil, 400, "invalid_request_error"},
		{"anthropic unknown field", providertest.Anthropic, "POST", anPath, `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"}],"n":2}`, nil, 400, "invalid_request_error"},
		{"anthropic wrong path", providertest.Anthropic, "POST", "/v1/complete", anOK, nil, 404, "not_found_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.server(t)
			status, _, body := send(t, context.Background(), s, tt.method, tt.path, tt.body, tt.hdr)
			if status != tt.want || errorType(body) != tt.wantType {
				t.Fatalf("got %d %s; want %d with error type %q", status, body, tt.want, tt.wantType)
			}
			reqs := s.Requests()
			if len(reqs) != 1 || string(reqs[0].Body) != tt.body {
				t.Fatalf("recorded %+v; want the one request, rejected or not", reqs)
			}
			system := reqs[0].System // Anthropic's; OpenAI's is the first message
			if system == "" && len(reqs[0].Messages) > 0 {
				system = reqs[0].Messages[0].Content
			}
			if tt.want == 200 && (reqs[0].LastUser() != "hello there" || reqs[0].Model == "" || system != "s") {
				t.Errorf("recorded %+v", reqs[0])
			}
		})
	}
}

func TestAnswers(t *testing.T) {
	tests := []struct {
		name   string
		server func(testing.TB) *providertest.Server
		path   string
		body   string
		reply  providertest.Reply
		want   []string // substrings of the answer; in order for a stream
	}{
		{"openai echo", providertest.OpenAI, oaPath, oaOK, providertest.Reply{Echo: true, Content: "> "},
			[]string{`"object":"chat.completion"`, `"content":"\u003e hello there"`, `"finish_reason":"stop"`, `"prompt_tokens":3,"completion_tokens":3`}},
		{"openai stream", providertest.OpenAI, oaPath, strings.Replace(oaOK, `}]}`, `}],"stream":true,"stream_options":{"include_usage":true}}`, 1), providertest.Reply{Content: "a b"},
			[]string{": keep-alive\n\n", `"delta":{"content":"","role":"assistant"}`, `"delta":{"content":"a "}`, `"delta":{"content":"b"}`,
				`"finish_reason":"stop"`, `"choices":[],`, `"completion_tokens":2`, "data: [DONE]\n\n"}},
		{"openai stream error", providertest.OpenAI, oaPath, strings.Replace(oaOK, `}]}`, `}],"stream":true}`, 1), providertest.Reply{Content: "a b", StreamError: "server_error", After: 1},
			[]string{`"content":"a "`, `data: {"error":{"message":"stream failed","type":"server_error","param":null,"code":"server_error"}}`}},
		{"openai chunks are the answer", providertest.OpenAI, oaPath, oaOK, providertest.Reply{Chunks: []string{"x ", "y"}},
			[]string{`"content":"x y"`, `"completion_tokens":2`}},
		{"openai 429", providertest.OpenAI, oaPath, oaOK, providertest.Reply{Status: 429, Header: http.Header{"Retry-After": {"2"}}},
			[]string{`"error":{"message":"Too Many Requests","type":"rate_limit_exceeded"`}},
		{"anthropic message", providertest.Anthropic, anPath, anOK, providertest.Reply{Content: "hi", FinishReason: "max_tokens"},
			[]string{`"content":[{"text":"hi","type":"text"}]`, `"stop_reason":"max_tokens"`, `"type":"message"`, `"input_tokens":3,"output_tokens":1`}},
		{"anthropic stream", providertest.Anthropic, anPath, strings.Replace(anOK, `}]}`, `}],"stream":true}`, 1), providertest.Reply{Content: "a b"},
			[]string{"event: message_start\n", "event: content_block_start\n", "event: ping\n",
				"event: content_block_delta\ndata: {\"delta\":{\"text\":\"a \",\"type\":\"text_delta\"}",
				"event: content_block_delta\ndata: {\"delta\":{\"text\":\"b\",\"type\":\"text_delta\"}",
				"event: content_block_stop\n", "event: message_delta\ndata: {\"delta\":{\"stop_reason\":\"end_turn\"",
				"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"}},
		{"anthropic stream error", providertest.Anthropic, anPath, strings.Replace(anOK, `}]}`, `}],"stream":true}`, 1), providertest.Reply{Content: "a", StreamError: "overloaded_error", ErrorMsg: "Overloaded"},
			[]string{"event: message_start\n", "event: error\ndata: {\"error\":{\"message\":\"Overloaded\",\"type\":\"overloaded_error\"},\"type\":\"error\"}\n\n"}},
		{"anthropic 529", providertest.Anthropic, anPath, anOK, providertest.Reply{Status: 529, ErrorMsg: "status 529"},
			[]string{`"error":{"message":"status 529","type":"overloaded_error"}`}},
		{"raw", providertest.Anthropic, anPath, anOK, providertest.Reply{Raw: "<html>", Status: 502}, []string{"<html>"}},
		{"crlf", providertest.Anthropic, anPath, strings.Replace(anOK, `}]}`, `}],"stream":true}`, 1), providertest.Reply{Content: "a", CRLF: true},
			[]string{"event: message_start\r\ndata: ", "}\r\n\r\nevent: "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.server(t)
			s.Queue(tt.reply)
			status, h, body := post(t, s, tt.path, tt.body, nil)
			if tt.reply.Status != 0 && status != tt.reply.Status || tt.reply.Status == 0 && status != 200 {
				t.Errorf("status %d; want %d", status, tt.reply.Status)
			}
			if ra := tt.reply.Header.Get("Retry-After"); ra != "" && h.Get("Retry-After") != ra {
				t.Errorf("Retry-After %q; want %q", h.Get("Retry-After"), ra)
			}
			rest := body
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("answer %q lacks %q (in order for a stream)", body, w)
				}
				if strings.Contains(tt.body, `"stream":true`) {
					rest = rest[i+len(w):]
				}
			}
		})
	}
}

func TestQueueOrder(t *testing.T) {
	s := providertest.OpenAI(t)
	s.SetReply(providertest.Reply{Content: "default"})
	s.Queue(providertest.Repeat(2, providertest.Reply{Status: 503})...)
	s.Queue(providertest.Reply{Content: "third"})
	var got []string
	for range 5 {
		status, _, body := post(t, s, oaPath, oaOK, nil)
		if status != 200 {
			got = append(got, http.StatusText(status))
			continue
		}
		var v struct {
			Choices []struct{ Message struct{ Content string } }
		}
		_ = json.Unmarshal([]byte(body), &v)
		got = append(got, v.Choices[0].Message.Content)
	}
	want := []string{"Service Unavailable", "Service Unavailable", "third", "default", "default"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q; want %q", got, want)
	}
	// A rejected request does not use up a queued reply.
	s.Queue(providertest.Reply{Content: "queued"})
	post(t, s, oaPath, oaOK, map[string]string{"Authorization": "Bearer wrong"})
	if _, _, body := post(t, s, oaPath, oaOK, nil); !strings.Contains(body, `"queued"`) {
		t.Errorf("got %s; want the queued reply after a rejected request", body)
	}
	// Without a key, anything goes.
	s.SetKey("")
	if status, _, _ := post(t, s, oaPath, oaOK, map[string]string{"Authorization": ""}); status != 200 {
		t.Errorf("keyless: status %d; want 200", status)
	}
}

func TestWaitForAHangingRequest(t *testing.T) {
	s := providertest.Anthropic(t)
	s.SetReply(providertest.Reply{Hang: true})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	clientCtx, hangUp := context.WithCancel(ctx)
	done := make(chan int)
	go func() {
		status, _, _, _ := do(clientCtx, s, "POST", anPath, anOK, nil)
		done <- status
	}()
	reqs, err := s.WaitRequests(ctx, 1)
	if err != nil || len(reqs) != 1 || reqs[0].Model != "claude-x" {
		t.Fatalf("got %+v, %v; want the request", reqs, err)
	}
	hangUp()
	if err := s.WaitIdle(ctx); err != nil {
		t.Fatalf("WaitIdle: %v; want the fake to see the client leave", err)
	}
	if status := <-done; status != 0 {
		t.Errorf("status %d; want no answer", status)
	}
}

func TestCleanupReleasesHangingRequests(t *testing.T) {
	done := make(chan int, 1)
	t.Run("server", func(t *testing.T) {
		s := providertest.OpenAI(t)
		s.SetReply(providertest.Reply{Hang: true})
		go func() {
			status, _, _, _ := do(context.Background(), s, "POST", oaPath, oaOK, nil)
			done <- status
		}()
		if _, err := s.WaitRequests(context.Background(), 1); err != nil {
			t.Fatal(err)
		}
	}) // the cleanup must not wait for a client that never gives up
	<-done
}
