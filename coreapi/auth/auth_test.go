package auth_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/edgewan/edgewan/coreapi/apierr"
	"github.com/edgewan/edgewan/coreapi/auth"
	"github.com/edgewan/edgewan/coreapi/ratelimit"
	"github.com/edgewan/edgewan/coreapi/rest"
)

// memKeys is an in-memory auth.KeyStore.
type memKeys struct {
	mu     sync.Mutex
	keys   map[string]*auth.Key
	hashes map[string]string
	err    error // returned by every call when set (the database is down)
}

var _ auth.KeyStore = (*memKeys)(nil)

func newMemKeys() *memKeys {
	return &memKeys{keys: map[string]*auth.Key{}, hashes: map[string]string{}}
}

func (m *memKeys) CreateKey(_ context.Context, k *auth.Key, hash string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return m.err
	}
	if _, ok := m.keys[k.ID]; ok {
		return apierr.ErrConflict
	}
	c := *k
	m.keys[k.ID], m.hashes[k.ID] = &c, hash
	return nil
}

func (m *memKeys) KeyByID(_ context.Context, id string) (*auth.Key, string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return nil, "", m.err
	}
	k, ok := m.keys[id]
	if !ok {
		return nil, "", fmt.Errorf("key %q: %w", id, apierr.ErrNotFound)
	}
	c := *k
	return &c, m.hashes[id], nil
}

func (m *memKeys) ListKeys(context.Context) ([]*auth.Key, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*auth.Key
	for _, k := range m.keys {
		c := *k
		out = append(out, &c)
	}
	return out, m.err
}

func (m *memKeys) RevokeKey(_ context.Context, id string, at time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k, ok := m.keys[id]
	if !ok {
		return apierr.ErrNotFound
	}
	k.RevokedAt = at
	return nil
}

func (m *memKeys) TouchKey(_ context.Context, id string, at time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if k, ok := m.keys[id]; ok {
		k.LastUsedAt = at
	}
	return nil
}

func TestNewToken(t *testing.T) {
	seen := map[string]bool{}
	for i := range 100 {
		id, token, hash := auth.NewToken()
		if !strings.HasPrefix(token, auth.TokenPrefix) || auth.TokenPrefix != "ewk_" {
			t.Fatalf("got token %q; want the prefix ewk_", token)
		}
		if !strings.HasPrefix(id, "key_") {
			t.Fatalf("got id %q; want the prefix key_", id)
		}
		gotID, secret, ok := auth.ParseToken(token)
		if !ok || gotID != id {
			t.Fatalf("ParseToken(%q) = %q, ok %v; want %q, true", token, gotID, ok, id)
		}
		raw, err := base64.RawURLEncoding.DecodeString(secret)
		if err != nil {
			t.Fatalf("secret %q is not base64url: %v", secret, err)
		}
		if bits := 8 * len(raw); bits < 128 {
			t.Fatalf("got %d bits of secret; want at least 128", bits)
		}
		if strings.Contains(hash, secret) || strings.Contains(token, hash) {
			t.Fatalf("hash %q relates visibly to token %q; want a one-way hash", hash, token)
		}
		if got := auth.HashSecret(secret); got != hash {
			t.Fatalf("HashSecret(secret) = %q; want the returned hash %q", got, hash)
		}
		if !auth.SecretMatches(secret, hash) {
			t.Fatalf("SecretMatches(secret, hash) = false; want true")
		}
		if seen[token] || seen[id] {
			t.Fatalf("token %d repeats an earlier token or id", i)
		}
		seen[token], seen[id] = true, true
	}
}

func TestParseTokenMalformed(t *testing.T) {
	_, good, _ := auth.NewToken()
	idPart, secret, _ := strings.Cut(strings.TrimPrefix(good, "ewk_"), "_")
	tests := []struct {
		name  string
		token string
	}{
		{name: "empty", token: ""},
		{name: "prefix only", token: "ewk_"},
		{name: "short parts", token: "ewk_abc_def"},
		{name: "other prefix", token: "ewx_" + idPart + "_" + secret},
		{name: "upper-case prefix", token: "EWK_" + idPart + "_" + secret},
		{name: "no prefix", token: idPart + "_" + secret},
		{name: "no separator", token: "ewk_" + idPart + secret},
		{name: "id not hex", token: "ewk_" + strings.Repeat("z", 20) + "_" + secret},
		{name: "id too short", token: "ewk_" + idPart[:19] + "_" + secret},
		{name: "id too long", token: "ewk_" + idPart + "0_" + secret},
		{name: "secret too short", token: "ewk_" + idPart + "_" + secret[:42]},
		{name: "secret too long", token: "ewk_" + idPart + "_" + secret + "A"},
		{name: "bearer scheme included", token: "Bearer " + good},
		{name: "leading space", token: " " + good},
		{name: "trailing newline", token: good + "\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if id, sec, ok := auth.ParseToken(tc.token); ok {
				t.Fatalf("ParseToken(%q) = %q, %q, true; want false", tc.token, id, sec)
			}
		})
	}
}

func TestTokenSecretMatches(t *testing.T) {
	_, token, hash := auth.NewToken()
	_, secret, _ := auth.ParseToken(token)
	_, other, _ := auth.NewToken()
	_, otherSecret, _ := auth.ParseToken(other)
	tests := []struct {
		name   string
		secret string
		hash   string
		want   bool
	}{
		{name: "right secret", secret: secret, hash: hash, want: true},
		{name: "other secret", secret: otherSecret, hash: hash},
		{name: "one character changed", secret: "A" + secret[1:], hash: hash, want: secret[0] == 'A'},
		{name: "empty secret", secret: "", hash: hash},
		{name: "empty hash", secret: secret, hash: ""},
		{name: "upper-case hash", secret: secret, hash: strings.ToUpper(hash), want: hash == strings.ToUpper(hash)},
		{name: "hash used as secret", secret: hash, hash: hash},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := auth.SecretMatches(tc.secret, tc.hash); got != tc.want {
				t.Fatalf("SecretMatches = %v; want %v", got, tc.want)
			}
		})
	}
}

func TestValidateScopes(t *testing.T) {
	tests := []struct {
		name    string
		in      []string
		want    []string
		wantErr string // the error names this
	}{
		{name: "nil", in: nil, want: []string{}},
		{name: "one", in: []string{"org:read"}, want: []string{"org:read"}},
		{name: "sorted", in: []string{"webhooks:write", "devices:read", "org:read"}, want: []string{"devices:read", "org:read", "webhooks:write"}},
		{name: "duplicates removed", in: []string{"soc:read", "org:read", "soc:read"}, want: []string{"org:read", "soc:read"}},
		{name: "spaces trimmed and blanks skipped", in: []string{" soc:write ", "", "  "}, want: []string{"soc:write"}},
		{name: "all", in: auth.AllScopes, want: []string{"aigw:admin", "devices:read", "org:read", "sdwan:read", "sdwan:write", "soc:read", "soc:write", "webhooks:write"}},
		{name: "unknown", in: []string{"org:read", "org:write"}, wantErr: `"org:write"`},
		{name: "wrong case", in: []string{"ORG:READ"}, wantErr: `"ORG:READ"`},
		{name: "wildcard", in: []string{"*"}, wantErr: `"*"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := auth.ValidateScopes(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "known scopes") {
					t.Fatalf("ValidateScopes(%q) error %v; want one naming %s and the known scopes", tc.in, err, tc.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ValidateScopes(%q) = %q, %v; want %q, nil", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestTokenCreate(t *testing.T) {
	tests := []struct {
		name       string
		keyName    string
		scopes     []string
		project    string
		wantScopes []string
		wantErr    string
	}{
		{name: "API key", keyName: "ci", scopes: []string{"soc:write", "org:read", "org:read"}, wantScopes: []string{"org:read", "soc:write"}},
		{name: "gateway key", project: "payments-eu.prod_1", wantScopes: []string{}},
		{name: "gateway key, spaces trimmed", project: "  team-a ", wantScopes: []string{}},
		{name: "64-character project", project: strings.Repeat("p", 64), wantScopes: []string{}},
		{name: "neither scopes nor project", wantErr: "needs scopes or a project"},
		{name: "blank scopes and project", scopes: []string{" "}, project: " ", wantErr: "needs scopes or a project"},
		{name: "both scopes and project", scopes: []string{"org:read"}, project: "p", wantErr: "may carry only the scope aigw:admin"},
		{name: "admin scope without project", scopes: []string{"aigw:admin"}, wantErr: "needs a project"},
		{name: "project admin key", scopes: []string{"aigw:admin"}, project: "p", wantScopes: []string{"aigw:admin"}},
		{name: "unknown scope", scopes: []string{"root"}, wantErr: `"root"`},
		{name: "65-character project", project: strings.Repeat("p", 65), wantErr: "1-64"},
		{name: "project with space", project: "a b", wantErr: `"a b"`},
		{name: "project with slash", project: "a/b", wantErr: "1-64 letters"},
		{name: "project with non-ASCII letter", project: "café", wantErr: "1-64 letters"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ks := newMemKeys()
			k, token, err := auth.Create(context.Background(), ks, tc.keyName, tc.scopes, tc.project)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Create error %v; want one containing %q", err, tc.wantErr)
				}
				if len(ks.keys) != 0 {
					t.Fatalf("got %d stored keys after a refused Create; want 0", len(ks.keys))
				}
				return
			}
			if err != nil {
				t.Fatalf("Create = %v; want nil", err)
			}
			if !reflect.DeepEqual(k.Scopes, tc.wantScopes) || k.Project != strings.TrimSpace(tc.project) {
				t.Fatalf("got scopes %q project %q; want %q %q", k.Scopes, k.Project, tc.wantScopes, strings.TrimSpace(tc.project))
			}
			wantName := tc.keyName
			if wantName == "" {
				wantName = k.ID
			}
			if k.Name != wantName {
				t.Fatalf("got name %q; want %q", k.Name, wantName)
			}
			id, secret, ok := auth.ParseToken(token)
			if !ok || id != k.ID {
				t.Fatalf("ParseToken(token) = %q, %v; want %q, true", id, ok, k.ID)
			}
			stored, hash, err := ks.KeyByID(context.Background(), id)
			if err != nil || !auth.SecretMatches(secret, hash) || strings.Contains(hash, secret) {
				t.Fatalf("stored key %v hash %q err %v; want the secret's hash only", stored, hash, err)
			}
		})
	}
}

func TestTokenCreateStoreError(t *testing.T) {
	ks := newMemKeys()
	ks.err = errors.New("disk full")
	_, _, err := auth.Create(context.Background(), ks, "", []string{"org:read"}, "")
	if err == nil || !strings.Contains(err.Error(), "auth.Create") || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("Create error %v; want the store's error wrapped with auth.Create", err)
	}
}

// authServer serves GET /x (scope org:read) and GET /any behind the Authenticator.
func authServer(a *auth.Authenticator) *gin.Engine {
	gin.SetMode(gin.TestMode)
	e := gin.New()
	e.Use(rest.RequestID(), rest.Recovery())
	g := e.Group("", a.Middleware())
	g.GET("/x", auth.Require(auth.ScopeOrgRead), func(c *gin.Context) { c.String(http.StatusOK, auth.KeyFrom(c).ID) })
	g.GET("/any", func(c *gin.Context) { c.String(http.StatusOK, auth.KeyFrom(c).ID) })
	return e
}

func TestAuthenticator(t *testing.T) {
	ks := newMemKeys()
	ctx := context.Background()
	reader, readerTok, _ := auth.Create(ctx, ks, "reader", []string{"org:read"}, "")
	_, socTok, _ := auth.Create(ctx, ks, "soc", []string{"soc:read", "soc:write", "devices:read"}, "")
	_, projTok, _ := auth.Create(ctx, ks, "", nil, "proj")
	revoked, revokedTok, _ := auth.Create(ctx, ks, "old", []string{"org:read"}, "")
	_ = ks.RevokeKey(ctx, revoked.ID, time.Now())
	_, unknownTok, _ := auth.NewToken()
	wrongSecret := readerTok[:len(readerTok)-1] + map[bool]string{true: "B", false: "A"}[strings.HasSuffix(readerTok, "A")]

	var mu sync.Mutex
	var failures []auth.Failure
	a := &auth.Authenticator{Keys: ks, OnFail: func(_ context.Context, f auth.Failure) {
		mu.Lock()
		failures = append(failures, f)
		mu.Unlock()
	}}
	e := authServer(a)
	tests := []struct {
		name       string
		path       string
		header     string // Authorization
		wantStatus int
		wantCode   string
		wantMsg    string
		wantFail   string // the Failure reason reported
		wantKeyID  string // the Failure's KeyID
	}{
		{name: "scoped token", path: "/x", header: "Bearer " + readerTok, wantStatus: 200},
		{name: "scheme in lower case", path: "/x", header: "bearer " + readerTok, wantStatus: 200},
		{name: "any token on an unscoped route", path: "/any", header: "Bearer " + socTok, wantStatus: 200},
		{name: "project key on an unscoped route", path: "/any", header: "Bearer " + projTok, wantStatus: 200},
		{name: "missing", path: "/x", wantStatus: 401, wantCode: "unauthorized", wantMsg: "missing Authorization", wantFail: "missing"},
		{name: "basic scheme", path: "/x", header: "Basic dXNlcjpwYXNz", wantStatus: 401, wantCode: "unauthorized", wantMsg: "malformed", wantFail: "malformed"},
		{name: "no scheme", path: "/x", header: readerTok, wantStatus: 401, wantCode: "unauthorized", wantMsg: "malformed", wantFail: "malformed"},
		{name: "malformed", path: "/x", header: "Bearer abc", wantStatus: 401, wantCode: "unauthorized", wantMsg: "malformed", wantFail: "malformed"},
		{name: "unknown", path: "/x", header: "Bearer " + unknownTok, wantStatus: 401, wantCode: "unauthorized", wantMsg: "invalid token", wantFail: "unknown", wantKeyID: idOf(unknownTok)},
		{name: "wrong secret", path: "/x", header: "Bearer " + wrongSecret, wantStatus: 401, wantCode: "unauthorized", wantMsg: "invalid token", wantFail: "mismatch", wantKeyID: reader.ID},
		{name: "revoked", path: "/x", header: "Bearer " + revokedTok, wantStatus: 401, wantCode: "unauthorized", wantMsg: "revoked", wantFail: "revoked", wantKeyID: revoked.ID},
		{name: "missing scope", path: "/x", header: "Bearer " + socTok, wantStatus: 403, wantCode: "invalid_scope", wantMsg: "org:read"},
		{name: "project key without scope", path: "/x", header: "Bearer " + projTok, wantStatus: 403, wantCode: "invalid_scope", wantMsg: "org:read"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			failures = nil
			mu.Unlock()
			w := do(t, e, tc.path, tc.header, "")
			if w.Code != tc.wantStatus {
				t.Fatalf("got %d (%s); want %d", w.Code, w.Body, tc.wantStatus)
			}
			if tc.wantCode != "" {
				eb := errorBody(t, w)
				if eb.Error.Code != tc.wantCode || !strings.Contains(eb.Error.Message, tc.wantMsg) {
					t.Fatalf("got %s %q; want %s with %q", eb.Error.Code, eb.Error.Message, tc.wantCode, tc.wantMsg)
				}
				if tc.wantStatus == 401 && w.Header().Get("WWW-Authenticate") == "" {
					t.Fatalf("got no WWW-Authenticate header on a 401; want one")
				}
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case tc.wantFail == "" && len(failures) != 0:
				t.Fatalf("got failures %+v; want none", failures)
			case tc.wantFail != "" && (len(failures) != 1 || failures[0].Reason != tc.wantFail || failures[0].KeyID != tc.wantKeyID || failures[0].ClientIP == ""):
				t.Fatalf("got failures %+v; want one %q for key %q with the client address", failures, tc.wantFail, tc.wantKeyID)
			}
		})
	}
}

func idOf(token string) string {
	id, _, _ := auth.ParseToken(token)
	return id
}

func do(t *testing.T, h http.Handler, path, authorization, remote string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	if remote != "" {
		req.RemoteAddr = remote
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

func errorBody(t *testing.T, w *httptest.ResponseRecorder) rest.ErrorBody {
	t.Helper()
	var eb rest.ErrorBody
	if err := json.Unmarshal(w.Body.Bytes(), &eb); err != nil {
		t.Fatalf("body %s is not the error body: %v", w.Body, err)
	}
	if eb.Error.Code == "" || eb.Error.Message == "" || eb.Error.RequestID != w.Header().Get(rest.HeaderRequestID) {
		t.Fatalf("got error body %s with X-Request-Id %q; want it complete and matching", w.Body, w.Header().Get(rest.HeaderRequestID))
	}
	return eb
}

func TestAuthenticatorStoreDown(t *testing.T) {
	ks := newMemKeys()
	_, tok, _ := auth.Create(context.Background(), ks, "", []string{"org:read"}, "")
	ks.err = errors.New("connection refused")
	w := do(t, authServer(&auth.Authenticator{Keys: ks}), "/x", "Bearer "+tok, "")
	if eb := errorBody(t, w); w.Code != 500 || eb.Error.Code != apierr.CodeInternal || strings.Contains(eb.Error.Message, "refused") {
		t.Fatalf("got %d %s %q; want 500 internal without the detail (a 401 would tell a client its key is bad)", w.Code, eb.Error.Code, eb.Error.Message)
	}
}

func TestAuthenticatorRateLimit(t *testing.T) {
	ks := newMemKeys()
	_, tok, _ := auth.Create(context.Background(), ks, "", []string{"org:read"}, "")
	_, other, _ := auth.Create(context.Background(), ks, "", []string{"org:read"}, "")
	e := authServer(&auth.Authenticator{Keys: ks, Limiter: ratelimit.New(ratelimit.Options{Rate: 0.001, Burst: 2})})
	tests := []struct {
		name          string
		header        string
		remote        string
		wantStatus    int
		wantRemaining string
	}{
		{name: "first", header: "Bearer " + tok, wantStatus: 200, wantRemaining: "1"},
		{name: "second", header: "Bearer " + tok, wantStatus: 200, wantRemaining: "0"},
		{name: "third is limited", header: "Bearer " + tok, wantStatus: 429, wantRemaining: "0"},
		{name: "another key has its own bucket", header: "Bearer " + other, wantStatus: 200, wantRemaining: "1"},
		{name: "failed attempt 1", header: "Bearer bad", remote: "192.0.2.1:1000", wantStatus: 401},
		{name: "failed attempt 2", header: "Bearer bad", remote: "192.0.2.1:1001", wantStatus: 401},
		{name: "failed attempt 3 is limited", header: "Bearer bad", remote: "192.0.2.1:1002", wantStatus: 429, wantRemaining: "0"},
		{name: "failed attempt from another address", header: "Bearer bad", remote: "192.0.2.2:1000", wantStatus: 401},
		{name: "valid key from the limited address", header: "Bearer " + other, remote: "192.0.2.1:1003", wantStatus: 200, wantRemaining: "0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := do(t, e, "/x", tc.header, tc.remote)
			if w.Code != tc.wantStatus {
				t.Fatalf("got %d (%s); want %d", w.Code, w.Body, tc.wantStatus)
			}
			if got := w.Header().Get(ratelimit.HeaderRemaining); got != tc.wantRemaining {
				t.Fatalf("got %s %q; want %q", ratelimit.HeaderRemaining, got, tc.wantRemaining)
			}
			if tc.wantStatus == 429 {
				if eb := errorBody(t, w); eb.Error.Code != apierr.CodeRateLimited {
					t.Fatalf("got code %q; want rate_limited", eb.Error.Code)
				}
				if w.Header().Get(ratelimit.HeaderRetry) == "" || w.Header().Get(ratelimit.HeaderLimit) != "2" {
					t.Fatalf("got Retry-After %q, X-RateLimit-Limit %q; want a value and 2", w.Header().Get(ratelimit.HeaderRetry), w.Header().Get(ratelimit.HeaderLimit))
				}
			}
		})
	}
}
