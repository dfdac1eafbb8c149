package gateway

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/edgewan/edgewan/coreapi/apierr"
	"github.com/edgewan/edgewan/coreapi/rest"
)

// The OpenAI-compatible endpoint lets existing OpenAI SDKs go through the gateway unchanged:
// point the SDK's base URL at https://CONTROLLER/ai-gateway/v1/openai and use a project key
// as its API key. The project is the key's. Every field of OpenAI's chat completions request
// is either used (passed to the model) or refused with a 400 naming it (openai_request.go):
// nothing is dropped silently. Errors are in OpenAI's shape: error.message, type, param, code.

func (h *handlers) openaiChat(c *gin.Context) {
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, chatBodyLimit))
	if err != nil {
		openaiFail(c, apierr.New(http.StatusRequestEntityTooLarge, apierr.CodeTooLarge, "request body is larger than %d bytes", chatBodyLimit))
		return
	}
	cl := caller(c)
	oreq, err := parseOpenAIRequest(body)
	if err != nil {
		openaiFail(c, err)
		return
	}
	req := oreq.chat
	req.Project = cl.Project
	id := rest.GetRequestID(c)
	created := time.Now().Unix()
	if !req.Stream {
		res, err := h.s.Chat(c.Request.Context(), cl, id, "openai", req)
		if err != nil {
			openaiFail(c, err)
			return
		}
		choices := []gin.H{openaiChoice(0, Choice{Output: res.Output, FinishReason: res.FinishReason, ToolCalls: res.ToolCalls})}
		for i, ch := range res.More {
			choices = append(choices, openaiChoice(i+1, ch))
		}
		c.JSON(http.StatusOK, gin.H{
			"id": "chatcmpl-" + id, "object": "chat.completion", "created": created, "model": res.Model,
			"choices": choices,
			"usage":   openaiUsage(res.Usage),
			"edgewan": gin.H{"request_id": id, "redactions": res.Redactions, "policy": res.Policy},
		})
		return
	}
	sink := &openaiSink{c: c, id: "chatcmpl-" + id, created: created, model: req.Model, usage: oreq.includeUsage}
	if err := h.s.ChatStream(c.Request.Context(), cl, id, "openai", req, sink); err != nil {
		sink.fail(err)
	}
}

// openaiChoice renders one choice of a chat.completion.
func openaiChoice(index int, ch Choice) gin.H {
	finish := ch.FinishReason
	if finish == "" {
		finish = "stop"
	}
	msg := gin.H{"role": "assistant", "content": ch.Output}
	if len(ch.ToolCalls) > 0 {
		msg["tool_calls"] = ch.ToolCalls
		if ch.Output == "" {
			msg["content"] = nil // as OpenAI answers a call without text
		}
	}
	return gin.H{"index": index, "message": msg, "finish_reason": finish}
}

// openaiSink writes OpenAI's chat.completion.chunk stream, ending with "data: [DONE]".
type openaiSink struct {
	c       *gin.Context
	id      string
	created int64
	model   string
	usage   bool // stream_options.include_usage: a last chunk with the usage and no choices
	started bool
	roled   map[int]bool // choices whose first chunk (with the role) was sent
}

func (s *openaiSink) chunk(delta map[string]any, finish any) error {
	return s.choiceChunk(0, delta, finish)
}

// choiceChunk sends a chunk of choice i; a choice's first chunk has the role, as OpenAI's.
func (s *openaiSink) choiceChunk(i int, delta map[string]any, finish any) error {
	if !s.started {
		s.started = true
		startSSE(s.c)
	}
	if s.roled == nil {
		s.roled = map[int]bool{}
	}
	if !s.roled[i] {
		s.roled[i] = true
		if err := s.choiceChunk(i, map[string]any{"role": "assistant", "content": ""}, nil); err != nil {
			return err
		}
	}
	b, _ := json.Marshal(map[string]any{"id": s.id, "object": "chat.completion.chunk", "created": s.created, "model": s.model,
		"choices": []map[string]any{{"index": i, "delta": delta, "finish_reason": finish}}})
	if _, err := fmt.Fprintf(s.c.Writer, "data: %s\n\n", b); err != nil {
		return err
	}
	s.c.Writer.Flush()
	return nil
}

func (s *openaiSink) Delta(text string) error { return s.ChoiceDelta(0, text) }

// ChoiceDelta sends a piece of choice i's text.
func (s *openaiSink) ChoiceDelta(i int, text string) error {
	return s.choiceChunk(i, map[string]any{"content": text}, nil)
}

func (s *openaiSink) ToolCall(index int, id, name, args string) error {
	return s.ChoiceToolCall(0, index, id, name, args)
}

// ChoiceToolCall sends a tool_calls delta of choice i: with its id, type and name the first
// time, then only arguments, as OpenAI streams them.
func (s *openaiSink) ChoiceToolCall(i, index int, id, name, args string) error {
	tc := map[string]any{"index": index, "function": map[string]any{"arguments": args}}
	if id != "" || name != "" {
		tc["id"], tc["type"] = id, "function"
		tc["function"] = map[string]any{"name": name, "arguments": args}
	}
	return s.choiceChunk(i, map[string]any{"tool_calls": []any{tc}}, nil)
}

func (s *openaiSink) Done(r *ChatResponse) error {
	s.model = r.Model
	finish := r.FinishReason
	if finish == "" {
		finish = "stop"
	}
	if err := s.chunk(map[string]any{}, finish); err != nil {
		return err
	}
	for i, ch := range r.More {
		f := ch.FinishReason
		if f == "" {
			f = "stop"
		}
		if err := s.choiceChunk(i+1, map[string]any{}, f); err != nil {
			return err
		}
	}
	if s.usage {
		u := r.Usage
		if u == nil {
			u = &Usage{}
		}
		b, _ := json.Marshal(map[string]any{"id": s.id, "object": "chat.completion.chunk", "created": s.created, "model": s.model,
			"choices": []any{}, "usage": openaiUsage(u)})
		if _, err := fmt.Fprintf(s.c.Writer, "data: %s\n\n", b); err != nil {
			return err
		}
	}
	_, err := fmt.Fprint(s.c.Writer, "data: [DONE]\n\n")
	s.c.Writer.Flush()
	return err
}

func (s *openaiSink) fail(err error) {
	if !s.started {
		openaiFail(s.c, err)
		return
	}
	_, body := openaiError(s.c, err)
	b, _ := json.Marshal(body)
	_, _ = fmt.Fprintf(s.c.Writer, "data: %s\n\n", b)
	s.c.Writer.Flush()
}

func (h *handlers) openaiModels(c *gin.Context) {
	ms, err := h.s.Models(c.Request.Context(), caller(c))
	if err != nil {
		openaiFail(c, err)
		return
	}
	data := []gin.H{}
	for _, m := range ms {
		data = append(data, openaiModelObject(m))
	}
	c.JSON(http.StatusOK, gin.H{"object": "list", "data": data})
}

// openaiModel answers OpenAI's model retrieval (GET /models/{model}): a model the project may
// use, or a 404 also for a configured model its policy does not allow (the list and the
// retrieval agree). Only the configured name is shown: never the upstream's model name, URL
// or kind.
func (h *handlers) openaiModel(c *gin.Context) {
	ms, err := h.s.Models(c.Request.Context(), caller(c))
	if err != nil {
		openaiFail(c, err)
		return
	}
	id := c.Param("model")
	if !slices.Contains(ms, id) {
		openaiFail(c, &paramError{param: "model", err: apierr.NotFound("the model %q does not exist or the project's policy does not allow it; GET /openai/models lists them", id)})
		return
	}
	c.JSON(http.StatusOK, openaiModelObject(id))
}

func openaiModelObject(id string) gin.H {
	return gin.H{"id": id, "object": "model", "created": 0, "owned_by": "edgewan"}
}

func openaiUsage(u *Usage) gin.H {
	return gin.H{"prompt_tokens": u.PromptTokens, "completion_tokens": u.CompletionTokens, "total_tokens": u.PromptTokens + u.CompletionTokens}
}
