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

// readCounter counts the engine's reads of sites: one per site (GetSite) or in batches
// (SitesByID, as controller/store's).
type readCounter struct {
	*benchStore
	mu      sync.Mutex
	gets    int
	batches []int // sizes
}

func (r *readCounter) GetSite(ctx context.Context, id string) (*sdwan.Site, error) {
	r.mu.Lock()
	r.gets++
	r.mu.Unlock()
	return r.benchStore.GetSite(ctx, id)
}

func (r *readCounter) SitesByID(_ context.Context, ids []string) (map[string]*sdwan.Site, error) {
	r.mu.Lock()
	r.batches = append(r.batches, len(ids))
	r.mu.Unlock()
	out := make(map[string]*sdwan.Site, len(ids))
	for _, id := range ids {
		if s := r.sites[id]; s != nil {
			out[id] = s
		}
	}
	return out, nil
}

// watermarkBus records the watermarks published, by site.
type watermarkBus struct {
	mu    sync.Mutex
	marks map[string][]telemetry.Stored
}

func (b *watermarkBus) Subscribe(string, mqtt.Handler) error { return nil }
func (b *watermarkBus) Close()                               {}
func (b *watermarkBus) Publish(topic string, payload []byte, _ bool) error {
	site, kind, ok := telemetry.ParseTopic(topic)
	if !ok || kind != telemetry.KindStored {
		return nil
	}
	var s telemetry.Stored
	if err := json.Unmarshal(payload, &s); err != nil {
		return err
	}
	b.mu.Lock()
	b.marks[site] = append(b.marks[site], s)
	b.mu.Unlock()
	return nil
}

// TestSitesTaken: the sites of a partition that becomes this controller's are taken over in
// batches of 256 reads (not one GetSite per site at its next message): each starts from the
// watermark its previous owner stored, and that watermark goes out at once with this
// controller's boot (not at the next checkpoint), so that the agent sends again what the
// previous owner had not stored. Sites of other partitions, and sites this engine does not
// own, are left alone; a site taken over is not read again at its next report.
func TestSitesTaken(t *testing.T) {
	const n = 600
	bus := &watermarkBus{marks: map[string][]telemetry.Stored{}}
	be := newBenchEngine(t, n, bus)
	reads := &readCounter{benchStore: be.st}
	be.e.store = reads
	own := &setOwner{mine: map[string]bool{}}
	be.e.o.Owner = own
	taken := map[string]bool{}
	for i, id := range be.st.order {
		be.st.sites[id].StoredSeq = uint64(100 + i) // stored by the previous owner
		switch {
		case i%10 == 9: // in the partition, but still another controller's
			taken[id] = true
		case i%2 == 0: // the partition taken
			taken[id] = true
			own.set(id, true)
		default: // another partition, owned here already
			own.set(id, true)
			st := be.e.site(id)
			st.mu.Lock()
			st.owned = true
			st.mu.Unlock()
		}
	}
	be.e.takeOverSites(context.Background(), func(id string) bool { return taken[id] })

	var want int
	for i, id := range be.st.order {
		st := be.e.site(id)
		st.mu.Lock()
		owned, mark, stored := st.owned, st.win.mark, st.stored
		st.mu.Unlock()
		marks := bus.marks[id]
		if i%10 == 9 || i%2 == 1 {
			if i%10 == 9 && owned {
				t.Errorf("%s, owned by another controller, was taken over", id)
			}
			if len(marks) != 0 {
				t.Errorf("%s, not taken over: watermarks %v published", id, marks)
			}
			continue
		}
		want++
		if !owned || mark != uint64(100+i) || stored != uint64(100+i) {
			t.Errorf("%s after the takeover: owned %v, mark %d, stored %d; want owned at %d", id, owned, mark, stored, 100+i)
		}
		if len(marks) != 1 || marks[0].Seq != uint64(100+i) || marks[0].Boot != be.e.boot || marks[0].Device != be.st.sites[id].DeviceID {
			t.Errorf("%s: watermarks published %+v; want one at %d from this boot", id, marks, 100+i)
		}
	}
	// 300 taken: 256 + 44 (those of the partition another controller holds are not read).
	if reads.gets != 0 || len(reads.batches) != 2 || reads.batches[0] != 256 || reads.batches[1] != want-256 {
		t.Errorf("reads: %d GetSite, SitesByID batches %v; want none and [256 %d]", reads.gets, reads.batches, want-256)
	}
	if got := counter(be.e.m.takeovers); got != float64(want) {
		t.Errorf("edgewan_ingest_takeovers_total %v; want %d", got, want)
	}

	// Its next report finds the site owned: no read.
	be.gen.next(t)
	be.e.onTelemetry(be.gen.topics[0], be.gen.payloads[0])
	if reads.gets != 0 {
		t.Errorf("a report after the takeover read the site %d times; want 0", reads.gets)
	}
}
