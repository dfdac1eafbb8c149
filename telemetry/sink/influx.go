package sink

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	influxdb2 "github.com/influxdata/influxdb-client-go/v2"
	"github.com/influxdata/influxdb-client-go/v2/api"
	http2 "github.com/influxdata/influxdb-client-go/v2/api/http"

	"github.com/edgewan/edgewan/telemetry"
)

// Defaults for InfluxOptions fields left zero.
const (
	DefaultInfluxBatchSize     = 5000
	DefaultInfluxFlushInterval = time.Second
	DefaultInfluxMaxBuffered   = 1_000_000
	DefaultInfluxRetryMin      = 200 * time.Millisecond
	DefaultInfluxRetryMax      = 30 * time.Second
	DefaultInfluxTimeout       = 10 * time.Second
	DefaultInfluxCloseTimeout  = 10 * time.Second
)

// InfluxOptions configure an InfluxSink. Only URL and Bucket are required.
type InfluxOptions struct {
	URL    string // base URL, e.g. http://127.0.0.1:8086
	Token  string // InfluxDB 2 API token, or "user:password" for InfluxDB 1.8 with auth on; empty: none
	Org    string // InfluxDB 2 organisation; empty for InfluxDB 1.8
	Bucket string // InfluxDB 2 bucket, or "database/retention-policy" for 1.8 (e.g. "telemetry/autogen")

	BatchSize     int           // points per write request; 0 means DefaultInfluxBatchSize
	FlushInterval time.Duration // longest a point waits for its batch to fill; 0 means DefaultInfluxFlushInterval
	// MaxBuffered bounds the points held while InfluxDB is slow or unreachable; past it Write
	// fails with ErrOverflow (and counts the drop). 0 means DefaultInfluxMaxBuffered.
	MaxBuffered  int
	RetryMin     time.Duration // first wait after a failed write, doubling up to RetryMax; 0 means default
	RetryMax     time.Duration // 0 means DefaultInfluxRetryMax
	Timeout      time.Duration // of one HTTP request; 0 means DefaultInfluxTimeout
	CloseTimeout time.Duration // how long Close keeps trying to write what is buffered; 0 means default

	Logger *slog.Logger // nil means slog.Default()
}

// InfluxStats count an InfluxSink's points since it was made.
type InfluxStats struct {
	Accepted int64 // points accepted by Write
	Written  int64 // points InfluxDB acknowledged
	Pending  int64 // points accepted and not yet written (buffered or in flight)
	Dropped  int64 // points refused by Write because the buffer was full (ErrOverflow)
	Rejected int64 // points InfluxDB refused for good (HTTP 400/413/422: bad data); not retried
	Retries  int64 // failed write attempts that were retried
}

// InfluxSink writes transport windows to InfluxDB as points of measurement "transport" with
// tags site, device and transport and fields latency_ms, p95_ms, loss_pct, jitter_ms,
// stddev_ms, sent, lost and down, timestamped with the report's time.
//
// Write only buffers; one goroutine sends batches in order with the blocking write API and
// retries a failed batch with exponential backoff until it succeeds (or InfluxDB refuses its
// data for good), so an outage loses nothing while the buffer (MaxBuffered points) lasts.
// Past that, Write fails with ErrOverflow; drops and rejections are counted (Stats) and logged.
type InfluxSink struct {
	opts   InfluxOptions
	log    *slog.Logger
	client influxdb2.Client
	write  api.WriteAPIBlocking
	query  api.QueryAPI

	mu        sync.Mutex
	cur       []byte   // lines of the batch being filled
	curN      int      // points in cur
	queue     []batch  // sealed batches, oldest first
	free      [][]byte // spent batch buffers, for reuse
	accepted  int64    // points accepted, ever; a point's sequence number is its count
	resolved  int64    // points written or rejected, in order
	pending   int64    // accepted - resolved
	progress  chan struct{}
	lastErr   error // of the last failed attempt; nil after a success
	rejectErr error // first rejection since the last Flush
	closed    bool
	dropLog   time.Time // last overflow log

	written, dropped, rejected, retries atomic.Int64

	kick     chan struct{} // wakes the sender
	stop     chan struct{} // closed by Close: the sender exits when idle or, after abort, at once
	abortCtx context.Context
	abort    context.CancelFunc // cancels an in-flight request at Close's deadline
	done     chan struct{}      // closed when the sender has exited
}

type batch struct {
	lines []byte
	n     int
}

// NewInflux checks opts and starts the sink's sender. It does not contact InfluxDB (which may
// come up later); Ping does.
func NewInflux(opts InfluxOptions) (*InfluxSink, error) {
	u, err := url.Parse(opts.URL)
	switch {
	case opts.URL == "":
		return nil, errors.New("sink.NewInflux: no URL")
	case err != nil:
		return nil, fmt.Errorf("sink.NewInflux: bad URL %q: %w", opts.URL, err)
	case (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return nil, fmt.Errorf("sink.NewInflux: bad URL %q: want http://host:port or https://host:port", opts.URL)
	case opts.Bucket == "":
		return nil, errors.New(`sink.NewInflux: no bucket (for InfluxDB 1.8: "database/retention-policy", e.g. "telemetry/autogen")`)
	case opts.BatchSize < 0 || opts.MaxBuffered < 0 || opts.FlushInterval < 0 || opts.RetryMin < 0 ||
		opts.RetryMax < 0 || opts.Timeout < 0 || opts.CloseTimeout < 0:
		return nil, errors.New("sink.NewInflux: negative size or duration in options")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if opts.BatchSize == 0 {
		opts.BatchSize = DefaultInfluxBatchSize
	}
	if opts.MaxBuffered == 0 {
		opts.MaxBuffered = DefaultInfluxMaxBuffered
	}
	def(&opts.FlushInterval, DefaultInfluxFlushInterval)
	def(&opts.RetryMin, DefaultInfluxRetryMin)
	def(&opts.RetryMax, DefaultInfluxRetryMax)
	def(&opts.Timeout, DefaultInfluxTimeout)
	def(&opts.CloseTimeout, DefaultInfluxCloseTimeout)
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	co := influxdb2.DefaultOptions().
		SetLogLevel(0). // we log, once, with context
		SetHTTPRequestTimeout(uint(max(1, opts.Timeout/time.Second))).
		SetPrecision(time.Nanosecond)
	client := influxdb2.NewClientWithOptions(strings.TrimRight(opts.URL, "/"), opts.Token, co)
	s := &InfluxSink{
		opts:     opts,
		log:      opts.Logger.With("sink", "influx", "url", u.Redacted(), "bucket", opts.Bucket),
		client:   client,
		write:    client.WriteAPIBlocking(opts.Org, opts.Bucket),
		query:    client.QueryAPI(opts.Org),
		progress: make(chan struct{}),
		kick:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	s.abortCtx, s.abort = context.WithCancel(context.Background())
	go s.run()
	return s, nil
}

// Ping checks InfluxDB answers.
func (s *InfluxSink) Ping(ctx context.Context) error {
	ok, err := s.client.Ping(ctx)
	if err == nil && !ok {
		err = errors.New("not ready")
	}
	if err != nil {
		return fmt.Errorf("sink.InfluxSink.Ping %s: %w", s.opts.URL, err)
	}
	return nil
}

// Write buffers r's transport windows as points. It fails with ErrOverflow when the buffer
// is full, ErrClosed after Close, and telemetry.ErrInvalid for a figure that is not finite.
func (s *InfluxSink) Write(ctx context.Context, r *telemetry.Report) error {
	for i := range r.Transport {
		t := &r.Transport[i]
		for _, v := range [...]float64{t.LatencyMs, t.P95Ms, t.JitterMs, t.StdDevMs} {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("sink.InfluxSink.Write: %w: transport %q: a figure is %v", telemetry.ErrInvalid, t.Name, v)
			}
		}
	}
	n := len(r.Transport)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("sink.InfluxSink.Write: %w", ErrClosed)
	}
	if s.pending+int64(n) > int64(s.opts.MaxBuffered) {
		d := s.dropped.Add(int64(n))
		if now := time.Now(); now.Sub(s.dropLog) >= 30*time.Second {
			s.dropLog = now
			s.log.Error("InfluxDB buffer full: dropping telemetry", "buffered", s.pending, "dropped_total", d, "last_error", s.lastErr)
		}
		return fmt.Errorf("sink.InfluxSink.Write: %w (%d points buffered; InfluxDB: %v)", ErrOverflow, s.pending, s.lastErr)
	}
	ts := r.Time.UnixNano()
	for i := range r.Transport {
		s.cur = appendLine(s.cur, r.Site, r.Device, &r.Transport[i], ts)
		s.curN++
		if s.curN >= s.opts.BatchSize {
			s.seal()
		}
	}
	s.accepted += int64(n)
	s.pending += int64(n)
	return nil
}

// seal moves the batch being filled to the queue and wakes the sender. Called with mu held.
func (s *InfluxSink) seal() {
	if s.curN == 0 {
		return
	}
	s.queue = append(s.queue, batch{lines: s.cur, n: s.curN})
	s.cur, s.curN = nil, 0
	if k := len(s.free); k > 0 {
		s.cur, s.free = s.free[k-1][:0], s.free[:k-1]
	}
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Flush returns once every point accepted before it was called is written (or rejected by
// InfluxDB: then it returns that error), or with ctx's error and how many points are pending.
func (s *InfluxSink) Flush(ctx context.Context) error {
	s.mu.Lock()
	s.seal()
	target := s.accepted
	for s.resolved < target {
		ch := s.progress
		s.mu.Unlock()
		select {
		case <-ch:
		case <-s.done:
			s.mu.Lock()
			if s.resolved < target {
				n := s.pending
				s.mu.Unlock()
				return fmt.Errorf("sink.InfluxSink.Flush: %w with %d points not written", ErrClosed, n)
			}
			s.mu.Unlock()
			return nil
		case <-ctx.Done():
			s.mu.Lock()
			n, last := s.pending, s.lastErr
			s.mu.Unlock()
			if last != nil {
				return fmt.Errorf("sink.InfluxSink.Flush: %d points not yet written to %s (last error: %v): %w", n, s.opts.URL, last, ctx.Err())
			}
			return fmt.Errorf("sink.InfluxSink.Flush: %d points not yet written to %s: %w", n, s.opts.URL, ctx.Err())
		}
		s.mu.Lock()
	}
	err := s.rejectErr
	s.rejectErr = nil
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("sink.InfluxSink.Flush: %w", err)
	}
	return nil
}

// Close stops accepting points, keeps trying to write those buffered for up to CloseTimeout,
// then stops. It reports the points it could not write.
func (s *InfluxSink) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), s.opts.CloseTimeout)
	err := s.Flush(ctx)
	cancel()
	close(s.stop)
	s.abort()
	<-s.done
	s.client.Close()
	if err != nil {
		return fmt.Errorf("sink.InfluxSink.Close: %w", err)
	}
	return nil
}

// Stats returns the sink's counters.
func (s *InfluxSink) Stats() InfluxStats {
	s.mu.Lock()
	accepted, pending := s.accepted, s.pending
	s.mu.Unlock()
	return InfluxStats{
		Accepted: accepted,
		Written:  s.written.Load(),
		Pending:  pending,
		Dropped:  s.dropped.Load(),
		Rejected: s.rejected.Load(),
		Retries:  s.retries.Load(),
	}
}

// run is the sender: it seals the filling batch every FlushInterval and sends batches in order.
func (s *InfluxSink) run() {
	defer close(s.done)
	tick := time.NewTicker(s.opts.FlushInterval)
	defer tick.Stop()
	for {
		s.mu.Lock()
		var b batch
		if len(s.queue) > 0 {
			b = s.queue[0]
			s.queue[0] = batch{}
			s.queue = s.queue[1:]
		}
		s.mu.Unlock()
		if b.n > 0 {
			s.send(b)
			continue
		}
		select {
		case <-s.kick:
		case <-tick.C:
			s.mu.Lock()
			s.seal()
			s.mu.Unlock()
		case <-s.stop:
			return // Close flushed already (or gave up)
		}
	}
}

// send writes b, retrying with backoff until it succeeds, InfluxDB refuses it for good, or
// Close gives up.
func (s *InfluxSink) send(b batch) {
	wait := s.opts.RetryMin
	var failingSince time.Time
	var lastLog time.Time
	body := string(b.lines)
	for attempt := 1; ; attempt++ {
		err := s.write.WriteRecord(s.abortCtx, body)
		if err == nil {
			s.written.Add(int64(b.n))
			if !failingSince.IsZero() {
				s.log.Info("InfluxDB writes recovered", "failed_attempts", attempt-1, "outage", time.Since(failingSince).Round(time.Millisecond))
			}
			s.resolve(b, nil)
			return
		}
		if permanent(err) {
			s.rejected.Add(int64(b.n))
			s.log.Error("InfluxDB refused a batch of telemetry; dropped", "points", b.n, "err", err)
			s.resolve(b, fmt.Errorf("InfluxDB refused %d points: %w", b.n, err))
			return
		}
		s.retries.Add(1)
		s.mu.Lock()
		s.lastErr = err
		s.mu.Unlock()
		now := time.Now()
		if failingSince.IsZero() {
			failingSince = now
		}
		if now.Sub(lastLog) >= 30*time.Second {
			lastLog = now
			s.log.Warn("InfluxDB write failed; retrying", "points", b.n, "attempt", attempt, "retry_in", wait, "err", err)
		}
		select {
		case <-time.After(wait):
		case <-s.abortCtx.Done():
			s.log.Error("InfluxDB sink closed with telemetry not written", "points", b.n, "err", err)
			return
		}
		wait = min(2*wait, s.opts.RetryMax)
	}
}

// resolve records b as done (written, or rejected with err) and recycles its buffer.
func (s *InfluxSink) resolve(b batch, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resolved += int64(b.n)
	s.pending -= int64(b.n)
	s.lastErr = nil
	if err != nil && s.rejectErr == nil {
		s.rejectErr = err
	}
	if len(s.free) < 4 {
		s.free = append(s.free, b.lines[:0])
	}
	close(s.progress)
	s.progress = make(chan struct{})
}

// permanent reports whether err means InfluxDB will never take the batch: malformed or
// conflicting data (400, 422) or a batch too large (413). Anything else (network errors, 5xx,
// 429, 401/403/404 while someone fixes credentials or creates the database) is retried.
func permanent(err error) bool {
	var he *http2.Error
	if !errors.As(err, &he) {
		return false
	}
	switch he.StatusCode {
	case 400, 413, 422:
		return true
	}
	return false
}

// appendLine appends tw as one line of line protocol.
func appendLine(b []byte, site, device string, tw *telemetry.TransportWindow, ts int64) []byte {
	b = append(b, "transport,device="...)
	b = appendTag(b, device)
	b = append(b, ",site="...)
	b = appendTag(b, site)
	b = append(b, ",transport="...)
	b = appendTag(b, tw.Name)
	b = append(b, " latency_ms="...)
	b = strconv.AppendFloat(b, tw.LatencyMs, 'g', -1, 64)
	b = append(b, ",p95_ms="...)
	b = strconv.AppendFloat(b, tw.P95Ms, 'g', -1, 64)
	b = append(b, ",loss_pct="...)
	b = strconv.AppendFloat(b, tw.LossPct(), 'g', -1, 64)
	b = append(b, ",jitter_ms="...)
	b = strconv.AppendFloat(b, tw.JitterMs, 'g', -1, 64)
	b = append(b, ",stddev_ms="...)
	b = strconv.AppendFloat(b, tw.StdDevMs, 'g', -1, 64)
	b = append(b, ",sent="...)
	b = strconv.AppendInt(b, int64(tw.Sent), 10)
	b = append(b, "i,lost="...)
	b = strconv.AppendInt(b, int64(tw.Lost), 10)
	b = append(b, "i,down="...)
	b = strconv.AppendBool(b, tw.Down)
	b = append(b, ' ')
	b = strconv.AppendInt(b, ts, 10)
	return append(b, '\n')
}

// appendTag appends a tag value escaped for line protocol (an empty one would be invalid).
func appendTag(b []byte, v string) []byte {
	if v == "" {
		return append(b, "_"...)
	}
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case ',', '=', ' ', '\\':
			b = append(b, '\\', c)
		case '\n', '\r':
			b = append(b, ' ')
		default:
			b = append(b, c)
		}
	}
	return b
}

// Query reads back the points of site (every site if "") in [from, to), ordered by time,
// device and transport. It uses Flux (InfluxDB 1.8 needs [http] flux-enabled = true).
func (s *InfluxSink) Query(ctx context.Context, site string, from, to time.Time) ([]Sample, error) {
	if site != "" && !telemetry.ValidID(site) {
		return nil, fmt.Errorf("sink.InfluxSink.Query: bad site id %q", site)
	}
	bucket := strconv.Quote(s.opts.Bucket)
	if strings.Contains(bucket, "${") {
		return nil, fmt.Errorf("sink.InfluxSink.Query: bad bucket %q", s.opts.Bucket)
	}
	filter := `r._measurement == "transport"`
	if site != "" {
		filter += ` and r.site == "` + site + `"`
	}
	flux := fmt.Sprintf(`from(bucket: %s)
  |> range(start: %s, stop: %s)
  |> filter(fn: (r) => %s)
  |> pivot(rowKey: ["_time"], columnKey: ["_field"], valueColumn: "_value")`,
		bucket, from.UTC().Format(time.RFC3339Nano), to.UTC().Format(time.RFC3339Nano), filter)
	res, err := s.query.Query(ctx, flux)
	if err != nil {
		return nil, fmt.Errorf("sink.InfluxSink.Query: %w", err)
	}
	defer res.Close()
	var out []Sample
	for res.Next() {
		r := res.Record()
		sm := Sample{Time: r.Time()}
		sm.Site, _ = r.ValueByKey("site").(string)
		sm.Device, _ = r.ValueByKey("device").(string)
		sm.Transport, _ = r.ValueByKey("transport").(string)
		sm.LatencyMs, _ = r.ValueByKey("latency_ms").(float64)
		sm.P95Ms, _ = r.ValueByKey("p95_ms").(float64)
		sm.LossPct, _ = r.ValueByKey("loss_pct").(float64)
		sm.JitterMs, _ = r.ValueByKey("jitter_ms").(float64)
		sm.StdDevMs, _ = r.ValueByKey("stddev_ms").(float64)
		sm.Sent, _ = r.ValueByKey("sent").(int64)
		sm.Lost, _ = r.ValueByKey("lost").(int64)
		sm.Down, _ = r.ValueByKey("down").(bool)
		out = append(out, sm)
	}
	if err := res.Err(); err != nil {
		return nil, fmt.Errorf("sink.InfluxSink.Query: %w", err)
	}
	slices.SortFunc(out, func(a, b Sample) int {
		if c := a.Time.Compare(b.Time); c != 0 {
			return c
		}
		if c := strings.Compare(a.Site, b.Site); c != 0 {
			return c
		}
		if c := strings.Compare(a.Device, b.Device); c != 0 {
			return c
		}
		return strings.Compare(a.Transport, b.Transport)
	})
	return out, nil
}
