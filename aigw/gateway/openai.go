package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/edgewan/edgewan/aigw/provider"
	"github.com/edgewan/edgewan/coreapi/apierr"
	"github.com/edgewan/edgewan/coreapi/rest"
)

// The OpenAI-compatible endpoint lets existing OpenAI SDKs go through the gateway unchanged:
// point the SDK's base URL at https://CONTROLLER/ai-gateway/v1/openai and use a project key
// as its API key. The project is the key's. Fields of OpenAI's request that the gateway does
// not use (n, stop, tools, ...) are accepted and ignored, as SDKs send them by default.

type openaiRequest struct {
	Model       string          `json:"model"`
	Messages    []openaiMessage `json:"messages"`
	Stream      bool            `json:"stream"`
	MaxTokens   int             `json:"max_tokens"`
	MaxComplete int             `json:"max_completion_tokens"`
	Temperature *float64        `json:"temperature"`
}

// openaiMessage accepts content as a string or as OpenAI's array of text parts.
type openaiMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

func (m openaiMessage) text() (string, error) {
	var s string
	if err := json.Unmarshal(m.Content, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(m.Content, &parts); err != nil {
		return "", apierr.BadRequest("message content must be a string or an array of text parts")
	}
	var b bytes.Buffer
	for _, p := range parts {
		if p.Type != "text" {
			return "", apierr.BadRequest("message content part of type %q is not supported; only text", p.Type)
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

func (h *handlers) openaiChat(c *gin.Context) {
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, chatBodyLimit))
	if err != nil {
		rest.Fail(c, apierr.New(http.StatusRequestEntityTooLarge, apierr.CodeTooLarge, "request body is larger than %d bytes", chatBodyLimit))
		return
	}
	if !utf8.Valid(body) { // json.Unmarshal would replace invalid bytes with U+FFFD
		rest.Fail(c, apierr.BadRequest("request body is not valid UTF-8"))
		return
	}
	var oreq openaiRequest
	if err := json.Unmarshal(body, &oreq); err != nil {
		rest.Fail(c, apierr.BadRequest("invalid JSON: %v", err))
		return
	}
	cl := caller(c)
	req := ChatRequest{Project: cl.Project, Model: oreq.Model, Stream: oreq.Stream, MaxTokens: oreq.MaxTokens, Temperature: oreq.Temperature}
	if req.MaxTokens == 0 {
		req.MaxTokens = oreq.MaxComplete
	}
	for _, m := range oreq.Messages {
		text, err := m.text()
		if err != nil {
			rest.Fail(c, err)
			return
		}
		role := m.Role
		if role == "developer" {
			role = provider.RoleSystem
		}
		req.Messages = append(req.Messages, provider.Message{Role: role, Content: text})
	}
	id := rest.GetRequestID(c)
	created := time.Now().Unix()
	if !req.Stream {
		res, err := h.s.Chat(c.Request.Context(), cl, id, "openai", req)
		if err != nil {
			rest.Fail(c, err)
			return
		}
		finish := res.FinishReason
		if finish == "" {
			finish = "stop"
		}
		c.JSON(http.StatusOK, gin.H{
			"id": "chatcmpl-" + id, "object": "chat.completion", "created": created, "model": res.Model,
			"choices": []gin.H{{"index": 0, "message": gin.H{"role": "assistant", "content": res.Output}, "finish_reason": finish}},
			"usage": gin.H{"prompt_tokens": res.Usage.PromptTokens, "completion_tokens": res.Usage.CompletionTokens,
				"total_tokens": res.Usage.PromptTokens + res.Usage.CompletionTokens},
			"edgewan": gin.H{"request_id": id, "redactions": res.Redactions, "policy": res.Policy},
		})
		return
	}
	sink := &openaiSink{c: c, id: "chatcmpl-" + id, created: created, model: req.Model}
	if err := h.s.ChatStream(c.Request.Context(), cl, id, "openai", req, sink); err != nil {
		sink.fail(err)
	}
}

// openaiSink writes OpenAI's chat.completion.chunk stream, ending with "data: [DONE]".
type openaiSink struct {
	c       *gin.Context
	id      string
	created int64
	model   string
	started bool
}

func (s *openaiSink) chunk(delta map[string]any, finish any) error {
	if !s.started {
		s.started = true
		h := s.c.Writer.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-store")
		h.Set("X-Accel-Buffering", "no")
		s.c.Status(http.StatusOK)
		if err := s.chunk(map[string]any{"role": "assistant", "content": ""}, nil); err != nil {
			return err
		}
	}
	b, _ := json.Marshal(map[string]any{"id": s.id, "object": "chat.completion.chunk", "created": s.created, "model": s.model,
		"choices": []map[string]any{{"index": 0, "delta": delta, "finish_reason": finish}}})
	if _, err := fmt.Fprintf(s.c.Writer, "data: %s\n\n", b); err != nil {
		return err
	}
	s.c.Writer.Flush()
	return nil
}

func (s *openaiSink) Delta(text string) error { return s.chunk(map[string]any{"content": text}, nil) }

func (s *openaiSink) Done(r *ChatResponse) error {
	s.model = r.Model
	finish := r.FinishReason
	if finish == "" {
		finish = "stop"
	}
	if err := s.chunk(map[string]any{}, finish); err != nil {
		return err
	}
	_, err := fmt.Fprint(s.c.Writer, "data: [DONE]\n\n")
	s.c.Writer.Flush()
	return err
}

func (s *openaiSink) fail(err error) {
	if !s.started {
		rest.Fail(s.c, err)
		return
	}
	e := apierr.From(err)
	b, _ := json.Marshal(rest.ErrorBody{Error: rest.ErrorDetail{Code: e.Code, Message: e.Message, RequestID: rest.GetRequestID(s.c)}})
	_, _ = fmt.Fprintf(s.c.Writer, "data: %s\n\n", b)
	s.c.Writer.Flush()
}

func (h *handlers) openaiModels(c *gin.Context) {
	ms, err := h.s.Models(c.Request.Context(), caller(c))
	if err != nil {
		rest.Fail(c, err)
		return
	}
	data := []gin.H{}
	for _, m := range ms {
		data = append(data, gin.H{"id": m, "object": "model", "created": 0, "owned_by": "edgewan"})
	}
	c.JSON(http.StatusOK, gin.H{"object": "list", "data": data})
}
