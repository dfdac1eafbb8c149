package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	"golang.org/x/sync/semaphore"

	"github.com/edgewan/edgewan/coreapi/apierr"
	"github.com/edgewan/edgewan/coreapi/rest"
)

// What one request may cost. The body limits are checked on Content-Length before the body is
// read (a client that sent Expect: 100-continue gets the 413 instead of 100 Continue); a
// chunked body is cut at the limit as it is read. Bodies being handled are counted against
// Options.MaxInflightBytes, so the memory that redaction, detection and the answer take grows
// with the admitted bytes, not with the number of clients.
const (
	// DefaultMaxInflightBytes is how many request body bytes the gateway handles at once by
	// default: 4 full-size texts. A worst-case text (an entity every 7 bytes) allocates about
	// 65 MB while it is redacted (BenchmarkSanitizeAdversarial), so this keeps the controller
	// under 300 MB RSS under such load (scripts/bench-aigw-rss.sh); ordinary prompts of a few
	// KB still run hundreds at a time.
	DefaultMaxInflightBytes = 4 * MaxText
	// minAdmit is what a small request is counted as: it still costs buffers.
	minAdmit = 4 << 10
	// MaxListedRedactions bounds the redactions listed in an answer and in an audit record;
	// the rest are counted (redactions_omitted), and the first of each type is always listed.
	MaxListedRedactions = 256
	// auditMaxFindings bounds the findings of an audit record (a finding is one per rule).
	auditMaxFindings = 64
	// AuditMaxText bounds the sanitized input (as JSON) and the output an audit record stores;
	// longer ones are cut, saying how long they were.
	AuditMaxText = 32 << 10
	// AuditMaxRaw bounds the raw input sealed into an audit record.
	AuditMaxRaw = 64 << 10
	// MaxLogPageBytes bounds a page of GET /logs, about, in bytes; a page holds at least one
	// record (which AuditMaxText and AuditMaxRaw bound).
	MaxLogPageBytes = 2 << 20
)

// admit is middleware for a route whose body is at most limit bytes: a larger Content-Length
// is a 413 before anything is read, and the request waits for its share of the in-flight
// budget (a client that goes away while waiting is let go).
func (h *handlers) admit(limit int64) gin.HandlerFunc {
	return func(c *gin.Context) {
		n := c.Request.ContentLength
		if n > limit {
			c.Header("Connection", "close") // the body will not be read
			rest.FailWith(c, http.StatusRequestEntityTooLarge, apierr.CodeTooLarge, "request body is %d bytes; the limit is %d", n, limit)
			return
		}
		if n < 0 { // chunked: it may be up to limit
			n = limit
		}
		n = max(n, minAdmit)
		if n > h.s.inflightCap {
			n = h.s.inflightCap
		}
		if err := h.s.inflight.Acquire(c.Request.Context(), n); err != nil {
			rest.FailWith(c, http.StatusServiceUnavailable, apierr.CodeUnavailable, "the gateway is busy; the client went away while waiting")
			return
		}
		defer h.s.inflight.Release(n)
		c.Next()
	}
}

func newInflight(capacity int64) (*semaphore.Weighted, int64) {
	if capacity <= 0 {
		capacity = DefaultMaxInflightBytes
	}
	return semaphore.NewWeighted(capacity), capacity
}

// listRedactions bounds a list of redactions to MaxListedRedactions: the first of each type,
// then the others in order. It returns the list (never nil) and how many were left out.
func listRedactions(rs []Redaction) ([]Redaction, int) {
	if len(rs) <= MaxListedRedactions {
		return nonNil(rs), 0
	}
	keep := make([]bool, len(rs))
	seen := map[string]bool{}
	n := 0
	for i, r := range rs {
		if !seen[r.Type] {
			seen[r.Type], keep[i] = true, true
			n++
		}
	}
	for i := range rs {
		if n >= MaxListedRedactions {
			break
		}
		if !keep[i] {
			keep[i] = true
			n++
		}
	}
	out := make([]Redaction, 0, n)
	for i, r := range rs {
		if keep[i] {
			out = append(out, r)
		}
	}
	return out, len(rs) - len(out)
}

// cutText returns text cut to at most limit bytes on a rune boundary, with a note saying how
// long it was.
func cutText(text string, limit int) string {
	if len(text) <= limit {
		return text
	}
	note := fmt.Sprintf(" …[cut: %d bytes in all]", len(text))
	end := max(limit-len(note), 0)
	for end > 0 && !utf8.RuneStart(text[end]) {
		end--
	}
	return text[:end] + note
}

// cutInput bounds a record's sanitized input: JSON longer than AuditMaxText becomes
// {"cut": true, "bytes": N, "head": "<the start of the JSON text>"}.
func cutInput(in json.RawMessage) json.RawMessage {
	if len(in) <= AuditMaxText {
		return in
	}
	b, _ := json.Marshal(map[string]any{"cut": true, "bytes": len(in), "head": cutText(string(in), AuditMaxText/2)})
	return b
}

// bound caps what an audit record stores (and what a page of records shows of records written
// before the caps).
func (r *Record) bound() {
	r.Input = cutInput(r.Input)
	r.Output = cutText(r.Output, AuditMaxText)
	r.Redactions, _ = listRedactions(r.Redactions)
	if len(r.Findings) > auditMaxFindings {
		r.Findings = r.Findings[:auditMaxFindings]
	}
}

// size estimates the JSON size of a record in a list (raw inputs are not listed).
func (r *Record) size() int {
	return 400 + len(r.Input) + len(r.Output) + 160*len(r.Redactions) + 160*len(r.Findings) + len(r.ID) + len(r.Project) + len(r.Model)
}
