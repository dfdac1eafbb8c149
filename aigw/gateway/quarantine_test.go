package gateway_test

import (
	"context"
	"database/sql"
	"net/http"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/edgewan/edgewan/aigw/gateway"
	"github.com/edgewan/edgewan/controller/store"
	"github.com/edgewan/edgewan/controller/store/storetest"
	"github.com/edgewan/edgewan/coreapi/apierr"
)

// TestQuarantinedPolicyFailsClosed: a project's active policy version whose stored content no
// longer decodes is quarantined, and the project's requests are refused (503 naming the
// quarantine), never served under the default policy in its place; another project is served.
// On SQLite and PostgreSQL, damaged in the real database, seen by a freshly started gateway.
func TestQuarantinedPolicyFailsClosed(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()
			o := store.Options{DataDir: t.TempDir()}
			driver, dsn := "sqlite", "file:"+o.DataDir+"/edgewan.db"
			if backend == "postgres" {
				o.DatabaseURL = storetest.PostgresURL(t)
				driver, dsn = "pgx", o.DatabaseURL
			}
			st, err := store.Open(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			newEnv(t, st, nil).publish(t, `{"models":["echo"]}`)

			db, err := sql.Open(driver, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec("UPDATE aigw_policy_versions SET content = '{damaged'"); err != nil {
				t.Fatal(err)
			}
			e := newEnv(t, st, nil) // no cached policy
			_, err = e.svc.Sanitize(ctx, user, "req_q", gateway.SanitizeRequest{Project: "proj", Text: "hello"})
			wantAPIError(t, err, http.StatusServiceUnavailable, apierr.CodeUnavailable)
			if _, err := e.svc.Sanitize(ctx, other, "req_o", gateway.SanitizeRequest{Project: "other", Text: "hello"}); err != nil {
				t.Errorf("another project: %v; want it served", err)
			}
		})
	}
}
