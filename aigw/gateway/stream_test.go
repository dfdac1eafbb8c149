package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/edgewan/edgewan/aigw/gateway"
	"github.com/edgewan/edgewan/aigw/provider/providertest"
	"github.com/edgewan/edgewan/controller/store"
	"github.com/edgewan/edgewan/controller/store/storetest"
	"github.com/edgewan/edgewan/coreapi/apierr"
)

// sink records a streamed answer.
type sink struct {
	deltas []string
	done   *gateway.ChatResponse
}

func (s *sink) Delta(text string) error {
	s.deltas = append(s.deltas, text)
	return nil
}

func (s *sink) ToolCall(int, string, string, string) error { return errors.New("no tools here") }

func (s *sink) Done(r *gateway.ChatResponse) error {
	s.done = r
	return nil
}

// splitEntities are output entities of the default policy, with pieces of them that must
// never be streamed.
var splitEntities = []struct {
	name  string
	value string
	leaks []string
}{
	{"email", "john.smith@example.org", []string{"john.smith", "smith@", "@example.org"}},
	{"card", "4111 1111 1111 1111", []string{"4111 1111", "1111 1111 1111"}},
	{"iban", "DE89 3704 0044 0532 0130 00", []string{"DE89 3704", "0532 0130"}},
	{"phone", "+1 (415) 555-2671", []string{"(415) 555", "555-2671"}},
	{"aws key", "AKIAIOSFODNN7EXAMPLE", []string{"AKIAIOSF", "SFODNN7EXA"}},
}

// chunked cuts s into pieces of n bytes.
func chunked(s string, n int) []string {
	var out []string
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	return append(out, s)
}

// TestStreamSplitEntities streams answers whose entity is cut at every byte, and byte by byte,
// early in the stream and past the window: no piece of the entity is ever sent, and the
// streamed text equals the answer redacted whole.
func TestStreamSplitEntities(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		e := newEnv(t, st, nil)
		req := gateway.ChatRequest{Project: "proj", Model: "gpt", Messages: msgs("user", "Who handles it?")}
		layouts := []struct {
			name, before, after string
		}{
			{"early", "You can reach them at ", " during office hours.\nThanks."},
			{"past the window", strings.Repeat("This sentence is filler without anything sensitive in it. ", 6) + "Reach them at ",
				", or ask the front desk. " + strings.Repeat("More filler follows for a while. ", 5)},
		}
		n := 0
		for _, ent := range splitEntities {
			for _, l := range layouts {
				t.Run(ent.name+"/"+l.name, func(t *testing.T) {
					answer := l.before + ent.value + l.after
					e.oai.Queue(providertest.Reply{Content: answer})
					whole, err := e.svc.Chat(ctx, user, fmt.Sprintf("req_%d", n), "chat", req)
					n++
					if err != nil {
						t.Fatal(err)
					}
					if strings.Contains(whole.Output, ent.value) {
						t.Fatalf("the whole answer was not redacted: %q", whole.Output)
					}
					var splits [][]string
					for i := 1; i < len(ent.value); i++ {
						at := len(l.before) + i
						splits = append(splits, []string{answer[:at], answer[at:]})
					}
					splits = append(splits, chunked(answer, 1), chunked(answer, 3), chunked(answer, 7))
					for _, chunks := range splits {
						e.oai.Queue(providertest.Reply{Content: answer, Chunks: chunks})
						s := &sink{}
						if err := e.svc.ChatStream(ctx, user, fmt.Sprintf("req_%d", n), "chat", req, s); err != nil {
							t.Fatal(err)
						}
						n++
						got := strings.Join(s.deltas, "")
						for _, leak := range ent.leaks {
							if strings.Contains(got, leak) {
								t.Fatalf("chunks %q: the stream sent %q: %q", chunks, leak, s.deltas)
							}
						}
						if got != whole.Output || s.done == nil || s.done.Output != got {
							t.Fatalf("chunks %q: streamed %q; want %q as redacted whole", chunks, got, whole.Output)
						}
					}
				})
			}
		}
	})
}

// TestStreamErrors: a failure before the first delta is returned and the sink gets nothing (the
// handler answers a plain error); after deltas it ends the stream, and both are logged.
func TestStreamErrors(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		e := newEnv(t, st, nil)
		req := gateway.ChatRequest{Project: "proj", Model: "gpt", Messages: msgs("user", "hi")}

		e.oai.Queue(providertest.Reply{Status: 500})
		s := &sink{}
		err := e.svc.ChatStream(ctx, user, "req_before", "chat", req, s)
		if apierr.From(err).Status != 502 || len(s.deltas) != 0 || s.done != nil {
			t.Fatalf("got %v, deltas %q; want 502 and nothing sent", err, s.deltas)
		}

		e.oai.Queue(providertest.Reply{Chunks: []string{"First line of the answer.\n", "Second line.\n", "lost\n"}, After: 2, StreamError: "server_error"})
		s = &sink{}
		err = e.svc.ChatStream(ctx, user, "req_after", "chat", req, s)
		if apierr.From(err).Status != 502 || strings.Join(s.deltas, "") != "First line of the answer.\nSecond line.\n" || s.done != nil {
			t.Fatalf("got %v, deltas %q; want the two lines, then 502", err, s.deltas)
		}
		for id, output := range map[string]string{"req_before": "", "req_after": "First line of the answer.\nSecond line.\n"} {
			r, err := e.svc.GetLog(ctx, user, id)
			if err != nil || r.Status != 502 || r.Output != output {
				t.Fatalf("%s: got %+v (%v); want status 502, output %q", id, r, err, output)
			}
		}
	})
}

// firstDelta is a StreamSink that notes when the first text arrives and then ends the stream
// (the rest of the answer does not matter for the time to first token).
type firstDelta struct {
	start time.Time
	ttft  time.Duration
	text  string
}

var errEnough = errors.New("first delta received")

func (s *firstDelta) Delta(text string) error {
	s.ttft, s.text = time.Since(s.start), text
	return errEnough
}

func (s *firstDelta) Done(*gateway.ChatResponse) error { return nil }

func (s *firstDelta) ToolCall(int, string, string, string) error { return errEnough }

// tokens cuts s into chunks of n bytes, like a model's tokens.
func tokens(s string, n int) []string { return chunked(s, n) }

// BenchmarkStreamTTFT measures the time to first token that streaming redaction adds, in
// process: the first Delta of Service.ChatStream under a policy against the first Delta under
// a policy that passes output through (output.skip_entities), with the fake upstream sending
// 5-byte tokens all at once (pace 0) or one every 20 ms (250 B/s, a slow model), or 6-byte
// words every 10 ms (the controller benchmark's answer). "redact" is the default policy (early
// emission); "block" sets output.block, which turns early emission off (the window alone).
// It reports the medians over b.N streams and extra-ttft-ms = redact (or block) minus passthrough.
func BenchmarkStreamTTFT(b *testing.B) {
	resp, err := os.ReadFile("../guard/testdata/response_2k.txt")
	if err != nil {
		b.Fatal(err)
	}
	words := strings.Repeat("The model writes this answer word by word. ", 8)
	ctx := context.Background()
	for _, bc := range []struct {
		name   string
		chunks []string
		pace   time.Duration
	}{
		{"burst/response_2k", tokens(string(resp), 5), 0},
		{"pace=20ms/5B/response_2k", tokens(string(resp), 5), 20 * time.Millisecond},
		{"pace=20ms/5B/words", tokens(words, 5), 20 * time.Millisecond},
		{"pace=10ms/word/words", strings.SplitAfter(words, " "), 10 * time.Millisecond},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ttft := map[string][]time.Duration{}
			policies := []struct{ name, content string }{
				{"passthrough", `{"output":{"skip_entities":true}}`},
				{"redact", `{}`},
				{"block", `{"output":{"block":true}}`},
			}
			envs := map[string]*env{}
			for _, p := range policies {
				e := newEnv(b, storeFor(b), nil)
				e.publish(b, p.content)
				envs[p.name] = e
			}
			req := gateway.ChatRequest{Project: "proj", Model: "gpt", Messages: msgs("user", "Summarise the thread.")}
			n := 0
			for b.Loop() {
				for _, p := range policies {
					e := envs[p.name]
					e.oai.Queue(providertest.Reply{Chunks: bc.chunks, Pace: bc.pace})
					s := &firstDelta{start: time.Now()}
					n++
					if err := e.svc.ChatStream(ctx, user, fmt.Sprintf("req_%d", n), "chat", req, s); s.ttft == 0 {
						b.Fatalf("%s: no delta (%v)", p.name, err)
					}
					ttft[p.name] = append(ttft[p.name], s.ttft)
				}
			}
			med := func(name string) time.Duration {
				d := slices.Clone(ttft[name])
				slices.Sort(d)
				return d[len(d)/2]
			}
			base := med("passthrough")
			b.ReportMetric(float64(base.Microseconds())/1e3, "passthrough-ttft-ms")
			b.ReportMetric(float64(med("redact").Microseconds())/1e3, "redact-ttft-ms")
			b.ReportMetric(float64((med("redact")-base).Microseconds())/1e3, "extra-ttft-ms")
			b.ReportMetric(float64((med("block")-base).Microseconds())/1e3, "block-extra-ttft-ms")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// storeFor opens a fresh SQLite store for a benchmark.
func storeFor(b *testing.B) *store.Store { return storetest.SQLite(b) }
