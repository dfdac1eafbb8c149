package netlab

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockFile takes an exclusive flock on path, creating it, and returns the
// function that releases it. The kernel releases it if the process dies.
func lockFile(path string) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("netlab lock: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("netlab lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("netlab lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}
