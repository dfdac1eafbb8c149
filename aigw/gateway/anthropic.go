package gateway

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"

	"github.com/gin-gonic/gin"

	"github.com/edgewan/edgewan/aigw/provider"
	"github.com/edgewan/edgewan/coreapi/apierr"
	"github.com/edgewan/edgewan/coreapi/rest"
)

// The Anthropic-compatible endpoint lets Anthropic SDKs go through the gateway: base URL
// https://CONTROLLER/ai-gateway/v1/anthropic, the project key as auth token (Authorization:
// Bearer). POST /anthropic/v1/messages is handled as POST /chat (same redaction, block rules,
// model checks and audit record, of kind chat), answered in the Messages API's shapes. Every
// request field is used or refused with a 400 naming it.

// anthropicUsed are the request fields of the Messages API the gateway uses.
var anthropicUsed = []string{"model", "max_tokens", "messages", "system", "stream", "temperature", "top_p", "stop_sequences", "metadata", "tools", "tool_choice"}

// anthropicRefused are the Messages API fields the gateway does not support yet.
var anthropicRefused = map[string]string{
	"top_k":              "top_k is not supported by the gateway yet",
	"thinking":           "extended thinking is not supported by the gateway yet",
	"service_tier":       "service_tier is not supported by the gateway yet",
	"container":          "containers are not supported by the gateway",
	"mcp_servers":        "MCP servers are not supported by the gateway",
	"context_management": "context management is not supported by the gateway",
}

// parseAnthropicRequest reads a Messages API body into a chat request.
func parseAnthropicRequest(body []byte) (ChatRequest, error) {
	var r ChatRequest
	var fields map[string]json.RawMessage
	if err := rest.DecodeBytes(body, &fields); err != nil {
		return r, err
	}
	var system []provider.Message
	var maxTokens *int
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		v := fields[k]
		if why, ok := anthropicRefused[k]; ok {
			if string(v) == "null" {
				continue
			}
			return r, badParam(k, "%s", why)
		}
		if !slices.Contains(anthropicUsed, k) {
			return r, badParam(k, "unknown field %q of the Messages API", k)
		}
		if string(v) == "null" && k != "model" && k != "messages" && k != "max_tokens" {
			continue
		}
		var err error
		switch k {
		case "model":
			err = decodeParam(k, v, &r.Model)
		case "max_tokens":
			if err = decodeParam(k, v, &maxTokens); err == nil && (maxTokens == nil || *maxTokens < 1) {
				err = badParam(k, "must be at least 1")
			}
		case "messages":
			r.Messages, err = parseAnthropicMessages(v)
		case "system":
			var text string
			if text, err = anthropicText("system", v); err == nil {
				system = []provider.Message{{Role: provider.RoleSystem, Content: text}}
			}
		case "stream":
			err = decodeParam(k, v, &r.Stream)
		case "temperature":
			if err = decodeParam(k, v, &r.Temperature); err == nil && (*r.Temperature < 0 || *r.Temperature > 1) {
				err = badParam(k, "must be from 0 to 1")
			}
		case "top_p":
			err = decodeParam(k, v, &r.Sampling.TopP)
		case "stop_sequences":
			err = decodeParam(k, v, &r.Sampling.Stop)
		case "tools":
			r.Tools, err = anthropicTools(v)
		case "tool_choice":
			r.ToolChoice, r.ParallelToolCalls, err = anthropicToolChoice(v)
		case "metadata":
			var m struct {
				UserID string `json:"user_id"`
			}
			if err = decodeParam(k, v, &m); err == nil {
				r.Sampling.User = m.UserID
			}
		}
		if err != nil {
			return r, err
		}
	}
	switch {
	case r.Model == "":
		return r, badParam("model", "is required")
	case maxTokens == nil:
		return r, badParam("max_tokens", "is required")
	case len(r.Messages) == 0:
		return r, badParam("messages", "is required: at least one message")
	}
	r.MaxTokens = *maxTokens
	r.Messages = append(system, r.Messages...)
	return r, nil
}

// anthropicText reads content: a string or an array of text blocks (joined). Other blocks
// (images, documents, tool use and results) are refused naming them; cache_control and
// citations only when null.
func anthropicText(at string, v json.RawMessage) (string, error) {
	return textContent(at, v, "blocks", "cache_control", "citations")
}

// anthropicStop maps a finish reason to the Messages API's stop_reason.
func anthropicStop(finish string) string {
	switch finish {
	case provider.FinishLength:
		return "max_tokens"
	case provider.FinishToolCalls:
		return "tool_use"
	}
	return "end_turn"
}

// anthropicErrorType is OpenAI's error type but for a 413, which the Messages API names.
func anthropicErrorType(status int) string {
	if status == http.StatusRequestEntityTooLarge {
		return "request_too_large"
	}
	return openaiErrorType(status)
}

// anthropicError is the Messages API's error body, with the gateway's code and request ID.
func anthropicError(c *gin.Context, err error) (int, rest.ErrorBody) {
	status, body := openaiError(c, err)
	body.Type, body.Error.Type = "error", anthropicErrorType(status)
	return status, body
}

func anthropicFail(c *gin.Context, err error) {
	status, body := anthropicError(c, err)
	if status >= 500 {
		slog.Error("request failed", "request_id", rest.GetRequestID(c), "method", c.Request.Method, "path", c.FullPath(), "err", err)
	}
	c.AbortWithStatusJSON(status, body)
}

func (h *handlers) anthropicMessages(c *gin.Context) {
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, chatBodyLimit))
	if err != nil {
		anthropicFail(c, apierr.New(http.StatusRequestEntityTooLarge, apierr.CodeTooLarge, "request body is larger than %d bytes", chatBodyLimit))
		return
	}
	req, err := parseAnthropicRequest(body)
	if err != nil {
		anthropicFail(c, err)
		return
	}
	cl := caller(c)
	req.Project = cl.Project
	id := rest.GetRequestID(c)
	if !req.Stream {
		res, err := h.s.Chat(c.Request.Context(), cl, id, "chat", req)
		if err != nil {
			anthropicFail(c, err)
			return
		}
		blocks, err := anthropicBlocks(res.Output, res.ToolCalls)
		if err != nil {
			anthropicFail(c, err)
			return
		}
		c.JSON(http.StatusOK, gin.H{"id": "msg_" + id, "type": "message", "role": "assistant", "model": res.Model,
			"content": blocks, "stop_reason": anthropicStop(res.FinishReason), "stop_sequence": nil,
			"usage":   gin.H{"input_tokens": res.Usage.PromptTokens, "output_tokens": res.Usage.CompletionTokens},
			"edgewan": gin.H{"request_id": id, "redactions": res.Redactions, "policy": res.Policy}})
		return
	}
	sink := &anthropicSink{c: c, id: "msg_" + id, model: req.Model}
	if err := h.s.ChatStream(c.Request.Context(), cl, id, "chat", req, sink); err != nil {
		sink.fail(err)
	}
}

// anthropicSink writes the Messages API's event stream: message_start, content blocks one
// after the other (content_block_start, a content_block_delta per piece, content_block_stop):
// the text, then a tool_use block per tool call with its input as input_json_delta pieces;
// then message_delta with the stop reason and usage, and message_stop.
type anthropicSink struct {
	c       *gin.Context
	id      string
	model   string
	started bool
	blocks  int  // content blocks started
	open    bool // the last one is not stopped yet
	tool    int  // the tool call index of the open block; -1 for text
}

func (s *anthropicSink) event(name string, v gin.H) error {
	if !s.started {
		s.started = true
		startSSE(s.c)
		if err := s.event("message_start", gin.H{"message": gin.H{"id": s.id, "type": "message", "role": "assistant", "model": s.model,
			"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": gin.H{"input_tokens": 0, "output_tokens": 0}}}); err != nil {
			return err
		}
	}
	v["type"] = name
	b, _ := json.Marshal(v)
	if _, err := fmt.Fprintf(s.c.Writer, "event: %s\ndata: %s\n\n", name, b); err != nil {
		return err
	}
	s.c.Writer.Flush()
	return nil
}

// startBlock stops the open block and starts the next one.
func (s *anthropicSink) startBlock(tool int, block gin.H) error {
	if err := s.stopBlock(); err != nil {
		return err
	}
	s.open, s.tool = true, tool
	s.blocks++
	return s.event("content_block_start", gin.H{"index": s.blocks - 1, "content_block": block})
}

func (s *anthropicSink) stopBlock() error {
	if !s.open {
		return nil
	}
	s.open = false
	return s.event("content_block_stop", gin.H{"index": s.blocks - 1})
}

func (s *anthropicSink) Delta(text string) error {
	if !s.open || s.tool != -1 {
		if err := s.startBlock(-1, gin.H{"type": "text", "text": ""}); err != nil {
			return err
		}
	}
	return s.event("content_block_delta", gin.H{"index": s.blocks - 1, "delta": gin.H{"type": "text_delta", "text": text}})
}

// ToolCall starts a tool_use block for a new call, and sends its arguments as
// input_json_delta pieces. Blocks cannot interleave: a piece of a call whose block was
// stopped (a model going back to an earlier call) ends the stream with an error.
func (s *anthropicSink) ToolCall(index int, id, name, args string) error {
	if id != "" || name != "" {
		if err := s.startBlock(index, gin.H{"type": "tool_use", "id": id, "name": name, "input": gin.H{}}); err != nil {
			return err
		}
	} else if !s.open || s.tool != index {
		return apierr.New(http.StatusBadGateway, apierr.CodeUpstream, "the model interleaved its tool calls, which the Messages API's stream cannot carry")
	}
	if args == "" {
		return nil
	}
	return s.event("content_block_delta", gin.H{"index": s.blocks - 1, "delta": gin.H{"type": "input_json_delta", "partial_json": args}})
}

func (s *anthropicSink) Done(r *ChatResponse) error {
	if s.blocks == 0 { // an empty answer still has its text block
		if err := s.startBlock(-1, gin.H{"type": "text", "text": ""}); err != nil {
			return err
		}
	}
	if err := s.stopBlock(); err != nil {
		return err
	}
	if err := s.event("message_delta", gin.H{"delta": gin.H{"stop_reason": anthropicStop(r.FinishReason), "stop_sequence": nil},
		"usage": gin.H{"input_tokens": r.Usage.PromptTokens, "output_tokens": r.Usage.CompletionTokens}}); err != nil {
		return err
	}
	return s.event("message_stop", gin.H{})
}

func (s *anthropicSink) fail(err error) {
	if !s.started {
		anthropicFail(s.c, err)
		return
	}
	_, body := anthropicError(s.c, err)
	b, _ := json.Marshal(body)
	_, _ = fmt.Fprintf(s.c.Writer, "event: error\ndata: %s\n\n", b)
	s.c.Writer.Flush()
}
