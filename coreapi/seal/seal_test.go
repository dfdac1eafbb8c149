package seal_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/edgewan/edgewan/coreapi/seal"
)

func TestSealOpen(t *testing.T) {
	k, err := seal.Load(filepath.Join(t.TempDir(), "k", "secrets.key"))
	if err != nil {
		t.Fatal(err)
	}
	v := k.Seal("wh_1", []byte("whsec_x"))
	if !seal.IsSealed(v) || v == k.Seal("wh_1", []byte("whsec_x")) {
		t.Fatalf("sealed %q: want the v1 form, a fresh nonce each time", v)
	}
	if got, err := k.Open("wh_1", v); err != nil || string(got) != "whsec_x" {
		t.Fatalf("Open = %q, %v", got, err)
	}
	other, err := seal.Load(filepath.Join(t.TempDir(), "other.key"))
	if err != nil {
		t.Fatal(err)
	}
	for name, open := range map[string]func() ([]byte, error){
		"another owner": func() ([]byte, error) { return k.Open("wh_2", v) },
		"another key":   func() ([]byte, error) { return other.Open("wh_1", v) },
		"plain text":    func() ([]byte, error) { return k.Open("wh_1", "whsec_x") },
		"corrupt":       func() ([]byte, error) { return k.Open("wh_1", "v1:!!") },
		"truncated":     func() ([]byte, error) { return k.Open("wh_1", v[:len(v)-4]) },
	} {
		if _, err := open(); err == nil {
			t.Errorf("%s: opened", name)
		}
	}
}

// TestLoadModes: the key is created 0600 in a 0700 directory whatever the umask, an existing key
// readable by others is narrowed, the same key is read back, and a key of the wrong size refuses.
func TestLoadModes(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "secrets.key")
	k1, err := seal.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{path: 0o600, filepath.Dir(path): 0o700} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
			t.Fatalf("%s: %v %v; want %v", p, fi.Mode().Perm(), err, want)
		}
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	k2, err := seal.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("existing key left at %v", fi.Mode().Perm())
	}
	if got, err := k2.Open("x", k1.Seal("x", []byte("s"))); err != nil || string(got) != "s" {
		t.Fatalf("the key read back does not open what the first sealed: %v", err)
	}
	short := filepath.Join(dir, "short.key")
	if err := os.WriteFile(short, []byte("too short"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := seal.Load(short); err == nil {
		t.Fatal("a 9-byte key was accepted")
	}
}
