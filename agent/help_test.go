package main

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestHelpExitsZero runs the real main (this test binary re-executed) with -h and --help on
// every command: usage on stdout, exit status 0, no error line.
func TestHelpExitsZero(t *testing.T) {
	if args := os.Getenv("EDGEWAN_MAIN_ARGS"); args != "" {
		os.Args = append([]string{"agent"}, strings.Fields(args)...)
		main()
		os.Exit(0)
	}
	for _, tc := range []struct{ args, want string }{
		{"-h", "usage:"},
		{"--help", "usage:"},
		{"run -h", "-controller"},
		{"run --help", "-config"},
		{"cleanup -h", "-config"},
		{"status --help", "-json"},
	} {
		t.Run(tc.args, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelpExitsZero$")
			cmd.Env = append(os.Environ(), "EDGEWAN_MAIN_ARGS="+tc.args)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			var ee *exec.ExitError
			if errors.As(err, &ee) || err != nil {
				t.Fatalf("agent %s: %v; want exit 0\nstderr: %s", tc.args, err, stderr.String())
			}
			if !strings.Contains(string(out), tc.want) {
				t.Errorf("agent %s: stdout lacks %q:\n%s", tc.args, tc.want, out)
			}
			if strings.Contains(stderr.String(), "help requested") || strings.Contains(stderr.String(), "agent:") {
				t.Errorf("agent %s: an error on stderr: %s", tc.args, stderr.String())
			}
		})
	}
}
