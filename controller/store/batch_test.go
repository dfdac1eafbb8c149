package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/edgewan/edgewan/controller/sdwan"
	"github.com/edgewan/edgewan/controller/store/storetest"
)

// TestSitesByIDAndAssignmentsOf: the batch reads of a simulation give, for each site asked that
// exists, what GetSite and Assignments give one site at a time; missing sites are absent.
func TestSitesByIDAndAssignmentsOf(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			s := b.Open(t)
			t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			ids := []string{"site_ba", "site_bb", "site_bc"}
			for i, id := range ids {
				site := &sdwan.Site{ID: id, Name: "batch " + id, Status: sdwan.SitePending, Role: "branch", Segments: []string{"corporate"}, CreatedAt: t0, UpdatedAt: t0}
				var ts []*sdwan.Transport
				for j, name := range []string{"mpls", "inet", "lte"}[:2-i+1] { // site_bc has one transport
					ts = append(ts, &sdwan.Transport{ID: fmt.Sprintf("tr_%s%d", id, j), SiteID: id, Name: name, Kind: "broadband",
						Interface: fmt.Sprintf("eth%d", j), ProbeTargets: []string{}, Status: sdwan.TransportUnknown, Cost: j, CreatedAt: t0, UpdatedAt: t0})
				}
				if err := s.CreateSite(ctx, site, "claim_"+id, ts); err != nil {
					t.Fatal(err)
				}
			}
			for i, typ := range []string{sdwan.TypeSteering, sdwan.TypeQoS} {
				p := &sdwan.Policy{ID: fmt.Sprintf("pol_batch%d", i), Name: fmt.Sprintf("batch%d", i), Type: typ, CreatedAt: t0, UpdatedAt: t0}
				v := &sdwan.Version{Version: 1, Status: "draft", Content: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)), CreatedBy: "key_x", CreatedAt: t0}
				if err := s.CreatePolicy(ctx, p, v); err != nil {
					t.Fatal(err)
				}
				c := &sdwan.Change{ID: fmt.Sprintf("chg_batch%d", i), Kind: "policy.published", Actor: "key_x", Target: p.ID, Version: 1, CreatedAt: t0, UpdatedAt: t0}
				if err := s.PublishPolicy(ctx, p.ID, 1, ids[:2-i], typ, c); err != nil { // site_ba runs both, site_bb one
					t.Fatal(err)
				}
			}
			ask := append([]string{"site_missing"}, ids...)
			sites, err := s.SitesByID(ctx, ask)
			if err != nil {
				t.Fatal(err)
			}
			as, err := s.AssignmentsOf(ctx, ask)
			if err != nil {
				t.Fatal(err)
			}
			if len(sites) != len(ids) || sites["site_missing"] != nil {
				t.Fatalf("SitesByID: %d sites %v; want %v", len(sites), sites, ids)
			}
			wantAs := map[string]int{"site_ba": 2, "site_bb": 1}
			for _, id := range ids {
				one, err := s.GetSite(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(sites[id], one) {
					t.Errorf("SitesByID[%s] = %+v; want GetSite's %+v", id, sites[id], one)
				}
				oneAs, err := s.Assignments(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				if len(oneAs) != wantAs[id] || !reflect.DeepEqual(as[id], oneAs) {
					t.Errorf("AssignmentsOf[%s] = %v; want Assignments' %v (%d)", id, as[id], oneAs, wantAs[id])
				}
			}
			if len(as) != len(wantAs) {
				t.Errorf("AssignmentsOf: %d sites; want %d", len(as), len(wantAs))
			}
			if sites, err := s.SitesByID(ctx, nil); err != nil || len(sites) != 0 {
				t.Errorf("SitesByID(nil) = %v, %v; want empty", sites, err)
			}
			if as, err := s.AssignmentsOf(ctx, nil); err != nil || len(as) != 0 {
				t.Errorf("AssignmentsOf(nil) = %v, %v; want empty", as, err)
			}
		})
	}
}
