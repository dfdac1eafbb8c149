package provider_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/edgewan/edgewan/aigw/provider"
	"github.com/edgewan/edgewan/aigw/provider/providertest"
)

// chainRouter configures models a, b, c, d and h at one fake (upstream models up-a ... up-h, so
// the fake's record shows the order they were tried in), a falling back to b, c, d and h (whose
// timeout is short, for hanging replies) to b, c.
func chainRouter(t *testing.T, kind string, up *providertest.Server, rec *recorder) *provider.Router {
	t.Helper()
	var models []provider.ModelConfig
	for _, name := range []string{"a", "b", "c", "d", "h"} {
		models = append(models, modelFor(name, kind, up))
	}
	models[4].Timeout = 200 * time.Millisecond
	r, err := provider.NewRouter(models, map[string][]string{"a": {"b", "c", "d"}, "b": {"a"}, "h": {"b", "c"}}, rec.options())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func upstreamModels(reqs []providertest.Request) []string {
	var names []string
	for _, r := range reqs {
		names = append(names, r.Model)
	}
	return names
}

func TestRouterFallbackOrder(t *testing.T) {
	tests := []struct {
		name      string
		model     string
		replies   []providertest.Reply
		wantTried []string
		wantModel string // "" = all fail
	}{
		{"first answers", "a", nil, []string{"up-a"}, "a"},
		{"second after a 503", "a", []providertest.Reply{{Status: 503}}, []string{"up-a", "up-b"}, "b"},
		{"third after a 503 and a 400", "a", []providertest.Reply{{Status: 503}, {Status: 400}}, []string{"up-a", "up-b", "up-c"}, "c"},
		{"after a timeout and a cut", "h", []providertest.Reply{{Hang: true}, {Drop: true}}, []string{"up-h", "up-b", "up-c"}, "c"},
		{"only the asked model's own list", "b", []providertest.Reply{{Status: 500}}, []string{"up-b", "up-a"}, "a"},
		{"no fallbacks configured", "c", []providertest.Reply{{Status: 500}}, []string{"up-c"}, ""},
		{"all fail", "a", providertest.Repeat(4, providertest.Reply{Status: 502}), []string{"up-a", "up-b", "up-c", "up-d"}, ""},
	}
	forEachWire(t, func(t *testing.T, kind string, up *providertest.Server) {
		for _, tt := range tests {
			for _, stream := range modes() {
				t.Run(tt.name+"/"+modeName(stream), func(t *testing.T) {
					var rec recorder
					r := chainRouter(t, kind, up, &rec)
					up.Queue(tt.replies...)
					before := len(up.Requests())
					req := ask("hello there")
					req.Model = tt.model
					var resp *provider.Response
					var err error
					var deltas []string
					if stream {
						resp, err = r.Stream(context.Background(), req, collect(&deltas))
					} else {
						resp, err = r.Chat(context.Background(), req)
					}
					if got := upstreamModels(up.Requests()[before:]); !slices.Equal(got, tt.wantTried) {
						t.Errorf("tried %q; want %q", got, tt.wantTried)
					}
					if tt.wantModel == "" {
						ue := upstreamError(t, err)
						if ue.Model != tt.model {
							t.Errorf("first upstream error from %q; want %q", ue.Model, tt.model)
						}
						for _, m := range tt.wantTried {
							if name := strings.TrimPrefix(m, "up-"); !strings.Contains(err.Error(), "provider: "+name+":") {
								t.Errorf("error %q does not mention model %s", err, name)
							}
						}
						return
					}
					if err != nil {
						t.Fatal(err)
					}
					if resp.Model != tt.wantModel || resp.Content != "hello there" {
						t.Errorf("got %+v; want model %s answering \"hello there\"", resp, tt.wantModel)
					}
					if stream && strings.Join(deltas, "") != "hello there" {
						t.Errorf("deltas %q; want only the answering model's", deltas)
					}
					if len(tt.wantTried) > 1 && !strings.Contains(rec.Log(), "falling back") {
						t.Errorf("log %q; want the fallback logged", rec.Log())
					}
				})
			}
		}
	})
}

func TestRouterFallsBackAcrossKinds(t *testing.T) {
	oa, an := providertest.OpenAI(t), providertest.Anthropic(t)
	oa.SetReply(providertest.Reply{Status: 503})
	an.SetReply(providertest.Reply{Status: 529})
	r, err := provider.NewRouter([]provider.ModelConfig{
		modelFor("gpt", provider.KindOpenAI, oa),
		modelFor("claude", provider.KindAnthropic, an),
		{Name: "echo", Kind: provider.KindEcho, EchoPrefix: "[echo] "},
	}, map[string][]string{"gpt": {"claude", "echo"}}, provider.Options{})
	if err != nil {
		t.Fatal(err)
	}
	req := ask("hi")
	req.Model = "gpt"
	resp, err := r.Chat(context.Background(), req)
	if err != nil || resp.Model != "echo" || resp.Content != "[echo] hi" {
		t.Fatalf("got %+v, %v; want echo's answer", resp, err)
	}
	if len(oa.Requests()) != 1 || len(an.Requests()) != 1 {
		t.Errorf("%d OpenAI and %d Anthropic requests; want 1 each", len(oa.Requests()), len(an.Requests()))
	}
}

func TestRouterStreamFallsBackOnlyBeforeTheFirstDelta(t *testing.T) {
	tests := []struct {
		name         string
		primary      providertest.Reply
		wantFallback bool
		wantDeltas   []string
	}{
		{"503 before the stream", providertest.Reply{Status: 503}, true, []string{"from ", "fallback"}},
		{"cut before any delta", providertest.Reply{Content: "a b c", Cut: true}, true, []string{"from ", "fallback"}},
		{"error event before any delta", providertest.Reply{Content: "a b c", StreamError: "server_error"}, true, []string{"from ", "fallback"}},
		{"cut after two deltas", providertest.Reply{Content: "a b c", Cut: true, After: 2}, false, []string{"a ", "b "}},
		{"error event after one delta", providertest.Reply{Content: "a b c", StreamError: "server_error", After: 1}, false, []string{"a "}},
		{"stall after one delta", providertest.Reply{Content: "a b c", Stall: true, After: 1}, false, []string{"a "}},
	}
	forEachWire(t, func(t *testing.T, kind string, up *providertest.Server) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				fb := fake(t, kind)
				fb.SetReply(providertest.Reply{Content: "from fallback"})
				c := modelFor("primary", kind, up)
				c.Timeout = time.Second // only "stall" waits for it
				r, err := provider.NewRouter([]provider.ModelConfig{c, modelFor("fallback", kind, fb)},
					map[string][]string{"primary": {"fallback"}}, provider.Options{})
				if err != nil {
					t.Fatal(err)
				}
				up.Queue(tt.primary)
				var deltas []string
				resp, err := r.Stream(context.Background(), provider.Request{Model: "primary", Messages: ask("x").Messages}, collect(&deltas))
				if !slices.Equal(deltas, tt.wantDeltas) {
					t.Errorf("deltas %q; want %q", deltas, tt.wantDeltas)
				}
				if n := len(fb.Requests()); n != map[bool]int{false: 0, true: 1}[tt.wantFallback] {
					t.Errorf("%d requests to the fallback; want fallback %v", n, tt.wantFallback)
				}
				if tt.wantFallback {
					if err != nil || resp.Model != "fallback" || resp.Content != "from fallback" {
						t.Errorf("got %+v, %v; want the fallback's answer", resp, err)
					}
					return
				}
				if ue := upstreamError(t, err); ue.Model != "primary" || ue.Retryable {
					t.Errorf("got %+v; want primary's error, not retryable", ue)
				}
			})
		}
	})
}

func TestRouterDoesNotFallBack(t *testing.T) {
	stop := errors.New("client went away")
	tests := []struct {
		name    string
		req     provider.Request
		ctx     func() (context.Context, context.CancelFunc)
		onDelta func(string) error
		wantIs  error
	}{
		{"unknown model", provider.Request{Model: "nope", Messages: ask("x").Messages}, nil, nil, provider.ErrUnknownModel},
		{"invalid request", provider.Request{Model: "a"}, nil, nil, provider.ErrInvalidRequest},
		{"caller cancelled", provider.Request{Model: "a", Messages: ask("x").Messages},
			func() (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				return ctx, cancel
			}, nil, context.Canceled},
		{"callback error", provider.Request{Model: "a", Messages: ask("x y").Messages}, nil,
			func(string) error { return stop }, stop},
	}
	up, fb := providertest.OpenAI(t), providertest.OpenAI(t)
	r, err := provider.NewRouter([]provider.ModelConfig{modelFor("a", provider.KindOpenAI, up), modelFor("b", provider.KindOpenAI, fb)},
		map[string][]string{"a": {"b"}}, provider.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			if tt.ctx != nil {
				ctx, cancel = tt.ctx()
			}
			defer cancel()
			var err error
			if tt.onDelta != nil {
				_, err = r.Stream(ctx, tt.req, tt.onDelta)
			} else {
				_, err = r.Chat(ctx, tt.req)
			}
			if !errors.Is(err, tt.wantIs) {
				t.Errorf("got %v; want %v", err, tt.wantIs)
			}
			if n := len(fb.Requests()); n != 0 {
				t.Errorf("%d requests to the fallback; want none", n)
			}
		})
	}
}

func TestNewRouterValidation(t *testing.T) {
	ok := provider.ModelConfig{Name: "gpt", Kind: provider.KindOpenAI, BaseURL: "http://127.0.0.1:1/v1"}
	echo := provider.ModelConfig{Name: "echo", Kind: provider.KindEcho}
	with := func(f func(*provider.ModelConfig)) provider.ModelConfig {
		c := ok
		f(&c)
		return c
	}
	tests := []struct {
		name      string
		models    []provider.ModelConfig
		fallbacks map[string][]string
		wantErr   string // "" = valid
	}{
		{"valid", []provider.ModelConfig{ok, echo}, map[string][]string{"gpt": {"echo"}}, ""},
		{"default base URLs", []provider.ModelConfig{{Name: "x", Kind: "openai"}, {Name: "y", Kind: "anthropic"}}, nil, ""},
		{"no models", nil, nil, "no models"},
		{"no name", []provider.ModelConfig{with(func(c *provider.ModelConfig) { c.Name = "" })}, nil, "without a name"},
		{"unknown kind", []provider.ModelConfig{with(func(c *provider.ModelConfig) { c.Kind = "gemini" })}, nil, `unknown kind "gemini" (want openai, anthropic or echo)`},
		{"duplicate name", []provider.ModelConfig{ok, ok}, nil, `duplicate model name "gpt"`},
		{"ftp URL", []provider.ModelConfig{with(func(c *provider.ModelConfig) { c.BaseURL = "ftp://x/v1" })}, nil, "scheme must be http or https"},
		{"URL without host", []provider.ModelConfig{with(func(c *provider.ModelConfig) { c.BaseURL = "http:///v1" })}, nil, "has no host"},
		{"relative URL", []provider.ModelConfig{with(func(c *provider.ModelConfig) { c.BaseURL = "api.openai.com/v1" })}, nil, "scheme must be http or https"},
		{"unparsable URL", []provider.ModelConfig{with(func(c *provider.ModelConfig) { c.BaseURL = "http://[::1" })}, nil, "does not parse"},
		{"credentials in URL", []provider.ModelConfig{with(func(c *provider.ModelConfig) { c.BaseURL = "https://user:sekrit@h/v1" })}, nil, "has credentials"},
		{"query in URL", []provider.ModelConfig{with(func(c *provider.ModelConfig) { c.BaseURL = "https://h/v1?key=sekrit" })}, nil, "query"},
		{"negative timeout", []provider.ModelConfig{with(func(c *provider.ModelConfig) { c.Timeout = -time.Second })}, nil, "negative timeout"},
		{"too many retries", []provider.ModelConfig{with(func(c *provider.ModelConfig) { c.MaxRetries = 11 })}, nil, "max retries 11"},
		{"echo with URL", []provider.ModelConfig{{Name: "e", Kind: "echo", BaseURL: "http://h"}}, nil, "echo takes no base URL"},
		{"prefix on openai", []provider.ModelConfig{with(func(c *provider.ModelConfig) { c.EchoPrefix = ">" })}, nil, "echo prefix"},
		{"fallback of unknown model", []provider.ModelConfig{ok, echo}, map[string][]string{"x": {"echo"}}, `fallbacks: "x" is not a configured model`},
		{"fallback to unknown model", []provider.ModelConfig{ok, echo}, map[string][]string{"gpt": {"echo", "claude"}}, `"claude" is not a configured model`},
		{"fallback to itself", []provider.ModelConfig{ok, echo}, map[string][]string{"gpt": {"gpt"}}, "cannot fall back to itself"},
		{"fallback twice", []provider.ModelConfig{ok, echo}, map[string][]string{"gpt": {"echo", "echo"}}, "listed twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := provider.NewRouter(tt.models, tt.fallbacks, provider.Options{})
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("got %v; want no error", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("got %v; want an error with %q", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), "sekrit") {
				t.Errorf("error %q shows the URL's secret", err)
			}
		})
	}
}

func TestRouterModels(t *testing.T) {
	models := []provider.ModelConfig{{Name: "z", Kind: "echo"}, {Name: "a", Kind: "echo"}}
	fb := map[string][]string{"z": {"a"}}
	r, err := provider.NewRouter(models, fb, provider.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fb["z"][0] = "changed" // the router keeps its own copy
	models[0].Name = "changed"
	if !r.Has("a") || !r.Has("z") || r.Has("changed") || r.Has("") {
		t.Errorf("Has is wrong")
	}
	if got := r.Models(); !slices.Equal(got, []string{"a", "z"}) {
		t.Errorf("Models %q; want [a z]", got)
	}
	if got := r.Fallbacks("z"); !slices.Equal(got, []string{"a"}) {
		t.Errorf("Fallbacks %q; want [a]", got)
	}
}
