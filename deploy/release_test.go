package deploy

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReleaseBuild builds the controller as `make release` does (the Makefile's own linker
// flags, CGO_ENABLED=0, -trimpath) and checks the binary is static and reports its version,
// commit and build date.
func TestReleaseBuild(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatalf("make is not installed: %v", err)
	}
	flags, err := exec.Command("make", "-s", "-C", "..", "ldflags", "VERSION=9.9.9-test", "COMMIT=0123abcd", "DATE=2026-01-02T03:04:05Z").Output()
	if err != nil {
		t.Fatalf("make ldflags: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "controller")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", strings.TrimSpace(string(flags)), "-o", bin, "./controller")
	build.Dir = ".."
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("controller version: %v", err)
	}
	want := "edgewan controller 9.9.9-test (commit 0123abcd, built 2026-01-02T03:04:05Z, go"
	if !strings.HasPrefix(string(out), want) {
		t.Errorf("controller version: got %q; want it to start with %q", out, want)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("the controller is dynamically linked (program header %v); want a static binary", p.Type)
		}
	}
}
