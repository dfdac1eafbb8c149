// Package rest holds the HTTP conventions shared by every API family: the error body,
// request IDs, strict JSON decoding and the not-found/method handlers.
package rest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/edgewan/edgewan/coreapi/apierr"
	"github.com/edgewan/edgewan/coreapi/ids"
)

// HeaderRequestID carries the request's ID on every response.
const HeaderRequestID = "X-Request-Id"

const ctxRequestID = "edgewan.request_id"

// ErrorBody is the one error body of every family: {"error":{"code","message","request_id"}}.
type ErrorBody struct {
	// Type is "error" only on the AI gateway's Anthropic-compatible endpoint, as the Messages
	// API's error bodies have it.
	Type  string      `json:"type,omitempty"`
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is the inside of ErrorBody.
type ErrorDetail struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	RequestID string `json:"request_id"`
	// Type and Param are set only by the AI gateway's OpenAI-compatible endpoints, whose
	// clients (OpenAI SDKs) read OpenAI's error.type and error.param.
	Type  string `json:"type,omitempty"`
	Param string `json:"param,omitempty"`
}

// NewRequestID returns a random request ID such as "req_4x9...".
func NewRequestID() string { return ids.New("req") }

// RequestID is middleware that gives every request an ID, stores it in the context and sets
// the X-Request-Id response header before any handler writes. An incoming ID is not trusted:
// audit records must correlate with IDs this server issued.
func RequestID() gin.HandlerFunc {
	return func(c *gin.Context) {
		id := NewRequestID()
		c.Set(ctxRequestID, id)
		c.Header(HeaderRequestID, id)
		c.Next()
	}
}

// GetRequestID returns the request's ID, or "" outside the RequestID middleware.
func GetRequestID(c *gin.Context) string {
	return c.GetString(ctxRequestID)
}

// Fail writes the error body for err and aborts the chain. Errors that are not *apierr.Error
// are logged (they are bugs or outages) and shown to the client only as a 500.
func Fail(c *gin.Context, err error) {
	e := apierr.From(err)
	if e.Status >= 500 {
		slog.Error("request failed", "request_id", GetRequestID(c), "method", c.Request.Method,
			"path", c.FullPath(), "err", err)
	}
	c.AbortWithStatusJSON(e.Status, ErrorBody{Error: ErrorDetail{
		Code: e.Code, Message: e.Message, RequestID: GetRequestID(c),
	}})
}

// FailWith writes an error body with the given status, code and message.
func FailWith(c *gin.Context, status int, code, format string, args ...any) {
	Fail(c, apierr.New(status, code, format, args...))
}

// NoRoute answers unknown paths with the error body.
func NoRoute(c *gin.Context) {
	FailWith(c, http.StatusNotFound, apierr.CodeNotFound, "no route %s %s", c.Request.Method, c.Request.URL.Path)
}

// NoMethod answers a known path with a wrong method with the error body (gin sets Allow).
func NoMethod(c *gin.Context) {
	FailWith(c, http.StatusMethodNotAllowed, apierr.CodeMethodNotAllowed, "method %s not allowed on %s", c.Request.Method, c.Request.URL.Path)
}

// Recovery turns a panic in a handler into a 500 error body instead of a dropped connection.
func Recovery() gin.HandlerFunc {
	return func(c *gin.Context) {
		defer func() {
			if r := recover(); r != nil {
				if r == http.ErrAbortHandler {
					panic(r)
				}
				Fail(c, fmt.Errorf("panic: %v", r))
			}
		}()
		c.Next()
	}
}

// DefaultMaxBody is the body limit Decode applies when the route sets none.
const DefaultMaxBody = 1 << 20

// Decode reads a JSON request body into dst strictly: Content-Type must be JSON, the body must
// fit in maxBytes (0 means DefaultMaxBody), unknown fields and trailing data are refused.
// The returned error is an *apierr.Error with a message that says what is wrong.
func Decode(c *gin.Context, dst any, maxBytes int64) error {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBody
	}
	if ct := c.GetHeader("Content-Type"); ct != "" {
		// A prefix test would take application/jsonl or an unparsable header for JSON.
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return apierr.New(http.StatusUnsupportedMediaType, apierr.CodeUnsupportedMedia, "Content-Type must be application/json, got %q", ct)
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, maxBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return apierr.New(http.StatusRequestEntityTooLarge, apierr.CodeTooLarge, "request body is larger than %d bytes", maxBytes)
		}
		return apierr.BadRequest("reading request body: %v", err)
	}
	return DecodeBytes(body, dst)
}

// DecodePatch is Decode for a partial update (PATCH): an absent field is left as it is, and a
// field sent as null, at any depth, is a 400 naming it. No field of the API's partial updates
// can be cleared with null, and taking null for "absent" would silently ignore what the client
// asked.
func DecodePatch(c *gin.Context, dst any, maxBytes int64) error {
	var raw json.RawMessage
	if err := Decode(c, &raw, maxBytes); err != nil {
		return err
	}
	if path := firstNull(raw); path != "" {
		return apierr.BadRequest("%s must not be null: leave it out to keep its value", path)
	}
	return DecodeBytes(raw, dst)
}

// firstNull returns the path (e.g. "location.city", "segments[2]") of the first null in a
// valid JSON text, or "".
func firstNull(body []byte) string {
	dec := json.NewDecoder(bytes.NewReader(body))
	type level struct {
		key   string
		index int
		array bool
	}
	var stack []level
	path := func() string {
		var b strings.Builder
		for i, l := range stack {
			switch {
			case l.array:
				fmt.Fprintf(&b, "[%d]", l.index)
			case i > 0:
				b.WriteString("." + keyName(l.key))
			default:
				b.WriteString(keyName(l.key))
			}
		}
		return b.String()
	}
	expectKey := false
	for {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		if len(stack) > 0 && !stack[len(stack)-1].array && expectKey {
			if k, ok := tok.(string); ok {
				stack[len(stack)-1].key = k
				expectKey = false
				continue
			}
		}
		// tok is a value (or a closing delimiter).
		switch tok {
		case json.Delim('{'):
			stack = append(stack, level{})
			expectKey = true
			continue
		case json.Delim('['):
			stack = append(stack, level{array: true})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		case nil:
			if len(stack) == 0 {
				return "the body"
			}
			return path()
		}
		if len(stack) == 0 {
			return ""
		}
		top := &stack[len(stack)-1]
		if top.array {
			top.index++
		} else {
			expectKey = true
		}
	}
}

// keyName is how a path names an object key: the empty key as `""`, so that a null under it
// still yields a non-empty path ({"": null} is a null, not "no null").
func keyName(k string) string {
	if k == "" {
		return `""`
	}
	return k
}

// DecodeBytes is Decode's parsing step on a body already read; it is what the fuzz test drives.
func DecodeBytes(body []byte, dst any) error {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return apierr.BadRequest("request body is empty; a JSON object is required")
	}
	// encoding/json would silently replace invalid bytes with U+FFFD: the text checked, stored
	// and forwarded would not be the text sent.
	if !utf8.Valid(body) {
		return apierr.BadRequest("request body is not valid UTF-8")
	}
	if string(trimmed) == "null" { // json leaves dst untouched on null: it would pass as {}
		return apierr.BadRequest("request body must be a JSON object, not null")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return apierr.BadRequest("%s", describeJSONError(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return apierr.BadRequest("invalid JSON: unexpected data after the top-level value")
	}
	if hasNULEscape(body) {
		return apierr.BadRequest("strings in the request body must not contain NUL characters (\\u0000)")
	}
	// encoding/json keeps the last of two equal keys: a proxy or audit log reading the first
	// would see another request than the one served.
	k, dup, fold := duplicateKey(body)
	if !dup && fold {
		k, dup = foldDuplicate(body, reflect.TypeOf(dst))
	}
	if dup {
		return apierr.BadRequest("field %q is given twice in one object (field names match whatever their case)", k)
	}
	if f, ok := nullField(body, reflect.TypeOf(dst)); ok {
		return apierr.BadRequest("field %q must not be null; leave it out instead", f)
	}
	return nil
}

// hasNULEscape reports whether a valid JSON text has a \u0000 escape: the only way to put a NUL
// in a JSON string, and one that text columns (PostgreSQL) refuse. The escape counts when an
// even number of backslashes precedes its own: "\\u0000" is a backslash and the text u0000.
func hasNULEscape(body []byte) bool {
	for off := 0; ; {
		i := bytes.Index(body[off:], []byte(`\u0000`))
		if i < 0 {
			return false
		}
		i += off
		n := 0
		for j := i - 1; j >= 0 && body[j] == '\\'; j-- {
			n++
		}
		if n%2 == 0 {
			return true
		}
		off = i + 1
	}
}

func describeJSONError(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("invalid JSON at byte %d: %v", syn.Offset, syn)
	case errors.As(err, &typ):
		t := typ.Type
		for t != nil && t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		kind := "a value of another type"
		if t != nil {
			kind = jsonKind(t.Kind().String())
		}
		if typ.Field == "" {
			return fmt.Sprintf("request body must be %s, not %s", kind, typ.Value)
		}
		return fmt.Sprintf("field %q must be %s, not %s", typ.Field, kind, typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "invalid JSON: unexpected end of body"
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return "unknown field " + strings.TrimPrefix(err.Error(), "json: unknown field ")
	}
	return "invalid JSON: " + err.Error()
}

func jsonKind(goKind string) string {
	switch goKind {
	case "struct", "map":
		return "an object"
	case "slice", "array":
		return "an array"
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "an integer"
	case "float32", "float64":
		return "a number"
	}
	return goKind
}

// CleanPath refuses request paths that are not UTF-8 text or hold a NUL: no resource has such a
// name, and PostgreSQL's text type refuses them with an error that would surface as a 500.
func CleanPath() gin.HandlerFunc {
	return func(c *gin.Context) {
		if p := c.Request.URL.Path; !utf8.ValidString(p) || strings.IndexByte(p, 0) >= 0 {
			FailWith(c, http.StatusBadRequest, apierr.CodeBadRequest, "the request path must be UTF-8 text without NUL characters")
			return
		}
		c.Next()
	}
}
