package mqtt

import (
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/edgewan/edgewan/telemetry"
)

const testWait = 20 * time.Second

func testDispatcher(workers, queue int) *dispatcher {
	return newDispatcher(BusOptions{Workers: workers, QueueLen: queue, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, nil)
}

func TestOrderKey(t *testing.T) {
	for _, tc := range []struct{ topic, want string }{
		{"edgewan/v1/sites/site-a/telemetry", "edgewan/v1/sites/site-a"},
		{"edgewan/v1/sites/site-a/events", "edgewan/v1/sites/site-a"},
		{"edgewan/v1/sites/site-a", "edgewan/v1/sites/site-a"},
		{"other/topic", "other/topic"},
	} {
		if got := orderKey(tc.topic); got != tc.want {
			t.Errorf("orderKey(%q) = %q; want %q", tc.topic, got, tc.want)
		}
	}
}

// One site's messages, whatever their kind, are handled in order, one at a time.
func TestDispatcherOrderPerSite(t *testing.T) {
	d := testDispatcher(4, 2)
	const sites, n = 8, 500
	var mu sync.Mutex
	got := map[string][]int{}
	busy := map[string]bool{}
	h := func(topic string, payload []byte) {
		site, _, _ := telemetry.ParseTopic(topic)
		mu.Lock()
		if busy[site] {
			mu.Unlock()
			panic("two handlers at once for " + site)
		}
		busy[site] = true
		mu.Unlock()
		i, _ := strconv.Atoi(string(payload))
		mu.Lock()
		got[site] = append(got[site], i)
		busy[site] = false
		mu.Unlock()
	}
	kinds := append(append([]string{}, telemetry.UpKinds...), "other")
	for i := range n {
		for s := range sites {
			d.dispatch(h, telemetry.Topic(fmt.Sprintf("s%d", s), kinds[i%len(kinds)]), []byte(strconv.Itoa(i)))
		}
	}
	d.close() // runs everything queued
	for s := range sites {
		seq := got[fmt.Sprintf("s%d", s)]
		if len(seq) != n {
			t.Fatalf("site s%d: %d messages handled; want %d", s, len(seq), n)
		}
		for i, v := range seq {
			if v != i {
				t.Fatalf("site s%d: message %d handled as #%d; want in order", s, v, i)
			}
		}
	}
}

// Different sites are handled concurrently: a blocked handler of one site does not hold up
// another site on another worker.
func TestDispatcherSitesConcurrent(t *testing.T) {
	d := testDispatcher(2, 4)
	defer d.close()
	// Two sites on different workers.
	var a, b string
	for i := 0; b == ""; i++ {
		s := telemetry.Topic("s"+strconv.Itoa(i), "telemetry")
		switch {
		case a == "":
			a = s
		case d.shard(s) != d.shard(a):
			b = s
		}
	}
	release := make(chan struct{})
	done := make(chan struct{})
	d.dispatch(func(string, []byte) { <-release }, a, nil)
	d.dispatch(func(string, []byte) { close(done) }, b, nil)
	select {
	case <-done:
	case <-time.After(testWait):
		t.Fatal("a blocked site held up another site")
	}
	close(release)
}

func TestDispatcherSurvivesPanic(t *testing.T) {
	d := testDispatcher(1, 4)
	done := make(chan string, 1)
	d.dispatch(func(string, []byte) { panic("bad message") }, "a/b", nil)
	d.dispatch(func(topic string, _ []byte) { done <- topic }, "a/c", nil)
	select {
	case got := <-done:
		if got != "a/c" {
			t.Fatalf("handled %s", got)
		}
	case <-time.After(testWait):
		t.Fatal("the worker died with the panicking handler")
	}
	d.close()
	if d.dispatch(func(string, []byte) {}, "a/b", nil) {
		t.Fatal("dispatch after close accepted a message")
	}
}

func BenchmarkDispatch(b *testing.B) {
	d := testDispatcher(4, 256)
	topic := telemetry.Topic("site-a", telemetry.KindTelemetry)
	payload := []byte(`{"v":1}`)
	var wg sync.WaitGroup
	h := func(string, []byte) { wg.Done() }
	b.ReportAllocs()
	for b.Loop() {
		wg.Add(1)
		d.dispatch(h, topic, payload)
	}
	wg.Wait()
	d.close()
}

func BenchmarkACLCheck(b *testing.B) {
	topic := telemetry.Topic("site-a", telemetry.KindStatus)
	b.ReportAllocs()
	for b.Loop() {
		if !agentAllowed("site-a", topic, true) {
			b.Fatal("refused")
		}
	}
}
