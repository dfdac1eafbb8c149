//go:build !linux

package guard

import (
	"testing"
	"time"
)

var wallStart = time.Now()

// threadCPU falls back to wall-clock time where the thread CPU clock is not wired up.
func threadCPU(testing.TB) time.Duration { return time.Since(wallStart) }
