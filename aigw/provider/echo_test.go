package provider_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/edgewan/edgewan/aigw/provider"
)

func TestEcho(t *testing.T) {
	tests := []struct {
		name       string
		prefix     string
		req        provider.Request
		want       string
		wantDeltas []string
		wantFinish string
		wantUsage  provider.Usage
	}{
		{
			name: "last user message", prefix: "",
			req: provider.Request{Messages: []provider.Message{
				{Role: "system", Content: "be nice"}, {Role: "user", Content: "first"},
				{Role: "assistant", Content: "ok"}, {Role: "user", Content: "the second question"},
			}},
			want: "the second question", wantDeltas: []string{"the ", "second ", "question"},
			wantFinish: "stop", wantUsage: provider.Usage{PromptTokens: 7, CompletionTokens: 3},
		},
		{
			name: "prefix", prefix: "echo: ", req: ask("hi"),
			want: "echo: hi", wantDeltas: []string{"echo: ", "hi"}, wantFinish: "stop",
			wantUsage: provider.Usage{PromptTokens: 1, CompletionTokens: 2},
		},
		{
			name: "a few chunks of whole words", req: ask("one two three four five six seven eight nine ten"),
			want:       "one two three four five six seven eight nine ten",
			wantDeltas: []string{"one two three ", "four five six ", "seven eight nine ", "ten"},
			wantFinish: "stop", wantUsage: provider.Usage{PromptTokens: 10, CompletionTokens: 10},
		},
		{
			name: "max tokens cuts the answer", req: provider.Request{Messages: ask("a b  c d").Messages, MaxTokens: 2},
			want: "a b", wantDeltas: []string{"a ", "b"}, wantFinish: "length",
			wantUsage: provider.Usage{PromptTokens: 4, CompletionTokens: 2},
		},
		{
			name: "unicode spaces stay whole", req: ask("naïve\u00a0café\u3000東京 x"),
			want: "naïve\u00a0café\u3000東京 x", wantDeltas: []string{"naïve\u00a0", "café\u3000", "東京 ", "x"},
			wantFinish: "stop", wantUsage: provider.Usage{PromptTokens: 4, CompletionTokens: 4},
		},
		{
			name: "no user message", req: provider.Request{Messages: []provider.Message{{Role: "system", Content: "s"}}},
			want: "", wantDeltas: nil, wantFinish: "stop", wantUsage: provider.Usage{PromptTokens: 1},
		},
	}
	for _, tt := range tests {
		for _, stream := range modes() {
			t.Run(tt.name+"/"+modeName(stream), func(t *testing.T) {
				p := newModel(t, provider.ModelConfig{Name: "echo", Kind: provider.KindEcho, EchoPrefix: tt.prefix}, provider.Options{})
				for range 2 { // deterministic
					resp, deltas, err := call(p, stream, tt.req)
					if err != nil {
						t.Fatal(err)
					}
					want := provider.Response{Model: "echo", Content: tt.want, FinishReason: tt.wantFinish, Usage: tt.wantUsage}
					if !reflect.DeepEqual(*resp, want) {
						t.Errorf("got %+v; want %+v", *resp, want)
					}
					if stream && !slices.Equal(deltas, tt.wantDeltas) {
						t.Errorf("deltas %q; want %q", deltas, tt.wantDeltas)
					}
				}
			})
		}
	}
}

func TestEchoStops(t *testing.T) {
	p := newModel(t, provider.ModelConfig{Name: "echo", Kind: provider.KindEcho}, provider.Options{})
	stop := errors.New("stop")
	n := 0
	_, err := p.Stream(context.Background(), ask(strings.Repeat("w ", 20)), func(string) error {
		n++
		return stop
	})
	if !errors.Is(err, stop) || n != 1 {
		t.Errorf("got %v after %d deltas; want the callback's error after 1", err, n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Chat(ctx, ask("x")); !errors.Is(err, context.Canceled) {
		t.Errorf("got %v; want context.Canceled", err)
	}
	if _, err := p.Chat(context.Background(), provider.Request{}); !errors.Is(err, provider.ErrInvalidRequest) {
		t.Errorf("got %v; want ErrInvalidRequest", err)
	}
}
