package guard

import (
	"encoding/json"
	"strings"
	"testing"
)

func reversibleSession(t *testing.T) (*Session, string, string) {
	t.Helper()
	p := DefaultPolicy()
	p.Reversible = true
	s := newGuard(t, p).NewSession()
	in := s.Input("Mail Jane.Doe@Example.com and bob@example.org, again jane.doe@example.com. Card 4111 1111 1111 1111.")
	if want := "Mail [EMAIL_1] and [EMAIL_2], again [EMAIL_1]."; !strings.HasPrefix(in.Text, want) {
		t.Fatalf("input redacted to %q, want prefix %q", in.Text, want)
	}
	return s, "Jane.Doe@Example.com", "bob@example.org"
}

func TestRestore(t *testing.T) {
	s, jane, bob := reversibleSession(t)
	for _, tc := range []struct{ in, want string }{
		{"Hi [EMAIL_1], cc [EMAIL_2].", "Hi " + jane + ", cc " + bob + "."},
		{"[EMAIL_3] and [PERSON_1] are not ours", "[EMAIL_3] and [PERSON_1] are not ours"}, // not issued here
		{"[EMAIL:0123456789ab] [email_1] [EMAIL_1", "[EMAIL:0123456789ab] [email_1] [EMAIL_1"},
		{"[[EMAIL_1]]", "[" + jane + "]"},
		{"no brackets", "no brackets"},
	} {
		if got := s.Restore(tc.in, false); got != tc.want {
			t.Errorf("Restore(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// An output redaction's placeholder (a value the model produced) is not restorable.
	out := s.Output("Write to carol@example.net")
	if got := s.Restore(out.Text, false); got != out.Text || !strings.Contains(got, "[EMAIL_3]") {
		t.Errorf("output placeholder restored: %q -> %q", out.Text, got)
	}
	// A fresh session (another request) restores nothing.
	other := s.g.NewSession()
	other.Input("nothing here")
	if got := other.Restore("[EMAIL_1]", false); got != "[EMAIL_1]" {
		t.Errorf("another session restored %q", got)
	}
}

func TestRestoreOffByDefault(t *testing.T) {
	s := newGuard(t, DefaultPolicy()).NewSession()
	s.Input("Mail jane@example.com")
	if got := s.Restore("[EMAIL_1]", false); got != "[EMAIL_1]" {
		t.Errorf("restored without Reversible: %q", got)
	}
}

// TestRestorerSplit streams an answer cut at every pair of byte offsets: the pieces joined
// equal the whole answer restored, and no piece holds part of a placeholder.
func TestRestorerSplit(t *testing.T) {
	s, jane, bob := reversibleSession(t)
	answer := "Dear [EMAIL_1], [EMAIL_2][EMAIL_1] [EMAIL_9] [x] done ["
	want := "Dear " + jane + ", " + bob + jane + " [EMAIL_9] [x] done ["
	for i := 0; i <= len(answer); i++ {
		for j := i; j <= len(answer); j++ {
			r := s.Restorer(false)
			var got strings.Builder
			for _, c := range []string{answer[:i], answer[i:j], answer[j:]} {
				piece := r.Write(c)
				if strings.Contains(piece, "[EMAIL_1") || strings.Contains(piece, "[EMAIL_2") || strings.HasSuffix(piece, "[EMAIL_") {
					t.Fatalf("cut %d,%d: piece %q holds part of a placeholder", i, j, piece)
				}
				got.WriteString(piece)
			}
			got.WriteString(r.Flush())
			if got.String() != want {
				t.Fatalf("cut %d,%d: got %q, want %q", i, j, got.String(), want)
			}
		}
	}
}

func TestRestoreJSON(t *testing.T) {
	p := DefaultPolicy()
	p.Reversible = true
	s := newGuard(t, p).NewSession()
	in := s.InputJSON(`{"to": "Jane Doe <jane@example.com>", "addr": "4521 Broadway, New York, NY 10040"}`)
	if strings.Contains(in.Text, "jane@example.com") {
		t.Fatalf("not redacted: %s", in.Text)
	}
	var args map[string]string
	if err := json.Unmarshal([]byte(s.Restore(in.Text, true)), &args); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(args["to"], "jane@example.com") {
		t.Errorf("restored args %v", args)
	}
	// A value with quotes and a backslash stays valid JSON when restored into a JSON string.
	s.originals["[PERSON_9]"] = `O"Brien \ x`
	s.maxPH = max(s.maxPH, len("[PERSON_9]"))
	var v struct{ Name string }
	if err := json.Unmarshal([]byte(s.Restore(`{"Name": "[PERSON_9]"}`, true)), &v); err != nil || v.Name != `O"Brien \ x` {
		t.Errorf("json restore: %q, %v", v.Name, err)
	}
}

// FuzzRestorer: an answer restored in pieces (cut at two fuzzed offsets) equals the whole
// answer restored, and no piece ends inside a placeholder this session issued.
func FuzzRestorer(f *testing.F) {
	f.Add("Dear [EMAIL_1], [EMAIL_2][EMAIL_1] [EMAIL_9] [x] done [", uint16(3), uint16(17))
	f.Add("[[[EMAIL_1]]] [EMAIL_", uint16(1), uint16(2))
	p := DefaultPolicy()
	p.Reversible = true
	g, err := New(p, sharedEngine(), testKey)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, answer string, a, b uint16) {
		s := g.NewSession()
		s.Input("Mail jane.doe@example.com and bob@example.org.")
		i, j := int(a)%(len(answer)+1), int(b)%(len(answer)+1)
		i, j = min(i, j), max(i, j)
		r := s.Restorer(false)
		var got strings.Builder
		for _, c := range []string{answer[:i], answer[i:j], answer[j:]} {
			piece := r.Write(c)
			for ph := range s.originals {
				// A piece may end in "[E..." only when what follows (held) cannot continue it.
				for k := 1; k < len(ph); k++ {
					if strings.HasSuffix(piece, ph[:k]) && (len(r.pending) == 0 || isPlaceholderByte(r.pending[0]) || r.pending[0] == ']') {
						t.Fatalf("piece %q ends in part of %s", piece, ph)
					}
				}
			}
			got.WriteString(piece)
		}
		got.WriteString(r.Flush())
		if want := s.Restore(answer, false); got.String() != want {
			t.Fatalf("pieces give %q, whole %q", got.String(), want)
		}
	})
}

// BenchmarkRestorer streams a 4 KB answer in 16-byte chunks through a Restorer of a session
// with placeholders issued: text without '[' passes without copying; placeholders are
// replaced through the hold-back buffer.
func BenchmarkRestorer(b *testing.B) {
	p := DefaultPolicy()
	p.Reversible = true
	s := newGuard(b, p).NewSession()
	s.Input("Mail jane.doe@example.com and bob@example.org, I am Thandiwe Mbeki.")
	answer := strings.Repeat("Dear [PERSON_1], we wrote to [EMAIL_1] and [EMAIL_2] about the plain text that follows here. ", 45)[:4096]
	var chunks []string
	for i := 0; i < len(answer); i += 16 {
		chunks = append(chunks, answer[i:min(i+16, len(answer))])
	}
	b.SetBytes(int64(len(answer)))
	b.ReportAllocs()
	for b.Loop() {
		r := s.Restorer(false)
		for _, c := range chunks {
			_ = r.Write(c)
		}
		_ = r.Flush()
	}
}
