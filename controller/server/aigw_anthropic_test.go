package server_test

import (
	"context"
	"errors"
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
		tools.Tools = []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "lookup", InputSchema: anthropic.ToolInputSchemaParam{}}}}
		topK := params
		topK.TopK = anthropic.Int(5)
		for name, tc := range map[string]struct {
			p      anthropic.MessageNewParams
			status int
			typ    string
			in     string
		}{
			"block rule": {blocked, 422, "invalid_request_error", "prompt_injection"},
			"tools":      {tools, 400, "invalid_request_error", "tools"},
			"top_k":      {topK, 400, "invalid_request_error", "top_k"},
		} {
			var apiErr *anthropic.Error
			_, err := client.Messages.New(ctx, tc.p)
			if !errors.As(err, &apiErr) || apiErr.StatusCode != tc.status || !strings.Contains(apiErr.RawJSON(), `"type":"`+tc.typ+`"`) || !strings.Contains(apiErr.RawJSON(), tc.in) {
				t.Errorf("%s: got %v; want %d %s mentioning %s", name, err, tc.status, tc.typ, tc.in)
			}
		}
	})
}
