//go:build linux

package detect

import (
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// threadCPU returns the CPU time used by the calling OS thread (CLOCK_THREAD_CPUTIME_ID, in
// nanoseconds). Unlike wall-clock time it does not count time spent waiting for a CPU, so the
// check below holds on a loaded machine.
func threadCPU(t testing.TB) time.Duration {
	const clockThreadCPUTime = 3 // CLOCK_THREAD_CPUTIME_ID
	var ts syscall.Timespec
	if _, _, errno := syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		t.Fatalf("clock_gettime: %v", errno)
	}
	return time.Duration(ts.Nano())
}

// TestLinearTime scans inputs built to make scanners slow, at 1x and 8x size, and checks the
// cost grows about 8x (a quadratic scanner would grow 64x). The bound is generous (24x) because
// CPU caches and the garbage collector add noise; each size takes the fastest of three runs.
func TestLinearTime(t *testing.T) {
	e := newEngine(t, Options{MinScore: 0.01})
	tests := []struct {
		name string
		unit string
	}{
		{"at signs", "a.b@"},
		{"email local parts", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa@"},
		{"schemes", "http://"},
		{"www", "www."},
		{"unbalanced parens", "https://x.com/" + strings.Repeat(")", 50) + " "},
		{"url path", "https://example.com/" + strings.Repeat("a/", 100)},
		{"dotted numbers", "1.1.1.1."},
		{"colons", "1:"},
		{"hex colons", "ab:cd:"},
		{"digit groups", "4111 "},
		{"dash groups", "123-45-"},
		{"one digit groups", "1 "},
		{"phones", "+1 (415) 555-2671 "},
		{"phone words", "tel 030 1234567 "},
		{"national phones near places", "Lagos sila 0803 412 7788 / 030 / 1234 "},
		{"non-ascii digits", "٠٥٠ ١٢٣ ٤٥٦٧ ０９０ "},
		{"phone runs in rows", "0722483119,254733590214|"},
		{"ibans", "DE89 "},
		{"pem begins", "-----BEGIN PRIVATE KEY-----"},
		{"jwt prefixes", "eyJhbGciOiJ.eyJzdWIiOi."},
		{"assignments", "password=abc1234 "},
		{"bearers", "Bearer "},
		{"long token", "a"},
		{"names", "John "},
		{"titles", "Dr. "},
		{"signatures", "Regards,\nJohn Smith\n"},
		{"house numbers", "12 Main "},
		{"street suffixes", "Hauptstraße "},
		{"months", "12 March "},
		// script.go: titles in a run without spaces, capitalised Cyrillic runs, Korean words
		{"chinese titles", "王先生"},
		{"han run", "的"},
		{"japanese titles", "田中さん"},
		{"cyrillic runs", "Иван Петрович "},
		{"cyrillic initials", "А. "},
		{"korean names", "김서연 님 "},
		{"arabic cues", "السيد "},
		{"thai titles", "คุณ"},
		{"dates", "1/"},
		{"context words", "ssn order card phone born "},
		{"invalid utf8", "\xff\xc3"},
		{"csv cells", "Ana Lima,1990-01-02,078 05 1121|"},
		{"csv rows", "name,dob\nAna Lima,1990-01-02\n"},
		{"chat speakers", "[09:15] Atieno: hi\n"},
		// scriptrun.go and addrworld.go: runs without spaces, open brackets, chains of parts
		{"chinese provinces", "上海市"},
		{"japanese prefectures", "東京都新宿区"},
		{"katakana brackets", "山田太郎（"},
		{"chinese list", "出席：周伟、"},
		{"japanese family names", "の山田が"},
		{"korean regions", "서울특별시 "},
		{"thai villages", "1 หมู่ "},
		{"district chains", "Col. Roma, "},
		{"unit chains", "Flat 1, "},
		{"lower-case names after cues", "my name is keoni quispe "},
		{"labels", "Owner: Anahera Virtanen "},
		{"po boxes", "PO Box 4674, "},
		{"unit first", "Flat 8, 262 "},
		{"no-type streets", "Damrak 80, 1012 "},
		// running-text evidence (namerunning.go): repeated mentions, coordination, particles
		{"repeated mentions", "Oluwatoyin Bamgbose met Bamgbose and "},
		{"coordinated names", "Kalani and Mateus Figueiredo and "},
		{"gaelic particles", "Ó Mac Nic "},
		{"appositions", "Odalys Quenum, the club's "},
	}
	const base = 16 << 10
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			small := strings.Repeat(tc.unit, base/len(tc.unit)+1)
			large := strings.Repeat(tc.unit, 8*(base/len(tc.unit)+1))
			ts, tl := scanCost(t, e, small), scanCost(t, e, large)
			ratio := float64(tl) / float64(max(ts, time.Microsecond))
			if ratio > 24 {
				t.Errorf("cost grew %.1fx (%v → %v) for 8x input; want about 8x", ratio, ts, tl)
			}
		})
	}
}

// scanCost returns the smallest thread CPU time of three scans of text.
func scanCost(t *testing.T, e *Engine, text string) time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	best := time.Duration(1<<63 - 1)
	for range 3 {
		t0 := threadCPU(t)
		e.Scan(text)
		best = min(best, threadCPU(t)-t0)
	}
	return best
}
