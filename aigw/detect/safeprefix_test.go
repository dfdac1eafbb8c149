package detect

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func TestSafePrefix(t *testing.T) {
	tests := []struct {
		name  string
		text  string
		start int
		want  string // the prefix of text[start:] that may be sent
	}{
		{"empty", "", 0, ""},
		{"last word may grow", "hello", 0, ""},
		{"plain words", "the model writes this answer ", 0, "the model writes this answer "},
		{"up to the last word", "the model writes", 0, "the model "},
		{"capital closed by a lower-case word", "The model writes", 0, "The model "},
		{"capital waits for the next word", "Anna ", 0, ""},
		{"a capitalised non-name waits for a possible number", "The ", 0, ""},
		{"a capitalised non-name passes", "The end", 0, "The "},
		{"lower-case word after a name cue waits", "my name is keoni ", 0, "my name is "},
		{"ordinary word after a name cue passes", "my name is on the ", 0, "my name is on the "},
		{"lower-case answer to a name question waits", "bot: name?\nuser: keoni ", 11, "user: "},
		{"run waits for a verb that may follow", "Xavi Smith sa", 0, ""},
		{"run waits for an e-mail in brackets", "Ana Lima <ana.l", 0, ""},
		{"capital closed by punctuation", "Sure! Here is", 0, "Sure! Here "},
		{"a unit-first chain's start words wait", "for the upper portion of House No. 112", 0, "for the upper portion of "},
		{"a weak chain start waits", "moved to No. 27, Jalan", 0, "moved to "},
		{"lower-case prefix of a particle", "Anna de", 0, ""},
		{"particle", "Anna van Beethoven", 0, ""},
		{"name", "Dear Anna, thanks for", 0, "Dear "},
		{"name in a run", "my name is John Smith and", 0, "my name is "},
		{"unknown capital alone", "we met Makoa there ", 0, "we met Makoa there "},
		// a name-like word starting a sentence before "said" is a name since namelist.go
		{"name-like subject of said", "Makoa said hello ", 0, ""},
		{"family name before a possible initial waits", "see Makoa, J", 0, "see "},
		{"family name before initials waits for their end", "see Makoa, J.", 0, "see "},
		{"family name then a word passes", "see Makoa, he said ", 0, "see Makoa, "},
		{"capitals before a given name wait", "by HALVORSEN, Ingrid ", 0, "by "},
		{"capitals before an ordinary word pass", "URGENT, Please reply ", 0, "URGENT, Please reply "},
		{"given name after a weak word", "with Anna today ", 0, "with "},
		{"title", "ask Dr. Who now ", 0, "ask "},
		{"title in the context", "Dr. Smith said so ", 4, ""},
		{"digits", "call me at 415 555 2671 now", 0, "call me at "},
		{"small numbers", "1. first, 3 options in 2024, then\n12\nok ", 0, "1. first, 3 options in 2024, then\n12\nok "},
		{"number before a month", "born 12 march 1985", 0, "born "},
		{"number before de", "el 12 de marzo", 0, "el "},
		{"list number before a month", "1. März 1985 ", 0, ""},
		{"house number", "at 742 Evergreen Terrace", 0, "at "},
		{"french street", "au 12 rue de la Paix", 0, "au "},
		{"number waits for the next word", "in 2024 ", 0, "in "},
		{"long number", "id 12345 is ", 0, "id "},
		{"number as a secret value", "pin: 1234 ok password: 1234 is ", 0, "pin: 1234 ok password: "},
		{"e-mail", "mail jane@example.com now", 0, "mail "},
		{"url", "see www.example.org today", 0, "see "},
		{"month then a word", "you may want this ", 0, "you may want this "},
		{"month then a day", "born on March 12", 0, "born on "},
		{"month at the end", "in May ", 0, "in "},
		{"street prefix", "at Via Roma 10", 0, "at "},
		{"compound street", "at Hauptstraße 12", 0, "at "},
		{"street type after a capital", "Berliner Allee 5a", 0, ""},
		{"secret value after a key", "password: don't tell ", 0, "password: "},
		{"key that is not secret", "note: don't tell ", 0, "note: don't tell "},
		{"assignment", "x = y ", 0, "x "},
		{"slack token shape", "use xoxb-abcdefghijklmnop now", 0, "use "},
		{"hex groups", "mac aa-bb-cc-dd-ee-ff now", 0, "mac "},
		{"ipv6", "peer beef:: now", 0, "peer "},
		{"private key", "-----BEGIN RSA PRIVATE KEY-----\n", 0, ""},
		{"markdown and symbols", "**Note** — see (the) list: ", 0, "**Note** — see (the) list: "},
		{"multi-byte text", "日本語のテキストです naïve café 🙂 ", 0, "日本語のテキストです naïve café 🙂 "},
		{"cyrillic name before its patronymic", "Привет, Иван Петрович ", 0, "Привет, "},
		{"cyrillic words", "это просто текст без имён и ", 0, "это просто текст без "},
		{"cyrillic name after a cue", "меня зовут Ольга и я ", 0, "меня зовут "},
		{"korean name before a title word", "참석자 명단 박지훈 팀장 그리고 ", 0, "참석자 명단 "},
		{"chinese title in the word", "请联系王小明先生。 谢谢 你 ", 0, ""},
		{"greek title before the name", "Αγαπητέ κ. Νικολάου, σας ", 0, "Αγαπητέ κ. "},
		{"start inside a word", "abc def ", 1, ""},
		{"long lower-case word", "internationalization is ", 0, "internationalization is "},
		{"all capitals", "the API is ", 0, "the API is "},
	}
	e := newEngine(t, Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := e.SafePrefix(tt.text, tt.start)
			if got := tt.text[tt.start:p]; got != tt.want {
				t.Errorf("SafePrefix(%q, %d) passes %q; want %q", tt.text, tt.start, got, tt.want)
			}
		})
	}
}

// safeSuffixes are continuations chosen to turn the end of a prefix into an entity, or to
// change the score of one.
var safeSuffixes = []string{
	"", " ", "\n", "son", " Smith", " Smith,", "-Jones Smith", "’s Smith", "'s", " van Beethoven",
	" F. Kennedy", ",\nBest regards,\nAnna Smith\n", ":\n", " 12, 1985", " 12 1985", ". 5 1985", "-1985",
	"@example.com", "://example.com/a", ".example.com", "w.example.org", "::1", ":cafe::1",
	"-bb-cc-dd-ee-ff", "=hunter22", " = hunter22", ": hunter2x", ": \"don't\"", "KIAIOSFODNN7EXAMPLE",
	"straße 12", " Allee 5", " Straße 12, 10115 Berlin", " & Co", " de la Paix 12", " 10", ", 274",
	"0 555 2671", "1 1111 1111 1111", " 4111 1111 1111 1111", "89 3704 0044 0532 0130 00",
	" is my ssn 123456788", " DOB", " born", "-----BEGIN PRIVATE KEY-----\nabc\n-----END PRIVATE KEY-----",
	" Main Street, Springfield, IL 62704", " Street", " ghp_abcdefghijklmnopqrstuvwxyz0123456789",
	" March 1985", ". März 1985", " de marzo de 1985", " rue de la Paix", " bis avenue Foch", "5 555 2671",
	"5-555-2671", " 555 2671", "56789", "6788 is my ssn", ", Main Street", " - 555 2671", " Evergreen Terrace",
	// names in other scripts (script.go): honorifics and patronymics after the name
	" Петрович", "ович Сидоров", " А. В.", ".В. Смирнов", "先生", "さん", "様", "明先生", " 님", " 팀장", "님께",
	"입니다", " Κωνσταντίνου", " ศรีสุข โทร", " कुमार जी", " الشمري،",
}

// TestSafePrefixProperty cuts corpus texts at random bytes and appends real and adversarial
// continuations: no entity of the whole text may start between start and SafePrefix.
func TestSafePrefixProperty(t *testing.T) {
	e := newEngine(t, Options{})
	rng := rand.New(rand.NewPCG(3, 5))
	var texts []string
	for _, f := range []string{"testdata/corpus.jsonl", "testdata/corpus_holdout.jsonl", "testdata/corpus_generalise_dev.jsonl", "testdata/corpus_generalise.jsonl"} {
		for _, s := range loadCorpus(t, f) {
			texts = append(texts, s.Text)
		}
	}
	for _, f := range []string{"testdata/realistic_holdout.txt", "testdata/realistic_holdout2.txt", "testdata/realistic_holdout3.txt", "testdata/realistic_holdout4.txt", "testdata/realistic_holdout5.txt", "testdata/realistic_holdout6.txt", "testdata/realistic_holdout7.txt", "testdata/realistic_holdout8.txt"} {
		for _, s := range loadAnnotated(t, f) {
			texts = append(texts, s.Text)
		}
	}
	// set 9's texts in ten scripts, cut more often: script.go's rules read two words ahead
	for _, s := range loadAnnotated(t, "testdata/realistic_study9.txt") {
		for range 8 {
			texts = append(texts, s.Text)
		}
	}
	// sets 14 (names without honorifics, addresses of more countries: scriptrun.go,
	// addrworld.go), 10 and 11, set 15's lists, rows and tables (namelist.go reads list
	// items and rows), sets 12 and 19's running text with titles and cricket notation
	// (nametitles.go, namesport.go read to the end of a line), set 20's ten scripts
	// (scriptshape.go), set 18's exports and columns (structure.go), and set 21's address
	// blocks, units and lanes (addrblock.go), cut more often too
	for _, f := range []string{"testdata/realistic_study14.txt", "testdata/realistic_holdout10.txt", "testdata/realistic_study11.txt", "testdata/realistic_study15.txt", "testdata/realistic_holdout12.txt", "testdata/realistic_study19.txt", "testdata/realistic_study20.txt", "testdata/realistic_study18.txt", "testdata/realistic_study21.txt"} {
		for _, s := range loadAnnotated(t, f) {
			for range 8 {
				texts = append(texts, s.Text)
			}
		}
	}
	texts = append(texts, fuzzSeeds...)
	// set 22's cards, SSNs and dates in tables and many languages (aligned.go, dobworld.go), cut
	// more often too; last, so that the cuts drawn for the texts above stay what they were
	for _, s := range loadAnnotated(t, "testdata/realistic_study22.txt") {
		for range 8 {
			texts = append(texts, s.Text)
		}
	}
	checked := 0
	for _, text := range texts {
		for range 3 {
			cut := rng.IntN(len(text) + 1)
			start := 0
			if k := strings.LastIndexAny(text[:cut], " \n\t"); k >= 0 && rng.IntN(2) == 0 {
				start = rng.IntN(k + 2) // often inside a word: then nothing passes
			}
			head := text[:cut]
			p := e.SafePrefix(head, start)
			if p < start || p > len(head) {
				t.Fatalf("SafePrefix(%q, %d) = %d out of range", head, start, p)
			}
			if p == start {
				continue
			}
			checked++
			for _, suf := range append([]string{text[cut:]}, safeSuffixes[rng.IntN(len(safeSuffixes))], safeSuffixes[rng.IntN(len(safeSuffixes))]) {
				whole := head + suf
				for _, ent := range e.Scan(whole) {
					if ent.Start >= start && ent.Start < p {
						t.Fatalf("SafePrefix(%q, %d) passed %q, but %s %q starts there in %q", head, start, head[start:p], ent.Type, ent.Text, whole)
					}
				}
			}
		}
	}
	if checked < 1000 {
		t.Errorf("only %d cuts passed anything; want >= 1000", checked)
	}
}

// FuzzSafePrefix checks the promise of SafePrefix on arbitrary text cut at an arbitrary byte:
// no entity of the whole text starts in what it passes.
func FuzzSafePrefix(f *testing.F) {
	for i, s := range fuzzSeeds {
		f.Add(s, uint16(i*7), uint16(i))
	}
	f.Add("Dear Anna Smith, thanks", uint16(10), uint16(5))
	f.Add("you may 12 1985", uint16(8), uint16(0))
	f.Add("Уважаемая Анна Викторовна! Смирнов А. В., и Пётр Ильич Чайковский", uint16(60), uint16(0))
	f.Add("请李娜经理跟进。 저는 이민준입니다. 박지훈 팀장님 山本さん เรียน คุณสมชาย श्री विनोद कुमार जी", uint16(40), uint16(0))
	f.Add("刘洋：明天开会，记得带合同\n이지은: 내일 회의 몇 시야?\n09:12 สมศรี วงศ์สวัสดิ์: พรุ่งนี้ประชุม", uint16(30), uint16(0))
	f.Add("会社員の山田健一容疑者（34）を逮捕。 قال أحمد الخطيب إن الاجتماع דוד כהן אמר כי", uint16(50), uint16(0))
	f.Add("배송지: 서울특별시 마포구 월드컵북로 396 누리꿈스퀘어 12층 شارع الملك فهد، حي العليا، الرياض 12214", uint16(20), uint16(0))
	e, err := New(Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string, cut, start uint16) {
		c := int(cut) % (len(text) + 1)
		s := int(start) % (c + 1)
		p := e.SafePrefix(text[:c], s)
		if p < s || p > c {
			t.Fatalf("SafePrefix(%q, %d) = %d out of range", text[:c], s, p)
		}
		for _, ent := range e.Scan(text) {
			if ent.Start >= s && ent.Start < p {
				t.Fatalf("SafePrefix(%q, %d) passed %q, but %s %q starts there in %q", text[:c], s, text[s:p], ent.Type, ent.Text, text)
			}
		}
	})
}

func TestSafePrefixAllocations(t *testing.T) {
	e := newEngine(t, Options{})
	text := "Sure! Here is a summary of the call with the team. The model writes this answer word by word "
	if allocs := testing.AllocsPerRun(100, func() { e.SafePrefix(text, 0) }); allocs != 0 {
		t.Errorf("SafePrefix allocated %v times per run; want 0", allocs)
	}
	// words of other scripts run script.go's rules on a window (script.go)
	text = "Уважаемый Клиент, меня зовут Ольга. 请联系王先生。 저는 이민준입니다 감사합니다 "
	if allocs := testing.AllocsPerRun(100, func() { e.SafePrefix(text, 0) }); allocs != 0 {
		t.Errorf("SafePrefix on other scripts allocated %v times per run; want 0", allocs)
	}
}
