package ingest

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/edgewan/edgewan/controller/mqtt"
	"github.com/edgewan/edgewan/controller/sdwan"
	"github.com/edgewan/edgewan/telemetry"
)

// batchReads counts reads of sites and assignments, one at a time or in batches.
type batchReads struct {
	*readCounter
	assignments int
	asBatches   []int
}

func (r *batchReads) Assignments(ctx context.Context, id string) ([]*sdwan.Assignment, error) {
	r.mu.Lock()
	r.assignments++
	r.mu.Unlock()
	return r.benchStore.Assignments(ctx, id)
}

func (r *batchReads) AssignmentsOf(ctx context.Context, ids []string) (map[string][]*sdwan.Assignment, error) {
	r.mu.Lock()
	r.asBatches = append(r.asBatches, len(ids))
	r.mu.Unlock()
	out := make(map[string][]*sdwan.Assignment, len(ids))
	for _, id := range ids {
		out[id], _ = r.benchStore.Assignments(ctx, id)
	}
	return out, nil
}

// publishedBus records, per site, the policies and watermarks published (retained).
type publishedBus struct {
	mu       sync.Mutex
	policies map[string][]Policy
	marks    map[string]int
}

func (b *publishedBus) Subscribe(string, mqtt.Handler) error { return nil }
func (b *publishedBus) Close()                               {}
func (b *publishedBus) Publish(topic string, payload []byte, retained bool) error {
	site, kind, ok := telemetry.ParseTopic(topic)
	if !ok || !retained {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch kind {
	case telemetry.KindPolicy:
		var p Policy
		if err := json.Unmarshal(payload, &p); err != nil {
			return err
		}
		b.policies[site] = append(b.policies[site], p)
	case telemetry.KindStored:
		b.marks[site]++
	}
	return nil
}

// TestPublishAll: at start every site's policy and watermark go out, the sites and their
// assignments read 256 at a time when the store can (not two queries per site: at 10,000
// sites those were most of a restarted controller's CPU while its agents reconnected), and
// one at a time when it cannot. A site removed since the engine loaded it is skipped.
func TestPublishAll(t *testing.T) {
	for _, batched := range []bool{true, false} {
		name := map[bool]string{true: "batched", false: "one_by_one"}[batched]
		t.Run(name, func(t *testing.T) {
			const n = 300
			bus := &publishedBus{policies: map[string][]Policy{}, marks: map[string]int{}}
			be := newBenchEngine(t, n, bus)
			rc := &readCounter{benchStore: be.st}
			reads := &batchReads{readCounter: rc}
			if batched {
				be.e.store = reads
			} else {
				be.e.store = struct{ Store }{reads} // hides the batch reads
			}
			removed := be.st.order[7]
			delete(be.st.sites, removed)
			ids := append([]string(nil), be.st.order...)
			be.e.publishAll(context.Background(), ids)

			for _, id := range be.st.order {
				ps, marks := bus.policies[id], bus.marks[id]
				if id == removed {
					if len(ps) != 0 {
						t.Errorf("%s, removed: %d policies published", id, len(ps))
					}
					continue
				}
				if len(ps) != 1 || len(ps[0].Transports) != len(benchTransports) || len(ps[0].Policies) != 1 || ps[0].Policies[0].Policy != "pol_bench" {
					t.Errorf("%s: policies published %+v; want one with its transports and steering policy", id, ps)
				}
				if marks != 1 {
					t.Errorf("%s: %d watermarks published; want 1", id, marks)
				}
			}
			if batched {
				if rc.gets != 0 || reads.assignments != 0 || len(rc.batches) != 2 || rc.batches[0] != 256 || rc.batches[1] != n-256 || len(reads.asBatches) != 2 {
					t.Errorf("reads: %d GetSite, %d Assignments, SitesByID %v, AssignmentsOf %v; want batches of [256 %d] only",
						rc.gets, reads.assignments, rc.batches, reads.asBatches, n-256)
				}
			} else if rc.gets != n || len(rc.batches) != 0 {
				t.Errorf("reads without batches: %d GetSite, SitesByID %v; want %d and none", rc.gets, rc.batches, n)
			}
		})
	}
}
