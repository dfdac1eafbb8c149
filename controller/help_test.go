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
		os.Args = append([]string{"controller"}, strings.Fields(args)...)
		main()
		os.Exit(0)
	}
	for _, tc := range []struct{ args, want string }{
		{"-h", "usage: controller"},
		{"--help", "usage: controller"},
		{"help", "usage: controller"},
		{"serve -h", "-listen"},
		{"serve --help", "-data-dir"},
		{"keys -h", "usage: controller"},
		{"keys create -h", "-scopes"},
		{"keys list --help", "-data-dir"},
		{"keys revoke -h", "-data-dir"},
		{"nats-init -h", "-partitions"},
	} {
		t.Run(tc.args, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelpExitsZero$")
			cmd.Env = append(os.Environ(), "EDGEWAN_MAIN_ARGS="+tc.args)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			var ee *exec.ExitError
			if errors.As(err, &ee) || err != nil {
				t.Fatalf("controller %s: %v; want exit 0\nstderr: %s", tc.args, err, stderr.String())
			}
			if !strings.Contains(string(out), tc.want) {
				t.Errorf("controller %s: stdout lacks %q:\n%s", tc.args, tc.want, out)
			}
			if strings.Contains(stderr.String(), "help requested") || strings.Contains(stderr.String(), "controller:") {
				t.Errorf("controller %s: an error on stderr: %s", tc.args, stderr.String())
			}
		})
	}
}
