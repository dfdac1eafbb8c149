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

// TestNATSRevocations: a claim keeps its device's NATS user (scaled-out mode); deleting the
// site lists that user among the revocations, with the time of the deletion, and a claim
// without a NATS user (embedded broker, Mosquitto) never appears there.
func TestNATSRevocations(t *testing.T) {
	for name, open := range map[string]func(testing.TB) *store.Store{"sqlite": storetest.SQLite, "postgres": storetest.Postgres} {
		t.Run(name, func(t *testing.T) {
			st := open(t)
			ctx := context.Background()
			at := time.Now().UTC().Truncate(time.Microsecond)
			for i, c := range []struct{ site, dev, natsUser string }{{"site-n1", "dev-n1", "UNATSUSER1"}, {"site-n2", "dev-n2", ""}} {
				site := &sdwan.Site{ID: c.site, Name: c.site, Status: sdwan.SitePending, Role: "branch", Segments: []string{"corporate"},
					CreatedAt: at, UpdatedAt: at, ClaimExpiresAt: at.Add(time.Hour)}
				if err := st.CreateSite(ctx, site, "claim-"+c.site, nil); err != nil {
					t.Fatal(err)
				}
				dev := &org.Device{ID: c.dev, SiteID: c.site, Name: c.dev, Status: org.DeviceOffline, CreatedAt: at, UpdatedAt: at}
				if err := st.ClaimSite(ctx, sdwan.ClaimRecord{SiteID: c.site, ClaimHash: "claim-" + c.site, Device: dev,
					MQTTUser: c.dev, MQTTHash: "x", NATSUser: c.natsUser, At: at.Add(time.Duration(i) * time.Second)}); err != nil {
					t.Fatal(err)
				}
			}
			if r, err := st.NATSRevocations(ctx); err != nil || len(r) != 0 {
				t.Fatalf("before any deletion: %v, %v; want none", r, err)
			}
			gone := at.Add(time.Minute)
			for _, s := range []string{"site-n1", "site-n2"} {
				if err := st.DecommissionSite(ctx, s, gone); err != nil {
					t.Fatal(err)
				}
			}
			r, err := st.NATSRevocations(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(r) != 1 || !r["UNATSUSER1"].Equal(gone) {
				t.Errorf("revocations %v; want UNATSUSER1 at %v only", r, gone)
			}
		})
	}
}
