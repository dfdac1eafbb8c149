package store_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgewan/edgewan/controller/store"
	"github.com/edgewan/edgewan/controller/store/storetest"
	"github.com/edgewan/edgewan/coreapi/quarantine"
	"github.com/edgewan/edgewan/coreapi/seal"
	"github.com/edgewan/edgewan/coreapi/webhook"
)

// TestWebhookSecretsSealed, on both backends: a secret stored in plain text is sealed when the
// store opens with a key, reads back as given, is resealed from the previous key after a
// rotation, and a store with the wrong key and no previous one refuses to open.
func TestWebhookSecretsSealed(t *testing.T) {
	for _, pg := range []bool{false, true} {
		name := map[bool]string{false: "sqlite", true: "postgres"}[pg]
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			o := store.Options{DataDir: t.TempDir()}
			driver, dsn := "sqlite", "file:"+filepath.Join(o.DataDir, "edgewan.db")
			if pg {
				o.DatabaseURL = storetest.PostgresURL(t)
				driver, dsn = "pgx", o.DatabaseURL
			}
			raw := func() string {
				db, err := sql.Open(driver, dsn)
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				var v string
				if err := db.QueryRowContext(ctx, "SELECT secret FROM webhooks WHERE id = 'wh_1'").Scan(&v); err != nil {
					t.Fatal(err)
				}
				return v
			}
			open := func(cur, prev *seal.Key) (*store.Store, error) {
				o.Secrets, o.PreviousSecrets = cur, prev
				return store.Open(ctx, o)
			}
			key := func(n string) *seal.Key {
				k, err := seal.Load(filepath.Join(t.TempDir(), n))
				if err != nil {
					t.Fatal(err)
				}
				return k
			}
			const secret = "whsec_plain"
			s, err := open(nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			now := time.Now().UTC()
			if err := s.CreateWebhook(ctx, &webhook.Webhook{ID: "wh_1", URL: "https://x.example/h", Events: []string{"case.opened"}, Secret: secret, CreatedBy: "k", CreatedAt: now, UpdatedAt: now}); err != nil {
				t.Fatal(err)
			}
			s.Close()

			k1, k2 := key("k1"), key("k2")
			for _, step := range []struct {
				name      string
				cur, prev *seal.Key
			}{{"sealed", k1, nil}, {"rotated", k2, k1}, {"again", k2, nil}} {
				s, err := open(step.cur, step.prev)
				if err != nil {
					t.Fatalf("%s: %v", step.name, err)
				}
				w, err := s.GetWebhook(ctx, "wh_1")
				s.Close()
				if err != nil || w.Secret != secret {
					t.Fatalf("%s: secret %q, %v; want %q", step.name, w.Secret, err, secret)
				}
				if v := raw(); strings.Contains(v, secret) || !seal.IsSealed(v) {
					t.Fatalf("%s: stored %q; want it sealed", step.name, v)
				}
				if _, err := step.cur.Open("wh_1", raw()); err != nil {
					t.Fatalf("%s: the stored value does not open with the current key: %v", step.name, err)
				}
			}
			// A key that opens nothing (or a damaged stored secret) does not stop the start:
			// the webhook is quarantined, and its secret is neither returned nor replaced.
			before := raw()
			s, err = open(k1, nil)
			if err != nil {
				t.Fatalf("open with a key that opens nothing: %v; want the start to go on", err)
			}
			defer s.Close()
			w, err := s.GetWebhook(ctx, "wh_1")
			if err != nil || w.Secret != "" || w.Quarantine == nil || w.Quarantine.Kind != quarantine.Secret {
				t.Fatalf("webhook whose secret does not open: %+v, %v; want it quarantined (secret), no secret", w, err)
			}
			if q, err := s.QuarantinedWebhooks(ctx); err != nil || len(q) != 1 || q[0].ID != "wh_1" {
				t.Errorf("QuarantinedWebhooks: %v, %v; want wh_1", q, err)
			}
			if raw() != before {
				t.Error("the stored secret changed though it opened with no key")
			}
		})
	}
}
