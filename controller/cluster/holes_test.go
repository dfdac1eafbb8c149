package cluster

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/edgewan/edgewan/controller/ingest"
	"github.com/edgewan/edgewan/controller/mqtt"
	"github.com/edgewan/edgewan/controller/mqtt/natstest"
)

// The tests' hole repair (docs/benchmarks.md, "Hole requests after a NATS node's death"):
// EDGEWAN_TEST_HOLE_GRACE is the controllers' ingest.Options.HoleGrace (default: the
// product's; -1: no requests, as before them) and EDGEWAN_TEST_HOLE_AFTER the agents'
// holeAfter (default the product's 15 s), so that a run can be made as before the requests.
func testHoleGrace(t *testing.T) time.Duration {
	return envDuration(t, "EDGEWAN_TEST_HOLE_GRACE", ingest.DefaultHoleGrace)
}
func testHoleAfter(t *testing.T) time.Duration {
	return envDuration(t, "EDGEWAN_TEST_HOLE_AFTER", 15*time.Second)
}

func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	if s == "-1" {
		return -1
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, s, err)
	}
	return d
}

// historyComplete reads, from what the controllers stored (h.log), when each site's history
// became complete again after since: the time of the last report stored after since that
// filled a hole (a sequence never stored before, below one already stored). Sites without
// such a fill had no hole to wait for and are not in the result.
func (h *handled) historyComplete(since time.Time) map[string]time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]time.Duration{}
	for site, l := range h.log {
		seen := map[uint64]bool{}
		var top uint64
		for _, x := range l {
			if x.at.After(since) && !seen[x.seq] && x.seq < top {
				out[site] = x.at.Sub(since)
			}
			seen[x.seq] = true
			top = max(top, x.seq)
		}
	}
	return out
}

// spoolRecords is each agent's spool size (records held) now.
func (fl *agentFleet) spoolRecords() map[string]int {
	out := make(map[string]int, len(fl.spools))
	for id, sp := range fl.spools {
		out[id] = sp.Stats().Records
	}
	return out
}

// steadySpools is each agent's largest spool over d, as sizes says, sampled every 100 ms: its
// steady size under the test's load (reports wait for the next watermark), so d should span a
// flush interval of the controllers (the watermark's period).
func steadySpools(sizes func() map[string]int, d time.Duration) map[string]int {
	out := map[string]int{}
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) { // sampling
		for id, n := range sizes() {
			out[id] = max(out[id], n)
		}
	}
	return out
}

// spoolWatch notes, per agent, the last time its spool held more than its steady size.
type spoolWatch struct {
	stop  chan struct{}
	done  chan struct{}
	above map[string]time.Time
}

// watchSpools samples sizes every 100 ms until back.
func watchSpools(sizes func() map[string]int, steady map[string]int) *spoolWatch {
	w := &spoolWatch{stop: make(chan struct{}), done: make(chan struct{}), above: map[string]time.Time{}}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-w.stop:
				return
			case now := <-tick.C:
				for id, n := range sizes() {
					if n > steady[id] {
						w.above[id] = now
					}
				}
			}
		}
	}()
	return w
}

// back ends the watch and returns, per agent whose spool grew past its steady size, how long
// after since it was back to it for good.
func (w *spoolWatch) back(since time.Time) map[string]time.Duration {
	close(w.stop)
	<-w.done
	out := map[string]time.Duration{}
	for id, at := range w.above {
		if at.After(since) {
			out[id] = at.Sub(since) + 100*time.Millisecond
		}
	}
	return out
}

// spread is the largest and the median of ds ("-" when empty), and how many.
func spread(ds map[string]time.Duration) string {
	if len(ds) == 0 {
		return "none"
	}
	v := slices.Collect(maps.Values(ds))
	sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
	return fmt.Sprintf("%v (median %v, %d)", v[len(v)-1].Round(time.Millisecond), v[len(v)/2].Round(time.Millisecond), len(v))
}

// ledBy lists the JetStream assets whose leader is the node named dead, asked of the node at
// url (one that stays up): the streams (EDGEWAN_IN, NATS's MQTT streams) and EDGEWAN_IN's
// partition consumers. Which of them the dead node led decides where a node's death costs
// time (docs/scale-out.md, "A NATS node's death").
func ledBy(t *testing.T, url, dead string) []string {
	t.Helper()
	conn, err := nats.Connect(url, nats.UserInfo(natstest.User, natstest.Password), nats.NoReconnect())
	if err != nil {
		t.Fatalf("ledBy: %v", err)
	}
	defer conn.Close()
	js, err := jetstream.New(conn)
	if err != nil {
		t.Fatalf("ledBy: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var led []string
	streams := js.ListStreams(ctx)
	for si := range streams.Info() {
		if si.Cluster != nil && si.Cluster.Leader == dead {
			led = append(led, si.Config.Name)
		}
	}
	if st, err := js.Stream(ctx, mqtt.DefaultNATSStream); err == nil {
		cs := st.ListConsumers(ctx)
		for ci := range cs.Info() {
			if ci.Cluster != nil && ci.Cluster.Leader == dead {
				led = append(led, mqtt.DefaultNATSStream+"/"+ci.Name)
			}
		}
	}
	slices.Sort(led)
	return led
}
