// Package provider calls language models for the AI gateway: OpenAI-compatible HTTP APIs, the
// Anthropic Messages API and a built-in echo model, behind one interface with timeouts, retries
// and fallbacks.
package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Message roles.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool" // a tool's result, answering an assistant message's tool call
)

// Finish reasons, in OpenAI's vocabulary whatever the upstream (Anthropic's are mapped).
const (
	FinishStop          = "stop"
	FinishLength        = "length"
	FinishToolCalls     = "tool_calls"
	FinishContentFilter = "content_filter"
)

// Message is one turn of a conversation.
type Message struct {
	Role       string     `json:"role"` // RoleSystem, RoleUser, RoleAssistant or RoleTool
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`   // an assistant's calls of the request's tools
	ToolCallID string     `json:"tool_call_id,omitempty"` // RoleTool: the call this is the result of
}

// ToolCall is a model's call of one of the request's tools (OpenAI's function calling).
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"` // "function"
	Function FunctionCall `json:"function"`
}

// FunctionCall names the function and its arguments, a JSON text written by the model.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ToolCallDelta is a piece of a streamed tool call: the first piece of a call has its ID and
// Name, the others only more Arguments text.
type ToolCallDelta struct {
	Choice    int // the choice the call belongs to (Sampling.N); 0 for the first
	Index     int
	ID        string
	Name      string
	Arguments string
}

// Request is one chat completion.
type Request struct {
	Model       string // a configured model (ModelConfig.Name), for the Router; a Provider ignores it
	Messages    []Message
	MaxTokens   int      // 0: the upstream's default (Anthropic, which requires one: DefaultMaxTokens)
	Temperature *float64 // nil: the upstream's default
	Sampling    Sampling // further generation options; zero: the upstream's defaults

	// Tools and ToolChoice are OpenAI's tools and tool_choice, passed as they are; only
	// OpenAI-compatible upstreams take them (the others refuse them, ErrInvalidRequest).
	Tools             json.RawMessage
	ToolChoice        json.RawMessage
	ParallelToolCalls *bool
	// ResponseFormat is OpenAI's response_format (JSON mode, structured outputs), passed as it
	// is; only OpenAI-compatible upstreams take it.
	ResponseFormat json.RawMessage
	// OnToolCall receives a stream's tool call pieces, as onDelta receives its text; a stream
	// with tool calls and no OnToolCall fails.
	OnToolCall func(ToolCallDelta) error
	// OnChoice receives the text pieces of a stream's choices after the first (Sampling.N);
	// the first choice's go to onDelta. A stream with N above 1 needs it.
	OnChoice func(choice int, text string) error
}

// usesTools reports whether r needs function calling.
func (r Request) usesTools() bool {
	if len(r.Tools) > 0 || len(r.ToolChoice) > 0 || r.ParallelToolCalls != nil {
		return true
	}
	for _, m := range r.Messages {
		if m.Role == RoleTool || len(m.ToolCalls) > 0 {
			return true
		}
	}
	return false
}

// noTools refuses a request that needs function calling or structured outputs, for a provider
// without them.
func noTools(r Request, model string) error {
	if r.Sampling.N > 1 {
		return fmt.Errorf("provider: %w: model %s does not support n above 1 (several choices) through the gateway", ErrInvalidRequest, model)
	}
	if r.usesTools() {
		return fmt.Errorf("provider: %w: model %s does not support tools (function calling) through the gateway", ErrInvalidRequest, model)
	}
	if len(r.ResponseFormat) > 0 {
		return fmt.Errorf("provider: %w: model %s does not support response_format through the gateway", ErrInvalidRequest, model)
	}
	return nil
}

// Sampling holds the generation options beyond MaxTokens and Temperature. Each provider
// passes the ones its API has and refuses the others with ErrInvalidRequest naming them,
// never dropping one: OpenAI-compatible APIs take them all; Anthropic's takes TopP, Stop (as
// stop_sequences) and User (as metadata.user_id); the echo model's answer does not depend on
// them.
type Sampling struct {
	TopP             *float64
	Stop             []string
	Seed             *int64
	User             string
	FrequencyPenalty *float64
	PresencePenalty  *float64
	// N asks for several choices (OpenAI's n); 0 or 1 means one. Only OpenAI-compatible
	// upstreams take more than one (Response.More holds the others; streamed, OnChoice gets
	// their text).
	N int
}

// Usage counts tokens as the upstream reported them (zero when it did not).
type Usage struct {
	PromptTokens     int
	CompletionTokens int
}

// Response is a completed answer.
type Response struct {
	Model        string // the configured name of the model that answered (after fallbacks)
	Content      string
	FinishReason string // one of the Finish constants, or the upstream's own word if unmapped
	Usage        Usage
	ToolCalls    []ToolCall // the model's tool calls (OpenAI-compatible upstreams)
	// More are the choices after the first (Content, FinishReason, ToolCalls), for Sampling.N.
	More []Choice
}

// Choice is one of several answers to a request with Sampling.N.
type Choice struct {
	Content      string
	FinishReason string
	ToolCalls    []ToolCall
}

// Provider is one model. Implementations are safe for concurrent use.
type Provider interface {
	// Chat returns the whole answer.
	Chat(ctx context.Context, r Request) (*Response, error)
	// Stream calls onDelta with each piece of text as it arrives and returns the assembled
	// response. An error from onDelta stops the stream and is returned as is.
	Stream(ctx context.Context, r Request, onDelta func(string) error) (*Response, error)
}

// ErrInvalidRequest is returned for a request no upstream could take (no messages, an unknown
// role); the gateway answers it with 400. A Router does not fall back on it.
var ErrInvalidRequest = errors.New("invalid request")

// ErrUnknownModel is returned by the Router for a model name that is not configured.
var ErrUnknownModel = errors.New("unknown model")

// UpstreamError is a failure of the model's API: an error status, a broken or malformed
// answer, a timeout or a connection error. The gateway answers it with 502 upstream_error.
// It never contains the API key.
type UpstreamError struct {
	Model      string        // configured name of the model
	Status     int           // HTTP status, or the status matching a streamed error event; 0 without an answer
	Code       string        // the upstream's error type or code (e.g. rate_limit_error), if any
	Msg        string        // what went wrong, from the upstream's error body when there is one
	Retryable  bool          // the same request may succeed later
	RetryAfter time.Duration // the upstream asked to wait this long (Retry-After); 0 if it did not say
	Err        error         // the underlying error (transport, JSON), if any
}

func (e *UpstreamError) Error() string {
	var b strings.Builder
	b.WriteString("provider: ")
	b.WriteString(e.Model)
	b.WriteString(": ")
	if e.Status != 0 {
		fmt.Fprintf(&b, "upstream status %d", e.Status)
		if e.Code != "" {
			fmt.Fprintf(&b, " (%s)", e.Code)
		}
		if e.Msg != "" || e.Err != nil {
			b.WriteString(": ")
		}
	}
	b.WriteString(e.Msg)
	if e.Err != nil {
		if e.Msg != "" {
			b.WriteString(": ")
		}
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *UpstreamError) Unwrap() error { return e.Err }

// validate rejects what no upstream accepts, before anything is sent.
func validate(r Request) error {
	if len(r.Messages) == 0 {
		return fmt.Errorf("provider: %w: no messages", ErrInvalidRequest)
	}
	for i, m := range r.Messages {
		switch m.Role {
		case RoleSystem, RoleUser, RoleAssistant:
		case RoleTool:
			if m.ToolCallID == "" {
				return fmt.Errorf("provider: %w: message %d has role tool but no tool call ID", ErrInvalidRequest, i)
			}
		default:
			return fmt.Errorf("provider: %w: message %d has role %q (want system, user, assistant or tool)", ErrInvalidRequest, i, m.Role)
		}
	}
	if r.MaxTokens < 0 {
		return fmt.Errorf("provider: %w: negative max tokens", ErrInvalidRequest)
	}
	return nil
}
