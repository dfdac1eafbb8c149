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

// runICMP sends one probe per Interval through a short-lived pro-bing Pinger (Count 1) on a
// fresh raw socket, targets in turn. A long-lived Pinger would cost more at these rates: its
// receive loop wakes on random read deadlines (about 20 times a second) whether or not a probe
// is out, which was most of the agent's CPU, and it remembers every unanswered sequence number
// for its lifetime (prometheus-community/pro-bing#31). A one-shot Pinger lives until its answer
// or Timeout, so a probe's cost is a socket and a round trip, and a dead transport holds at most
// Timeout/Interval of them.
func runICMP(ctx context.Context, c Config, t *tracker) error {
	addrs := make([]*net.IPAddr, len(c.Targets))
	for i, target := range c.Targets {
		addrs[i] = &net.IPAddr{IP: net.ParseIP(target)} // validated by defaults
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	errc := make(chan error, 1)
	tick := time.NewTicker(c.Interval)
	defer tick.Stop()
	for seq := uint64(0); ; seq++ {
		ti := int(seq % uint64(len(c.Targets)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := icmpOnce(ctx, c, t, seq, c.Targets[ti], addrs[ti]); err != nil {
				select {
				case errc <- err:
				default:
				}
			}
		}()
		select {
		case <-ctx.Done():
			return nil
		case err := <-errc:
			return err // the socket cannot be opened (say, no CAP_NET_RAW): the caller retries
		case <-tick.C:
		}
	}
}

// icmpOnce sends probe id and waits for its answer, at most Timeout.
func icmpOnce(ctx context.Context, c Config, t *tracker, id uint64, target string, addr *net.IPAddr) error {
	p := probing.New(target)
	p.SetIPAddr(addr)
	p.SetPrivileged(true) // raw socket: unprivileged ICMP is off on routers as here
	p.RecordRtts, p.RecordTTLs = false, false
	p.Count = 1
	p.Timeout = c.Timeout
	p.Interval = c.Timeout // never a second send
	p.Source = c.Source
	p.InterfaceName = c.Interface
	if c.Mark != 0 {
		p.SetMark(uint(c.Mark))
	}
	p.SetLogger(probing.NoopLogger{})
	sent := false
	p.OnSend = func(*probing.Packet) { sent = true; t.sent(id, target, time.Now()) }
	p.OnRecv = func(pkt *probing.Packet) { t.answered(id, pkt.Rtt) }
	// A send that fails (the interface is gone, no route) is a lost probe at once: pro-bing
	// calls OnSend only for probes that left, so without this a dead link would report
	// nothing at all instead of losses.
	p.OnSendError = func(*probing.Packet, error) { sent = true; t.failed(target, time.Now()) }
	err := p.RunWithContext(ctx)
	if err != nil && ctx.Err() == nil && !sent {
		t.failed(target, time.Now())
		return fmt.Errorf("probe %s: %w", target, err)
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
