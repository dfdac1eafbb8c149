// Package demotest runs scripts/demo.sh as a first-time user would, and checks how it starts
// and stops.
package demotest

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// freePort returns a loopback address nothing listens on (at the time of asking).
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// syncBuffer is the demo's output, written by one goroutine and read by the test.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) add(line string) { s.mu.Lock(); s.b.WriteString(line + "\n"); s.mu.Unlock() }

func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// run is a started demo.sh.
type run struct {
	cmd   *exec.Cmd
	done  chan struct{} // closed once it exited
	code  int
	lines chan string
	out   *syncBuffer
}

// demo starts scripts/demo.sh in its own process group (as a terminal runs a foreground job),
// with the API on listen; output collects its stdout and stderr, lines arrive on lines.
func demo(t *testing.T, listen string) *run {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", filepath.Join(root, "scripts", "demo.sh"))
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "DATA_DIR="+t.TempDir(), "LISTEN="+listen, "MQTT_LISTEN="+freePort(t), "READY_TIMEOUT=60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }) // whatever is left of the group
	r := &run{cmd: cmd, done: make(chan struct{}), lines: make(chan string, 1000), out: &syncBuffer{}}
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		defer close(r.lines)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			r.out.add(sc.Text())
			select {
			case r.lines <- sc.Text():
			default:
			}
		}
	}()
	go func() {
		_ = cmd.Wait()
		r.code = cmd.ProcessState.ExitCode()
		pw.Close()
		// The scanner may still hold the last lines it read: done means the output is complete
		// (a CI run once saw exit 1 before the "already in use" line reached out).
		<-scanned
		close(r.done)
	}()
	return r
}

// exitCode waits (up to d) for the demo to exit and returns its exit status.
func (r *run) exitCode(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-r.done:
		return r.code
	case <-time.After(d):
		t.Fatalf("demo.sh still running after %s\n%s", d, r.out)
		return 0
	}
}

// TestDemoPortHeld: a program that accepts connections on the API port and never answers makes
// the demo stop at once with a clear message and status 1, instead of waiting for ever.
func TestDemoPortHeld(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // accept, read nothing, answer nothing
		var held []net.Conn
		for {
			c, err := ln.Accept()
			if err != nil {
				for _, c := range held {
					c.Close()
				}
				return
			}
			held = append(held, c)
		}
	}()
	r := demo(t, ln.Addr().String())
	// The build comes first: allow for it on a loaded machine.
	if code := r.exitCode(t, 5*time.Minute); code != 1 {
		t.Fatalf("exit status %d; want 1\n%s", code, r.out)
	}
	if !strings.Contains(r.out.String(), ln.Addr().String()+" is already in use") {
		t.Fatalf("no clear message about the port:\n%s", r.out)
	}
}

// TestDemoCtrlC: Ctrl-C (SIGINT to the whole foreground group) once the demo runs stops the
// controller cleanly and the demo exits 0.
func TestDemoCtrlC(t *testing.T) {
	r := demo(t, freePort(t))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for ready := false; !ready; {
		select {
		case l, ok := <-r.lines:
			if !ok {
				t.Fatalf("demo.sh ended before it was ready:\n%s", r.out)
			}
			ready = strings.HasPrefix(l, "Press Ctrl-C")
		case <-ctx.Done():
			t.Fatalf("demo.sh not ready within 5 minutes:\n%s", r.out)
		}
	}
	if err := syscall.Kill(-r.cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := r.exitCode(t, time.Minute); code != 0 && code != 130 {
		t.Fatalf("exit status %d after Ctrl-C; want 0\n%s", code, r.out)
	}
	// Nothing of the group is left running.
	if err := syscall.Kill(-r.cmd.Process.Pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("processes of the demo still running after it exited (kill 0: %v)", err)
	}
}
