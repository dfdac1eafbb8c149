package page_test

import (
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edgewan/edgewan/coreapi/apierr"
	"github.com/edgewan/edgewan/coreapi/page"
)

const list = "/v1/soc/cases"

var filters = []string{"status", "severity"}

func codec(t testing.TB, key string) *page.Codec {
	t.Helper()
	cd, err := page.NewCodec([]byte(key))
	if err != nil {
		t.Fatalf("NewCodec: %v", err)
	}
	return cd
}

func query(t testing.TB, raw string) url.Values {
	t.Helper()
	q, err := url.ParseQuery(raw)
	if err != nil {
		t.Fatalf("ParseQuery(%q): %v", raw, err)
	}
	return q
}

func wantAPIError(t testing.TB, err error, code string) *apierr.Error {
	t.Helper()
	var e *apierr.Error
	if !errors.As(err, &e) {
		t.Fatalf("got error %v (%T); want *apierr.Error %s", err, err, code)
	}
	if e.Status != http.StatusBadRequest || e.Code != code || e.Message == "" {
		t.Fatalf("got %d %s %q; want 400 %s with a message", e.Status, e.Code, e.Message, code)
	}
	return e
}

func TestCursorCodecKey(t *testing.T) {
	if _, err := page.NewCodec([]byte("fifteen bytes!!")); err == nil {
		t.Fatalf("NewCodec(15-byte key) = nil error; want an error")
	}
	if _, err := page.NewCodec([]byte("sixteen bytes!!!")); err != nil {
		t.Fatalf("NewCodec(16-byte key) = %v; want nil", err)
	}
}

func TestParse(t *testing.T) {
	since := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	tests := []struct {
		name    string
		raw     string
		filters []string
		want    page.Params
		wantMsg string // an error whose message contains this
	}{
		{name: "defaults", raw: "", want: page.Params{Limit: 50, Desc: true}},
		{name: "empty values are defaults", raw: "limit=&order=&since=&cursor=", want: page.Params{Limit: 50, Desc: true}},
		{name: "limit 1", raw: "limit=1", want: page.Params{Limit: 1, Desc: true}},
		{name: "limit 200", raw: "limit=200", want: page.Params{Limit: 200, Desc: true}},
		{name: "limit 0", raw: "limit=0", wantMsg: "limit must be an integer from 1 to 200"},
		{name: "limit 201", raw: "limit=201", wantMsg: `got "201"`},
		{name: "limit -1", raw: "limit=-1", wantMsg: `got "-1"`},
		{name: "limit abc", raw: "limit=abc", wantMsg: `got "abc"`},
		{name: "limit fraction", raw: "limit=1.5", wantMsg: "limit must be an integer"},
		{name: "limit huge", raw: "limit=99999999999999999999999", wantMsg: "limit must be an integer"},
		{name: "order asc", raw: "order=asc", want: page.Params{Limit: 50}},
		{name: "order desc", raw: "order=desc", want: page.Params{Limit: 50, Desc: true}},
		{name: "order bad", raw: "order=up", wantMsg: `order must be asc or desc, got "up"`},
		{name: "order upper case", raw: "order=ASC", wantMsg: "order must be asc or desc"},
		{name: "since RFC 3339", raw: "since=2026-01-02T15:04:05Z", want: page.Params{Limit: 50, Desc: true, Since: since}},
		{name: "since with offset and fraction", raw: "since=2026-01-02T16:04:05.5%2B01:00", want: page.Params{Limit: 50, Desc: true, Since: since.Add(500 * time.Millisecond)}},
		{name: "since date only", raw: "since=2026-01-02", wantMsg: "since must be an RFC 3339 timestamp"},
		{name: "since words", raw: "since=yesterday", wantMsg: `got "yesterday"`},
		{name: "since unix seconds", raw: "since=1767366245", wantMsg: "since must be an RFC 3339 timestamp"},
		{name: "since bad month", raw: "since=2026-13-02T15:04:05Z", wantMsg: "since must be an RFC 3339 timestamp"},
		{name: "unknown parameter", raw: "colour=red", wantMsg: `unknown query parameter "colour"`},
		{name: "unknown parameter names the filters", raw: "colour=red", filters: filters, wantMsg: "status, severity"},
		{name: "misspelt reserved parameter", raw: "limits=5", wantMsg: `unknown query parameter "limits"`},
		{name: "filter of another list", raw: "site=s1", filters: filters, wantMsg: `unknown query parameter "site"`},
		{name: "repeated limit", raw: "limit=1&limit=2", wantMsg: `"limit" given 2 times`},
		{name: "repeated filter", raw: "status=open&status=resolved", filters: filters, wantMsg: `"status" given 2 times`},
		{name: "allowed filters", raw: "status=open&severity=high&limit=10", filters: filters, want: page.Params{Limit: 10, Desc: true}},
		{name: "NUL in a filter value", raw: "status=op%00en", filters: filters, wantMsg: `"status"`},
		{name: "invalid UTF-8 in a filter value", raw: "status=%FF", filters: filters, wantMsg: "UTF-8"},
		{name: "bad cursor", raw: "cursor=abc", wantMsg: "cursor is not valid"},
	}
	cd := codec(t, "0123456789abcdef")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := cd.Parse(query(t, tc.raw), list, tc.filters...)
			if tc.wantMsg == "" {
				if err != nil {
					t.Fatalf("Parse(%q) = %v; want nil", tc.raw, err)
				}
				if !got.Since.Equal(tc.want.Since) {
					t.Fatalf("Parse(%q) since %v; want %v", tc.raw, got.Since, tc.want.Since)
				}
				got.Since = tc.want.Since
				if !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("Parse(%q) = %v; want %v", tc.raw, got, tc.want)
				}
				return
			}
			code := apierr.CodeBadRequest
			if strings.Contains(tc.raw, "cursor=") {
				code = apierr.CodeInvalidCursor
			}
			e := wantAPIError(t, err, code)
			if !strings.Contains(e.Message, tc.wantMsg) {
				t.Fatalf("Parse(%q) message %q; want it to contain %q", tc.raw, e.Message, tc.wantMsg)
			}
		})
	}
}

func key(k page.Key) page.Key { return k }

// rows returns n keys one second apart, newest first, as a descending list fetches them.
func rows(n int) []page.Key {
	t0 := time.Date(2026, 3, 4, 5, 6, 7, 891011000, time.UTC)
	out := make([]page.Key, n)
	for i := range out {
		out[i] = page.Key{UpdatedAt: t0.Add(-time.Duration(i) * time.Second), ID: "case_" + string(rune('a'+i))}
	}
	return out
}

// firstCursor returns the next_cursor of the first page of the list asked for by raw.
func firstCursor(t testing.TB, cd *page.Codec, raw string) string {
	t.Helper()
	q := query(t, raw)
	p, err := cd.Parse(q, list, filters...)
	if err != nil {
		t.Fatalf("Parse(%q): %v", raw, err)
	}
	env := page.Page(cd, q, list, p, rows(p.Limit+1), key)
	if env.NextCursor == nil {
		t.Fatalf("Page(%d rows, limit %d) has no next_cursor; want one", p.Limit+1, p.Limit)
	}
	return *env.NextCursor
}

func TestCursorPage(t *testing.T) {
	cd := codec(t, "0123456789abcdef")
	tests := []struct {
		name       string
		rows       []page.Key
		limit      int
		wantLen    int
		wantCursor bool
	}{
		{name: "nil rows", rows: nil, limit: 2, wantLen: 0},
		{name: "fewer than a page", rows: rows(1), limit: 2, wantLen: 1},
		{name: "exactly a page", rows: rows(2), limit: 2, wantLen: 2},
		{name: "more than a page", rows: rows(3), limit: 2, wantLen: 2, wantCursor: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := page.Page(cd, url.Values{}, list, page.Params{Limit: tc.limit, Desc: true}, tc.rows, key)
			if env.Data == nil || len(env.Data) != tc.wantLen {
				t.Fatalf("got data %v; want %d rows (never null)", env.Data, tc.wantLen)
			}
			if got := env.NextCursor != nil; got != tc.wantCursor {
				t.Fatalf("got next_cursor %v; want one: %v", env.NextCursor, tc.wantCursor)
			}
		})
	}
}

func TestCursorRoundTrip(t *testing.T) {
	cd := codec(t, "0123456789abcdef")
	tests := []struct {
		name string
		raw  string // the first page's query
		next string // the next page's query, without cursor
	}{
		{name: "defaults", raw: "limit=2", next: ""},
		{name: "explicit desc equals the default", raw: "limit=2", next: "order=desc"},
		{name: "asc", raw: "limit=2&order=asc", next: "order=asc"},
		{name: "since and filters", raw: "limit=2&since=2026-01-02T15:04:05Z&status=open&severity=high", next: "severity=high&since=2026-01-02T15:04:05Z&status=open"},
		{name: "limit changed between pages", raw: "limit=2", next: "limit=200"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := firstCursor(t, cd, tc.raw)
			q := query(t, tc.next)
			q.Set("cursor", c)
			p, err := cd.Parse(q, list, filters...)
			if err != nil {
				t.Fatalf("Parse(next page) = %v; want nil", err)
			}
			want := rows(3)[1]
			if p.After == nil || !p.After.UpdatedAt.Equal(want.UpdatedAt) || p.After.ID != want.ID {
				t.Fatalf("got After %v; want %v", p.After, want)
			}
		})
	}
}

func TestCursorRefused(t *testing.T) {
	cd := codec(t, "0123456789abcdef")
	const first = "limit=2&status=open&since=2026-01-02T15:04:05Z"
	good := firstCursor(t, cd, first)
	raw, err := base64.RawURLEncoding.DecodeString(good)
	if err != nil {
		t.Fatalf("cursor %q is not base64url: %v", good, err)
	}
	type tc struct {
		name   string
		cd     *page.Codec
		list   string
		query  string // without cursor
		cursor string
	}
	tests := []tc{
		{name: "another list", list: "/v1/devices", query: "status=open&since=2026-01-02T15:04:05Z", cursor: good},
		{name: "another order", query: "order=asc&status=open&since=2026-01-02T15:04:05Z", cursor: good},
		{name: "another filter value", query: "status=resolved&since=2026-01-02T15:04:05Z", cursor: good},
		{name: "filter dropped", query: "since=2026-01-02T15:04:05Z", cursor: good},
		{name: "filter added", query: "status=open&severity=low&since=2026-01-02T15:04:05Z", cursor: good},
		{name: "another since", query: "status=open&since=2026-01-02T15:04:06Z", cursor: good},
		{name: "since dropped", query: "status=open", cursor: good},
		{name: "another codec key", cd: codec(t, "fedcba9876543210"), query: "status=open&since=2026-01-02T15:04:05Z", cursor: good},
		{name: "not base64", query: "status=open&since=2026-01-02T15:04:05Z", cursor: "!!!!"},
		{name: "padded base64", query: "status=open&since=2026-01-02T15:04:05Z", cursor: base64.URLEncoding.EncodeToString(raw)},
		{name: "too short", query: "status=open&since=2026-01-02T15:04:05Z", cursor: good[:20]},
		{name: "newline inserted", query: "status=open&since=2026-01-02T15:04:05Z", cursor: good[:5] + "\n" + good[5:]},
		{name: "carriage return appended", query: "status=open&since=2026-01-02T15:04:05Z", cursor: good + "\r"},
		{name: "too long", query: "status=open&since=2026-01-02T15:04:05Z", cursor: strings.Repeat("A", 600)},
		{name: "truncated by one byte", query: "status=open&since=2026-01-02T15:04:05Z", cursor: base64.RawURLEncoding.EncodeToString(raw[:len(raw)-1])},
		{name: "one byte appended", query: "status=open&since=2026-01-02T15:04:05Z", cursor: base64.RawURLEncoding.EncodeToString(append(append([]byte(nil), raw...), 0))},
	}
	for i := range raw {
		b := append([]byte(nil), raw...)
		b[i] ^= 0x01
		tests = append(tests, tc{name: "bit flipped in byte " + strconv.Itoa(i), query: "status=open&since=2026-01-02T15:04:05Z", cursor: base64.RawURLEncoding.EncodeToString(b)})
	}
	// Every other character in every position: the encoding is canonical, so no other string
	// names the same cursor.
	for i := range good {
		for _, r := range "AQgw_-" {
			if byte(r) != good[i] {
				s := good[:i] + string(r) + good[i+1:]
				tests = append(tests, tc{name: "character " + strconv.Itoa(i) + " changed to " + string(r), query: "status=open&since=2026-01-02T15:04:05Z", cursor: s})
				break
			}
		}
	}
	// The last character carries unused low bits when the length is not a multiple of 3;
	// setting them must not give a second spelling of the same cursor.
	if len(raw)%3 != 0 {
		const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
		last := strings.IndexByte(alphabet, good[len(good)-1])
		tests = append(tests, tc{name: "unused bits of the last character set", query: "status=open&since=2026-01-02T15:04:05Z",
			cursor: good[:len(good)-1] + string(alphabet[last^1])})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, l := cd, list
			if tc.cd != nil {
				c = tc.cd
			}
			if tc.list != "" {
				l = tc.list
			}
			q := query(t, tc.query)
			q.Set("cursor", tc.cursor)
			p, err := c.Parse(q, l, filters...)
			if err == nil {
				t.Fatalf("Parse(cursor %q) = %v, nil; want invalid_cursor", tc.cursor, p)
			}
			e := wantAPIError(t, err, apierr.CodeInvalidCursor)
			if !strings.Contains(e.Message, "start again without cursor") {
				t.Fatalf("message %q; want it to say how to recover", e.Message)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	cd := codec(f, "0123456789abcdef")
	c := firstCursor(f, cd, "limit=2&status=open")
	for _, s := range []string{
		"", "limit=1", "limit=200", "limit=0", "limit=201", "limit=-1", "limit=abc", "order=asc",
		"order=desc", "order=x", "since=2026-01-02T15:04:05Z", "since=2026-01-02", "status=open",
		"colour=red", "limit=1&limit=2", "status=%00", "status=%FF", "cursor=abc", "a=%zz",
		"limit=2&status=open&cursor=" + c, "status=open&cursor=" + c, "order=asc&status=open&cursor=" + c,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return // the HTTP server would not have got this far either
		}
		p, err := cd.Parse(q, list, filters...)
		if err != nil {
			var e *apierr.Error
			if !errors.As(err, &e) {
				t.Fatalf("Parse(%q) error %v (%T); want *apierr.Error", raw, err, err)
			}
			if e.Status != http.StatusBadRequest || (e.Code != apierr.CodeBadRequest && e.Code != apierr.CodeInvalidCursor) || e.Message == "" {
				t.Fatalf("Parse(%q) = %d %s %q; want 400 bad_request or invalid_cursor with a message", raw, e.Status, e.Code, e.Message)
			}
			return
		}
		if p.Limit < 1 || p.Limit > page.MaxLimit {
			t.Fatalf("Parse(%q) limit %d; want 1..%d", raw, p.Limit, page.MaxLimit)
		}
		if p.After != nil && q.Get("cursor") != c {
			t.Fatalf("Parse(%q) accepted cursor %q; want only the issued %q", raw, q.Get("cursor"), c)
		}
		if q.Get("cursor") == "" && p.After != nil {
			t.Fatalf("Parse(%q) = After %v without a cursor; want nil", raw, p.After)
		}
	})
}

func FuzzCursor(f *testing.F) {
	cd := codec(f, "0123456789abcdef")
	c := firstCursor(f, cd, "limit=2")
	raw, _ := base64.RawURLEncoding.DecodeString(c)
	for _, s := range []string{"", "A", "AAAA", c, c[:len(c)-1], c + "A", strings.ToUpper(c), c[:13] + "\n" + c[13:], base64.URLEncoding.EncodeToString(raw), strings.Repeat("A", 513)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := cd.Parse(url.Values{"cursor": {s}}, list)
		switch {
		case s == "" || s == c:
			if err != nil {
				t.Fatalf("Parse(cursor %q) = %v; want nil", s, err)
			}
		case err == nil:
			t.Fatalf("Parse(cursor %q) = After %v; want invalid_cursor (only %q was issued)", s, p.After, c)
		default:
			wantAPIError(t, err, apierr.CodeInvalidCursor)
		}
	})
}
