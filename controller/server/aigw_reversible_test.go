package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"
	"github.com/openai/openai-go/shared"

	"github.com/edgewan/edgewan/aigw/provider/providertest"
)

// agPublishPolicy creates a policy with content in the test project and publishes it.
func agPublishPolicy(t *testing.T, e *agEnv, name, content string) {
	t.Helper()
	r := e.Do("POST", "/ai-gateway/v1/policies", e.admin, map[string]any{"name": name, "content": json.RawMessage(content)})
	wantStatus(t, r, http.StatusCreated)
	var pol struct{ ID string }
	r.JSON(t, &pol)
	wantStatus(t, e.Do("POST", "/ai-gateway/v1/policies/"+pol.ID+"/publish", e.admin, map[string]any{"version": 1}), http.StatusOK)
}

// TestAIGWReversible: reversible redaction (de-anonymisation) with the official SDKs. The
// model sees consistent placeholders; the caller gets its values back in the answer, in
// streams whatever the chunking, and in tool call arguments; the audit record keeps the
// placeholders; a placeholder this request did not issue is never restored.
func TestAIGWReversible(t *testing.T) {
	e := agStart(t, false, nil)
	agPublishPolicy(t, e, "reversible", `{"reversible": true}`)
	ctx := context.Background()
	client := openai.NewClient(option.WithBaseURL(e.URL+"/ai-gateway/v1/openai/"), option.WithAPIKey(e.tok),
		option.WithHTTPClient(e.Client), option.WithMaxRetries(0))
	const prompt = "I am Thandiwe Mbeki, mail jane.roe@example.com (again: Jane.Roe@example.com). Write to bob.k@example.org."
	params := openai.ChatCompletionNewParams{Model: "gpt", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)}}
	const answer = "Dear [PERSON_1], I wrote to [EMAIL_2] and copied [EMAIL_1]; [EMAIL_7] is unknown."
	const want = "Dear Thandiwe Mbeki, I wrote to bob.k@example.org and copied jane.roe@example.com; [EMAIL_7] is unknown."

	t.Run("plain", func(t *testing.T) {
		e.oai.Queue(providertest.Reply{Content: answer})
		resp, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.Choices[0].Message.Content; got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
		seen := e.oai.Requests()[len(e.oai.Requests())-1].LastUser()
		if seen != "I am [PERSON_1], mail [EMAIL_1] (again: [EMAIL_1]). Write to [EMAIL_2]." {
			t.Fatalf("the model saw %q; want consistent placeholders", seen)
		}
		var ext struct {
			Edgewan struct {
				RequestID string `json:"request_id"`
			} `json:"edgewan"`
		}
		if err := json.Unmarshal([]byte(resp.RawJSON()), &ext); err != nil || ext.Edgewan.RequestID == "" {
			t.Fatalf("no request id: %v", err)
		}
		rec := e.record(t, e.tok, ext.Edgewan.RequestID)
		if rec.Output != answer {
			t.Errorf("the audit record keeps %q; want the answer with its placeholders", rec.Output)
		}
		if b, _ := json.Marshal(rec); strings.Contains(string(b), "jane.roe") || strings.Contains(string(b), "bob.k") {
			t.Errorf("the audit record holds a restored value: %s", b)
		}
	})

	t.Run("streamed, placeholders split at every byte boundary", func(t *testing.T) {
		for cut := 1; cut < len(answer); cut++ {
			e.oai.Queue(providertest.Reply{Chunks: []string{answer[:cut], answer[cut:]}})
			got, deltas := agStreamText(t, client, params)
			if got != want {
				t.Fatalf("cut at %d: got %q, want %q", cut, got, want)
			}
			for _, d := range deltas {
				if i := strings.LastIndexByte(d, '['); i >= 0 && !strings.Contains(d[i:], "]") {
					t.Fatalf("cut at %d: delta %q ends in part of a placeholder", cut, d)
				}
			}
		}
		// One byte per delta.
		e.oai.Queue(providertest.Reply{Chunks: strings.Split(answer, "")})
		if got, _ := agStreamText(t, client, params); got != want {
			t.Fatalf("1-byte deltas: got %q, want %q", got, want)
		}
	})

	t.Run("tool call arguments", func(t *testing.T) {
		p := params
		p.Tools = []openai.ChatCompletionToolParam{{Function: shared.FunctionDefinitionParam{Name: "send",
			Parameters: shared.FunctionParameters{"type": "object"}}}}
		args := `{"to": "[EMAIL_2]", "cc": "[EMAIL_1]", "name": "[PERSON_1]", "other": "[EMAIL_9]"}`
		wantArgs := map[string]string{"to": "bob.k@example.org", "cc": "jane.roe@example.com", "name": "Thandiwe Mbeki", "other": "[EMAIL_9]"}
		check := func(what, got string) {
			t.Helper()
			var m map[string]string
			if err := json.Unmarshal([]byte(got), &m); err != nil {
				t.Fatalf("%s: arguments %q are not JSON: %v", what, got, err)
			}
			for k, v := range wantArgs {
				if m[k] != v {
					t.Errorf("%s: arguments %s; want %s = %q", what, got, k, v)
				}
			}
		}
		e.oai.Queue(providertest.Reply{ToolCalls: []providertest.ToolCall{{ID: "call_1", Name: "send", Arguments: args}}})
		resp, err := client.Chat.Completions.New(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		check("plain", resp.Choices[0].Message.ToolCalls[0].Function.Arguments)

		e.oai.Queue(providertest.Reply{Chunks: []string{"Sending."}, ToolCalls: []providertest.ToolCall{{ID: "call_2", Name: "send", ArgChunks: strings.Split(args, "")}}})
		stream := client.Chat.Completions.NewStreaming(ctx, p)
		var acc openai.ChatCompletionAccumulator
		for stream.Next() {
			acc.AddChunk(stream.Current())
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		check("streamed in 1-byte deltas", acc.Choices[0].Message.ToolCalls[0].Function.Arguments)
	})

	t.Run("every choice of n", func(t *testing.T) {
		p := params
		p.N = openai.Int(2)
		e.oai.Queue(providertest.Reply{Content: answer, More: []string{"Hi [PERSON_1]!"}})
		resp, err := client.Chat.Completions.New(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Choices) != 2 || resp.Choices[0].Message.Content != want || resp.Choices[1].Message.Content != "Hi Thandiwe Mbeki!" {
			t.Fatalf("got %s", resp.RawJSON())
		}
		e.oai.Queue(providertest.Reply{Content: answer, More: []string{"Hi [PERSON_1]!"}})
		stream := client.Chat.Completions.NewStreaming(ctx, p)
		var acc openai.ChatCompletionAccumulator
		for stream.Next() {
			acc.AddChunk(stream.Current())
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if len(acc.Choices) != 2 || acc.Choices[0].Message.Content != want || acc.Choices[1].Message.Content != "Hi Thandiwe Mbeki!" {
			t.Fatalf("streamed: got %+v", acc.Choices)
		}
	})

	t.Run("another request's placeholders are not restored", func(t *testing.T) {
		// This request issues no placeholder: whatever the model answers stays as it is, also
		// placeholders that another request of the project (the ones above) did issue.
		p := params
		p.Messages = []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Nothing personal here.")}
		const stolen = "Values: [EMAIL_1] [EMAIL_2] [PERSON_1]"
		e.oai.Queue(providertest.Reply{Content: stolen})
		resp, err := client.Chat.Completions.New(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.Choices[0].Message.Content; got != stolen {
			t.Fatalf("got %q; want the placeholders as they are", got)
		}
		e.oai.Queue(providertest.Reply{Content: stolen, Chunks: []string{"Values: [EMA", "IL_1] [EMAIL_2] [PERSON_1]"}})
		if got, _ := agStreamText(t, client, p); got != stolen {
			t.Fatalf("streamed: got %q; want the placeholders as they are", got)
		}
	})

	t.Run("off by default in another project", func(t *testing.T) {
		other := openai.NewClient(option.WithBaseURL(e.URL+"/ai-gateway/v1/openai/"), option.WithAPIKey(e.ProjectKey("other-project")),
			option.WithHTTPClient(e.Client), option.WithMaxRetries(0))
		e.oai.Queue(providertest.Reply{Content: answer})
		resp, err := other.Chat.Completions.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.Choices[0].Message.Content; strings.Contains(got, "jane.roe") || strings.Contains(got, "bob.k") {
			t.Fatalf("a project without reversible redaction restored values: %q", got)
		}
	})

	t.Run("anthropic", func(t *testing.T) {
		ac := anthropic.NewClient(aoption.WithBaseURL(e.URL+"/ai-gateway/v1/anthropic/"), aoption.WithAuthToken(e.tok),
			aoption.WithAPIKey(""), aoption.WithHTTPClient(e.Client), aoption.WithMaxRetries(0))
		ap := anthropic.MessageNewParams{Model: "claude", MaxTokens: 200,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(prompt))}}
		e.ant.Queue(providertest.Reply{Content: answer})
		msg, err := ac.Messages.New(ctx, ap)
		if err != nil {
			t.Fatal(err)
		}
		if len(msg.Content) != 1 || msg.Content[0].Text != want {
			t.Fatalf("got %s; want %q", msg.RawJSON(), want)
		}
		e.ant.Queue(providertest.Reply{Content: answer, Chunks: strings.Split(answer, "")})
		stream := ac.Messages.NewStreaming(ctx, ap)
		var acc anthropic.Message
		for stream.Next() {
			if err := acc.Accumulate(stream.Current()); err != nil {
				t.Fatal(err)
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if len(acc.Content) != 1 || acc.Content[0].Text != want {
			t.Fatalf("streamed: accumulated %+v; want %q", acc.Content, want)
		}
		// Tool use: the tool_use input gets the values back, plain and streamed.
		ap.Model = "gpt"
		ap.Tools = []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "send", InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{}}}}}
		args := `{"to": "[EMAIL_2]", "name": "[PERSON_1]", "other": "[EMAIL_9]"}`
		wantInput := map[string]string{"to": "bob.k@example.org", "name": "Thandiwe Mbeki", "other": "[EMAIL_9]"}
		for _, streamed := range []bool{false, true} {
			call := providertest.ToolCall{ID: "call_1", Name: "send", Arguments: args}
			if streamed {
				call = providertest.ToolCall{ID: "call_1", Name: "send", ArgChunks: strings.Split(args, "")}
			}
			e.oai.Queue(providertest.Reply{ToolCalls: []providertest.ToolCall{call}})
			var msg anthropic.Message
			if streamed {
				stream := ac.Messages.NewStreaming(ctx, ap)
				for stream.Next() {
					if err := msg.Accumulate(stream.Current()); err != nil {
						t.Fatal(err)
					}
				}
				err = stream.Err()
			} else {
				var m *anthropic.Message
				if m, err = ac.Messages.New(ctx, ap); err == nil {
					msg = *m
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			var in map[string]string
			if len(msg.Content) != 1 || json.Unmarshal(msg.Content[0].Input, &in) != nil || len(in) != len(wantInput) {
				t.Fatalf("streamed %v: got %+v", streamed, msg.Content)
			}
			for k, v := range wantInput {
				if in[k] != v {
					t.Errorf("streamed %v: input %v; want %s = %q", streamed, in, k, v)
				}
			}
		}
	})
}

// agStreamText streams a chat completion and returns its text and content deltas.
func agStreamText(t *testing.T, client openai.Client, p openai.ChatCompletionNewParams) (string, []string) {
	t.Helper()
	stream := client.Chat.Completions.NewStreaming(context.Background(), p)
	var text strings.Builder
	var deltas []string
	for stream.Next() {
		for _, c := range stream.Current().Choices {
			if c.Delta.Content != "" {
				deltas = append(deltas, c.Delta.Content)
				text.WriteString(c.Delta.Content)
			}
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	return text.String(), deltas
}
