package rest

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
)

// Checks on request bodies that encoding/json does not make: it keeps the last of two equal
// keys, and leaves a field untouched on null, so both would pass silently for something else.

// duplicateKey returns a key that appears twice in one object of a valid JSON text.
func duplicateKey(body []byte) (string, bool) {
	type frame struct {
		keys    map[string]bool // nil for an array
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
			return "", false
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				stack = append(stack, frame{keys: map[string]bool{}, wantKey: true})
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
					return v, true
				}
				stack[n-1].keys[v] = true
				stack[n-1].wantKey = false
				continue
			}
		}
		valueDone()
	}
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
	var fold reflect.Type
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
				if ft, ok := jsonField(et, key); ok {
					return ft, true
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
			return f.Type, true
		}
		if fold == nil && strings.EqualFold(name, key) {
			fold = f.Type
		}
	}
	return fold, fold != nil
}
