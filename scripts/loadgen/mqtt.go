package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// A minimal MQTT 3.1.1 client over TLS: CONNECT (with a last will), SUBSCRIBE, PUBLISH at QoS
// 0/1, PUBACK and DISCONNECT (agents report often enough to need no PINGREQ). paho (agent/sim) spends several goroutines, a store and
// a token per message on each client; thousands of agents on a 2-core machine need the load
// generator to stay out of the controller's way. One connection is still one agent with its
// own credentials, subject to the broker's ACL like any other.

// MQTT control packet types (high nibble of the first byte).
const (
	pktConnect    = 1
	pktConnack    = 2
	pktPublish    = 3
	pktPuback     = 4
	pktSubscribe  = 8
	pktSuback     = 9
	pktDisconnect = 14
)

// connectOpts is what a CONNECT carries.
type connectOpts struct {
	ClientID, Username, Password string
	KeepAlive                    time.Duration
	CleanSession                 bool
	WillTopic                    string // "" for no will
	WillPayload                  []byte
	WillRetain                   bool
}

// mqttConn is one client connection. Writes are serialised by wmu (the publisher and the
// reader's PUBACKs share the connection); reads happen on one goroutine.
type mqttConn struct {
	conn *tls.Conn
	r    *bufio.Reader

	wmu  sync.Mutex
	wbuf []byte
	id   uint16 // last packet identifier used
}

// dialMQTT connects, handshakes TLS, sends CONNECT and waits for a successful CONNACK.
func dialMQTT(ctx context.Context, addr string, tc *tls.Config, o connectOpts) (*mqttConn, error) {
	d := tls.Dialer{NetDialer: &net.Dialer{Timeout: 30 * time.Second}, Config: tc}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	c := &mqttConn{conn: nc.(*tls.Conn), r: bufio.NewReaderSize(nc, 512)}
	deadline := time.Now().Add(30 * time.Second)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	_ = c.conn.SetDeadline(deadline)
	if err := c.write(encodeConnect(nil, o)); err != nil {
		c.conn.Close()
		return nil, fmt.Errorf("CONNECT: %w", err)
	}
	typ, _, body, err := c.readPacket(nil)
	if err != nil {
		c.conn.Close()
		return nil, fmt.Errorf("CONNACK: %w", err)
	}
	if typ != pktConnack || len(body) != 2 {
		c.conn.Close()
		return nil, fmt.Errorf("CONNACK: got packet type %d", typ)
	}
	if body[1] != 0 {
		c.conn.Close()
		return nil, fmt.Errorf("CONNACK: refused, return code %d", body[1])
	}
	_ = c.conn.SetDeadline(time.Time{})
	return c, nil
}

func (c *mqttConn) write(b []byte) error {
	_, err := c.conn.Write(b)
	return err
}

// nextID returns the next packet identifier (1..65535). Call with wmu held.
func (c *mqttConn) nextID() uint16 {
	c.id++
	if c.id == 0 {
		c.id = 1
	}
	return c.id
}

// publish sends payload to topic; for QoS 1 it returns the packet identifier to match the PUBACK.
func (c *mqttConn) publish(topic string, payload []byte, qos byte, retain bool) (uint16, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	var id uint16
	if qos > 0 {
		id = c.nextID()
	}
	c.wbuf = encodePublish(c.wbuf[:0], topic, payload, qos, retain, id)
	return id, c.write(c.wbuf)
}

// subscribe sends one SUBSCRIBE for topics at qos (the SUBACK arrives on the reader).
func (c *mqttConn) subscribe(qos byte, topics ...string) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.wbuf = encodeSubscribe(c.wbuf[:0], c.nextID(), qos, topics...)
	return c.write(c.wbuf)
}

// puback acknowledges a QoS 1 message from the broker.
func (c *mqttConn) puback(id uint16) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.wbuf = append(c.wbuf[:0], pktPuback<<4, 2, byte(id>>8), byte(id))
	return c.write(c.wbuf)
}

// disconnect sends DISCONNECT (so the broker does not publish the will) and closes.
func (c *mqttConn) disconnect() {
	c.wmu.Lock()
	_ = c.conn.SetWriteDeadline(time.Now().Add(2 * time.Second))
	_ = c.write([]byte{pktDisconnect << 4, 0})
	c.wmu.Unlock()
	_ = c.conn.Close()
}

// readPacket reads one packet into buf (grown as needed) and returns its type, the low nibble
// of its first byte, and its body (variable header and payload).
func (c *mqttConn) readPacket(buf []byte) (typ, flags byte, body []byte, err error) {
	h, err := c.r.ReadByte()
	if err != nil {
		return 0, 0, nil, err
	}
	n, err := readVarint(c.r)
	if err != nil {
		return 0, 0, nil, err
	}
	if n > 1<<20 {
		return 0, 0, nil, fmt.Errorf("packet of %d bytes", n)
	}
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	body = buf[:n]
	if _, err := io.ReadFull(c.r, body); err != nil {
		return 0, 0, nil, err
	}
	return h >> 4, h & 0x0f, body, nil
}

func readVarint(r io.ByteReader) (int, error) {
	n, mul := 0, 1
	for i := 0; i < 4; i++ {
		b, err := r.ReadByte()
		if err != nil {
			return 0, err
		}
		n += int(b&0x7f) * mul
		if b&0x80 == 0 {
			return n, nil
		}
		mul *= 128
	}
	return 0, errors.New("malformed remaining length")
}

func appendVarint(b []byte, n int) []byte {
	for {
		d := byte(n % 128)
		n /= 128
		if n > 0 {
			d |= 0x80
		}
		b = append(b, d)
		if n == 0 {
			return b
		}
	}
}

func appendString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

func appendBytes(b []byte, p []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(p)))
	return append(b, p...)
}

func encodeConnect(b []byte, o connectOpts) []byte {
	var vh []byte
	vh = appendString(vh, "MQTT")
	vh = append(vh, 4) // protocol level 3.1.1
	var flags byte
	if o.Username != "" {
		flags |= 0x80
	}
	if o.Password != "" {
		flags |= 0x40
	}
	if o.WillTopic != "" {
		flags |= 0x04 | 1<<3 // will at QoS 1
		if o.WillRetain {
			flags |= 0x20
		}
	}
	if o.CleanSession {
		flags |= 0x02
	}
	vh = append(vh, flags)
	vh = binary.BigEndian.AppendUint16(vh, uint16(o.KeepAlive/time.Second))
	vh = appendString(vh, o.ClientID)
	if o.WillTopic != "" {
		vh = appendString(vh, o.WillTopic)
		vh = appendBytes(vh, o.WillPayload)
	}
	if o.Username != "" {
		vh = appendString(vh, o.Username)
	}
	if o.Password != "" {
		vh = appendString(vh, o.Password)
	}
	b = append(b, pktConnect<<4)
	b = appendVarint(b, len(vh))
	return append(b, vh...)
}

func encodePublish(b []byte, topic string, payload []byte, qos byte, retain bool, id uint16) []byte {
	h := byte(pktPublish<<4) | qos<<1
	if retain {
		h |= 1
	}
	n := 2 + len(topic) + len(payload)
	if qos > 0 {
		n += 2
	}
	b = append(b, h)
	b = appendVarint(b, n)
	b = appendString(b, topic)
	if qos > 0 {
		b = binary.BigEndian.AppendUint16(b, id)
	}
	return append(b, payload...)
}

func encodeSubscribe(b []byte, id uint16, qos byte, topics ...string) []byte {
	n := 2
	for _, t := range topics {
		n += 2 + len(t) + 1
	}
	b = append(b, pktSubscribe<<4|0x02)
	b = appendVarint(b, n)
	b = binary.BigEndian.AppendUint16(b, id)
	for _, t := range topics {
		b = appendString(b, t)
		b = append(b, qos)
	}
	return b
}

// parsePublish splits an incoming PUBLISH body.
func parsePublish(flags byte, body []byte) (topic string, id uint16, qos byte, payload []byte, err error) {
	if len(body) < 2 {
		return "", 0, 0, nil, errors.New("short PUBLISH")
	}
	tl := int(binary.BigEndian.Uint16(body))
	if len(body) < 2+tl {
		return "", 0, 0, nil, errors.New("short PUBLISH topic")
	}
	topic = string(body[2 : 2+tl])
	rest := body[2+tl:]
	qos = (flags >> 1) & 3
	if qos > 0 {
		if len(rest) < 2 {
			return "", 0, 0, nil, errors.New("short PUBLISH packet id")
		}
		id = binary.BigEndian.Uint16(rest)
		rest = rest[2:]
	}
	return topic, id, qos, rest, nil
}
