package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// DispatchOptions configure a Dispatcher. Zero values take the defaults named.
type DispatchOptions struct {
	Concurrency  int           // attempts in flight per webhook; default 16
	LaneQueue    int           // claimed deliveries waiting per webhook; default 128
	Batch        int           // deliveries claimed per database round; default 256
	Timeout      time.Duration // per attempt; default 10s
	RetryBase    time.Duration // wait after the first failure, doubling each time; default 5s
	RetryMax     time.Duration // longest wait between attempts; default 1h
	RetryWindow  time.Duration // give up this long after the delivery was queued; default 24h
	PollInterval time.Duration // how often to look for retries coming due; default 1s
	// Shared says other processes' dispatchers claim from the same queue (several controllers
	// on one PostgreSQL): at start only claims older than StaleAfter are taken back, not
	// everything in flight, which may be another live controller's.
	Shared bool
	// StaleAfter is how long after its claim a delivery still delivering is taken to be
	// abandoned by a dead process and put back in the queue (checked every StaleAfter/4).
	// Default: twice the longest a claim can take here, (LaneQueue/Concurrency+1) attempts
	// of Timeout (180s with the defaults), so a live dispatcher's claims are never taken.
	StaleAfter time.Duration
	Client     *http.Client // default: one with Timeout, no redirects followed
	Registerer prometheus.Registerer
	Now        func() time.Time
}

func (o *DispatchOptions) defaults() {
	if o.Concurrency <= 0 {
		o.Concurrency = 16
	}
	if o.LaneQueue <= 0 {
		o.LaneQueue = 128
	}
	if o.Batch <= 0 {
		o.Batch = 256
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.RetryBase <= 0 {
		o.RetryBase = 5 * time.Second
	}
	if o.RetryMax <= 0 {
		o.RetryMax = time.Hour
	}
	if o.RetryWindow <= 0 {
		o.RetryWindow = 24 * time.Hour
	}
	if o.PollInterval <= 0 {
		o.PollInterval = time.Second
	}
	if o.StaleAfter <= 0 {
		o.StaleAfter = 2 * time.Duration(o.LaneQueue/o.Concurrency+1) * o.Timeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Client == nil {
		o.Client = &http.Client{
			Timeout: o.Timeout,
			// A redirect could point a delivery anywhere; receivers must answer at their URL.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
			Transport: &http.Transport{
				Proxy:               http.ProxyFromEnvironment,
				MaxIdleConns:        1024,
				MaxIdleConnsPerHost: o.Concurrency,
				IdleConnTimeout:     90 * time.Second,
				TLSHandshakeTimeout: 10 * time.Second,
				ForceAttemptHTTP2:   true,
			},
		}
	}
}

// Dispatcher delivers queued events. Each webhook has its own lane of workers, so a slow or dead
// receiver only ever holds its own lane's workers and never delays other receivers. Deliveries
// are claimed from the database in batches and results written back in batches; a process that
// dies mid-delivery leaves them "delivering": the next Run puts them back in the queue (with
// Shared, only once StaleAfter has passed), and every running dispatcher takes back those
// older than StaleAfter, so a dead controller's deliveries go out again, at least once.
type Dispatcher struct {
	qs QueueStore
	o  DispatchOptions

	wake    chan struct{}
	results chan Result

	mu    sync.Mutex
	lanes map[string]*lane
	wg    sync.WaitGroup // lane workers

	mDeliveries *prometheus.CounterVec
	mLatency    prometheus.Histogram
}

type lane struct {
	jobs    chan Job
	queued  int // claimed, not yet finished
	running int // worker goroutines
	claimed int // in the claim being handed out
}

// NewDispatcher returns a Dispatcher over qs.
func NewDispatcher(qs QueueStore, o DispatchOptions) *Dispatcher {
	o.defaults()
	d := &Dispatcher{
		qs: qs, o: o,
		wake:    make(chan struct{}, 1),
		results: make(chan Result, o.Batch),
		lanes:   make(map[string]*lane),
		mDeliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edgewan_webhook_attempts_total",
			Help: "Webhook delivery attempts by outcome: succeeded, retry (failed, will retry), failed (gave up).",
		}, []string{"outcome"}),
		mLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "edgewan_webhook_attempt_duration_seconds",
			Help:    "Time from sending a webhook delivery to its response.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 8),
		}),
	}
	if o.Registerer != nil {
		o.Registerer.MustRegister(d.mDeliveries, d.mLatency, &queueCollector{qs: qs})
	}
	return d
}

// Notify wakes the dispatcher to claim new deliveries now rather than at the next poll.
func (d *Dispatcher) Notify() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run delivers until ctx is cancelled, then lets attempts in flight finish (each bounded by the
// attempt timeout), returns deliveries not yet started to the queue, and writes every result.
func (d *Dispatcher) Run(ctx context.Context) error {
	now := d.o.Now()
	before := now // alone on the queue: whatever is in flight was left by a previous run
	if d.o.Shared {
		before = now.Add(-d.o.StaleAfter)
	}
	if n, err := d.qs.ResetInFlight(ctx, now, before); err != nil {
		if ctx.Err() != nil {
			return nil // stopped before it started: a normal stop
		}
		return fmt.Errorf("webhook.Dispatcher: %w", err)
	} else if n > 0 {
		slog.Info("webhook: requeued deliveries left in flight by the previous run", "count", n)
	}
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		d.writeResults()
	}()

	laneCtx, stopLanes := context.WithCancel(context.WithoutCancel(ctx))
	tick := time.NewTicker(d.o.PollInterval)
	defer tick.Stop()
	stale := time.NewTicker(d.o.StaleAfter / 4)
	defer stale.Stop()
	for ctx.Err() == nil {
		more, err := d.claim(ctx, laneCtx)
		if err != nil && ctx.Err() == nil {
			slog.Error("webhook: claiming deliveries", "err", err)
		}
		if err == nil && more {
			continue // more may be due right now
		}
		select {
		case <-ctx.Done():
		case <-d.wake:
		case <-tick.C:
		case <-stale.C:
			d.reclaim(ctx)
		}
	}
	stopLanes() // workers finish the attempt in hand and hand back what they have not started
	d.wg.Wait()
	close(d.results)
	<-writerDone
	return nil
}

// reclaim puts back in the queue the deliveries claimed longer than StaleAfter ago and never
// finished: their process died (another controller, or this one's previous run).
func (d *Dispatcher) reclaim(ctx context.Context) {
	now := d.o.Now()
	n, err := d.qs.ResetInFlight(ctx, now, now.Add(-d.o.StaleAfter))
	switch {
	case err != nil && ctx.Err() == nil:
		slog.Error("webhook: taking back abandoned deliveries", "err", err)
	case n > 0:
		slog.Warn("webhook: requeued deliveries abandoned in flight (a controller died?)", "count", n, "claimed_before", now.Add(-d.o.StaleAfter))
	}
}

// claim fetches due deliveries for the lanes with room and hands them to their lanes. It reports
// whether more may be due for lanes with room: when the batch was full, or when a webhook got its
// share, since the store looks only at the earliest due deliveries and that webhook's may have
// hidden others'. The next claim excludes that webhook's lane, now full, and finds them.
func (d *Dispatcher) claim(ctx, laneCtx context.Context) (bool, error) {
	d.mu.Lock()
	var full []string
	for id, l := range d.lanes {
		if l.queued >= d.o.LaneQueue/2 {
			full = append(full, id)
		}
	}
	d.mu.Unlock()
	jobs, err := d.qs.ClaimDue(ctx, d.o.Now(), d.o.LaneQueue/2, d.o.Batch, full)
	if err != nil {
		return false, err
	}
	more := len(jobs) == d.o.Batch
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, j := range jobs {
		l := d.lanes[j.WebhookID]
		if l == nil {
			l = &lane{jobs: make(chan Job, d.o.LaneQueue)}
			d.lanes[j.WebhookID] = l
		}
		l.queued++
		l.claimed++
		if l.claimed == d.o.LaneQueue/2 {
			more = true
		}
		l.jobs <- j // never blocks: a lane is claimed for only while queued < LaneQueue/2, and each claim adds at most LaneQueue/2
		if l.running < d.o.Concurrency && l.running < l.queued {
			l.running++
			d.wg.Add(1)
			go d.work(laneCtx, j.WebhookID, l)
		}
	}
	for _, j := range jobs {
		d.lanes[j.WebhookID].claimed = 0
	}
	return more, nil
}

// work sends a lane's deliveries until the lane is empty or the dispatcher stops.
func (d *Dispatcher) work(ctx context.Context, webhookID string, l *lane) {
	defer d.wg.Done()
	for {
		d.mu.Lock()
		var j Job
		var ok bool
		select {
		case j, ok = <-l.jobs:
		default:
		}
		if !ok {
			l.running--
			if l.running == 0 && l.queued == 0 {
				delete(d.lanes, webhookID)
			}
			d.mu.Unlock()
			return
		}
		d.mu.Unlock()

		var r Result
		if ctx.Err() != nil {
			// Stopping: give the delivery back untouched rather than start an attempt.
			r = Result{DeliveryID: j.DeliveryID, Status: StatusPending, Attempts: j.Attempts, NextAttemptAt: d.o.Now()}
		} else {
			r = d.attempt(j)
		}
		d.results <- r
		d.mu.Lock()
		l.queued--
		// Claim again once the lane is no longer excluded from claims, not after every
		// attempt: a claim that finds nothing still costs the database a scan.
		room := l.queued == d.o.LaneQueue/2-1
		d.mu.Unlock()
		if room {
			d.Notify()
		}
	}
}

// attempt makes one delivery attempt and says what to store.
func (d *Dispatcher) attempt(j Job) Result {
	start, began := d.o.Now(), time.Now() // began: the latency is a duration, not wall time (clock.Now)
	r := Result{DeliveryID: j.DeliveryID, Attempts: j.Attempts + 1, AttemptedAt: start.UTC()}
	body, err := json.Marshal(j.Event)
	if err == nil {
		r.HTTPStatus, err = d.send(j, body, r.Attempts, start)
	}
	d.mLatency.Observe(time.Since(began).Seconds())
	if err == nil {
		r.Status = StatusSucceeded
		d.mDeliveries.WithLabelValues("succeeded").Inc()
		return r
	}
	r.Error = truncate(err.Error(), 500)
	next := start.Add(d.backoff(r.Attempts))
	if next.After(j.CreatedAt.Add(d.o.RetryWindow)) {
		r.Status = StatusFailed
		d.mDeliveries.WithLabelValues("failed").Inc()
		slog.Warn("webhook: delivery failed for good", "delivery", j.DeliveryID, "webhook", j.WebhookID,
			"event", j.Event.ID, "attempts", r.Attempts, "err", r.Error)
		return r
	}
	r.Status, r.NextAttemptAt = StatusPending, next.UTC()
	d.mDeliveries.WithLabelValues("retry").Inc()
	return r
}

func (d *Dispatcher) send(j Job, body []byte, attempt int, now time.Time) (int, error) {
	if j.Secret == "" { // the store could not open it: never send a delivery signed with ""
		return 0, errors.New("the webhook's signing secret cannot be read (see the controller's log)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), d.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, j.URL, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	ts := strconv.FormatInt(now.Unix(), 10)
	sig, sigV2 := signBoth(j.Secret, ts, body)
	// One backing array for every header value, set under keys already canonical: this runs
	// for every attempt.
	v := [...]string{"application/json", "edgewan-webhooks/1", sig, ts, sigV2, j.Event.ID, j.Event.Type, j.DeliveryID, strconv.Itoa(attempt)}
	h := req.Header
	h["Content-Type"], h["User-Agent"] = v[0:1:1], v[1:2:2]
	h[HeaderSignature], h[HeaderTimestamp], h[HeaderSigned] = v[2:3:3], v[3:4:4], v[4:5:5]
	h[HeaderEventID], h[HeaderEventType], h[HeaderDelivery], h[HeaderAttempt] = v[5:6:6], v[6:7:7], v[7:8:8], v[8:9:9]
	resp, err := d.o.Client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, fmt.Errorf("receiver answered %s", resp.Status)
	}
	return resp.StatusCode, nil
}

// backoff is the wait after the n-th failed attempt: RetryBase doubled n-1 times, capped at
// RetryMax, with jitter in [50%, 100%] so receivers coming back are not hit in lockstep.
func (d *Dispatcher) backoff(n int) time.Duration {
	w := d.o.RetryBase
	for i := 1; i < n && w < d.o.RetryMax; i++ {
		w *= 2
	}
	w = min(w, d.o.RetryMax)
	return w/2 + rand.N(w/2+1)
}

// writeResults stores results in batches until the results channel is closed.
func (d *Dispatcher) writeResults() {
	batch := make([]Result, 0, d.o.Batch)
	flush := func() {
		if len(batch) == 0 {
			return
		}
		// Keep trying: a result not written means a delivery repeated after a restart, which
		// at-least-once allows, but a database hiccup should not cause it.
		for try := 0; ; try++ {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			err := d.qs.FinishDeliveries(ctx, batch)
			cancel()
			if err == nil || try == 4 {
				if err != nil {
					slog.Error("webhook: storing delivery results; they will be retried after restart", "count", len(batch), "err", err)
				}
				break
			}
			time.Sleep(time.Duration(try+1) * 200 * time.Millisecond)
		}
		batch = batch[:0]
	}
	for r := range d.results {
		batch = append(batch, r)
		// Take whatever else is ready without waiting, then write.
	drain:
		for len(batch) < d.o.Batch {
			select {
			case r, ok := <-d.results:
				if !ok {
					break drain
				}
				batch = append(batch, r)
			default:
				break drain
			}
		}
		flush()
	}
	flush()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// queueCollector reports the queue depth by status at scrape time.
type queueCollector struct{ qs QueueStore }

var queueDesc = prometheus.NewDesc("edgewan_webhook_deliveries", "Webhook deliveries in the database by status.", []string{"status"}, nil)

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) { ch <- queueDesc }

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	counts, err := c.qs.CountDeliveries(ctx)
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			slog.Warn("webhook: counting deliveries for metrics", "err", err)
		}
		return
	}
	for _, st := range []string{StatusPending, StatusDelivering, StatusSucceeded, StatusFailed} {
		ch <- prometheus.MustNewConstMetric(queueDesc, prometheus.GaugeValue, float64(counts[st]), st)
	}
}
