package guard

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/edgewan/edgewan/aigw/detect"
)

// streamPieces are the building blocks of random responses: entities (with the context words
// some of them need), multi-line structures, multi-byte text and filler.
var streamPieces = []string{
	"jane.doe@example.com", "Write to o.brien+tag@mail.example.co.uk today",
	"call (415) 555-2671", "phone +44 20 7946 0958", "whatsapp +4915123456789", "tel 415-555-2671",
	"card 4111 1111 1111 1111", "amex 3782 822463 10005", "card 5555555555554444",
	"SSN: 123-45-6788", "social security 219-45-6788",
	"IBAN DE89 3704 0044 0532 0130 00", "GB29NWBK60161331926819",
	"server 192.168.1.10", "host 2001:db8::ff00:42:8329", "MAC 00:1A:2B:3C:4D:5E",
	"https://example.com/a/b?x=1", "see www.example.org/docs.",
	"https://example.com/" + strings.Repeat("very-long-path-segment/", 14) + "end",
	"born 12 March 1985", "date of birth: 1985-03-12", "DOB 12/03/1985",
	"742 Evergreen Terrace, Springfield, IL 62704", "ship to 12 rue de la Paix, 75002 Paris",
	"Hauptstraße 12, 10115 Berlin", "1600 Pennsylvania Avenue NW, Washington, DC 20500",
	"Dear Anna Schmidt,", "my name is John Smith", "Best regards,\nZoltán Kovács\n", "Dr. Maria Garcia said",
	"Thanks,\nSarah\n", "I'm Peter Müller from sales",
	"AKIAIOSFODNN7EXAMPLE", "token ghp_abcdefghijklmnopqrstuvwxyz0123456789", "DB_PASSWORD=x1y2z3w4Q9",
	`"api_key": "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH"`,
	"Authorization: Bearer abcdef0123456789abcdef0123",
	"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
	"-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi\nZ1BjP5CE8Wqd9dPn7Q1aq6PxeQ2Z\n-----END RSA PRIVATE KEY-----",
	"221 Baker Street, Marylebone, London NW1 6XE", "350 Fifth Avenue, Suite 3400, New York, NY 10118",
	"send it to 10 Downing Street, London SW1A 2AA please", "Calle de Alcalá 23, 28014 Madrid",
	"Dear Maria Fernanda Garcia Lopez,", "nacido el 12 de septiembre de 1985", "geboren am 3. Oktober 1990",
	"IBAN FR14 2004 1010 0505 0001 3M02 606", "RU03 0445 2522 5408 1781 0538 0913 1041 9 is the account",
	"LC55 HEMM 0001 0001 0012 0012 0002 3015", "4155552671 is my phone number", "123456788 is my ssn", "SSN:\n123-45-6788", "my number is 415 555 2671 ext. 12",
	"Grüße aus Köln", "日本語のテキストです", "🙂👍", "naïve café", "Ünïcödé",
	"The order 4471-2209 shipped", "version 2.14.3", "ticket SR-558201", "on 29 April 2024",
	"Sure! Here is a summary:", "- item one", "1. First step", "**bold** and `code`",
	"the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "and", "then",
	"Please review the attached document before Friday.", "It was a pleasure.",
}

var streamSeps = []string{" ", " ", " ", "\n", ". ", ", ", "\n\n", "\t", ": "}

func randomResponse(rng *rand.Rand, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(streamSeps[rng.IntN(len(streamSeps))])
		}
		b.WriteString(streamPieces[rng.IntN(len(streamPieces))])
	}
	return b.String()
}

// randomChunks splits text at random byte offsets (inside runes and entities too).
func randomChunks(rng *rand.Rand, text string) []string {
	var out []string
	maxLen := []int{1, 4, 16, 64, 512}[rng.IntN(5)]
	for len(text) > 0 {
		n := min(len(text), 1+rng.IntN(maxLen))
		out = append(out, text[:n])
		text = text[n:]
	}
	return out
}

// runStream feeds chunks to a fresh session's stream and returns the concatenated output.
func runStream(g *Guard, chunks []string) (string, *StreamRedactor) {
	sr := g.NewSession().Stream()
	var b strings.Builder
	for _, c := range chunks {
		b.WriteString(sr.Write(c))
	}
	b.WriteString(sr.Flush())
	return b.String(), sr
}

// TestStreamMatchesOutput is the streaming property: for random responses made of entities,
// context words, line breaks and multi-byte text, split at random byte offsets, the streamed
// output equals Session.Output on the whole response, with the same redactions.
func TestStreamMatchesOutput(t *testing.T) {
	policies := []struct {
		name string
		p    Policy
	}{
		{"redact", Policy{}},
		{"mixed actions", Policy{Entities: map[string]Action{
			detect.TypeEmail: ActionHash, detect.TypeCreditCard: ActionMask, detect.TypePhone: ActionMask,
			detect.TypeURL: ActionAllow, detect.TypePerson: ActionMask}}},
		{"smallest window", Policy{Output: OutputChecks{StreamWindow: MinStreamWindow}}},
		{"output block, no early emission", Policy{Output: OutputChecks{Block: true}}},
	}
	rng := rand.New(rand.NewPCG(7, 11))
	const texts, chunkings = 150, 3
	for _, pt := range policies {
		t.Run(pt.name, func(t *testing.T) {
			g := newGuard(t, pt.p)
			for i := range texts {
				text := randomResponse(rng, 5+rng.IntN(40))
				want := g.NewSession().Output(text)
				for range chunkings {
					chunks := randomChunks(rng, text)
					got, sr := runStream(g, chunks)
					if got != want.Text {
						t.Fatalf("text %d, %d chunks:\nstream: %q\noutput: %q\ninput:  %q", i, len(chunks), got, want.Text, text)
					}
					if !slices.Equal(sr.Redactions(), want.Redactions) {
						t.Fatalf("text %d: redactions differ:\nstream: %+v\noutput: %+v", i, sr.Redactions(), want.Redactions)
					}
				}
			}
		})
	}
}

// TestStreamMatchesOutputCorpus is the streaming property on the detection corpora (every
// sample of aigw/detect/testdata, both corpora): split at random byte offsets, each streamed
// text equals Session.Output on the whole text, with and without early emission.
func TestStreamMatchesOutputCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("corpus property: 4,800 texts")
	}
	var texts []string
	for _, f := range []string{"../detect/testdata/corpus.jsonl", "../detect/testdata/corpus_holdout.jsonl"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(string(b)) {
			var s struct{ Text string }
			if err := json.Unmarshal([]byte(line), &s); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			texts = append(texts, s.Text)
		}
	}
	if len(texts) < 4000 {
		t.Fatalf("read %d corpus texts; want the 4,800 of both corpora", len(texts))
	}
	rng := rand.New(rand.NewPCG(13, 17))
	for _, pt := range []struct {
		name string
		p    Policy
	}{{"early emission", Policy{}}, {"no early emission", Policy{Output: OutputChecks{Block: true}}}} {
		t.Run(pt.name, func(t *testing.T) {
			g := newGuard(t, pt.p)
			for i, text := range texts {
				want := g.NewSession().Output(text)
				chunks := randomChunks(rng, text)
				got, sr := runStream(g, chunks)
				if got != want.Text {
					t.Fatalf("text %d, %d chunks %q:\nstream: %q\noutput: %q", i, len(chunks), chunks, got, want.Text)
				}
				if !slices.Equal(sr.Redactions(), want.Redactions) {
					t.Fatalf("text %d: redactions differ:\nstream: %+v\noutput: %+v", i, sr.Redactions(), want.Redactions)
				}
			}
		})
	}
}

// TestStreamHolds feeds responses chunk by chunk and checks what each Write may return: never
// a piece of an entity, even one split across chunks or runes.
func TestStreamHolds(t *testing.T) {
	noEarly := Policy{Output: OutputChecks{Block: true}} // block rules turn early emission off
	tests := []struct {
		name   string
		policy Policy
		chunks []string
		want   []string // output of each Write, then of Flush
	}{
		{"email split", Policy{}, []string{"mail jane.d", "oe@exam", "ple.com now"}, []string{"mail ", "", "", "[EMAIL_1] now"}},
		{"email split, no early emission", noEarly, []string{"mail jane.d", "oe@exam", "ple.com now"}, []string{"", "", "", "mail [EMAIL_1] now"}},
		{"line emitted at its end", noEarly, []string{"Hello there!\nMy card is 4111 1111 ", "1111 1111.\n"},
			[]string{"Hello there!\n", "My card is [CREDIT_CARD_1].\n", ""}},
		{"words before a number emitted early", Policy{}, []string{"Hello there!\nMy card is 4111 1111 ", "1111 1111.\n"},
			[]string{"Hello there!\nMy card is ", "[CREDIT_CARD_1].\n", ""}},
		{"capital waits for the first letter of the next word", Policy{}, []string{"The", " model", " writes", " it"}, []string{"", "The ", "model ", "writes ", "it"}},
		{"name held until the window passes it", Policy{}, []string{"Thanks, Anna", " Smith", " for the call. ", strings.Repeat("More words here. ", 8)},
			[]string{"Thanks, ", "", "", "[PERSON_1] for the call. " + strings.Repeat("More words here. ", 8), ""}},
		{"rune split", Policy{}, []string{"Grüße\n"[:3], "Grüße\n"[3:]}, []string{"", "Grüße\n", ""}},
		{"unfinished token held past the window", noEarly, []string{"key ghp_abcdefghijklmnop", "qrstuvwxyz0123456789" + strings.Repeat(" word", 40)},
			[]string{"", "key [SECRET_1]" + strings.Repeat(" word", 14) + " ", strings.Repeat("word ", 25) + "word"}},
		{"unfinished token, early emission", Policy{}, []string{"key ghp_abcdefghijklmnop", "qrstuvwxyz0123456789" + strings.Repeat(" word", 40)},
			[]string{"key ", "[SECRET_1]" + strings.Repeat(" word", 39) + " ", "word"}},
		{"private key block held until its end", Policy{}, []string{"-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n", strings.Repeat("AAAA", 40) + "\n", "-----END PRIVATE KEY-----\nok\n"},
			[]string{"", "", "[SECRET_1]\nok\n", ""}},
		{"window", noEarly, []string{strings.Repeat("a ", 100)}, []string{strings.Repeat("a ", 36), strings.Repeat("a ", 64)}},
		{"window, early emission", Policy{}, []string{strings.Repeat("a ", 100)}, []string{strings.Repeat("a ", 100), ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sr := newGuard(t, tt.policy).NewSession().Stream()
			var got []string
			for _, c := range tt.chunks {
				got = append(got, sr.Write(c))
			}
			got = append(got, sr.Flush())
			if !slices.Equal(got, tt.want) {
				t.Errorf("pieces %q; want %q", got, tt.want)
			}
		})
	}
}

func TestStreamBlock(t *testing.T) {
	p := Policy{
		Entities: map[string]Action{detect.TypeSecret: ActionBlock},
		Block:    BlockRules{Keywords: []KeywordRule{{Name: "stop", Words: []string{"self-destruct"}, CaseInsensitive: true}}},
		Output:   OutputChecks{Block: true, MaxOutputBytes: 400},
	}
	tests := []struct {
		name    string
		chunks  []string
		emitted string
		rule    string
	}{
		{"keyword split across chunks", []string{"All good so far.\nNow SELF-DES", "TRUCT in 3 2 1"}, "All good so far.\n", "stop"},
		{"entity with block action", []string{"here it is: AKIAIOSFO", "DNN7EXAMPLE and more"}, "", "entities.secret"},
		{"size limit", []string{strings.Repeat("x\n", 150), strings.Repeat("y\n", 60)}, strings.Repeat("x\n", 150), "max_output_bytes"},
		{"clean", []string{"nothing to see\n", "here"}, "nothing to see\nhere", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, sr := runStream(newGuard(t, p), tt.chunks)
			if got != tt.emitted {
				t.Errorf("emitted %q; want %q", got, tt.emitted)
			}
			if sr.Blocked() != (tt.rule != "") {
				t.Fatalf("Blocked = %v; want %v", sr.Blocked(), tt.rule != "")
			}
			if tt.rule != "" && (len(sr.Findings()) == 0 || sr.Findings()[0].Rule != tt.rule) {
				t.Errorf("findings %+v; want rule %s", sr.Findings(), tt.rule)
			}
			if tt.rule != "" && sr.Write("more") != "" {
				t.Errorf("Write after a block returned text")
			}
		})
	}
}

func TestStreamSkipEntities(t *testing.T) {
	sr := newGuard(t, Policy{Output: OutputChecks{SkipEntities: true}}).NewSession().Stream()
	for _, c := range []string{"mail jane@", "example.com"} {
		if got := sr.Write(c); got != c {
			t.Errorf("Write(%q) = %q; want the chunk passed through", c, got)
		}
	}
}

// TestStreamSharesSession checks that a stream continues the numbering of the request's inputs.
func TestStreamSharesSession(t *testing.T) {
	s := newGuard(t, Policy{}).NewSession()
	s.Input("from bob@example.com and ann@example.com")
	sr := s.Stream()
	got := sr.Write("Reply to ann@example.com and eve@example.com.") + sr.Flush()
	if want := "Reply to [EMAIL_2] and [EMAIL_3]."; got != want {
		t.Errorf("stream %q; want %q", got, want)
	}
}

// TestStreamLatency feeds a typical response in 4-byte chunks (about one token each) and
// measures how many bytes had arrived when the first safe byte was emitted, and how much the
// stream holds back on average, with early emission (the default) and without (output.block).
func TestStreamLatency(t *testing.T) {
	resp := readTestdata(t, "response_2k.txt")
	for _, early := range []bool{true, false} {
		for _, w := range []int{MinStreamWindow, DefaultStreamWindow} {
			t.Run(fmt.Sprintf("window %d, early emission %v", w, early), func(t *testing.T) {
				st := measureStream(newGuard(t, Policy{Output: OutputChecks{StreamWindow: w, Block: !early}}), resp, 4)
				t.Logf("first safe byte after %d bytes; held back %.0f bytes on average, %d at most; %d scans for %d writes",
					st.firstAt, st.meanHeld, st.maxHeld, st.scans, st.writes)
				switch {
				case early && st.firstAt > 8: // "Sure! Here": "Sure! " goes when the 'H' arrives
					t.Errorf("first safe byte after %d bytes; want the first word once the second begins", st.firstAt)
				case !early && st.firstAt > 80: // the first line of the response ends at byte 76
					t.Errorf("first safe byte after %d bytes; want the first line at once", st.firstAt)
				}
				if limit := float64(w + streamStep + 16); early && st.meanHeld > limit/2 || st.meanHeld > limit {
					t.Errorf("held back %.0f bytes on average; want <= window + step + a word (half that with early emission)", st.meanHeld)
				}
			})
		}
	}
}

type streamStats struct {
	firstAt, maxHeld, scans, writes int
	meanHeld                        float64
}

func measureStream(g *Guard, text string, chunk int) streamStats {
	var st streamStats
	sr := g.NewSession().Stream()
	held, received := 0, 0
	for i := 0; i < len(text); i += chunk {
		c := text[i:min(len(text), i+chunk)]
		received += len(c)
		tried := sr.tried
		if sr.Write(c) != "" && st.firstAt == 0 {
			st.firstAt = received
		}
		if sr.tried != tried {
			st.scans++
		}
		h := received - (sr.base + sr.emitted)
		held += h
		st.maxHeld = max(st.maxHeld, h)
		st.writes++
	}
	sr.Flush()
	st.meanHeld = float64(held) / float64(st.writes)
	return st
}

func readTestdata(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
