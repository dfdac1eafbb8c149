package webhook_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgewan/edgewan/controller/store"
	"github.com/edgewan/edgewan/controller/store/storetest"
	"github.com/edgewan/edgewan/coreapi/event"
	"github.com/edgewan/edgewan/coreapi/ids"
	"github.com/edgewan/edgewan/coreapi/webhook"
)

// The dispatcher's figures are measured against the real store on both backends: the database
// round trips (claims and result batches) are the hot path, not the HTTP client.
//
//	go test ./coreapi/webhook/ -run '^$' -bench BenchmarkDeliveries -benchtime 5000x -count 5
//	go test ./coreapi/webhook/ -run TestDispatcherWaitingDeliveries -v

// TestMain stops the PostgreSQL server storetest may start for this package's tests.
func TestMain(m *testing.M) { storetest.Main(m) }

// countingQueue is the real store, counting the results it stores by status and the claims made,
// so a test can wait for the dispatcher to reach a point instead of sleeping.
type countingQueue struct {
	webhook.QueueStore
	status  string // the result status counted
	want    int64
	n       atomic.Int64
	done    chan struct{}
	once    sync.Once
	claims  atomic.Int64
	claimed chan struct{} // gets a value after a claim, unless one is already waiting

	claimTime, finishTime atomic.Int64 // nanoseconds spent in the store's calls
}

func newCountingQueue(qs webhook.QueueStore, status string, want int) *countingQueue {
	return &countingQueue{QueueStore: qs, status: status, want: int64(want), done: make(chan struct{}), claimed: make(chan struct{}, 1)}
}

func (c *countingQueue) ClaimDue(ctx context.Context, now time.Time, perWebhook, limit int, exclude []string) ([]webhook.Job, error) {
	t0 := time.Now()
	jobs, err := c.QueueStore.ClaimDue(ctx, now, perWebhook, limit, exclude)
	c.claimTime.Add(int64(time.Since(t0)))
	c.claims.Add(1)
	select {
	case c.claimed <- struct{}{}:
	default:
	}
	return jobs, err
}

func (c *countingQueue) FinishDeliveries(ctx context.Context, rs []webhook.Result) error {
	t0 := time.Now()
	err := c.QueueStore.FinishDeliveries(ctx, rs)
	c.finishTime.Add(int64(time.Since(t0)))
	if err != nil {
		return err
	}
	var k int64
	for i := range rs {
		if rs[i].Status == c.status {
			k++
		}
	}
	if c.n.Add(k) >= c.want {
		c.once.Do(func() { close(c.done) })
	}
	return nil
}

// addWebhooks registers n webhooks to url for case.opened.
func addWebhooks(tb testing.TB, st *store.Store, url string, n int) {
	tb.Helper()
	now := time.Now().UTC()
	for i := range n {
		w := &webhook.Webhook{ID: ids.New("wh"), URL: url, Events: []string{event.CaseOpened}, Secret: fmt.Sprintf("whsec_bench_%d", i), CreatedAt: now, UpdatedAt: now}
		if err := st.CreateWebhook(context.Background(), w); err != nil {
			tb.Fatal(err)
		}
	}
}

// addEvents stores n case.opened events, each queueing one delivery per webhook. PostgreSQL
// takes them from a few connections at once; SQLite has one writer anyway.
func addEvents(tb testing.TB, st *store.Store, n int) {
	tb.Helper()
	workers := 1
	if st.Backend() == "postgres" {
		workers = 8
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				ev, err := event.New(event.CaseOpened, map[string]string{"id": ids.New("case"), "severity": "high", "status": "open", "title": "benchmark case"})
				if err == nil {
					_, err = st.InsertEvent(context.Background(), ev)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		tb.Fatal(err)
	}
}

// runDispatcher runs d until the test ends.
func runDispatcher(tb testing.TB, d *webhook.Dispatcher) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				tb.Errorf("dispatcher: %v", err)
			}
		})
	}
	tb.Cleanup(stop)
	return stop
}

// BenchmarkDeliveries measures deliveries per second from the store to a local receiver that
// answers 204 at once: b.N deliveries queued for one webhook, or spread over four.
func BenchmarkDeliveries(b *testing.B) {
	for _, be := range storetest.Backends(b) {
		for _, hooks := range []int{1, 4} {
			b.Run(fmt.Sprintf("%s/webhooks=%d", be.Name, hooks), func(b *testing.B) {
				st := be.Open(b)
				var received atomic.Int64
				recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
					received.Add(1)
					w.WriteHeader(http.StatusNoContent)
				}))
				b.Cleanup(recv.Close)
				addWebhooks(b, st, recv.URL+"/hook", hooks)
				events := (b.N + hooks - 1) / hooks
				total := events * hooks
				addEvents(b, st, events)

				qs := newCountingQueue(st, webhook.StatusSucceeded, total)
				d := webhook.NewDispatcher(qs, webhook.DispatchOptions{})
				b.ReportAllocs()
				b.ResetTimer()
				start := time.Now()
				stop := runDispatcher(b, d)
				select {
				case <-qs.done:
				case <-time.After(5 * time.Minute):
					b.Fatalf("%d of %d deliveries stored as succeeded after 5 minutes", qs.n.Load(), total)
				}
				elapsed := time.Since(start)
				b.StopTimer()
				stop()
				b.ReportMetric(float64(total)/elapsed.Seconds(), "deliveries/s")
				b.ReportMetric(float64(qs.claims.Load())/float64(total), "claims/delivery")
				// Store time per delivery: claims run in the dispatcher's loop, result batches
				// in its writer, so each bounds the rate on its own.
				b.ReportMetric(float64(qs.claimTime.Load())/1e3/float64(total), "claim-µs/delivery")
				b.ReportMetric(float64(qs.finishTime.Load())/1e3/float64(total), "finish-µs/delivery")

				counts, err := st.CountDeliveries(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				if counts[webhook.StatusSucceeded] != int64(total) || received.Load() < int64(total) {
					b.Fatalf("succeeded %d, received %d; want %d", counts[webhook.StatusSucceeded], received.Load(), total)
				}
			})
		}
	}
}

// TestDispatcherWaitingDeliveriesHoldNoResources queues 10,000 deliveries to a receiver that
// refuses connections, lets every first attempt fail, and checks that deliveries waiting for a
// retry cost no goroutines and no heap: they wait in the database, not in the process.
func TestDispatcherWaitingDeliveriesHoldNoResources(t *testing.T) {
	const (
		hooks  = 20
		events = 500 // each fans out to every webhook: 10,000 deliveries
		total  = hooks * events
	)
	for _, be := range storetest.Backends(t) {
		t.Run(be.Name, func(t *testing.T) {
			st := be.Open(t)
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			dead := "http://" + l.Addr().String() + "/hook"
			l.Close() // nothing listens there now: every attempt is refused
			addWebhooks(t, st, dead, hooks)
			addEvents(t, st, events)

			g0, h0 := goroutinesAndHeap()
			qs := newCountingQueue(st, webhook.StatusPending, total)
			d := webhook.NewDispatcher(qs, webhook.DispatchOptions{
				RetryBase:    time.Hour, // nothing comes due again during the test
				PollInterval: 10 * time.Millisecond,
			})
			start := time.Now()
			stop := runDispatcher(t, d)
			var peak int
			deadline := time.After(5 * time.Minute)
			sample := time.NewTicker(5 * time.Millisecond) // the goroutine count while attempts run
			defer sample.Stop()
		wait:
			for {
				select {
				case <-qs.done:
					break wait
				case <-deadline:
					t.Fatalf("%d of %d first attempts stored after 5 minutes", qs.n.Load(), total)
				case <-sample.C:
					peak = max(peak, runtime.NumGoroutine())
				}
			}
			failedIn := time.Since(start)
			// Let the dispatcher poll the queue of waiting deliveries 50 more times.
			for c := qs.claims.Load(); qs.claims.Load() < c+50; {
				select {
				case <-qs.claimed:
				case <-deadline:
					t.Fatal("the dispatcher stopped polling")
				}
			}
			g1, h1 := goroutinesAndHeap()
			counts, err := st.CountDeliveries(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			stop()
			g2, h2 := goroutinesAndHeap()

			t.Logf("%s: %d deliveries to %d dead webhooks failed their first attempt in %v (%.0f/s)", be.Name, total, hooks, failedIn.Round(time.Millisecond), total/failedIn.Seconds())
			t.Logf("goroutines: %d before, peak %d while attempting, %d with %d deliveries waiting, %d after stop", g0, peak, g1, counts[webhook.StatusPending], g2)
			t.Logf("HeapInuse: %.1f MiB before, %.1f MiB with deliveries waiting (%+.1f MiB), %.1f MiB after stop", mib(h0), mib(h1), mib(h1)-mib(h0), mib(h2))

			if counts[webhook.StatusPending] != total || counts[webhook.StatusDelivering] != 0 {
				t.Errorf("queue %v; want all %d pending, none delivering", counts, total)
			}
			if extra := g1 - g0; extra >= 100 {
				t.Errorf("%d goroutines more with %d deliveries waiting than before; want under 100", extra, total)
			}
			// An attempt in flight is its lane worker plus the HTTP transport's dialling
			// goroutines: the peak follows the lanes' workers, not the deliveries queued.
			if peak-g0 > hooks*16*4+100 {
				t.Errorf("peak of %d goroutines over %d before; want about a lane's workers per webhook", peak-g0, g0)
			}
			if grow := int64(h1) - int64(h0); grow > 16<<20 {
				t.Errorf("heap grew %.1f MiB with %d deliveries waiting; want under 16 MiB", mib(uint64(grow)), total)
			}
		})
	}
}

func goroutinesAndHeap() (int, uint64) {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return runtime.NumGoroutine(), m.HeapInuse
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// BenchmarkClaim measures one dispatcher round against the store with a backlog of due
// deliveries: claim up to 256 (at most 64 for the webhook) and store their results, here putting
// them back in the queue so the backlog stays the same size. A claim's cost should not grow with
// the backlog: a receiver coming back after an outage has to be caught up fast.
func BenchmarkClaim(b *testing.B) {
	for _, be := range storetest.Backends(b) {
		for _, backlog := range []int{1000, 10000} {
			b.Run(fmt.Sprintf("%s/backlog=%d", be.Name, backlog), func(b *testing.B) {
				st := be.Open(b)
				addWebhooks(b, st, "http://127.0.0.1:1/hook", 1)
				addEvents(b, st, backlog)
				ctx := context.Background()
				var claimed int
				rs := make([]webhook.Result, 0, 256)
				for b.Loop() {
					now := time.Now()
					jobs, err := st.ClaimDue(ctx, now, 64, 256, nil)
					if err != nil || len(jobs) == 0 {
						b.Fatalf("claimed %d: %v", len(jobs), err)
					}
					claimed += len(jobs)
					rs = rs[:0]
					for _, j := range jobs {
						rs = append(rs, webhook.Result{DeliveryID: j.DeliveryID, Status: webhook.StatusPending, Attempts: j.Attempts + 1,
							NextAttemptAt: now.Add(-time.Hour), AttemptedAt: now, HTTPStatus: 500, Error: "receiver answered 500"})
					}
					if err := st.FinishDeliveries(ctx, rs); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(claimed), "µs/delivery")
			})
		}
	}
}

// TestClaimDue checks the queue contract the dispatcher relies on, on both backends: oldest due
// first, a cap per webhook, exclusions, nothing claimed twice, and in-flight deliveries requeued.
func TestClaimDue(t *testing.T) {
	for _, be := range storetest.Backends(t) {
		t.Run(be.Name, func(t *testing.T) {
			st := be.Open(t)
			ctx := context.Background()
			now := time.Now().UTC().Truncate(time.Microsecond)
			hook := func(id, typ string) {
				w := &webhook.Webhook{ID: id, URL: "https://example.com/" + id, Events: []string{typ}, Secret: "whsec_" + id, CreatedAt: now, UpdatedAt: now}
				if err := st.CreateWebhook(ctx, w); err != nil {
					t.Fatal(err)
				}
			}
			hook("wh_a", event.CaseOpened)
			hook("wh_b", event.CaseClosed)
			// Deliveries are due at their event's time: a's 100 are older than b's 3, and one
			// of b's is not due yet.
			queue := func(typ string, at time.Time) string {
				ev, err := event.New(typ, map[string]string{"id": ids.New("case")})
				if err != nil {
					t.Fatal(err)
				}
				ev.CreatedAt = at
				if n, err := st.InsertEvent(ctx, ev); err != nil || n != 1 {
					t.Fatalf("InsertEvent: %d deliveries, %v; want 1", n, err)
				}
				return ev.ID
			}
			var aEvents, bEvents []string
			for i := range 100 {
				aEvents = append(aEvents, queue(event.CaseOpened, now.Add(time.Duration(i-1000)*time.Millisecond)))
			}
			for i := range 3 {
				bEvents = append(bEvents, queue(event.CaseClosed, now.Add(time.Duration(i-10)*time.Millisecond)))
			}
			queue(event.CaseClosed, now.Add(time.Minute))

			claim := func(exclude ...string) []webhook.Job {
				t.Helper()
				jobs, err := st.ClaimDue(ctx, now, 10, 50, exclude)
				if err != nil {
					t.Fatal(err)
				}
				return jobs
			}
			byHook := func(jobs []webhook.Job) map[string][]string {
				m := map[string][]string{}
				for _, j := range jobs {
					m[j.WebhookID] = append(m[j.WebhookID], j.Event.ID)
				}
				return m
			}
			// The first claim caps a at 10; b's may be left for a claim that excludes a.
			first := claim()
			got := byHook(first)
			if !slices.Equal(got["wh_a"], aEvents[:10]) {
				t.Fatalf("first claim, webhook a: %v; want its 10 oldest %v", got["wh_a"], aEvents[:10])
			}
			j := first[0]
			if j.WebhookID != "wh_a" || j.URL != "https://example.com/wh_a" || j.Secret != "whsec_wh_a" || j.Event.Type != event.CaseOpened ||
				j.Attempts != 0 || len(j.Event.Data) == 0 || j.CreatedAt.IsZero() {
				t.Errorf("job %+v; want webhook a's URL, secret, event and no attempts", j)
			}
			gotB := append(got["wh_b"], byHook(claim("wh_a"))["wh_b"]...)
			if !slices.Equal(gotB, bEvents) {
				t.Errorf("webhook b's deliveries claimed: %v; want its 3 due %v", gotB, bEvents)
			}
			if got := byHook(claim()); len(got) != 1 || !slices.Equal(got["wh_a"], aEvents[10:20]) {
				t.Errorf("third claim: %v; want a's next 10 %v", got, aEvents[10:20])
			}
			if got := claim("wh_a"); len(got) != 0 {
				t.Errorf("claim excluding a once b's due ones are out: %v; want none", byHook(got))
			}

			// Concurrent claims never hand out a delivery twice.
			var mu sync.Mutex
			seen := map[string]int{}
			var wg sync.WaitGroup
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						jobs, err := st.ClaimDue(ctx, now, 10, 50, nil)
						if err != nil {
							t.Error(err)
							return
						}
						if len(jobs) == 0 {
							return
						}
						mu.Lock()
						for _, j := range jobs {
							seen[j.DeliveryID]++
						}
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			if len(seen) != 80 {
				t.Errorf("concurrent claims got %d deliveries; want a's remaining 80", len(seen))
			}
			for id, n := range seen {
				if n > 1 {
					t.Errorf("delivery %s claimed %d times", id, n)
				}
			}

			// A stopped process's claims go back to the queue.
			if err := st.FinishDeliveries(ctx, []webhook.Result{{DeliveryID: first[0].DeliveryID, Status: webhook.StatusSucceeded, Attempts: 1, AttemptedAt: now, HTTPStatus: 204}}); err != nil {
				t.Fatal(err)
			}
			n, err := st.ResetInFlight(ctx, now, now.Add(time.Microsecond))
			if err != nil || n != 102 {
				t.Errorf("ResetInFlight: %d, %v; want the 102 still delivering", n, err)
			}
			counts, err := st.CountDeliveries(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if counts[webhook.StatusPending] != 103 || counts[webhook.StatusSucceeded] != 1 || counts[webhook.StatusDelivering] != 0 {
				t.Errorf("counts %v; want 103 pending, 1 succeeded", counts)
			}
		})
	}
}
