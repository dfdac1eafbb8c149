package cluster

import (
	"context"
	"sync"
	"testing"
	"time"
)

// jobRuns records which members run a singleton job, and whether two ever ran it at once.
type jobRuns struct {
	mu      sync.Mutex
	running map[string]bool
	overlap int
	starts  map[string]int
}

func (r *jobRuns) run(id string) func(context.Context) {
	return func(ctx context.Context) {
		r.mu.Lock()
		if len(r.running) > 0 {
			r.overlap++
		}
		r.running[id] = true
		r.starts[id]++
		r.mu.Unlock()
		<-ctx.Done()
		r.mu.Lock()
		delete(r.running, id)
		r.mu.Unlock()
	}
}

// runner returns the member running the job, "" if none.
func (r *jobRuns) runner() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id := range r.running {
		return id
	}
	return ""
}

// TestSingleton: 3 members on PostgreSQL run one job through Singleton; exactly one runs it.
// Frozen (its lease renewals stop, as a paused or partitioned process's would, while its job
// loop goes on), the runner stops the job by itself before another member takes the lease and
// starts it; a graceful stop hands it over at once. The job never runs on two members at once.
func TestSingleton(t *testing.T) {
	db := openDB(t)
	r := &jobRuns{running: map[string]bool{}, starts: map[string]int{}}
	nodes := map[string]*node{}
	for _, id := range []string{"a", "b", "c"} {
		n := start(t, db, id)
		nodes[id] = n
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); n.m.Singleton(ctx, "test-job", r.run(id)) }()
		t.Cleanup(func() { cancel(); <-done })
	}
	waitFor(t, 10*testTTL, "3 members share 16 partitions", func() bool { return balanced(nodes["a"], nodes["b"], nodes["c"]) })
	first := r.runner()
	if first == "" {
		waitFor(t, testTTL, "one member runs the job", func() bool { return r.runner() != "" })
		first = r.runner()
	}
	if _, ok := nodes[first].m.Epoch(SingletonPartition); !ok {
		t.Fatalf("%s runs the job without holding partition %d", first, SingletonPartition)
	}

	// Frozen: renewals stop, the job loop does not.
	frozen := time.Now()
	nodes[first].kill()
	waitFor(t, 4*testTTL, "another member runs the job", func() bool { id := r.runner(); return id != "" && id != first })
	second := r.runner()
	t.Logf("job moved from frozen %s to %s after %v (TTL %v)", first, second, time.Since(frozen).Round(time.Millisecond), testTTL)

	// Graceful stop: the lease is freed only once the job stopped, and taken at the next round.
	stopped := time.Now()
	nodes[second].stop()
	waitFor(t, 4*testTTL, "the last member runs the job", func() bool { id := r.runner(); return id != "" && id != first && id != second })
	t.Logf("job moved after a graceful stop of %s in %v", second, time.Since(stopped).Round(time.Millisecond))

	r.mu.Lock()
	defer r.mu.Unlock()
	if r.overlap != 0 {
		t.Errorf("the job started %d times while another member ran it", r.overlap)
	}
	for id, n := range r.starts {
		if n != 1 {
			t.Errorf("%s started the job %d times; want once (it held the lease once)", id, n)
		}
	}
}
