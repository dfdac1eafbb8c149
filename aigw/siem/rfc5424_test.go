package siem

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/edgewan/edgewan/aigw/gateway"
)

func TestSDEscape(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{name: "plain", in: "proj-1", want: "proj-1"},
		{name: "empty", in: "", want: ""},
		{name: "quote", in: `say "hi"`, want: `say \"hi\"`},
		{name: "backslash", in: `C:\dir\`, want: `C:\\dir\\`},
		{name: "bracket", in: "a]b", want: `a\]b`},
		{name: "open bracket and equals stay", in: "[x=1]", want: `[x=1\]`},
		{name: "all three", in: `"\]`, want: `\"\\\]`},
		{name: "escaped already", in: `\"`, want: `\\\"`},
		{name: "utf-8", in: "café 日本", want: "café 日本"},
		{name: "invalid utf-8", in: "a\xffb\xc3", want: "a\uFFFDb\uFFFD"},
		{name: "control characters stay", in: "a\nb\x00", want: "a\nb\x00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(appendSDValue(nil, tc.in)); got != tc.want {
				t.Errorf("appendSDValue(%q): got %q; want %q", tc.in, got, tc.want)
			}
		})
	}
}

// FuzzSDEscape checks that every string escapes to a PARAM-VALUE a strict parser reads back as
// the string (with invalid UTF-8 replaced), and that nothing can close the value or element.
func FuzzSDEscape(f *testing.F) {
	for _, s := range []string{"", `"`, `\`, "]", `a\"b`, `\\]]""`, "\xff", "é]", "x\\"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		esc := appendSDValue(nil, s)
		if !utf8.Valid(esc) {
			t.Fatalf("%q escaped to invalid UTF-8 %q", s, esc)
		}
		p := &msgParser{b: append(esc, `" rest`...)}
		got, err := p.paramValue()
		if err != nil {
			t.Fatalf("%q escaped to %q, which does not parse: %v", s, esc, err)
		}
		if want := string([]rune(s)); got != want { // each invalid byte a U+FFFD
			t.Fatalf("%q escaped to %q, which parses as %q; want %q", s, esc, got, want)
		}
		if p.i != len(esc)+1 {
			t.Fatalf("%q escaped to %q: the value ended at %d; want %d", s, esc, p.i, len(esc)+1)
		}
	})
}

// TestFormat pins one message byte for byte.
func TestFormat(t *testing.T) {
	r := &gateway.Record{
		ID: "req-1", Seq: 42, Project: `team "a"`, KeyID: "key-1", Kind: "chat", Model: "gpt-4o",
		Input:      json.RawMessage(`{"q":"<x>"}`),
		Redactions: []gateway.Redaction{{Type: "ssn", Action: "mask"}, {Type: "email", Action: "mask"}},
		PolicyID:   "pol]1", PolicyVersion: 3, Blocked: true, Status: 403, LatencyMs: 1.25,
		CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 678901234, time.FixedZone("CET", 3600)),
		RawInput:  "secret", RawInputEnc: "v1:sealed",
	}
	f := newFormatter(16, "gw-1", 0)
	got, err := f.appendFrame(nil, r)
	if err != nil {
		t.Fatal(err)
	}
	msg := `<132>1 2026-01-02T02:04:05.678901Z gw-1 edgewan - aigw-audit ` +
		`[edgewan@32473 request_id="req-1" seq="42" project="team \"a\"" kind="chat" model="gpt-4o" blocked="true" policy="pol\]1" policy_version="3" status="403" latency_ms="1.25" entities="email,ssn"] ` +
		"\xEF\xBB\xBF" + `{"request_id":"req-1","seq":42,"project":"team \"a\"","key":"key-1","kind":"chat","model":"gpt-4o","input":{"q":"<x>"},` +
		`"redactions":[{"type":"ssn","action":"mask","start":0,"end":0,"score":0,"where":""},{"type":"email","action":"mask","start":0,"end":0,"score":0,"where":""}],` +
		`"findings":null,"policy":"pol]1","policy_version":3,"blocked":true,"status":403,"latency_ms":1.25,"created_at":"2026-01-02T03:04:05.678901234+01:00","updated_at":"0001-01-01T00:00:00Z"}`
	want := strconv.Itoa(len(msg)) + " " + msg
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if _, err := parseMessage([]byte(msg)); err != nil {
		t.Errorf("the strict parser refuses it: %v", err)
	}
}

// TestFormatTruncates leaves input and output out of a record too large for one message, and
// sends a record whose input is not JSON the same way rather than never.
func TestFormatTruncates(t *testing.T) {
	big := record(2)
	big.Input = json.RawMessage(`{"content":"` + strings.Repeat("x", 5000) + `"}`)
	bad := record(4)
	bad.Input = json.RawMessage(`{not json`)
	for _, tc := range []struct {
		name string
		r    *gateway.Record
	}{
		{name: "too large", r: big},
		{name: "input not JSON", r: bad},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFormatter(16, "gw-1", 4096)
			frame, err := f.appendFrame(nil, tc.r)
			if err != nil {
				t.Fatal(err)
			}
			_, msg, _ := strings.Cut(string(frame), " ")
			if len(msg) > 4096 {
				t.Errorf("message of %d bytes; want at most 4096", len(msg))
			}
			m, err := parseMessage([]byte(msg))
			if err != nil {
				t.Fatal(err)
			}
			if !m.Record.Truncated || string(m.Record.Input) != "null" || m.Record.Output != "" || m.Record.ID != tc.r.ID {
				t.Errorf("got truncated=%v input=%s output=%q id=%s; want truncated=true input=null output=\"\" id=%s",
					m.Record.Truncated, m.Record.Input, m.Record.Output, m.Record.ID, tc.r.ID)
			}
			if m.Params["entities"] != "email,ssn" || m.Params["request_id"] != tc.r.ID {
				t.Errorf("SD-PARAMs: got %v", m.Params)
			}
		})
	}
}

func TestParseFacility(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
		err  bool
	}{
		{in: "", want: 16}, {in: "local0", want: 16}, {in: "local7", want: 23}, {in: "auth", want: 4},
		{in: "0", want: 0}, {in: "23", want: 23}, {in: "24", err: true}, {in: "-1", err: true}, {in: "LOCAL0", err: true},
	} {
		got, err := parseFacility(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("parseFacility(%q): got %d, %v; want %d, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func BenchmarkFormat(b *testing.B) {
	r := record(2)
	f := newFormatter(16, "gw-1", DefaultMaxMessage)
	buf := make([]byte, 0, 64<<10)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = f.appendFrame(buf[:0], r); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(buf)))
}
