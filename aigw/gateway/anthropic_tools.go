package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/edgewan/edgewan/aigw/provider"
	"github.com/edgewan/edgewan/coreapi/apierr"
)

// Tool use on the Anthropic-compatible endpoint. The gateway's own form of tools is OpenAI's
// (provider.Request), so the Messages API's shapes are translated both ways: tools and
// tool_choice into OpenAI's, tool_use blocks into tool calls, tool_result blocks into tool
// messages, and the model's tool calls back into tool_use blocks. Tool inputs and results are
// checked and redacted like any other text (Service.prepare, the answer's checks).

// anthropicTools translates the tools field: custom tools ({name, description?, input_schema,
// type?: "custom"}) become OpenAI function tools; server tools (web search, code execution,
// ...) are refused naming them.
func anthropicTools(v json.RawMessage) (json.RawMessage, error) {
	var tools []map[string]json.RawMessage
	if err := json.Unmarshal(v, &tools); err != nil {
		return nil, badParam("tools", "must be an array of tool objects")
	}
	if len(tools) > 128 {
		return nil, badParam("tools", "at most 128 tools")
	}
	out := make([]map[string]any, 0, len(tools))
	for i, t := range tools {
		at := fmt.Sprintf("tools[%d]", i)
		var name, desc, typ string
		var schema json.RawMessage
		for _, k := range slices.Sorted(maps.Keys(t)) {
			var err error
			switch k {
			case "name":
				err = decodeParam(at+".name", t[k], &name)
			case "description":
				err = decodeParam(at+".description", t[k], &desc)
			case "type":
				err = decodeParam(at+".type", t[k], &typ)
			case "input_schema":
				if !isJSONObject(t[k]) {
					err = badParam(at+".input_schema", "must be a JSON Schema object")
				}
				schema = t[k]
			case "cache_control":
				if string(t[k]) != "null" {
					err = badParam(at+".cache_control", "prompt caching is not supported by the gateway")
				}
			default:
				err = badParam(at+"."+k, "not supported (custom tools take name, description and input_schema)")
			}
			if err != nil {
				return nil, err
			}
		}
		switch {
		case typ != "" && typ != "custom":
			return nil, badParam(at+".type", "server tools (%q) are not supported by the gateway; only custom tools", typ)
		case name == "":
			return nil, badParam(at+".name", "is required")
		case schema == nil:
			return nil, badParam(at+".input_schema", "is required")
		}
		fn := map[string]any{"name": name, "parameters": schema}
		if desc != "" {
			fn["description"] = desc
		}
		out = append(out, map[string]any{"type": "function", "function": fn})
	}
	if len(out) == 0 {
		return nil, nil // as if left out
	}
	return json.Marshal(out)
}

// anthropicToolChoice translates tool_choice ({type: auto|any|tool|none, name?,
// disable_parallel_tool_use?}) into OpenAI's tool_choice and parallel_tool_calls.
func anthropicToolChoice(v json.RawMessage) (json.RawMessage, *bool, error) {
	var c struct {
		Type                   string `json:"type"`
		Name                   string `json:"name"`
		DisableParallelToolUse *bool  `json:"disable_parallel_tool_use"`
	}
	if err := decodeParam("tool_choice", v, &c); err != nil {
		return nil, nil, err
	}
	var parallel *bool
	if c.DisableParallelToolUse != nil {
		p := !*c.DisableParallelToolUse
		parallel = &p
	}
	if c.Name != "" && c.Type != "tool" {
		return nil, nil, badParam("tool_choice.name", "only with type tool")
	}
	var choice any
	switch c.Type {
	case "auto":
		choice = "auto"
	case "any":
		choice = "required"
	case "none":
		choice = "none"
	case "tool":
		if c.Name == "" {
			return nil, nil, badParam("tool_choice.name", "is required with type tool")
		}
		choice = map[string]any{"type": "function", "function": map[string]string{"name": c.Name}}
	default:
		return nil, nil, badParam("tool_choice.type", "must be auto, any, tool or none; got %q", c.Type)
	}
	b, _ := json.Marshal(choice)
	return b, parallel, nil
}

func isJSONObject(v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	return len(v) > 0 && v[0] == '{' && json.Valid(v)
}

// parseAnthropicMessages reads the messages: content a string or an array of blocks, text
// (both roles), tool_use (assistant) and tool_result (user). A user message's tool results
// become tool messages, in order, before the message's text (the Messages API puts them
// first).
func parseAnthropicMessages(v json.RawMessage) ([]provider.Message, error) {
	var raw []map[string]json.RawMessage
	if err := json.Unmarshal(v, &raw); err != nil {
		return nil, badParam("messages", "must be an array of message objects")
	}
	out := make([]provider.Message, 0, len(raw))
	for i, m := range raw {
		at := fmt.Sprintf("messages[%d]", i)
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if k != "role" && k != "content" {
				return nil, badParam(at+"."+k, "not supported (messages take role and content)")
			}
		}
		var role string
		if err := decodeParam(at+".role", m["role"], &role); err != nil || (role != provider.RoleUser && role != provider.RoleAssistant) {
			return nil, badParam(at+".role", "must be user or assistant")
		}
		msgs, err := anthropicContent(at+".content", role, m["content"])
		if err != nil {
			return nil, err
		}
		out = append(out, msgs...)
	}
	return out, nil
}

// anthropicContent turns one message's content into the gateway's messages.
func anthropicContent(at, role string, v json.RawMessage) ([]provider.Message, error) {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return []provider.Message{{Role: role, Content: s}}, nil
	}
	var blocks []map[string]json.RawMessage
	if err := json.Unmarshal(v, &blocks); err != nil {
		return anthropicTextOnly(at, role, v) // the usual error for a missing or bad content
	}
	var text strings.Builder
	var calls []provider.ToolCall
	var results []provider.Message
	for j, b := range blocks {
		bat := fmt.Sprintf("%s[%d]", at, j)
		var typ string
		if err := decodeParam(bat+".type", b["type"], &typ); err != nil {
			return nil, err
		}
		switch {
		case typ == "tool_use" && role == provider.RoleAssistant:
			tc, err := anthropicToolUse(bat, b)
			if err != nil {
				return nil, err
			}
			calls = append(calls, tc)
		case typ == "tool_result" && role == provider.RoleUser:
			r, err := anthropicToolResult(bat, b)
			if err != nil {
				return nil, err
			}
			results = append(results, r)
		case typ == "tool_use" || typ == "tool_result":
			return nil, badParam(bat+".type", "%s blocks belong in %s messages", typ, map[string]string{"tool_use": "assistant", "tool_result": "user"}[typ])
		default:
			one, _ := json.Marshal([]map[string]json.RawMessage{b})
			t, err := anthropicText(bat, one)
			if err != nil {
				return nil, err
			}
			text.WriteString(t)
		}
	}
	out := results
	if text.Len() > 0 || len(calls) > 0 || len(results) == 0 {
		out = append(out, provider.Message{Role: role, Content: text.String(), ToolCalls: calls})
	}
	return out, nil
}

func anthropicTextOnly(at, role string, v json.RawMessage) ([]provider.Message, error) {
	t, err := anthropicText(at, v)
	if err != nil {
		return nil, err
	}
	return []provider.Message{{Role: role, Content: t}}, nil
}

// anthropicToolUse reads a tool_use block {id, name, input} sent back by the application.
func anthropicToolUse(at string, b map[string]json.RawMessage) (provider.ToolCall, error) {
	var tc provider.ToolCall
	for _, k := range slices.Sorted(maps.Keys(b)) {
		var err error
		switch k {
		case "type":
		case "id":
			err = decodeParam(at+".id", b[k], &tc.ID)
		case "name":
			err = decodeParam(at+".name", b[k], &tc.Function.Name)
		case "input":
			if !isJSONObject(b[k]) {
				err = badParam(at+".input", "must be an object")
			}
			var c bytes.Buffer
			if err == nil {
				_ = json.Compact(&c, b[k])
				tc.Function.Arguments = c.String()
			}
		case "cache_control":
			if string(b[k]) != "null" {
				err = badParam(at+".cache_control", "prompt caching is not supported by the gateway")
			}
		default:
			err = badParam(at+"."+k, "not supported (tool_use blocks take id, name and input)")
		}
		if err != nil {
			return tc, err
		}
	}
	if tc.ID == "" || tc.Function.Name == "" || tc.Function.Arguments == "" {
		return tc, badParam(at, "a tool_use block needs id, name and input")
	}
	tc.Type = "function"
	return tc, nil
}

// anthropicToolResult reads a tool_result block {tool_use_id, content?, is_error?}. The
// gateway's tool messages have no error flag: an error result's text is prefixed with
// "Error: " so the model still learns the tool failed.
func anthropicToolResult(at string, b map[string]json.RawMessage) (provider.Message, error) {
	m := provider.Message{Role: provider.RoleTool}
	isError := false
	for _, k := range slices.Sorted(maps.Keys(b)) {
		var err error
		switch k {
		case "type":
		case "tool_use_id":
			err = decodeParam(at+".tool_use_id", b[k], &m.ToolCallID)
		case "content":
			if string(b[k]) != "null" {
				m.Content, err = anthropicText(at+".content", b[k])
			}
		case "is_error":
			if string(b[k]) != "null" {
				err = decodeParam(at+".is_error", b[k], &isError)
			}
		case "cache_control":
			if string(b[k]) != "null" {
				err = badParam(at+".cache_control", "prompt caching is not supported by the gateway")
			}
		default:
			err = badParam(at+"."+k, "not supported (tool_result blocks take tool_use_id, content and is_error)")
		}
		if err != nil {
			return m, err
		}
	}
	if m.ToolCallID == "" {
		return m, badParam(at+".tool_use_id", "is required")
	}
	if isError {
		m.Content = "Error: " + m.Content
	}
	return m, nil
}

// anthropicBlocks renders an answer as content blocks: its text (also when empty, if there
// is nothing else), then a tool_use block per tool call. Arguments that are not a JSON object
// cannot be a tool_use input: the answer is refused (502) rather than altered.
func anthropicBlocks(text string, calls []provider.ToolCall) ([]map[string]any, error) {
	var out []map[string]any
	if text != "" || len(calls) == 0 {
		out = append(out, map[string]any{"type": "text", "text": text})
	}
	for _, tc := range calls {
		args := json.RawMessage(tc.Function.Arguments)
		if strings.TrimSpace(tc.Function.Arguments) == "" {
			args = json.RawMessage("{}")
		}
		if !isJSONObject(args) {
			return nil, apierr.New(http.StatusBadGateway, apierr.CodeUpstream, "the model's call of tool %q has arguments that are not a JSON object", tc.Function.Name)
		}
		out = append(out, map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Function.Name, "input": args})
	}
	return out, nil
}
