package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/edgewan/edgewan/controller/sdwan"
	"github.com/edgewan/edgewan/controller/store"
	"github.com/edgewan/edgewan/controller/store/storetest"
	"github.com/edgewan/edgewan/coreapi/org"
)

// TestMQTTCredentialsLoaded: after LoadMQTTCredentials (SQLite: served from memory), every
// change of a credential through the store is seen by the next lookup at once: a decommission
// and an unclaim refuse the old credential, a new claim's credential is found, and the others
// are still served. On PostgreSQL (shared by other controllers) nothing is cached.
func TestMQTTCredentialsLoaded(t *testing.T) {
	for name, open := range map[string]func(testing.TB) *store.Store{"sqlite": storetest.SQLite, "postgres": storetest.Postgres} {
		t.Run(name, func(t *testing.T) {
			st := open(t)
			ctx := context.Background()
			at := time.Now().UTC().Truncate(time.Microsecond)
			claim := func(site, dev string) sdwan.ClaimRecord {
				t.Helper()
				s := &sdwan.Site{ID: site, Name: site, Status: sdwan.SitePending, Role: "branch", Segments: []string{"corporate"},
					CreatedAt: at, UpdatedAt: at, ClaimExpiresAt: at.Add(time.Hour)}
				if err := st.CreateSite(ctx, s, "claim-"+site+dev, nil); err != nil {
					t.Fatal(err)
				}
				rec := sdwan.ClaimRecord{SiteID: site, ClaimHash: "claim-" + site + dev,
					Device:   &org.Device{ID: dev, SiteID: site, Name: dev, Status: org.DeviceOffline, CreatedAt: at, UpdatedAt: at},
					MQTTUser: dev, MQTTHash: "hash-" + dev, At: at}
				if err := st.ClaimSite(ctx, rec); err != nil {
					t.Fatal(err)
				}
				return rec
			}
			recs := map[string]sdwan.ClaimRecord{}
			for _, c := range []struct{ site, dev string }{{"site-c1", "dev-c1"}, {"site-c2", "dev-c2"}, {"site-c3", "dev-c3"}} {
				recs[c.dev] = claim(c.site, c.dev)
			}
			if err := st.LoadMQTTCredentials(ctx); err != nil {
				t.Fatal(err)
			}
			want := 3
			if name == "postgres" {
				want = 0
			}
			if n := store.CachedCredentials(st); n != want {
				t.Fatalf("%d credentials in memory after the load; want %d", n, want)
			}
			lookup := func(user, wantSite, wantHash string) {
				t.Helper()
				c, err := st.MQTTCredential(ctx, user)
				if err != nil {
					t.Fatal(err)
				}
				switch {
				case wantSite == "" && c != nil:
					t.Errorf("%s: got %+v; want no credential", user, c)
				case wantSite != "" && (c == nil || c.Username != user || c.Site != wantSite || c.Hash != wantHash):
					t.Errorf("%s: got %+v; want site %s, hash %s", user, c, wantSite, wantHash)
				}
			}
			lookup("dev-c1", "site-c1", "hash-dev-c1")
			lookup("dev-c2", "site-c2", "hash-dev-c2")
			lookup("nobody", "", "")

			if err := st.DecommissionSite(ctx, "site-c1", at.Add(time.Minute)); err != nil {
				t.Fatal(err)
			}
			lookup("dev-c1", "", "")
			if err := st.UnclaimSite(ctx, recs["dev-c2"]); err != nil {
				t.Fatal(err)
			}
			lookup("dev-c2", "", "")
			claim("site-c4", "dev-c4")
			lookup("dev-c4", "site-c4", "hash-dev-c4")
			lookup("dev-c3", "site-c3", "hash-dev-c3")
			if name == "sqlite" {
				if n := store.CachedCredentials(st); n != 1 { // dev-c3's; the rest forgotten or never loaded
					t.Errorf("%d credentials in memory; want 1", n)
				}
			}
			// A new load picks up what changed.
			if err := st.LoadMQTTCredentials(ctx); err != nil {
				t.Fatal(err)
			}
			lookup("dev-c4", "site-c4", "hash-dev-c4")
			lookup("dev-c1", "", "")
			if n := store.CachedCredentials(st); n != min(want, 2) { // dev-c3's and dev-c4's
				t.Errorf("%d credentials in memory after a second load; want %d", n, min(want, 2))
			}
		})
	}
}
