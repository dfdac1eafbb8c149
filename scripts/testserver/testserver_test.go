package testserver

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

func TestRunReturnsLastLine(t *testing.T) {
	script := filepath.Join(t.TempDir(), "s.sh")
	if err := os.WriteFile(script, []byte("echo starting\necho \"  $1://$X  \"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := Run([]string{"X=host:1"}, script, 10*time.Second, "tcp")
	if err != nil || got != "tcp://host:1" {
		t.Fatalf("Run = %q, %v; want tcp://host:1", got, err)
	}
	fail := filepath.Join(t.TempDir(), "f.sh")
	if err := os.WriteFile(fail, []byte("echo oops >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(nil, fail, 10*time.Second); err == nil {
		t.Fatal("a failing script gave no error")
	}
}

// ReapStale stops the servers of dead owners only, and keeps a directory whose stop failed.
func TestReapStale(t *testing.T) {
	prefix := "edgewan-testserver-" + strconv.Itoa(os.Getpid()) + "-"
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	mk := func(pid int) string {
		dir, err := OwnedDir(prefix)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		if pid != 0 {
			if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(pid)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	mine := mk(0)
	orphan := mk(dead.Process.Pid)
	stuck := mk(dead.Process.Pid)
	stopped := map[string]bool{}
	ReapStale(prefix, func(dir string) error {
		stopped[dir] = true
		if dir == stuck {
			return os.ErrDeadlineExceeded
		}
		return nil
	})
	if stopped[mine] || !stopped[orphan] || !stopped[stuck] {
		t.Fatalf("stopped %v; want the two dead owners' dirs only", stopped)
	}
	for dir, want := range map[string]bool{mine: true, orphan: false, stuck: true} {
		if _, err := os.Stat(dir); (err == nil) != want {
			t.Errorf("%s exists = %v, want %v", dir, err == nil, want)
		}
	}
}

func TestWrapRunsShutdown(t *testing.T) {
	var order []string
	code := Wrap(func() int { order = append(order, "run"); return 7 }, func() { order = append(order, "shutdown") })
	if code != 7 || len(order) != 2 || order[0] != "run" || order[1] != "shutdown" {
		t.Fatalf("Wrap = %d, %v", code, order)
	}
}
