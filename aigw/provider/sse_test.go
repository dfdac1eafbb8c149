package provider

import (
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

// ev is an event as the tests compare it.
type ev struct{ Type, Data string }

// readAll reads events until the end or an error.
func readAll(r io.Reader, max int) ([]ev, error) {
	s := newSSEReader(r, max)
	var out []ev
	for {
		e, err := s.next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, ev{string(e.Type), string(e.Data)})
	}
}

func TestSSE(t *testing.T) {
	long := strings.Repeat("x", 100)
	tests := []struct {
		name    string
		in      string
		max     int
		want    []ev
		wantErr string
	}{
		{"one event", "data: hi\n\n", 0, []ev{{"", "hi"}}, ""},
		{"CRLF", "data: a\r\n\r\ndata: b\r\n\r\n", 0, []ev{{"", "a"}, {"", "b"}}, ""},
		{"CR", "data: a\r\rdata: b\r\r", 0, []ev{{"", "a"}, {"", "b"}}, ""},
		{"mixed line ends", "data: a\r\n\ndata: b\r\r\ndata: c\n\r", 0, []ev{{"", "a"}, {"", "b"}, {"", "c"}}, ""},
		{"multi-line data", "data: a\ndata: b\ndata:\n\n", 0, []ev{{"", "a\nb\n"}}, ""},
		{"no space after colon, only one space removed", "data:a\ndata:  b\n\n", 0, []ev{{"", "a\n b"}}, ""},
		{"comments", ": ping\ndata: a\n: more\n\n:\n\n", 0, []ev{{"", "a"}}, ""},
		{"event type", "event: message_start\ndata: {}\n\nevent: ping\ndata: {\"type\": \"ping\"}\n\n", 0,
			[]ev{{"message_start", "{}"}, {"ping", `{"type": "ping"}`}}, ""},
		{"type resets after dispatch", "event: x\ndata: 1\n\ndata: 2\n\n", 0, []ev{{"x", "1"}, {"", "2"}}, ""},
		{"event without data is not dispatched", "event: x\n\ndata: 2\n\n", 0, []ev{{"", "2"}}, ""},
		{"field without colon", "data\n\n", 0, []ev{{"", ""}}, ""},
		{"id, retry and unknown fields ignored", "id: 7\nretry: 100\nfoo: bar\ndata: a\n\n", 0, []ev{{"", "a"}}, ""},
		{"colon in value", "data: {\"a\":\"b:c\"}\n\n", 0, []ev{{"", `{"a":"b:c"}`}}, ""},
		{"BOM", "\xEF\xBB\xBFdata: a\n\n", 0, []ev{{"", "a"}}, ""},
		{"BOM only at the start", "data: a\n\n\xEF\xBB\xBFdata: b\n\n", 0, []ev{{"", "a"}}, ""},
		{"blank lines between events", "\n\n\ndata: a\n\n\n\n", 0, []ev{{"", "a"}}, ""},
		{"event cut by the end is dropped", "data: a\n\ndata: b\n", 0, []ev{{"", "a"}}, ""},
		{"last line without end", "data: a\n\ndata: b", 0, []ev{{"", "a"}}, ""},
		{"empty", "", 0, nil, ""},
		{"invalid UTF-8 passes through", "data: \xff\xfe\n\n", 0, []ev{{"", "\xff\xfe"}}, ""},
		{"line at the limit", "data: " + long + "\n\n", 107, []ev{{"", long}}, ""},
		{"line over the limit", "data: " + long + "\n\n", 106, nil, "line longer than 106 bytes"},
		{"event over the limit", strings.Repeat("data: "+long[:50]+"\n", 3) + "\n", 120, nil, "event larger than 120 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			max := tt.max
			if max == 0 {
				max = 1 << 16
			}
			for _, r := range []io.Reader{strings.NewReader(tt.in), iotest.OneByteReader(strings.NewReader(tt.in))} {
				got, err := readAll(r, max)
				if !slices.Equal(got, tt.want) {
					t.Errorf("events %q; want %q", got, tt.want)
				}
				if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, errSSE)) {
					t.Errorf("error %v; want %q", err, tt.wantErr)
				}
			}
		})
	}
}

func TestSSEReadError(t *testing.T) {
	broken := io.MultiReader(strings.NewReader("data: a\n\ndata: b"), iotest.ErrReader(io.ErrUnexpectedEOF))
	got, err := readAll(broken, 1<<10)
	if !slices.Equal(got, []ev{{"", "a"}}) || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("got %q, %v; want one event, then io.ErrUnexpectedEOF", got, err)
	}
}

// refSSE parses a whole stream the plain way, first into lines and then line by line as the
// standard says: the oracle of the fuzz target.
func refSSE(in string) []ev {
	in = strings.TrimPrefix(in, "\xEF\xBB\xBF")
	var lines []string
	for {
		i := strings.IndexAny(in, "\r\n")
		if i < 0 {
			break // a last line without an end cannot be followed by the blank line of an event
		}
		lines = append(lines, in[:i])
		if in[i] == '\r' && i+1 < len(in) && in[i+1] == '\n' {
			i++
		}
		in = in[i+1:]
	}
	var out []ev
	var typ, data string
	hasData := false
	for _, line := range lines {
		switch {
		case line == "":
			if hasData {
				out = append(out, ev{typ, strings.TrimSuffix(data, "\n")})
			}
			typ, data, hasData = "", "", false
		case line[0] == ':':
		default:
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "data":
				data += value + "\n"
				hasData = true
			case "event":
				typ = value
			}
		}
	}
	return out
}

func FuzzSSE(f *testing.F) {
	for _, s := range []string{
		"data: hi\n\n",
		"event: message_start\r\ndata: {\"type\":\"message_start\"}\r\n\r\n",
		"data: a\r\rdata: b\r\n\r\n: c\n\n",
		"\xEF\xBB\xBFdata:x\ndata\n\nevent:e\nid:1\nretry:2\n\n",
		"data: [DONE]\n\ndata: tail",
		"\r\n\r\r\n\n:\r",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		// Against the plain parser, without limits in play.
		got, err := readAll(strings.NewReader(in), 1<<20)
		if err != nil {
			t.Fatalf("error %v on %q", err, in)
		}
		if want := refSSE(in); !slices.Equal(got, want) {
			t.Fatalf("events %q; want %q for %q", got, want, in)
		}
		// With a small limit: same result however the input is cut, nothing over the limit.
		const max = 24
		whole, errWhole := readAll(strings.NewReader(in), max)
		bytewise, errBytewise := readAll(iotest.OneByteReader(strings.NewReader(in)), max)
		if !slices.Equal(whole, bytewise) || (errWhole == nil) != (errBytewise == nil) {
			t.Fatalf("whole %q, %v; byte by byte %q, %v for %q", whole, errWhole, bytewise, errBytewise, in)
		}
		for _, e := range whole {
			if len(e.Data) > max {
				t.Fatalf("event of %d bytes over the limit %d", len(e.Data), max)
			}
		}
		if errWhole != nil && !errors.Is(errWhole, errSSE) {
			t.Fatalf("error %v; want errSSE", errWhole)
		}
	})
}

// BenchmarkSSE parses an OpenAI-shaped stream of 100 chunks.
func BenchmarkSSE(b *testing.B) {
	var sb strings.Builder
	for range 100 {
		sb.WriteString(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"word "},"finish_reason":null}]}` + "\n\n")
	}
	sb.WriteString("data: [DONE]\n\n")
	in := sb.String()
	r := strings.NewReader(in)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		r.Reset(in)
		s := newSSEReader(r, maxSSELine)
		for {
			if _, err := s.next(); err != nil {
				break
			}
		}
	}
}
