package provider_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/edgewan/edgewan/aigw/provider"
	"github.com/edgewan/edgewan/aigw/provider/providertest"
)

// benchAnswer is a typical short answer: 40 words, streamed as 40 deltas.
var benchAnswer = strings.TrimSpace(strings.Repeat("The quick brown fox jumps over the lazy dog again. ", 4))

func benchReq() provider.Request {
	return provider.Request{Model: "m", Messages: []provider.Message{
		{Role: "system", Content: "You are a helpful assistant."},
		{Role: "user", Content: "Summarise the ticket of [PERSON_1] about the router at [IP_ADDRESS_1] in two sentences."},
	}}
}

// BenchmarkChat measures a whole call through a provider to a fake on loopback; compare with
// BenchmarkBaseline (the same exchange with bare net/http) for the provider's own cost.
func BenchmarkChat(b *testing.B) {
	for _, kind := range []string{provider.KindOpenAI, provider.KindAnthropic, provider.KindEcho} {
		b.Run(kind, func(b *testing.B) {
			p := benchModel(b, kind)
			ctx, req := context.Background(), benchReq()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Chat(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkStream is BenchmarkChat streamed (40 deltas per call).
func BenchmarkStream(b *testing.B) {
	for _, kind := range []string{provider.KindOpenAI, provider.KindAnthropic, provider.KindEcho} {
		b.Run(kind, func(b *testing.B) {
			p := benchModel(b, kind)
			ctx, req := context.Background(), benchReq()
			n := 0
			onDelta := func(string) error { n++; return nil }
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Stream(ctx, req, onDelta); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkBaseline sends the providers' request bodies with bare net/http and reads the
// answers without parsing them: the floor that the fake and loopback HTTP cost.
func BenchmarkBaseline(b *testing.B) {
	for _, kind := range []string{provider.KindOpenAI, provider.KindAnthropic} {
		for _, stream := range []bool{false, true} {
			b.Run(kind+"/"+modeName(stream), func(b *testing.B) {
				up := fake(b, kind)
				up.SetReply(providertest.Reply{Content: benchAnswer})
				url, body := up.URL+"/chat/completions", `{"model":"up-m","messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"Summarise the ticket of [PERSON_1] about the router at [IP_ADDRESS_1] in two sentences."}]`
				if kind == provider.KindAnthropic {
					url, body = up.URL+"/v1/messages", `{"model":"up-m","max_tokens":4096,"system":"You are a helpful assistant.","messages":[{"role":"user","content":"Summarise the ticket of [PERSON_1] about the router at [IP_ADDRESS_1] in two sentences."}]`
				}
				if stream {
					body += `,"stream":true}`
				} else {
					body += `}`
				}
				client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
				b.ReportAllocs()
				for b.Loop() {
					req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, url, bytes.NewReader([]byte(body)))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Authorization", "Bearer "+up.Key())
					req.Header.Set("X-Api-Key", up.Key())
					req.Header.Set("Anthropic-Version", "2023-06-01")
					res, err := client.Do(req)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := io.Copy(io.Discard, res.Body); err != nil || res.StatusCode != 200 {
						b.Fatal(res.Status, err)
					}
					res.Body.Close()
				}
			})
		}
	}
}

func benchModel(b *testing.B, kind string) provider.Provider {
	if kind == provider.KindEcho {
		return newModel(b, provider.ModelConfig{Name: "m", Kind: kind}, provider.Options{})
	}
	up := fake(b, kind)
	up.SetReply(providertest.Reply{Content: benchAnswer})
	return newModel(b, modelFor("m", kind, up), provider.Options{})
}
