package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/edgewan/edgewan/aigw/provider"
	"github.com/edgewan/edgewan/coreapi/apierr"
	"github.com/edgewan/edgewan/coreapi/rest"
)

// openaiRequest is a parsed chat completions request: the gateway's chat request and what only
// the OpenAI answer needs.
type openaiRequest struct {
	chat         ChatRequest
	includeUsage bool
}

// paramError is a 400 about one request field, named in OpenAI's error.param.
type paramError struct {
	param string
	err   *apierr.Error
}

func (e *paramError) Error() string { return e.err.Error() }
func (e *paramError) Unwrap() error { return e.err }

func badParam(param, format string, args ...any) error {
	return &paramError{param: param, err: apierr.BadRequest("%s: %s", param, fmt.Sprintf(format, args...))}
}

// The request fields of OpenAI's chat completions API the gateway does not support yet, with
// why; each is refused with a 400 naming it, unless its value is null or the one that means
// "off" (openaiOff).
var openaiRefused = map[string]string{
	"functions":          "functions is deprecated; give tools",
	"function_call":      "function_call is deprecated; give tool_choice",
	"logprobs":           "log probabilities would show the model's tokens before the gateway checks its answer",
	"top_logprobs":       "log probabilities would show the model's tokens before the gateway checks its answer",
	"logit_bias":         "logit_bias is not supported by the gateway yet",
	"audio":              "audio output is not supported by the gateway",
	"modalities":         `only ["text"] is supported`,
	"prediction":         "predicted outputs are not supported by the gateway yet",
	"web_search_options": "web search is not supported by the gateway",
	"metadata":           "stored completions are not supported by the gateway",
	"store":              "stored completions are not supported by the gateway",
	"service_tier":       "service_tier is not supported by the gateway yet",
	"reasoning_effort":   "reasoning_effort is not supported by the gateway yet",
	"verbosity":          "verbosity is not supported by the gateway yet",
	"prompt_cache_key":   "prompt_cache_key is not supported by the gateway yet",
	"safety_identifier":  "safety_identifier is not supported by the gateway yet",
}

// openaiOff are the values of refused fields that ask for nothing: accepted.
var openaiOff = map[string][]string{
	"logprobs":   {"false"},
	"store":      {"false"},
	"modalities": {`["text"]`},
	"functions":  {"[]"},
}

// openaiMessageFields are the message fields the gateway reads; others are refused by name.
var openaiMessageFields = []string{"role", "content", "refusal", "tool_calls", "tool_call_id"}

// openaiUsed are the request fields the gateway uses; others are refused by name.
var openaiUsed = []string{"model", "messages", "stream", "stream_options", "max_tokens", "max_completion_tokens", "temperature",
	"top_p", "stop", "seed", "user", "frequency_penalty", "presence_penalty", "n", "tools", "tool_choice", "parallel_tool_calls", "response_format"}

// parseOpenAIRequest reads a chat completions body. Content-Type is not checked (OpenAI does not
// either); null means absent for optional fields, as in OpenAI's API.
func parseOpenAIRequest(body []byte) (*openaiRequest, error) {
	// UTF-8, one JSON object, no NUL escapes (rest.DecodeBytes checks them all).
	var fields map[string]json.RawMessage
	if err := rest.DecodeBytes(body, &fields); err != nil {
		return nil, err
	}
	names := slices.Sorted(maps.Keys(fields)) // the first problem reported is the same on every try
	out := &openaiRequest{}
	r := &out.chat
	var stream bool
	var streamOpts json.RawMessage
	var maxTokens, maxCompletion *int
	for _, k := range names {
		v := fields[k]
		null := string(v) == "null"
		if why, ok := openaiRefused[k]; ok {
			if null || slices.Contains(openaiOff[k], compact(v)) {
				continue
			}
			return nil, badParam(k, "%s", why)
		}
		if !slices.Contains(openaiUsed, k) {
			return nil, badParam(k, "unknown field %q of the chat completions API", k)
		}
		if null && k != "model" && k != "messages" {
			continue
		}
		var err error
		switch k {
		case "model":
			err = decodeParam(k, v, &r.Model)
		case "messages":
			r.Messages, err = parseOpenAIMessages(v)
		case "stream":
			err = decodeParam(k, v, &stream)
		case "stream_options":
			streamOpts = v
		case "max_tokens":
			err = decodeParam(k, v, &maxTokens)
		case "max_completion_tokens":
			err = decodeParam(k, v, &maxCompletion)
		case "temperature":
			err = decodeParam(k, v, &r.Temperature)
		case "top_p":
			err = decodeParam(k, v, &r.Sampling.TopP)
			if err == nil && (*r.Sampling.TopP < 0 || *r.Sampling.TopP > 1) {
				err = badParam(k, "must be from 0 to 1")
			}
		case "frequency_penalty", "presence_penalty":
			var f *float64
			if err = decodeParam(k, v, &f); err == nil && (*f < -2 || *f > 2) {
				err = badParam(k, "must be from -2 to 2")
			}
			if k == "frequency_penalty" {
				r.Sampling.FrequencyPenalty = f
			} else {
				r.Sampling.PresencePenalty = f
			}
		case "seed":
			err = decodeParam(k, v, &r.Sampling.Seed)
		case "user":
			err = decodeParam(k, v, &r.Sampling.User)
			if err == nil && len(r.Sampling.User) > 256 {
				err = badParam(k, "at most 256 bytes")
			}
		case "stop":
			r.Sampling.Stop, err = parseStop(v)
		case "tools":
			r.Tools, err = parseTools(v)
		case "tool_choice":
			r.ToolChoice, err = parseToolChoice(v)
		case "parallel_tool_calls":
			err = decodeParam(k, v, &r.ParallelToolCalls)
		case "response_format":
			r.ResponseFormat, err = parseResponseFormat(v)
		case "n":
			if err = decodeParam(k, v, &r.Sampling.N); err == nil && (r.Sampling.N < 1 || r.Sampling.N > MaxChoices) {
				err = badParam(k, "must be 1 to %d; got %d", MaxChoices, r.Sampling.N)
			}
		}
		if err != nil {
			return nil, err
		}
	}
	if fields["model"] == nil || r.Model == "" {
		return nil, badParam("model", "is required")
	}
	if fields["messages"] == nil || len(r.Messages) == 0 {
		return nil, badParam("messages", "is required: 1 to 1000 messages")
	}
	if len(r.Tools) == 0 { // OpenAI refuses these without tools too
		switch {
		case r.ToolChoice != nil && string(r.ToolChoice) != `"none"`:
			return nil, badParam("tool_choice", "is only allowed with tools")
		case r.ToolChoice != nil || r.ParallelToolCalls != nil:
			r.ToolChoice, r.ParallelToolCalls = nil, nil // "none" and no tools: nothing asked
		}
		r.Tools = nil
	}
	r.Stream = stream
	if streamOpts != nil {
		if !stream {
			return nil, badParam("stream_options", "is only allowed with \"stream\": true")
		}
		var so struct {
			IncludeUsage *bool `json:"include_usage"`
		}
		if err := rest.DecodeBytes(streamOpts, &so); err != nil {
			return nil, badParam("stream_options", "%s (only include_usage is supported)", apierr.From(err).Message)
		}
		out.includeUsage = so.IncludeUsage != nil && *so.IncludeUsage
	}
	switch {
	case maxTokens != nil && maxCompletion != nil && *maxTokens != *maxCompletion:
		return nil, badParam("max_completion_tokens", "give max_tokens or max_completion_tokens, not both")
	case maxTokens != nil:
		r.MaxTokens = *maxTokens
	case maxCompletion != nil:
		r.MaxTokens = *maxCompletion
	}
	return out, nil
}

func compact(v json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return string(v)
	}
	return b.String()
}

// decodeParam decodes one field's value, naming the field in the error.
func decodeParam(param string, v json.RawMessage, dst any) error {
	if err := rest.DecodeBytes(v, dst); err != nil {
		return badParam(param, "%s", apierr.From(err).Message)
	}
	return nil
}

func parseStop(v json.RawMessage) ([]string, error) {
	var one string
	if json.Unmarshal(v, &one) == nil {
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(v, &many); err != nil || len(many) > 4 {
		return nil, badParam("stop", "must be a string or an array of at most 4 strings")
	}
	return many, nil
}

// parseOpenAIMessages reads messages: role, and content as a string or an array of text parts.
// The other message fields are refused by name.
func parseOpenAIMessages(v json.RawMessage) ([]provider.Message, error) {
	var raw []map[string]json.RawMessage
	if err := json.Unmarshal(v, &raw); err != nil {
		return nil, badParam("messages", "must be an array of message objects")
	}
	out := make([]provider.Message, len(raw))
	for i, m := range raw {
		at := fmt.Sprintf("messages[%d]", i)
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if !slices.Contains(openaiMessageFields, k) {
				return nil, badParam(at+"."+k, "not supported by the gateway (messages take %s)", strings.Join(openaiMessageFields, ", "))
			}
			switch k {
			case "refusal": // SDKs send back the assistant messages they got, with refusal null
				if s := compact(m[k]); s != "null" && s != `""` {
					return nil, badParam(at+".refusal", "a refusal cannot be sent back to a model through the gateway")
				}
			case "tool_calls", "tool_call_id":
			}
		}
		var role string
		if err := decodeParam(at+".role", m["role"], &role); err != nil || role == "" {
			return nil, badParam(at+".role", "is required: system, developer, user or assistant")
		}
		msg := provider.Message{}
		switch role {
		case "developer":
			role = provider.RoleSystem
		case provider.RoleSystem, provider.RoleUser, provider.RoleAssistant:
		case provider.RoleTool:
			if err := decodeParam(at+".tool_call_id", m["tool_call_id"], &msg.ToolCallID); err != nil || msg.ToolCallID == "" {
				return nil, badParam(at+".tool_call_id", "is required for a tool message: the ID of the call it answers")
			}
		case "function":
			return nil, badParam(at+".role", "function messages are deprecated; give tool messages")
		default:
			return nil, badParam(at+".role", "must be system, developer, user, assistant or tool; got %q", role)
		}
		if role != provider.RoleTool && m["tool_call_id"] != nil && string(m["tool_call_id"]) != "null" {
			return nil, badParam(at+".tool_call_id", "only tool messages have one")
		}
		if tcs := m["tool_calls"]; tcs != nil && string(tcs) != "null" {
			if role != provider.RoleAssistant {
				return nil, badParam(at+".tool_calls", "only assistant messages have tool calls")
			}
			var err error
			if msg.ToolCalls, err = parseToolCalls(at+".tool_calls", tcs); err != nil {
				return nil, err
			}
		}
		if role == provider.RoleAssistant && len(msg.ToolCalls) > 0 && (m["content"] == nil || string(m["content"]) == "null") {
			m["content"] = json.RawMessage(`""`) // a call without text
		}
		text, err := openaiContent(at+".content", m["content"])
		if err != nil {
			return nil, err
		}
		msg.Role, msg.Content = role, text
		out[i] = msg
	}
	return out, nil
}

// openaiContent reads a message's content: a string, or an array of text parts (joined).
func openaiContent(at string, v json.RawMessage) (string, error) { return textContent(at, v, "parts") }

// textContent reads content that is a string or an array of {"type": "text", "text"} items
// (OpenAI's parts, Anthropic's blocks), joined; other item types and fields are refused naming
// them, but the fields nullable, which may be null.
func textContent(at string, v json.RawMessage, items string, nullable ...string) (string, error) {
	if v == nil || string(v) == "null" {
		return "", badParam(at, "is required: a string or an array of text %s", items)
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s, nil
	}
	var parts []map[string]json.RawMessage
	if err := json.Unmarshal(v, &parts); err != nil {
		return "", badParam(at, "must be a string or an array of text %s", items)
	}
	var b strings.Builder
	for j, p := range parts {
		pat := fmt.Sprintf("%s[%d]", at, j)
		var typ, text string
		for _, k := range slices.Sorted(maps.Keys(p)) { // the same field named on every try
			var err error
			switch {
			case k == "type":
				err = decodeParam(pat+".type", p[k], &typ)
			case k == "text":
				err = decodeParam(pat+".text", p[k], &text)
			case slices.Contains(nullable, k) && string(p[k]) == "null":
			default:
				err = badParam(pat+"."+k, "not supported (text %s take type and text)", items)
			}
			if err != nil {
				return "", err
			}
		}
		if typ != "text" {
			return "", badParam(pat+".type", "only text %s are supported; got %q", items, typ)
		}
		b.WriteString(text)
	}
	return b.String(), nil
}

// openaiErrorTypes maps a status to OpenAI's error.type.
func openaiErrorType(status int) string {
	switch {
	case status == http.StatusUnauthorized:
		return "authentication_error"
	case status == http.StatusForbidden:
		return "permission_error"
	case status == http.StatusNotFound:
		return "not_found_error"
	case status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case status >= 500:
		return "api_error"
	}
	return "invalid_request_error"
}

// openaiError is the error body with OpenAI's error.type and error.param.
func openaiError(c *gin.Context, err error) (int, rest.ErrorBody) {
	e := apierr.From(err)
	var param string
	if pe := (*paramError)(nil); errors.As(err, &pe) {
		param = pe.param
	}
	return e.Status, rest.ErrorBody{Error: rest.ErrorDetail{Message: e.Message, Type: openaiErrorType(e.Status), Param: param, Code: e.Code,
		RequestID: rest.GetRequestID(c)}}
}

// openaiFail answers an error in OpenAI's shape (a 5xx is logged as rest.Fail logs it).
func openaiFail(c *gin.Context, err error) {
	status, body := openaiError(c, err)
	if status >= 500 { // a bug or an outage: logged, as rest.Fail does
		slog.Error("request failed", "request_id", rest.GetRequestID(c), "method", c.Request.Method, "path", c.FullPath(), "err", err)
	}
	c.AbortWithStatusJSON(status, body)
}

// maxTools bounds the tools of a request (OpenAI's own limit).
const maxTools = 128

// parseTools checks tools: function tools {type: "function", function: {name, description?,
// parameters?, strict?}}; they are passed to the model as sent. Their descriptions and schemas
// are the application's, not user data, and are not redacted.
func parseTools(v json.RawMessage) (json.RawMessage, error) {
	var tools []struct {
		Type     string `json:"type"`
		Function *struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
			Strict      *bool           `json:"strict"`
		} `json:"function"`
	}
	if err := decodeParam("tools", v, &tools); err != nil {
		return nil, err
	}
	if len(tools) > maxTools {
		return nil, badParam("tools", "at most %d tools", maxTools)
	}
	for i, t := range tools {
		at := fmt.Sprintf("tools[%d]", i)
		switch {
		case t.Type != "function":
			return nil, badParam(at+".type", "only function tools are supported; got %q", t.Type)
		case t.Function == nil || t.Function.Name == "":
			return nil, badParam(at+".function.name", "is required")
		case t.Function.Parameters != nil && string(t.Function.Parameters) != "null" && bytes.TrimSpace(t.Function.Parameters)[0] != '{':
			return nil, badParam(at+".function.parameters", "must be a JSON Schema object")
		}
	}
	if len(tools) == 0 {
		return nil, nil
	}
	return v, nil
}

// parseToolChoice checks tool_choice: "none", "auto", "required" or
// {"type": "function", "function": {"name"}}.
func parseToolChoice(v json.RawMessage) (json.RawMessage, error) {
	var s string
	if json.Unmarshal(v, &s) == nil {
		if s != "none" && s != "auto" && s != "required" {
			return nil, badParam("tool_choice", `must be "none", "auto", "required" or a function; got %q`, s)
		}
		return v, nil
	}
	var f struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := decodeParam("tool_choice", v, &f); err != nil {
		return nil, err
	}
	if f.Type != "function" || f.Function.Name == "" {
		return nil, badParam("tool_choice", `an object must be {"type": "function", "function": {"name": ...}}`)
	}
	return v, nil
}

// parseToolCalls reads an assistant message's tool calls: their arguments are checked and
// redacted as the message's text is.
func parseToolCalls(at string, v json.RawMessage) ([]provider.ToolCall, error) {
	var calls []provider.ToolCall
	if err := decodeParam(at, v, &calls); err != nil {
		return nil, err
	}
	if len(calls) > maxTools {
		return nil, badParam(at, "at most %d tool calls", maxTools)
	}
	for j, tc := range calls {
		switch {
		case tc.ID == "":
			return nil, badParam(fmt.Sprintf("%s[%d].id", at, j), "is required")
		case tc.Type != "function":
			return nil, badParam(fmt.Sprintf("%s[%d].type", at, j), `must be "function"`)
		case tc.Function.Name == "":
			return nil, badParam(fmt.Sprintf("%s[%d].function.name", at, j), "is required")
		}
	}
	return calls, nil
}

// parseResponseFormat checks response_format: {"type": "text"} (the default: nothing to pass),
// {"type": "json_object"} or {"type": "json_schema", "json_schema": {name, description?,
// schema?, strict?}}. The model's JSON answer is checked as any answer: placeholders and
// masks contain no quotes or backslashes, so a JSON answer stays JSON.
func parseResponseFormat(v json.RawMessage) (json.RawMessage, error) {
	var f struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Schema      json.RawMessage `json:"schema"`
			Strict      *bool           `json:"strict"`
		} `json:"json_schema"`
	}
	if err := decodeParam("response_format", v, &f); err != nil {
		return nil, err
	}
	switch {
	case f.Type == "text" && f.JSONSchema == nil:
		return nil, nil
	case f.Type == "json_object" && f.JSONSchema == nil:
	case f.Type == "json_schema" && f.JSONSchema != nil && f.JSONSchema.Name != "":
		if sc := bytes.TrimSpace(f.JSONSchema.Schema); len(sc) > 0 && string(sc) != "null" && sc[0] != '{' {
			return nil, badParam("response_format.json_schema.schema", "must be a JSON Schema object")
		}
	case f.Type == "json_schema":
		return nil, badParam("response_format.json_schema.name", "is required")
	default:
		return nil, badParam("response_format.type", `must be "text", "json_object" or "json_schema" (with json_schema only for the last)`)
	}
	return v, nil
}
