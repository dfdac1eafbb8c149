// Package probe measures one WAN transport: it sends a probe every interval through that
// transport (ICMP echo with pro-bing, or a TCP connect) and reports each probe's fate.
//
// Every probe ends in exactly one final Result: answered (with its RTT) or Lost when no answer
// came within Config.Timeout. Before that, a probe still unanswered after its suspect deadline
// (the RFC 6298 retransmission timeout estimate SRTT + 4*RTTVAR from the transport's recent
// RTTs, at least Config.MinSuspect, at most Config.Timeout) is reported once as Suspect: the
// agent counts consecutive suspects to declare a transport down within a second, while loss
// statistics wait for the full timeout, so a slow answer is not counted as lost.
package probe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"syscall"
	"time"

	probing "github.com/prometheus-community/pro-bing"
)

// Methods.
const (
	ICMP = "icmp"
	TCP  = "tcp"
	HTTP = "http" // a GET; any HTTP answer proves the path (targets are http:// or https:// URLs)
)

// Config is one transport's probing.
type Config struct {
	Method     string        // icmp (default), tcp or http
	Targets    []string      // icmp: IP addresses; tcp: host:port; http: URLs; probed in turn
	Interval   time.Duration // between probes; default 200ms
	Timeout    time.Duration // a probe unanswered this long is lost; default 1s
	MinSuspect time.Duration // floor of the suspect deadline; default 100ms
	Mark       uint32        // SO_MARK on the probes (the transport's policy-routing mark); 0: none
	Interface  string        // SO_BINDTODEVICE; "": none
	Source     string        // source address; "": the kernel's choice
}

// Result is what became of one probe.
type Result struct {
	Target  string
	Sent    time.Time
	RTT     time.Duration // answered probes
	Lost    bool          // final: no answer within Timeout
	Suspect bool          // not final: no answer within the suspect deadline yet
}

func (c *Config) defaults() error {
	if c.Method == "" {
		c.Method = ICMP
	}
	if c.Interval <= 0 {
		c.Interval = 200 * time.Millisecond
	}
	if c.Timeout <= 0 {
		c.Timeout = time.Second
	}
	if c.MinSuspect <= 0 {
		c.MinSuspect = 100 * time.Millisecond
	}
	if c.MinSuspect > c.Timeout {
		c.MinSuspect = c.Timeout
	}
	if len(c.Targets) == 0 {
		return errors.New("probe: no targets")
	}
	switch c.Method {
	case ICMP:
		for _, t := range c.Targets {
			if net.ParseIP(t) == nil {
				return fmt.Errorf("probe: icmp target %q is not an IP address", t)
			}
		}
	case TCP:
		for _, t := range c.Targets {
			if _, _, err := net.SplitHostPort(t); err != nil {
				return fmt.Errorf("probe: tcp target %q: want host:port", t)
			}
		}
	case HTTP:
		for _, t := range c.Targets {
			u, err := url.Parse(t)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return fmt.Errorf("probe: http target %q: want an http:// or https:// URL", t)
			}
		}
	default:
		return fmt.Errorf("probe: unknown method %q (icmp, tcp or http)", c.Method)
	}
	return nil
}

// Run probes until ctx ends, handing every Result to emit (from several goroutines, never
// concurrently: emit is called with the tracker's lock released but serialised by it).
func Run(ctx context.Context, c Config, emit func(Result)) error {
	if err := c.defaults(); err != nil {
		return err
	}
	t := newTracker(c, emit)
	defer t.stop()
	switch c.Method {
	case TCP, HTTP:
		return runConnect(ctx, c, t)
	default:
		return runICMP(ctx, c, t)
	}
}

// ---- tracker: deadlines and results ----------------------------------------------------------

type pending struct {
	target    string
	sent      time.Time
	suspected bool
	suspect   *time.Timer
	lost      *time.Timer
}

type tracker struct {
	c            Config
	mu           sync.Mutex
	emitMu       sync.Mutex // serialises emit without holding mu
	emit         func(Result)
	out          map[uint64]*pending
	srtt, rttvar time.Duration
	haveRTT      bool
	stopped      bool
}

func newTracker(c Config, emit func(Result)) *tracker {
	return &tracker{c: c, emit: emit, out: map[uint64]*pending{}}
}

func (t *tracker) suspectAfter() time.Duration {
	if !t.haveRTT {
		return t.c.Timeout
	}
	return min(max(t.srtt+4*t.rttvar, t.c.MinSuspect), t.c.Timeout)
}

// unlockAndSend releases t.mu and emits rs, taking emitMu first so that results leave in the
// order their causes were decided (a suspect never overtakes the answer that cancelled it).
func (t *tracker) unlockAndSend(rs ...Result) {
	t.emitMu.Lock()
	t.mu.Unlock()
	defer t.emitMu.Unlock()
	for _, r := range rs {
		t.emit(r)
	}
}

// sent registers probe id, sent now to target.
func (t *tracker) sent(id uint64, target string, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	p := &pending{target: target, sent: at}
	t.out[id] = p
	p.suspect = time.AfterFunc(t.suspectAfter(), func() { t.expire(id, false) })
	p.lost = time.AfterFunc(t.c.Timeout, func() { t.expire(id, true) })
}

// expire handles probe id's suspect deadline, or its timeout (final). A probe is always
// reported Suspect before Lost, even when both deadlines are the same.
func (t *tracker) expire(id uint64, final bool) {
	t.mu.Lock()
	p, ok := t.out[id]
	if !ok || t.stopped {
		t.mu.Unlock()
		return
	}
	var rs []Result
	if !p.suspected {
		p.suspected = true
		rs = append(rs, Result{Target: p.target, Sent: p.sent, Suspect: true})
	}
	if final {
		delete(t.out, id)
		rs = append(rs, Result{Target: p.target, Sent: p.sent, Lost: true})
	}
	t.unlockAndSend(rs...)
}

// failed reports a probe that could not be sent: suspect and lost at once.
func (t *tracker) failed(target string, at time.Time) {
	t.mu.Lock()
	if t.stopped {
		t.mu.Unlock()
		return
	}
	t.unlockAndSend(Result{Target: target, Sent: at, Suspect: true}, Result{Target: target, Sent: at, Lost: true})
}

// answered records the answer to probe id; answers to lost or unknown probes are ignored.
func (t *tracker) answered(id uint64, rtt time.Duration) {
	t.mu.Lock()
	p, ok := t.out[id]
	if ok {
		delete(t.out, id)
		p.suspect.Stop()
		p.lost.Stop()
		// RFC 6298 section 2
		if !t.haveRTT {
			t.srtt, t.rttvar, t.haveRTT = rtt, rtt/2, true
		} else {
			d := t.srtt - rtt
			if d < 0 {
				d = -d
			}
			t.rttvar = (3*t.rttvar + d) / 4
			t.srtt = (7*t.srtt + rtt) / 8
		}
	}
	if !ok || t.stopped {
		t.mu.Unlock()
		return
	}
	t.unlockAndSend(Result{Target: p.target, Sent: p.sent, RTT: rtt})
}

func (t *tracker) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopped = true
	for id, p := range t.out {
		p.suspect.Stop()
		p.lost.Stop()
		delete(t.out, id)
	}
}

// ---- ICMP with pro-bing ----------------------------------------------------------------------

// epochProbes bounds how many probes one pro-bing Pinger sends: it remembers every unanswered
// sequence number for its lifetime (prometheus-community/pro-bing#31), so the agent replaces
// it with a fresh one after this many, keeping memory flat on a dead transport.
const epochProbes = 3000

func runICMP(ctx context.Context, c Config, t *tracker) error {
	// One pinger per target, each at Interval*len(Targets) and started in turn, so the
	// transport sees one probe per Interval. One target failing ends them all, so that the
	// caller sees the error and retries, rather than one target silently going unprobed.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errc := make(chan error, len(c.Targets))
	for i, target := range c.Targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-time.After(time.Duration(i) * c.Interval):
			case <-ctx.Done():
				return
			}
			if err := icmpTarget(ctx, c, t, uint64(i), target, c.Interval*time.Duration(len(c.Targets))); err != nil {
				errc <- err
				cancel()
			}
		}()
	}
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		return err
	}
	return ctx.Err()
}

// icmpTarget probes one target with a succession of pinger epochs until ctx ends.
func icmpTarget(ctx context.Context, c Config, t *tracker, ti uint64, target string, every time.Duration) error {
	for epoch := uint64(0); ctx.Err() == nil; epoch++ {
		p := probing.New(target)
		p.SetPrivileged(true) // raw socket: unprivileged ICMP is off on routers as here
		p.RecordRtts, p.RecordTTLs = false, false
		p.Interval = every
		p.Count = epochProbes
		p.Source = c.Source
		p.InterfaceName = c.Interface
		if c.Mark != 0 {
			p.SetMark(uint(c.Mark))
		}
		p.SetLogger(probing.NoopLogger{})
		if err := p.Resolve(); err != nil {
			return fmt.Errorf("probe %s: %w", target, err)
		}
		// ids: target index, epoch and sequence, so answers of an old epoch still match
		id := func(seq int) uint64 { return ti<<56 | (epoch&0xffffff)<<32 | uint64(seq) }
		var last sync.Once
		done := make(chan struct{})
		p.OnSend = func(pkt *probing.Packet) {
			t.sent(id(pkt.Seq), target, time.Now())
			if pkt.Seq == epochProbes-1 { // the last of this epoch: let its answer come, then end
				last.Do(func() {
					time.AfterFunc(c.Timeout, p.Stop)
					close(done)
				})
			}
		}
		p.OnRecv = func(pkt *probing.Packet) { t.answered(id(pkt.Seq), pkt.Rtt) }
		// A send that fails (the interface is gone, no route) is a lost probe at once: pro-bing
		// calls OnSend only for probes that left, so without this a dead link would report
		// nothing at all instead of losses.
		p.OnSendError = func(pkt *probing.Packet, err error) { t.failed(target, time.Now()) }
		errc := make(chan error, 1)
		go func() { errc <- p.RunWithContext(ctx) }()
		select {
		case <-done: // start the next epoch while this one waits for its last answers
			go func() { <-errc }()
			select {
			case <-time.After(every):
			case <-ctx.Done():
			}
		case err := <-errc:
			if ctx.Err() != nil {
				return nil
			}
			if err != nil {
				return fmt.Errorf("probe %s: %w", target, err)
			}
		}
	}
	return nil
}

// ---- TCP connect and HTTP ---------------------------------------------------------------------

// runConnect probes with TCP connects, or HTTP GETs over connections made the same way (bound
// to the transport, a fresh connection per probe so each one measures the path).
func runConnect(ctx context.Context, c Config, t *tracker) error {
	d := net.Dialer{Timeout: c.Timeout, Control: func(network, address string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			if c.Mark != 0 {
				serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_MARK, int(c.Mark))
			}
			if serr == nil && c.Interface != "" {
				serr = syscall.BindToDevice(int(fd), c.Interface)
			}
		})
		if err != nil {
			return err
		}
		return serr
	}}
	if c.Source != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(c.Source)}
	}
	hc := &http.Client{Timeout: c.Timeout, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true,
		TLSHandshakeTimeout: c.Timeout, ForceAttemptHTTP2: false}}
	defer hc.CloseIdleConnections()
	probe := func(target string) bool {
		if c.Method == HTTP {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
			if err != nil {
				return false
			}
			resp, err := hc.Do(req)
			if err != nil {
				return false
			}
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
			return true // any status: the server answered through the transport
		}
		conn, err := d.DialContext(ctx, "tcp", target)
		if err == nil {
			conn.Close()
			return true
		}
		return errors.Is(err, syscall.ECONNREFUSED) // a reset came back through the transport: it works
	}
	tick := time.NewTicker(c.Interval)
	defer tick.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for seq := uint64(0); ; seq++ {
		target := c.Targets[seq%uint64(len(c.Targets))]
		start := time.Now()
		t.sent(seq, target, start)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if probe(target) {
				t.answered(seq, time.Since(start))
			}
		}()
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}
