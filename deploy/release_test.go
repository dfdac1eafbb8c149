package deploy

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReleaseBuild builds both binaries as `make release` does (the Makefile's own linker
// flags, CGO_ENABLED=0, -trimpath) and checks each is static and reports its version, commit
// and build date.
func TestReleaseBuild(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatalf("make is not installed: %v", err)
	}
	flags, err := exec.Command("make", "-s", "-C", "..", "ldflags", "VERSION=9.9.9-test", "COMMIT=0123abcd", "DATE=2026-01-02T03:04:05Z").Output()
	if err != nil {
		t.Fatalf("make ldflags: %v", err)
	}
	dir := t.TempDir()
	for _, tc := range []struct{ name, want string }{
		{"controller", "edgewan controller 9.9.9-test (commit 0123abcd, built 2026-01-02T03:04:05Z, go"},
		{"agent", "edgewan agent 9.9.9-test (commit 0123abcd, built 2026-01-02T03:04:05Z"},
	} {
		bin := filepath.Join(dir, tc.name)
		build := exec.Command("go", "build", "-trimpath", "-ldflags", strings.TrimSpace(string(flags)), "-o", bin, "./"+tc.name)
		build.Dir = ".."
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build ./%s: %v\n%s", tc.name, err, out)
		}
		out, err := exec.Command(bin, "version").Output()
		if err != nil {
			t.Fatalf("%s version: %v", tc.name, err)
		}
		if !strings.HasPrefix(string(out), tc.want) {
			t.Errorf("%s version: got %q; want it to start with %q", tc.name, out, tc.want)
		}
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
				t.Errorf("%s is dynamically linked (program header %v); want a static binary", tc.name, p.Type)
			}
		}
		f.Close()
	}
}
