package webhook_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"testing"
	"time"

	"github.com/edgewan/edgewan/coreapi/webhook"
)

// hmacHex is the receiver's side, written here without the package's helpers.
func hmacHex(key, msg string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(msg))
	return hex.EncodeToString(m.Sum(nil))
}

func TestSignKnownAnswers(t *testing.T) {
	const body = `{"id":"evt_1","type":"case.opened"}`
	tests := []struct {
		name         string
		secret, body string
		want         string // from `printf BODY | openssl dgst -sha256 -hmac SECRET`, or RFC 4231
	}{
		{"RFC 4231 test case 2", "Jefe", "what do ya want for nothing?", "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"},
		{"envelope", "whsec_test", body, "19a6a85918077af9853d5d50db84456e3d851e12b6c27582790a705a43941b99"},
		{"empty body", "whsec_test", "", "43c0f4d23c8e8841358fad4624b1a592799222b29f25bb59baea43cdcb522ed1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := webhook.Sign(tt.secret, []byte(tt.body)); got != tt.want {
				t.Errorf("Sign = %s; want %s", got, tt.want)
			}
			if got := hmacHex(tt.secret, tt.body); got != tt.want {
				t.Errorf("independent HMAC = %s; want %s (the test's vector is wrong)", got, tt.want)
			}
		})
	}
}

func TestSignTimestampedKnownAnswer(t *testing.T) {
	const body = `{"id":"evt_1","type":"case.opened"}`
	ts := time.Unix(1700000000, 999_000_000) // sub-second part is not signed
	// printf '1700000000.{"id":"evt_1","type":"case.opened"}' | openssl dgst -sha256 -hmac whsec_test
	const want = "bfe18cb6fbe773e3ecbea11deb0dc134fee69d205ed052b86ab77eb1aa6a9d48"
	if got := webhook.SignTimestamped("whsec_test", ts, []byte(body)); got != want {
		t.Errorf("SignTimestamped = %s; want %s", got, want)
	}
	if got := hmacHex("whsec_test", "1700000000."+body); got != want {
		t.Errorf("independent HMAC = %s; want %s (the test's vector is wrong)", got, want)
	}
	if got := webhook.SignTimestamped("whsec_test", ts.Add(time.Second), []byte(body)); got == want {
		t.Errorf("SignTimestamped at another second = %s; want a different signature", got)
	}
}

func TestVerify(t *testing.T) {
	const (
		secret = "whsec_0123456789"
		tol    = 5 * time.Minute
	)
	body := []byte(`{"id":"evt_2","type":"case.closed","created_at":"2024-01-01T00:00:00Z","data":{"id":"case_1"}}`)
	now := time.Unix(1_750_000_000, 0)
	// sent is what a receiver gets: the raw body and the three headers.
	type sent struct {
		body           []byte
		sig, sigV2, ts string
	}
	signAs := func(sec string, at time.Time, b []byte) sent {
		return sent{body: b, sig: webhook.Sign(sec, b), sigV2: webhook.SignTimestamped(sec, at, b), ts: strconv.FormatInt(at.Unix(), 10)}
	}
	tests := []struct {
		name string
		edit func(s *sent) // changes the valid delivery signed at now
		want bool
	}{
		{"valid", func(*sent) {}, true},
		{"sent a while ago, within tolerance", func(s *sent) { *s = signAs(secret, now.Add(-tol+time.Second), body) }, true},
		{"at the tolerance edge", func(s *sent) { *s = signAs(secret, now.Add(-tol), body) }, true},
		{"sender clock slightly ahead", func(s *sent) { *s = signAs(secret, now.Add(30*time.Second), body) }, true},
		{"tampered body", func(s *sent) { s.body = bytes.Replace(body, []byte("case_1"), []byte("case_2"), 1) }, false},
		{"trailing newline added", func(s *sent) { s.body = append(append([]byte(nil), body...), '\n') }, false},
		{"wrong secret", func(s *sent) { *s = signAs("whsec_other", now, body) }, false},
		{"empty secret", func(s *sent) { *s = signAs("", now, body) }, false},
		{"stale timestamp", func(s *sent) { *s = signAs(secret, now.Add(-tol-time.Second), body) }, false},
		{"replayed a day later", func(s *sent) { *s = signAs(secret, now.Add(-24*time.Hour), body) }, false},
		{"future timestamp", func(s *sent) { *s = signAs(secret, now.Add(tol+time.Second), body) }, false},
		{"timestamp header changed after signing", func(s *sent) { s.ts = strconv.FormatInt(now.Unix()-1, 10) }, false},
		{"timestamp not a number", func(s *sent) { s.ts = "yesterday" }, false},
		{"timestamp missing", func(s *sent) { s.ts = "" }, false},
		{"signature missing", func(s *sent) { s.sig = "" }, false},
		{"v2 signature missing", func(s *sent) { s.sigV2 = "" }, false},
		{"v2 signature of another body", func(s *sent) { s.sigV2 = webhook.SignTimestamped(secret, now, []byte(`{}`)) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := signAs(secret, now, body)
			tt.edit(&s)
			if got := webhook.Verify(secret, s.body, s.sig, s.sigV2, s.ts, tol, now); got != tt.want {
				t.Errorf("Verify = %v; want %v", got, tt.want)
			}
		})
	}
}
