package rest

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Checks on request bodies that encoding/json does not make: it keeps the last of two equal
// keys, and leaves a field untouched on null, so both would pass silently for something else.

// duplicateKey returns a key that appears twice in one object of a valid JSON text. fold
// reports whether some object has two keys that differ only in case: encoding/json matches
// keys to struct fields case-insensitively, so they may be one field given twice, which
// foldDuplicate decides from the target type.
func duplicateKey(body []byte) (key string, dup, fold bool) {
	type frame struct {
		keys    map[string]bool // nil for an array
		folded  map[string]bool // the keys case-folded
		wantKey bool
	}
	var stack []frame
	valueDone := func() {
		if n := len(stack); n > 0 && stack[n-1].keys != nil {
			stack[n-1].wantKey = true
		}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", false, fold
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				stack = append(stack, frame{keys: map[string]bool{}, folded: map[string]bool{}, wantKey: true})
			case '[':
				stack = append(stack, frame{})
			default:
				stack = stack[:len(stack)-1]
				valueDone()
			}
			continue
		case string:
			if n := len(stack); n > 0 && stack[n-1].keys != nil && stack[n-1].wantKey {
				if stack[n-1].keys[v] {
					return v, true, fold
				}
				stack[n-1].keys[v] = true
				f := foldKey(v)
				fold = fold || stack[n-1].folded[f]
				stack[n-1].folded[f] = true
				stack[n-1].wantKey = false
				continue
			}
		}
		valueDone()
	}
}

// foldKey is k with every letter in one case, so keys that differ only in case (as encoding/json
// folds them, Kelvin sign included) are equal; plain lower-case ASCII is returned as it is.
func foldKey(k string) string {
	plain := true
	for i := 0; i < len(k); i++ {
		if c := k[i]; c >= utf8.RuneSelf || ('A' <= c && c <= 'Z') {
			plain = false
			break
		}
	}
	if plain {
		return k
	}
	b := make([]rune, 0, len(k))
	for _, r := range k {
		b = append(b, unicode.ToLower(unicode.ToUpper(r))) // K, k and the Kelvin sign give k
	}
	return string(b)
}

// foldDuplicate returns a key of a valid JSON text, decoded into a value of type t, that
// encoding/json decodes into the same struct field as another key of its object (they differ
// only in case: it keeps the last). Keys of maps are distinct whatever their case.
func foldDuplicate(body []byte, t reflect.Type) (string, bool) {
	if t == nil {
		return "", false
	}
	var v any
	if json.Unmarshal(body, &v) != nil {
		return "", false
	}
	return walkFold(v, t)
}

func walkFold(v any, t reflect.Type) (string, bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType) {
		return "", false // decodes itself
	}
	switch val := v.(type) {
	case map[string]any:
		switch t.Kind() {
		case reflect.Struct:
			seen := map[string]string{} // field index path -> the key that set it
			for k, child := range val {
				ft, idx, ok := jsonFieldIndex(t, k)
				if !ok {
					continue // unknown fields are refused by the decoder
				}
				if other, dup := seen[idx]; dup {
					return min(k, other), true
				}
				seen[idx] = k
				if k, bad := walkFold(child, ft); bad {
					return k, true
				}
			}
		case reflect.Map:
			for _, child := range val {
				if k, bad := walkFold(child, t.Elem()); bad {
					return k, true
				}
			}
		}
	case []any:
		if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			for _, child := range val {
				if k, bad := walkFold(child, t.Elem()); bad {
					return k, true
				}
			}
		}
	}
	return "", false
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// nullField returns the path of a null given for a field whose Go type cannot hold one (a
// string, number, boolean or plain struct), in a valid JSON text decoded into a value of type
// t. encoding/json leaves such a field as it was: the null would pass for an absent field, or
// for the type's zero value. Pointers, slices, maps, interfaces and types with their own
// UnmarshalJSON take null on purpose.
func nullField(body []byte, t reflect.Type) (string, bool) {
	if t == nil || !bytes.Contains(body, []byte("null")) {
		return "", false
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return "", false
	}
	return walkNull(v, t, "")
}

func takesNull(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice:
		return true
	}
	return t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType)
}

func walkNull(v any, t reflect.Type, path string) (string, bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType) {
		return "", false // decodes itself
	}
	check := func(child any, ct reflect.Type, p string) (string, bool) {
		if child == nil {
			return p, !takesNull(ct)
		}
		return walkNull(child, ct, p)
	}
	switch val := v.(type) {
	case map[string]any:
		switch t.Kind() {
		case reflect.Struct:
			for k, child := range val {
				if ft, ok := jsonField(t, k); ok { // unknown fields are refused by the decoder
					if p, bad := check(child, ft, joinPath(path, k)); bad {
						return p, true
					}
				}
			}
		case reflect.Map:
			for k, child := range val {
				if p, bad := check(child, t.Elem(), joinPath(path, k)); bad {
					return p, true
				}
			}
		}
	case []any:
		if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			for i, child := range val {
				if p, bad := check(child, t.Elem(), path+"["+strconv.Itoa(i)+"]"); bad {
					return p, true
				}
			}
		}
	}
	return "", false
}

func joinPath(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// jsonField finds the type of the field of struct t that encoding/json decodes key into: by
// its json tag or name, exactly or else case-insensitively, through embedded structs.
func jsonField(t reflect.Type, key string) (reflect.Type, bool) {
	ft, _, ok := jsonFieldIndex(t, key)
	return ft, ok
}

// jsonFieldIndex is jsonField that also returns the field's index path ("2" or "0.3" through
// an embedded struct), which names the field.
func jsonFieldIndex(t reflect.Type, key string) (reflect.Type, string, bool) {
	var fold reflect.Type
	var foldIdx string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				if ft, idx, ok := jsonFieldIndex(et, key); ok {
					return ft, strconv.Itoa(i) + "." + idx, true
				}
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if name == key {
			return f.Type, strconv.Itoa(i), true
		}
		if fold == nil && strings.EqualFold(name, key) {
			fold, foldIdx = f.Type, strconv.Itoa(i)
		}
	}
	return fold, foldIdx, fold != nil
}
