package provider

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// errSSE marks a stream that breaks the server-sent events format or its size limits.
var errSSE = errors.New("sse")

// sseEvent is one dispatched event. Both slices are only valid until the next call of next.
type sseEvent struct {
	Type []byte // the event: field; empty for the default type, "message"
	Data []byte // the data: lines joined with "\n"
}

// sseReader parses a text/event-stream as the HTML standard says (9.2.6): lines end with CRLF,
// LF or CR; a blank line dispatches the event; "data" lines accumulate; "event" names it;
// lines starting with ":" are comments; other fields ("id", "retry", unknown ones) are ignored;
// a leading BOM is dropped; an event cut off by the end of the stream is not dispatched. Lines
// and events are bounded, so a broken or hostile upstream cannot make it buffer without end.
type sseReader struct {
	sc      *bufio.Scanner
	max     int
	skipLF  bool // the last line ended with CR: a LF right after it belongs to it
	started bool // past the optional BOM
	typ     []byte
	data    []byte
	hasData bool
}

func newSSEReader(r io.Reader, max int) *sseReader {
	s := &sseReader{max: max}
	s.sc = bufio.NewScanner(r)
	s.sc.Buffer(make([]byte, 0, min(4096, max)), max)
	s.sc.Split(s.split)
	return s
}

// split cuts lines at CRLF, LF or CR, without waiting for more input after a CR (the LF that
// may follow is dropped when it comes), so an event ending in CR CR is seen at once.
func (s *sseReader) split(data []byte, atEOF bool) (advance int, token []byte, err error) {
	start := 0
	if s.skipLF && len(data) > 0 {
		s.skipLF = false
		if data[0] == '\n' {
			start = 1
		}
	}
	if i := bytes.IndexAny(data[start:], "\r\n"); i >= 0 {
		i += start
		s.skipLF = data[i] == '\r'
		return i + 1, data[start:i], nil
	}
	if atEOF && len(data) > start {
		return len(data), data[start:], nil
	}
	return start, nil, nil
}

// next returns the next event; io.EOF at the end of the stream (an event cut off by it is
// dropped, as the standard says), or an error wrapping errSSE for an oversized line or event.
func (s *sseReader) next() (sseEvent, error) {
	for s.sc.Scan() {
		line := s.sc.Bytes()
		if !s.started {
			s.started = true
			line = bytes.TrimPrefix(line, []byte("\xEF\xBB\xBF"))
		}
		if len(line) == 0 {
			if !s.hasData {
				s.typ = s.typ[:0]
				continue
			}
			ev := sseEvent{Type: s.typ, Data: s.data[:len(s.data)-1]}
			s.typ, s.data, s.hasData = s.typ[:0], s.data[:0], false
			return ev, nil
		}
		if line[0] == ':' {
			continue
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "data":
			if len(s.data)+len(value)+1 > s.max {
				return sseEvent{}, fmt.Errorf("%w: event larger than %d bytes", errSSE, s.max)
			}
			s.data = append(append(s.data, value...), '\n')
			s.hasData = true
		case "event":
			s.typ = append(s.typ[:0], value...)
		}
	}
	if err := s.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return sseEvent{}, fmt.Errorf("%w: line longer than %d bytes", errSSE, s.max)
		}
		return sseEvent{}, err
	}
	return sseEvent{}, io.EOF
}
