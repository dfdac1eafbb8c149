package guard

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Reversible redaction (Policy.Reversible): the placeholders a session issued for its input
// texts are mapped back to the original values in the model's answer. The table lives in the
// Session, so only this request's placeholders can be restored: a placeholder the model makes
// up, or copies from another request or project, matches nothing here and stays as it is.
// Placeholders issued for the answer itself (a value the model produced) and hash tags are
// never restored.

// InputJSON is Input for a text that is JSON (a tool call's arguments): the values kept for
// restoring are JSON-unescaped, so that they can be escaped again for whatever they go into.
func (s *Session) InputJSON(text string) Result {
	s.jsonIn = true
	defer func() { s.jsonIn = false }()
	return s.Input(text)
}

// remember keeps the first spelling of the value behind placeholder ph.
func (s *Session) remember(ph, value string) {
	if _, ok := s.originals[ph]; ok {
		return
	}
	if s.originals == nil {
		s.originals = map[string]string{}
	}
	if s.jsonIn {
		var u string
		if json.Unmarshal([]byte(`"`+value+`"`), &u) == nil {
			value = u
		}
	}
	s.originals[ph] = value
	s.maxPH = max(s.maxPH, len(ph))
}

// Reversible reports whether the session restores placeholders (the policy asks for it and
// an input was redacted).
func (s *Session) Reversible() bool { return len(s.originals) > 0 }

// Restore returns text with this session's input placeholders replaced by their values;
// jsonString escapes the values as JSON string content (for tool call arguments).
func (s *Session) Restore(text string, jsonString bool) string {
	if len(s.originals) == 0 || strings.IndexByte(text, '[') < 0 {
		return text
	}
	r := s.Restorer(jsonString)
	return r.Write(text) + r.Flush()
}

// Restorer restores placeholders in a streamed answer. A placeholder may be split across
// chunks, so Write holds back a tail that could still become one (at most the longest
// placeholder issued, less a byte) and never emits part of a placeholder. Not safe for
// concurrent use.
type Restorer struct {
	s       *Session
	json    bool
	pending []byte
}

// Restorer starts restoring a stream; jsonString as in Restore.
func (s *Session) Restorer(jsonString bool) *Restorer { return &Restorer{s: s, json: jsonString} }

// Write adds a chunk and returns the text that can be sent now.
func (r *Restorer) Write(chunk string) string {
	if len(r.s.originals) == 0 {
		return chunk
	}
	if len(r.pending) == 0 && strings.IndexByte(chunk, '[') < 0 {
		return chunk
	}
	r.pending = append(r.pending, chunk...)
	out, rest := r.restore(r.pending, false)
	r.pending = append(r.pending[:0], rest...)
	return out
}

// Flush returns what is held back at the end of the stream.
func (r *Restorer) Flush() string {
	if len(r.pending) == 0 {
		return ""
	}
	out, _ := r.restore(r.pending, true)
	r.pending = r.pending[:0]
	return out
}

// restore replaces the complete placeholders of buf and returns the text with them replaced
// and, unless final, the tail that may be the start of a placeholder.
func (r *Restorer) restore(buf []byte, final bool) (string, []byte) {
	var b strings.Builder
	b.Grow(len(buf))
	maxLen := r.s.maxPH
	for {
		i := bytes.IndexByte(buf, '[')
		if i < 0 {
			b.Write(buf)
			return b.String(), nil
		}
		b.Write(buf[:i])
		buf = buf[i:]
		j := 1 // buf[:j] may start a placeholder: '[' then upper-case letters, '_' and digits
		for j < len(buf) && j < maxLen && isPlaceholderByte(buf[j]) {
			j++
		}
		switch {
		case j < len(buf) && j < maxLen && buf[j] == ']':
			if v, ok := r.s.originals[string(buf[:j+1])]; ok {
				r.writeValue(&b, v)
			} else {
				b.Write(buf[:j+1])
			}
			buf = buf[j+1:]
		case j == len(buf) && j < maxLen && !final:
			return b.String(), buf // could still become a placeholder
		default:
			b.WriteByte('[')
			buf = buf[1:]
		}
	}
}

func isPlaceholderByte(c byte) bool { return 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' }

func (r *Restorer) writeValue(b *strings.Builder, v string) {
	if !r.json {
		b.WriteString(v)
		return
	}
	var e bytes.Buffer
	enc := json.NewEncoder(&e)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // a string always encodes
	q := bytes.TrimSuffix(e.Bytes(), []byte("\n"))
	b.Write(q[1 : len(q)-1])
}
