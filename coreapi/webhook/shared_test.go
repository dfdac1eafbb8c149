package webhook_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/edgewan/edgewan/controller/store"
	"github.com/edgewan/edgewan/controller/store/storetest"
	"github.com/edgewan/edgewan/coreapi/webhook"
)

// TestSharedQueueDeadController: two controllers share one PostgreSQL through two store
// handles. Controller A claims deliveries and dies before finishing them (the claim is made
// and never followed by a result). Controller B's dispatcher, Shared, leaves them alone at its
// start (they may be a live peer's) and takes them back once StaleAfter has passed since A's
// claim: each is delivered, once, and the queue ends with them succeeded.
func TestSharedQueueDeadController(t *testing.T) {
	const deliveries = 5
	u := storetest.PostgresURL(t)
	open := func() *store.Store {
		s, err := store.Open(context.Background(), store.Options{DatabaseURL: u})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b := open(), open()

	var mu sync.Mutex
	got := map[string]int{} // delivery ID -> receipts
	done := make(chan struct{})
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got[r.Header.Get(webhook.HeaderDelivery)]++
		if len(got) == deliveries {
			select {
			case <-done:
			default:
				close(done)
			}
		}
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer rcv.Close()
	addWebhooks(t, a, rcv.URL+"/hook", 1)
	addEvents(t, a, deliveries)

	claimedAt := time.Now()
	jobs, err := a.ClaimDue(context.Background(), claimedAt, 100, 100, nil)
	if err != nil || len(jobs) != deliveries {
		t.Fatalf("controller A claimed %d, %v; want %d", len(jobs), err, deliveries)
	}
	// A is dead from here on: its claims stay "delivering".

	const staleAfter = 2 * time.Second
	d := webhook.NewDispatcher(b, webhook.DispatchOptions{Shared: true, StaleAfter: staleAfter, PollInterval: 20 * time.Millisecond})
	stop := runDispatcher(t, d)
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("controller B never delivered what dead controller A had claimed (got %v)", got)
	}
	waited := time.Since(claimedAt)
	t.Logf("the dead controller's %d deliveries delivered by the other %v after its claim (StaleAfter %v)", deliveries, waited.Round(time.Millisecond), staleAfter)
	if waited < staleAfter {
		t.Errorf("B delivered A's claims %v after them; want no sooner than StaleAfter (%v): they could have been a live controller's", waited, staleAfter)
	}
	stop() // writes every result
	counts, err := b.CountDeliveries(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if counts[webhook.StatusSucceeded] != deliveries || counts[webhook.StatusDelivering] != 0 || counts[webhook.StatusPending] != 0 {
		t.Errorf("queue %v; want the %d succeeded", counts, deliveries)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, j := range jobs {
		if got[j.DeliveryID] != 1 {
			t.Errorf("delivery %s received %d times; want once", j.DeliveryID, got[j.DeliveryID])
		}
	}
}

// TestResetInFlightCutoff: only claims older than the cutoff go back to the queue.
func TestResetInFlightCutoff(t *testing.T) {
	st := storetest.Postgres(t)
	addWebhooks(t, st, "https://example.com/hook", 1)
	addEvents(t, st, 4)
	ctx := context.Background()
	t0 := time.Now()
	if jobs, err := st.ClaimDue(ctx, t0, 2, 2, nil); err != nil || len(jobs) != 2 {
		t.Fatalf("first claim: %d, %v", len(jobs), err)
	}
	t1 := t0.Add(time.Minute)
	if jobs, err := st.ClaimDue(ctx, t1, 2, 2, nil); err != nil || len(jobs) != 2 {
		t.Fatalf("second claim: %d, %v", len(jobs), err)
	}
	if n, err := st.ResetInFlight(ctx, t1, t1); err != nil || n != 2 {
		t.Fatalf("ResetInFlight before the second claim: %d, %v; want the first claim's 2", n, err)
	}
	if n, err := st.ResetInFlight(ctx, t1, t1); err != nil || n != 0 {
		t.Fatalf("ResetInFlight again: %d, %v; want none (the second claim is not older than the cutoff)", n, err)
	}
}
