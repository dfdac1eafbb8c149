// Package probe measures one WAN transport: it sends a probe every interval through that
// transport (ICMP echo, or a TCP connect) and reports each probe's fate.
//
// Every probe ends in exactly one final Result: answered (with its RTT) or Lost when no answer
// came within Config.Timeout. Before that, a probe still unanswered after its suspect deadline
// (the RFC 6298 retransmission timeout estimate SRTT + 4*RTTVAR from the transport's recent
// RTTs, at least Config.MinSuspect, at most Config.Timeout) is reported once as Suspect: the
// agent counts consecutive suspects to declare a transport down within a second, while loss
// statistics wait for the loss deadline, so a slow answer is not counted as lost. The loss
// deadline is three suspect deadlines once RTTs are known (TCP's RTO is its loss verdict; three
// of them leave room for a delay step), at most Config.Timeout: on a 20 ms path a probe is lost
// after 300 ms, not 1 s, so loss evidence reaches the SLA detector sooner.
//
// A probe is also reported once as Overdue when no answer came within its down deadline,
// SRTT + Config.DelayStep + max(4*RTTVAR, 30ms): the latest a reply could come if the path had
// only become DelayStep slower. Only Overdue probes may make the agent declare a transport
// dead, so a delay step of up to DelayStep never does, while a blackhole is told from it in
// about DelayStep + 30 ms. An answer that comes after its probe was Lost (before Timeout) is
// reported as Late: not a window sample (the loss is counted), but proof the path works, and an
// RTT sample for the deadlines, so a path that became much slower gets longer deadlines.
//
// While the caller marks the transport suspect (Pace.SetFast), probes go every FastInterval
// instead of Interval, within a budget: on average at most twice the configured rate, in bursts
// of up to FastBudget.
package probe

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/net/bpf"
	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
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
	// DelayStep is the largest sudden increase of the RTT that is not taken for a dead link: a
	// probe is Overdue after SRTT + DelayStep + max(4*RTTVAR, 30ms); default 250ms.
	DelayStep time.Duration
	// FastInterval is the interval while the transport is suspect; default Interval/20, at
	// least 10ms. FastBudget is the longest burst of fast probing; default 20s. Fast probing
	// time refills so that the average rate stays at most twice Interval's.
	FastInterval time.Duration
	FastBudget   time.Duration
	Mark         uint32 // SO_MARK on the probes (the transport's policy-routing mark); 0: none
	Interface    string // SO_BINDTODEVICE; "": none
	Source       string // source address; "": the kernel's choice
}

// Result is what became of one probe.
type Result struct {
	Target  string
	Sent    time.Time
	RTT     time.Duration // answered probes (and Late ones)
	Lost    bool          // final: no answer within the loss deadline
	Suspect bool          // not final: no answer within the suspect deadline yet
	Overdue bool          // not final: no answer within the down deadline yet
	Late    bool          // after Lost: the answer came after all, RTT set
}

// Final reports whether r is a probe's final result: answered in time, or Lost.
func (r Result) Final() bool { return !r.Suspect && !r.Overdue && !r.Late }

// downSlack is the least room the down deadline leaves above SRTT + DelayStep, for the
// scheduling of the responder and of the agent on a busy machine.
const downSlack = 30 * time.Millisecond

// A down deadline whose timer fires more than lateTimer after it, on a machine busy enough that
// an answer may be waiting unread in a socket, is put off once by as long as it was late (at
// least minPutOff, at most maxPutOff): the goroutine reading that answer gets to run first.
const (
	lateTimer = 5 * time.Millisecond
	minPutOff = 10 * time.Millisecond
	maxPutOff = 100 * time.Millisecond
)

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
	if c.DelayStep <= 0 {
		c.DelayStep = 250 * time.Millisecond
	}
	if c.FastInterval <= 0 {
		c.FastInterval = max(c.Interval/20, 10*time.Millisecond)
	}
	c.FastInterval = min(c.FastInterval, c.Interval)
	if c.FastBudget <= 0 {
		c.FastBudget = 20 * time.Second
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
	return RunPaced(ctx, c, nil, emit)
}

// RunPaced is Run with a Pace through which the caller speeds probing up while the transport
// is suspect; nil: always Interval.
func RunPaced(ctx context.Context, c Config, pace *Pace, emit func(Result)) error {
	if err := c.defaults(); err != nil {
		return err
	}
	if pace == nil {
		pace = NewPace()
	}
	t := newTracker(c, emit)
	defer t.stop()
	s := newSchedule(c, pace)
	defer s.timer.Stop()
	switch c.Method {
	case TCP, HTTP:
		return runConnect(ctx, c, t, s)
	default:
		return runICMP(ctx, c, t, s)
	}
}

// Pace is how the caller asks a running prober to go faster. Safe for concurrent use.
type Pace struct {
	fast atomic.Bool
	wake chan struct{}
}

// NewPace returns a Pace at the normal rate.
func NewPace() *Pace { return &Pace{wake: make(chan struct{}, 1)} }

// SetFast turns fast probing on or off; turning it on takes effect at once (the next probe
// goes FastInterval after the previous one), within the budget.
func (p *Pace) SetFast(on bool) {
	if p.fast.Swap(on) != on && on {
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
}

// Fast reports whether fast probing is asked for.
func (p *Pace) Fast() bool { return p.fast.Load() }

// schedule times the probes: Interval, or FastInterval while the pace is fast and the budget
// (time of fast probing, refilled at the rate that keeps the average at most twice Interval's)
// lasts.
type schedule struct {
	c      Config
	pace   *Pace
	timer  *time.Timer
	budget time.Duration
	refill float64 // budget gained per unit of time
	last   time.Time
	fast   bool // the wait in progress is a fast one
}

func newSchedule(c Config, pace *Pace) *schedule {
	s := &schedule{c: c, pace: pace, timer: time.NewTimer(time.Hour), budget: c.FastBudget, last: time.Now()}
	s.timer.Stop()
	if ratio := float64(c.Interval) / float64(c.FastInterval); ratio > 1 {
		s.refill = 1 / (ratio - 1) // f*ratio + (1-f) = 2 for a fraction f of the time fast
	}
	return s
}

// wait returns after the next probe's interval, or false when ctx ends (or errc has an error,
// returned). sent is when the previous probe went.
func (s *schedule) wait(ctx context.Context, sent time.Time, errc <-chan error) (bool, error) {
	now := time.Now()
	s.budget = min(s.budget+time.Duration(s.refill*float64(now.Sub(s.last))), s.c.FastBudget)
	s.last = now
	d := s.c.Interval
	s.fast = s.pace.Fast() && s.budget >= s.c.FastInterval
	if s.fast {
		d = s.c.FastInterval
		s.budget -= d
	}
	s.timer.Reset(max(0, time.Until(sent.Add(d))))
	for {
		select {
		case <-ctx.Done():
			return false, nil
		case err := <-errc:
			return false, err
		case <-s.timer.C:
			return true, nil
		case <-s.pace.wake:
			if s.fast || s.budget < s.c.FastInterval {
				continue
			}
			s.fast = true
			s.budget -= s.c.FastInterval
			// Go >= 1.23 timers: Reset never delivers a stale expiry, no draining needed (a
			// drain after an expired Stop would block)
			s.timer.Reset(max(0, time.Until(sent.Add(s.c.FastInterval))))
		}
	}
}

// ---- tracker: deadlines and results ----------------------------------------------------------

type pending struct {
	target  string
	sent    time.Time
	timer   *time.Timer
	stages  [3]time.Duration // suspect, lost, overdue deadlines after sent, each at most Timeout
	emitted [3]bool
	put     bool // the overdue verdict was put off once (its timer fired late)
}

const (
	stSuspect = iota
	stLost
	stOverdue
)

type tracker struct {
	c            Config
	mu           sync.Mutex
	emitMu       sync.Mutex // serialises emit without holding mu
	emit         func(Result)
	out          map[uint64]*pending // until answered or Timeout
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

// overdueAfter is the down deadline: a reply later than this is not a delay step of at most
// DelayStep (nor a busy machine's scheduling, within max(4*RTTVAR, downSlack)).
func (t *tracker) overdueAfter() time.Duration {
	if !t.haveRTT {
		return t.c.Timeout
	}
	return min(t.srtt+t.c.DelayStep+max(4*t.rttvar, downSlack), t.c.Timeout)
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
	sa := t.suspectAfter()
	p := &pending{target: target, sent: at, stages: [3]time.Duration{sa, min(3*sa, t.c.Timeout), t.overdueAfter()}}
	t.out[id] = p
	p.timer = time.AfterFunc(sa, func() { t.expire(id) })
}

// expire reports every deadline of probe id that has passed, in order (Suspect always first:
// it is the earliest), and waits for the next one; at Timeout the probe is forgotten.
func (t *tracker) expire(id uint64) {
	t.mu.Lock()
	p, ok := t.out[id]
	if !ok || t.stopped {
		t.mu.Unlock()
		return
	}
	age := time.Since(p.sent)
	var rs []Result
	next := t.c.Timeout
	for {
		st := -1
		for i, d := range p.stages {
			if !p.emitted[i] && (st < 0 || d < p.stages[st]) {
				st = i
			}
		}
		if st < 0 {
			break
		}
		if p.stages[st] > age {
			next = p.stages[st]
			break
		}
		if late := age - p.stages[st]; st == stOverdue && !p.put && late > lateTimer {
			p.put = true
			p.stages[st] = age + min(max(late, minPutOff), maxPutOff)
			continue
		}
		p.emitted[st] = true
		r := Result{Target: p.target, Sent: p.sent}
		switch st {
		case stSuspect:
			r.Suspect = true
		case stLost:
			r.Lost = true
		case stOverdue:
			r.Overdue = true
		}
		rs = append(rs, r)
	}
	if p.emitted == [3]bool{true, true, true} && age >= t.c.Timeout {
		delete(t.out, id)
	} else {
		p.timer.Reset(max(next-age, 0))
	}
	t.unlockAndSend(rs...)
}

// failed reports a probe that could not be sent: suspect, lost and overdue at once (nothing can
// answer it).
func (t *tracker) failed(target string, at time.Time) {
	t.mu.Lock()
	if t.stopped {
		t.mu.Unlock()
		return
	}
	t.unlockAndSend(Result{Target: target, Sent: at, Suspect: true}, Result{Target: target, Sent: at, Lost: true},
		Result{Target: target, Sent: at, Overdue: true})
}

// answered records the answer to probe id, received at: an answer, or a Late one if the probe
// was already Lost; answers to unknown probes (past Timeout) are ignored. Every answer is an RTT
// sample: each probe is sent once, so there is no retransmission ambiguity (Karn).
func (t *tracker) answered(id uint64, at time.Time) {
	t.mu.Lock()
	p, ok := t.out[id]
	if !ok || t.stopped {
		t.mu.Unlock()
		return
	}
	delete(t.out, id)
	p.timer.Stop()
	rtt := at.Sub(p.sent)
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
	t.unlockAndSend(Result{Target: p.target, Sent: p.sent, RTT: rtt, Late: p.emitted[stLost]})
}

// unsent forgets probe id, registered by sent but not sent after all (failed reports it).
func (t *tracker) unsent(id uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p, ok := t.out[id]; ok {
		p.timer.Stop()
		delete(t.out, id)
	}
}

func (t *tracker) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopped = true
	for id, p := range t.out {
		p.timer.Stop()
		delete(t.out, id)
	}
}

// ---- ICMP --------------------------------------------------------------------------------------

// runICMP sends every probe of the transport from one raw ICMP socket per address family, bound
// to the transport (mark, interface, source), and reads the answers on one goroutine per socket
// that sleeps in the netpoller until a packet comes, with a kernel filter (BPF) that passes only
// echo replies carrying this prober's identifier: a probe costs a send, a receive and its
// deadline timers. The prober before this one (pro-bing, a one-shot Pinger per probe) opened a
// socket and started goroutines and read-deadline loops for every probe: about 0.7 ms of CPU a
// probe, so that 100 ms probes on 4 transports cost 2.4 % of a core (docs/benchmarks.md).
//
// A socket whose send fails (the interface is down or gone) is closed and opened again for the
// next probe: a socket bound to an interface that was deleted would stay bound to the old
// interface index when it comes back. Failing that, each probe is lost at once.
func runICMP(ctx context.Context, c Config, t *tracker, s *schedule) error {
	addrs := make([]*net.IPAddr, len(c.Targets))
	for i, target := range c.Targets {
		addrs[i] = &net.IPAddr{IP: net.ParseIP(target)} // validated by defaults
	}
	e := &echoer{c: c, t: t, id: uint16(rand.Uint32()), tag: rand.Uint64()}
	defer e.close()
	// the first socket of each family is opened before any probe: an error here (say, no
	// CAP_NET_RAW) is the caller's to retry
	for _, a := range addrs {
		if _, err := e.conn(a.IP.To4() == nil); err != nil {
			return err
		}
	}
	for seq := uint64(0); ; seq++ {
		ti := int(seq % uint64(len(c.Targets)))
		sent := e.send(seq, c.Targets[ti], addrs[ti])
		if ok, err := s.wait(ctx, sent, nil); !ok {
			return err
		}
	}
}

// echoer is runICMP's sockets, at most one per family (index 0: IPv4, 1: IPv6).
type echoer struct {
	c     Config
	t     *tracker
	id    uint16 // the echo identifier of this prober's requests
	tag   uint64 // in every payload, with the probe's id: a reply to another prober is ignored
	conns [2]*echoConn
	wg    sync.WaitGroup
}

type echoConn struct {
	pc     *net.IPConn
	broken atomic.Bool // its reader stopped: open another
}

// echoPayload is the data of every request: tag, probe id.
const echoPayload = 16

func (e *echoer) conn(v6 bool) (*echoConn, error) {
	f := 0
	if v6 {
		f = 1
	}
	if ec := e.conns[f]; ec != nil && !ec.broken.Load() {
		return ec, nil
	}
	if e.conns[f] != nil {
		e.conns[f].pc.Close()
		e.conns[f] = nil
	}
	network, laddr := "ip4:icmp", "0.0.0.0"
	if v6 {
		network, laddr = "ip6:ipv6-icmp", "::"
	}
	if e.c.Source != "" {
		laddr = e.c.Source
	}
	lc := net.ListenConfig{Control: bindControl(e.c)}
	pc, err := lc.ListenPacket(context.Background(), network, laddr)
	if err != nil {
		return nil, fmt.Errorf("probe: icmp socket: %w", err)
	}
	ipc := pc.(*net.IPConn)
	if v6 {
		err = ipv6.NewPacketConn(ipc).SetBPF(echoFilter(e.id, true))
	} else {
		err = ipv4.NewPacketConn(ipc).SetBPF(echoFilter(e.id, false))
	}
	if err != nil {
		ipc.Close()
		return nil, fmt.Errorf("probe: icmp socket filter: %w", err)
	}
	ec := &echoConn{pc: ipc}
	e.conns[f] = ec
	e.wg.Add(1)
	go e.read(ec, v6)
	return ec, nil
}

// echoFilter is the kernel filter of a socket: it passes only echo replies with identifier id,
// so that a raw socket (which gets a copy of every ICMP packet of the namespace) wakes its reader
// only for its own answers. An IPv4 raw socket's filter sees the IP header first, an IPv6 one's
// the ICMPv6 header.
func echoFilter(id uint16, v6 bool) []bpf.RawInstruction {
	skipIP, reply := bpf.Instruction(bpf.LoadMemShift{Off: 0}), uint32(ipv4.ICMPTypeEchoReply) // X = the IP header's length
	if v6 {
		skipIP, reply = bpf.LoadConstant{Dst: bpf.RegX, Val: 0}, uint32(ipv6.ICMPTypeEchoReply)
	}
	raw, err := bpf.Assemble([]bpf.Instruction{
		skipIP,
		bpf.LoadIndirect{Off: 0, Size: 1}, // type
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: reply, SkipTrue: 3},
		bpf.LoadIndirect{Off: 4, Size: 2}, // identifier
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: uint32(id), SkipTrue: 1},
		bpf.RetConstant{Val: 1 << 16},
		bpf.RetConstant{Val: 0},
	})
	if err != nil {
		panic(err) // a constant program: found by every test
	}
	return raw
}

// send sends probe seq to target and returns when it went; a probe that cannot be sent is lost
// at once (nothing can answer it), and its socket is opened again for the next one.
func (e *echoer) send(seq uint64, target string, addr *net.IPAddr) time.Time {
	v6 := addr.IP.To4() == nil
	ec, err := e.conn(v6)
	if err != nil {
		now := time.Now()
		e.t.failed(target, now)
		return now
	}
	typ := icmp.Type(ipv4.ICMPTypeEcho)
	if v6 {
		typ = ipv6.ICMPTypeEchoRequest
	}
	data := make([]byte, echoPayload)
	binary.BigEndian.PutUint64(data, e.tag)
	binary.BigEndian.PutUint64(data[8:], seq)
	b, err := (&icmp.Message{Type: typ, Body: &icmp.Echo{ID: int(e.id), Seq: int(uint16(seq)), Data: data}}).Marshal(nil)
	if err != nil {
		panic(err) // an echo request always marshals
	}
	now := time.Now()
	e.t.sent(seq, target, now) // before the send: the answer may come before WriteTo returns
	if _, err := ec.pc.WriteTo(b, addr); err != nil {
		e.t.unsent(seq)
		e.t.failed(target, now)
		ec.broken.Store(true)
		ec.pc.Close()
	}
	return now
}

// read hands every answer on ec to the tracker until ec is closed.
func (e *echoer) read(ec *echoConn, v6 bool) {
	defer e.wg.Done()
	defer ec.broken.Store(true)
	proto := 1 // ICMP
	if v6 {
		proto = 58
	}
	buf := make([]byte, 1500)
	for {
		n, _, err := ec.pc.ReadFrom(buf)
		at := time.Now()
		if err != nil {
			return // closed, or a socket error: the next send opens another
		}
		m, err := icmp.ParseMessage(proto, buf[:n])
		if err != nil {
			continue
		}
		if echo, ok := m.Body.(*icmp.Echo); ok && echo.ID == int(e.id) && len(echo.Data) >= echoPayload &&
			binary.BigEndian.Uint64(echo.Data) == e.tag {
			e.t.answered(binary.BigEndian.Uint64(echo.Data[8:]), at)
		}
	}
}

func (e *echoer) close() {
	for _, ec := range e.conns {
		if ec != nil {
			ec.pc.Close()
		}
	}
	e.wg.Wait()
}

// bindControl binds a socket to the transport: its policy-routing mark and its interface.
func bindControl(c Config) func(network, address string, rc syscall.RawConn) error {
	return func(network, address string, rc syscall.RawConn) error {
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
	}
}

// ---- TCP connect and HTTP ---------------------------------------------------------------------

// runConnect probes with TCP connects, or HTTP GETs over connections made the same way (bound
// to the transport, a fresh connection per probe so each one measures the path).
func runConnect(ctx context.Context, c Config, t *tracker, s *schedule) error {
	d := net.Dialer{Timeout: c.Timeout, Control: bindControl(c)}
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
				t.answered(seq, time.Now())
			}
		}()
		if ok, _ := s.wait(ctx, start, nil); !ok {
			return nil
		}
	}
}
