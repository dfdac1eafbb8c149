package provider_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/edgewan/edgewan/aigw/provider"
	"github.com/edgewan/edgewan/aigw/provider/providertest"
)

// TestSampling: every sampling option reaches the upstream in its API's words, or the request
// is refused naming the options the API lacks; none is dropped.
func TestSampling(t *testing.T) {
	topP, fp, pp := 0.5, 0.25, -0.5
	seed := int64(42)
	s := provider.Sampling{TopP: &topP, Stop: []string{"END", "\n\n"}, User: "u-7"}
	forEachWire(t, func(t *testing.T, kind string, up *providertest.Server) {
		r, err := provider.NewRouter([]provider.ModelConfig{modelFor("m", kind, up)}, nil, provider.Options{})
		if err != nil {
			t.Fatal(err)
		}
		req := provider.Request{Model: "m", Messages: []provider.Message{{Role: "user", Content: "hi"}}, Sampling: s}
		for _, stream := range []bool{false, true} {
			if stream {
				_, err = r.Stream(context.Background(), req, func(string) error { return nil })
			} else {
				_, err = r.Chat(context.Background(), req)
			}
			if err != nil {
				t.Fatal(err)
			}
			got := up.Requests()[len(up.Requests())-1]
			if got.TopP == nil || *got.TopP != topP || !slices.Equal(got.Stop, s.Stop) || got.User != "u-7" {
				t.Errorf("stream %v: upstream got top_p %v stop %q user %q", stream, got.TopP, got.Stop, got.User)
			}
		}
		full := req
		full.Sampling.Seed, full.Sampling.FrequencyPenalty, full.Sampling.PresencePenalty = &seed, &fp, &pp
		_, err = r.Chat(context.Background(), full)
		if kind == provider.KindAnthropic {
			if !errors.Is(err, provider.ErrInvalidRequest) || !containsAll(err.Error(), "seed", "frequency_penalty", "presence_penalty") {
				t.Fatalf("Anthropic with seed and penalties: %v; want ErrInvalidRequest naming them", err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		got := up.Requests()[len(up.Requests())-1]
		if got.Seed == nil || *got.Seed != 42 || got.FrequencyPenalty == nil || *got.FrequencyPenalty != fp || got.PresencePenalty == nil || *got.PresencePenalty != pp {
			t.Errorf("upstream got seed %v, penalties %v %v", got.Seed, got.FrequencyPenalty, got.PresencePenalty)
		}
	})
}

func containsAll(s string, subs ...string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}
