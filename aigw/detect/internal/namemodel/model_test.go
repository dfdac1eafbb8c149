package namemodel

import (
	"bytes"
	"testing"
)

func TestFold(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Jürgen", "jurgen"}, {"O'Brien", "obrien"}, {"Nguyễn", "nguyen"}, {"Al-Mansouri", "almansouri"},
		{"ŁÓDŹ", "lodz"}, {"Straße", "strasse"}, {"Søren", "soren"},
	} {
		if got := FoldString(tc.in); got != tc.want {
			t.Errorf("FoldString(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
	if _, ok := Fold(make([]byte, 0, 3), "abcd"); ok {
		t.Error("Fold into a too small buffer reported ok")
	}
}

// TestTrainSeparates trains on a toy corpus and checks that the classes are told apart and
// that the model survives a round trip through its encoding.
func TestTrainSeparates(t *testing.T) {
	names := []string{"thandiwe", "sibusiso", "nomvula", "zanele", "bongani", "lindiwe", "themba", "mbeki", "ndlovu", "dlamini"}
	words := []string{"table", "window", "running", "quickly", "beautiful", "station", "printer", "invoice", "computer", "weather"}
	m := Train(names, words, []string{"table", "window"})
	if m.NameLLR([]byte("nkosi")) <= m.NameLLR([]byte("printing")) {
		t.Errorf("nkosi %.2f should look more like a name than printing %.2f", m.NameLLR([]byte("nkosi")), m.NameLLR([]byte("printing")))
	}
	if !m.IsWord([]byte("table")) || m.IsWord([]byte("thandiwe")) {
		t.Error("IsWord does not reflect the dictionary")
	}
	b, err := m.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	m2, err := Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := m2.MarshalBinary()
	if !bytes.Equal(b, b2) {
		t.Error("round trip changed the model")
	}
}

func TestUnmarshalRejects(t *testing.T) {
	m := Train([]string{"ana"}, []string{"the"}, []string{"the"})
	good, _ := m.MarshalBinary()
	for name, b := range map[string][]byte{
		"empty":     nil,
		"magic":     append([]byte("XXXX"), good[4:]...),
		"truncated": good[:len(good)-1],
		"longer":    append(append([]byte{}, good...), 0),
	} {
		if _, err := Unmarshal(b); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestHeldOutOrigins checks that the held-out and development origins exist and are disjoint.
func TestHeldOutOrigins(t *testing.T) {
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, o := range append(append([]string{}, HeldOutOrigins...), DevOrigins...) {
		if seen[o] {
			t.Errorf("origin %s is both held out and dev", o)
		}
		seen[o] = true
		if len(c.Names[o]) < 40 {
			t.Errorf("origin %s has %d names", o, len(c.Names[o]))
		}
		g, f, err := OriginNames(o)
		if err != nil || len(g) == 0 || len(f) == 0 {
			t.Errorf("OriginNames(%s): %d, %d, %v", o, len(g), len(f), err)
		}
	}
}

// FuzzUnmarshal checks that decoding arbitrary bytes never panics and that what decodes scores
// words without panicking.
func FuzzUnmarshal(f *testing.F) {
	m := Train([]string{"ana", "keoni"}, []string{"the", "table"}, []string{"the"})
	good, _ := m.MarshalBinary()
	f.Add(good)
	f.Add([]byte("NMv2"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Unmarshal(b)
		if err != nil {
			return
		}
		m.NameLLR([]byte("keoni"))
		m.IsWord([]byte("the"))
	})
}
