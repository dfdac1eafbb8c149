// Package auth issues and checks API keys: random bearer tokens of which only a hash is stored,
// scopes checked per route, and project-scoped AI gateway keys.
package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// Scopes a key can carry. Each route needs exactly one; no scope implies another.
const (
	ScopeOrgRead       = "org:read"
	ScopeDevicesRead   = "devices:read"
	ScopeSOCRead       = "soc:read"
	ScopeSOCWrite      = "soc:write"
	ScopeWebhooksWrite = "webhooks:write"
	ScopeSDWANRead     = "sdwan:read"
	ScopeSDWANWrite    = "sdwan:write"
	// ScopeAIGWAdmin is the one scope an AI gateway (project) key may carry: it lets the key
	// change its project's policies and settings and read stored raw inputs.
	ScopeAIGWAdmin = "aigw:admin"
)

// APIScopes lists the scopes an API key (one without a project) may carry.
var APIScopes = []string{ScopeOrgRead, ScopeDevicesRead, ScopeSOCRead, ScopeSOCWrite,
	ScopeWebhooksWrite, ScopeSDWANRead, ScopeSDWANWrite}

// AllScopes lists every scope, in documentation order.
var AllScopes = []string{ScopeOrgRead, ScopeDevicesRead, ScopeSOCRead, ScopeSOCWrite,
	ScopeWebhooksWrite, ScopeSDWANRead, ScopeSDWANWrite, ScopeAIGWAdmin}

// TokenPrefix starts every token so secret scanners and people can recognise one.
const TokenPrefix = "ewk_"

// Key is an API key as stored: never the token, only its hash.
type Key struct {
	ID         string    `json:"id"`
	Name       string    `json:"name"`
	Scopes     []string  `json:"scopes"`
	Project    string    `json:"project,omitempty"` // set: an AI gateway key for this project
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
	LastUsedAt time.Time `json:"last_used_at,omitzero"`
	RevokedAt  time.Time `json:"revoked_at,omitzero"`
}

// HasScope reports whether k carries scope.
func (k *Key) HasScope(scope string) bool { return slices.Contains(k.Scopes, scope) }

// Revoked reports whether k was revoked.
func (k *Key) Revoked() bool { return !k.RevokedAt.IsZero() }

// NewToken returns a new key ID, its bearer token and the hash to store. The token is
// "ewk_" + the ID's random part + "_" + 256 random bits (base64url).
func NewToken() (id, token, hash string) {
	var idb [10]byte
	var secret [32]byte
	_, _ = rand.Read(idb[:])
	_, _ = rand.Read(secret[:])
	idPart := hex.EncodeToString(idb[:])
	sec := base64.RawURLEncoding.EncodeToString(secret[:])
	return "key_" + idPart, TokenPrefix + idPart + "_" + sec, HashSecret(sec)
}

// ParseToken splits a token into its key ID and secret; ok is false if it is not one of ours.
func ParseToken(token string) (id, secret string, ok bool) {
	rest, found := strings.CutPrefix(token, TokenPrefix)
	if !found {
		return "", "", false
	}
	idPart, sec, found := strings.Cut(rest, "_")
	if !found || len(idPart) != 20 || len(sec) != 43 {
		return "", "", false
	}
	if _, err := hex.DecodeString(idPart); err != nil {
		return "", "", false
	}
	return "key_" + idPart, sec, true
}

// HashSecret hashes a token's secret for storage. The secret has 256 random bits, so a fast
// hash is enough: there is nothing to brute-force.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// SecretMatches compares a presented secret with a stored hash in constant time.
func SecretMatches(secret, storedHash string) bool {
	want := HashSecret(secret)
	return subtle.ConstantTimeCompare([]byte(want), []byte(storedHash)) == 1
}

// ValidateScopes checks that every scope is known, and returns them sorted and de-duplicated.
func ValidateScopes(scopes []string) ([]string, error) {
	out := make([]string, 0, len(scopes))
	for _, s := range scopes {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !slices.Contains(AllScopes, s) {
			return nil, fmt.Errorf("unknown scope %q; known scopes: %s", s, strings.Join(AllScopes, ", "))
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out, nil
}

// KeyStore is what auth needs of the database.
type KeyStore interface {
	CreateKey(ctx context.Context, k *Key, hash string) error
	// KeyByID returns the key and its stored hash, or an error wrapping apierr.ErrNotFound.
	KeyByID(ctx context.Context, id string) (*Key, string, error)
	ListKeys(ctx context.Context) ([]*Key, error)
	RevokeKey(ctx context.Context, id string, at time.Time) error
	TouchKey(ctx context.Context, id string, at time.Time) error
}

// Create makes a key with the given name, scopes or project and returns it with its token,
// which is shown once and never stored.
func Create(ctx context.Context, ks KeyStore, name string, scopes []string, project string) (*Key, string, error) {
	scopes, err := ValidateScopes(scopes)
	if err != nil {
		return nil, "", err
	}
	project = strings.TrimSpace(project)
	switch {
	case project == "" && len(scopes) == 0:
		return nil, "", fmt.Errorf("a key needs scopes or a project")
	case project != "" && slices.ContainsFunc(scopes, func(s string) bool { return s != ScopeAIGWAdmin }):
		return nil, "", fmt.Errorf("an AI gateway key (--project) may carry only the scope %s", ScopeAIGWAdmin)
	case project == "" && slices.Contains(scopes, ScopeAIGWAdmin):
		return nil, "", fmt.Errorf("the scope %s needs a project (--project)", ScopeAIGWAdmin)
	case project != "" && !validProject(project):
		return nil, "", fmt.Errorf("project %q: use 1-64 letters, digits, '-', '_' or '.'", project)
	}
	id, token, hash := NewToken()
	now := time.Now().UTC()
	if name == "" {
		name = id
	}
	k := &Key{ID: id, Name: name, Scopes: scopes, Project: project, CreatedAt: now, UpdatedAt: now}
	if err := ks.CreateKey(ctx, k, hash); err != nil {
		return nil, "", fmt.Errorf("auth.Create: %w", err)
	}
	return k, token, nil
}

func validProject(p string) bool {
	if len(p) == 0 || len(p) > 64 {
		return false
	}
	for _, r := range p {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}
