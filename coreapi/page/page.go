// Package page implements the list conventions of every API family: the since/limit/cursor/order
// parameters, opaque signed keyset cursors and the {"data","next_cursor"} envelope.
package page

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/edgewan/edgewan/coreapi/apierr"
)

// Limits on page size.
const (
	DefaultLimit = 50
	MaxLimit     = 200
)

// Key is a row's position in the (updated_at, id) keyset order.
type Key struct {
	UpdatedAt time.Time
	ID        string
}

// Params are a list request's parsed parameters.
type Params struct {
	Since time.Time // zero: no lower bound
	Limit int       // 1..MaxLimit
	Desc  bool      // newest first (the default)
	After *Key      // from the cursor: rows strictly after this key in the list order
}

// Envelope is the body of every list response.
type Envelope[T any] struct {
	Data       []T     `json:"data"`
	NextCursor *string `json:"next_cursor"`
}

// Codec parses list parameters and signs cursors with a server-held key, so a cursor that was
// altered, or issued for another list or order, is refused instead of silently misread.
type Codec struct {
	key []byte
}

// NewCodec returns a Codec that signs with key (at least 16 bytes).
func NewCodec(key []byte) (*Codec, error) {
	if len(key) < 16 {
		return nil, errors.New("page.NewCodec: key shorter than 16 bytes")
	}
	return &Codec{key: append([]byte(nil), key...)}, nil
}

var reservedParams = map[string]bool{"since": true, "limit": true, "cursor": true, "order": true}

// Parse reads since, limit, order and cursor from q. list names the list (e.g. the route path);
// filters are the names of the resource filters in use, whose values are bound into the cursor
// together with order and since, so a cursor only continues the list it came from. A parameter
// that is neither reserved nor in allowedFilters is refused: a misspelt filter must not silently
// widen a query.
func (cd *Codec) Parse(q url.Values, list string, allowedFilters ...string) (Params, error) {
	p := Params{Limit: DefaultLimit, Desc: true}
	allowed := make(map[string]bool, len(allowedFilters))
	for _, f := range allowedFilters {
		allowed[f] = true
	}
	for k, vs := range q {
		if !reservedParams[k] && !allowed[k] {
			if len(allowedFilters) == 0 {
				return p, apierr.BadRequest("unknown query parameter %q; this list accepts since, limit, cursor and order", k)
			}
			return p, apierr.BadRequest("unknown query parameter %q; this list accepts since, limit, cursor, order and the filters %s", k, strings.Join(allowedFilters, ", "))
		}
		if len(vs) > 1 {
			return p, apierr.BadRequest("query parameter %q given %d times; give it once", k, len(vs))
		}
		// Filter values reach the database, whose text (PostgreSQL) refuses NUL and invalid
		// UTF-8 with an error that would surface as a 500. A bad cursor is invalid_cursor below.
		if k != "cursor" && len(vs) == 1 && (!utf8.ValidString(vs[0]) || strings.IndexByte(vs[0], 0) >= 0) {
			return p, apierr.BadRequest("query parameter %q must be UTF-8 text without NUL characters", k)
		}
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxLimit {
			return p, apierr.BadRequest("limit must be an integer from 1 to %d, got %q", MaxLimit, v)
		}
		p.Limit = n
	}
	switch v := q.Get("order"); v {
	case "", "desc":
	case "asc":
		p.Desc = false
	default:
		return p, apierr.BadRequest("order must be asc or desc, got %q", v)
	}
	if v := q.Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return p, apierr.BadRequest("since must be an RFC 3339 timestamp such as 2026-01-02T15:04:05Z, got %q", v)
		}
		p.Since = t
	}
	if v := q.Get("cursor"); v != "" {
		k, err := cd.decode(v, cd.binding(q, list))
		if err != nil {
			return p, apierr.New(400, apierr.CodeInvalidCursor, "cursor is not valid for this list: %v; start again without cursor", err)
		}
		p.After = &k
	}
	return p, nil
}

// Page trims rows (fetched with Limit+1) to one page and returns the envelope with the cursor
// of the next page, or a null cursor on the last page.
func Page[T any](cd *Codec, q url.Values, list string, p Params, rows []T, key func(T) Key) Envelope[T] {
	env := Envelope[T]{Data: rows}
	if env.Data == nil {
		env.Data = []T{}
	}
	if len(rows) > p.Limit {
		env.Data = rows[:p.Limit]
		c := cd.encode(key(env.Data[p.Limit-1]), cd.binding(q, list))
		env.NextCursor = &c
	}
	return env
}

// binding is what a cursor is tied to: the list, order, since and filter values (not limit:
// a client may change page size between pages).
func (cd *Codec) binding(q url.Values, list string) []byte {
	keys := make([]string, 0, len(q))
	for k := range q {
		if k != "cursor" && k != "limit" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(list)
	for _, k := range keys {
		v := q.Get(k)
		if k == "order" && v == "desc" {
			continue // desc is the default: "order=desc" and no order are the same list
		}
		b.WriteByte(0)
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(v)
	}
	return []byte(b.String())
}

// A cursor is base64url(version | updated_at unix micro | id | mac[:16]) where the MAC covers the
// payload and the binding.
const cursorVersion = 1

func (cd *Codec) encode(k Key, binding []byte) string {
	buf := make([]byte, 0, 1+8+len(k.ID)+16)
	buf = append(buf, cursorVersion)
	buf = binary.BigEndian.AppendUint64(buf, uint64(k.UpdatedAt.UnixMicro()))
	buf = append(buf, k.ID...)
	buf = append(buf, cd.mac(buf, binding)...)
	return base64.RawURLEncoding.EncodeToString(buf)
}

func (cd *Codec) decode(s string, binding []byte) (Key, error) {
	if len(s) > 512 {
		return Key{}, errors.New("too long")
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	// One spelling per cursor: the decoder skips newlines and ignores the last character's spare bits.
	if err != nil || base64.RawURLEncoding.EncodeToString(raw) != s {
		return Key{}, errors.New("not a cursor issued by this server")
	}
	if len(raw) < 1+8+16 || raw[0] != cursorVersion {
		return Key{}, errors.New("not a cursor issued by this server")
	}
	payload, sum := raw[:len(raw)-16], raw[len(raw)-16:]
	if !hmac.Equal(sum, cd.mac(payload, binding)) {
		return Key{}, errors.New("altered, or issued for another list, order, since or filter")
	}
	micros := int64(binary.BigEndian.Uint64(payload[1:9]))
	return Key{UpdatedAt: time.UnixMicro(micros).UTC(), ID: string(payload[9:])}, nil
}

func (cd *Codec) mac(payload, binding []byte) []byte {
	m := hmac.New(sha256.New, cd.key)
	m.Write(payload)
	m.Write([]byte{0xff})
	m.Write(binding)
	return m.Sum(nil)[:16]
}

// String describes the params for logs.
func (p Params) String() string {
	return fmt.Sprintf("limit=%d desc=%v since=%s after=%v", p.Limit, p.Desc, p.Since.Format(time.RFC3339), p.After)
}
