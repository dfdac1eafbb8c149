package gateway

import (
	"errors"
	"testing"

	"github.com/edgewan/edgewan/coreapi/apierr"
)

// TestParseOpenAIRequest: fields are used, or refused naming them in param; null is absent.
func TestParseOpenAIRequest(t *testing.T) {
	tests := []struct {
		body  string
		param string // "" means accepted
	}{
		{`{"model":"m","messages":[{"role":"user","content":"hi"}]}`, ""},
		{`{"model":"m","messages":[{"role":"developer","content":[{"type":"text","text":"a"}]}],"n":1,"stop":"x","seed":3,"tools":[],"logprobs":false,"response_format":{"type":"text"},"user":null}`, ""},
		{`{"model":"m","messages":[{"role":"assistant","content":"a","refusal":null}]}`, ""},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":"auto"}`, ""},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{}}]}`, "tools[0].function.name"},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"tool_choice":"required"}`, "tool_choice"},
		{`{"model":"m","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"ok"}]}`, ""},
		{`{"model":"m","messages":[{"role":"tool","content":"ok"}]}`, "messages[0].tool_call_id"},
		{`{"model":"m","messages":[{"role":"user","content":"x","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}]}`, "messages[0].tool_calls"},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"n":0}`, "n"},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"n":129}`, "n"},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object"},"strict":true}}}`, ""},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema"}}`, "response_format.json_schema.name"},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"yaml"}}`, "response_format.type"},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"frobnicate":1}`, "frobnicate"},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"stop":["a","b","c","d","e"]}`, "stop"},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"top_p":"high"}`, "top_p"},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"stream_options":{"include_usage":true}}`, "stream_options"},
		{`{"model":"m","messages":[{"role":"user","content":null}]}`, "messages[0].content"},
		{`{"model":"m","messages":[{"role":"user"}]}`, "messages[0].content"},
		{`{"model":"m","messages":[{"role":"user","content":"x","name":"bob"}]}`, "messages[0].name"},
		{`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`, "messages[0].content[0].image_url"},
		{`{"model":null,"messages":[{"role":"user","content":"hi"}]}`, "model"},
		{`{"model":"m"}`, "messages"},
	}
	for _, tc := range tests {
		_, err := parseOpenAIRequest([]byte(tc.body))
		var pe *paramError
		switch {
		case tc.param == "" && err != nil:
			t.Errorf("%s: %v; want it accepted", tc.body, err)
		case tc.param != "" && (!errors.As(err, &pe) || pe.param != tc.param || apierr.From(err).Status != 400):
			t.Errorf("%s: %v; want a 400 with param %q", tc.body, err, tc.param)
		}
	}
}

// FuzzParseOpenAIRequest: any body is parsed or refused with a 4xx, never a panic, and what is
// accepted has a model and messages.
func FuzzParseOpenAIRequest(f *testing.F) {
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"}]}],"stop":["x"],"stream":true,"stream_options":{"include_usage":true}}`))
	f.Add([]byte(`{"model":"m","messages":[{"role":"tool","content":"x","tool_call_id":"c"}],"n":null}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := parseOpenAIRequest(body)
		if err != nil {
			if s := apierr.From(err).Status; s < 400 || s >= 500 {
				t.Fatalf("status %d for %q: %v", s, body, err)
			}
			return
		}
		if r.chat.Model == "" || len(r.chat.Messages) == 0 {
			t.Fatalf("accepted %q without a model or messages", body)
		}
	})
}

// FuzzParseOpenAIEmbed: any embeddings body is parsed or refused with a 4xx, never a panic;
// what is accepted has a model and input.
func FuzzParseOpenAIEmbed(f *testing.F) {
	f.Add([]byte(`{"model":"m","input":["a","b"],"encoding_format":"float","dimensions":3,"user":null}`))
	f.Add([]byte(`{"model":"m","input":[1,2]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := parseOpenAIEmbed(body)
		if err != nil {
			if s := apierr.From(err).Status; s < 400 || s >= 500 {
				t.Fatalf("status %d for %q: %v", s, body, err)
			}
			return
		}
		if r.Model == "" || r.Input == nil {
			t.Fatalf("accepted %q without a model or input", body)
		}
	})
}

// FuzzParseAnthropicRequest: any Messages API body is parsed or refused with a 4xx, never a
// panic; what is accepted has a model, max_tokens and a message.
func FuzzParseAnthropicRequest(f *testing.F) {
	f.Add([]byte(`{"model":"m","max_tokens":5,"system":[{"type":"text","text":"s"}],"messages":[{"role":"user","content":[{"type":"text","text":"a"}]}],"stop_sequences":["x"],"metadata":{"user_id":"u"}}`))
	f.Add([]byte(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"a"}],"tools":[]}`))
	f.Add([]byte(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"text","text":"t"},{"type":"tool_use","id":"c","name":"f","input":{"a":1}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"c","content":[{"type":"text","text":"r"}],"is_error":true},{"type":"text","text":"ok"}]}],"tools":[{"name":"f","description":"d","input_schema":{"type":"object"}}],"tool_choice":{"type":"tool","name":"f","disable_parallel_tool_use":true}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := parseAnthropicRequest(body)
		if err != nil {
			if s := apierr.From(err).Status; s < 400 || s >= 500 {
				t.Fatalf("status %d for %q: %v", s, body, err)
			}
			return
		}
		if r.Model == "" || r.MaxTokens < 1 || len(r.Messages) == 0 {
			t.Fatalf("accepted %q as %+v", body, r)
		}
	})
}
