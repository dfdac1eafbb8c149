package siem

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/edgewan/edgewan/aigw/gateway"
	"github.com/edgewan/edgewan/controller/store/storetest"
	"github.com/edgewan/edgewan/coreapi/webhook"
)

// httpReceiver is a SIEM's HTTP endpoint that fails its first failFirst requests with 503 and
// checks everything about the others.
type httpReceiver struct {
	t         *testing.T
	srv       *httptest.Server
	ndjson    bool
	failFirst int
	secret    string
	maxBody   int

	mu       sync.Mutex
	requests int
	records  []sentRecord
	changed  chan struct{} // closed and replaced when records arrive
}

func newHTTPReceiver(t *testing.T, ndjson bool, failFirst int, secret string, maxBody int) *httpReceiver {
	h := &httpReceiver{t: t, ndjson: ndjson, failFirst: failFirst, secret: secret, maxBody: maxBody, changed: make(chan struct{})}
	h.srv = httptest.NewServer(h)
	t.Cleanup(h.srv.Close)
	return h
}

func (h *httpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		h.t.Errorf("receiver: %v", err)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.requests++
	if h.requests <= h.failFirst {
		http.Error(w, "not yet", http.StatusServiceUnavailable)
		return
	}
	wantType := "application/json"
	if h.ndjson {
		wantType = "application/x-ndjson"
	}
	if r.Method != http.MethodPost || r.URL.Path != "/ingest" || r.URL.RawQuery != "" || r.Header.Get("Content-Type") != wantType {
		h.t.Errorf("receiver: got %s %s Content-Type %q; want POST /ingest %s", r.Method, r.URL, r.Header.Get("Content-Type"), wantType)
	}
	if got := r.Header.Get("Authorization"); got != "Splunk tok-123" {
		h.t.Errorf("receiver: Authorization: got %q; want %q", got, "Splunk tok-123")
	}
	if got := r.Header.Get("X-Tenant"); got != "acme" {
		h.t.Errorf("receiver: X-Tenant: got %q; want acme", got)
	}
	if !webhook.Verify(h.secret, body, r.Header.Get(webhook.HeaderSignature), r.Header.Get(webhook.HeaderSigned), r.Header.Get(webhook.HeaderTimestamp), time.Minute, time.Now()) {
		h.t.Errorf("receiver: bad signature")
	}
	if len(body) > h.maxBody {
		h.t.Errorf("receiver: body of %d bytes; want at most %d", len(body), h.maxBody)
	}
	var rs []sentRecord
	if h.ndjson {
		sc := bufio.NewScanner(bytes.NewReader(body))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var rec sentRecord
			if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
				h.t.Errorf("receiver: line %q: %v", sc.Bytes(), err)
			}
			rs = append(rs, rec)
		}
		if len(body) == 0 || body[len(body)-1] != '\n' {
			h.t.Errorf("receiver: NDJSON body does not end with a newline")
		}
	} else if err := json.Unmarshal(body, &rs); err != nil {
		h.t.Errorf("receiver: body %q: %v", body, err)
	}
	if got := r.Header.Get("X-Edgewan-Records"); got != strconv.Itoa(len(rs)) {
		h.t.Errorf("receiver: X-Edgewan-Records: got %s; want %d", got, len(rs))
	}
	h.records = append(h.records, rs...)
	close(h.changed)
	h.changed = make(chan struct{})
}

// waitRecords waits for n records and returns those received.
func (h *httpReceiver) waitRecords(t *testing.T, n int) []sentRecord {
	t.Helper()
	deadline := time.After(wait)
	for {
		h.mu.Lock()
		rs, ch := slices.Clone(h.records), h.changed
		h.mu.Unlock()
		if len(rs) >= n {
			return rs
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("HTTP receiver: got %d records; want %d", len(rs), n)
		}
	}
}

// TestHTTPSink sends to a receiver that fails three times and then accepts: every record
// arrives once, in order, signed, in bodies within the limit, in both formats.
func TestHTTPSink(t *testing.T) {
	t.Setenv("SIEM_TEST_TOKEN", "tok-123")
	t.Setenv("SIEM_TEST_SECRET", "s3cret")
	for _, tc := range []struct {
		name, format string
		ndjson       bool
	}{
		{name: "json", format: "json"},
		{name: "ndjson", format: "ndjson", ndjson: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const maxBody = 3000 // a few records, not a batch of 10
			st := storetest.SQLite(t)
			insert(t, st, 1, 40)
			rcv := newHTTPReceiver(t, tc.ndjson, 3, "s3cret", maxBody)
			sink, err := ParseSinkURL(rcv.srv.URL + "/ingest?token_env=SIEM_TEST_TOKEN&token_scheme=Splunk&secret_env=SIEM_TEST_SECRET" +
				"&header=X-Tenant:+acme&max_body=" + strconv.Itoa(maxBody) + "&format=" + tc.format)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = sink.Close() })
			if want := rcv.srv.URL + "/ingest"; sink.Name() != want {
				t.Errorf("Name: got %q; want %q", sink.Name(), want)
			}
			reg := prometheus.NewRegistry()
			o := testOptions(10)
			o.Registerer = reg
			cursors := newWatchedCursors(t, filepath.Join(t.TempDir(), CursorFile))
			s, err := New(st.Gateway(), []Sink{sink}, cursors, o)
			if err != nil {
				t.Fatal(err)
			}
			start(t, s)
			rs := rcv.waitRecords(t, 40)
			cursors.waitFor(t, sink.Name(), 40)
			var got []int64
			for _, r := range rs {
				got = append(got, r.Seq)
				if r.RawInput != nil {
					t.Errorf("seq %d: raw_input sent", r.Seq)
				}
				if want := record(r.Seq); string(r.Input) != string(want.Input) || r.ID != want.ID || r.Blocked != want.Blocked || r.Truncated {
					t.Errorf("seq %d: got %+v; want %+v", r.Seq, r.Record, *want)
				}
			}
			if !slices.Equal(got, span(1, 40)) {
				t.Errorf("records: got %v; want 1..40 once each", got)
			}
			if n := failures(t, reg, sink.Name(), "send"); n != 3 {
				t.Errorf("send failures: got %v; want 3", n)
			}
			rcv.mu.Lock()
			requests := rcv.requests
			rcv.mu.Unlock()
			if requests-3 <= 40/10 {
				t.Errorf("%d accepted requests for 4 batches of 10 records; want each batch split to fit %d bytes", requests-3, maxBody)
			}
		})
	}
}

// TestHTTPSinkTLS sends over https to a receiver whose certificate the ca parameter names.
func TestHTTPSinkTLS(t *testing.T) {
	got := make(chan []sentRecord, 1)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var rs []sentRecord
		if err := json.NewDecoder(r.Body).Decode(&rs); err != nil {
			t.Errorf("receiver: %v", err)
		}
		got <- rs
	}))
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	sink, err := ParseSinkURL(srv.URL + "/x?ca=" + ca)
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	if err := sink.Send(context.Background(), []*gateway.Record{record(1), record(2)}); err != nil {
		t.Fatal(err)
	}
	if rs := <-got; len(rs) != 2 || rs[0].Seq != 1 || rs[1].Seq != 2 {
		t.Errorf("got %+v; want records 1 and 2", rs)
	}

	// Without the CA the receiver is not trusted.
	untrusted, err := ParseSinkURL(srv.URL + "/x")
	if err != nil {
		t.Fatal(err)
	}
	defer untrusted.Close()
	if err := untrusted.Send(context.Background(), []*gateway.Record{record(1)}); err == nil {
		t.Errorf("Send to an untrusted receiver: got nil; want a certificate error")
	}
}

// failures returns edgewan_siem_failures_total for a sink and stage.
func failures(t *testing.T, reg *prometheus.Registry, sink, stage string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "edgewan_siem_failures_total" {
			for _, m := range mf.GetMetric() {
				if labelIs(m, "sink", sink) && labelIs(m, "stage", stage) {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
