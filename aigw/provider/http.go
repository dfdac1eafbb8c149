package provider

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits on what is read from an upstream.
const (
	maxBody      = 16 << 20 // a non-streamed answer
	maxErrorBody = 64 << 10 // an error answer
	maxSSELine   = 1 << 20  // one line, and one event's data, of a stream
	maxErrorMsg  = 512      // bytes of upstream error text kept in an UpstreamError
)

// wire is what differs between the HTTP APIs: headers and the shape of error bodies.
type wire struct {
	path       string                               // appended to the base URL
	header     func(h http.Header, key string)      // sets credentials ("" = none) and versions
	parseError func(body []byte) (code, msg string) // reads an error body
	codeStatus func(code string) int                // status of an error streamed after a 200
}

// httpModel is a model behind an HTTP API.
type httpModel struct {
	cfg    ModelConfig
	url    string
	client *http.Client
	retry  retrier
	wire   wire
}

func newHTTPModel(c ModelConfig, o Options, w wire) httpModel {
	return httpModel{cfg: c, url: c.BaseURL + w.path, client: o.HTTPClient, retry: newRetrier(c, o), wire: w}
}

// post sends body and returns a 2xx response, or an *UpstreamError.
func (m *httpModel) post(a *attempt, body []byte, stream bool) (*http.Response, error) {
	req, err := http.NewRequestWithContext(a.ctx, http.MethodPost, m.url, bytes.NewReader(body))
	if err != nil {
		return nil, m.fail(0, "", "cannot build the request", err, false)
	}
	req.Header.Set("Content-Type", "application/json")
	if stream {
		req.Header.Set("Accept", "text/event-stream")
	} else {
		req.Header.Set("Accept", "application/json")
	}
	m.wire.header(req.Header, m.cfg.APIKey)
	res, err := m.client.Do(req)
	if err != nil {
		return nil, m.netError(a, "", err)
	}
	if res.StatusCode >= 200 && res.StatusCode < 300 {
		return res, nil
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
	code, msg := m.wire.parseError(b)
	if msg == "" {
		msg = http.StatusText(res.StatusCode)
		if res.StatusCode >= 300 && res.StatusCode < 400 {
			msg = "redirect to " + res.Header.Get("Location") + " not followed"
		}
	}
	// An exhausted quota is a 429 that waiting does not cure.
	retry := retryable(res.StatusCode, res.Header) && code != "insufficient_quota"
	e := m.fail(res.StatusCode, code, msg, nil, retry)
	e.RetryAfter = retryAfter(res.Header, time.Now())
	return nil, e
}

// streamError is an error event in a stream that started well: the status is the one the
// upstream gives the same error before a stream.
func (m *httpModel) streamError(code, msg string) *UpstreamError {
	status := m.wire.codeStatus(code)
	if msg == "" {
		msg = "error event in the stream"
	}
	return m.fail(status, code, msg, nil, retryable(status, nil))
}

// readJSON decodes a whole non-streamed answer into v.
func (m *httpModel) readJSON(a *attempt, res *http.Response, v any) error {
	if ct, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type")); ct != "application/json" {
		return m.fail(res.StatusCode, "", fmt.Sprintf("answer of type %q, want application/json", ct), nil, false)
	}
	b, err := io.ReadAll(io.LimitReader(res.Body, maxBody+1))
	if err != nil {
		return m.netError(a, "answer", err)
	}
	if len(b) > maxBody {
		return m.fail(res.StatusCode, "", fmt.Sprintf("answer larger than %d bytes", maxBody), nil, false)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return m.fail(res.StatusCode, "", "malformed answer", err, false)
	}
	return nil
}

// netError turns a transport failure while doing what (e.g. "stream"; "" for the request)
// into an UpstreamError, retryable unless the stream broke its format. The caller's own
// context ending is left for the retrier to report.
func (m *httpModel) netError(a *attempt, what string, err error) error {
	pre := ""
	if what != "" {
		pre = what + " "
	}
	if a.timedOut() {
		return m.fail(0, "", fmt.Sprintf("%stimed out after %s", pre, m.cfg.Timeout), nil, true)
	}
	if errors.Is(err, errSSE) {
		return m.fail(0, "", pre+"malformed", err, false)
	}
	return m.fail(0, "", what, err, true)
}

// fail builds an UpstreamError for this model, with the key scrubbed from the upstream's text
// (some APIs quote the key they reject) and the text cut to a sane length.
func (m *httpModel) fail(status int, code, msg string, err error, retry bool) *UpstreamError {
	return &UpstreamError{
		Model: m.cfg.Name, Status: status, Code: clean(code, m.cfg.APIKey), Msg: clean(msg, m.cfg.APIKey),
		Retryable: retry, Err: err,
	}
}

// clean removes key from s, keeps it short and makes it valid UTF-8 on one line.
func clean(s, key string) string {
	if key != "" {
		s = strings.ReplaceAll(s, key, "[redacted]")
		// A key quoted in part (sk-abc...xyz) is left: it is what the upstream chose to show.
	}
	if len(s) > maxErrorMsg {
		s = s[:maxErrorMsg]
		for len(s) > 0 && !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		s += "..."
	}
	s = strings.ToValidUTF8(s, "?")
	return strings.Join(strings.Fields(s), " ")
}

// errorText is the message of an error body that is not in the expected shape: its text, if
// it looks like text.
func errorText(body []byte) string {
	s := strings.TrimSpace(string(body))
	if s == "" || strings.HasPrefix(s, "<") || !utf8.ValidString(s) {
		return ""
	}
	return s
}
