package clock

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestFromEnv(t *testing.T) {
	file := filepath.Join(t.TempDir(), "offset")
	if err := os.WriteFile(file, []byte("1h\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, file, enable string
		want               time.Duration
		err                bool
	}{
		{name: "production"},
		{name: "file without the enabling variable", file: file, err: true},
		{name: "enabled wrongly", file: file, enable: "1", err: true},
		{name: "enabled without a file", enable: EnableKey, err: true},
		{name: "test clock", file: file, enable: EnableKey, want: time.Hour},
		{name: "missing file", file: file + ".none", enable: EnableKey, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(EnvFile, tc.file)
			t.Setenv(EnvEnable, tc.enable)
			c, err := FromEnv()
			if (err != nil) != tc.err {
				t.Fatalf("err = %v; want error %v", err, tc.err)
			}
			if err == nil && c.Offset() != tc.want {
				t.Errorf("offset %v; want %v", c.Offset(), tc.want)
			}
		})
	}
}

// TestStep: a changed file moves Now within a poll; a bad file keeps the last offset.
func TestStep(t *testing.T) {
	file := filepath.Join(t.TempDir(), "offset")
	os.WriteFile(file, nil, 0o600)
	t.Setenv(EnvFile, file)
	t.Setenv(EnvEnable, EnableKey)
	c, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if d := c.Now().Sub(time.Now()); d > time.Second || d < -time.Second {
		t.Fatalf("empty offset: Now is %v off", d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	defer func() { cancel(); <-done }()
	waitOffset := func(want time.Duration) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for c.Offset() != want {
			if time.Now().After(deadline) {
				t.Fatalf("offset %v; want %v", c.Offset(), want)
			}
			time.Sleep(10 * time.Millisecond) // the clock polls its file
		}
	}
	for _, step := range []struct {
		text string
		want time.Duration
	}{{"-1h", -time.Hour}, {"not a duration", -time.Hour}, {"90m", 90 * time.Minute}, {"", 0}} {
		os.WriteFile(file, []byte(step.text), 0o600)
		waitOffset(step.want)
		if step.want != 0 {
			wall := c.Now().Round(0).Sub(time.Now().Round(0)) // wall clocks, not monotonic
			if d := wall - step.want; d > time.Second || d < -time.Second {
				t.Errorf("%q: Now is %v ahead; want %v", step.text, wall, step.want)
			}
		}
	}
	if Real.Now().IsZero() || Real.Offset() != 0 {
		t.Error("the real clock")
	}
}
