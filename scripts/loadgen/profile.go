package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime/trace"
	"strconv"
	"time"
)

// profiler fetches a restarted controller's runtime profiles (served with its --pprof next to
// /metrics) into a directory, so that what limits the reconnect can be read with `go tool pprof`.
type profiler struct {
	base string // scheme://host of the metrics listener
	dir  string
	hc   *http.Client
}

func newProfiler(metricsURL, dir string) (*profiler, error) {
	u, err := url.Parse(metricsURL)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("--metrics %q: not a URL", metricsURL)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("--profile-dir: %w", err)
	}
	return &profiler{base: u.Scheme + "://" + u.Host, dir: dir, hc: &http.Client{}}, nil
}

// cpu records a CPU profile of d from as soon as the listener answers (the controller has just
// been started), trying until the controller exits or for as long as loadgen waits for it to
// be ready. Errors are logged: a missing profile must not fail the measurement.
func (p *profiler) cpu(ctx context.Context, d time.Duration, exited <-chan struct{}) {
	giveUp := time.After(readyTimeout)
	for {
		err := p.fetch(ctx, "/debug/pprof/profile?seconds="+strconv.Itoa(int(d/time.Second)), "cpu.pprof", d+30*time.Second)
		if err == nil {
			return
		}
		select { // not listening yet: the controller is still opening its store
		case <-ctx.Done():
			return
		case <-exited:
			log.Printf("profile: cpu: the controller exited: %v", err)
			return
		case <-giveUp:
			log.Printf("profile: cpu: %v", err)
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// trace records a runtime execution trace of d from now (the controller is ready), to see
// with `go tool trace` which goroutines run, wait and block while CONNECTs queue.
func (p *profiler) trace(ctx context.Context, d time.Duration) {
	q := strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
	if err := p.fetch(ctx, "/debug/pprof/trace?seconds="+q, "trace.out", d+30*time.Second); err != nil {
		log.Printf("profile: trace: %v", err)
	}
}

// traceSelf records loadgen's own execution trace for d from now, next to the controller's:
// the two run on the same cores, and a stall in the agents' side looks like a stall in the
// controller's from the outside.
func (p *profiler) traceSelf(ctx context.Context, d time.Duration) {
	f, err := os.Create(filepath.Join(p.dir, "loadgen-trace.out"))
	if err != nil {
		log.Printf("profile: loadgen trace: %v", err)
		return
	}
	defer f.Close()
	if err := trace.Start(f); err != nil {
		log.Printf("profile: loadgen trace: %v", err)
		return
	}
	sleep(ctx, d)
	trace.Stop()
}

// snapshot saves the goroutine (with stacks), block and mutex profiles as of now.
func (p *profiler) snapshot(ctx context.Context, tag string) {
	for _, name := range []string{"goroutine", "block", "mutex"} {
		q := ""
		if name == "goroutine" {
			q = "?debug=1" // grouped stacks with counts, readable as text
		}
		if err := p.fetch(ctx, "/debug/pprof/"+name+q, tag+"-"+name+".pprof", 30*time.Second); err != nil {
			log.Printf("profile: %s: %v", name, err)
		}
	}
}

func (p *profiler) fetch(ctx context.Context, path, file string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+path, nil)
	if err != nil {
		return err
	}
	resp, err := p.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s (is the controller running with --pprof?)", path, resp.Status)
	}
	f, err := os.Create(filepath.Join(p.dir, file))
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return fmt.Errorf("GET %s: %w", path, err)
	}
	return f.Close()
}
