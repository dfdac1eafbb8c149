package gateway_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/edgewan/edgewan/aigw/gateway"
	"github.com/edgewan/edgewan/aigw/provider/providertest"
	"github.com/edgewan/edgewan/controller/store"
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
