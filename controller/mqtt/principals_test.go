package mqtt

import (
	"fmt"
	"sync"
	"testing"
)

// TestPrincipals: identities put from many goroutines at once (as CONNECTs do) are all found,
// each under its own username only, and a deleted one (Revoke) is gone while the rest stay.
func TestPrincipals(t *testing.T) {
	var ps principals
	const n = 2000
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				u := fmt.Sprintf("dev-%04d", i)
				ps.put(u, principal{username: u, site: "site-" + u})
				if p, ok := ps.get([]byte(u)); !ok || p.site != "site-"+u {
					t.Errorf("get(%s) right after put: %+v, %v", u, p, ok)
				}
			}
		}()
	}
	wg.Wait()
	for i := range n {
		u := fmt.Sprintf("dev-%04d", i)
		if p, ok := ps.get([]byte(u)); !ok || p.username != u || p.site != "site-"+u {
			t.Fatalf("get(%s): %+v, %v", u, p, ok)
		}
	}
	ps.delete("dev-0007")
	if _, ok := ps.get([]byte("dev-0007")); ok {
		t.Error("dev-0007 still there after delete")
	}
	if _, ok := ps.get([]byte("dev-0008")); !ok {
		t.Error("dev-0008 gone after deleting dev-0007")
	}
	if _, ok := ps.get([]byte("nobody")); ok {
		t.Error("an unknown username was found")
	}
	used := 0
	for i := range ps.shards {
		if len(ps.shards[i].m) > 0 {
			used++
		}
	}
	if used < principalShards/2 {
		t.Errorf("%d of %d shards used by %d usernames; want them spread", used, principalShards, n)
	}
}

func BenchmarkPrincipalGet(b *testing.B) {
	var ps principals
	for i := range 10000 {
		u := fmt.Sprintf("dev-%05d", i)
		ps.put(u, principal{username: u, site: "s"})
	}
	u := []byte("dev-04242")
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := ps.get(u); !ok {
			b.Fatal("not found")
		}
	}
}
