package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// anthropic speaks the Anthropic Messages API (POST {base}/v1/messages).
type anthropic struct{ httpModel }

var _ Provider = (*anthropic)(nil)

// anthropicStatus is the HTTP status Anthropic gives each error type.
var anthropicStatus = map[string]int{
	"invalid_request_error": http.StatusBadRequest,
	"authentication_error":  http.StatusUnauthorized,
	"billing_error":         http.StatusPaymentRequired,
	"permission_error":      http.StatusForbidden,
	"not_found_error":       http.StatusNotFound,
	"request_too_large":     http.StatusRequestEntityTooLarge,
	"rate_limit_error":      http.StatusTooManyRequests,
	"api_error":             http.StatusInternalServerError,
	"timeout_error":         http.StatusGatewayTimeout,
	"overloaded_error":      529,
}

var anthropicWire = wire{
	path: "/v1/messages",
	header: func(h http.Header, key string) {
		if key != "" {
			h.Set("X-Api-Key", key)
		}
		h.Set("Anthropic-Version", AnthropicVersion)
	},
	parseError: func(b []byte) (string, string) {
		var e struct {
			Error *anthropicError `json:"error"`
		}
		if json.Unmarshal(b, &e) != nil || e.Error == nil {
			return "", errorText(b)
		}
		return e.Error.Type, e.Error.Message
	},
	codeStatus: func(code string) int {
		if s, ok := anthropicStatus[code]; ok {
			return s
		}
		return http.StatusInternalServerError
	},
}

func newAnthropic(c ModelConfig, o Options) Provider {
	return &anthropic{newHTTPModel(c, o, anthropicWire)}
}

type anthropicRequest struct {
	Model       string    `json:"model"`
	MaxTokens   int       `json:"max_tokens"`
	System      string    `json:"system,omitempty"`
	Messages    []Message `json:"messages"`
	Temperature *float64  `json:"temperature,omitempty"`
	Stream      bool      `json:"stream,omitempty"`

	TopP          *float64           `json:"top_p,omitempty"`
	StopSequences []string           `json:"stop_sequences,omitempty"`
	Metadata      *anthropicMetadata `json:"metadata,omitempty"`
}

type anthropicMetadata struct {
	UserID string `json:"user_id"`
}

type anthropicError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

type anthropicUsage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

type anthropicResponse struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StopReason string         `json:"stop_reason"`
	Usage      anthropicUsage `json:"usage"`
}

// anthropicEvent is any event of a stream; each type fills some of the fields. Values, not
// pointers, so that an event decodes into a reset value without allocating.
type anthropicEvent struct {
	Type    string `json:"type"`
	Message struct {
		Usage anthropicUsage `json:"usage"`
	} `json:"message"` // message_start
	Delta struct {
		Type       string `json:"type"`        // content_block_delta: text_delta, input_json_delta, ...
		Text       string `json:"text"`        // text_delta
		StopReason string `json:"stop_reason"` // message_delta
	} `json:"delta"`
	Usage anthropicUsage `json:"usage"` // message_delta: cumulative
	Error anthropicError `json:"error"`
}

// finishReason maps Anthropic's stop_reason to OpenAI's words.
func finishReason(stop string) string {
	switch stop {
	case "end_turn", "stop_sequence":
		return FinishStop
	case "max_tokens", "model_context_window_exceeded":
		return FinishLength
	case "tool_use":
		return FinishToolCalls
	case "refusal":
		return FinishContentFilter
	}
	return stop
}

// body moves system messages to the top-level system prompt, the only place the API takes them.
func (p *anthropic) body(r Request, stream bool) ([]byte, error) {
	if err := validate(r); err != nil {
		return nil, err
	}
	req := anthropicRequest{
		Model: p.cfg.UpstreamModel, MaxTokens: r.MaxTokens, Messages: r.Messages,
		Temperature: r.Temperature, Stream: stream, TopP: r.Sampling.TopP, StopSequences: r.Sampling.Stop,
	}
	if r.Sampling.User != "" {
		req.Metadata = &anthropicMetadata{UserID: r.Sampling.User}
	}
	if err := noTools(r, p.cfg.Name); err != nil {
		return nil, err
	}
	var unsupported []string
	if r.Sampling.Seed != nil {
		unsupported = append(unsupported, "seed")
	}
	if r.Sampling.FrequencyPenalty != nil {
		unsupported = append(unsupported, "frequency_penalty")
	}
	if r.Sampling.PresencePenalty != nil {
		unsupported = append(unsupported, "presence_penalty")
	}
	if unsupported != nil {
		return nil, fmt.Errorf("provider: %w: model %s (Anthropic's Messages API) has no %s", ErrInvalidRequest, p.cfg.Name, strings.Join(unsupported, ", "))
	}
	if req.MaxTokens == 0 {
		req.MaxTokens = DefaultMaxTokens
	}
	var system []string
	for _, m := range r.Messages {
		if m.Role == RoleSystem {
			system = append(system, m.Content)
		}
	}
	if system != nil {
		req.System = strings.Join(system, "\n\n")
		req.Messages = make([]Message, 0, len(r.Messages)-len(system))
		for _, m := range r.Messages {
			if m.Role != RoleSystem {
				req.Messages = append(req.Messages, m)
			}
		}
	}
	return json.Marshal(req)
}

// Chat implements Provider.
func (p *anthropic) Chat(ctx context.Context, r Request) (*Response, error) {
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
		var v anthropicResponse
		if err := p.readJSON(a, res, &v); err != nil {
			return err
		}
		var content strings.Builder
		for _, c := range v.Content {
			if c.Type == "text" {
				content.WriteString(c.Text)
			}
		}
		out = &Response{
			Model: p.cfg.Name, Content: content.String(), FinishReason: finishReason(v.StopReason),
			Usage: Usage{v.Usage.InputTokens, v.Usage.OutputTokens},
		}
		return nil
	})
	return out, err
}

// Stream implements Provider. The stream is complete at message_stop; text comes from
// text_delta deltas; ping, content_block_start/stop, other delta types and event types the API
// may add later are skipped, as Anthropic asks of clients.
func (p *anthropic) Stream(ctx context.Context, r Request, onDelta func(string) error) (*Response, error) {
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
		resp := Response{Model: p.cfg.Name}
		var content strings.Builder
		var e anthropicEvent
		sse := newSSEReader(res.Body, maxSSELine)
		for done := false; !done; {
			ev, err := sse.next()
			if err == io.EOF {
				return p.fail(res.StatusCode, "", "stream ended before message_stop", nil, true)
			}
			if err != nil {
				return p.netError(a, "stream", err)
			}
			a.touch()
			e = anthropicEvent{}
			if err := json.Unmarshal(ev.Data, &e); err != nil {
				return p.fail(res.StatusCode, "", "malformed stream event", err, false)
			}
			switch e.Type {
			case "message_start":
				resp.Usage = Usage{e.Message.Usage.InputTokens, e.Message.Usage.OutputTokens}
			case "content_block_delta":
				if e.Delta.Type == "text_delta" && e.Delta.Text != "" {
					content.WriteString(e.Delta.Text)
					a.sent = true
					if err := onDelta(e.Delta.Text); err != nil {
						return err
					}
				}
			case "message_delta":
				if e.Delta.StopReason != "" {
					resp.FinishReason = finishReason(e.Delta.StopReason)
				}
				resp.Usage.CompletionTokens = e.Usage.OutputTokens // cumulative, always sent
				if e.Usage.InputTokens > 0 {
					resp.Usage.PromptTokens = e.Usage.InputTokens
				}
			case "message_stop":
				done = true
			case "error":
				return p.streamError(e.Error.Type, e.Error.Message)
			}
		}
		resp.Content = content.String()
		out = &resp
		return nil
	})
	return out, err
}
