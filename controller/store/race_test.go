package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/edgewan/edgewan/aigw/gateway"
	"github.com/edgewan/edgewan/aigw/proposal"
	"github.com/edgewan/edgewan/controller/sdwan"
	"github.com/edgewan/edgewan/controller/store"
	"github.com/edgewan/edgewan/controller/store/storetest"
	"github.com/edgewan/edgewan/coreapi/apierr"
	"github.com/edgewan/edgewan/coreapi/event"
	"github.com/edgewan/edgewan/coreapi/page"
	"github.com/edgewan/edgewan/coreapi/soc"
)

// TestRaiseAcrossControllers: several controllers raise the same signal at the same moment.
// Each has its own soc.Service (its in-process lock serialises only its own raises) and, on
// PostgreSQL, its own store handle on the shared database, as separate processes would. One
// case is opened, announced by one case.opened event; the other raises find it.
func TestRaiseAcrossControllers(t *testing.T) {
	const controllers, raisesEach = 3, 8
	u := storetest.PostgresURL(t)
	pg := func(t *testing.T) []*store.Store {
		var out []*store.Store
		for range controllers {
			s, err := store.Open(context.Background(), store.Options{DatabaseURL: u})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			out = append(out, s)
		}
		return out
	}
	sqlite := func(t *testing.T) []*store.Store { // one process's handle; the services still race
		s := storetest.SQLite(t)
		return []*store.Store{s, s, s}
	}
	for name, open := range map[string]func(*testing.T) []*store.Store{"postgres": pg, "sqlite": sqlite} {
		t.Run(name, func(t *testing.T) {
			stores := open(t)
			ctx := context.Background()
			sig := soc.Signal{Rule: soc.RuleMQTTACL, Subject: "dev_1", Severity: "high", Title: "t", Description: "d"}
			start := make(chan struct{})
			var wg sync.WaitGroup
			ids := make(chan string, controllers*raisesEach)
			for _, st := range stores {
				svc := soc.NewService(st, func() {})
				for range raisesEach {
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-start
						c, err := svc.Raise(ctx, sig)
						if err != nil {
							t.Errorf("Raise: %v", err)
							return
						}
						ids <- c.ID
					}()
				}
			}
			close(start)
			wg.Wait()
			close(ids)
			seen := map[string]bool{}
			for id := range ids {
				seen[id] = true
			}
			if len(seen) != 1 {
				t.Errorf("the raises returned %d distinct cases; want the one case", len(seen))
			}
			cases, err := stores[0].ListCases(ctx, page.Params{Limit: 100, Desc: true}, soc.Filter{})
			if err != nil {
				t.Fatal(err)
			}
			if len(cases) != 1 {
				t.Errorf("%d cases stored; want 1", len(cases))
			}
			evs, err := stores[0].ListEvents(ctx, page.Params{Limit: 100, Desc: true}, sdwan.EventFilter{Types: []string{event.CaseOpened}})
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) != 1 {
				t.Errorf("%d case.opened events; want 1", len(evs))
			}

			// Once resolved, the next signal opens a new case; the old one cannot be reopened
			// while the new one is open (409, not a second open case).
			old := cases[0]
			resolved := "resolved"
			if _, err := soc.NewService(stores[0], func() {}).Update(ctx, old.ID, soc.UpdateRequest{Status: &resolved}, "t"); err != nil {
				t.Fatal(err)
			}
			again, err := soc.NewService(stores[len(stores)-1], func() {}).Raise(ctx, sig)
			if err != nil || again.ID == old.ID {
				t.Fatalf("Raise after resolving: %v, %v; want a new case", again, err)
			}
			open := "open"
			if _, err := soc.NewService(stores[0], func() {}).Update(ctx, old.ID, soc.UpdateRequest{Status: &open}, "t"); !errors.Is(err, apierr.ErrConflict) {
				t.Errorf("reopening the old case while a new one is open: %v; want a conflict", err)
			}
		})
	}
}

// TestProposalAcrossControllers: Automatic mode runs on every controller; when several
// propose the same change at once through their own handles on the shared PostgreSQL, it is
// stored once, with one policy.proposed event (the unique fingerprint index, ON CONFLICT).
func TestProposalAcrossControllers(t *testing.T) {
	const controllers = 4
	u := storetest.PostgresURL(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Microsecond)
	var stores []*store.Store
	for range controllers {
		s, err := store.Open(ctx, store.Options{DatabaseURL: u})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		stores = append(stores, s)
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	stored := 0
	for i, st := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("prop_%d", i)
			p := &gateway.Proposal{ID: id, Project: "p", Status: gateway.ProposalOpen, Kind: proposal.KindRuleNeverFires,
				Change: proposal.Change{Op: proposal.OpRemoveRule, Rule: "r"}, CreatedAt: now, UpdatedAt: now, Fingerprint: "rule_never_fires:aipol_1:1:r"}
			ev, err := event.New(event.PolicyProposed, map[string]any{"proposal_id": id, "project": "p"})
			if err != nil {
				t.Error(err)
				return
			}
			<-start
			ok, _, err := st.Gateway().InsertProposal(ctx, p, ev)
			if err != nil {
				t.Errorf("InsertProposal: %v", err)
				return
			}
			if ok {
				mu.Lock()
				stored++
				mu.Unlock()
			}
		}()
	}
	close(start)
	wg.Wait()
	if stored != 1 {
		t.Errorf("%d controllers stored the proposal; want 1", stored)
	}
	evs, err := stores[0].ListEvents(ctx, page.Params{Limit: 100, Desc: true}, sdwan.EventFilter{Types: []string{event.PolicyProposed}})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 {
		t.Errorf("%d policy.proposed events; want 1", len(evs))
	}
}
