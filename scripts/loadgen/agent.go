package main

import (
	"context"
	"crypto/tls"
	"log"
	"math"
	"math/bits"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Topics, as telemetry.Topic builds them (the loader keeps to the published contract rather
// than importing the controller's packages: it is a client like any agent).
const topicRoot = "edgewan/v1/sites/"

func topic(site, kind string) string { return topicRoot + site + "/" + kind }

// counters are the agents' totals, updated atomically.
type counters struct {
	connected   atomic.Int64
	connectErrs atomic.Int64
	sent        atomic.Int64 // telemetry reports written
	acked       atomic.Int64 // telemetry reports acknowledged (PUBACK)
	publishErrs atomic.Int64 // writes that failed
	disconnects atomic.Int64 // connections lost while running
	late        atomic.Int64 // reports skipped because the agent's goroutine was over a period late
	fromBroker  atomic.Int64 // messages the controller sent the agents (policy, decisions)
	measureSent atomic.Int64 // sent within the measured window
	measuring   atomic.Bool
	ackRTT      histogram // PUBACK round trip of telemetry, while measuring
}

// agent is one simulated agent: one site, one MQTT connection.
type agent struct {
	ss    siteState
	index int
	tc    *tls.Config // the agent's own (its TLS session cache is its own)
	c     *mqttConn
	cnt   *counters

	seq    uint64
	buf    []byte
	topic  string
	sentAt [64]int64 // UnixNano per packet id % 64, for the PUBACK round trip
	closed atomic.Bool
	down   chan struct{} // closed when the current connection's reader stops (the connection is gone)
}

// connect opens the agent's connection as a real agent would: will (retained "offline" status),
// subscriptions to its policy and decisions, then a retained "online" status.
func (a *agent) connect(ctx context.Context, addr string, clean bool) error {
	will := []byte(`{"v":1,"device":"` + a.ss.Device + `","state":"offline"}`)
	c, err := dialMQTT(ctx, addr, a.tc, connectOpts{ClientID: a.ss.Username, Username: a.ss.Username, Password: a.ss.Password,
		KeepAlive: 60 * time.Second, CleanSession: clean, WillTopic: topic(a.ss.ID, "status"), WillPayload: will, WillRetain: true})
	if err != nil {
		return err
	}
	a.c = c
	a.closed.Store(false)
	a.topic = topic(a.ss.ID, "telemetry")
	a.down = make(chan struct{})
	go a.read(c, a.down)
	online := `{"v":1,"device":"` + a.ss.Device + `","state":"online","version":"loadgen","ts":"` + time.Now().UTC().Format(time.RFC3339Nano) + `"}`
	err = c.subscribe(1, topic(a.ss.ID, "policy"), topic(a.ss.ID, "decisions"))
	if err == nil {
		_, err = c.publish(topic(a.ss.ID, "status"), []byte(online), 1, true)
	}
	if err != nil {
		a.closed.Store(true)
		_ = c.conn.Close()
		a.c = nil
	}
	return err
}

// hasTicket reports whether the agent holds a TLS session to resume.
func (a *agent) hasTicket() bool {
	if a.tc.ClientSessionCache == nil {
		return false
	}
	_, ok := a.tc.ClientSessionCache.Get(a.tc.ServerName)
	return ok
}

// read handles what the broker sends: PUBACKs of telemetry, and the controller's messages,
// acknowledged at QoS 1. It closes down when the connection is gone.
func (a *agent) read(c *mqttConn, down chan struct{}) {
	defer close(down)
	var buf []byte
	for {
		typ, flags, body, err := c.readPacket(buf)
		if err != nil {
			if !a.closed.Load() && a.cnt.disconnects.Add(1) <= 5 { // a controller restart drops them all
				log.Printf("agent %s: connection lost: %v", a.ss.Name, err)
			}
			// Its descriptor now, as an agent does, not at some later collection's finalizer:
			// with --gc-limit there may be none before the fleet is back, and 10,000 dead
			// connections plus 10,000 new ones exceed the descriptor limit.
			_ = c.conn.Close()
			return
		}
		buf = body[:cap(body)]
		switch typ {
		case pktPuback:
			if len(body) < 2 {
				continue
			}
			id := uint16(body[0])<<8 | uint16(body[1])
			if t0 := atomic.SwapInt64(&a.sentAt[id%64], 0); t0 != 0 {
				a.cnt.acked.Add(1)
				if a.cnt.measuring.Load() {
					a.cnt.ackRTT.record(time.Duration(time.Now().UnixNano() - t0))
				}
			}
		case pktPublish:
			a.cnt.fromBroker.Add(1)
			if _, id, qos, _, err := parsePublish(flags, body); err == nil && qos > 0 {
				_ = c.puback(id)
			}
		}
	}
}

// run reports every period, at phase into each period, from start until stop.
func (a *agent) run(ctx context.Context, start, stop time.Time, period, phase time.Duration, seq0 uint64) {
	a.seq = seq0
	next := start.Add(phase)
	t := time.NewTimer(time.Until(next))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		if !now.Before(stop) {
			return
		}
		if now.Sub(next) > period {
			// The machine could not run this goroutine for a whole period: skip, do not burst.
			skipped := int64(now.Sub(next) / period)
			a.cnt.late.Add(skipped)
			next = next.Add(time.Duration(skipped) * period)
		}
		a.report(now) // at least every 20 s (--rate >= 0.05): the 60 s keepalive needs no PINGREQ
		next = next.Add(period)
		t.Reset(time.Until(next))
	}
}

// report publishes one telemetry window per transport ending now.
func (a *agent) report(now time.Time) {
	a.seq++
	a.buf = appendReport(a.buf[:0], a.ss.ID, a.ss.Device, a.seq, now, a.index)
	a.c.wmu.Lock()
	id := a.c.nextID()
	atomic.StoreInt64(&a.sentAt[id%64], now.UnixNano())
	a.c.wbuf = encodePublish(a.c.wbuf[:0], a.topic, a.buf, 1, false, id)
	err := a.c.write(a.c.wbuf)
	a.c.wmu.Unlock()
	if err != nil {
		a.cnt.publishErrs.Add(1)
		return
	}
	a.cnt.sent.Add(1)
	if a.cnt.measuring.Load() {
		a.cnt.measureSent.Add(1)
	}
}

func (a *agent) close() {
	if a.c != nil && a.closed.CompareAndSwap(false, true) {
		a.c.disconnect()
	}
}

// appendReport appends a telemetry.Report (telemetry/schema.go) as JSON: three transports of
// 10 probes each, figures varying by site and report but within the published SLAs, about one
// lost probe in a hundred. Built by hand: encoding/json would cost the loader more CPU than the
// controller's decode costs it.
func appendReport(b []byte, site, device string, seq uint64, now time.Time, index int) []byte {
	b = append(b, `{"v":1,"site":"`...)
	b = append(b, site...)
	b = append(b, `","device":"`...)
	b = append(b, device...)
	b = append(b, `","seq":`...)
	b = strconv.AppendUint(b, seq, 10)
	b = append(b, `,"ts":"`...)
	b = now.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","window_ms":1000,"transports":[`...)
	for t, name := range [...]string{"mpls", "inet", "lte"} {
		if t > 0 {
			b = append(b, ',')
		}
		k := index*7 + int(seq)*13 + t*29
		lat := 10 + float64(k%400)/10 + float64(t)*15 // 10..85 ms
		jit := 0.5 + float64((index+int(seq)+t)%40)/10
		lost := 0
		if (index+int(seq)+t)%97 == 0 {
			lost = 1
		}
		b = append(b, `{"name":"`...)
		b = append(b, name...)
		b = append(b, `","method":"icmp","sent":10,"lost":`...)
		b = strconv.AppendInt(b, int64(lost), 10)
		b = appendField(b, "latency_ms", lat)
		b = appendField(b, "p50_ms", lat)
		b = appendField(b, "p95_ms", lat+2*jit)
		b = appendField(b, "min_ms", lat-jit)
		b = appendField(b, "max_ms", lat+3*jit)
		b = appendField(b, "jitter_ms", jit)
		b = appendField(b, "stddev_ms", jit)
		b = append(b, `,"down":false}`...)
	}
	return append(b, "]}"...)
}

func appendField(b []byte, name string, v float64) []byte {
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return strconv.AppendFloat(b, math.Round(v*1000)/1000, 'f', -1, 64)
}

// histogram is a lock-free log-linear histogram of durations: 16 sub-buckets per power of two
// of nanoseconds (about 6% resolution).
type histogram struct {
	b [64 * 16]atomic.Uint64
}

func (h *histogram) record(d time.Duration) {
	h.b[bucketOf(uint64(max(d, 1)))].Add(1)
}

func bucketOf(ns uint64) int {
	e := bits.Len64(ns) - 1 // ns in [2^e, 2^(e+1))
	if e < 4 {
		return int(ns) // exact below 16 ns
	}
	m := (ns >> (e - 4)) & 15
	return e*16 + int(m)
}

// upper returns the upper bound of bucket i.
func upper(i int) time.Duration {
	e, m := i/16, i%16
	if e < 4 {
		return time.Duration(i)
	}
	return time.Duration((uint64(16+m+1) << (e - 4)))
}

// quantile returns the upper bound of the bucket holding quantile q, and the count.
func (h *histogram) quantile(q float64) (time.Duration, uint64) {
	var total uint64
	for i := range h.b {
		total += h.b[i].Load()
	}
	if total == 0 {
		return 0, 0
	}
	rank := uint64(math.Ceil(q * float64(total)))
	var run uint64
	for i := range h.b {
		run += h.b[i].Load()
		if run >= rank {
			return upper(i), total
		}
	}
	return upper(len(h.b) - 1), total
}

// latencies collects a few thousand durations and sorts them for percentiles.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d)
	l.mu.Unlock()
}
