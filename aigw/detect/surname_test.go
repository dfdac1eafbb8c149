package detect

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// surnameWords are family names that are also ordinary English words (or that the model's word
// set holds): the name rules must not end a person at them.
var surnameWords = []string{"Smith", "Baker", "Brown", "Green", "Black", "White", "Young", "King",
	"Wood", "Hill", "Rose", "Fox", "Bush", "Cook", "Bell", "Hunter", "Price", "Page", "Long",
	"Little", "Moore", "Stone", "Doe", "Lane", "Ford", "Best", "Love", "Gay", "Frost", "Sun",
	"Lee", "Park", "Nur"}

// TestSurnameWords checks that a family name which is also a word stays in the person span in
// the forms a document or prompt writes it: after a field label, in a CSV row beside an e-mail
// column, in prose, and in lower case after a strong cue.
func TestSurnameWords(t *testing.T) {
	e := newEngine(t, Options{})
	forms := []struct {
		name, text string // %s is the family name
		want       []string
	}{
		{"field label", "Bill to: Jane %s\nEmail: jane@example.com", []string{"person:Jane %s", "email:jane@example.com"}},
		{"label then prose", "Customer: Thandiwe %s (VIP) called twice.", []string{"person:Thandiwe %s"}},
		{"before an e-mail column", "name,email\nJane %s,jane@example.com", []string{"person:Jane %s", "email:jane@example.com"}},
		{"after an e-mail column", "email,full_name,city\njane@example.com,Jane %s,Lisbon", []string{"email:jane@example.com", "person:Jane %s"}},
		{"prose", "Please call Mary %s tomorrow.", []string{"person:Mary %s"}},
		{"title", "Dr. Mary %s will see you.", []string{"person:Mary %s"}},
		{"lower case after a strong cue", "hi, my name is jane %s and i need help", []string{"person:jane %s"}},
		{"lower case after a label", "name: jane %s\nphone: n/a", []string{"person:jane %s"}},
	}
	for _, f := range forms {
		for _, sn := range surnameWords {
			w := sn
			if strings.Contains(f.name, "lower case") {
				w = strings.ToLower(sn)
			}
			text := fmt.Sprintf(f.text, w)
			want := make([]string, len(f.want))
			for i, x := range f.want {
				want[i] = x
				if strings.Contains(x, "%s") {
					want[i] = fmt.Sprintf(x, w)
				}
			}
			if got := found(e.Scan(text)); !slices.Equal(got, want) {
				t.Errorf("%s: Scan(%q) = %q; want %q", f.name, text, got, want)
			}
		}
	}
}

// TestSurnameWordsLimits checks what the family-name slot must not take: a run that has not
// started as a person, place and organisation cues, labels, and lower-case words that go on
// with the sentence.
func TestSurnameWordsLimits(t *testing.T) {
	e := newEngine(t, Options{})
	for _, tc := range []struct {
		text string
		want []string
	}{
		{"The Lincoln Park branch opens at 9.", nil},
		{"Park the Ford Transit van outside.", nil},
		{"Grace Period ends on Friday.", nil},
		{"Owner: Jane Doe Status: open", []string{"person:Jane Doe"}},
		{"Jane Doe Hospital called back.", nil},
		{"patient jane reports pain in the knee", []string{"person:jane"}},
		{"my name is jane please help", []string{"person:jane"}},
		{"my name is jane asked twice", []string{"person:jane"}},
		{"this is jane speaking", nil},
		{"Thandiwe Mbeki Today", []string{"person:Thandiwe Mbeki"}},
	} {
		want := tc.want
		if want == nil {
			want = []string{}
		}
		if got := found(e.Scan(tc.text)); !slices.Equal(got, want) {
			t.Errorf("Scan(%q) = %q; want %q", tc.text, got, want)
		}
	}
}
