package main

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestPreflightBeforeClaim starts `agent run` for a first boot in ways that must fail locally,
// against a controller address that counts connections: none may arrive, as any would carry
// the one-time claim token.
func TestPreflightBeforeClaim(t *testing.T) {
	ctl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()
	var conns atomic.Int64
	go func() {
		for {
			c, err := ctl.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			c.Close()
		}
	}()
	busy, err := net.Listen("tcp", "127.0.0.1:0") // the metrics port of "the first agent"
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	freeAddr := free.Addr().String()
	free.Close()

	locked := t.TempDir()
	unlock, err := lockDataDir(locked)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	readOnly := filepath.Join(t.TempDir(), "ro")
	if err := os.WriteFile(readOnly, nil, 0o600); err != nil { // a file where the data dir should be
		t.Fatal(err)
	}

	fp := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name, dataDir, metrics, ca, want string
	}{
		{"metrics port in use", t.TempDir(), busy.Addr().String(), "--ca-fingerprint=" + fp, "address already in use"},
		{"data dir locked", locked, freeAddr, "--ca-fingerprint=" + fp, "another agent is running"},
		{"data dir unusable", readOnly, freeAddr, "--ca-fingerprint=" + fp, "data dir"},
		{"no CA to check the controller", t.TempDir(), freeAddr, "--ca-file=" + filepath.Join(t.TempDir(), "missing.pem"), "missing.pem"},
		{"bad configuration", t.TempDir(), freeAddr, "--window=1ms", "window"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := run([]string{"--data-dir", tc.dataDir, "--metrics-listen", tc.metrics, "--controller", "https://" + ctl.Addr().String(),
				"--claim-token", "tok", tc.ca}, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("run: %v; want an error containing %q", err, tc.want)
			}
			if n := conns.Load(); n != 0 {
				t.Fatalf("%d connections reached the controller before the local failure", n)
			}
		})
	}
}
