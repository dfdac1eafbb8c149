//go:build linux

package guard

import (
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// threadCPU returns the CPU time used by the calling OS thread (CLOCK_THREAD_CPUTIME_ID). Unlike
// wall-clock time it leaves out time spent waiting for a CPU on a busy machine.
func threadCPU(t testing.TB) time.Duration {
	const clockThreadCPUTime = 3 // CLOCK_THREAD_CPUTIME_ID
	var ts syscall.Timespec
	if _, _, errno := syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		t.Fatalf("clock_gettime: %v", errno)
	}
	return time.Duration(ts.Nano())
}
