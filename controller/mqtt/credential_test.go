package mqtt_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/edgewan/edgewan/controller/mqtt"
)

var _ mqtt.CredentialStore = (*memStore)(nil)

func TestNewCredential(t *testing.T) {
	pw, c, err := mqtt.NewCredential("dev-a", "site-a")
	if err != nil {
		t.Fatal(err)
	}
	if c.Username != "dev-a" || c.Site != "site-a" {
		t.Fatalf("credential %+v; want dev-a on site-a", c)
	}
	if len(pw) != 32 {
		t.Fatalf("password of %d characters; want 32 (192 bits)", len(pw))
	}
	if strings.Contains(c.Hash, pw) {
		t.Fatal("the hash contains the password")
	}
	if !mqtt.VerifyPassword(c.Hash, pw) {
		t.Fatal("VerifyPassword refused the issued password")
	}
	pw2, c2, err := mqtt.NewCredential("dev-a", "site-a")
	if err != nil {
		t.Fatal(err)
	}
	if pw2 == pw || c2.Hash == c.Hash {
		t.Fatal("two claims got the same password or hash")
	}
	for _, tc := range []struct{ device, site string }{
		{mqtt.ControllerUsername, "site-a"}, // reserved
		{"Dev A", "site-a"},
		{"dev-a", ""},
		{"dev-a", "site/a"},
		{"dev:a", "site-a"}, // would break the password file
	} {
		if _, _, err := mqtt.NewCredential(tc.device, tc.site); err == nil {
			t.Errorf("NewCredential(%q, %q): no error", tc.device, tc.site)
		}
	}
}

var hashRE = regexp.MustCompile(`^\$7\$101\$[A-Za-z0-9+/]{16}\$[A-Za-z0-9+/]{86}==$`)

func TestHashPasswordFormat(t *testing.T) {
	h, err := mqtt.HashPassword("secret")
	if err != nil {
		t.Fatal(err)
	}
	// Mosquitto 2.0: $7$<iterations>$<base64 of a 12-byte salt>$<base64 of a 64-byte key>.
	if !hashRE.MatchString(h) {
		t.Fatalf("hash %q is not in Mosquitto's $7$ format", h)
	}
	if err := mqtt.CheckHash(h); err != nil {
		t.Fatal(err)
	}
}

func TestVerifyPasswordRefuses(t *testing.T) {
	h, err := mqtt.HashPassword("secret")
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(h, "$") // "", "7", "101", salt, key
	for _, tc := range []struct{ name, hash, password string }{
		{"wrong password", h, "Secret"},
		{"empty password", h, ""},
		{"password as hash", "secret", "secret"},
		{"empty hash", "", ""},
		{"other scheme", "$6$" + parts[3] + "$" + parts[4], "secret"},
		{"zero iterations", "$7$0$" + parts[3] + "$" + parts[4], "secret"},
		{"huge iterations", "$7$999999999$" + parts[3] + "$" + parts[4], "secret"},
		{"short salt", "$7$101$" + parts[3][:8] + "$" + parts[4], "secret"},
		{"short key", "$7$101$" + parts[3] + "$" + parts[4][:40], "secret"},
		{"bad base64", "$7$101$" + parts[3] + "$!" + parts[4][1:], "secret"},
		{"extra field", h + "$x", "secret"},
	} {
		if mqtt.VerifyPassword(tc.hash, tc.password) {
			t.Errorf("%s: VerifyPassword accepted", tc.name)
		}
	}
}

func TestMemStoreUnknown(t *testing.T) {
	s := &memStore{creds: map[string]mqtt.Credential{}}
	c, err := s.MQTTCredential(context.Background(), "nobody")
	if c != nil || err != nil {
		t.Fatalf("got %v, %v; want nil, nil", c, err)
	}
}

// BenchmarkVerifyPassword is the CPU cost of one agent CONNECT.
func BenchmarkVerifyPassword(b *testing.B) {
	pw, c, err := mqtt.NewCredential("dev-a", "site-a")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if !mqtt.VerifyPassword(c.Hash, pw) {
			b.Fatal("refused")
		}
	}
}

// memFirst is a CredentialStore that keeps some credentials in memory (CredentialMemory) and
// whose lookups fail: the broker must ask the memory first and fall back to a lookup on a miss.
type memFirst struct {
	memory  map[string]mqtt.Credential
	lookups atomic.Int64
}

func (s *memFirst) CachedMQTTCredential(username string) (*mqtt.Credential, bool) {
	c, ok := s.memory[username]
	return &c, ok
}

func (s *memFirst) MQTTCredential(context.Context, string) (*mqtt.Credential, error) {
	s.lookups.Add(1)
	return nil, errors.New("store unavailable")
}

// TestBrokerAsksCredentialMemoryFirst: an agent whose credential the store holds in memory
// connects without a lookup (and still needs its password); one it does not is looked up.
func TestBrokerAsksCredentialMemoryFirst(t *testing.T) {
	a, ca := claim(t, "dev-a", "site-a")
	b, _ := claim(t, "dev-b", "site-b")
	s := &memFirst{memory: map[string]mqtt.Credential{ca.Username: ca}}
	e := startEmbedded(t, func(o *mqtt.Options) { o.Credentials = s })
	e.dial(t, a)
	if n := s.lookups.Load(); n != 0 {
		t.Errorf("%d lookups for an agent held in memory; want 0", n)
	}
	if _, err := dialAgent(t, e.url, e.tc, a.device, "wrong-password"); err == nil {
		t.Error("an agent held in memory connected with a wrong password")
	}
	if n := s.lookups.Load(); n != 0 {
		t.Errorf("%d lookups for an agent held in memory with a wrong password; want 0", n)
	}
	if _, err := dialAgent(t, e.url, e.tc, b.device, b.password); err == nil {
		t.Error("an agent not in memory connected although its lookup failed")
	}
	if n := s.lookups.Load(); n == 0 { // paho tries MQTT 3.1.1, then 3.1: one or two
		t.Error("no lookup for an agent not in memory")
	}
}
