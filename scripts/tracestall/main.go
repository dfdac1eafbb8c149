// Command tracestall reads a Go runtime execution trace (go tool trace's input, e.g. the
// restarted controller's from `PROFILE=dir TRACE=10s scripts/bench-reconnect.sh`) and prints
// where the goroutines were over time: P time by kind of work, the run queue, GC, and how many
// goroutines were blocked on what (the database pool, the broker's locks, GC assists), per
// bucket and in total. It answers "what stalls the CONNACKs" (docs/benchmarks.md).
//
//	go run ./scripts/tracestall [-bucket 500ms] [-stacks CATEGORY] trace.out
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"sort"
	"strings"
	"time"

	"golang.org/x/exp/trace"
)

var cats = []struct{ name, pat string }{
	{"gcworker", "runtime.gcBgMarkWorker"},
	{"subscribe", "TopicsIndex).Subscribe"},
	{"retain", "TopicsIndex).RetainMessage"},
	{"eventloop", "mochi-mqtt/server/v2.(*Server).eventLoop"},
	{"getall", "Clients).GetAll"},
	{"dbconn", "database/sql.(*DB).conn"},
	{"sqlite", "modernc.org/sqlite"},
	{"pbkdf2", "pbkdf2"},
	{"handshake", "crypto/tls.(*Conn).serverHandshake"},
	{"tlsio", "crypto/tls"},
	{"ingest", "controller/ingest"},
	{"inline", "controller/mqtt.(*Inline"},
	{"mochiconn", "mochi-mqtt/server/v2"},
	{"http", "net/http"},
}

func cat(st trace.Stack) string {
	var fs []string
	for f := range st.Frames() {
		fs = append(fs, f.Func)
	}
	for _, c := range cats {
		for _, f := range fs {
			if strings.Contains(f, c.pat) {
				return c.name
			}
		}
	}
	if len(fs) == 0 {
		return "nostack"
	}
	return "other:" + fs[len(fs)-1]
}

type gstate struct {
	state   trace.GoState
	since   trace.Time
	blocked string
	pat     string
}

var pats = []struct{ name, pat string }{
	{"db pool wait (credential lookup etc.)", "database/sql.(*DB).conn"},
	{"edgewan principals lock", "controller/mqtt.(*Broker).principal"},
	{"edgewan principals lock (CONNECT)", "controller/mqtt.(*hook).OnConnectAuthenticate"},
	{"mochi TopicsIndex.Subscribe", "TopicsIndex).Subscribe"},
	{"mochi retained read (Messages)", "TopicsIndex).Messages"},
	{"mochi Clients lock", "Clients)."},
	{"GC assist wait", "runtime.gcAssistAlloc"},
	{"context mutex (loadgen)", "context.(*cancelCtx).propagateCancel"},
	{"context mutex remove (loadgen)", "context.removeChild"},
}

func patOf(st trace.Stack) string {
	for f := range st.Frames() {
		for _, p := range pats {
			if strings.Contains(f.Func, p.pat) {
				return p.name
			}
		}
	}
	return ""
}

func main() {
	bucket := flag.Duration("bucket", 500*time.Millisecond, "the timeline's step")
	stacksOf := flag.String("stacks", "", "also print the commonest stacks of goroutines blocked in this category (e.g. mochiconn/sync)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: tracestall [-bucket d] [-stacks category] trace.out")
		os.Exit(2)
	}
	f, err := os.Open(flag.Arg(0))
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	if _, _, err := analyze(os.Stdout, f, *bucket, *stacksOf); err != nil {
		log.Fatal(err)
	}
}

// analyze prints the timeline and totals of the trace in in, and returns, for each entry of
// pats, the goroutine-nanoseconds spent blocked there and the most goroutines blocked there at once.
func analyze(out io.Writer, in io.Reader, bucketD time.Duration, stacksOf string) (map[string]float64, map[string]int, error) {
	bucket, stacksOf2 := &bucketD, &stacksOf
	patTot, patMax, patNow := map[string]float64{}, map[string]int{}, map[string]int{}
	r, err := trace.NewReader(in)
	if err != nil {
		return nil, nil, err
	}
	var t0 trace.Time
	first := true
	gs := map[trace.GoID]*gstate{}
	run := map[int]map[string]float64{}       // bucket -> cat -> ns running
	blockedNs := map[int]map[string]float64{} // bucket -> cat -> goroutine-ns blocked
	runnableNs := map[int]float64{}
	gcNs := map[int]float64{}
	assistNs := map[int]float64{}
	var gcStart, last trace.Time
	gcOn := false
	assists := map[trace.GoID]trace.Time{}
	stackCount := map[string]int{}
	B := float64(*bucket)
	add := func(m map[int]map[string]float64, from, to trace.Time, k string) {
		for a := from; a < to; {
			b := int(float64(a-t0) / B)
			end := t0 + trace.Time(float64(b+1)*B)
			if end > to {
				end = to
			}
			if m[b] == nil {
				m[b] = map[string]float64{}
			}
			m[b][k] += float64(end - a)
			a = end
		}
	}
	add1 := func(m map[int]float64, from, to trace.Time) {
		for a := from; a < to; {
			b := int(float64(a-t0) / B)
			end := t0 + trace.Time(float64(b+1)*B)
			if end > to {
				end = to
			}
			m[b] += float64(end - a)
			a = end
		}
	}
	for {
		ev, err := r.ReadEvent()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, err
		}
		if first {
			t0 = ev.Time()
			first = false
		}
		last = ev.Time()
		switch ev.Kind() {
		case trace.EventRangeBegin, trace.EventRangeActive:
			rg := ev.Range()
			if strings.HasPrefix(rg.Name, "GC concurrent mark") {
				gcOn, gcStart = true, ev.Time()
			}
			if rg.Name == "GC mark assist" {
				assists[ev.Goroutine()] = ev.Time()
			}
		case trace.EventRangeEnd:
			rg := ev.Range()
			if strings.HasPrefix(rg.Name, "GC concurrent mark") && gcOn {
				add1(gcNs, gcStart, ev.Time())
				gcOn = false
			}
			if rg.Name == "GC mark assist" {
				if s, ok := assists[ev.Goroutine()]; ok {
					add1(assistNs, s, ev.Time())
					delete(assists, ev.Goroutine())
				}
			}
		case trace.EventStateTransition:
			st := ev.StateTransition()
			if st.Resource.Kind != trace.ResourceGoroutine {
				continue
			}
			id := st.Resource.Goroutine()
			from, to := st.Goroutine()
			g := gs[id]
			if g == nil {
				g = &gstate{state: from, since: t0}
				gs[id] = g
			}
			now := ev.Time()
			c := cat(st.Stack)
			switch g.state {
			case trace.GoRunning:
				add(run, g.since, now, c)
			case trace.GoRunnable:
				add1(runnableNs, g.since, now)
			case trace.GoWaiting:
				add(blockedNs, g.since, now, g.blocked)
				if g.pat != "" {
					patTot[g.pat] += float64(now - g.since)
					patNow[g.pat]--
				}
			}
			g.pat = ""
			if to == trace.GoWaiting {
				g.blocked = c + "/" + st.Reason
				if st.Reason != "network" && st.Reason != "select" || strings.Contains(c, "dbconn") {
					if g.pat = patOf(st.Stack); g.pat != "" {
						patNow[g.pat]++
						if patNow[g.pat] > patMax[g.pat] {
							patMax[g.pat] = patNow[g.pat]
						}
					}
				}
				if *stacksOf2 != "" && strings.HasPrefix(g.blocked, *stacksOf2) {
					var sb strings.Builder
					for fr := range st.Stack.Frames() {
						fmt.Fprintf(&sb, "  %s\n", fr.Func)
					}
					stackCount[sb.String()]++
				}
			}
			g.state, g.since = to, now
		}
	}
	nb := int(float64(last-t0)/B) + 1
	fmt.Fprintf(out, "trace %.2f s, buckets of %.0f ms\n", float64(last-t0)/1e9, B/1e6)
	printTotals(out, "CPU totals (core-s):", run, "%.3f")
	printTotals(out, "blocked totals (goroutine-s):", blockedNs, "%.1f")
	cols := []string{"handshake", "tlsio", "mochiconn", "sqlite", "dbconn", "pbkdf2", "subscribe", "retain", "eventloop", "getall", "ingest", "inline", "gcworker"}
	fmt.Fprintf(out, "\n%6s %5s %5s %5s %6s |", "t", "cores", "gc%", "asst", "runq")
	for _, c := range cols {
		fmt.Fprintf(out, " %6.6s", c)
	}
	fmt.Fprintf(out, " | blocked: dbconn subscr mutex(other)\n")
	for b := 0; b < nb; b++ {
		var all float64
		for _, v := range run[b] {
			all += v
		}
		fmt.Fprintf(out, "%6.2f %5.2f %5.0f %5.2f %6.0f |", float64(b)*B/1e9, all/B, 100*gcNs[b]/B, assistNs[b]/B, runnableNs[b]/B)
		for _, c := range cols {
			fmt.Fprintf(out, " %6.2f", run[b][c]/B)
		}
		var db, sub, mu float64
		for k, v := range blockedNs[b] {
			switch {
			case strings.HasPrefix(k, "dbconn"):
				db += v
			case strings.HasPrefix(k, "subscribe"):
				sub += v
			case strings.Contains(k, "sync"):
				mu += v
			}
		}
		fmt.Fprintf(out, " | %6.0f %6.0f %6.0f\n", db/B, sub/B, mu/B)
	}
	fmt.Fprintln(out, "\nblocked on (goroutine-s total / most at once):")
	for _, p := range pats {
		fmt.Fprintf(out, "  %-40s %8.1f %6d\n", p.name, patTot[p.name]/1e9, patMax[p.name])
	}
	if *stacksOf2 != "" {
		counts := make(map[string]float64, len(stackCount))
		for k, v := range stackCount {
			counts[k] = float64(v)
		}
		for _, x := range largest(counts, 6) {
			fmt.Fprintf(out, "%.0f x\n%s\n", x.v, x.k)
		}
	}
	return patTot, patMax, nil
}

// printTotals prints the 25 largest categories of per-bucket nanosecond totals, in seconds.
func printTotals(out io.Writer, title string, buckets map[int]map[string]float64, valueFmt string) {
	tot := map[string]float64{}
	for _, m := range buckets {
		for k, v := range m {
			tot[k] += v
		}
	}
	fmt.Fprintln(out, title)
	for _, x := range largest(tot, 25) {
		fmt.Fprintf(out, "  %-60s "+valueFmt+"\n", x.k, x.v/1e9)
	}
}

type kv struct {
	k string
	v float64
}

// largest returns m's n largest entries, largest first.
func largest(m map[string]float64, n int) []kv {
	ks := make([]kv, 0, len(m))
	for k, v := range m {
		ks = append(ks, kv{k, v})
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i].v > ks[j].v })
	return ks[:min(len(ks), n)]
}
