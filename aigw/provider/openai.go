package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"
)

// openAI speaks the OpenAI chat completions API (POST {base}/chat/completions), which vLLM,
// Ollama (/v1), LiteLLM and many others serve too.
type openAI struct{ httpModel }

var _ Provider = (*openAI)(nil)

var openAIWire = wire{
	path: "/chat/completions",
	header: func(h http.Header, key string) {
		if key != "" {
			h.Set("Authorization", "Bearer "+key)
		}
	},
	parseError: func(b []byte) (string, string) {
		var e struct {
			Error *openAIError `json:"error"`
		}
		if json.Unmarshal(b, &e) != nil || e.Error == nil {
			return "", errorText(b)
		}
		return e.Error.code(), e.Error.Message
	},
	codeStatus: func(code string) int {
		switch code {
		case "invalid_request_error", "context_length_exceeded":
			return http.StatusBadRequest
		case "rate_limit_exceeded":
			return http.StatusTooManyRequests
		}
		return http.StatusInternalServerError
	},
}

func newOpenAI(c ModelConfig, o Options) Provider {
	return &openAI{newHTTPModel(c, o, openAIWire)}
}

type openAIRequest struct {
	Model         string         `json:"model"`
	Messages      []Message      `json:"messages"`
	MaxTokens     int            `json:"max_tokens,omitempty"`
	Temperature   *float64       `json:"temperature,omitempty"`
	Stream        bool           `json:"stream,omitempty"`
	StreamOptions *streamOptions `json:"stream_options,omitempty"`

	TopP             *float64 `json:"top_p,omitempty"`
	Stop             []string `json:"stop,omitempty"`
	Seed             *int64   `json:"seed,omitempty"`
	User             string   `json:"user,omitempty"`
	FrequencyPenalty *float64 `json:"frequency_penalty,omitempty"`
	PresencePenalty  *float64 `json:"presence_penalty,omitempty"`

	Tools             json.RawMessage `json:"tools,omitempty"`
	ToolChoice        json.RawMessage `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls,omitempty"`
	ResponseFormat    json.RawMessage `json:"response_format,omitempty"`
	N                 int             `json:"n,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type openAIUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

type openAIError struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"` // a string, a number or null depending on the server
}

// code is the most specific of code and type, e.g. insufficient_quota over rate-limit types.
func (e *openAIError) code() string {
	var s string
	if json.Unmarshal(e.Code, &s) == nil && s != "" {
		return s
	}
	if c := strings.TrimSpace(string(e.Code)); c != "" && c != "null" {
		return c
	}
	return e.Type
}

type openAIResponse struct {
	Choices []openAIChoice `json:"choices"`
	Usage   openAIUsage    `json:"usage"`
}

type openAIChoice struct {
	Index   int `json:"index"`
	Message struct {
		Content   string     `json:"content"`
		ToolCalls []ToolCall `json:"tool_calls"`
	} `json:"message"`
	FinishReason string `json:"finish_reason"`
}

// openAIChunk is one event of a stream. Choices is an array so that a chunk can be decoded into
// a reset value without allocating: OpenAI sends one choice per chunk, also with n (its index
// says which); a chunk with more is refused (Stream checks).
type openAIChunk struct {
	Choices [1]struct {
		Index int `json:"index"`
		Delta struct {
			Content   string `json:"content"`
			ToolCalls []struct {
				Index    int    `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *openAIUsage `json:"usage"`
	Error *openAIError `json:"error"`
}

func (p *openAI) body(r Request, stream bool) ([]byte, error) {
	if err := validate(r); err != nil {
		return nil, err
	}
	req := openAIRequest{
		Model: p.cfg.UpstreamModel, Messages: r.Messages, MaxTokens: r.MaxTokens,
		Temperature: r.Temperature, Stream: stream,
		TopP: r.Sampling.TopP, Stop: r.Sampling.Stop, Seed: r.Sampling.Seed, User: r.Sampling.User,
		FrequencyPenalty: r.Sampling.FrequencyPenalty, PresencePenalty: r.Sampling.PresencePenalty,
		Tools: r.Tools, ToolChoice: r.ToolChoice, ParallelToolCalls: r.ParallelToolCalls, ResponseFormat: r.ResponseFormat,
	}
	if r.Sampling.N > 1 {
		if stream && r.OnChoice == nil {
			return nil, fmt.Errorf("provider: %w: a stream with n above 1 needs a choice handler", ErrInvalidRequest)
		}
		req.N = r.Sampling.N
	}
	if stream {
		req.StreamOptions = &streamOptions{IncludeUsage: true}
	}
	return json.Marshal(req)
}

// Chat implements Provider.
func (p *openAI) Chat(ctx context.Context, r Request) (*Response, error) {
	body, err := p.body(r, false)
	if err != nil {
		return nil, err
	}
	var out *Response
	err = p.retry.do(ctx, func(a *attempt) error {
		res, err := p.post(a, body, false)
		if err != nil {
			return err
		}
		defer res.Body.Close()
		var v openAIResponse
		if err := p.readJSON(a, res, &v); err != nil {
			return err
		}
		if len(v.Choices) == 0 {
			return p.fail(res.StatusCode, "", "answer without choices", nil, false)
		}
		if want := max(r.Sampling.N, 1); len(v.Choices) != want {
			return p.fail(res.StatusCode, "", fmt.Sprintf("answer with %d choices, asked for %d", len(v.Choices), want), nil, false)
		}
		slices.SortFunc(v.Choices, func(a, b openAIChoice) int { return a.Index - b.Index })
		out = &Response{
			Model: p.cfg.Name, Content: v.Choices[0].Message.Content, FinishReason: v.Choices[0].FinishReason,
			Usage: Usage{v.Usage.PromptTokens, v.Usage.CompletionTokens}, ToolCalls: v.Choices[0].Message.ToolCalls,
		}
		for _, c := range v.Choices[1:] {
			out.More = append(out.More, Choice{Content: c.Message.Content, FinishReason: c.FinishReason, ToolCalls: c.Message.ToolCalls})
		}
		return nil
	})
	return out, err
}

// maxToolCalls bounds the tool calls of one answer.
const maxToolCalls = 128

// toolDelta hands a tool call piece to the request's OnToolCall; a request without one did
// not expect tool calls, and the answer fails rather than losing them.
func (p *openAI) toolDelta(r Request, d ToolCallDelta) error {
	if r.OnToolCall == nil {
		return p.fail(0, "", "the model called a tool, but the request has no tool call handler", nil, false)
	}
	return r.OnToolCall(d)
}

// Stream implements Provider. The stream is complete at "data: [DONE]" or, for servers that
// omit it, at its end after a finish reason; anything else is a cut.
func (p *openAI) Stream(ctx context.Context, r Request, onDelta func(string) error) (*Response, error) {
	body, err := p.body(r, true)
	if err != nil {
		return nil, err
	}
	var out *Response
	err = p.retry.do(ctx, func(a *attempt) error {
		res, err := p.post(a, body, true)
		if err != nil {
			return err
		}
		defer res.Body.Close()
		if ct, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type")); ct == "application/json" {
			// The server ignored "stream": take the whole answer as one delta.
			var v openAIResponse
			if err := p.readJSON(a, res, &v); err != nil {
				return err
			}
			if len(v.Choices) == 0 {
				return p.fail(res.StatusCode, "", "answer without choices", nil, false)
			}
			slices.SortFunc(v.Choices, func(a, b openAIChoice) int { return a.Index - b.Index })
			out = &Response{
				Model: p.cfg.Name, Content: v.Choices[0].Message.Content, FinishReason: v.Choices[0].FinishReason,
				Usage: Usage{v.Usage.PromptTokens, v.Usage.CompletionTokens}, ToolCalls: v.Choices[0].Message.ToolCalls,
			}
			if out.Content != "" {
				a.sent = true
				if err := onDelta(out.Content); err != nil {
					return err
				}
			}
			for i, tc := range out.ToolCalls {
				a.sent = true
				if err := p.toolDelta(r, ToolCallDelta{Index: i, ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments}); err != nil {
					return err
				}
			}
			if want := max(r.Sampling.N, 1); len(v.Choices) != want {
				return p.fail(res.StatusCode, "", fmt.Sprintf("answer with %d choices, asked for %d", len(v.Choices), want), nil, false)
			}
			for k, c := range v.Choices[1:] {
				out.More = append(out.More, Choice{Content: c.Message.Content, FinishReason: c.FinishReason, ToolCalls: c.Message.ToolCalls})
				if c.Message.Content != "" {
					if err := r.OnChoice(k+1, c.Message.Content); err != nil {
						return err
					}
				}
				for i, tc := range c.Message.ToolCalls {
					if err := p.toolDelta(r, ToolCallDelta{Choice: k + 1, Index: i, ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments}); err != nil {
						return err
					}
				}
			}
			return nil
		}
		n := max(r.Sampling.N, 1)
		resp := Response{Model: p.cfg.Name}
		if n > 1 {
			resp.More = make([]Choice, n-1)
		}
		var content strings.Builder
		var c openAIChunk
		sse := newSSEReader(res.Body, maxSSELine)
		for {
			ev, err := sse.next()
			if err == io.EOF {
				if resp.FinishReason == "" {
					return p.fail(res.StatusCode, "", "stream ended before [DONE]", nil, true)
				}
				break
			}
			if err != nil {
				return p.netError(a, "stream", err)
			}
			a.touch()
			if bytes.Equal(ev.Data, []byte("[DONE]")) {
				break
			}
			c = openAIChunk{}
			if err := json.Unmarshal(ev.Data, &c); err != nil {
				return p.fail(res.StatusCode, "", "malformed stream chunk", err, false)
			}
			if c.Error != nil {
				return p.streamError(c.Error.code(), c.Error.Message)
			}
			if c.Usage != nil {
				resp.Usage = Usage{c.Usage.PromptTokens, c.Usage.CompletionTokens}
			}
			ci := c.Choices[0].Index
			if n > 1 {
				var probe struct{ Choices []json.RawMessage }
				if json.Unmarshal(ev.Data, &probe) != nil || len(probe.Choices) > 1 {
					return p.fail(res.StatusCode, "", "a stream chunk with several choices", nil, false)
				}
			}
			if ci < 0 || ci >= n {
				return p.fail(res.StatusCode, "", fmt.Sprintf("stream choice index %d, asked for %d", ci, n), nil, false)
			}
			ch := &resp.More // choice ci's state: choice 0 in resp itself
			if fr := c.Choices[0].FinishReason; fr != "" {
				if ci == 0 {
					resp.FinishReason = fr
				} else {
					(*ch)[ci-1].FinishReason = fr
				}
			}
			if d := c.Choices[0].Delta.Content; d != "" {
				a.sent = true
				if ci == 0 {
					content.WriteString(d)
					err = onDelta(d)
				} else {
					(*ch)[ci-1].Content += d
					err = r.OnChoice(ci, d)
				}
				if err != nil {
					return err
				}
			}
			calls := &resp.ToolCalls
			if ci > 0 {
				calls = &(*ch)[ci-1].ToolCalls
			}
			for _, tc := range c.Choices[0].Delta.ToolCalls {
				if tc.Index < 0 || tc.Index > len(*calls) || tc.Index == len(*calls) && len(*calls) >= maxToolCalls {
					return p.fail(res.StatusCode, "", "tool call index out of order", nil, false)
				}
				if tc.Index == len(*calls) {
					*calls = append(*calls, ToolCall{ID: tc.ID, Type: "function", Function: FunctionCall{Name: tc.Function.Name}})
				}
				(*calls)[tc.Index].Function.Arguments += tc.Function.Arguments
				a.sent = true
				if err := p.toolDelta(r, ToolCallDelta{Choice: ci, Index: tc.Index, ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments}); err != nil {
					return err
				}
			}
		}
		resp.Content = content.String()
		out = &resp
		return nil
	})
	return out, err
}
