package gateway_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/edgewan/edgewan/aigw/gateway"
	"github.com/edgewan/edgewan/aigw/provider/providertest"
	"github.com/edgewan/edgewan/controller/store/storetest"
)

// linearPolicy runs every kind of check with no size limit, so that the largest texts are read.
const linearPolicy = `{"default_action":"redact","entities":{"email":"hash","credit_card":"mask"},
 "block":{"prompt_injection":true,
  "patterns":[{"name":"codename","regex":"(?i)\\bproject\\s+(?:falcon|osprey)\\b"},{"name":"nested","regex":"(a+)+b"}],
  "keywords":[{"name":"confidential","words":["internal only","do not distribute"],"case_insensitive":true},
              {"name":"sub","words":["aaab","bluebird"],"substring":true}]},
 "output":{"block":true}}`

// adversarial are units that, repeated, make careless scanners slow: partial matches that
// restart, long runs with no boundary, nested quantifier bait, near-entities of every kind,
// prompt-injection triggers without their completion, base64 to decode.
var adversarial = []string{
	"a.b@", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa@", "http://", "www.", "1.1.1.1.", "ab:cd:", "4111 ", "1 ", "123-45-",
	"+1 (415) 555-2671 ", "DE89 ", "-----BEGIN PRIVATE KEY-----", "eyJhbGciOiJ.eyJzdWIiOi.", "password=abc1234 ", "Bearer ",
	"a", "John ", "12 Main ", "12 March ", "1/", "ignore ", "ignore all previous ", "you are ", "reveal your ", "QUFB",
	"project ", "internal ", "aaa", "bluebir", "\xff\xc3",
}

// streamAdversarial are the units streamed: runs the stream redactor holds back (no white
// space, key blocks), dense entities and block-rule bait, invalid bytes.
var streamAdversarial = []string{
	"a", "a.b@", "4111 ", "1.1.1.1.", "-----BEGIN PRIVATE KEY-----", "John ", "ignore all previous ", "project ", "bluebir",
	"x\n", "\xff\xc3",
}

// cost returns the least thread CPU time of two runs of f.
func cost(t *testing.T, f func()) time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	best := time.Duration(1<<63 - 1)
	for range 3 { // the best of three: one disturbed run must not decide a ratio
		runtime.GC() // start each run from the same heap: less garbage-collector noise
		c0 := threadCPU(t)
		f()
		best = min(best, threadCPU(t)-c0)
	}
	return best
}

// TestLinearTime sanitizes inputs built to make regular expressions and scanners slow at 64 KB
// and 512 KB (the size limit), and streams answers built the same way at 32 KB and 256 KB: the
// cost must grow about 8x, not 64x. The bound, 16x, is generous for caches and the garbage
// collector. It is measured in CPU time of the calling thread, so a busy machine or a slow
// database does not count; it runs on SQLite only (the database is not what is measured) and
// not in parallel.
func TestLinearTime(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, storetest.SQLite(t), nil)
	e.publish(t, linearPolicy)
	const small, large = 64 << 10, gateway.MaxText
	n := 0
	id := func() string { n++; return fmt.Sprintf("req_%d", n) }
	for _, unit := range adversarial {
		if strings.HasSuffix(unit, "\xc3") {
			continue // refused before any scan: checked below
		}
		t.Run("sanitize "+unit, func(t *testing.T) {
			s, l := strings.Repeat(unit, small/len(unit)), strings.Repeat(unit, large/len(unit))
			run := func(text string) func() {
				return func() {
					if _, err := e.svc.Sanitize(ctx, user, id(), gateway.SanitizeRequest{Project: "proj", Text: text}); err != nil {
						t.Fatal(err)
					}
				}
			}
			cs, cl := cost(t, run(s)), cost(t, run(l))
			t.Logf("%v -> %v", cs, cl)
			if ratio := float64(cl) / float64(max(cs, 50*time.Microsecond)); ratio > 16 {
				t.Errorf("cost grew %.1fx (%v -> %v) for 8x the input; want about 8x", ratio, cs, cl)
			}
		})
	}
	// Streams: 32 KB and 256 KB answers in 64-byte chunks (the cost per chunk is what could grow).
	for _, unit := range streamAdversarial {
		t.Run("stream "+unit, func(t *testing.T) {
			req := gateway.ChatRequest{Project: "proj", Model: "gpt", Messages: msgs("user", "go")}
			run := func(size int) func() {
				answer := strings.Repeat(unit, size/len(unit))
				chunks := chunked(answer, 64)
				return func() {
					e.oai.Queue(providertest.Reply{Content: answer, Chunks: chunks})
					if err := e.svc.ChatStream(ctx, user, id(), "chat", req, &sink{}); err != nil && !strings.Contains(err.Error(), "blocked") {
						t.Fatal(err)
					}
				}
			}
			cs, cl := cost(t, run(32<<10)), cost(t, run(256<<10))
			t.Logf("%v -> %v", cs, cl)
			if ratio := float64(cl) / float64(max(cs, 50*time.Microsecond)); ratio > 16 {
				t.Errorf("cost grew %.1fx (%v -> %v) for 8x the answer; want about 8x", ratio, cs, cl)
			}
		})
	}
	// Invalid UTF-8 is refused before any scan, whatever its size.
	bad := strings.Repeat("\xff\xc3", large/2)
	if _, err := e.svc.Sanitize(ctx, user, id(), gateway.SanitizeRequest{Project: "proj", Text: bad}); err == nil {
		t.Fatal("invalid UTF-8 was sanitized")
	}
}
