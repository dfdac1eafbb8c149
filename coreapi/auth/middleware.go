package auth

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/edgewan/edgewan/coreapi/apierr"
	"github.com/edgewan/edgewan/coreapi/ratelimit"
	"github.com/edgewan/edgewan/coreapi/rest"
)

const ctxKey = "edgewan.key"

// Failure describes a refused credential, for the SOC rules that watch for abuse.
type Failure struct {
	ClientIP string
	KeyID    string // set when the token named a key (revoked, or wrong secret)
	Reason   string // "missing", "malformed", "unknown", "revoked", "mismatch"
	At       time.Time
}

// Authenticator is the middleware that checks bearer tokens and applies the rate limit.
type Authenticator struct {
	Keys    KeyStore
	Limiter *ratelimit.Limiter             // nil: no limit
	OnFail  func(context.Context, Failure) // nil: ignored; must not block
	// Now is the wall clock of what it records (a key's last use, a failure's time); nil:
	// time.Now. The rate limit measures durations on the machine's monotonic clock instead: a
	// step of the wall clock (or of the controller's injected test clock, whose readings carry
	// the step into their differences) must neither refill nor drain a budget.
	Now func() time.Time

	touchMu  sync.Mutex
	touched  map[string]time.Time
	touching sync.WaitGroup // the background last-used writes; Wait waits for them
}

// Middleware authenticates every request: 401 unauthorized when the token is missing or bad,
// 429 rate_limited over the key's budget (or, for failed attempts, the client address's).
func (a *Authenticator) Middleware() gin.HandlerFunc {
	return func(c *gin.Context) {
		mono := time.Now()
		now := mono
		if a.Now != nil {
			now = a.Now()
		}
		k, fail, err := a.authenticate(c, now)
		if err != nil {
			rest.Fail(c, err) // the database is down: a 503 (or 500), not a misleading 401
			return
		}
		if fail != "" {
			if a.OnFail != nil {
				f := Failure{ClientIP: c.ClientIP(), Reason: fail, At: now}
				if id, _, ok := ParseToken(bearer(c)); ok {
					f.KeyID = id
				}
				a.OnFail(c.Request.Context(), f)
			}
			// Failed attempts spend the caller address's budget, which throttles guessing.
			if d := a.Limiter.Allow("ip:"+c.ClientIP(), mono); !d.OK {
				a.tooMany(c, d)
				return
			}
			c.Header("WWW-Authenticate", `Bearer realm="edgewan"`)
			rest.FailWith(c, http.StatusUnauthorized, apierr.CodeUnauthorized, "%s", failMessage(fail))
			return
		}
		d := a.Limiter.Allow(k.ID, mono)
		if a.Limiter.Enabled() {
			for h, v := range d.Headers() {
				c.Header(h, v)
			}
		}
		if !d.OK {
			a.tooMany(c, d)
			return
		}
		c.Set(ctxKey, k)
		a.touch(c.Request.Context(), k.ID, mono, now)
		c.Next()
	}
}

func (a *Authenticator) tooMany(c *gin.Context, d ratelimit.Decision) {
	for h, v := range d.Headers() {
		c.Header(h, v)
	}
	rest.FailWith(c, http.StatusTooManyRequests, apierr.CodeRateLimited,
		"rate limit of %d requests exceeded; retry after %s seconds", d.Limit, d.Headers()[ratelimit.HeaderRetry])
}

func bearer(c *gin.Context) string {
	h := c.GetHeader("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}

// authenticate returns the request's key, or why it has none, or an error when the key could
// not be looked up at all.
func (a *Authenticator) authenticate(c *gin.Context, now time.Time) (*Key, string, error) {
	if c.GetHeader("Authorization") == "" {
		return nil, "missing", nil
	}
	id, secret, ok := ParseToken(bearer(c))
	if !ok {
		return nil, "malformed", nil
	}
	k, hash, err := a.Keys.KeyByID(c.Request.Context(), id)
	if err != nil {
		if !errors.Is(err, apierr.ErrNotFound) {
			return nil, "", err
		}
		// Compare anyway so an unknown ID costs the same as a wrong secret.
		SecretMatches(secret, unknownKeyHash)
		return nil, "unknown", nil
	}
	if !SecretMatches(secret, hash) {
		return nil, "mismatch", nil
	}
	if k.Revoked() {
		return nil, "revoked", nil
	}
	return k, "", nil
}

var unknownKeyHash = strings.Repeat("0", 64)

func failMessage(reason string) string {
	switch reason {
	case "missing":
		return "missing Authorization header; send Authorization: Bearer <token>"
	case "malformed":
		return "malformed bearer token; tokens look like ewk_<20 hex>_<43 characters>"
	case "revoked":
		return "this key has been revoked"
	}
	return "invalid token"
}

// touch records last use at most once a minute per key, off the request path: the write goes
// to the database in the background, so a request never waits for a busy writer.
func (a *Authenticator) touch(ctx context.Context, id string, mono, now time.Time) {
	a.touchMu.Lock()
	if a.touched == nil {
		a.touched = make(map[string]time.Time)
	}
	last := a.touched[id]
	due := last.IsZero() || mono.Sub(last) >= time.Minute
	if due {
		a.touched[id] = mono
	}
	a.touchMu.Unlock()
	if due {
		a.touching.Add(1)
		go func() {
			defer a.touching.Done()
			tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			_ = a.Keys.TouchKey(tctx, id, now.UTC())
		}()
	}
}

// Wait waits for the last-used writes in flight (at shutdown, before the database closes).
func (a *Authenticator) Wait() { a.touching.Wait() }

// KeyFrom returns the authenticated key of the request; nil outside Middleware.
func KeyFrom(c *gin.Context) *Key {
	k, _ := c.Get(ctxKey)
	key, _ := k.(*Key)
	return key
}

// Require is middleware that lets the request through only if its key carries scope:
// otherwise 403 invalid_scope naming the scope.
func Require(scope string) gin.HandlerFunc {
	return func(c *gin.Context) {
		k := KeyFrom(c)
		if k == nil || !k.HasScope(scope) {
			rest.FailWith(c, http.StatusForbidden, apierr.CodeInvalidScope, "this token lacks the scope %s required by %s %s", scope, c.Request.Method, c.FullPath())
			return
		}
		c.Next()
	}
}
