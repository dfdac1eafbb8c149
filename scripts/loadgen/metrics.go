package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// scrape is one read of the controller's /metrics (Prometheus text format), reduced to what
// the load generator reports.
type scrape struct {
	At         time.Time
	Reports    float64            // edgewan_ingest_reports_total
	Rejected   map[string]float64 // edgewan_ingest_rejected_total by reason
	Lag        []bucket           // edgewan_ingest_lag_seconds, cumulative, by le
	LagCount   float64
	LagSum     float64
	HTTP       []bucket // edgewan_http_request_duration_seconds{family="sdwan"}: the server's handling time
	CPUSeconds float64  // process_cpu_seconds_total
	RSS        float64  // process_resident_memory_bytes
	HeapInuse  float64  // go_memstats_heap_inuse_bytes
	Goroutines float64  // go_goroutines
	Events     float64  // edgewan_sdwan_events_total, all types
	Switches   float64  // edgewan_path_switches_total, all reasons
	Sites      float64  // edgewan_sites_live
	Transports float64  // edgewan_transports_tracked
}

type bucket struct {
	Le    float64
	Count float64
}

func getMetrics(ctx context.Context, hc *http.Client, url string) (*scrape, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scraping %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scraping %s: %s", url, resp.Status)
	}
	return parseMetrics(resp.Body)
}

// parseMetrics reads the lines it needs of the text exposition format:
// name{label="value",...} value [timestamp].
func parseMetrics(r io.Reader) (*scrape, error) {
	s := &scrape{At: time.Now(), Rejected: map[string]float64{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, labels, value, ok := splitSample(line)
		if !ok {
			continue
		}
		switch name {
		case "edgewan_ingest_reports_total":
			s.Reports = value
		case "edgewan_ingest_rejected_total":
			s.Rejected[labels["reason"]] = value
		case "edgewan_ingest_lag_seconds_bucket":
			le, err := strconv.ParseFloat(labels["le"], 64)
			if labels["le"] == "+Inf" {
				le, err = math.Inf(1), nil
			}
			if err == nil {
				s.Lag = append(s.Lag, bucket{Le: le, Count: value})
			}
		case "edgewan_http_request_duration_seconds_bucket":
			if labels["family"] != "sdwan" {
				continue
			}
			le, err := strconv.ParseFloat(labels["le"], 64)
			if labels["le"] == "+Inf" {
				le, err = math.Inf(1), nil
			}
			if err == nil {
				s.HTTP = append(s.HTTP, bucket{Le: le, Count: value})
			}
		case "edgewan_ingest_lag_seconds_count":
			s.LagCount = value
		case "edgewan_ingest_lag_seconds_sum":
			s.LagSum = value
		case "process_cpu_seconds_total":
			s.CPUSeconds = value
		case "process_resident_memory_bytes":
			s.RSS = value
		case "go_memstats_heap_inuse_bytes":
			s.HeapInuse = value
		case "go_goroutines":
			s.Goroutines = value
		case "edgewan_sdwan_events_total":
			s.Events += value
		case "edgewan_path_switches_total":
			s.Switches += value
		case "edgewan_sites_live":
			s.Sites = value
		case "edgewan_transports_tracked":
			s.Transports = value
		}
	}
	slices.SortFunc(s.Lag, func(a, b bucket) int { return cmpFloat(a.Le, b.Le) })
	slices.SortFunc(s.HTTP, func(a, b bucket) int { return cmpFloat(a.Le, b.Le) })
	return s, sc.Err()
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func splitSample(line string) (name string, labels map[string]string, value float64, ok bool) {
	rest := line
	if i := strings.IndexAny(rest, "{ "); i < 0 {
		return "", nil, 0, false
	} else {
		name, rest = rest[:i], rest[i:]
	}
	if strings.HasPrefix(rest, "{") {
		end := strings.LastIndexByte(rest, '}')
		if end < 0 {
			return "", nil, 0, false
		}
		labels = map[string]string{}
		for _, kv := range splitLabels(rest[1:end]) {
			k, v, found := strings.Cut(kv, "=")
			if found {
				labels[k] = strings.Trim(v, `"`)
			}
		}
		rest = rest[end+1:]
	}
	f := strings.Fields(rest)
	if len(f) == 0 {
		return "", nil, 0, false
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return "", nil, 0, false
	}
	return name, labels, v, true
}

// splitLabels splits on commas outside quotes.
func splitLabels(s string) []string {
	var out []string
	inQ, start := false, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			inQ = !inQ
		case ',':
			if !inQ {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// histDelta is what a cumulative histogram counted between two scrapes.
func histDelta(before, after []bucket) []bucket {
	out := make([]bucket, len(after))
	for i, b := range after {
		out[i] = b
		for _, p := range before {
			if p.Le == b.Le {
				out[i].Count -= p.Count
			}
		}
	}
	return out
}

// histogramQuantile is Prometheus's histogram_quantile: linear within the bucket holding the
// rank; in the +Inf bucket it answers the highest finite bound.
func histogramQuantile(q float64, bs []bucket) float64 {
	if len(bs) == 0 {
		return math.NaN()
	}
	total := bs[len(bs)-1].Count
	if total <= 0 {
		return math.NaN()
	}
	rank := q * total
	for i, b := range bs {
		if b.Count >= rank {
			if math.IsInf(b.Le, 1) {
				if i > 0 {
					return bs[i-1].Le
				}
				return math.NaN()
			}
			lo, below := 0.0, 0.0
			if i > 0 {
				lo, below = bs[i-1].Le, bs[i-1].Count
			}
			if b.Count == below {
				return b.Le
			}
			return lo + (b.Le-lo)*(rank-below)/(b.Count-below)
		}
	}
	return bs[len(bs)-1].Le
}

// shareWithin is the fraction of observations at or under le (a bucket bound).
func shareWithin(le float64, bs []bucket) float64 {
	if len(bs) == 0 || bs[len(bs)-1].Count <= 0 {
		return math.NaN()
	}
	for _, b := range bs {
		if math.Abs(b.Le-le) <= 1e-9*le { // bounds like 0.0005*3^k print inexactly
			return b.Count / bs[len(bs)-1].Count
		}
	}
	return math.NaN()
}

// procRSS reads VmRSS of pid from /proc, in bytes.
func procRSS(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(v)
			if len(f) >= 1 {
				kb, err := strconv.ParseFloat(f[0], 64)
				return kb * 1024, err
			}
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no VmRSS", pid)
}

// machineCPU reads /proc/stat's first line: busy and total jiffies of all CPUs since boot, and
// steal (time the hypervisor gave to other guests).
func machineCPU() (busy, total, steal float64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0, 0
	}
	v := make([]float64, len(f)-1)
	for i := range v {
		v[i], _ = strconv.ParseFloat(f[i+1], 64)
	}
	// user nice system idle iowait irq softirq steal ...
	for i, x := range v[:8] {
		total += x
		if i != 3 && i != 4 {
			busy += x
		}
	}
	return busy, total, v[7]
}
