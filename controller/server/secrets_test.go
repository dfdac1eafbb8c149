package server_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/edgewan/edgewan/controller/config"
	"github.com/edgewan/edgewan/controller/server/servertest"
	"github.com/edgewan/edgewan/controller/store"
	"github.com/edgewan/edgewan/controller/tlsgen"
	"github.com/edgewan/edgewan/coreapi/event"
	"github.com/edgewan/edgewan/coreapi/webhook"
)

// TestSecretsAtRest: under a umask of 022 and of 0, everything in the data dir but the public
// certificates is 0600 (directories 0700); a webhook secret stored in plain text by an older
// controller is sealed at start and deliveries stay signed with it; no database file holds it in
// plain text; and after the sealing key is rotated (secrets.key moved to secrets.key.previous)
// the secrets are resealed and deliveries still verify.
func TestSecretsAtRest(t *testing.T) {
	for _, umask := range []int{0o022, 0} {
		t.Run(fmt.Sprintf("umask %03o", umask), func(t *testing.T) { testSecretsAtRest(t, umask) })
	}
}

func testSecretsAtRest(t *testing.T, umask int) {
	old := syscall.Umask(umask)
	defer syscall.Umask(old)
	dir := t.TempDir()
	rec := newReceiver(t)
	const plain = "whsec_plain_secret_from_an_older_controller_0123456789"
	rec.secret = plain

	// An older controller's database: the secret in plain text.
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	if err := st.CreateWebhook(ctx, &webhook.Webhook{ID: "wh_old", URL: rec.URL, Events: []string{event.CaseOpened}, Secret: plain,
		CreatedBy: "key_x", CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	deliveries := 0
	run := func(t *testing.T) {
		s := servertest.Start(t, servertest.Options{Config: func(c *config.Config) { c.DataDir = dir }})
		wantStatus(t, s.Do("POST", "/v1/soc/cases", s.Key("soc:write"), map[string]any{"title": "t"}), 201)
		deliveries++
		waitFor(t, func() bool { return len(rec.find(event.CaseOpened, nil)) == deliveries })
		rec.mu.Lock()
		bad := rec.bad
		rec.mu.Unlock()
		if bad != 0 {
			t.Fatalf("%d deliveries failed the signature check", bad)
		}
		public := map[string]bool{tlsgen.Paths(dir).CACert: true, tlsgen.Paths(dir).Cert: true}
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			want := fs.FileMode(0o600)
			switch {
			case d.IsDir():
				want = 0o700
			case public[p]:
				want = 0o644
			}
			if fi.Mode().Perm() != want {
				t.Errorf("%s: mode %v; want %v", p, fi.Mode().Perm(), want)
			}
			if !d.IsDir() && strings.HasPrefix(d.Name(), "edgewan.db") {
				b, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				if bytes.Contains(b, []byte(plain)) {
					t.Errorf("%s holds the webhook secret in plain text", p)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Run("sealed at start", run)
	key1, err := os.ReadFile(filepath.Join(dir, "secrets.key"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "secrets.key"), filepath.Join(dir, "secrets.key.previous")); err != nil {
		t.Fatal(err)
	}
	t.Run("resealed after rotation", run)
	key2, err := os.ReadFile(filepath.Join(dir, "secrets.key"))
	if err != nil || bytes.Equal(key1, key2) {
		t.Fatalf("no new secrets key after rotation (err %v)", err)
	}
	// The old key is no longer needed: the controller starts without it.
	if err := os.Remove(filepath.Join(dir, "secrets.key.previous")); err != nil {
		t.Fatal(err)
	}
	t.Run("without the previous key", run)
}
