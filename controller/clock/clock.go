// Package clock is the controller's wall clock, injected where wall time decides behaviour,
// so that the abuse suite can step the real binary's clock without touching the machine's.
package clock

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"time"
)

// Test-only environment: EDGEWAN_TEST_CLOCK_FILE names a file holding an offset (a Go
// duration such as "1h" or "-1h"; empty means 0) added to the machine's clock. It is honoured
// only when EDGEWAN_TEST_CLOCK=i-am-a-test is set too, and then logged loudly: a production
// controller never reads it.
const (
	EnvFile   = "EDGEWAN_TEST_CLOCK_FILE"
	EnvEnable = "EDGEWAN_TEST_CLOCK"
	EnableKey = "i-am-a-test"
	// pollEvery: how often the offset file is read again.
	pollEvery = 100 * time.Millisecond
)

// Clock gives the controller's wall time. The zero value is the machine's clock.
type Clock struct {
	offset atomic.Int64 // nanoseconds added to time.Now
	file   string
}

// Real is the machine's clock.
var Real = &Clock{}

// Now returns the wall time. Unlike a real step of the machine's clock, an offset change also
// moves the durations measured between two readings of Now (Go's Add moves the monotonic
// reading too): measure durations (rate limits, windows, timeouts) with time.Now/time.Since,
// never between readings of this clock.
func (c *Clock) Now() time.Time {
	if c == nil {
		return time.Now()
	}
	return time.Now().Add(time.Duration(c.offset.Load()))
}

// Offset is the current offset from the machine's clock (0 in production).
func (c *Clock) Offset() time.Duration { return time.Duration(c.offset.Load()) }

// FromEnv returns the test clock when both variables are set (an error if the file cannot be
// read or parsed), the real clock otherwise. A file named without the enabling variable is
// refused, so a stray variable cannot move a production clock silently.
func FromEnv() (*Clock, error) {
	file, enable := os.Getenv(EnvFile), os.Getenv(EnvEnable)
	switch {
	case file == "" && enable == "":
		return Real, nil
	case file == "" || enable != EnableKey:
		return nil, fmt.Errorf("clock: %s and %s=%s go together (test only)", EnvFile, EnvEnable, EnableKey)
	}
	c := &Clock{file: file}
	if err := c.read(); err != nil {
		return nil, err
	}
	slog.Warn("clock: TEST CLOCK in use: wall time is the machine's plus the offset in "+file, "offset", c.Offset())
	return c, nil
}

// Run re-reads the offset file until ctx ends (nothing for the real clock).
func (c *Clock) Run(ctx context.Context) {
	if c == nil || c.file == "" {
		return
	}
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		old := c.Offset()
		if err := c.read(); err != nil {
			slog.Warn("clock: reading the test clock's offset; keeping the last", "err", err)
		} else if c.Offset() != old {
			slog.Warn("clock: test clock stepped", "offset", c.Offset(), "was", old)
		}
	}
}

func (c *Clock) read() error {
	b, err := os.ReadFile(c.file)
	if err != nil {
		return fmt.Errorf("clock: %w", err)
	}
	s := strings.TrimSpace(string(b))
	var d time.Duration
	if s != "" {
		if d, err = time.ParseDuration(s); err != nil {
			return fmt.Errorf("clock: offset in %s: %w", c.file, err)
		}
	}
	c.offset.Store(int64(d))
	return nil
}
