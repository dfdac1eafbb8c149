// Package providertest runs fake model APIs on loopback for tests: OpenAI chat completions and
// the Anthropic Messages API, non-streaming and streaming, speaking the real wire formats.
//
// Each fake checks what a real server checks (credentials, the API version header, the
// request's JSON shape, strictly) and answers as scripted by the test: echo of the last user
// message (the default), a fixed answer, error statuses with the API's error body and headers
// such as Retry-After, delays, hangs, dropped connections, and streams cut, stalled or ended by
// an error event after some deltas. It records every request it receives, so a test can check
// what left the gateway:
//
//	up := providertest.OpenAI(t)
//	up.Queue(providertest.Repeat(2, providertest.Reply{Status: 503})...) // then the default: echo
//	// point a model at up.URL with key up.Key(), call it, then:
//	for _, r := range up.Requests() { ... r.LastUser() ... }
//
// The servers stop when the test ends; requests still hanging are released first.
package providertest

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Message is one message of a recorded request. For Anthropic, the system prompt is in
// Request.System, not here.
type Message struct {
	Role       string
	Content    string
	ToolCalls  []ToolCall // OpenAI: an assistant message's tool calls
	ToolCallID string     // OpenAI: a tool message's call
}

// ToolCall is a tool call, received in a message or scripted in a Reply.
type ToolCall struct {
	ID, Name, Arguments string
	// ArgChunks are a streamed call's argument deltas; nil: Arguments in one delta. Without
	// Arguments, they are the arguments.
	ArgChunks []string
}

// Request is a request as the fake received it.
type Request struct {
	Header       http.Header
	Body         []byte // the raw JSON body
	Model        string
	System       string // Anthropic's top-level system prompt
	Messages     []Message
	MaxTokens    int // max_tokens (or OpenAI's max_completion_tokens); 0 if absent
	Temperature  *float64
	Stream       bool
	IncludeUsage bool // OpenAI: stream_options.include_usage

	Tools      json.RawMessage // OpenAI: tools, as received
	ToolChoice json.RawMessage // OpenAI: tool_choice, as received

	ResponseFormat json.RawMessage // OpenAI: response_format, as received

	Input []string // OpenAI embeddings (POST /v1/embeddings): the texts; Model is set too

	// Sampling options as received (Anthropic: top_p, stop_sequences, metadata.user_id).
	TopP             *float64
	Stop             []string
	Seed             *int64
	User             string
	FrequencyPenalty *float64
	PresencePenalty  *float64
	N                int // OpenAI: n; 0 if absent
}

// LastUser is the content of the last user message, "" if none.
func (r Request) LastUser() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Content
		}
	}
	return ""
}

// Reply scripts the answer to one request. The zero Reply answers with an empty text; the
// default reply of a new Server is Reply{Echo: true}.
type Reply struct {
	Content      string     // the answer; with Echo, put before the echoed text
	Echo         bool       // answer with the last user message
	Chunks       []string   // the stream's text deltas; nil: the answer cut after each space. Without Content or Echo, they are the answer
	FinishReason string     // in the API's words; "" = "stop" (OpenAI) or "end_turn" (Anthropic)
	ToolCalls    []ToolCall // OpenAI: tool calls after the text; the finish reason becomes "tool_calls"
	More         []string   // OpenAI, a request with n: the texts of choices 1, 2, ... (missing ones repeat Content)

	Status      int         // not 0 or 200: answer with this status and the API's error body
	ErrorType   string      // the error type (and OpenAI code); "" = the API's usual one for Status
	ErrorMsg    string      // the error message; "" = the status text
	Header      http.Header // added to the response, e.g. Retry-After, retry-after-ms, x-should-retry
	Raw         string      // if not "": sent as the body instead of the API's (with Status, default 200)
	ContentType string      // with Raw; "" = what the request expects (JSON or an event stream)

	Delay time.Duration // wait this long before answering (less if the client goes away)
	Pace  time.Duration // stream: wait this long before each delta, like a model generating
	Hang  bool          // answer nothing until the client goes away
	Drop  bool          // close the connection without an answer

	// Stream faults, applied once After deltas (or all, if fewer) have been sent, instead of
	// the end of the stream; the first set one wins.
	After       int
	StreamError string // send an error event of this type (ErrorMsg as its message), then end
	Cut         bool   // close the connection without the stream's end marker
	Stall       bool   // send nothing more until the client goes away
	CRLF        bool   // end the stream's lines with CRLF instead of LF
}

// Repeat returns n copies of r, for Queue.
func Repeat(n int, r Reply) []Reply {
	rs := make([]Reply, n)
	for i := range rs {
		rs[i] = r
	}
	return rs
}

// Server is a fake model API. Its methods are safe for concurrent use.
type Server struct {
	URL string // the base URL to configure (OpenAI: ends in /v1; Anthropic: the root)

	wire wire
	srv  *httptest.Server
	quit chan struct{}

	mu      sync.Mutex
	key     string
	def     Reply
	queue   []Reply
	reqs    []Request
	ids     int
	active  int           // requests being answered
	changed chan struct{} // closed and replaced when reqs or active change
}

// embedWire is a wire with an embeddings endpoint (OpenAI's).
type embedWire interface {
	embedPath() string
	decodeEmbed(body []byte) (Request, error)
	writeEmbed(w http.ResponseWriter, req Request)
}

// toolStreamer is a wire that streams tool calls (OpenAI's).
type toolStreamer interface {
	streamToolCall(id string, req Request, index int, tc ToolCall) []string
}

// wire is one API's side of the fake.
type wire interface {
	path() string
	checkAuth(h http.Header, key string) (status int, msg string)
	decode(body []byte) (Request, error)
	errorType(status int) string
	writeError(w http.ResponseWriter, status int, typ, msg string)
	writeAnswer(w http.ResponseWriter, id string, req Request, a answer)
	streamStart(id string, req Request, a answer) []string // SSE blocks before the first delta
	streamDelta(id string, req Request, text string) string
	streamEnd(id string, req Request, a answer) []string // SSE blocks after the last delta
	streamError(typ, msg string) string
}

// answer is what the fake says, worked out from the Reply and the request.
type answer struct {
	content        string
	finish         string
	toolCalls      []ToolCall
	more           []string
	prompt, output int // token counts (words)
}

func newServer(t testing.TB, w wire, keyPrefix, base string) *Server {
	t.Helper()
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	s := &Server{
		wire: w, quit: make(chan struct{}), key: keyPrefix + hex.EncodeToString(b), def: Reply{Echo: true},
		changed: make(chan struct{}),
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL + base
	t.Cleanup(func() {
		close(s.quit)
		s.srv.Close()
	})
	return s
}

// Key returns the API key the server accepts. It is random per server, so a test can look for
// it in errors and logs.
func (s *Server) Key() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.key
}

// SetKey changes the accepted key; "" accepts requests without credentials (like a local vLLM
// or Ollama).
func (s *Server) SetKey(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.key = key
}

// SetReply sets the reply to requests when the queue is empty.
func (s *Server) SetReply(r Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.def = r
}

// Queue adds replies for the next requests, one each, in order, before the default reply.
// Requests rejected for their credentials or shape do not use one.
func (s *Server) Queue(rs ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, rs...)
}

// Requests returns the requests received so far, including rejected ones, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// WaitRequests waits until the server has received at least n requests and returns them, or
// returns ctx's error.
func (s *Server) WaitRequests(ctx context.Context, n int) ([]Request, error) {
	err := s.waitFor(ctx, func() bool { return len(s.reqs) >= n })
	return s.Requests(), err
}

// WaitIdle waits until no request is being answered, or returns ctx's error. After a client
// gives up on a Hang or Stall reply, it returns once the fake has seen the client go away.
func (s *Server) WaitIdle(ctx context.Context) error {
	return s.waitFor(ctx, func() bool { return s.active == 0 })
}

func (s *Server) waitFor(ctx context.Context, cond func() bool) error {
	for {
		s.mu.Lock()
		ok, ch := cond(), s.changed
		s.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// changedLocked wakes the waiters; s.mu is held.
func (s *Server) changedLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Client returns an HTTP client for the server (plain HTTP on loopback, keep-alive).
func (s *Server) Client() *http.Client { return s.srv.Client() }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.active++
	key := s.key
	s.mu.Unlock()
	defer func() { // also when the handler panics to drop the connection
		s.mu.Lock()
		s.active--
		s.changedLocked()
		s.mu.Unlock()
	}()

	body, _ := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	if ew, ok := s.wire.(embedWire); ok && r.URL.Path == ew.embedPath() {
		req, status, msg := Request{Header: r.Header.Clone(), Body: body}, 0, ""
		if status, msg = s.wire.checkAuth(r.Header, key); status == 0 {
			var err error
			if req, err = ew.decodeEmbed(body); err != nil {
				status, msg = http.StatusBadRequest, err.Error()
			}
			req.Header, req.Body = r.Header.Clone(), body
		}
		s.mu.Lock()
		s.reqs = append(s.reqs, req)
		s.changedLocked()
		s.mu.Unlock()
		if status != 0 {
			s.wire.writeError(w, status, s.wire.errorType(status), msg)
			return
		}
		ew.writeEmbed(w, req)
		return
	}
	req, status, msg := s.check(r, body, key)
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	reply := s.def
	if status == 0 && len(s.queue) > 0 {
		reply, s.queue = s.queue[0], s.queue[1:]
	}
	s.ids++
	id := fmt.Sprintf("%d", s.ids)
	s.changedLocked()
	s.mu.Unlock()

	if status != 0 {
		s.wire.writeError(w, status, s.wire.errorType(status), msg)
		return
	}
	s.answer(r.Context(), w, id, req, reply)
}

// check does what the real API does before answering: route, credentials, shape. It returns
// the request as recorded and, if it is rejected, the status and message.
func (s *Server) check(r *http.Request, body []byte, key string) (Request, int, string) {
	req := Request{Header: r.Header.Clone(), Body: body}
	switch {
	case r.URL.Path != s.wire.path():
		return req, http.StatusNotFound, "no route " + r.URL.Path
	case r.Method != http.MethodPost:
		return req, http.StatusMethodNotAllowed, "method " + r.Method + " not allowed"
	}
	if status, msg := s.wire.checkAuth(r.Header, key); status != 0 {
		return req, status, msg
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return req, http.StatusBadRequest, "Content-Type " + ct + ", want application/json"
	}
	parsed, err := s.wire.decode(body)
	if err != nil {
		return req, http.StatusBadRequest, err.Error()
	}
	parsed.Header, parsed.Body = req.Header, body
	return parsed, 0, ""
}

func (s *Server) answer(ctx context.Context, w http.ResponseWriter, id string, req Request, rp Reply) {
	if rp.Delay > 0 && !s.pause(ctx, rp.Delay) {
		return
	}
	switch {
	case rp.Hang:
		s.wait(ctx)
		return
	case rp.Drop:
		panic(http.ErrAbortHandler) // net/http closes the connection and logs nothing
	}
	for k, v := range rp.Header {
		w.Header()[k] = v
	}
	if rp.Raw != "" {
		ct := rp.ContentType
		if ct == "" {
			ct = "application/json"
			if req.Stream {
				ct = "text/event-stream"
			}
		}
		w.Header().Set("Content-Type", ct)
		w.WriteHeader(cmp.Or(rp.Status, http.StatusOK))
		_, _ = io.WriteString(w, rp.Raw)
		return
	}
	if rp.Status != 0 && rp.Status != http.StatusOK {
		typ := rp.ErrorType
		if typ == "" {
			typ = s.wire.errorType(rp.Status)
		}
		s.wire.writeError(w, rp.Status, typ, cmp.Or(rp.ErrorMsg, http.StatusText(rp.Status)))
		return
	}

	a := answer{content: rp.Content, finish: rp.FinishReason, toolCalls: rp.ToolCalls, more: rp.More}
	for i := range a.toolCalls {
		if tc := &a.toolCalls[i]; tc.Arguments == "" {
			tc.Arguments = strings.Join(tc.ArgChunks, "")
		}
	}
	switch {
	case rp.Echo:
		a.content += req.LastUser()
	case rp.Content == "":
		a.content = strings.Join(rp.Chunks, "")
	}
	a.output = len(strings.Fields(a.content))
	a.prompt = len(strings.Fields(req.System))
	for _, m := range req.Messages {
		a.prompt += len(strings.Fields(m.Content))
	}
	if !req.Stream {
		s.wire.writeAnswer(w, id, req, a)
		return
	}

	deltas := rp.Chunks
	if deltas == nil {
		for _, d := range strings.SplitAfter(a.content, " ") {
			if d != "" {
				deltas = append(deltas, d)
			}
		}
	}
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	send := func(blocks ...string) {
		for _, b := range blocks {
			if rp.CRLF {
				b = strings.ReplaceAll(b, "\n", "\r\n")
			}
			_, _ = io.WriteString(w, b)
		}
		if f != nil {
			f.Flush()
		}
	}
	send(s.wire.streamStart(id, req, a)...)
	faulty := rp.StreamError != "" || rp.Cut || rp.Stall
	for i, d := range deltas {
		if faulty && i == rp.After {
			break
		}
		if rp.Pace > 0 && !s.pause(ctx, rp.Pace) {
			return
		}
		send(s.wire.streamDelta(id, req, d))
	}
	if ts, ok := s.wire.(toolStreamer); ok && !faulty {
		for i, tc := range a.toolCalls {
			send(ts.streamToolCall(id, req, i, tc)...)
		}
	}
	switch {
	case rp.StreamError != "":
		send(s.wire.streamError(rp.StreamError, cmp.Or(rp.ErrorMsg, "stream failed")))
	case rp.Cut:
		panic(http.ErrAbortHandler) // no final chunk: the client sees an unexpected EOF
	case rp.Stall:
		s.wait(ctx)
	default:
		send(s.wire.streamEnd(id, req, a)...)
	}
}

// pause waits for d; false if the client went away or the server closed first.
func (s *Server) pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
	case <-s.quit:
	}
	return false
}

// wait blocks until the client goes away or the server closes.
func (s *Server) wait(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-s.quit:
	}
}

// event formats one SSE block; typ "" leaves out the event: line.
func event(typ string, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	if typ == "" {
		return "data: " + string(b) + "\n\n"
	}
	return "event: " + typ + "\ndata: " + string(b) + "\n\n"
}

// strictDecode decodes JSON into v rejecting unknown fields, as the real APIs do for most.
func strictDecode(body []byte, v any) error {
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("invalid JSON body: %v", err)
	}
	if dec.More() {
		return fmt.Errorf("invalid JSON body: data after the object")
	}
	return nil
}
