package siem

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/edgewan/edgewan/aigw/gateway"
	"github.com/edgewan/edgewan/controller/store"
	"github.com/edgewan/edgewan/controller/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// wait bounds every wait of the tests; nothing waits by sleeping.
const wait = 20 * time.Second

// record returns the audit record with sequence number seq: every second one has redactions,
// every third one is blocked by a policy, and the model name needs SD-PARAM escaping.
func record(seq int64) *gateway.Record {
	r := &gateway.Record{
		ID: fmt.Sprintf("req-%05d", seq), Seq: seq, Project: "proj-1", KeyID: "key-1", Kind: "chat",
		Model:       `gpt "4]\mini`,
		Input:       json.RawMessage(`{"messages":[{"role":"user","content":"write to [EMAIL_1] é"}]}`),
		Output:      "done",
		Status:      200,
		LatencyMs:   12.5,
		CreatedAt:   time.Unix(1_700_000_000, seq*1000).UTC(),
		UpdatedAt:   time.Unix(1_700_000_000, seq*1000).UTC(),
		RawInputEnc: "v1:sealed", // must never leave
	}
	if seq%2 == 0 {
		r.Redactions = []gateway.Redaction{
			{Type: "ssn", Action: "mask", Start: 1, End: 12, Score: 0.9, Where: "input[0]"},
			{Type: "email", Action: "replace", Placeholder: "[EMAIL_1]", Start: 9, End: 30, Score: 1, Where: "input[0]"},
			{Type: "email", Action: "replace", Placeholder: "[EMAIL_2]", Start: 40, End: 60, Score: 1, Where: "output"},
		}
	}
	if seq%3 == 0 {
		r.Blocked, r.Status, r.PolicyID, r.PolicyVersion = true, 403, "pol-1", 2
		r.Findings = []gateway.Finding{{Rule: "no-secrets", Kind: "keyword", Where: "input[0]"}}
	}
	return r
}

// insert stores the records with sequence numbers from..to in st's audit log.
func insert(t *testing.T, st *store.Store, from, to int64) {
	t.Helper()
	var rs []*gateway.Record
	for seq := from; seq <= to; seq++ {
		rs = append(rs, record(seq))
	}
	if _, err := st.Gateway().InsertRecords(context.Background(), rs, nil); err != nil {
		t.Fatalf("InsertRecords: %v", err)
	}
}

// start runs s until the returned stop is called (or the test ends); stop waits for Run.
func start(t *testing.T, s *Streamer) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(wait):
				t.Errorf("Run did not return within %v of its context's end", wait)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// testOptions are fast Options for tests.
func testOptions(batch int) Options {
	return Options{Batch: batch, PollInterval: 50 * time.Millisecond, RetryBase: 5 * time.Millisecond, RetryMax: 50 * time.Millisecond}
}

// watchedCursors is a FileCursors that tells waiters when a cursor moves.
type watchedCursors struct {
	*FileCursors
	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every change
}

func newWatchedCursors(t *testing.T, path string) *watchedCursors {
	t.Helper()
	fc, err := OpenFileCursors(path)
	if err != nil {
		t.Fatal(err)
	}
	return &watchedCursors{FileCursors: fc, changed: make(chan struct{})}
}

func (w *watchedCursors) SetCursor(ctx context.Context, sink string, seq int64) error {
	err := w.FileCursors.SetCursor(ctx, sink, seq)
	w.mu.Lock()
	close(w.changed)
	w.changed = make(chan struct{})
	w.mu.Unlock()
	return err
}

// waitFor waits until sink's cursor is want.
func (w *watchedCursors) waitFor(t *testing.T, sink string, want int64) {
	t.Helper()
	deadline := time.After(wait)
	for {
		w.mu.Lock()
		ch := w.changed
		w.mu.Unlock()
		got, _ := w.Cursor(context.Background(), sink)
		if got == want {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("cursor of %s: got %d; want %d", sink, got, want)
		}
	}
}

// failSink wraps a sink and reports each failed Send.
type failSink struct {
	Sink
	failed chan error
}

func (f *failSink) Send(ctx context.Context, rs []*gateway.Record) error {
	err := f.Sink.Send(ctx, rs)
	if err != nil && ctx.Err() == nil {
		select {
		case f.failed <- err:
		default:
		}
	}
	return err
}

// syslogMsg is one RFC 5424 message as the test receiver parsed it.
type syslogMsg struct {
	Facility, Severity               int
	Timestamp                        time.Time
	Hostname, AppName, ProcID, MsgID string
	SDID                             string
	Params                           map[string]string
	Record                           sentRecord
}

// sentRecord is the JSON of a record as a SIEM receives it.
type sentRecord struct {
	gateway.Record
	RawInput  *string `json:"raw_input"`
	Truncated bool    `json:"truncated"`
}

// syslogReceiver is a TCP or TLS syslog receiver that parses every frame strictly; it fails
// the test on anything RFC 5424 and RFC 6587 do not allow.
type syslogReceiver struct {
	t        *testing.T
	ln       net.Listener
	dieAfter int // close the listener and every connection after this many messages; 0 never
	msgs     chan *syslogMsg
	died     chan struct{}
	// handshakeErrs has the first TLS handshakes that failed
	handshakeErrs chan error

	mu    sync.Mutex
	n     int
	conns map[net.Conn]bool
	dead  bool
	wg    sync.WaitGroup
}

// startReceiver listens on addr ("127.0.0.1:0" for any port), with TLS when cfg is not nil.
func startReceiver(t *testing.T, addr string, cfg *tls.Config, dieAfter int) *syslogReceiver {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen %s: %v", addr, err)
	}
	if cfg != nil {
		ln = tls.NewListener(ln, cfg)
	}
	r := &syslogReceiver{t: t, ln: ln, dieAfter: dieAfter, msgs: make(chan *syslogMsg, 100000), died: make(chan struct{}), handshakeErrs: make(chan error, 1), conns: map[net.Conn]bool{}}
	r.wg.Add(1)
	go r.accept()
	t.Cleanup(r.close)
	return r
}

func (r *syslogReceiver) addr() string { return r.ln.Addr().String() }

func (r *syslogReceiver) accept() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		r.mu.Lock()
		if r.dead {
			r.mu.Unlock()
			_ = c.Close()
			return
		}
		r.conns[c] = true
		r.wg.Add(1)
		r.mu.Unlock()
		go r.serve(c)
	}
}

func (r *syslogReceiver) serve(c net.Conn) {
	defer r.wg.Done()
	defer c.Close()
	if tc, ok := c.(*tls.Conn); ok {
		if err := tc.Handshake(); err != nil {
			select {
			case r.handshakeErrs <- err:
			default:
			}
			return
		}
	}
	br := bufio.NewReader(c)
	for {
		frame, err := readFrame(br)
		if err != nil {
			r.mu.Lock()
			dead := r.dead
			r.mu.Unlock()
			if !dead && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				r.t.Errorf("receiver: %v", err)
			}
			return
		}
		m, err := parseMessage(frame)
		if err != nil {
			r.t.Errorf("receiver: %v in %q", err, frame)
			return
		}
		r.mu.Lock()
		if r.dead {
			r.mu.Unlock()
			return // read, but lost with the receiver
		}
		r.n++
		r.msgs <- m
		die := r.dieAfter > 0 && r.n == r.dieAfter
		r.mu.Unlock()
		if die {
			r.kill()
			return
		}
	}
}

// kill closes the listener and every connection, losing whatever they had not read yet.
func (r *syslogReceiver) kill() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.dead {
		return
	}
	r.dead = true
	_ = r.ln.Close()
	for c := range r.conns {
		_ = c.Close()
	}
	close(r.died)
}

func (r *syslogReceiver) close() {
	r.kill()
	r.wg.Wait()
}

// next returns the next message received, failing the test after the wait.
func (r *syslogReceiver) next(t *testing.T) *syslogMsg {
	t.Helper()
	select {
	case m := <-r.msgs:
		return m
	case <-time.After(wait):
		t.Fatalf("receiver %s: no message within %v", r.addr(), wait)
		return nil
	}
}

// readFrame reads one octet-counted frame (RFC 6587 3.4.1): MSG-LEN SP SYSLOG-MSG.
func readFrame(br *bufio.Reader) ([]byte, error) {
	n := 0
	for i := 0; ; i++ {
		c, err := br.ReadByte()
		if err != nil {
			if i == 0 {
				return nil, err
			}
			return nil, fmt.Errorf("frame length: %w", err)
		}
		if c == ' ' && i > 0 {
			break
		}
		if c < '0' || c > '9' || (i == 0 && c == '0') || i >= 9 {
			return nil, fmt.Errorf("frame length: unexpected byte %q at %d", c, i)
		}
		n = n*10 + int(c-'0')
	}
	frame := make([]byte, n)
	if _, err := io.ReadFull(br, frame); err != nil {
		return nil, fmt.Errorf("frame of %d bytes: %w", n, err)
	}
	return frame, nil
}

var microTimestamp = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$`)

// parseMessage parses an RFC 5424 SYSLOG-MSG strictly, including the MSG as a BOM-prefixed
// JSON record.
func parseMessage(b []byte) (*syslogMsg, error) {
	p := &msgParser{b: b}
	m := &syslogMsg{Params: map[string]string{}}
	if !p.lit("<") {
		return nil, errors.New("no PRI")
	}
	pri := p.while(func(c byte) bool { return c >= '0' && c <= '9' })
	n, err := strconv.Atoi(pri)
	if err != nil || len(pri) > 3 || (len(pri) > 1 && pri[0] == '0') || n > 191 || !p.lit(">") {
		return nil, fmt.Errorf("bad PRI %q", pri)
	}
	m.Facility, m.Severity = n/8, n%8
	if !p.lit("1 ") {
		return nil, errors.New("VERSION is not 1")
	}
	ts, err := p.field(32)
	if err != nil {
		return nil, fmt.Errorf("TIMESTAMP: %w", err)
	}
	if !microTimestamp.MatchString(ts) {
		return nil, fmt.Errorf("TIMESTAMP %q is not RFC 3339 UTC with microseconds", ts)
	}
	if m.Timestamp, err = time.Parse(time.RFC3339Nano, ts); err != nil {
		return nil, err
	}
	for _, f := range []struct {
		dst *string
		max int
	}{{&m.Hostname, 255}, {&m.AppName, 48}, {&m.ProcID, 128}, {&m.MsgID, 32}} {
		if *f.dst, err = p.field(f.max); err != nil {
			return nil, err
		}
	}
	if p.lit("-") {
		return nil, errors.New("no STRUCTURED-DATA")
	}
	if !p.lit("[") {
		return nil, errors.New("STRUCTURED-DATA does not start with [")
	}
	m.SDID = p.while(sdNameByte)
	if m.SDID == "" || len(m.SDID) > 32 {
		return nil, fmt.Errorf("SD-ID %q", m.SDID)
	}
	for !p.lit("]") {
		if !p.lit(" ") {
			return nil, fmt.Errorf("SD-ELEMENT: want SP or ] at %d", p.i)
		}
		name := p.while(sdNameByte)
		if name == "" || len(name) > 32 || !p.lit(`="`) {
			return nil, fmt.Errorf("PARAM-NAME %q at %d", name, p.i)
		}
		v, err := p.paramValue()
		if err != nil {
			return nil, fmt.Errorf("PARAM-VALUE of %s: %w", name, err)
		}
		if _, dup := m.Params[name]; dup {
			return nil, fmt.Errorf("PARAM-NAME %s twice", name)
		}
		m.Params[name] = v
	}
	if p.lit("[") {
		return nil, errors.New("more than one SD-ELEMENT")
	}
	if !p.lit(" " + bom) {
		return nil, errors.New("MSG does not start with SP and the UTF-8 BOM")
	}
	msg := p.b[p.i:]
	if !utf8.Valid(msg) {
		return nil, errors.New("MSG is not UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(msg))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m.Record); err != nil {
		return nil, fmt.Errorf("MSG: %w", err)
	}
	if dec.More() {
		return nil, errors.New("MSG: more than one JSON value")
	}
	return m, nil
}

func sdNameByte(c byte) bool { return c > 32 && c < 127 && c != '=' && c != ']' && c != '"' }

type msgParser struct {
	b []byte
	i int
}

func (p *msgParser) lit(s string) bool {
	if len(p.b)-p.i >= len(s) && string(p.b[p.i:p.i+len(s)]) == s {
		p.i += len(s)
		return true
	}
	return false
}

func (p *msgParser) while(ok func(byte) bool) string {
	j := p.i
	for j < len(p.b) && ok(p.b[j]) {
		j++
	}
	s := string(p.b[p.i:j])
	p.i = j
	return s
}

// field reads 1 to max PRINTUSASCII and the SP after them.
func (p *msgParser) field(max int) (string, error) {
	s := p.while(func(c byte) bool { return c >= 33 && c <= 126 })
	if s == "" || len(s) > max || !p.lit(" ") {
		return "", fmt.Errorf("header field %q at %d", s, p.i)
	}
	return s, nil
}

// paramValue reads a PARAM-VALUE and its closing quote: '"', '\' and ']' must be escaped; a
// backslash before any other character is itself (RFC 5424 6.3.3).
func (p *msgParser) paramValue() (string, error) {
	var out []byte
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			if !utf8.Valid(out) {
				return "", errors.New("not UTF-8")
			}
			return string(out), nil
		case c == ']':
			return "", fmt.Errorf("unescaped ] at %d", p.i)
		case c == '\\' && p.i+1 < len(p.b) && (p.b[p.i+1] == '"' || p.b[p.i+1] == '\\' || p.b[p.i+1] == ']'):
			out = append(out, p.b[p.i+1])
			p.i += 2
		default:
			out = append(out, c)
			p.i++
		}
	}
	return "", errors.New("no closing quote")
}

// checkMessage compares a received message with the record it carries.
func checkMessage(t *testing.T, m *syslogMsg, facility int, hostname string) {
	t.Helper()
	want := record(m.Record.Seq)
	sev := severityNotice
	if want.Blocked {
		sev = severityWarning
	}
	if m.Facility != facility || m.Severity != sev {
		t.Errorf("seq %d: facility, severity: got %d, %d; want %d, %d", want.Seq, m.Facility, m.Severity, facility, sev)
	}
	if !m.Timestamp.Equal(want.CreatedAt) || m.Hostname != hostname || m.AppName != "edgewan" || m.ProcID != "-" || m.MsgID != "aigw-audit" || m.SDID != "edgewan@32473" {
		t.Errorf("seq %d: header: got %v %s %s %s %s %s", want.Seq, m.Timestamp, m.Hostname, m.AppName, m.ProcID, m.MsgID, m.SDID)
	}
	wantParams := map[string]string{
		"request_id": want.ID, "seq": strconv.FormatInt(want.Seq, 10), "project": want.Project, "kind": want.Kind,
		"model": want.Model, "blocked": strconv.FormatBool(want.Blocked), "status": strconv.Itoa(want.Status), "latency_ms": "12.5",
	}
	if want.Blocked {
		wantParams["policy"], wantParams["policy_version"] = want.PolicyID, "2"
	}
	if len(want.Redactions) > 0 {
		wantParams["entities"] = "email,ssn"
	}
	if !mapsEqual(m.Params, wantParams) {
		t.Errorf("seq %d: SD-PARAMs: got %v; want %v", want.Seq, m.Params, wantParams)
	}
	got := m.Record
	if got.RawInput != nil {
		t.Errorf("seq %d: raw_input sent: %q", want.Seq, *got.RawInput)
	}
	if got.ID != want.ID || got.Output != want.Output || string(got.Input) != string(want.Input) || got.Truncated ||
		got.Blocked != want.Blocked || len(got.Redactions) != len(want.Redactions) || !got.CreatedAt.Equal(want.CreatedAt) {
		t.Errorf("seq %d: record: got %+v; want %+v", want.Seq, got.Record, *want)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// pki is a test CA with a server certificate for 127.0.0.1 and a client certificate, the CA
// and the client's certificate and key also written to files.
type pki struct {
	server                    *tls.Config // requires and verifies client certificates
	caFile, certFile, keyFile string
	pool                      *x509.CertPool
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	dir := t.TempDir()
	caKey := newKey(t)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "siem test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	issue := func(serial int64, cn string, usage x509.ExtKeyUsage, ips []net.IP) ([]byte, *ecdsa.PrivateKey) {
		key := newKey(t)
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: ips,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return der, key
	}
	srvDER, srvKey := issue(2, "receiver", x509.ExtKeyUsageServerAuth, []net.IP{net.IPv4(127, 0, 0, 1)})
	cliDER, cliKey := issue(3, "edgewan", x509.ExtKeyUsageClientAuth, nil)
	p := &pki{caFile: filepath.Join(dir, "ca.pem"), certFile: filepath.Join(dir, "client.pem"), keyFile: filepath.Join(dir, "client-key.pem")}
	p.pool = x509.NewCertPool()
	p.pool.AddCert(ca)
	writePEM(t, p.caFile, "CERTIFICATE", caDER)
	writePEM(t, p.certFile, "CERTIFICATE", cliDER)
	cliKeyDER, _ := x509.MarshalECPrivateKey(cliKey)
	writePEM(t, p.keyFile, "EC PRIVATE KEY", cliKeyDER)
	p.server = &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{srvDER}, PrivateKey: srvKey}},
		ClientAuth:   tls.RequireAndVerifyClientCert, ClientCAs: p.pool, MinVersion: tls.VersionTLS12,
	}
	return p
}

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// seqs lists the sequence numbers of msgs.
func seqs(msgs []*syslogMsg) []int64 {
	out := make([]int64, len(msgs))
	for i, m := range msgs {
		out[i] = m.Record.Seq
	}
	return out
}

// span returns from..to.
func span(from, to int64) []int64 {
	var out []int64
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}
