package natsauth_test

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"

	"github.com/edgewan/edgewan/controller/cluster"
	"github.com/edgewan/edgewan/controller/natsauth"
	"github.com/edgewan/edgewan/telemetry"
)

func TestSetupWriteRead(t *testing.T) {
	s, err := natsauth.Generate(8)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "nats")
	if err := s.Write(dir, "/etc/nats/operator.jwt"); err != nil {
		t.Fatal(err)
	}
	for name, mode := range map[string]os.FileMode{"operator.jwt": 0o644, "auth.conf": 0o644, "controller-keys.json": 0o600, "operator.nk": 0o600} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&^mode != 0 {
			t.Errorf("%s: mode %v; want at most %v", name, fi.Mode().Perm(), mode)
		}
	}
	if err := s.Write(dir, ""); err == nil {
		t.Errorf("Write over an existing setup: got nil; want a refusal (it would replace the keys)")
	}
	conf, _ := os.ReadFile(filepath.Join(dir, "auth.conf"))
	for _, want := range []string{`operator: "/etc/nats/operator.jwt"`, "system_account: " + s.Keys.SystemAccount, s.Keys.Account + ": "} {
		if !strings.Contains(string(conf), want) {
			t.Errorf("auth.conf lacks %q:\n%s", want, conf)
		}
	}
	if strings.Contains(string(conf), s.Keys.AccountSigningKey) || strings.Contains(string(conf), string(s.OperatorSeed)) {
		t.Errorf("auth.conf holds a seed")
	}
	k, err := natsauth.ReadKeys(filepath.Join(dir, "controller-keys.json"))
	if err != nil {
		t.Fatal(err)
	}
	if k != s.Keys {
		t.Errorf("ReadKeys: %+v; want %+v", k, s.Keys)
	}
	if strings.Contains(string(mustRead(t, filepath.Join(dir, "controller-keys.json"))), string(s.OperatorSeed)) {
		t.Errorf("the controller's keys hold the operator's identity seed")
	}
	for name, content := range map[string]string{"not JSON": "operator: x", "unknown field": `{"operater": "O"}`} {
		p := filepath.Join(t.TempDir(), "keys.json")
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := natsauth.ReadKeys(p); err == nil {
			t.Errorf("ReadKeys of a file with %s: got nil; want an error", name)
		}
	}
	oc, err := jwt.DecodeOperatorClaims(s.OperatorJWT)
	if err != nil {
		t.Fatal(err)
	}
	if oc.SystemAccount != s.Keys.SystemAccount || oc.Subject != s.Keys.Operator {
		t.Errorf("operator JWT: %+v", oc)
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestNewIssuerRefusesBadKeys(t *testing.T) {
	s, err := natsauth.Generate(16)
	if err != nil {
		t.Fatal(err)
	}
	good := s.Keys
	tests := []struct {
		name   string
		mutate func(*natsauth.Keys)
	}{
		{"account seed as operator signing key", func(k *natsauth.Keys) { k.OperatorSigningKey = k.AccountSigningKey }},
		{"operator seed as account signing key", func(k *natsauth.Keys) { k.AccountSigningKey = k.OperatorSigningKey }},
		{"not a seed", func(k *natsauth.Keys) { k.SystemSigningKey = "SAnotaseed" }},
		{"account is an operator key", func(k *natsauth.Keys) { k.Account = k.Operator }},
		{"no partitions", func(k *natsauth.Keys) { k.Partitions = 0 }},
		{"operator missing", func(k *natsauth.Keys) { k.Operator = "" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k := good
			tc.mutate(&k)
			if _, err := natsauth.NewIssuer(k); err == nil {
				t.Errorf("NewIssuer: got nil; want an error")
			}
		})
	}
	if _, err := natsauth.NewIssuer(good); err != nil {
		t.Errorf("NewIssuer(good): %v", err)
	}
}

// TestDeviceClaims checks the permissions of a device's user exactly: the site's own subjects,
// the site's partition of the stream, the MQTT internal delivery subject, nothing else.
func TestDeviceClaims(t *testing.T) {
	s, iss := newIssuer(t, 16)
	tok, pub, err := iss.Device("dev-1", "site-7")
	if err != nil {
		t.Fatal(err)
	}
	uc, err := jwt.DecodeUserClaims(tok)
	if err != nil {
		t.Fatal(err)
	}
	if uc.Subject != pub || uc.IssuerAccount != s.Keys.Account || !uc.BearerToken || uc.Name != "dev-1" || uc.Expires != 0 {
		t.Errorf("claims: %+v", uc)
	}
	if !slices.Equal(uc.AllowedConnectionTypes, jwt.StringList{jwt.ConnectionTypeMqtt}) {
		t.Errorf("connection types %v; want MQTT only", uc.AllowedConnectionTypes)
	}
	p := cluster.Partition("site-7", 16)
	var wantPub, wantSub []string
	for _, k := range telemetry.UpKinds {
		wantPub = append(wantPub, "edgewan.v1.sites.site-7."+k, "edgewan.in."+strconv.Itoa(p)+".site-7."+k)
	}
	for _, k := range telemetry.DownKinds {
		wantSub = append(wantSub, "edgewan.v1.sites.site-7."+k)
	}
	wantSub = append(wantSub, "$MQTT.sub.>")
	if got := []string(uc.Pub.Allow); !sameSet(got, wantPub) || len(uc.Pub.Deny) != 0 {
		t.Errorf("publish allow %v; want %v", got, wantPub)
	}
	if got := []string(uc.Sub.Allow); !sameSet(got, wantSub) || len(uc.Sub.Deny) != 0 {
		t.Errorf("subscribe allow %v; want %v", got, wantSub)
	}
	tok2, pub2, err := iss.Device("dev-1", "site-7")
	if err != nil || pub2 == pub || tok2 == tok {
		t.Errorf("issuing again: same user key (%v); a revocation of the old one would cover it", err)
	}
	for _, bad := range [][2]string{{"", "site-7"}, {"dev-1", "a.b"}, {"dev-1", "*"}, {"dev 1", "site-7"}, {"dev-1", ">"}} {
		if _, _, err := iss.Device(bad[0], bad[1]); err == nil {
			t.Errorf("Device(%q, %q): got nil; want an error", bad[0], bad[1])
		}
	}
}

func TestAccountJWT(t *testing.T) {
	s, iss := newIssuer(t, 32)
	_, pub, err := iss.Device("dev-1", "site-1")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Unix(1_900_000_000, 0)
	tok, err := iss.AccountJWT(map[string]time.Time{pub: at})
	if err != nil {
		t.Fatal(err)
	}
	ac, err := jwt.DecodeAccountClaims(tok)
	if err != nil {
		t.Fatal(err)
	}
	if ac.Subject != s.Keys.Account || ac.Limits.DiskStorage != -1 || ac.Name != natsauth.AccountName {
		t.Errorf("account claims: %+v", ac)
	}
	if ac.Revocations[pub] != at.Unix() || len(ac.Revocations) != 1 {
		t.Errorf("revocations %v; want %s at %d", ac.Revocations, pub, at.Unix())
	}
	if len(ac.Mappings) != len(telemetry.UpKinds) {
		t.Errorf("mappings %v", ac.Mappings)
	}
	m := ac.Mappings["edgewan.v1.sites.*.telemetry"]
	if len(m) != 1 || m[0].Subject != "edgewan.in.{{partition(32,1)}}.{{wildcard(1)}}.telemetry" {
		t.Errorf("telemetry mapping %v", m)
	}
	if _, err := iss.AccountJWT(map[string]time.Time{s.Keys.Account: at}); err == nil {
		t.Errorf("revoking an account key: got nil; want an error")
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestControllerClaims: the controller's NATS user is unrestricted but needs its seed (not a
// bearer); its MQTT user, whose JWT travels as a password, may only publish downward kinds.
func TestControllerClaims(t *testing.T) {
	s, iss := newIssuer(t, 16)
	natsJWT, seed, mqttJWT, err := iss.Controller("c1")
	if err != nil {
		t.Fatal(err)
	}
	nc, err := jwt.DecodeUserClaims(natsJWT)
	if err != nil {
		t.Fatal(err)
	}
	if nc.BearerToken || len(seed) == 0 || len(nc.Pub.Allow)+len(nc.Pub.Deny)+len(nc.Sub.Allow)+len(nc.Sub.Deny) != 0 || nc.IssuerAccount != s.Keys.Account {
		t.Errorf("controller NATS user: bearer %v, permissions %+v", nc.BearerToken, nc.Permissions)
	}
	mc, err := jwt.DecodeUserClaims(mqttJWT)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, k := range telemetry.DownKinds {
		want = append(want, "edgewan.v1.sites.*."+k)
	}
	if !mc.BearerToken || !sameSet(mc.Pub.Allow, want) || !sameSet(mc.Sub.Deny, []string{">"}) ||
		!slices.Equal(mc.AllowedConnectionTypes, jwt.StringList{jwt.ConnectionTypeMqtt}) {
		t.Errorf("controller MQTT user: bearer %v, connection types %v, permissions %+v", mc.BearerToken, mc.AllowedConnectionTypes, mc.Permissions)
	}
}

// newIssuer makes a new setup of partitions and its issuer.
func newIssuer(tb testing.TB, partitions int) (*natsauth.Setup, *natsauth.Issuer) {
	tb.Helper()
	s, err := natsauth.Generate(partitions)
	if err != nil {
		tb.Fatal(err)
	}
	iss, err := natsauth.NewIssuer(s.Keys)
	if err != nil {
		tb.Fatal(err)
	}
	return s, iss
}
