package providertest

import (
	"fmt"
	"net/http"
	"testing"
)

// Anthropic starts a fake Anthropic Messages API (POST /v1/messages) for the test. It wants
// "x-api-key: <Key()>" and "anthropic-version: 2023-06-01", a JSON body with model, max_tokens
// and messages (string contents, roles user and assistant; the system prompt top-level), and
// rejects unknown fields. A stream is the API's events: message_start, content_block_start,
// ping, one content_block_delta (text_delta) per delta, content_block_stop, message_delta
// (stop_reason, usage), message_stop; an error is an "error" event.
func Anthropic(t testing.TB) *Server {
	t.Helper()
	return newServer(t, anthropicWire{}, "sk-ant-test-", "")
}

// Version is the anthropic-version the fake accepts.
const Version = "2023-06-01"

type anthropicWire struct{}

func (anthropicWire) path() string { return "/v1/messages" }

func (anthropicWire) checkAuth(h http.Header, key string) (int, string) {
	if v := h.Get("Anthropic-Version"); v != Version {
		return http.StatusBadRequest, fmt.Sprintf("anthropic-version: %q is not a valid version", v)
	}
	if key == "" {
		return 0, ""
	}
	switch got := h.Get("X-Api-Key"); {
	case got == "":
		return http.StatusUnauthorized, "x-api-key header is required"
	case got != key:
		// Quoting the key lets tests see whether the client scrubs it from its errors.
		return http.StatusUnauthorized, "invalid x-api-key " + got
	}
	return 0, ""
}

type anthropicRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	MaxTokens     *int              `json:"max_tokens"`
	System        string            `json:"system"`
	Temperature   *float64          `json:"temperature"`
	TopP          *float64          `json:"top_p"`
	TopK          *int              `json:"top_k"`
	StopSequences []string          `json:"stop_sequences"`
	Metadata      map[string]string `json:"metadata"`
	Stream        bool              `json:"stream"`
}

func (anthropicWire) decode(body []byte) (Request, error) {
	var v anthropicRequest
	if err := strictDecode(body, &v); err != nil {
		return Request{}, err
	}
	switch {
	case v.Model == "":
		return Request{}, fmt.Errorf("model: Field required")
	case v.MaxTokens == nil:
		return Request{}, fmt.Errorf("max_tokens: Field required")
	case *v.MaxTokens < 1:
		return Request{}, fmt.Errorf("max_tokens: must be at least 1")
	case len(v.Messages) == 0:
		return Request{}, fmt.Errorf("messages: at least one message is required")
	case v.Temperature != nil && (*v.Temperature < 0 || *v.Temperature > 1):
		return Request{}, fmt.Errorf("temperature: must be in [0, 1]")
	}
	r := Request{Model: v.Model, System: v.System, MaxTokens: *v.MaxTokens, Temperature: v.Temperature, Stream: v.Stream,
		TopP: v.TopP, Stop: v.StopSequences, User: v.Metadata["user_id"]}
	for i, m := range v.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return Request{}, fmt.Errorf("messages.%d.role: Input should be 'user' or 'assistant'", i)
		}
		r.Messages = append(r.Messages, Message{Role: m.Role, Content: m.Content})
	}
	return r, nil
}

func (anthropicWire) errorType(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusPaymentRequired:
		return "billing_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusGatewayTimeout:
		return "timeout_error"
	case 529:
		return "overloaded_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

func anthropicErrorBody(typ, msg string) map[string]any {
	return map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}}
}

func (anthropicWire) writeError(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, anthropicErrorBody(typ, msg))
}

func anthropicStop(a answer) string {
	if a.finish == "" {
		return "end_turn"
	}
	return a.finish
}

func (anthropicWire) writeAnswer(w http.ResponseWriter, id string, req Request, a answer) {
	writeJSON(w, http.StatusOK, map[string]any{
		"id": "msg_" + id, "type": "message", "role": "assistant", "model": req.Model,
		"content":     []map[string]any{{"type": "text", "text": a.content}},
		"stop_reason": anthropicStop(a), "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": a.prompt, "output_tokens": a.output},
	})
}

func (anthropicWire) streamStart(id string, req Request, a answer) []string {
	return []string{
		event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
			"id": "msg_" + id, "type": "message", "role": "assistant", "model": req.Model, "content": []any{},
			"stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": a.prompt, "output_tokens": 1},
		}}),
		event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}}),
		event("ping", map[string]any{"type": "ping"}),
	}
}

func (anthropicWire) streamDelta(_ string, _ Request, text string) string {
	return event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
		"delta": map[string]any{"type": "text_delta", "text": text}})
}

func (anthropicWire) streamEnd(_ string, _ Request, a answer) []string {
	return []string{
		event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0}),
		event("message_delta", map[string]any{"type": "message_delta",
			"delta": map[string]any{"stop_reason": anthropicStop(a), "stop_sequence": nil},
			"usage": map[string]any{"output_tokens": a.output}}),
		event("message_stop", map[string]any{"type": "message_stop"}),
	}
}

func (anthropicWire) streamError(typ, msg string) string {
	return event("error", anthropicErrorBody(typ, msg))
}
