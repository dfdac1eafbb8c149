package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/edgewan/edgewan/agent/backoff"
)

// The reconnect scenario (--reconnect): loadgen runs the controller itself (--controller-cmd),
// connects the agents, kills the controller, starts it again after --outage, and measures how
// the fleet comes back. Every simulated agent reconnects on the agent's own schedule
// (package agent/backoff, as agent/engine's connectLoop): a wait drawn before every attempt, the
// first right after the connection drops, reset only by a successful connection.

// bucketWidth is the resolution of the reconnect rate.
const bucketWidth = 100 * time.Millisecond

// readyTimeout is how long the controller, started or restarted, may take to answer /readyz.
const readyTimeout = 3 * time.Minute

// controllerProc is the controller loadgen runs, as a child, for the reconnect scenario.
type controllerProc struct {
	args    []string
	logPath string
	cmd     *exec.Cmd
	exited  chan struct{}
}

func (p *controllerProc) start() error {
	lf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("controller log: %w", err)
	}
	cmd := exec.Command(p.args[0], p.args[1:]...)
	cmd.Stdout, cmd.Stderr = lf, lf
	if err := cmd.Start(); err != nil {
		lf.Close()
		return fmt.Errorf("starting the controller %q: %w", p.args[0], err)
	}
	p.cmd, p.exited = cmd, make(chan struct{})
	go func() {
		_ = cmd.Wait()
		lf.Close()
		close(p.exited)
	}()
	return nil
}

// stop sends sig and waits for the process to exit (SIGKILL after 30 s).
func (p *controllerProc) stop(sig syscall.Signal) {
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// waitReady polls GET /readyz every 10 ms until it answers 200 and returns when it first did.
func (p *controllerProc) waitReady(ctx context.Context, hc *http.Client, base string, timeout time.Duration) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/readyz", nil)
		resp, err := hc.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Now(), nil
			}
		}
		select {
		case <-p.exited:
			return time.Time{}, fmt.Errorf("the controller exited before it was ready (see %s)", p.logPath)
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("the controller not ready within %s (see %s): %w", timeout, p.logPath, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// timeline counts events in bucketWidth buckets from t0.
type timeline struct {
	t0 time.Time
	b  []atomic.Int64
}

func newTimeline(t0 time.Time, span time.Duration) *timeline {
	return &timeline{t0: t0, b: make([]atomic.Int64, span/bucketWidth+1)}
}

func (tl *timeline) add(t time.Time) {
	i := int(t.Sub(tl.t0) / bucketWidth)
	tl.b[min(max(i, 0), len(tl.b)-1)].Add(1)
}

// counts returns the buckets from `from` to `to` (inclusive).
func (tl *timeline) counts(from, to time.Time) []int64 {
	i, j := max(int(from.Sub(tl.t0)/bucketWidth), 0), min(int(to.Sub(tl.t0)/bucketWidth), len(tl.b)-1)
	var out []int64
	for ; i <= j; i++ {
		out = append(out, tl.b[i].Load())
	}
	return out
}

// reconnectResults is what the reconnect scenario measured.
type reconnectResults struct {
	agents                  int
	signal                  string
	outage, startup         time.Duration // kill to restart; restart to /readyz 200
	notLost, notBack        int           // agents whose connection survived the kill; agents not back in time
	earlyBack               int           // back before /readyz answered 200 (counted as 0 s)
	gcLimit                 int64         // loadgen's --gc-limit
	loadgenGCs              uint32        // loadgen's collections from the kill to the end
	loadgenHeap             uint64        // loadgen's heap at the end
	back                    []time.Duration
	attempts, attemptsAfter int64
	resumed                 int64 // reconnects that resumed their TLS session
	// notResumed says, for each reconnect that did not resume, what the agent saw; unexplained
	// counts those that held a ticket and had no attempt fail past the TCP connect (crypto/tls
	// drops a ticket after a failed handshake that offered it, RFC 5077 3.2).
	notResumed               []string
	unexplained              int
	failedDown, failedAfter  int64
	failedKinds              map[string]int64
	firstFailure             string
	attemptRate, successRate rateStats // per bucket from ready until the last agent was back
	perSecond                []int64   // reconnects in each second after ready
	lostSpread               time.Duration
	// CPU from the restart to the last agent back, in cores: the controller (all of its new
	// process), loadgen, the whole machine (others' jobs included).
	ctlCores, genCores, machineCores float64
	window                           time.Duration
}

// rateStats are a timeline's buckets as rates per second.
type rateStats struct{ peak, p99, mean float64 }

func rates(counts []int64) rateStats {
	if len(counts) == 0 {
		return rateStats{}
	}
	s := slices.Clone(counts)
	slices.Sort(s)
	var sum int64
	for _, c := range s {
		sum += c
	}
	per := float64(time.Second / bucketWidth)
	k := (99*len(s)+99)/100 - 1
	return rateStats{peak: per * float64(s[len(s)-1]), p99: per * float64(s[max(k, 0)]), mean: per * float64(sum) / float64(len(s))}
}

// peakPer returns the largest count in any window of n consecutive buckets.
func peakPer(counts []int64, n int) int64 {
	var best, run int64
	for i, c := range counts {
		run += c
		if i >= n {
			run -= counts[i-n]
		}
		best = max(best, run)
	}
	return best
}

func failureKind(err error) string {
	var ne interface{ Timeout() bool }
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "connection reset"
	case errors.As(err, &ne) && ne.Timeout(), errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case strings.Contains(err.Error(), "CONNACK: refused"):
		return "CONNACK refused"
	default:
		return "other"
	}
}

// reconnectScenario kills the controller with o.KillSignal, starts it again after o.Outage and
// waits until every agent is back (at most o.ReconnectTimeout after the controller is ready).
func reconnectScenario(ctx context.Context, o options, ctl *controllerProc, hc *http.Client, agents []*agent, addr string) (*reconnectResults, error) {
	sig := syscall.SIGKILL
	if o.KillSignal == "TERM" {
		sig = syscall.SIGTERM
	}
	r := &reconnectResults{agents: len(agents), signal: "SIG" + o.KillSignal, failedKinds: map[string]int64{}, gcLimit: o.GCLimit}
	killAt := time.Now()
	attempts := newTimeline(killAt, o.Outage+readyTimeout+o.ReconnectTimeout)
	success := newTimeline(killAt, o.Outage+readyTimeout+o.ReconnectTimeout)
	lostAt := make([]time.Time, len(agents))
	backAt := make([]time.Time, len(agents))
	var (
		readyAt   atomic.Int64 // UnixNano; 0 until /readyz answered
		failMu    sync.Mutex
		nAttempts atomic.Int64
		resumed   atomic.Int64 // reconnects that resumed their TLS session
	)
	fail := func(err error, at time.Time) {
		failMu.Lock()
		defer failMu.Unlock()
		if ra := readyAt.Load(); ra != 0 && at.UnixNano() >= ra {
			r.failedAfter++
			r.failedKinds[failureKind(err)]++
			if r.firstFailure == "" {
				r.firstFailure = err.Error()
			}
		} else {
			r.failedDown++
		}
	}

	rctx, stopAgents := context.WithCancel(ctx)
	defer stopAgents()
	var wg sync.WaitGroup
	for i, ag := range agents {
		if ag.c == nil {
			continue
		}
		down := ag.down
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each agent's own context, made once here: a connect timeout derived from rctx
			// itself would register with rctx's one mutex at every attempt, and 10,000 agents
			// contending for it (its holder parked in a GC assist, the next in line waiting in a
			// run queue of thousands) stalled loadgen for seconds, which the figures then
			// showed as seconds without a CONNACK (docs/benchmarks.md, "What stalls the
			// CONNACKs"). Real agents share nothing.
			actx, acancel := context.WithCancel(rctx)
			defer acancel()
			select {
			case <-down:
			case <-actx.Done():
				return
			}
			lostAt[i] = time.Now()
			hadTicket := ag.hasTicket()
			var failures []string    // of this agent's attempts, the kinds other than refused
			b := backoff.Reconnect() // as agent/engine's connectLoop: a wait before every attempt
			for {
				t := time.NewTimer(b.Next())
				select {
				case <-t.C:
				case <-actx.Done():
					t.Stop()
					return
				}
				now := time.Now()
				attempts.add(now)
				nAttempts.Add(1)
				cctx, cancel := context.WithTimeout(actx, 10*time.Second) // the agent's ConnectTimeout
				err := ag.connect(cctx, addr, o.CleanSession)
				cancel()
				if err == nil {
					backAt[i] = time.Now()
					success.add(backAt[i])
					if ag.c.conn.ConnectionState().DidResume {
						resumed.Add(1)
					} else {
						failMu.Lock()
						r.notResumed = append(r.notResumed, fmt.Sprintf("%s: ticket at the drop %v, failed attempts other than refused %v", ag.ss.Name, hadTicket, failures))
						if hadTicket && len(failures) == 0 {
							r.unexplained++
						}
						failMu.Unlock()
					}
					return
				}
				if actx.Err() != nil {
					return
				}
				// Refused connections and refused CONNECTs (after a completed handshake) cost no
				// ticket; only a handshake that failed does.
				if k := failureKind(err); k != "connection refused" && k != "CONNACK refused" {
					failures = append(failures, fmt.Sprintf("%s %.2f s after the kill (%v)", k, time.Since(killAt).Seconds(), err))
				}
				fail(err, time.Now())
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	// loadgen's 10,000 agents share one heap, and its collections stalled them all at once:
	// thousands of goroutines parked in GC assists for seconds (execution traces,
	// docs/benchmarks.md "What stalls the CONNACKs"), which the figures showed as seconds
	// without a CONNACK. Real agents each have their own small heap: collect only past
	// --gc-limit until the fleet is back.
	var gcBefore runtime.MemStats
	runtime.ReadMemStats(&gcBefore)
	if o.GCLimit > 0 {
		pct, limit := debug.SetGCPercent(-1), debug.SetMemoryLimit(o.GCLimit)
		defer func() { debug.SetGCPercent(pct); debug.SetMemoryLimit(limit) }()
	}
	log.Printf("reconnect: stopping the controller with %s; restarting it after %s", r.signal, o.Outage)
	ctl.stop(sig)
	sleep(ctx, time.Until(killAt.Add(o.Outage)))
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	restartAt := time.Now()
	r.outage = restartAt.Sub(killAt)
	genA := selfCPU()
	mBusyA, mTotalA, _ := machineCPU()
	if err := ctl.start(); err != nil {
		return nil, err
	}
	var prof *profiler
	var profWG sync.WaitGroup
	defer profWG.Wait()
	if o.ProfileDir != "" {
		var err error
		if prof, err = newProfiler(o.Metrics, o.ProfileDir); err != nil {
			return nil, err
		}
		profWG.Add(1)
		go func() { defer profWG.Done(); prof.cpu(ctx, o.ProfileFor, ctl.exited) }()
	}
	ready, err := ctl.waitReady(ctx, hc, strings.TrimRight(o.API, "/"), readyTimeout)
	if err != nil {
		return nil, err
	}
	if prof != nil && o.TraceFor > 0 {
		profWG.Add(1)
		go func() { defer profWG.Done(); prof.trace(ctx, o.TraceFor) }()
		profWG.Add(1)
		go func() { defer profWG.Done(); prof.traceSelf(ctx, o.TraceFor) }()
	}
	if prof != nil {
		profWG.Add(1)
		go func() { // in the thick of the reconnect
			defer profWG.Done()
			sleep(ctx, 2*time.Second)
			prof.snapshot(ctx, "ready+2s")
		}()
	}
	readyAt.Store(ready.UnixNano())
	r.startup = ready.Sub(restartAt)
	log.Printf("reconnect: the controller is ready %s after its restart; waiting for %d agents (at most %s)", r.startup.Round(time.Millisecond), len(agents), o.ReconnectTimeout)
	progress := time.NewTicker(time.Second)
	defer progress.Stop()
	deadline := time.NewTimer(o.ReconnectTimeout)
	defer deadline.Stop()
	var last int64
wait:
	for {
		select {
		case <-done:
			break wait
		case <-deadline.C:
			break wait
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-progress.C:
			if n := nAttempts.Load(); n != last {
				last = n
				log.Printf("reconnect: %d attempts so far", n)
			}
		}
	}
	stopAgents()
	<-done
	r.window = time.Since(restartAt)
	var gcAfter runtime.MemStats
	runtime.ReadMemStats(&gcAfter)
	r.loadgenGCs, r.loadgenHeap = gcAfter.NumGC-gcBefore.NumGC, gcAfter.HeapAlloc
	if c, err := procCPU(ctl.cmd.Process.Pid); err == nil {
		r.ctlCores = c.Seconds() / r.window.Seconds()
	}
	r.genCores = (selfCPU() - genA).Seconds() / r.window.Seconds()
	if mBusyB, mTotalB, _ := machineCPU(); mTotalB > mTotalA {
		r.machineCores = float64(runtime.NumCPU()) * (mBusyB - mBusyA) / (mTotalB - mTotalA)
	}
	end := ready
	firstLost, lastLost := time.Time{}, time.Time{}
	for i, ag := range agents {
		if ag.c == nil && lostAt[i].IsZero() {
			continue // never connected
		}
		switch {
		case lostAt[i].IsZero():
			r.notLost++
		case backAt[i].IsZero():
			r.notBack++
		default:
			d := backAt[i].Sub(ready)
			if d < 0 {
				r.earlyBack++
				d = 0
			}
			r.back = append(r.back, d)
			if backAt[i].After(end) {
				end = backAt[i]
			}
		}
		if !lostAt[i].IsZero() {
			if firstLost.IsZero() || lostAt[i].Before(firstLost) {
				firstLost = lostAt[i]
			}
			if lostAt[i].After(lastLost) {
				lastLost = lostAt[i]
			}
		}
	}
	r.lostSpread = lastLost.Sub(firstLost)
	slices.Sort(r.back)
	r.attempts = nAttempts.Load()
	r.resumed = resumed.Load()
	after := attempts.counts(ready, end)
	for _, c := range after {
		r.attemptsAfter += c
	}
	r.attemptRate = rates(after)
	succ := success.counts(ready, end)
	r.successRate = rates(succ)
	per := int(time.Second / bucketWidth)
	for i := 0; i < len(succ); i += per {
		var s int64
		for _, c := range succ[i:min(i+per, len(succ))] {
			s += c
		}
		r.perSecond = append(r.perSecond, s)
	}
	return r, nil
}

func reconnectRows(r *reconnectResults) [][2]string {
	var out [][2]string
	add := func(k, v string) { out = append(out, [2]string{k, v}) }
	s := func(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }
	add("agents / controller stop", fmt.Sprintf("%d / %s, restarted %s later; ready (/readyz 200) %s after the restart", r.agents, r.signal, s(r.outage), s(r.startup)))
	add("connections lost (spread of the drops)", fmt.Sprintf("%d of %d (%s)", r.agents-r.notLost, r.agents, s(r.lostSpread)))
	model := 2 * float64(r.agents) / backoff.ReconnectCap.Seconds() // waits at the cap average cap/2
	add("reconnect attempts per second after ready: peak / p99 / mean (per 100 ms)", fmt.Sprintf("%.0f / %.0f / %.0f /s (model at the cap: 2N/%.0f s = %.0f/s at first, falling to 0 over %.0f s)",
		r.attemptRate.peak, r.attemptRate.p99, r.attemptRate.mean, backoff.ReconnectCap.Seconds(), model, backoff.ReconnectCap.Seconds()))
	add("reconnects (CONNACK) per second after ready: peak / p99 / mean (per 100 ms)", fmt.Sprintf("%.0f / %.0f / %.0f /s", r.successRate.peak, r.successRate.p99, r.successRate.mean))
	add("reconnects in each second after ready", strings.Trim(fmt.Sprint(r.perSecond), "[]"))
	if len(r.back) > 0 {
		add("controller ready -> agent reconnected: median / p95 / max", fmt.Sprintf("%s / %s / %s (%d back before /readyz answered, counted as 0)",
			s(pct(r.back, 50)), s(pct(r.back, 95)), s(r.back[len(r.back)-1]), r.earlyBack))
	}
	if r.window > 0 {
		add("CPU from the restart to the last agent back: controller / loadgen / whole machine", fmt.Sprintf("%.2f / %.2f / %.2f of %d cores over %s",
			r.ctlCores, r.genCores, r.machineCores, runtime.NumCPU(), s(r.window)))
		if n := len(r.back); n > 0 { // less sensitive to others' load than the times are
			per := func(cores float64) float64 { return cores * r.window.Seconds() * 1000 / float64(n) }
			add("CPU per reconnect (all of the window's, failed attempts and the controller's start included): controller / loadgen",
				fmt.Sprintf("%.2f / %.2f ms", per(r.ctlCores), per(r.genCores)))
		}
	}
	gc := "as usual (--gc-limit 0)"
	if r.gcLimit > 0 {
		gc = fmt.Sprintf("only past %d MiB (--gc-limit)", r.gcLimit>>20)
	}
	add("loadgen's own GC from the kill to the end: collections / heap at the end", fmt.Sprintf("%d / %d MiB, collecting %s", r.loadgenGCs, r.loadgenHeap>>20, gc))
	add("reconnected / not back in time / connection not lost", fmt.Sprintf("%d / %d / %d", len(r.back), r.notBack, r.notLost))
	add("reconnects that resumed their TLS session", fmt.Sprintf("%d of %d", r.resumed, len(r.back)))
	if n := len(r.notResumed); n > 0 {
		add("reconnects not resumed (first 5)", strings.Join(r.notResumed[:min(n, 5)], "; "))
	}
	kinds := make([]string, 0, len(r.failedKinds))
	for k, v := range r.failedKinds {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, v))
	}
	slices.Sort(kinds)
	add("attempts: total / failed while down / failed after ready", fmt.Sprintf("%d / %d / %d %s", r.attempts, r.failedDown, r.failedAfter, strings.Join(kinds, ", ")))
	if r.firstFailure != "" {
		add("first failure after ready", r.firstFailure)
	}
	return out
}

// raiseFileLimit raises the soft RLIMIT_NOFILE to at least want (one descriptor per agent), up to
// the hard limit (Go already raises the soft limit to the hard one on Linux; this says clearly
// when even the hard limit is too low).
func raiseFileLimit(want int) error {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return fmt.Errorf("RLIMIT_NOFILE: %w", err)
	}
	if rl.Cur >= uint64(want) {
		return nil
	}
	if rl.Max < uint64(want) {
		return fmt.Errorf("%d agents need about %d file descriptors; the hard limit is %d: raise it (ulimit -Hn, as root) or use fewer --conns", want-256, want, rl.Max)
	}
	rl.Cur = uint64(want)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return fmt.Errorf("raising RLIMIT_NOFILE to %d: %w", want, err)
	}
	return nil
}

// waitFile waits until path exists (the controller writes its CA when it first starts).
func (p *controllerProc) waitFile(ctx context.Context, path string, timeout time.Duration) error {
	if path == "" {
		return nil
	}
	deadline := time.Now().Add(timeout)
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("the controller exited before writing %s (see %s)", path, p.logPath)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not written within %s (see %s)", path, timeout, p.logPath)
		}
	}
}

// procCPU is the user+system CPU time a process has used (/proc/PID/stat, at 100 ticks a second).
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	_, rest, ok := strings.Cut(string(b), ") ") // the command name may hold spaces
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return time.Duration(ut+st) * 10 * time.Millisecond, nil
}
