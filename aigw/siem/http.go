package siem

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgewan/edgewan/aigw/gateway"
	"github.com/edgewan/edgewan/coreapi/webhook"
)

// HTTPOptions configure an HTTPSink. Zero values take the defaults named.
type HTTPOptions struct {
	URL  string // https, or http to a loopback address; required
	Name string // the sink's name and cursor key; default the URL without its query
	// NDJSON sends one record per line (application/x-ndjson) instead of one JSON array of
	// records (application/json).
	NDJSON      bool
	Token       string      // sent as "Authorization: <TokenScheme> <Token>" when set
	TokenScheme string      // default "Bearer"
	Header      http.Header // more headers for every request
	// Secret, when set, signs every body as webhook deliveries are signed: X-Service-Signature
	// (HMAC-SHA256 of the body), X-Service-Timestamp and X-Service-Signature-V2 (of
	// "<timestamp>.<body>").
	Secret  string
	MaxBody int           // bytes of one request body; larger batches take several requests; default 1 MiB
	Timeout time.Duration // per request; default 30s
	TLS     *tls.Config   // for https: roots and client certificate; default the system's roots
	Client  *http.Client  // default: one with Timeout and TLS that follows no redirects
}

// Defaults of HTTPOptions.
const (
	DefaultMaxBody     = 1 << 20
	DefaultHTTPTimeout = 30 * time.Second
)

var _ Sink = (*HTTPSink)(nil)

// HTTPSink POSTs records as JSON. A batch is accepted when every request it took was answered
// 2xx; a batch too large for MaxBody is split over several requests in order, and when a later
// one fails the whole batch is sent again, so a receiver may see a record more than once.
type HTTPSink struct {
	o           HTTPOptions
	contentType string

	closed atomic.Bool
	sendMu sync.Mutex // one Send at a time; guards the buffers
	body   bytes.Buffer
	item   bytes.Buffer
	enc    *json.Encoder // on item
}

// NewHTTPSink returns a sink for o.
func NewHTTPSink(o HTTPOptions) (*HTTPSink, error) {
	u, err := url.Parse(o.URL)
	if err != nil {
		return nil, fmt.Errorf("siem.NewHTTPSink: %w", err)
	}
	if err := checkHTTPURL(u); err != nil {
		return nil, fmt.Errorf("siem.NewHTTPSink: %w", err)
	}
	if o.TLS != nil && o.TLS.InsecureSkipVerify {
		return nil, errors.New("siem.NewHTTPSink: TLS must verify the receiver (InsecureSkipVerify is not allowed)")
	}
	if o.Name == "" {
		o.Name = (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
	}
	if o.TokenScheme == "" {
		o.TokenScheme = "Bearer"
	}
	if o.MaxBody <= 0 {
		o.MaxBody = DefaultMaxBody
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultHTTPTimeout
	}
	if o.Client == nil {
		o.Client = &http.Client{
			Timeout: o.Timeout,
			// A redirect could send the audit log anywhere; receivers must answer at their URL.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
			Transport: &http.Transport{
				Proxy:               http.ProxyFromEnvironment,
				TLSClientConfig:     o.TLS.Clone(),
				TLSHandshakeTimeout: 10 * time.Second,
				IdleConnTimeout:     90 * time.Second,
				ForceAttemptHTTP2:   true,
			},
		}
	}
	s := &HTTPSink{o: o, contentType: "application/json"}
	if o.NDJSON {
		s.contentType = "application/x-ndjson"
	}
	s.enc = json.NewEncoder(&s.item)
	s.enc.SetEscapeHTML(false)
	return s, nil
}

// checkHTTPURL allows https anywhere and http only to loopback addresses.
func checkHTTPURL(u *url.URL) error {
	if u.Host == "" || u.Opaque != "" {
		return fmt.Errorf("url %q is not absolute", u.Redacted())
	}
	if u.User != nil {
		return errors.New("url must not carry credentials; use a token or headers")
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if isLoopback(u.Hostname()) {
			return nil
		}
		return fmt.Errorf("url %q: plain http is allowed only to loopback addresses; use https", u.Redacted())
	}
	return fmt.Errorf("url %q: want https (or http to loopback)", u.Redacted())
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Name implements Sink.
func (s *HTTPSink) Name() string { return s.o.Name }

// Close implements Sink.
func (s *HTTPSink) Close() error {
	s.closed.Store(true)
	s.o.Client.CloseIdleConnections()
	return nil
}

// Send implements Sink.
func (s *HTTPSink) Send(ctx context.Context, rs []*gateway.Record) error {
	if s.closed.Load() {
		return ErrClosed
	}
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	s.body.Reset()
	n := 0 // records in body
	for _, r := range rs {
		if err := s.encode(r); err != nil {
			return fmt.Errorf("siem: %s: record %d: %w", s.o.Name, r.Seq, err)
		}
		if n > 0 && s.body.Len()+1+s.item.Len()+1 > s.o.MaxBody {
			if err := s.post(ctx, n); err != nil {
				return err
			}
			s.body.Reset()
			n = 0
		}
		if n == 0 && !s.o.NDJSON {
			s.body.WriteByte('[')
		} else if n > 0 && !s.o.NDJSON {
			s.body.WriteByte(',')
		}
		s.body.Write(s.item.Bytes())
		n++
	}
	if n > 0 {
		return s.post(ctx, n)
	}
	return nil
}

// encode puts r's JSON into s.item, without input and output if it would not fit a body alone;
// for NDJSON with its newline.
func (s *HTTPSink) encode(r *gateway.Record) error {
	s.item.Reset()
	err := encodeRecord(s.enc, r, false)
	if err != nil || s.item.Len()+2 > s.o.MaxBody {
		s.item.Reset()
		if err := encodeRecord(s.enc, r, true); err != nil {
			return err
		}
	}
	if !s.o.NDJSON {
		s.item.Truncate(s.item.Len() - 1)
	}
	return nil
}

// post sends s.body, holding n records.
func (s *HTTPSink) post(ctx context.Context, n int) error {
	if !s.o.NDJSON {
		s.body.WriteByte(']')
	}
	body := s.body.Bytes()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.o.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("siem: %s: %w", s.o.Name, err)
	}
	for k, vs := range s.o.Header {
		req.Header[k] = vs
	}
	req.Header.Set("Content-Type", s.contentType)
	req.Header.Set("User-Agent", "edgewan-siem")
	req.Header.Set("X-Edgewan-Records", strconv.Itoa(n))
	if s.o.Token != "" {
		req.Header.Set("Authorization", s.o.TokenScheme+" "+s.o.Token)
	}
	if s.o.Secret != "" {
		now := time.Now()
		req.Header.Set(webhook.HeaderSignature, webhook.Sign(s.o.Secret, body))
		req.Header.Set(webhook.HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
		req.Header.Set(webhook.HeaderSigned, webhook.SignTimestamped(s.o.Secret, now, body))
	}
	resp, err := s.o.Client.Do(req)
	if err != nil {
		return fmt.Errorf("siem: %s: %w", s.o.Name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
		return nil
	}
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
	return fmt.Errorf("siem: %s: status %d: %q", s.o.Name, resp.StatusCode, bytes.TrimSpace(snippet))
}
