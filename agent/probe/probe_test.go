package probe

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/bpf"

	"github.com/edgewan/edgewan/agent/internal/netlab"
)

// The probes must run inside the lab's branch namespace, where sockets are opened. The test
// binary re-runs itself there (childEnv set) as TestChild, which probes and prints each Result
// as a JSON line.
const childEnv = "EDGEWAN_PROBE_CHILD"

type childResult struct {
	Result
	At time.Time
}

func TestChild(t *testing.T) {
	spec := os.Getenv(childEnv)
	if spec == "" {
		return // only meaningful when re-run by runChild
	}
	var c struct {
		Config
		N int
	}
	if err := json.Unmarshal([]byte(spec), &c); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := 0
	enc := json.NewEncoder(os.Stdout)
	err := Run(ctx, c.Config, func(r Result) {
		if n >= c.N {
			return // cancelled: what is still in flight is not part of the run
		}
		_ = enc.Encode(childResult{r, time.Now()})
		if r.Final() {
			if n++; n == c.N {
				cancel()
			}
		}
	})
	if err != nil && ctx.Err() == nil {
		t.Fatal(err)
	}
}

// runChild probes with c in the branch namespace until n final results came, and returns
// every result in order.
func runChild(t *testing.T, lab *netlab.Lab, c Config, n int) []childResult {
	t.Helper()
	rs, err := runChildErr(lab, c, n)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// runChildErr is runChild for use off the test's goroutine.
func runChildErr(lab *netlab.Lab, c Config, n int) ([]childResult, error) {
	spec, _ := json.Marshal(struct {
		Config
		N int
	}{c, n})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := lab.Branch.Command(ctx, os.Args[0], "-test.run", "^TestChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+string(spec))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	var rs []childResult
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		var r childResult
		if json.Unmarshal(sc.Bytes(), &r) == nil {
			rs = append(rs, r)
		}
	}
	if err := cmd.Wait(); err != nil {
		return rs, fmt.Errorf("probe child: %w (after %d results)", err, len(rs))
	}
	return rs, nil
}

func finals(rs []childResult) (answered, lost int) {
	for _, r := range rs {
		switch {
		case r.Lost:
			lost++
		case r.Final():
			answered++
		}
	}
	return
}

func TestICMPThroughTransport(t *testing.T) {
	lab := netlab.New(t, netlab.Spec{Transports: 2})
	w := lab.WANs[0]
	base := Config{Targets: []string{w.Gateway.String()}, Interval: 20 * time.Millisecond, Timeout: 400 * time.Millisecond,
		Interface: w.BranchIf}

	t.Run("delay", func(t *testing.T) {
		w.Responder.Set(netlab.Impairment{Delay: 40 * time.Millisecond})
		rs := runChild(t, lab, base, 20)
		if a, l := finals(rs); a != 20 || l != 0 {
			t.Fatalf("answered %d lost %d, want 20/0", a, l)
		}
		for _, r := range rs {
			if r.Final() && !r.Lost && (r.RTT < 40*time.Millisecond || r.RTT > 300*time.Millisecond) {
				t.Fatalf("RTT %v with a 40ms delay", r.RTT)
			}
		}
	})
	t.Run("loss", func(t *testing.T) {
		w.Responder.Set(netlab.Impairment{Loss: 1})
		rs := runChild(t, lab, base, 10)
		if a, l := finals(rs); a != 0 || l != 10 {
			t.Fatalf("answered %d lost %d, want 0/10", a, l)
		}
		// each loss was suspected first, well before the 400ms timeout (the suspect deadline
		// falls back to the timeout only before the first RTT is known)
		suspects := map[time.Time]time.Time{}
		for _, r := range rs {
			if r.Suspect {
				suspects[r.Sent] = r.At
			}
		}
		for _, r := range rs {
			if r.Lost {
				if _, ok := suspects[r.Sent]; !ok {
					t.Fatalf("probe sent %v lost without a suspect first", r.Sent)
				}
			}
		}
	})
	t.Run("suspect-before-timeout", func(t *testing.T) {
		// Fast answers first (RTT known), then the link dies: suspects come at the RTO floor.
		w.Responder.Set(netlab.Impairment{})
		c := base
		c.Timeout = 2 * time.Second
		c.MinSuspect = 100 * time.Millisecond
		start := w.Responder.Stats().Replies
		done := make(chan struct{})
		var rs []childResult
		go func() { defer close(done); rs = runChild(t, lab, c, 40) }()
		waitFor(t, func() bool { return w.Responder.Stats().Replies >= start+15 })
		w.Responder.Set(netlab.Impairment{Loss: 1})
		<-done
		var early, earlyLost int
		for _, r := range rs {
			if r.Suspect && r.At.Sub(r.Sent) < 500*time.Millisecond {
				early++
			}
			// lost at 3 suspect deadlines (300 ms here), not at the 2 s timeout
			if r.Lost && r.At.Sub(r.Sent) < time.Second {
				earlyLost++
			}
		}
		if early == 0 || earlyLost == 0 {
			for _, r := range rs {
				t.Logf("%+v", r)
			}
			t.Fatalf("after the link died: %d early suspects, %d early losses in %d results", early, earlyLost, len(rs))
		}
		// overdue (the agent's dead-link evidence) no sooner than SRTT + DelayStep + 30 ms
		var overdue int
		for _, r := range rs {
			if r.Overdue {
				overdue++
				if d := r.At.Sub(r.Sent); d < 280*time.Millisecond {
					t.Fatalf("overdue after %v, before 250ms + 30ms", d)
				}
			}
		}
		if overdue == 0 {
			t.Fatal("no probe overdue after the link died")
		}
	})
	// A delay step: up to DelayStep, nothing is overdue; beyond the loss deadline, the answers
	// come Late, after their Lost, with their RTT.
	step := func(t *testing.T, delay time.Duration) []childResult {
		w.Responder.Set(netlab.Impairment{})
		c := base
		c.Timeout = time.Second
		start := w.Responder.Stats().Replies
		done := make(chan struct{})
		var rs []childResult
		go func() { defer close(done); rs = runChild(t, lab, c, 40) }()
		waitFor(t, func() bool { return w.Responder.Stats().Replies >= start+15 })
		w.Responder.Set(netlab.Impairment{Delay: delay})
		<-done
		return rs
	}
	t.Run("delay-step-200ms", func(t *testing.T) {
		for _, r := range step(t, 200*time.Millisecond) {
			if r.Overdue || r.Lost {
				t.Fatalf("a 200 ms delay step: %+v", r)
			}
		}
	})
	t.Run("delay-step-350ms", func(t *testing.T) {
		rs := step(t, 350*time.Millisecond)
		lost := map[time.Time]bool{}
		var late int
		for _, r := range rs {
			switch {
			case r.Lost:
				lost[r.Sent] = true
			case r.Late:
				if !lost[r.Sent] || r.RTT < 350*time.Millisecond {
					t.Fatalf("late answer %+v: not after its loss, or too fast", r)
				}
				late++
			}
		}
		if late == 0 {
			t.Fatalf("no late answer among %d results (%d lost)", len(rs), len(lost))
		}
	})
	t.Run("down-link", func(t *testing.T) {
		w.Responder.Set(netlab.Impairment{})
		if err := w.SetLink(false); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = w.SetLink(true) }()
		rs := runChild(t, lab, base, 5)
		if a, l := finals(rs); a != 0 || l != 5 {
			t.Fatalf("answered %d lost %d on a down link", a, l)
		}
	})
}

// Bound to transport 2, probes never reach transport 1's responder.
func TestICMPBinding(t *testing.T) {
	lab := netlab.New(t, netlab.Spec{Transports: 2})
	before := lab.WANs[0].Responder.Stats().Requests
	rs := runChild(t, lab, Config{Targets: []string{lab.WANs[1].Gateway.String()}, Interval: 20 * time.Millisecond,
		Interface: lab.WANs[1].BranchIf}, 10)
	if a, _ := finals(rs); a != 10 {
		t.Fatalf("answered %d of 10", a)
	}
	if got := lab.WANs[0].Responder.Stats().Requests; got != before {
		t.Fatalf("transport 1 saw %d requests", got-before)
	}
}

func TestTCPProbe(t *testing.T) {
	lab := netlab.New(t, netlab.Spec{Transports: 1})
	w := lab.WANs[0]
	c := Config{Method: TCP, Targets: []string{w.Gateway.String() + ":9"}, Interval: 20 * time.Millisecond,
		Timeout: 300 * time.Millisecond, Interface: w.BranchIf}
	// nothing listens: the RST proves the path works
	if a, l := finals(runChild(t, lab, c, 5)); a != 5 || l != 0 {
		t.Fatalf("refused connects: answered %d lost %d", a, l)
	}
	if err := w.SetLink(false); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.SetLink(true) }()
	if a, l := finals(runChild(t, lab, c, 3)); a != 0 || l != 3 {
		t.Fatalf("down link: answered %d lost %d", a, l)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []Config{
		{},
		{Targets: []string{"not-an-ip"}},
		{Method: TCP, Targets: []string{"198.18.1.1"}},
		{Method: "udp", Targets: []string{"198.18.1.1"}},
		{Method: HTTP, Targets: []string{"198.18.1.1:80"}},
	} {
		if err := Run(context.Background(), c, func(Result) {}); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 20s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestHTTPProbe(t *testing.T) {
	lab := netlab.New(t, netlab.Spec{Transports: 1})
	w := lab.WANs[0]
	// a web server in the WAN namespace, on the gateway's address
	var ln net.Listener
	if err := w.NS.Do(func() (err error) {
		ln, err = net.Listen("tcp", net.JoinHostPort(w.Gateway.String(), "8080"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var hits atomic.Int64
	srv := &http.Server{Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		rw.WriteHeader(http.StatusServiceUnavailable) // any answer proves the path
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	c := Config{Method: HTTP, Targets: []string{"http://" + w.Gateway.String() + ":8080/health"}, Interval: 50 * time.Millisecond,
		Timeout: 500 * time.Millisecond, Interface: w.BranchIf}
	if a, l := finals(runChild(t, lab, c, 5)); a != 5 || l != 0 {
		t.Fatalf("answered %d lost %d", a, l)
	}
	if hits.Load() < 5 {
		t.Fatalf("the server saw %d requests", hits.Load())
	}
	if err := w.SetLink(false); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.SetLink(true) }()
	if a, l := finals(runChild(t, lab, c, 3)); a != 0 || l != 3 {
		t.Fatalf("down link: answered %d lost %d", a, l)
	}
}

// The transport's own interface going down makes sends fail: those probes are lost at once
// (the failed sends are reported as lost, so they must not vanish without a result).
func TestICMPInterfaceDown(t *testing.T) {
	lab := netlab.New(t, netlab.Spec{Transports: 1})
	w := lab.WANs[0]
	h, err := lab.Branch.Handle()
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	link, err := h.LinkByName(w.BranchIf)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = h.LinkSetUp(link) }()
	start := w.Responder.Stats().Replies
	type res struct {
		rs  []childResult
		err error
	}
	done := make(chan res, 1)
	go func() {
		rs, err := runChildErr(lab, Config{Targets: []string{w.Gateway.String()}, Interval: 20 * time.Millisecond,
			Timeout: 400 * time.Millisecond, Interface: w.BranchIf}, 30)
		done <- res{rs, err}
	}()
	waitFor(t, func() bool { return w.Responder.Stats().Replies >= start+5 })
	if err := h.LinkSetDown(link); err != nil {
		t.Fatal(err)
	}
	r := <-done // without results for the failed sends the child runs into its 60 s deadline
	if r.err != nil {
		t.Fatalf("%v: the failed sends gave no results", r.err)
	}
	a, l := finals(r.rs)
	if a < 5 || l == 0 || a+l != 30 {
		t.Fatalf("answered %d lost %d of 30", a, l)
	}
}

// TestPace probes a loopback TCP listener: SetFast speeds probing up at once, and the budget
// bounds the burst (counts, with bounds loose enough for a loaded machine).
func TestPace(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	c := Config{Method: TCP, Targets: []string{ln.Addr().String()}, Interval: 200 * time.Millisecond, Timeout: time.Second,
		FastInterval: 10 * time.Millisecond, FastBudget: 300 * time.Millisecond}
	var mu sync.Mutex
	var sent []time.Time
	pace := NewPace()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- RunPaced(ctx, c, pace, func(r Result) {
			if r.Final() {
				mu.Lock()
				sent = append(sent, r.Sent)
				mu.Unlock()
			}
		})
	}()
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(sent) }
	waitFor(t, func() bool { return count() >= 3 })
	before := count()
	start := time.Now()
	pace.SetFast(true)
	waitFor(t, func() bool { return count() >= before+20 }) // 20 probes: 4 s at the normal rate
	fastFor := time.Since(start)
	time.Sleep(time.Second) // budget spent: back near the normal rate
	pace.SetFast(false)
	n := count()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if fastFor > 2*time.Second {
		t.Errorf("20 probes took %v at the fast rate", fastFor)
	}
	// the budget allows 300 ms of 10 ms probes (30), refilled at 1/19 of the time elapsed,
	// plus the normal rate: over about 1.5 s, fewer than 30 + 5 + 8 + slack
	if extra := n - before; extra > 50 {
		t.Errorf("%d probes in %v: over the budget", extra, time.Since(start))
	}
}

// The socket filter passes echo replies with the prober's identifier only, past an IPv4
// header of any length (options) or straight at the ICMPv6 header.
func TestEchoFilter(t *testing.T) {
	const id = 0xbeef
	echo := func(typ byte, ident uint16) []byte {
		return []byte{typ, 0, 0, 0, byte(ident >> 8), byte(ident), 0, 1, 't', 'a', 'g'}
	}
	ip4 := func(ihl int, icmp []byte) []byte {
		h := make([]byte, 4*ihl)
		h[0] = 0x40 | byte(ihl)
		h[9] = 1
		return append(h, icmp...)
	}
	for _, c := range []struct {
		name string
		v6   bool
		pkt  []byte
		pass bool
	}{
		{"v4 reply", false, ip4(5, echo(0, id)), true},
		{"v4 reply, IP options", false, ip4(7, echo(0, id)), true},
		{"v4 reply to another prober", false, ip4(5, echo(0, id+1)), false},
		{"v4 request", false, ip4(5, echo(8, id)), false},
		{"v4 unreachable", false, ip4(5, echo(3, id)), false},
		{"v6 reply", true, echo(129, id), true},
		{"v6 reply to another prober", true, echo(129, 1), false},
		{"v6 request", true, echo(128, id), false},
		{"v4 reply on the v6 filter", true, echo(0, id), false},
		{"truncated", false, ip4(5, []byte{0, 0}), false},
	} {
		prog, ok := bpf.Disassemble(echoFilter(id, c.v6))
		if !ok {
			t.Fatal("the filter does not disassemble")
		}
		vm, err := bpf.NewVM(prog)
		if err != nil {
			t.Fatal(err)
		}
		n, err := vm.Run(c.pkt)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if (n > 0) != c.pass {
			t.Errorf("%s: the filter keeps %d bytes, want pass=%v", c.name, n, c.pass)
		}
	}
}

// ICMPv6 echo through the same socket code: the branch namespace's kernel answers ::1 (and
// 127.0.0.1 alongside, the two families probed in turn from one prober).
func TestICMPv6Loopback(t *testing.T) {
	lab := netlab.New(t, netlab.Spec{Transports: 1})
	rs := runChild(t, lab, Config{Targets: []string{"::1", "127.0.0.1"}, Interval: 20 * time.Millisecond, Timeout: 400 * time.Millisecond}, 10)
	if a, l := finals(rs); a != 10 || l != 0 {
		t.Fatalf("answered %d lost %d of 10", a, l)
	}
	per := map[string]int{}
	for _, r := range rs {
		if r.Final() {
			per[r.Target]++
		}
	}
	if per["::1"] != 5 || per["127.0.0.1"] != 5 {
		t.Fatalf("answers per target: %v", per)
	}
}
