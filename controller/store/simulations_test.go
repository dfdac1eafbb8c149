package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/edgewan/edgewan/controller/sdwan"
	"github.com/edgewan/edgewan/controller/store"
	"github.com/edgewan/edgewan/controller/store/storetest"
	"github.com/edgewan/edgewan/coreapi/apierr"
)

// TestSimulationsPruned: inserting a simulation keeps the version's newest KeepSimulations,
// those a change record links, and other versions' simulations.
func TestSimulationsPruned(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			s := b.Open(t)
			t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			p := &sdwan.Policy{ID: "pol_prune", Name: "prune", Type: sdwan.TypeSteering, CreatedAt: t0, UpdatedAt: t0}
			if err := s.CreatePolicy(ctx, p, nil); err != nil {
				t.Fatal(err)
			}
			insert := func(id string, version, k int) {
				t.Helper()
				sim := &sdwan.Simulation{ID: id, Policy: p.ID, Version: version, CreatedAt: t0.Add(time.Duration(k) * time.Minute)}
				if err := s.InsertSimulation(ctx, sim); err != nil {
					t.Fatal(err)
				}
			}
			n := store.KeepSimulations + 5
			id := func(k int) string { return fmt.Sprintf("sim_%03d", k) }
			insert("sim_other", 2, 0)
			for k := range n {
				insert(id(k), 1, k)
				if k == 1 { // the publish of version 1 links its 2nd simulation
					c := &sdwan.Change{ID: "chg_prune", Kind: "policy.published", Actor: "key_x", Target: p.ID, Version: 1,
						Simulation: id(1), CreatedAt: t0, UpdatedAt: t0}
					if err := s.PublishPolicy(ctx, p.ID, 1, nil, sdwan.TypeSteering, c); err != nil {
						t.Fatal(err)
					}
				}
			}
			kept := map[string]bool{"sim_other": true} // pruned: false
			for k := range n {
				kept[id(k)] = k == 1 || k >= n-store.KeepSimulations
			}
			for sid, want := range kept {
				_, err := s.GetSimulation(ctx, sid)
				switch {
				case want && err != nil:
					t.Errorf("simulation %s: %v; want it kept", sid, err)
				case !want && !errors.Is(err, apierr.ErrNotFound):
					t.Errorf("simulation %s: %v; want it pruned", sid, err)
				}
			}
			if got, err := s.LatestSimulation(ctx, p.ID, 1); err != nil || got.ID != id(n-1) {
				t.Errorf("latest simulation: %+v, %v; want %s", got, err, id(n-1))
			}
		})
	}
}
