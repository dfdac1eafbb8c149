// Package testserver is what the test-server harnesses (storetest, influxtest, mqtttest,
// natstest) share: running a scripts/ server script with a time limit, marking a server's
// directory with its owner so that a later run can stop what a killed test binary left behind,
// and stopping a binary's servers when it ends or is interrupted.
package testserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Run runs a server script (bash script args...) with extra environment variables env and
// returns the last line of its standard output: the scripts print the server's URL last.
func Run(env []string, script string, timeout time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", append([]string{script}, args...)...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second // never hang on a pipe a daemon kept open
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s: %w\n%s", script, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	out := strings.TrimSpace(stdout.String())
	if i := strings.LastIndexByte(out, '\n'); i >= 0 {
		out = strings.TrimSpace(out[i+1:])
	}
	return out, nil
}

// ownerFile, in a server's directory, holds the PID of the test binary that started it.
const ownerFile = "owner.pid"

// OwnedDir creates a fresh directory under the temporary directory, named prefix plus a random
// suffix, and marks it as this process's, for ReapStale.
func OwnedDir(prefix string) (string, error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// ReapStale stops and removes the servers that test binaries which died without cleaning up
// (killed, or timed out) left in directories made by OwnedDir(prefix). stop stops the server of
// one directory; a directory whose stop fails is kept, so the next run tries again. Directories
// of live processes are never touched: several test binaries run at once.
func ReapStale(prefix string, stop func(dir string) error) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), prefix+"*"))
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 || pid == os.Getpid() || alive(pid) {
			continue
		}
		if stop(dir) == nil {
			os.RemoveAll(dir)
		}
	}
}

func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// Wrap runs run (a TestMain's m.Run) and then shutdown, and also runs shutdown when the binary
// is interrupted (SIGINT, SIGTERM) before it takes the signal's default action, so that a
// server the binary started does not outlive it. It returns run's exit code.
func Wrap(run func() int, shutdown func()) int {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig, ok := <-sigs
		if !ok {
			return
		}
		// Stop our server, then die of the signal, unless someone else in the process (say, the
		// fuzzing engine) also asked for it.
		shutdown()
		signal.Stop(sigs)
		if s, ok := sig.(syscall.Signal); ok {
			_ = syscall.Kill(os.Getpid(), s)
		}
	}()
	code := run()
	signal.Stop(sigs)
	shutdown()
	return code
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago. Another process may take
// it before the server binds it: callers retry on "address in use".
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
