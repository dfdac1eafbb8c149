package sink

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgewan/edgewan/telemetry/sink/influxtest"
)

// TestInfluxPartialWrite: InfluxDB writes the good points of a batch and answers 400 "partial
// write ... dropped=N" for the rest (here: a point older than the retention policy's duration,
// as an agent replaying an old spool sends). Only those N are lost: the sink must count the
// others as written, not the whole batch as rejected (an operator reading Stats, the log or
// Flush's error would think a batch of thousands was lost for one stale point).
func TestInfluxPartialWrite(t *testing.T) {
	ctx := context.Background()
	db := influxtest.NewDatabase(t)
	q := url.Values{"q": {"CREATE RETENTION POLICY short ON " + db.Name + " DURATION 1h REPLICATION 1"}}
	resp, err := http.PostForm(db.URL+"/query", q)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("creating the retention policy: %s", resp.Status)
	}
	s := openInflux(t, InfluxOptions{URL: db.URL, Bucket: db.Name + "/short", Writers: 1, RetryMin: 20 * time.Millisecond})
	now := time.Now().Truncate(time.Second)
	for i, at := range []time.Time{now, now.Add(-48 * time.Hour), now.Add(-time.Second)} {
		if err := s.Write(ctx, report(fmt.Sprintf("site-%d", i), "edge-1", at, win("wan1", 10, 1, 20, 30, 10, 40, 2, 3, false))); err != nil {
			t.Fatal(err)
		}
	}
	long, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err = s.Flush(long)
	if err == nil || !strings.Contains(err.Error(), "refused 1 of 3 points") {
		t.Errorf("Flush: got %v; want InfluxDB refused 1 of 3 points", err)
	}
	if st := s.Stats(); st.Rejected != 1 || st.Written != 2 || st.Pending != 0 {
		t.Errorf("Stats: got %+v; want 1 rejected, 2 written, 0 pending", st)
	}
	got, err := s.Query(ctx, "", now.Add(-time.Hour), now.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Errorf("Query: %d points; want the 2 within the retention policy", len(got))
	}
}

// TestInfluxCloseGivesUpOnce: when Close's deadline passes with batches still queued
// (InfluxDB down), they are abandoned at once: no further write attempt (Retries stops
// growing) and one log line saying how many points were not written, not two lines for every
// batch (a full buffer holds hundreds).
func TestInfluxCloseGivesUpOnce(t *testing.T) {
	var logs strings.Builder
	var mu sync.Mutex
	lg := slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))
	s := openInflux(t, InfluxOptions{URL: "http://" + closedAddr(t), Bucket: "db/autogen", Writers: 1, BatchSize: 1,
		RetryMin: 5 * time.Millisecond, RetryMax: 10 * time.Millisecond, CloseTimeout: 50 * time.Millisecond, Logger: lg})
	const n = 20
	for i := range n {
		if err := s.Write(context.Background(), report(fmt.Sprintf("site-%d", i), "edge-1", time.Now(), win("wan1", 10, 1, 20, 30, 10, 40, 2, 3, false))); err != nil {
			t.Fatal(err)
		}
	}
	err := s.Close()
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%d points not", n)) {
		t.Fatalf("Close: %v; want %d points not written", err, n)
	}
	retries := s.Stats().Retries
	mu.Lock()
	out := logs.String()
	mu.Unlock()
	if c := strings.Count(out, "closed with telemetry not written"); c != 1 {
		t.Errorf("%d lines say the sink closed with telemetry not written; want 1:\n%s", c, out)
	}
	if !strings.Contains(out, fmt.Sprintf("points=%d", n)) {
		t.Errorf("log %s; want it to count the %d points not written", out, n)
	}
	if after := s.Stats().Retries; after != retries {
		t.Errorf("Retries went on after Close: %d then %d", retries, after)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
