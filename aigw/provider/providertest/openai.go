package providertest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// OpenAI starts a fake OpenAI chat completions API (POST /v1/chat/completions) for the test.
// It wants "Authorization: Bearer <Key()>", a JSON body with model and messages (string
// contents; roles system, developer, user, assistant, tool), and rejects unknown fields. A
// stream is "data: {chunk}" events after a ": keep-alive" comment: a first chunk with the
// role, one per delta, one with the finish reason, a usage chunk if stream_options asks for
// it, then "data: [DONE]".
func OpenAI(t testing.TB) *Server {
	t.Helper()
	return newServer(t, openAIWire{}, "sk-test-", "/v1")
}

type openAIWire struct{}

func (openAIWire) path() string { return "/v1/chat/completions" }

func (openAIWire) checkAuth(h http.Header, key string) (int, string) {
	if key == "" {
		return 0, ""
	}
	got := h.Get("Authorization")
	switch {
	case got == "":
		return http.StatusUnauthorized, "You didn't provide an API key."
	case got != "Bearer "+key:
		// The real API quotes part of the key; this fake quotes all of it, so that tests see
		// whether the client scrubs it from its errors.
		return http.StatusUnauthorized, "Incorrect API key provided: " + strings.TrimPrefix(got, "Bearer ")
	}
	return 0, ""
}

type openAIRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role       string `json:"role"`
		Content    string `json:"content"`
		Name       string `json:"name,omitempty"`
		ToolCallID string `json:"tool_call_id"`
		ToolCalls  []struct {
			ID       string `json:"id"`
			Type     string `json:"type"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
	Tools               json.RawMessage `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
	ParallelToolCalls   *bool           `json:"parallel_tool_calls"`
	ResponseFormat      json.RawMessage `json:"response_format"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Temperature         *float64        `json:"temperature"`
	TopP                *float64        `json:"top_p"`
	Stop                any             `json:"stop"`
	Seed                *int64          `json:"seed"`
	N                   *int            `json:"n"`
	User                string          `json:"user"`
	FrequencyPenalty    *float64        `json:"frequency_penalty"`
	PresencePenalty     *float64        `json:"presence_penalty"`
	Stream              bool            `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

func (openAIWire) decode(body []byte) (Request, error) {
	var v openAIRequest
	if err := strictDecode(body, &v); err != nil {
		return Request{}, err
	}
	if v.Model == "" {
		return Request{}, fmt.Errorf("you must provide a model parameter")
	}
	if len(v.Messages) == 0 {
		return Request{}, fmt.Errorf("'messages' must contain at least one message")
	}
	r := Request{Model: v.Model, Temperature: v.Temperature, Stream: v.Stream, TopP: v.TopP, Seed: v.Seed, User: v.User,
		FrequencyPenalty: v.FrequencyPenalty, PresencePenalty: v.PresencePenalty, Tools: v.Tools, ToolChoice: v.ToolChoice, ResponseFormat: v.ResponseFormat}
	if v.N != nil {
		if *v.N < 1 || *v.N > 128 {
			return Request{}, fmt.Errorf("'n' must be 1 to 128")
		}
		r.N = *v.N
	}
	switch s := v.Stop.(type) {
	case nil:
	case string:
		r.Stop = []string{s}
	case []any:
		if len(s) > 4 {
			return Request{}, fmt.Errorf("'stop': at most 4 sequences")
		}
		for _, x := range s {
			str, ok := x.(string)
			if !ok {
				return Request{}, fmt.Errorf("'stop': sequences must be strings")
			}
			r.Stop = append(r.Stop, str)
		}
	default:
		return Request{}, fmt.Errorf("'stop': must be a string or an array of strings")
	}
	for i, m := range v.Messages {
		switch m.Role {
		case "system", "developer", "user", "assistant", "tool":
		default:
			return Request{}, fmt.Errorf("invalid value for 'messages[%d].role': %q", i, m.Role)
		}
		if m.Role == "tool" && m.ToolCallID == "" {
			return Request{}, fmt.Errorf("'messages[%d].tool_call_id' is required for tool messages", i)
		}
		msg := Message{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			if !json.Valid([]byte(tc.Function.Arguments)) {
				return Request{}, fmt.Errorf("'messages[%d].tool_calls': arguments are not JSON", i)
			}
			msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		r.Messages = append(r.Messages, msg)
	}
	switch {
	case v.MaxTokens != nil && v.MaxCompletionTokens != nil:
		return Request{}, fmt.Errorf("max_tokens and max_completion_tokens are exclusive")
	case v.MaxTokens != nil:
		r.MaxTokens = *v.MaxTokens
	case v.MaxCompletionTokens != nil:
		r.MaxTokens = *v.MaxCompletionTokens
	}
	if r.MaxTokens < 0 || (v.MaxTokens != nil || v.MaxCompletionTokens != nil) && r.MaxTokens == 0 {
		return Request{}, fmt.Errorf("max_tokens must be at least 1")
	}
	if t := v.Temperature; t != nil && (*t < 0 || *t > 2) {
		return Request{}, fmt.Errorf("temperature %g: must be in [0, 2]", *t)
	}
	if v.StreamOptions != nil {
		if !v.Stream {
			return Request{}, fmt.Errorf("stream_options is only allowed when stream is true")
		}
		r.IncludeUsage = v.StreamOptions.IncludeUsage
	}
	return r, nil
}

func (openAIWire) errorType(status int) string {
	switch {
	case status == http.StatusUnauthorized:
		return "invalid_api_key"
	case status == http.StatusNotFound:
		return "model_not_found"
	case status == http.StatusTooManyRequests:
		return "rate_limit_exceeded"
	case status >= 500:
		return "server_error"
	}
	return "invalid_request_error"
}

type openAIError struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Param   any    `json:"param"`
	Code    string `json:"code"`
}

func (openAIWire) writeError(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, map[string]any{"error": openAIError{Message: msg, Type: typ, Code: typ}})
}

type openAIUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

func (a answer) openAIUsage() openAIUsage {
	return openAIUsage{a.prompt, a.output, a.prompt + a.output}
}

func openAIFinish(a answer) string {
	switch {
	case a.finish != "":
		return a.finish
	case len(a.toolCalls) > 0:
		return "tool_calls"
	}
	return "stop"
}

func openAIToolCalls(a answer) []map[string]any {
	var out []map[string]any
	for _, tc := range a.toolCalls {
		out = append(out, map[string]any{"id": tc.ID, "type": "function", "function": map[string]any{"name": tc.Name, "arguments": tc.Arguments}})
	}
	return out
}

// streamToolCall sends a call's first delta (ID, name, no arguments), then its arguments in
// ArgChunks pieces.
func (openAIWire) streamToolCall(id string, req Request, index int, tc ToolCall) []string {
	blocks := []string{event("", openAIChunk(id, req, map[string]any{"tool_calls": []map[string]any{{
		"index": index, "id": tc.ID, "type": "function", "function": map[string]any{"name": tc.Name, "arguments": ""}}}}, nil))}
	pieces := tc.ArgChunks
	if pieces == nil {
		pieces = []string{tc.Arguments}
	}
	for _, p := range pieces {
		blocks = append(blocks, event("", openAIChunk(id, req, map[string]any{"tool_calls": []map[string]any{{
			"index": index, "function": map[string]any{"arguments": p}}}}, nil)))
	}
	return blocks
}

func (openAIWire) writeAnswer(w http.ResponseWriter, id string, req Request, a answer) {
	choices := []map[string]any{{"index": 0, "message": openAIMessage(a), "logprobs": nil, "finish_reason": openAIFinish(a)}}
	for i := 1; i < req.N; i++ { // choice i is More[i-1], or the first choice's text again
		c := answer{content: a.content}
		if i-1 < len(a.more) {
			c.content = a.more[i-1]
		}
		choices = append(choices, map[string]any{"index": i, "message": openAIMessage(c), "logprobs": nil, "finish_reason": openAIFinish(c)})
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id": "chatcmpl-" + id, "object": "chat.completion", "created": time.Now().Unix(), "model": req.Model,
		"choices": choices,
		"usage":   a.openAIUsage(), "system_fingerprint": "fp_providertest",
	})
}

func openAIChunk(id string, req Request, delta map[string]any, finish any) map[string]any {
	return openAIChoiceChunk(id, req, 0, delta, finish)
}

func openAIChoiceChunk(id string, req Request, index int, delta map[string]any, finish any) map[string]any {
	c := map[string]any{
		"id": "chatcmpl-" + id, "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": req.Model,
		"choices": []map[string]any{{"index": index, "delta": delta, "logprobs": nil, "finish_reason": finish}},
	}
	if req.IncludeUsage {
		c["usage"] = nil
	}
	return c
}

func (openAIWire) streamStart(id string, req Request, _ answer) []string {
	return []string{": keep-alive\n\n", event("", openAIChunk(id, req, map[string]any{"role": "assistant", "content": ""}, nil))}
}

func (openAIWire) streamDelta(id string, req Request, text string) string {
	return event("", openAIChunk(id, req, map[string]any{"content": text}, nil))
}

func (openAIWire) streamEnd(id string, req Request, a answer) []string {
	// With n, the other choices follow the first one's text, each cut after every space, as
	// chunks with their index; then every choice's finish.
	var blocks []string
	for i := 1; i < req.N; i++ {
		text := a.content
		if i-1 < len(a.more) {
			text = a.more[i-1]
		}
		blocks = append(blocks, event("", openAIChoiceChunk(id, req, i, map[string]any{"role": "assistant", "content": ""}, nil)))
		for _, w := range strings.SplitAfter(text, " ") {
			if w != "" {
				blocks = append(blocks, event("", openAIChoiceChunk(id, req, i, map[string]any{"content": w}, nil)))
			}
		}
		blocks = append(blocks, event("", openAIChoiceChunk(id, req, i, map[string]any{}, "stop")))
	}
	blocks = append(blocks, event("", openAIChunk(id, req, map[string]any{}, openAIFinish(a))))
	if req.IncludeUsage {
		blocks = append(blocks, event("", map[string]any{
			"id": "chatcmpl-" + id, "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": req.Model,
			"choices": []any{}, "usage": a.openAIUsage(),
		}))
	}
	return append(blocks, "data: [DONE]\n\n")
}

func (openAIWire) streamError(typ, msg string) string {
	return event("", map[string]any{"error": openAIError{Message: msg, Type: typ, Code: typ}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func openAIMessage(a answer) map[string]any {
	m := map[string]any{"role": "assistant", "content": a.content, "refusal": nil}
	if len(a.toolCalls) > 0 {
		m["tool_calls"] = openAIToolCalls(a)
		if a.content == "" {
			m["content"] = nil
		}
	}
	return m
}

func (openAIWire) embedPath() string { return "/v1/embeddings" }

func (openAIWire) decodeEmbed(body []byte) (Request, error) {
	var v struct {
		Model          string `json:"model"`
		Input          any    `json:"input"`
		EncodingFormat string `json:"encoding_format"`
		Dimensions     *int   `json:"dimensions"`
		User           string `json:"user"`
	}
	if err := strictDecode(body, &v); err != nil {
		return Request{}, err
	}
	r := Request{Model: v.Model, User: v.User}
	switch in := v.Input.(type) {
	case string:
		r.Input = []string{in}
	case []any:
		for _, x := range in {
			s, ok := x.(string)
			if !ok {
				return Request{}, fmt.Errorf("'input': this fake takes strings only")
			}
			r.Input = append(r.Input, s)
		}
	default:
		return Request{}, fmt.Errorf("'input' is required")
	}
	if v.Model == "" || len(r.Input) == 0 {
		return Request{}, fmt.Errorf("'model' and 'input' are required")
	}
	return r, nil
}

// writeEmbed answers a 3-number embedding per input: its length in bytes, its number of words,
// and 1, so tests can tell which text a vector came from.
func (openAIWire) writeEmbed(w http.ResponseWriter, req Request) {
	data := make([]map[string]any, len(req.Input))
	words := 0
	for i, in := range req.Input {
		n := len(strings.Fields(in))
		words += n
		data[i] = map[string]any{"object": "embedding", "index": i, "embedding": []float64{float64(len(in)), float64(n), 1}}
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data, "model": req.Model,
		"usage": map[string]int{"prompt_tokens": words, "total_tokens": words}})
}
