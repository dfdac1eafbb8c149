package engine

import (
	"reflect"
	"testing"
	"time"

	"github.com/edgewan/edgewan/agent/config"
	"github.com/edgewan/edgewan/telemetry"
)

// The transports the agent runs: the controller's, cheapest first, with the local file's
// fields over them, then those only the file names; the gateway is the default probe target.
func TestMergeTransports(t *testing.T) {
	e := &Engine{cfg: &config.Config{
		Probe: config.ProbeDefaults{Interval: 200 * time.Millisecond, Timeout: time.Second},
		Transports: []config.Transport{
			{Name: "lte", Interface: "wwan1", Method: "tcp", ProbeTargets: []string{"198.18.9.9:443"}, Interval: time.Second},
			{Name: "local", Interface: "eth9", Gateway: "198.18.7.1", Method: "icmp"},
		},
	}}
	p := &telemetry.Policy{Transports: []telemetry.PolicyTransport{
		{Name: "mpls", Interface: "eth1", Gateway: "198.18.1.1"},
		{Name: "lte", Interface: "wwan0", Gateway: "198.18.2.1", ProbeTargets: []string{"198.18.100.1"}},
	}}
	got := e.mergeTransports(p)
	want := []transportSpec{
		{Name: "mpls", Interface: "eth1", Gateway: "198.18.1.1", Method: "icmp", Targets: []string{"198.18.1.1"}, Interval: 200 * time.Millisecond, Timeout: time.Second},
		{Name: "lte", Interface: "wwan1", Gateway: "198.18.2.1", Method: "tcp", Targets: []string{"198.18.9.9:443"}, Interval: time.Second, Timeout: time.Second},
		{Name: "local", Interface: "eth9", Gateway: "198.18.7.1", Method: "icmp", Targets: []string{"198.18.7.1"}, Interval: 200 * time.Millisecond, Timeout: time.Second},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	// before any policy: the file's only
	if got := e.mergeTransports(nil); len(got) != 2 || got[0].Name != "lte" || got[1].Name != "local" {
		t.Fatalf("without a policy: %+v", got)
	}
}

func TestSpooledMessage(t *testing.T) {
	b, err := appendMessage(nil, telemetry.KindAcks, map[string]int{"v": 1})
	if err != nil {
		t.Fatal(err)
	}
	kind, payload, ok := splitMessage(b)
	if !ok || kind != telemetry.KindAcks || string(payload) != `{"v":1}` {
		t.Fatalf("%q %q %v", kind, payload, ok)
	}
	if _, _, ok := splitMessage([]byte("garbage")); ok {
		t.Fatal("a record without a kind was accepted")
	}
}

// TestBackoff: full jitter, each wait within [0, min(cap, base*2^n)), spread over that range
// (not the same value every time, which would keep a fleet in lockstep), and back to the base
// after a reset.
func TestBackoff(t *testing.T) {
	b := backoff{base: 500 * time.Millisecond, cap: 8 * time.Second}
	for n := range 40 {
		limit := min(b.cap, b.base<<min(n, 16))
		seen := map[time.Duration]bool{}
		for range 20 {
			c := b
			d := c.next()
			if d < 0 || d >= limit {
				t.Fatalf("attempt %d: wait %v outside [0, %v)", n, d, limit)
			}
			seen[d] = true
		}
		if len(seen) < 10 {
			t.Fatalf("attempt %d: only %d distinct waits in 20: no jitter", n, len(seen))
		}
		b.next()
	}
	b.reset()
	if d := b.next(); d >= b.base {
		t.Fatalf("after reset: wait %v, want < %v", d, b.base)
	}
}
