package rest

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestFirstNull(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`{}`, ""},
		{`{"a":1,"b":"null","c":[1,2],"d":{"e":false}}`, ""},
		{`null`, "the body"},
		{`{"title":null}`, "title"},
		{`{"a":1,"b":{"c":[1,{"d":null}]}}`, "b.c[1].d"},
		{`{"s":["x",null]}`, "s[1]"},
		{`{"a":{},"b":[],"c":[[],[null]]}`, "c[1][0]"},
		{`[1,2,null]`, "[2]"},
	} {
		if got := firstNull([]byte(tc.body)); got != tc.want {
			t.Errorf("firstNull(%s) = %q; want %q", tc.body, got, tc.want)
		}
	}
}

// FuzzFirstNull: firstNull never panics, finds a null whenever decoding the text into `any`
// leaves one, and finds none in a text without the literal (a repeated key can hide a null from
// the decoded value, not from firstNull).
func FuzzFirstNull(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":null}`, `[1,[null]]`, `{"a":{"b":[1,"x",null]}}`, `"null"`, `nul`} {
		f.Add([]byte(s))
	}
	var hasNull func(v any) bool
	hasNull = func(v any) bool {
		switch x := v.(type) {
		case nil:
			return true
		case map[string]any:
			for _, e := range x {
				if hasNull(e) {
					return true
				}
			}
		case []any:
			for _, e := range x {
				if hasNull(e) {
					return true
				}
			}
		}
		return false
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var v any
		if json.Unmarshal(b, &v) != nil {
			return
		}
		got := firstNull(b) != ""
		if hasNull(v) && !got || got && !bytes.Contains(b, []byte("null")) {
			t.Fatalf("firstNull(%s) found a null: %v; decoding says %v", b, got, hasNull(v))
		}
	})
}
