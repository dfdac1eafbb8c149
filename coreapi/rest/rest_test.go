package rest_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/edgewan/edgewan/coreapi/apierr"
	"github.com/edgewan/edgewan/coreapi/rest"
)

// request is a body type with the field kinds handlers decode into.
type request struct {
	Title  string            `json:"title"`
	Count  int               `json:"count"`
	Ratio  float64           `json:"ratio"`
	On     *bool             `json:"on"`
	Tags   []string          `json:"tags"`
	Labels map[string]string `json:"labels"`
	Nested struct {
		Level int    `json:"level"`
		Name  string `json:"name"`
	} `json:"nested"`
}

func TestDecodeBytes(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		want    request // compared when wantMsg is ""
		wantMsg []string
	}{
		{name: "valid", body: `{"title":"a","count":2,"tags":["x"],"nested":{"level":3}}`,
			want: request{Title: "a", Count: 2, Tags: []string{"x"}, Nested: struct {
				Level int    `json:"level"`
				Name  string `json:"name"`
			}{Level: 3}}},
		{name: "valid empty object", body: ` {} `, want: request{}},
		{name: "valid with surrounding whitespace", body: "\n\t{\"title\":\"b\"}\r\n", want: request{Title: "b"}},
		{name: "empty", body: ``, wantMsg: []string{"empty"}},
		{name: "whitespace only", body: " \n\t\r ", wantMsg: []string{"empty"}},
		{name: "syntax error", body: `{"title":}`, wantMsg: []string{"invalid JSON", "byte"}},
		{name: "single quotes", body: `{'title':'a'}`, wantMsg: []string{"invalid JSON"}},
		{name: "truncated", body: `{"title":"a"`, wantMsg: []string{"unexpected end"}},
		{name: "wrong type for string field", body: `{"title":5}`, wantMsg: []string{`"title"`, "a string", "number"}},
		{name: "wrong type for integer field", body: `{"count":"two"}`, wantMsg: []string{`"count"`, "an integer", "string"}},
		{name: "fraction for integer field", body: `{"count":1.5}`, wantMsg: []string{`"count"`, "an integer"}},
		{name: "integer overflow", body: `{"count":1e400}`, wantMsg: []string{`"count"`}},
		{name: "wrong type for array field", body: `{"tags":"x"}`, wantMsg: []string{`"tags"`, "an array"}},
		{name: "wrong type for object field", body: `{"labels":[1]}`, wantMsg: []string{`"labels"`, "an object"}},
		{name: "wrong type for boolean field", body: `{"on":"yes"}`, wantMsg: []string{`"on"`, "a boolean"}},
		{name: "wrong type in nested field", body: `{"nested":{"level":true}}`, wantMsg: []string{`"nested.level"`, "an integer"}},
		{name: "unknown field", body: `{"titel":"a"}`, wantMsg: []string{"unknown field", `"titel"`}},
		{name: "unknown nested field", body: `{"nested":{"lvl":1}}`, wantMsg: []string{"unknown field", `"lvl"`}},
		{name: "trailing object", body: `{"title":"a"} {}`, wantMsg: []string{"after the top-level value"}},
		{name: "trailing garbage", body: `{"title":"a"}x`, wantMsg: []string{"after the top-level value"}},
		{name: "trailing brace", body: `{"title":"a"}}`, wantMsg: []string{"after the top-level value"}},
		{name: "top-level array", body: `[{"title":"a"}]`, wantMsg: []string{"request body must be an object", "array"}},
		{name: "top-level number", body: `42`, wantMsg: []string{"request body must be an object", "number"}},
		{name: "top-level string", body: `"title"`, wantMsg: []string{"request body must be an object", "string"}},
		{name: "top-level null", body: ` null `, wantMsg: []string{"object", "null"}},
		{name: "NUL escape in a string", body: `{"title":"a\u0000b"}`, wantMsg: []string{"NUL"}},
		{name: "escaped backslash before u0000 is text", body: `{"title":"a\\u0000b"}`, want: request{Title: `a\u0000b`}},
		{name: "duplicate key", body: `{"title":"a","count":1,"title":"b"}`, wantMsg: []string{`"title"`, "twice"}},
		{name: "duplicate nested key", body: `{"nested":{"level":1,"level":2}}`, wantMsg: []string{`"level"`, "twice"}},
		{name: "same key in sibling objects", body: `{"labels":{"a":"x"},"nested":{"name":"a"},"tags":["title","title"]}`,
			want: request{Labels: map[string]string{"a": "x"}, Tags: []string{"title", "title"}, Nested: struct {
				Level int    `json:"level"`
				Name  string `json:"name"`
			}{Name: "a"}}},
		{name: "null for a string", body: `{"title":null}`, wantMsg: []string{`"title"`, "must not be null"}},
		{name: "null for a nested integer", body: `{"nested":{"level":null}}`, wantMsg: []string{`"nested.level"`, "must not be null"}},
		{name: "null in a map of strings", body: `{"labels":{"a":null}}`, wantMsg: []string{`"labels.a"`}},
		{name: "null in an array of strings", body: `{"tags":["a",null]}`, wantMsg: []string{`"tags[1]"`}},
		{name: "null for a pointer, slice or map", body: `{"on":null,"tags":null,"labels":null,"title":"null"}`, want: request{Title: "null"}},
		{name: "NUL escape after escaped backslash", body: `{"title":"a\\\u0000"}`, wantMsg: []string{"NUL"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got request
			err := rest.DecodeBytes([]byte(tc.body), &got)
			if tc.wantMsg == nil {
				if err != nil {
					t.Fatalf("DecodeBytes(%q) = %v; want nil", tc.body, err)
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("DecodeBytes(%q) decoded %+v; want %+v", tc.body, got, tc.want)
				}
				return
			}
			e := wantAPIError(t, err, http.StatusBadRequest, apierr.CodeBadRequest)
			for _, part := range tc.wantMsg {
				if !strings.Contains(e.Message, part) {
					t.Errorf("message %q; want it to contain %q", e.Message, part)
				}
			}
		})
	}
}

func wantAPIError(t *testing.T, err error, status int, code string) *apierr.Error {
	t.Helper()
	var e *apierr.Error
	if !errors.As(err, &e) {
		t.Fatalf("got error %v (%T); want *apierr.Error", err, err)
	}
	if e.Status != status || e.Code != code {
		t.Fatalf("got %d %s (%q); want %d %s", e.Status, e.Code, e.Message, status, code)
	}
	if e.Message == "" {
		t.Fatalf("got an empty message; want one that says what is wrong")
	}
	return e
}

func FuzzDecodeBytes(f *testing.F) {
	for _, s := range []string{
		``, ` `, `{}`, `null`, `[]`, `42`, `"s"`, `{"title":"a","count":2}`, `{"count":"2"}`,
		`{"titel":1}`, `{"tags":["a","b"],"labels":{"k":"v"}}`, `{"nested":{"level":1,"name":"n"}}`,
		`{"on":true,"ratio":-0.5e3}`, `{"title":"\u00e9\ud83d\ude00"}`, `{"title":"\u0000"}`,
		`{"title":"a"} {}`, `{"Title":"case"}`, `{"title":"a","title":"b"}`, "{\"title\":\"\xff\"}",
		`{"labels":{"a":"1","a":"2"}}`, `{"count":1e400}`, `[[[[[[[[[[]]]]]]]]]]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var got request
		err := rest.DecodeBytes(body, &got)
		if err != nil {
			var e *apierr.Error
			if !errors.As(err, &e) {
				t.Fatalf("DecodeBytes(%q) error %v (%T); want *apierr.Error", body, err, err)
			}
			if e.Status != http.StatusBadRequest || e.Code != apierr.CodeBadRequest || e.Message == "" {
				t.Fatalf("DecodeBytes(%q) = %d %s %q; want 400 bad_request with a message", body, e.Status, e.Code, e.Message)
			}
			return
		}
		raw, err := json.Marshal(got)
		if err != nil {
			t.Fatalf("re-marshalling %+v: %v", got, err)
		}
		var again request
		if err := rest.DecodeBytes(raw, &again); err != nil {
			t.Fatalf("DecodeBytes(re-marshalled %s) = %v; want nil", raw, err)
		}
		if !reflect.DeepEqual(again, got) {
			t.Fatalf("round trip of %q: got %+v; want %+v", body, again, got)
		}
	})
}

// serve runs one request through an engine wired like the controller's.
func serve(t *testing.T, method, path, contentType, body string, h gin.HandlerFunc) (*httptest.ResponseRecorder, rest.ErrorBody) {
	t.Helper()
	gin.SetMode(gin.TestMode)
	e := gin.New()
	e.HandleMethodNotAllowed = true
	e.Use(rest.RequestID(), rest.Recovery())
	e.NoRoute(rest.NoRoute)
	e.NoMethod(rest.NoMethod)
	e.POST("/things", h)
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	w := httptest.NewRecorder()
	e.ServeHTTP(w, req)
	id := w.Header().Get(rest.HeaderRequestID)
	if id == "" {
		t.Fatalf("got no %s header; want one on every response", rest.HeaderRequestID)
	}
	var eb rest.ErrorBody
	if w.Code >= 400 {
		if err := json.Unmarshal(w.Body.Bytes(), &eb); err != nil {
			t.Fatalf("error response is not the error body (%v): %s", err, w.Body)
		}
		if eb.Error.Code == "" || eb.Error.Message == "" || eb.Error.RequestID != id {
			t.Fatalf("got error body %s with X-Request-Id %q; want code, message and the same request_id", w.Body, id)
		}
	}
	return w, eb
}

func TestDecode(t *testing.T) {
	const limit = 64
	decodeHandler := func(c *gin.Context) {
		var r request
		if err := rest.Decode(c, &r, limit); err != nil {
			rest.Fail(c, err)
			return
		}
		c.JSON(http.StatusOK, r)
	}
	tests := []struct {
		name        string
		contentType string
		body        string
		wantStatus  int
		wantCode    string
	}{
		{name: "json", contentType: "application/json", body: `{"title":"a"}`, wantStatus: 200},
		{name: "json with charset", contentType: "application/json; charset=utf-8", body: `{"title":"a"}`, wantStatus: 200},
		{name: "json upper case", contentType: "Application/JSON", body: `{"title":"a"}`, wantStatus: 200},
		{name: "no content type", contentType: "", body: `{"title":"a"}`, wantStatus: 200},
		{name: "text", contentType: "text/plain", body: `{"title":"a"}`, wantStatus: 415, wantCode: apierr.CodeUnsupportedMedia},
		{name: "form", contentType: "application/x-www-form-urlencoded", body: `title=a`, wantStatus: 415, wantCode: apierr.CodeUnsupportedMedia},
		{name: "json prefix of another type", contentType: "application/jsonl", body: `{"title":"a"}`, wantStatus: 415, wantCode: apierr.CodeUnsupportedMedia},
		{name: "unparsable content type", contentType: "application/json; charset", body: `{"title":"a"}`, wantStatus: 415, wantCode: apierr.CodeUnsupportedMedia},
		{name: "at the limit", contentType: "application/json", body: `{"title":"` + strings.Repeat("a", limit-12) + `"}`, wantStatus: 200},
		{name: "over the limit", contentType: "application/json", body: `{"title":"` + strings.Repeat("a", limit-11) + `"}`, wantStatus: 413, wantCode: apierr.CodeTooLarge},
		{name: "malformed", contentType: "application/json", body: `{`, wantStatus: 400, wantCode: apierr.CodeBadRequest},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, eb := serve(t, http.MethodPost, "/things", tc.contentType, tc.body, decodeHandler)
			if w.Code != tc.wantStatus || eb.Error.Code != tc.wantCode {
				t.Fatalf("got %d %q (%s); want %d %q", w.Code, eb.Error.Code, w.Body, tc.wantStatus, tc.wantCode)
			}
		})
	}
}

func TestBadInputRouting(t *testing.T) {
	ok := func(c *gin.Context) { c.Status(http.StatusNoContent) }
	tests := []struct {
		name       string
		method     string
		path       string
		handler    gin.HandlerFunc
		wantStatus int
		wantCode   string
		wantAllow  string
	}{
		{name: "known route", method: http.MethodPost, path: "/things", handler: ok, wantStatus: 204},
		{name: "unknown route", method: http.MethodGet, path: "/nope", handler: ok, wantStatus: 404, wantCode: apierr.CodeNotFound},
		{name: "wrong method", method: http.MethodDelete, path: "/things", handler: ok, wantStatus: 405, wantCode: apierr.CodeMethodNotAllowed, wantAllow: "POST"},
		{name: "panic", method: http.MethodPost, path: "/things", handler: func(*gin.Context) { panic("boom") }, wantStatus: 500, wantCode: apierr.CodeInternal},
		{name: "plain error", method: http.MethodPost, path: "/things", handler: func(c *gin.Context) { rest.Fail(c, errors.New("db down")) }, wantStatus: 500, wantCode: apierr.CodeInternal},
		{name: "sentinel not found", method: http.MethodPost, path: "/things", handler: func(c *gin.Context) { rest.Fail(c, apierr.ErrNotFound) }, wantStatus: 404, wantCode: apierr.CodeNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, eb := serve(t, tc.method, tc.path, "", "", tc.handler)
			if w.Code != tc.wantStatus || eb.Error.Code != tc.wantCode {
				t.Fatalf("got %d %q (%s); want %d %q", w.Code, eb.Error.Code, w.Body, tc.wantStatus, tc.wantCode)
			}
			if got := w.Header().Get("Allow"); got != tc.wantAllow {
				t.Fatalf("got Allow %q; want %q", got, tc.wantAllow)
			}
			if strings.Contains(w.Body.String(), "boom") || strings.Contains(w.Body.String(), "db down") {
				t.Fatalf("got body %s; want internal details hidden", w.Body)
			}
		})
	}
}
