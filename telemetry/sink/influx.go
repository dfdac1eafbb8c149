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
	DefaultInfluxWriters       = 4
	DefaultInfluxOverflowWait  = 5 * time.Second
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
	// Writers is how many batches may be in flight at once. Points are partitioned among the
	// writers by site, so each series is still written in order. 0 means DefaultInfluxWriters.
	Writers int
	// MaxBuffered bounds the points held while InfluxDB is slow or unreachable. When it is
	// reached Write waits for room (back-pressure) for up to OverflowWait; past that it fails
	// with ErrOverflow (and counts the drop). 0 means DefaultInfluxMaxBuffered.
	MaxBuffered  int
	OverflowWait time.Duration // 0 means DefaultInfluxOverflowWait
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
	Dropped  int64 // points refused by Write because the buffer stayed full (ErrOverflow)
	Rejected int64 // points InfluxDB refused for good (HTTP 400/413/422: bad data); not retried
	Retries  int64 // failed write attempts that were retried
	Waits    int64 // Writes that had to wait for room (back-pressure)
}

// InfluxSink writes transport windows to InfluxDB as points of measurement "transport" with
// tags site, device and transport and fields latency_ms, p95_ms, loss_pct, jitter_ms,
// stddev_ms, sent, lost and down, timestamped with the report's time.
//
// Write only buffers. Writers goroutines ("lanes") each own the sites that hash to them and
// send their batches in order with the blocking write API, one request in flight per lane, so
// several requests are in flight at once while each series stays in order. A failed batch is
// retried with exponential backoff until it succeeds (or InfluxDB refuses its data for good),
// holding back the later batches of its lane only, so an outage loses nothing while the buffer
// (MaxBuffered points) lasts; when it is full Write waits for room for up to OverflowWait, then
// fails with ErrOverflow. Drops and rejections are counted (Stats) and logged.
type InfluxSink struct {
	opts   InfluxOptions
	log    *slog.Logger
	client influxdb2.Client
	write  api.WriteAPIBlocking
	query  api.QueryAPI
	lanes  []*influxLane

	pending atomic.Int64 // points accepted and not yet resolved, over all lanes
	closed  atomic.Bool

	roomMu sync.Mutex
	room   chan struct{} // closed (and replaced) whenever points are resolved

	mu        sync.Mutex
	rejectErr error // first rejection since the last Flush
	dropLog   time.Time

	written, dropped, rejected, retries, waits atomic.Int64

	stop     chan struct{} // closed by Close: the lanes exit when idle or, after abort, at once
	abortCtx context.Context
	abort    context.CancelFunc // cancels in-flight requests at Close's deadline
}

// influxLane is one writer: the batches of the sites that hash to it, sent in order.
type influxLane struct {
	mu       sync.Mutex
	cur      []byte   // lines of the batch being filled
	curN     int      // points in cur
	queue    []batch  // sealed batches, oldest first
	free     [][]byte // spent batch buffers, for reuse
	accepted int64    // points accepted, ever; a point's sequence number in its lane is its count
	resolved int64    // points written or rejected, in order
	progress chan struct{}
	kick     chan struct{} // wakes the sender
	done     chan struct{} // closed when the sender has exited

	// The lane's last failed attempt, nil after a success (guarded by InfluxSink.mu): per lane,
	// so one lane's success does not hide another lane's outage from the error messages.
	lastErr   error
	lastErrAt time.Time
}

type batch struct {
	lines []byte
	n     int
}

// NewInflux checks opts and starts the sink's writers. It does not contact InfluxDB (which may
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
	case opts.BatchSize < 0 || opts.MaxBuffered < 0 || opts.Writers < 0 || opts.FlushInterval < 0 || opts.RetryMin < 0 ||
		opts.RetryMax < 0 || opts.Timeout < 0 || opts.CloseTimeout < 0 || opts.OverflowWait < 0:
		return nil, errors.New("sink.NewInflux: negative size or duration in options")
	case opts.Writers > 64:
		return nil, fmt.Errorf("sink.NewInflux: %d writers: want at most 64", opts.Writers)
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
	if opts.Writers == 0 {
		opts.Writers = DefaultInfluxWriters
	}
	def(&opts.FlushInterval, DefaultInfluxFlushInterval)
	def(&opts.OverflowWait, DefaultInfluxOverflowWait)
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
		opts:   opts,
		log:    opts.Logger.With("sink", "influx", "url", u.Redacted(), "bucket", opts.Bucket),
		client: client,
		write:  client.WriteAPIBlocking(opts.Org, opts.Bucket),
		query:  client.QueryAPI(opts.Org),
		room:   make(chan struct{}),
		stop:   make(chan struct{}),
	}
	s.abortCtx, s.abort = context.WithCancel(context.Background())
	for range opts.Writers {
		l := &influxLane{progress: make(chan struct{}), kick: make(chan struct{}, 1), done: make(chan struct{})}
		s.lanes = append(s.lanes, l)
		go s.run(l)
	}
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

// laneOf returns the lane of site: FNV-1a of its id, so a site's series always share a lane.
func (s *InfluxSink) laneOf(site string) *influxLane {
	h := uint32(2166136261)
	for i := 0; i < len(site); i++ {
		h ^= uint32(site[i])
		h *= 16777619
	}
	return s.lanes[h%uint32(len(s.lanes))]
}

// Write buffers r's transport windows as points. When the buffer is full it waits for room
// for up to OverflowWait (or until ctx is done), then fails with ErrOverflow. It fails with
// ErrClosed after Close, and telemetry.ErrInvalid for a figure that is not finite.
func (s *InfluxSink) Write(ctx context.Context, r *telemetry.Report) error {
	for i := range r.Transport {
		t := &r.Transport[i]
		for _, v := range [...]float64{t.LatencyMs, t.P95Ms, t.JitterMs, t.StdDevMs} {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("sink.InfluxSink.Write: %w: transport %q: a figure is %v", telemetry.ErrInvalid, t.Name, v)
			}
		}
	}
	n := int64(len(r.Transport))
	if s.closed.Load() {
		return fmt.Errorf("sink.InfluxSink.Write: %w", ErrClosed)
	}
	if err := s.reserve(ctx, n); err != nil {
		return err
	}
	l := s.laneOf(r.Site)
	l.mu.Lock()
	if s.closed.Load() {
		l.mu.Unlock()
		s.release(n)
		return fmt.Errorf("sink.InfluxSink.Write: %w", ErrClosed)
	}
	ts := r.Time.UnixNano()
	for i := range r.Transport {
		l.cur = appendLine(l.cur, r.Site, r.Device, &r.Transport[i], ts)
		l.curN++
		if l.curN >= s.opts.BatchSize {
			l.seal()
		}
	}
	l.accepted += n
	l.mu.Unlock()
	return nil
}

// reserve takes room for n points in the buffer, waiting for it (back-pressure) for up to
// OverflowWait or until ctx is done.
func (s *InfluxSink) reserve(ctx context.Context, n int64) error {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		s.roomMu.Lock()
		room := s.room
		s.roomMu.Unlock()
		p := s.pending.Load()
		if p+n <= int64(s.opts.MaxBuffered) || p == 0 {
			if s.pending.CompareAndSwap(p, p+n) {
				return nil
			}
			continue
		}
		if timer == nil {
			s.waits.Add(1)
			timer = time.NewTimer(s.opts.OverflowWait)
		}
		select {
		case <-room:
			continue
		case <-timer.C:
		case <-ctx.Done():
			// The caller gave up: refused, not dropped from a full buffer.
			return fmt.Errorf("sink.InfluxSink.Write: waiting for room in the buffer: %w", ctx.Err())
		case <-s.stop:
			return fmt.Errorf("sink.InfluxSink.Write: %w", ErrClosed)
		}
		d := s.dropped.Add(n)
		last := s.lastError()
		s.mu.Lock()
		if now := time.Now(); now.Sub(s.dropLog) >= 30*time.Second {
			s.dropLog = now
			s.log.Error("InfluxDB buffer full: dropping telemetry", "buffered", p, "dropped_total", d, "last_error", last)
		}
		s.mu.Unlock()
		return fmt.Errorf("sink.InfluxSink.Write: %w (%d points buffered; InfluxDB: %v)", ErrOverflow, p, last)
	}
}

// release gives back room for n points and wakes writers waiting for it.
func (s *InfluxSink) release(n int64) {
	s.pending.Add(-n)
	s.roomMu.Lock()
	close(s.room)
	s.room = make(chan struct{})
	s.roomMu.Unlock()
}

// seal moves the batch being filled to the queue and wakes the sender. Called with l.mu held.
func (l *influxLane) seal() {
	if l.curN == 0 {
		return
	}
	l.queue = append(l.queue, batch{lines: l.cur, n: l.curN})
	l.cur, l.curN = nil, 0
	if k := len(l.free); k > 0 {
		l.cur, l.free = l.free[k-1][:0], l.free[:k-1]
	}
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// Flush returns once every point accepted before it was called is written (or rejected by
// InfluxDB: then it returns that error), or with ctx's error and how many points are pending.
func (s *InfluxSink) Flush(ctx context.Context) error {
	targets := make([]int64, len(s.lanes))
	for i, l := range s.lanes {
		l.mu.Lock()
		l.seal()
		targets[i] = l.accepted
		l.mu.Unlock()
	}
	for i, l := range s.lanes {
		if err := s.flushLane(ctx, l, targets[i]); err != nil {
			return err
		}
	}
	s.mu.Lock()
	err := s.rejectErr
	s.rejectErr = nil
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("sink.InfluxSink.Flush: %w", err)
	}
	return nil
}

// flushLane waits until l has resolved its first target points.
func (s *InfluxSink) flushLane(ctx context.Context, l *influxLane, target int64) error {
	for {
		l.mu.Lock()
		ch, resolved := l.progress, l.resolved
		l.mu.Unlock()
		if resolved >= target {
			return nil
		}
		select {
		case <-ch:
		case <-l.done:
			l.mu.Lock()
			resolved = l.resolved
			l.mu.Unlock()
			if resolved < target {
				return fmt.Errorf("sink.InfluxSink.Flush: %w with %d points not written", ErrClosed, s.pending.Load())
			}
			return nil
		case <-ctx.Done():
			n := s.pending.Load()
			if last := s.lastError(); last != nil {
				return fmt.Errorf("sink.InfluxSink.Flush: %d points not yet written to %s (last error: %v): %w", n, s.opts.URL, last, ctx.Err())
			}
			return fmt.Errorf("sink.InfluxSink.Flush: %d points not yet written to %s: %w", n, s.opts.URL, ctx.Err())
		}
	}
}

// Close stops accepting points, keeps trying to write those buffered for up to CloseTimeout,
// then stops. It reports the points it could not write.
func (s *InfluxSink) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	for _, l := range s.lanes { // a Write that saw closed false has finished appending
		l.mu.Lock()
		l.mu.Unlock() //nolint:staticcheck // barrier
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.CloseTimeout)
	err := s.Flush(ctx)
	cancel()
	close(s.stop)
	s.abort()
	for _, l := range s.lanes {
		<-l.done
	}
	if p := s.pending.Load(); p > 0 {
		s.log.Error("InfluxDB sink closed with telemetry not written", "points", p, "last_error", s.lastError())
	}
	s.client.Close()
	if err != nil {
		return fmt.Errorf("sink.InfluxSink.Close: %w", err)
	}
	return nil
}

// Stats returns the sink's counters.
func (s *InfluxSink) Stats() InfluxStats {
	var accepted int64
	for _, l := range s.lanes {
		l.mu.Lock()
		accepted += l.accepted
		l.mu.Unlock()
	}
	return InfluxStats{
		Accepted: accepted,
		Written:  s.written.Load(),
		Pending:  s.pending.Load(),
		Dropped:  s.dropped.Load(),
		Rejected: s.rejected.Load(),
		Retries:  s.retries.Load(),
		Waits:    s.waits.Load(),
	}
}

// run is lane l's sender: it seals the filling batch every FlushInterval and sends batches in
// order.
func (s *InfluxSink) run(l *influxLane) {
	defer close(l.done)
	tick := time.NewTicker(s.opts.FlushInterval)
	defer tick.Stop()
	for {
		l.mu.Lock()
		var b batch
		if len(l.queue) > 0 {
			b = l.queue[0]
			l.queue[0] = batch{}
			l.queue = l.queue[1:]
		}
		l.mu.Unlock()
		if b.n > 0 {
			if !s.send(l, b) {
				return // Close gave up: it counts and logs what is left, once
			}
			continue
		}
		select {
		case <-l.kick:
		case <-tick.C:
			l.mu.Lock()
			l.seal()
			l.mu.Unlock()
		case <-s.stop:
			return // Close flushed already (or gave up)
		}
	}
}

// send writes b, retrying with backoff until it succeeds or InfluxDB refuses it for good
// (true), or Close gives up (false).
func (s *InfluxSink) send(l *influxLane, b batch) bool {
	wait := s.opts.RetryMin
	var failingSince time.Time
	var lastLog time.Time
	body := string(b.lines)
	for attempt := 1; ; attempt++ {
		if s.abortCtx.Err() != nil {
			return false
		}
		err := s.write.WriteRecord(s.abortCtx, body)
		if err == nil {
			s.written.Add(int64(b.n))
			if !failingSince.IsZero() {
				s.log.Info("InfluxDB writes recovered", "failed_attempts", attempt-1, "outage", time.Since(failingSince).Round(time.Millisecond))
			}
			s.resolve(l, b, nil)
			return true
		}
		if permanent(err) {
			// A partial write names the points InfluxDB dropped; it wrote the others.
			n := droppedPoints(err, b.n)
			s.rejected.Add(int64(n))
			s.written.Add(int64(b.n - n))
			s.log.Error("InfluxDB refused telemetry; dropped", "points", n, "batch", b.n, "err", err)
			s.resolve(l, b, fmt.Errorf("%w: InfluxDB refused %d of %d points: %w", ErrRejected, n, b.n, err))
			return true
		}
		s.retries.Add(1)
		now := time.Now()
		s.mu.Lock()
		l.lastErr, l.lastErrAt = err, now
		s.mu.Unlock()
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
			return false
		}
		wait = min(2*wait, s.opts.RetryMax)
	}
}

// lastError is the most recent failed attempt of any lane still failing, or nil.
func (s *InfluxSink) lastError() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var last error
	var at time.Time
	for _, l := range s.lanes {
		if l.lastErr != nil && l.lastErrAt.After(at) {
			last, at = l.lastErr, l.lastErrAt
		}
	}
	return last
}

// resolve records b as done (written, or rejected with err) and recycles its buffer.
func (s *InfluxSink) resolve(l *influxLane, b batch, err error) {
	s.mu.Lock()
	l.lastErr = nil
	if err != nil && s.rejectErr == nil {
		s.rejectErr = err
	}
	s.mu.Unlock()
	l.mu.Lock()
	l.resolved += int64(b.n)
	if len(l.free) < 4 {
		l.free = append(l.free, b.lines[:0])
	}
	close(l.progress)
	l.progress = make(chan struct{})
	l.mu.Unlock()
	s.release(int64(b.n))
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

// droppedPoints is how many of a refused batch's n points InfluxDB dropped: the "dropped=N"
// of InfluxDB 1.x's "partial write" answer (it wrote the rest), else all n.
func droppedPoints(err error, n int) int {
	msg := err.Error()
	i := strings.LastIndex(msg, "dropped=")
	if i < 0 {
		return n
	}
	d := msg[i+len("dropped="):]
	end := 0
	for end < len(d) && d[end] >= '0' && d[end] <= '9' {
		end++
	}
	if k, perr := strconv.Atoi(d[:end]); perr == nil && k >= 0 && k <= n {
		return k
	}
	return n
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
