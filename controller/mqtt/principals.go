package mqtt

import (
	"hash/maphash"
	"sync"
)

// principals maps usernames to their authenticated identity, in shards: every CONNECT writes
// it and every publish and subscribe reads it, and with one lock a whole fleet reconnecting
// queued behind each writer (in execution traces of 10,000 agents reconnecting, up to 300-585
// goroutines at once waited for that one lock, its holder often parked in a GC assist while
// growing the map; docs/benchmarks.md, "What stalls the CONNACKs").
type principals struct {
	seed   maphash.Seed
	once   sync.Once
	shards [principalShards]principalShard
}

const principalShards = 64

type principalShard struct {
	mu sync.RWMutex
	m  map[string]principal
}

func (ps *principals) seeded() maphash.Seed {
	ps.once.Do(func() { ps.seed = maphash.MakeSeed() })
	return ps.seed
}

func (ps *principals) shard(h uint64) *principalShard { return &ps.shards[h%principalShards] }

func (ps *principals) get(username []byte) (principal, bool) {
	sh := ps.shard(maphash.Bytes(ps.seeded(), username))
	sh.mu.RLock()
	p, ok := sh.m[string(username)]
	sh.mu.RUnlock()
	return p, ok
}

func (ps *principals) put(username string, p principal) {
	sh := ps.shard(maphash.String(ps.seeded(), username))
	sh.mu.Lock()
	if sh.m == nil {
		sh.m = make(map[string]principal)
	}
	sh.m[username] = p
	sh.mu.Unlock()
}

func (ps *principals) delete(username string) {
	sh := ps.shard(maphash.String(ps.seeded(), username))
	sh.mu.Lock()
	delete(sh.m, username)
	sh.mu.Unlock()
}
