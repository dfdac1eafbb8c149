package sdwan_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/edgewan/edgewan/controller/sdwan"
	"github.com/edgewan/edgewan/controller/store/storetest"
	"github.com/edgewan/edgewan/coreapi/apierr"
	"github.com/edgewan/edgewan/coreapi/org"
	"github.com/edgewan/edgewan/coreapi/page"
	"github.com/edgewan/edgewan/telemetry/rollup"
	"github.com/edgewan/edgewan/telemetry/sink"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// TestClaimExpiry claims with a clock moved past the token's expiry: refused with the expired
// code, the reuse hook told, and the site still claimable by nobody else.
func TestClaimExpiry(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			var reused []string
			skew := time.Duration(0)
			svc := sdwan.NewService(b.Open(t), sdwan.Options{
				OnClaimReuse: func(_ context.Context, site, _, reason string) { reused = append(reused, site+": "+reason) },
				Now:          func() time.Time { return time.Now().Add(skew) },
			}, nil)
			site, err := svc.CreateSite(context.Background(), sdwan.CreateSiteRequest{Name: "x", ClaimTTL: "1h"})
			if err != nil {
				t.Fatal(err)
			}
			skew = 2 * time.Hour
			_, err = svc.Claim(context.Background(), sdwan.ClaimRequest{ClaimToken: site.Claim}, "198.18.0.9")
			if e := apierr.From(err); e.Status != 401 || e.Code != sdwan.CodeClaimExpired {
				t.Fatalf("got %v; want 401 %s", err, sdwan.CodeClaimExpired)
			}
			if len(reused) != 1 {
				t.Fatalf("reuse hook calls %v; want one", reused)
			}
			skew = 0
			if _, err := svc.Claim(context.Background(), sdwan.ClaimRequest{ClaimToken: site.Claim}, ""); err != nil {
				t.Fatalf("claim within the TTL: %v", err)
			}
		})
	}
}

func TestDiff(t *testing.T) {
	tests := []struct {
		name string
		a, b string
		want []string
	}{
		{"same", `{"x":1}`, `{"x":1}`, []string{}},
		{"added to nothing", ``, `{"x":1}`, []string{"+ x: 1"}},
		{"changed and removed", `{"x":1,"y":{"z":true}}`, `{"x":2}`, []string{"~ x: 1 -> 2", "- y.z: true"}},
		{"named list items", `{"classes":[{"name":"a","max":1},{"name":"b","max":2}]}`, `{"classes":[{"name":"b","max":3},{"name":"a","max":1}]}`,
			[]string{"~ classes[b].max: 2 -> 3"}},
		{"unnamed rules of one class keyed by index", `{"rules":[{"class":"v","dscp":[46]},{"class":"v","dscp":[34]}]}`,
			`{"rules":[{"class":"v","dscp":[26]},{"class":"v","dscp":[34]}]}`, []string{"~ rules[0].dscp: [46] -> [26]"}},
		{"null is absent", `{"rules":null,"x":1}`, `{"rules":[{"name":"a","class":"v"}],"x":1}`,
			[]string{"+ rules[a].class: \"v\"", "+ rules[a].name: \"a\""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := sdwan.Diff([]byte(tc.a), []byte(tc.b))
			if len(got) != len(tc.want) {
				t.Fatalf("got %q; want %q", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("got %q; want %q", got, tc.want)
				}
			}
		})
	}
}

func FuzzValidateContent(f *testing.F) {
	f.Add("steering", `{"classes":[{"name":"voice","max_latency_ms":150}],"paths":{"voice":["mpls"]},"rules":[{"class":"voice","ports":["5060-5061"],"protocol":"udp"}]}`)
	f.Add("qos", `{"transports":[{"transport":"mpls","rate_kbps":1000,"classes":[{"class":"voice","rate_kbps":100,"ceil_kbps":500,"priority":0}]}]}`)
	f.Fuzz(func(t *testing.T, typ, content string) {
		canonical, _, err := sdwan.ValidateContent(typ, []byte(content))
		if err != nil {
			if apierr.From(err).Status != 400 {
				t.Fatalf("error %v is not a 400", err)
			}
			return
		}
		// The canonical form validates again to itself.
		again, _, err := sdwan.ValidateContent(typ, canonical)
		if err != nil || string(again) != string(canonical) {
			t.Fatalf("canonical form %s does not round-trip: %s, %v", canonical, again, err)
		}
	})
}

// failingLive is the live engine whose reload fails the first n times: a database read error
// after the claim was stored.
type failingLive struct{ n int }

func (l *failingLive) Overlay(string, []*sdwan.Transport) {}
func (l *failingLive) Health(string, time.Duration) (*sdwan.Health, bool) {
	return nil, false
}
func (l *failingLive) Points(string, time.Duration) (time.Duration, []rollup.TransportPoints, time.Time) {
	return 0, nil, time.Time{}
}
func (l *failingLive) Quarantined(string) *sdwan.Quarantine { return nil }
func (l *failingLive) SiteChanged(context.Context, string) error {
	if l.n > 0 {
		l.n--
		return errors.New("reading the site: connection reset")
	}
	return nil
}

type noPush struct{}

func (noPush) PushPolicies(context.Context, string) error { return nil }

// TestFailedClaimKeepsToken: a claim that fails after it was stored is undone: the token works
// again, and the failed attempt leaves no device behind.
func TestFailedClaimKeepsToken(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			st := b.Open(t)
			svc := sdwan.NewService(st, sdwan.Options{}, nil)
			svc.Attach(noPush{}, &failingLive{n: 2}) // the claim's reload, then the undo's
			ctx := context.Background()
			site, err := svc.CreateSite(ctx, sdwan.CreateSiteRequest{Name: "x"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := svc.Claim(ctx, sdwan.ClaimRequest{ClaimToken: site.Claim}, ""); err == nil {
				t.Fatal("claim succeeded with a failing reload")
			}
			got, err := svc.GetSite(ctx, site.ID)
			if err != nil || !got.ClaimedAt.IsZero() || got.DeviceID != "" || got.Status != sdwan.SitePending {
				t.Fatalf("site after the failed claim: %+v, %v", got, err)
			}
			res, err := svc.Claim(ctx, sdwan.ClaimRequest{ClaimToken: site.Claim}, "")
			if err != nil {
				t.Fatalf("claim again with the same token: %v", err)
			}
			devs, err := st.ListDevices(ctx, page.Params{Limit: 10}, org.DeviceFilter{})
			if err != nil || len(devs) != 1 || devs[0].ID != res.Device {
				t.Fatalf("devices: %v, %v; want only %s", devs, err, res.Device)
			}
		})
	}
}

// TestSimulationsBounded: at most Concurrent simulations run at once; the next is a 429 until
// one ends, and a run's slot is released once however often Release is called.
func TestSimulationsBounded(t *testing.T) {
	ctx := context.Background()
	st := storetest.SQLite(t)
	svc := sdwan.NewService(st, sdwan.Options{}, nil)
	es, err := sink.NewEmbedded(sink.EmbeddedOptions{DataDir: t.TempDir(), PruneInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer es.Close()
	svc.SetHistory(es, sdwan.SimulationOptions{Concurrent: 2})
	siteID, policyID := simFixture(t, svc)
	p := &sdwan.Policy{ID: policyID}
	req := sdwan.SimulateRequest{Window: "1h", Sites: []string{siteID}}
	a, err := svc.Simulate(ctx, p.ID, 1, req, "")
	if err != nil {
		t.Fatal(err)
	}
	b, err := svc.Simulate(ctx, p.ID, 1, req, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Simulate(ctx, p.ID, 1, req, ""); apierr.From(err).Status != 429 {
		t.Fatalf("a third simulation at once: %v; want 429", err)
	}
	a.Release()
	a.Release() // once only: b still holds its slot
	var out strings.Builder
	if err := b.Stream(ctx, &out, nil); err != nil || !strings.HasSuffix(out.String(), `"complete":true}`) {
		t.Fatalf("stream: %v: %s", err, out.String())
	}
	c, err := svc.Simulate(ctx, p.ID, 1, req, "")
	if err != nil {
		t.Fatalf("after the others ended: %v", err)
	}
	d, err := svc.Simulate(ctx, p.ID, 1, req, "")
	if err != nil {
		t.Fatalf("second slot: %v", err)
	}
	if _, err := svc.Simulate(ctx, p.ID, 1, req, ""); apierr.From(err).Status != 429 {
		t.Fatalf("a third simulation at once: %v; want 429", err)
	}
	c.Release()
	d.Release()
}

// simFixture makes a site with one transport and a steering policy for it to simulate.
func simFixture(t *testing.T, svc *sdwan.Service) (siteID, policyID string) {
	t.Helper()
	ctx := context.Background()
	site, err := svc.CreateSite(ctx, sdwan.CreateSiteRequest{Name: "b", Transports: []sdwan.CreateTransportRequest{{Name: "inet", Interface: "eth0"}}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := svc.CreatePolicy(ctx, sdwan.CreatePolicyRequest{Name: "p", Type: sdwan.TypeSteering,
		Content: []byte(`{"classes":[{"name":"voice","max_latency_ms":100}],"paths":{"voice":["inet"]}}`)}, "")
	if err != nil {
		t.Fatal(err)
	}
	return site.ID, p.ID
}
