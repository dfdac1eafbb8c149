package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgewan/edgewan/controller/natsauth"
	"github.com/edgewan/edgewan/coreapi/auth"
)

func runCLI(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	err := run(context.Background(), args, &out, &errb)
	return out.String(), errb.String(), err
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

func TestKeysCommands(t *testing.T) {
	dir := t.TempDir()
	out, _, err := runCLI(t, "keys", "create", "--data-dir", dir, "--scopes", "soc:read,org:read", "--name", "noc")
	if err != nil {
		t.Fatal(err)
	}
	tok := lastLine(out)
	id, _, ok := auth.ParseToken(tok)
	if !ok {
		t.Fatalf("last line %q is not a token", tok)
	}
	// Flags after the positional argument work too.
	out, _, err = runCLI(t, "keys", "create", "--project", "billing", "--data-dir", dir)
	if err != nil || !strings.HasPrefix(lastLine(out), auth.TokenPrefix) || !strings.Contains(out, "project billing") {
		t.Fatalf("project key: %v\n%s", err, out)
	}
	out, _, err = runCLI(t, "keys", "list", "--data-dir", dir)
	if err != nil || !strings.Contains(out, id) || !strings.Contains(out, "org:read,soc:read") || !strings.Contains(out, "project:billing") {
		t.Fatalf("list: %v\n%s", err, out)
	}
	if strings.Contains(out, tok) || strings.Contains(out, strings.SplitN(tok, "_", 3)[2]) {
		t.Fatal("keys list printed a secret")
	}
	if _, _, err := runCLI(t, "keys", "revoke", id, "--data-dir", dir); err != nil {
		t.Fatal(err)
	}
	out, _, _ = runCLI(t, "keys", "list", "--data-dir", dir)
	if !strings.Contains(out, "revoked") {
		t.Fatalf("list after revoke lacks revoked:\n%s", out)
	}

	bad := []struct {
		name string
		args []string
		want string
	}{
		{"unknown scope", []string{"keys", "create", "--data-dir", dir, "--scopes", "root"}, `unknown scope "root"`},
		{"no scopes", []string{"keys", "create", "--data-dir", dir}, "needs scopes or a project"},
		{"both", []string{"keys", "create", "--data-dir", dir, "--scopes", "org:read", "--project", "p"}, "may carry only the scope aigw:admin"},
		{"bad project", []string{"keys", "create", "--data-dir", dir, "--project", "a b"}, "project"},
		{"revoke unknown", []string{"keys", "revoke", "key_nope", "--data-dir", dir}, "not found"},
		{"revoke nothing", []string{"keys", "revoke", "--data-dir", dir}, "exactly one"},
		{"unknown command", []string{"frobnicate"}, "unknown command"},
		{"bad database url", []string{"keys", "list", "--database-url", "mysql://x"}, "postgres://"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := runCLI(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v; want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestKeysCreateReadsEnvironment(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("EDGEWAN_DATA_DIR", dir)
	if _, _, err := runCLI(t, "keys", "create", "--scopes", "org:read"); err != nil {
		t.Fatal(err)
	}
	out, _, _ := runCLI(t, "keys", "list", "--data-dir", dir)
	if !strings.Contains(out, "org:read") {
		t.Fatalf("key not created in EDGEWAN_DATA_DIR:\n%s", out)
	}
}

func TestVersion(t *testing.T) {
	out, _, err := runCLI(t, "version")
	if err != nil || !strings.HasPrefix(out, "edgewan controller ") {
		t.Fatalf("version: %q, %v", out, err)
	}
}

// TestNATSInit: nats-init writes a setup the controller can load (--nats-keys), refuses to
// overwrite one, and refuses a partition count the cluster flags would refuse.
func TestNATSInit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nats")
	out, _, err := runCLI(t, "nats-init", "--partitions", "32", dir)
	if err != nil {
		t.Fatalf("nats-init: %v", err)
	}
	if !strings.Contains(out, "controller-keys.json") || !strings.Contains(out, "offline") {
		t.Errorf("nats-init output does not say what the files are for:\n%s", out)
	}
	k, err := natsauth.ReadKeys(filepath.Join(dir, "controller-keys.json"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := natsauth.NewIssuer(k); err != nil || k.Partitions != 32 {
		t.Errorf("the written keys: partitions %d, %v", k.Partitions, err)
	}
	if _, _, err := runCLI(t, "nats-init", dir); err == nil {
		t.Errorf("nats-init over an existing setup: got nil; want a refusal")
	}
	if _, _, err := runCLI(t, "nats-init", "--partitions", "0", filepath.Join(t.TempDir(), "x")); err == nil || !strings.Contains(err.Error(), "--partitions") {
		t.Errorf("nats-init --partitions 0: %v; want a refusal naming --partitions", err)
	}
	if _, _, err := runCLI(t, "nats-init"); err == nil {
		t.Errorf("nats-init without a directory: got nil; want an error")
	}
}
