package tlsgen

import (
	"crypto/x509"
	"os"
	"testing"
)

func TestEnsureIsIdempotentAndValid(t *testing.T) {
	dir := t.TempDir()
	f, created, err := Ensure(dir, []string{"ctl.example", "198.18.0.10"})
	if err != nil || !created {
		t.Fatalf("first Ensure: created=%v err=%v; want created", created, err)
	}
	ca, err := readCert(f.CACert)
	if err != nil {
		t.Fatal(err)
	}
	srv, _, err := loadPair(f.Cert, f.Key)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	for _, h := range []string{"localhost", "127.0.0.1", "::1", "ctl.example", "198.18.0.10"} {
		if _, err := srv.Verify(x509.VerifyOptions{DNSName: h, Roots: pool}); err != nil {
			t.Errorf("certificate does not verify for %s: %v", h, err)
		}
	}
	st, _ := os.Stat(f.Key)
	if st.Mode().Perm() != 0o600 {
		t.Errorf("key mode %o; want 600", st.Mode().Perm())
	}
	before, _ := os.ReadFile(f.Cert)
	if _, created, err := Ensure(dir, []string{"ctl.example", "198.18.0.10"}); err != nil || created {
		t.Fatalf("second Ensure: created=%v err=%v; want nothing written", created, err)
	}
	after, _ := os.ReadFile(f.Cert)
	if string(before) != string(after) {
		t.Error("second Ensure rewrote the certificate")
	}
	// A new host re-issues the server certificate under the same CA.
	if _, created, err := Ensure(dir, []string{"other.example"}); err != nil || !created {
		t.Fatalf("Ensure with a new host: created=%v err=%v; want re-issued", created, err)
	}
	srv2, _, _ := loadPair(f.Cert, f.Key)
	if _, err := srv2.Verify(x509.VerifyOptions{DNSName: "other.example", Roots: pool}); err != nil {
		t.Errorf("re-issued certificate: %v", err)
	}
	if fp, err := Fingerprint(f.CACert); err != nil || len(fp) != 64 {
		t.Errorf("Fingerprint: %q, %v", fp, err)
	}
}
