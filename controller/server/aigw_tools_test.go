package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"
	"github.com/openai/openai-go/shared"

	"github.com/edgewan/edgewan/aigw/provider/providertest"
)

// The sensitive values the tool tests put in tool calls and results, with pieces of them that
// must never reach the caller (or the model) either.
var agToolLeaks = []string{
	"4111 1111 1111 1111", "1111 1111 1111", "536-22-8726", "22-8726", "jane.roe@example.com", "jane.roe",
	"ghp_abcdefghijklmnopqrstuvwxyz0123456789", "abcdefghijklmnopqrstuvwxyz0123456789",
}

func agLeak(t *testing.T, what, text string) {
	t.Helper()
	for _, l := range agToolLeaks {
		if strings.Contains(text, l) {
			t.Errorf("%s leaks %q: %s", what, l, text)
		}
	}
}

// TestAIGWOpenAITools: function calling through the gateway with the official OpenAI SDK, plain
// and streamed: tool definitions reach the model, tool calls come back with their arguments
// checked (also when a card, an SSN or a secret is split across argument deltas), and tool
// calls and tool results sent back are redacted before the model sees them.
func TestAIGWOpenAITools(t *testing.T) {
	e := agStart(t, false, nil)
	ctx := context.Background()
	client := openai.NewClient(option.WithBaseURL(e.URL+"/ai-gateway/v1/openai/"), option.WithAPIKey(e.tok),
		option.WithHTTPClient(e.Client), option.WithMaxRetries(0))
	tools := []openai.ChatCompletionToolParam{{Function: shared.FunctionDefinitionParam{
		Name: "charge", Description: openai.String("Charge a card"),
		Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"card": map[string]any{"type": "string"}}},
	}}}
	params := openai.ChatCompletionNewParams{
		Model:    "gpt",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Charge my card for the order, please.")},
		Tools:    tools,
	}
	args := `{"card": "4111 1111 1111 1111", "note": "SSN: 536-22-8726, mail jane.roe@example.com", "token": "ghp_abcdefghijklmnopqrstuvwxyz0123456789"}`

	t.Run("plain", func(t *testing.T) {
		e.oai.Queue(providertest.Reply{ToolCalls: []providertest.ToolCall{{ID: "call_1", Name: "charge", Arguments: args}}})
		resp, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		last := e.oai.Requests()[len(e.oai.Requests())-1]
		if !strings.Contains(string(last.Tools), `"charge"`) || !strings.Contains(string(last.Tools), `"Charge a card"`) {
			t.Errorf("the model got tools %s", last.Tools)
		}
		c := resp.Choices[0]
		if c.FinishReason != "tool_calls" || len(c.Message.ToolCalls) != 1 || c.Message.ToolCalls[0].ID != "call_1" || c.Message.ToolCalls[0].Function.Name != "charge" {
			t.Fatalf("got %s", resp.RawJSON())
		}
		got := c.Message.ToolCalls[0].Function.Arguments
		agLeak(t, "the tool call's arguments", got)
		if !json.Valid([]byte(got)) || !strings.Contains(got, "**** **** **** 1111") {
			t.Errorf("arguments %s: want valid JSON with the card masked", got)
		}
	})

	t.Run("streamed, values split across argument deltas", func(t *testing.T) {
		for _, n := range []int{1, 3, 7} {
			var pieces []string
			for s := args; s != ""; {
				k := min(n, len(s))
				pieces, s = append(pieces, s[:k]), s[k:]
			}
			e.oai.Queue(providertest.Reply{Chunks: []string{"Charging ", "now."}, ToolCalls: []providertest.ToolCall{{ID: "call_2", Name: "charge", ArgChunks: pieces}}})
			stream := client.Chat.Completions.NewStreaming(ctx, params)
			var acc openai.ChatCompletionAccumulator
			var raw strings.Builder
			for stream.Next() {
				ch := stream.Current()
				acc.AddChunk(ch)
				raw.WriteString(ch.RawJSON())
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			agLeak(t, "the stream", raw.String())
			c := acc.Choices[0]
			if c.FinishReason != "tool_calls" || c.Message.Content != "Charging now." || len(c.Message.ToolCalls) != 1 || c.Message.ToolCalls[0].ID != "call_2" {
				t.Fatalf("%d-byte deltas: accumulated %+v", n, c)
			}
			if got := c.Message.ToolCalls[0].Function.Arguments; !json.Valid([]byte(got)) || !strings.Contains(got, "**** **** **** 1111") {
				t.Errorf("%d-byte deltas: arguments %s; want valid JSON with the card masked", n, got)
			}
		}
	})

	t.Run("tool calls and results sent back are checked and redacted", func(t *testing.T) {
		conversation := func(args string) openai.ChatCompletionNewParams {
			p := params
			p.Messages = []openai.ChatCompletionMessageParamUnion{
				openai.UserMessage("Charge my card."),
				{OfAssistant: &openai.ChatCompletionAssistantMessageParam{ToolCalls: []openai.ChatCompletionMessageToolCallParam{{
					ID: "call_3", Function: openai.ChatCompletionMessageToolCallFunctionParam{Name: "charge", Arguments: args}}}}},
				openai.ToolMessage("charged 4111 1111 1111 1111 for jane.roe@example.com", "call_3"),
			}
			return p
		}
		// A secret in a tool call sent back is refused, as in any message (the default policy).
		n := len(e.oai.Requests())
		var apiErr *openai.Error
		if _, err := client.Chat.Completions.New(ctx, conversation(args)); !errors.As(err, &apiErr) || apiErr.StatusCode != 422 ||
			!strings.Contains(apiErr.Message, "entities.secret (entity, input[1].tool_calls[0])") || len(e.oai.Requests()) != n {
			t.Fatalf("a secret in a tool call: %v; want 422 naming the rule and where, and no model call", err)
		}
		noSecret := `{"card": "4111 1111 1111 1111", "note": "SSN: 536-22-8726, mail jane.roe@example.com"}`
		if _, err := client.Chat.Completions.New(ctx, conversation(noSecret)); err != nil {
			t.Fatal(err)
		}
		last := e.oai.Requests()[len(e.oai.Requests())-1]
		if len(last.Messages) != 3 || len(last.Messages[1].ToolCalls) != 1 || last.Messages[2].ToolCallID != "call_3" || last.Messages[2].Role != "tool" {
			t.Fatalf("the model got %+v", last.Messages)
		}
		agLeak(t, "the tool call sent to the model", last.Messages[1].ToolCalls[0].Arguments)
		agLeak(t, "the tool result sent to the model", last.Messages[2].Content)
		if !json.Valid([]byte(last.Messages[1].ToolCalls[0].Arguments)) {
			t.Errorf("the model got arguments that are not JSON: %s", last.Messages[1].ToolCalls[0].Arguments)
		}
	})

	t.Run("a model without tools refuses them", func(t *testing.T) {
		p := params
		p.Model = "claude"
		var apiErr *openai.Error
		if _, err := client.Chat.Completions.New(ctx, p); !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.Message, "tools") {
			t.Fatalf("tools to an Anthropic model: %v; want a 400 about tools", err)
		}
	})
}

// TestAIGWOpenAIJSONSchema: structured outputs through the gateway with the OpenAI SDK: the
// response_format reaches the model, and the JSON answer comes back redacted and still JSON,
// plain and streamed.
func TestAIGWOpenAIJSONSchema(t *testing.T) {
	e := agStart(t, false, nil)
	ctx := context.Background()
	client := openai.NewClient(option.WithBaseURL(e.URL+"/ai-gateway/v1/openai/"), option.WithAPIKey(e.tok),
		option.WithHTTPClient(e.Client), option.WithMaxRetries(0))
	params := openai.ChatCompletionNewParams{
		Model:    "gpt",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Extract the customer.")},
		ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "customer", Strict: openai.Bool(true),
				Schema: map[string]any{"type": "object", "properties": map[string]any{"email": map[string]any{"type": "string"}}}},
		}},
	}
	answer := `{"email": "jane.roe@example.com", "card": "4111 1111 1111 1111", "note": "SSN: 536-22-8726"}`
	check := func(t *testing.T, got string) {
		t.Helper()
		agLeak(t, "the JSON answer", got)
		var v map[string]string
		if err := json.Unmarshal([]byte(got), &v); err != nil || v["card"] != "**** **** **** 1111" || !strings.HasPrefix(v["email"], "[EMAIL_") {
			t.Errorf("answer %s (%v): want JSON with the values redacted", got, err)
		}
	}
	t.Run("plain", func(t *testing.T) {
		e.oai.Queue(providertest.Reply{Content: answer})
		resp, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		last := e.oai.Requests()[len(e.oai.Requests())-1]
		if !strings.Contains(string(last.ResponseFormat), `"json_schema"`) || !strings.Contains(string(last.ResponseFormat), `"customer"`) {
			t.Errorf("the model got response_format %s", last.ResponseFormat)
		}
		check(t, resp.Choices[0].Message.Content)
	})
	t.Run("streamed", func(t *testing.T) {
		var pieces []string
		for s := answer; s != ""; {
			k := min(5, len(s))
			pieces, s = append(pieces, s[:k]), s[k:]
		}
		e.oai.Queue(providertest.Reply{Chunks: pieces})
		stream := client.Chat.Completions.NewStreaming(ctx, params)
		var acc openai.ChatCompletionAccumulator
		for stream.Next() {
			acc.AddChunk(stream.Current())
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		check(t, acc.Choices[0].Message.Content)
	})
	t.Run("a model without structured outputs refuses it", func(t *testing.T) {
		p := params
		p.Model = "claude"
		var apiErr *openai.Error
		if _, err := client.Chat.Completions.New(ctx, p); !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.Message, "response_format") {
			t.Fatalf("response_format to an Anthropic model: %v; want a 400 naming it", err)
		}
	})
}

// TestAIGWOpenAIEmbeddings: the embeddings endpoint with the OpenAI SDK: inputs are redacted
// before the model embeds them, the vectors come back in order, a secret is refused, and a
// model that does not embed says so.
func TestAIGWOpenAIEmbeddings(t *testing.T) {
	e := agStart(t, false, nil)
	ctx := context.Background()
	client := openai.NewClient(option.WithBaseURL(e.URL+"/ai-gateway/v1/openai/"), option.WithAPIKey(e.tok),
		option.WithHTTPClient(e.Client), option.WithMaxRetries(0))
	inputs := []string{"Customer jane.roe@example.com paid with 4111 1111 1111 1111.", "no entities here"}
	resp, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{
		Model: "gpt", Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: inputs},
	})
	if err != nil {
		t.Fatal(err)
	}
	last := e.oai.Requests()[len(e.oai.Requests())-1]
	if len(last.Input) != 2 || last.Input[1] != inputs[1] || last.Model != "up-gpt" {
		t.Fatalf("the model got %+v", last)
	}
	agLeak(t, "the text embedded", last.Input[0])
	if len(resp.Data) != 2 || resp.Data[0].Index != 0 || resp.Data[1].Embedding[0] != float64(len(inputs[1])) ||
		resp.Data[0].Embedding[0] != float64(len(last.Input[0])) {
		t.Fatalf("got %s", resp.RawJSON())
	}
	var apiErr *openai.Error
	_, err = client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "gpt",
		Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("key ghp_abcdefghijklmnopqrstuvwxyz0123456789")}})
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 422 || apiErr.Code != "request_blocked" {
		t.Fatalf("a secret to embed: %v; want 422 request_blocked", err)
	}
	_, err = client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "claude", Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("hi")}})
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.Message, "embeddings") {
		t.Fatalf("embeddings of an Anthropic model: %v; want a 400 saying it does not embed", err)
	}
	_, err = client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "gpt", Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfTokens: []int64{1, 2}}})
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Param != "input" {
		t.Fatalf("token input: %v; want a 400 with param input", err)
	}
}

// TestAIGWOpenAIChoices: n above 1 with the OpenAI SDK, plain and streamed. n reaches an
// OpenAI-compatible model; every choice comes back checked (one placeholder numbering for the
// whole answer); a model whose API has no n is refused by name.
func TestAIGWOpenAIChoices(t *testing.T) {
	e := agStart(t, false, nil)
	ctx := context.Background()
	client := openai.NewClient(option.WithBaseURL(e.URL+"/ai-gateway/v1/openai/"), option.WithAPIKey(e.tok),
		option.WithHTTPClient(e.Client), option.WithMaxRetries(0))
	params := openai.ChatCompletionNewParams{Model: "gpt", N: openai.Int(3),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("My mail is jane.roe@example.com. Who has my ticket?")}}

	e.oai.Queue(providertest.Reply{Content: "Ops has it, [EMAIL_1].", More: []string{
		"ops.lead@corp-example.com has it; card 4111 1111 1111 1111.", "Ask ops.lead@corp-example.com, SSN 536-22-8726."}})
	resp, err := client.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if last := e.oai.Requests()[len(e.oai.Requests())-1]; last.N != 3 {
		t.Errorf("the model got n = %d, want 3", last.N)
	}
	want := []string{"Ops has it, [EMAIL_1].", "[EMAIL_2] has it; card **** **** **** 1111.", "Ask [EMAIL_2], SSN [SSN_1]."}
	if len(resp.Choices) != len(want) {
		t.Fatalf("got %d choices: %s", len(resp.Choices), resp.RawJSON())
	}
	for i, c := range resp.Choices {
		if c.Index != int64(i) || c.Message.Content != want[i] || c.FinishReason != "stop" {
			t.Errorf("choice %d: index %d, %q, %q; want %q, stop", i, c.Index, c.Message.Content, c.FinishReason, want[i])
		}
		agLeak(t, "a choice", c.Message.Content)
	}

	for name, tc := range map[string]struct {
		p     openai.ChatCompletionNewParams
		param string
		in    string
	}{
		"an Anthropic model": {func() openai.ChatCompletionNewParams { p := params; p.Model = "claude"; return p }(), "", "claude does not support n above 1"},
		"n over 128":         {func() openai.ChatCompletionNewParams { p := params; p.N = openai.Int(129); return p }(), "n", "1 to 128"},
	} {
		var apiErr *openai.Error
		if _, err := client.Chat.Completions.New(ctx, tc.p); !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Param != tc.param || !strings.Contains(apiErr.Message, tc.in) {
			t.Errorf("%s: got %v; want a 400 (param %q) saying %q", name, err, tc.param, tc.in)
		}
	}

	// Streamed: each choice's chunks carry its index; values split across a choice's chunks
	// (the fake cuts the other choices after every space) are released only redacted.
	e.oai.Queue(providertest.Reply{Content: "Ops has it, [EMAIL_1].", More: []string{
		"ops.lead@corp-example.com has it; card 4111 1111 1111 1111.", "Ask ops.lead@corp-example.com, SSN 536-22-8726."}})
	stream := client.Chat.Completions.NewStreaming(ctx, params)
	var acc openai.ChatCompletionAccumulator
	var raw strings.Builder
	for stream.Next() {
		acc.AddChunk(stream.Current())
		raw.WriteString(stream.Current().RawJSON())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	agLeak(t, "the stream", raw.String())
	if len(acc.Choices) != len(want) {
		t.Fatalf("streamed: %d choices: %s", len(acc.Choices), raw.String())
	}
	for i, c := range acc.Choices {
		if c.Index != int64(i) || c.Message.Content != want[i] || c.FinishReason != "stop" {
			t.Errorf("streamed choice %d: index %d, %q, %q; want %q, stop", i, c.Index, c.Message.Content, c.FinishReason, want[i])
		}
	}
}

// TestAIGWOpenAIModels: the OpenAI SDK's model list and retrieval agree with each other and
// with the project's policy, and show only the configured names.
func TestAIGWOpenAIModels(t *testing.T) {
	e := agStart(t, false, nil)
	ctx := context.Background()
	client := openai.NewClient(option.WithBaseURL(e.URL+"/ai-gateway/v1/openai/"), option.WithAPIKey(e.tok),
		option.WithHTTPClient(e.Client), option.WithMaxRetries(0))
	list := func() []string {
		t.Helper()
		page, err := client.Models.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, m := range page.Data {
			ids = append(ids, m.ID)
			if m.Object != "model" || m.OwnedBy != "edgewan" {
				t.Errorf("model %s: %s", m.ID, m.RawJSON())
			}
		}
		return ids
	}
	get := func(id string) (*openai.Model, error) { return client.Models.Get(ctx, id) }
	if ids := list(); !slices.Equal(ids, []string{"claude", "echo", "gpt", "gpt-fb", "gpt-retry", "gpt-slow"}) {
		t.Fatalf("listed %v", ids)
	}
	if m, err := get("gpt"); err != nil || m.ID != "gpt" || m.Object != "model" || strings.Contains(m.RawJSON(), "127.0.0.1") {
		t.Fatalf("retrieve gpt: %+v, %v", m, err)
	}
	var apiErr *openai.Error
	if _, err := get("nope"); !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Param != "model" {
		t.Fatalf("retrieve an unknown model: %v; want 404 with param model", err)
	}

	agPublishPolicy(t, e, "gpt only", `{"models": ["gpt*"]}`)
	if ids := list(); !slices.Equal(ids, []string{"gpt", "gpt-fb", "gpt-retry", "gpt-slow"}) {
		t.Fatalf("with a policy allowing gpt*: listed %v", ids)
	}
	if _, err := get("claude"); !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
		t.Fatalf("retrieve a model the policy does not allow: %v; want 404", err)
	}
	if m, err := get("gpt-fb"); err != nil || m.ID != "gpt-fb" {
		t.Fatalf("retrieve gpt-fb: %+v, %v", m, err)
	}
}
