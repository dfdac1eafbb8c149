package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/edgewan/edgewan/aigw/gateway"
	"github.com/edgewan/edgewan/aigw/provider"
	"github.com/edgewan/edgewan/aigw/provider/providertest"
	"github.com/edgewan/edgewan/controller/store"
	"github.com/edgewan/edgewan/controller/store/storetest"
	"github.com/edgewan/edgewan/coreapi/apierr"
	"github.com/edgewan/edgewan/coreapi/page"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// The callers of the tests: a project key, its admin, and a key of another project.
var (
	user  = gateway.Caller{KeyID: "key_user", Project: "proj"}
	admin = gateway.Caller{KeyID: "key_admin", Project: "proj", Admin: true}
	other = gateway.Caller{KeyID: "key_other", Project: "other"}
)

// env is a gateway Service on a real store, with a model "gpt" on a fake OpenAI upstream and
// the built-in "echo".
type env struct {
	svc     *gateway.Service
	st      *store.Store
	oai     *providertest.Server
	keyFile string
}

// newEnv starts a Service on st; o may adjust its options.
func newEnv(t testing.TB, st *store.Store, o func(*gateway.Options)) *env {
	t.Helper()
	e := startEnv(t, st.Gateway(), o)
	e.st = st
	return e
}

// newEnvOn starts a Service on any gateway.Store.
func newEnvOn(t testing.TB, st gateway.Store) *env {
	t.Helper()
	return startEnv(t, st, nil)
}

func startEnv(t testing.TB, st gateway.Store, o func(*gateway.Options)) *env {
	t.Helper()
	oai := providertest.OpenAI(t)
	models, err := provider.NewRouter([]provider.ModelConfig{
		{Name: "gpt", Kind: provider.KindOpenAI, BaseURL: oai.URL, APIKey: oai.Key(), Timeout: 10 * time.Second},
		{Name: "echo", Kind: provider.KindEcho},
	}, nil, provider.Options{})
	if err != nil {
		t.Fatal(err)
	}
	opts := gateway.Options{Models: models, AuditKeyFile: filepath.Join(t.TempDir(), "audit.key"), Registerer: prometheus.NewRegistry()}
	if o != nil {
		o(&opts)
	}
	svc, err := gateway.New(context.Background(), st, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Close) // before the store closes: cleanups run last-in, first-out
	return &env{svc: svc, oai: oai, keyFile: opts.AuditKeyFile}
}

// forEachBackend runs f with a fresh store of each backend.
func forEachBackend(t *testing.T, f func(t *testing.T, st *store.Store)) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			f(t, b.Open(t))
		})
	}
}

// publish makes content the project's active policy.
func (e *env) publish(t testing.TB, content string) {
	t.Helper()
	ctx := context.Background()
	p, err := e.svc.CreatePolicy(ctx, admin, gateway.CreatePolicyRequest{Name: "test", Content: json.RawMessage(content)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Publish(ctx, admin, p.ID, gateway.PublishRequest{Version: 1}, func(a, b json.RawMessage) []string { return nil }); err != nil {
		t.Fatal(err)
	}
}

// wantAPIError checks err is an API error with status and code.
func wantAPIError(t *testing.T, err error, status int, code string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error; want %d %s", status, code)
	}
	if e := apierr.From(err); e.Status != status || e.Code != code {
		t.Fatalf("got %d %s (%v); want %d %s", e.Status, e.Code, err, status, code)
	}
}

func msgs(pairs ...string) []provider.Message {
	var out []provider.Message
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, provider.Message{Role: pairs[i], Content: pairs[i+1]})
	}
	return out
}

// TestSanitizeChecks: the project must be the caller's, the text bounded and UTF-8.
func TestSanitizeChecks(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, nil)
		ctx := context.Background()
		tests := []struct {
			name   string
			caller gateway.Caller
			req    gateway.SanitizeRequest
			status int
			code   string
		}{
			{"no project", user, gateway.SanitizeRequest{Text: "hi"}, 400, apierr.CodeBadRequest},
			{"another project", other, gateway.SanitizeRequest{Project: "proj", Text: "hi"}, 403, apierr.CodeForbidden},
			{"too large", user, gateway.SanitizeRequest{Project: "proj", Text: strings.Repeat("a", gateway.MaxText+1)}, 413, apierr.CodeTooLarge},
			{"invalid UTF-8", user, gateway.SanitizeRequest{Project: "proj", Text: "caf\xe9"}, 400, apierr.CodeBadRequest},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				_, err := e.svc.Sanitize(ctx, tc.caller, "req_x", tc.req)
				wantAPIError(t, err, tc.status, tc.code)
			})
		}
		res, err := e.svc.Sanitize(ctx, user, "req_ok", gateway.SanitizeRequest{Project: "proj", Text: strings.Repeat("a", gateway.MaxText)})
		if err != nil || res.RequestID != "req_ok" {
			t.Fatalf("at the limit: got %v, %v; want it sanitized", res, err)
		}
		if recs, err := st.Gateway().RecordsAfter(ctx, 0, 10); err != nil || len(recs) != 1 || recs[0].ID != "req_ok" {
			t.Fatalf("got %d records (%v); want only the accepted request logged", len(recs), err)
		}
	})
}

// TestChatChecks: requests the gateway refuses before calling a model.
func TestChatChecks(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, nil)
		e.publish(t, `{"models":["echo"]}`)
		ctx := context.Background()
		hot := 2.5
		tests := []struct {
			name   string
			caller gateway.Caller
			req    gateway.ChatRequest
			status int
			code   string
		}{
			{"another project", other, gateway.ChatRequest{Project: "proj", Model: "echo", Messages: msgs("user", "hi")}, 403, apierr.CodeForbidden},
			{"no model", user, gateway.ChatRequest{Project: "proj", Messages: msgs("user", "hi")}, 400, apierr.CodeBadRequest},
			{"unknown model", user, gateway.ChatRequest{Project: "proj", Model: "gpt-99", Messages: msgs("user", "hi")}, 400, apierr.CodeBadRequest},
			{"model not allowed by the policy", user, gateway.ChatRequest{Project: "proj", Model: "gpt", Messages: msgs("user", "hi")}, 422, apierr.CodeUnprocessable},
			{"no messages", user, gateway.ChatRequest{Project: "proj", Model: "echo"}, 400, apierr.CodeBadRequest},
			{"too many messages", user, gateway.ChatRequest{Project: "proj", Model: "echo", Messages: make([]provider.Message, 1001)}, 400, apierr.CodeBadRequest},
			{"unknown role", user, gateway.ChatRequest{Project: "proj", Model: "echo", Messages: msgs("tool", "hi")}, 400, apierr.CodeBadRequest},
			{"temperature", user, gateway.ChatRequest{Project: "proj", Model: "echo", Temperature: &hot, Messages: msgs("user", "hi")}, 400, apierr.CodeBadRequest},
			{"max tokens", user, gateway.ChatRequest{Project: "proj", Model: "echo", MaxTokens: -1, Messages: msgs("user", "hi")}, 400, apierr.CodeBadRequest},
			{"message too large", user, gateway.ChatRequest{Project: "proj", Model: "echo", Messages: msgs("user", strings.Repeat("a", gateway.MaxText+1))}, 413, apierr.CodeTooLarge},
			{"invalid UTF-8", user, gateway.ChatRequest{Project: "proj", Model: "echo", Messages: msgs("user", "\xff")}, 400, apierr.CodeBadRequest},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				_, err := e.svc.Chat(ctx, tc.caller, "req_x", "chat", tc.req)
				wantAPIError(t, err, tc.status, tc.code)
				sink := &sink{}
				wantAPIError(t, e.svc.ChatStream(ctx, tc.caller, "req_y", "chat", tc.req, sink), tc.status, tc.code)
				if len(sink.deltas) != 0 || sink.done != nil {
					t.Fatalf("the sink got %v %v; want nothing", sink.deltas, sink.done)
				}
			})
		}
		if n := len(e.oai.Requests()); n != 0 {
			t.Fatalf("the model was called %d times; want never", n)
		}
		if recs, _ := st.Gateway().RecordsAfter(ctx, 0, 10); len(recs) != 0 {
			t.Fatalf("got %d audit records for refused requests; want none (they never reached a policy check)", len(recs))
		}
	})
}

// TestAuditGroupCommit: concurrent requests all reach the audit log, with unique, gapless
// sequence numbers that continue after a restart; a closed log refuses records.
func TestAuditGroupCommit(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		e := newEnv(t, st, nil)
		const workers, each = 16, 25
		var wg sync.WaitGroup
		errs := make(chan error, workers*each)
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range each {
					id := fmt.Sprintf("req_%02d_%02d", w, i)
					res, err := e.svc.Sanitize(ctx, user, id, gateway.SanitizeRequest{Project: "proj", Text: fmt.Sprintf("mail w%d.i%d@example.com", w, i)})
					if err == nil && res.Text != "mail [EMAIL_1]" {
						err = fmt.Errorf("%s: got %q", id, res.Text)
					}
					if err != nil {
						errs <- err
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		recs, err := st.Gateway().RecordsAfter(ctx, 0, 2*workers*each)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != workers*each {
			t.Fatalf("got %d records; want %d", len(recs), workers*each)
		}
		seen := map[string]bool{}
		for i, r := range recs {
			if r.Seq != int64(i+1) || seen[r.ID] || r.Kind != "sanitize" || string(r.Input) == "" || strings.Contains(string(r.Input), "@example.com") {
				t.Fatalf("record %d: %+v; want seq %d, a new ID, the sanitized input", i, r, i+1)
			}
			seen[r.ID] = true
		}

		// A restarted gateway continues the sequence.
		e.svc.Close()
		e.svc.Close() // idempotent
		if _, err := e.svc.Sanitize(ctx, user, "req_late", gateway.SanitizeRequest{Project: "proj", Text: "hi"}); err == nil {
			t.Fatal("a closed gateway logged a request")
		}
		e2 := newEnv(t, st, func(o *gateway.Options) { o.AuditKeyFile = e.keyFile })
		if _, err := e2.svc.Sanitize(ctx, user, "req_next", gateway.SanitizeRequest{Project: "proj", Text: "hi"}); err != nil {
			t.Fatal(err)
		}
		recs, _ = st.Gateway().RecordsAfter(ctx, workers*each, 10)
		if len(recs) != 1 || recs[0].ID != "req_next" || recs[0].Seq != workers*each+1 {
			t.Fatalf("after a restart got %+v; want req_next with seq %d", recs, workers*each+1)
		}
	})
}

// TestRawInputSealed: a project that opts in keeps its raw inputs sealed with the audit key,
// bound to their record; only admins read them, and only with the key.
func TestRawInputSealed(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		e := newEnv(t, st, nil)
		const raw = "write to zebra.quokka.4821@example.org"
		if _, err := e.svc.Sanitize(ctx, user, "req_before", gateway.SanitizeRequest{Project: "proj", Text: raw}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.UpdateProject(ctx, user, "proj", gateway.ProjectUpdate{StoreRawInput: new(true)}); err == nil {
			t.Fatal("a key without aigw:admin changed the project")
		}
		if p, err := e.svc.UpdateProject(ctx, admin, "proj", gateway.ProjectUpdate{StoreRawInput: new(true)}); err != nil || !p.StoreRawInput {
			t.Fatalf("got %+v, %v; want store_raw_input on", p, err)
		}
		if _, err := e.svc.Sanitize(ctx, user, "req_sealed", gateway.SanitizeRequest{Project: "proj", Text: raw}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.Chat(ctx, user, "req_chat", "chat", gateway.ChatRequest{Project: "proj", Model: "echo", Messages: msgs("system", "be kind", "user", raw)}); err != nil {
			t.Fatal(err)
		}

		for _, tc := range []struct {
			id, want string
		}{
			{"req_before", ""},
			{"req_sealed", raw},
			{"req_chat", "system: be kind\nuser: " + raw + "\n"},
		} {
			r, err := e.svc.GetLog(ctx, admin, tc.id)
			if err != nil || r.RawInput != tc.want {
				t.Fatalf("%s: admin got raw input %q (%v); want %q", tc.id, r.RawInput, err, tc.want)
			}
			if r, err := e.svc.GetLog(ctx, user, tc.id); err != nil || r.RawInput != "" {
				t.Fatalf("%s: a key without aigw:admin got raw input %q (%v)", tc.id, r.RawInput, err)
			}
			if _, err := e.svc.GetLog(ctx, other, tc.id); apierr.From(err).Status != http.StatusNotFound {
				t.Fatalf("%s: another project's key got %v; want 404", tc.id, err)
			}
			stored, err := st.Gateway().GetRecord(ctx, tc.id)
			if err != nil {
				t.Fatal(err)
			}
			if (tc.want != "") != strings.HasPrefix(stored.RawInputEnc, "v1:") || strings.Contains(stored.RawInputEnc, "zebra") ||
				strings.Contains(string(stored.Input), "zebra") {
				t.Fatalf("%s: stored raw %q input %s; want sealed (v1:) only when opted in, never in clear", tc.id, stored.RawInputEnc, stored.Input)
			}
		}
		fi, err := os.Stat(e.keyFile)
		if err != nil || fi.Size() != 32 || fi.Mode().Perm() != 0o600 {
			t.Fatalf("audit key file: %v, %v; want 32 bytes, mode 0600", fi, err)
		}

		// A sealed value moved to another record does not open: it is bound to its record ID.
		sealed, _ := st.Gateway().GetRecord(ctx, "req_sealed")
		moved := *sealed
		moved.ID, moved.Seq = "req_moved", 1_000_000
		if _, err := st.Gateway().InsertRecords(ctx, []*gateway.Record{&moved}, nil); err != nil {
			t.Fatal(err)
		}
		if r, err := e.svc.GetLog(ctx, admin, "req_moved"); err == nil {
			t.Fatalf("a sealed value moved to another record opened: %q", r.RawInput)
		}

		// Another key cannot open it; a key of the wrong size is refused at start.
		e.svc.Close()
		e2 := newEnv(t, st, nil)
		if r, err := e2.svc.GetLog(ctx, admin, "req_sealed"); err == nil {
			t.Fatalf("opened with another key: %q", r.RawInput)
		}
		short := filepath.Join(t.TempDir(), "short.key")
		if err := os.WriteFile(short, []byte("too short"), 0o600); err != nil {
			t.Fatal(err)
		}
		models, _ := provider.NewRouter([]provider.ModelConfig{{Name: "echo", Kind: provider.KindEcho}}, nil, provider.Options{})
		if svc, err := gateway.New(ctx, st.Gateway(), gateway.Options{Models: models, AuditKeyFile: short}); err == nil {
			svc.Close()
			t.Fatal("started with a 9-byte audit key")
		}
	})
}

// TestChatRedactsBothWays: the model gets the redacted input and the caller the redacted answer,
// with one numbering per request; the audit record holds both, sanitized.
func TestChatRedactsBothWays(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		e := newEnv(t, st, nil)
		e.oai.Queue(providertest.Reply{Content: "I wrote to jane.roe@example.com and to bob.kent@example.net."})
		res, err := e.svc.Chat(ctx, user, "req_1", "chat", gateway.ChatRequest{Project: "proj", Model: "gpt",
			Messages: msgs("user", "Contact jane.roe@example.com", "assistant", "Which address?", "user", "Jane.Roe@Example.com, as said")})
		if err != nil {
			t.Fatal(err)
		}
		up := e.oai.Requests()[0]
		if got := up.Messages[2].Content; got != "[EMAIL_1], as said" {
			t.Fatalf("upstream got %q; want the same placeholder for the same address", got)
		}
		if want := "I wrote to [EMAIL_1] and to [EMAIL_2]."; res.Output != want {
			t.Fatalf("got %q; want %q", res.Output, want)
		}
		rec, err := e.svc.GetLog(ctx, user, "req_1")
		if err != nil {
			t.Fatal(err)
		}
		if rec.Output != res.Output || strings.Contains(string(rec.Input), "@example") || len(rec.Redactions) != 4 || rec.Model != "gpt" {
			t.Fatalf("got audit record %+v", rec)
		}
		recs, err := e.svc.ListLogs(ctx, user, page.Params{Limit: 10, Desc: true}, gateway.LogFilter{Entity: "email"})
		if err != nil || len(recs) != 1 {
			t.Fatalf("got %d records (%v); want 1", len(recs), err)
		}
	})
}

// waitUntil polls cond until it holds, for at most 10 seconds.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestAuditClientGone: a request whose client goes away is still logged: when it was
// sanitized, and when its prompt had reached the model.
func TestAuditClientGone(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, nil)
		if _, err := e.svc.Sanitize(context.Background(), user, "req_warm", gateway.SanitizeRequest{Project: "proj", Text: "hi"}); err != nil {
			t.Fatal(err)
		}
		// Twenty tries each: a record dropped at random would show.
		for i := range 20 {
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // the client is gone before the gateway logs the request
			id := fmt.Sprintf("req_sanitize_%d", i)
			_, _ = e.svc.Sanitize(ctx, user, id, gateway.SanitizeRequest{Project: "proj", Text: "mail jane.roe@example.com"})
			if _, err := st.Gateway().GetRecord(context.Background(), id); err != nil {
				t.Fatalf("try %d: sanitized, not logged: %v", i, err)
			}
		}
		e.oai.SetReply(providertest.Reply{Hang: true})
		for i := range 20 {
			ctx, cancel := context.WithCancel(context.Background())
			n := len(e.oai.Requests())
			done := make(chan error, 1)
			id := fmt.Sprintf("req_chat_%d", i)
			go func() {
				_, err := e.svc.Chat(ctx, user, id, "chat", gateway.ChatRequest{Project: "proj", Model: "gpt", Messages: msgs("user", "mail jane.roe@example.com")})
				done <- err
			}()
			waitUntil(t, func() bool { return len(e.oai.Requests()) > n }) // the prompt reached the model
			cancel()
			if err := <-done; err == nil {
				t.Fatalf("try %d: no error after the client went away", i)
			}
			if _, err := st.Gateway().GetRecord(context.Background(), id); err != nil {
				t.Fatalf("try %d: the prompt reached the model but the request is not logged: %v", i, err)
			}
		}
	})
}

// TestModelAnswerWithNUL: a model may answer with a NUL character, which PostgreSQL's text
// columns refuse; the answer must still be logged (and so delivered), streamed or not.
func TestModelAnswerWithNUL(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		e := newEnv(t, st, nil)
		req := gateway.ChatRequest{Project: "proj", Model: "gpt", Messages: msgs("user", "hi")}
		e.oai.Queue(providertest.Reply{Content: "nul \x00 here"})
		if _, err := e.svc.Chat(ctx, user, "req_chat", "chat", req); err != nil {
			t.Fatal(err)
		}
		e.oai.Queue(providertest.Reply{Content: "nul \x00 here\n", Chunks: []string{"nul \x00 ", "here\n"}})
		if err := e.svc.ChatStream(ctx, user, "req_stream", "chat", req, &sink{}); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"req_chat", "req_stream"} {
			r, err := e.svc.GetLog(ctx, user, id)
			if err != nil || !strings.HasPrefix(r.Output, "nul \uFFFD here") {
				t.Fatalf("%s: got %+v (%v); want the answer logged with the NUL replaced", id, r, err)
			}
		}
	})
}

// TestAuditKeyRotation: with the audit key moved to audit.key.previous, a start makes a new
// key and reseals every raw input with it (docs/security.md); the raw inputs still open, with
// the new key alone once the previous one is deleted, and the records' updated_at (which the
// SIEM streams follow) does not move.
func TestAuditKeyRotation(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		e := newEnv(t, st, nil)
		const raw = "write to zebra.quokka.4821@example.org"
		if _, err := e.svc.UpdateProject(ctx, admin, "proj", gateway.ProjectUpdate{StoreRawInput: new(true)}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.Sanitize(ctx, user, "req_rot", gateway.SanitizeRequest{Project: "proj", Text: raw}); err != nil {
			t.Fatal(err)
		}
		e.svc.Close() // commits the audit record
		before, err := st.Gateway().GetRecord(ctx, "req_rot")
		if err != nil || before.RawInputEnc == "" {
			t.Fatalf("the raw input was not stored: %+v %v", before, err)
		}
		old, err := os.ReadFile(e.keyFile)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(e.keyFile, e.keyFile+".previous"); err != nil {
			t.Fatal(err)
		}
		sameKey := func(o *gateway.Options) { o.AuditKeyFile = e.keyFile }
		e2 := newEnv(t, st, sameKey)
		if r, err := e2.svc.GetLog(ctx, admin, "req_rot"); err != nil || r.RawInput != raw {
			t.Fatalf("after the rotation: raw input %q, %v; want %q", r.RawInput, err, raw)
		}
		after, err := st.Gateway().GetRecord(ctx, "req_rot")
		if err != nil {
			t.Fatal(err)
		}
		if after.RawInputEnc == before.RawInputEnc || !after.UpdatedAt.Equal(before.UpdatedAt) {
			t.Fatalf("resealed %v (want true), updated_at %v -> %v (want unchanged)", after.RawInputEnc != before.RawInputEnc, before.UpdatedAt, after.UpdatedAt)
		}
		if k, _ := os.ReadFile(e.keyFile); len(k) != 32 || string(k) == string(old) {
			t.Fatal("no new audit key after the rotation")
		}
		e2.svc.Close()
		if err := os.Remove(e.keyFile + ".previous"); err != nil {
			t.Fatal(err)
		}
		e3 := newEnv(t, st, sameKey)
		if r, err := e3.svc.GetLog(ctx, admin, "req_rot"); err != nil || r.RawInput != raw {
			t.Fatalf("with the new key alone: raw input %q, %v; want %q", r.RawInput, err, raw)
		}
	})
}
