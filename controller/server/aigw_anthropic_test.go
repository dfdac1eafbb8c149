package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"

	"github.com/edgewan/edgewan/aigw/provider/providertest"
)

// TestAIGWAnthropicSDK: the official Anthropic Go SDK pointed at the gateway's Messages-compatible
// endpoint: plain and streamed answers redacted (values split across stream chunks too), the
// prompt redacted before the model sees it, the system prompt passed, errors in the Messages
// API's shape, unsupported fields refused by name.
func TestAIGWAnthropicSDK(t *testing.T) {
	e := agStart(t, false, nil)
	ctx := context.Background()
	client := anthropic.NewClient(aoption.WithBaseURL(e.URL+"/ai-gateway/v1/anthropic/"), aoption.WithAuthToken(e.tok),
		aoption.WithAPIKey(""), aoption.WithHTTPClient(e.Client), aoption.WithMaxRetries(0))
	params := anthropic.MessageNewParams{
		Model: "claude", MaxTokens: 200,
		System:   []anthropic.TextBlockParam{{Text: "Be brief."}},
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("My mail is jane.roe@example.com, who has my ticket?"))},
	}
	const answer = "Your ticket is with ops.lead@corp-example.com, card 4111 1111 1111 1111 on file."
	const want = "Your ticket is with [EMAIL_2], card **** **** **** 1111 on file."

	t.Run("plain", func(t *testing.T) {
		e.ant.Queue(providertest.Reply{Content: answer})
		msg, err := client.Messages.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		if len(msg.Content) != 1 || msg.Content[0].Text != want || msg.StopReason != "end_turn" || msg.Usage.OutputTokens == 0 {
			t.Fatalf("got %s", msg.RawJSON())
		}
		last := e.ant.Requests()[len(e.ant.Requests())-1]
		if last.System != "Be brief." || last.LastUser() != "My mail is [EMAIL_1], who has my ticket?" || last.MaxTokens != 200 {
			t.Fatalf("the model got system %q, %q, max_tokens %d", last.System, last.LastUser(), last.MaxTokens)
		}
	})

	t.Run("streamed, values split across chunks", func(t *testing.T) {
		p := params
		p.Model = "gpt" // any configured model: the endpoint is the Messages API's shape, not the upstream's
		e.oai.Queue(providertest.Reply{Content: answer, Chunks: []string{"Your ticket is with ops.le", "ad@corp-exa", "mple.com, card 4111 11", "11 1111 1111 on file."}})
		stream := client.Messages.NewStreaming(ctx, p)
		var msg anthropic.Message
		var raw strings.Builder
		for stream.Next() {
			ev := stream.Current()
			raw.WriteString(ev.RawJSON())
			if err := msg.Accumulate(ev); err != nil {
				t.Fatal(err)
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		for _, leak := range []string{"ops.lead", "corp-example", "4111 1111", "1111 1111 1111"} {
			if strings.Contains(raw.String(), leak) {
				t.Errorf("the stream leaks %q: %s", leak, raw.String())
			}
		}
		if len(msg.Content) != 1 || msg.Content[0].Text != want || msg.StopReason != "end_turn" {
			t.Fatalf("accumulated %+v; want %q", msg, want)
		}
	})

	t.Run("errors", func(t *testing.T) {
		blocked := params
		blocked.Messages = []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(agInjection))}
		tools := params
		tools.Tools = []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "lookup", InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{}}}}}
		topK := params
		topK.TopK = anthropic.Int(5)
		for name, tc := range map[string]struct {
			p      anthropic.MessageNewParams
			status int
			typ    string
			in     string
		}{
			"block rule":                     {blocked, 422, "invalid_request_error", "prompt_injection"},
			"tools, to a model without them": {tools, 400, "invalid_request_error", "does not support tools"},
			"top_k":                          {topK, 400, "invalid_request_error", "top_k"},
		} {
			var apiErr *anthropic.Error
			_, err := client.Messages.New(ctx, tc.p)
			if !errors.As(err, &apiErr) || apiErr.StatusCode != tc.status || !strings.Contains(apiErr.RawJSON(), `"type":"`+tc.typ+`"`) || !strings.Contains(apiErr.RawJSON(), tc.in) {
				t.Errorf("%s: got %v; want %d %s mentioning %s", name, err, tc.status, tc.typ, tc.in)
			}
		}
	})
}

// TestAIGWAnthropicTools: tool use through the Messages-compatible endpoint with the official
// Anthropic SDK (an OpenAI-compatible model behind it): tools and tool_choice reach the model,
// the model's calls come back as tool_use blocks with their input checked, plain and streamed
// as input_json_delta (values split across deltas never escape), and tool_use and tool_result
// blocks sent back are redacted before the model sees them.
func TestAIGWAnthropicTools(t *testing.T) {
	e := agStart(t, false, nil)
	ctx := context.Background()
	client := anthropic.NewClient(aoption.WithBaseURL(e.URL+"/ai-gateway/v1/anthropic/"), aoption.WithAuthToken(e.tok),
		aoption.WithAPIKey(""), aoption.WithHTTPClient(e.Client), aoption.WithMaxRetries(0))
	params := anthropic.MessageNewParams{
		Model: "gpt", MaxTokens: 200,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Charge my card for the order, please."))},
		Tools: []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "charge", Description: anthropic.String("Charge a card"),
			InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"card": map[string]any{"type": "string"}}}}}},
		ToolChoice: anthropic.ToolChoiceUnionParam{OfAny: &anthropic.ToolChoiceAnyParam{DisableParallelToolUse: anthropic.Bool(true)}},
	}
	args := `{"card": "4111 1111 1111 1111", "note": "SSN: 536-22-8726, mail jane.roe@example.com", "token": "ghp_abcdefghijklmnopqrstuvwxyz0123456789"}`
	checkInput := func(what string, in json.RawMessage) {
		t.Helper()
		agLeak(t, what, string(in))
		var m map[string]string
		if err := json.Unmarshal(in, &m); err != nil || m["card"] != "**** **** **** 1111" || !strings.Contains(m["note"], "[EMAIL_1]") {
			t.Errorf("%s: input %s (%v); want a JSON object with the card masked and the address redacted", what, in, err)
		}
	}

	t.Run("plain", func(t *testing.T) {
		e.oai.Queue(providertest.Reply{Content: "Charging.", ToolCalls: []providertest.ToolCall{{ID: "call_1", Name: "charge", Arguments: args}}})
		msg, err := client.Messages.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		last := e.oai.Requests()[len(e.oai.Requests())-1]
		var tools []struct {
			Type     string
			Function struct {
				Name, Description string
				Parameters        map[string]any
			}
		}
		if err := json.Unmarshal(last.Tools, &tools); err != nil || len(tools) != 1 || tools[0].Type != "function" || tools[0].Function.Name != "charge" ||
			tools[0].Function.Description != "Charge a card" || tools[0].Function.Parameters["type"] != "object" {
			t.Errorf("the model got tools %s (%v); want the tool in OpenAI's shape", last.Tools, err)
		}
		if string(last.ToolChoice) != `"required"` || !strings.Contains(string(last.Body), `"parallel_tool_calls":false`) {
			t.Errorf("the model got tool_choice %s, body %s; want required, parallel_tool_calls false", last.ToolChoice, last.Body)
		}
		if msg.StopReason != "tool_use" || len(msg.Content) != 2 || msg.Content[0].Text != "Charging." || msg.Content[1].Type != "tool_use" ||
			msg.Content[1].ID != "call_1" || msg.Content[1].Name != "charge" {
			t.Fatalf("got %s", msg.RawJSON())
		}
		checkInput("the tool_use input", msg.Content[1].Input)
	})

	t.Run("streamed, values split across input_json_delta", func(t *testing.T) {
		for _, n := range []int{1, 3, 7} {
			var pieces []string
			for s := args; s != ""; {
				k := min(n, len(s))
				pieces, s = append(pieces, s[:k]), s[k:]
			}
			e.oai.Queue(providertest.Reply{Chunks: []string{"Charging ", "now."}, ToolCalls: []providertest.ToolCall{{ID: "call_2", Name: "charge", ArgChunks: pieces}}})
			stream := client.Messages.NewStreaming(ctx, params)
			var msg anthropic.Message
			var raw strings.Builder
			for stream.Next() {
				ev := stream.Current()
				raw.WriteString(ev.RawJSON())
				if err := msg.Accumulate(ev); err != nil {
					t.Fatal(err)
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			agLeak(t, "the stream", raw.String())
			if !strings.Contains(raw.String(), "input_json_delta") || msg.StopReason != "tool_use" || len(msg.Content) != 2 ||
				msg.Content[0].Text != "Charging now." || msg.Content[1].ID != "call_2" {
				t.Fatalf("%d-byte deltas: accumulated %+v from %s", n, msg.Content, raw.String())
			}
			checkInput(fmt.Sprintf("%d-byte deltas", n), msg.Content[1].Input)
		}
	})

	t.Run("tool_use and tool_result sent back are checked and redacted", func(t *testing.T) {
		conversation := func(input map[string]any) anthropic.MessageNewParams {
			p := params
			p.Messages = []anthropic.MessageParam{
				anthropic.NewUserMessage(anthropic.NewTextBlock("Charge my card.")),
				anthropic.NewAssistantMessage(anthropic.NewTextBlock("Charging."), anthropic.NewToolUseBlock("call_3", input, "charge")),
				anthropic.NewUserMessage(anthropic.NewToolResultBlock("call_3", "charged 4111 1111 1111 1111 for jane.roe@example.com", false),
					anthropic.NewTextBlock("Thanks!")),
			}
			return p
		}
		n := len(e.oai.Requests())
		var apiErr *anthropic.Error
		_, err := client.Messages.New(ctx, conversation(map[string]any{"token": "ghp_abcdefghijklmnopqrstuvwxyz0123456789"}))
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 422 || !strings.Contains(apiErr.RawJSON(), "entities.secret (entity, input[1].tool_calls[0])") || len(e.oai.Requests()) != n {
			t.Fatalf("a secret in a tool_use input: %v; want 422 naming the rule and where, and no model call", err)
		}
		if _, err := client.Messages.New(ctx, conversation(map[string]any{"card": "4111 1111 1111 1111", "note": "SSN: 536-22-8726"})); err != nil {
			t.Fatal(err)
		}
		last := e.oai.Requests()[len(e.oai.Requests())-1]
		m := last.Messages
		if len(m) != 4 || m[1].Role != "assistant" || m[1].Content != "Charging." || len(m[1].ToolCalls) != 1 || m[1].ToolCalls[0].ID != "call_3" ||
			m[2].Role != "tool" || m[2].ToolCallID != "call_3" || m[3].Role != "user" || m[3].Content != "Thanks!" {
			t.Fatalf("the model got %+v; want user, assistant with the call, the tool result, user", m)
		}
		agLeak(t, "the tool_use input sent to the model", m[1].ToolCalls[0].Arguments)
		agLeak(t, "the tool result sent to the model", m[2].Content)
		if !json.Valid([]byte(m[1].ToolCalls[0].Arguments)) {
			t.Errorf("the model got arguments that are not JSON: %s", m[1].ToolCalls[0].Arguments)
		}
	})

	t.Run("refused", func(t *testing.T) {
		server := params
		server.Tools = []anthropic.ToolUnionParam{{OfWebSearchTool20250305: &anthropic.WebSearchTool20250305Param{}}}
		var apiErr *anthropic.Error
		if _, err := client.Messages.New(ctx, server); !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.RawJSON(), "tools[0]") {
			t.Errorf("a server tool: %v; want a 400 naming tools[0]", err)
		}
	})
}
