package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"
)

// Delivery headers, documented in docs/webhooks.md.
const (
	HeaderSignature = "X-Service-Signature"    // hex HMAC-SHA256 of the raw body, keyed with the secret
	HeaderTimestamp = "X-Service-Timestamp"    // Unix seconds when this attempt was sent
	HeaderSigned    = "X-Service-Signature-V2" // hex HMAC-SHA256 of "<timestamp>.<raw body>"
	HeaderEventID   = "X-Service-Event-Id"
	HeaderEventType = "X-Service-Event-Type"
	HeaderDelivery  = "X-Service-Delivery-Id"
	HeaderAttempt   = "X-Service-Delivery-Attempt"
)

// Sign returns the spec's X-Service-Signature value for body.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// SignTimestamped returns the X-Service-Signature-V2 value: the HMAC over the timestamp and the
// body, so a receiver that checks it and refuses old timestamps refuses replays too.
func SignTimestamped(secret string, ts time.Time, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(strconv.FormatInt(ts.Unix(), 10)))
	m.Write([]byte{'.'})
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// signBoth returns Sign and SignTimestamped for a timestamp already formatted, with one HMAC.
func signBoth(secret, ts string, body []byte) (sig, sigV2 string) {
	m := hmac.New(sha256.New, []byte(secret))
	var sum [sha256.Size]byte
	var hx [2 * sha256.Size]byte
	m.Write(body)
	hex.Encode(hx[:], m.Sum(sum[:0]))
	sig = string(hx[:])
	m.Reset()
	m.Write([]byte(ts + "."))
	m.Write(body)
	hex.Encode(hx[:], m.Sum(sum[:0]))
	return sig, string(hx[:])
}

// Verify checks a delivery as a receiver should: both signatures in constant time, and the
// timestamp no further than tolerance from now. It is what the tests' receiver uses and what
// docs/webhooks.md shows receivers.
func Verify(secret string, body []byte, signature, signedV2, timestamp string, tolerance time.Duration, now time.Time) bool {
	if !hmac.Equal([]byte(signature), []byte(Sign(secret, body))) {
		return false
	}
	sec, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return false
	}
	ts := time.Unix(sec, 0)
	if d := now.Sub(ts); d > tolerance || d < -tolerance {
		return false
	}
	return hmac.Equal([]byte(signedV2), []byte(SignTimestamped(secret, ts, body)))
}
