package engine

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/edgewan/edgewan/agent/claim"
	"github.com/edgewan/edgewan/agent/spool"
	"github.com/edgewan/edgewan/telemetry"
)

// uplink is the MQTT session with the controller: a persistent session (clean session off)
// that paho reconnects with backoff; the spool feeds it in order, and the controller's retained
// policy and decisions come back on it.
type uplink struct {
	e     *Engine
	creds *claim.Credentials
	c     paho.Client
	up    atomic.Bool
	wakeC chan struct{}
}

const (
	publishBatch   = 64               // spooled messages in flight at once
	publishTimeout = 15 * time.Second // for the broker's PUBACKs of one batch
)

func newUplink(e *Engine, creds *claim.Credentials) (*uplink, error) {
	u := &uplink{e: e, creds: creds, wakeC: make(chan struct{}, 1)}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if creds.CAPEM != "" {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(creds.CAPEM)) {
			return nil, errors.New("agent: the stored broker CA holds no certificate")
		}
		tc.RootCAs = pool
	}
	will, _ := json.Marshal(telemetry.Status{V: telemetry.SchemaVersion, Device: creds.Device, State: "offline"})
	opts := paho.NewClientOptions().AddBroker(creds.MQTTURL).SetClientID(creds.Device).
		SetUsername(creds.Username).SetPassword(creds.Password).SetTLSConfig(tc).
		SetCleanSession(false).SetAutoReconnect(true).SetConnectRetry(true).
		SetConnectRetryInterval(time.Second).SetMaxReconnectInterval(30*time.Second).
		SetConnectTimeout(10*time.Second).SetKeepAlive(15*time.Second).SetPingTimeout(5*time.Second).
		SetWriteTimeout(5*time.Second). // a stalled connection must not hold a publish (or shutdown) for 30 s

		SetBinaryWill(telemetry.Topic(creds.Site, telemetry.KindStatus), will, 1, true).
		SetOrderMatters(true)
	for _, b := range creds.MQTTURLs { // the other broker nodes: paho moves to the next when one fails
		if b != creds.MQTTURL {
			opts.AddBroker(b)
		}
	}
	opts.SetOnConnectHandler(u.onConnect)
	opts.SetConnectionLostHandler(func(_ paho.Client, err error) {
		u.up.Store(false)
		e.m.connected.Set(0)
		e.log.Warn("agent: broker connection lost; reconnecting", "err", err)
		e.kickReconcile() // the controller's decisions no longer hold sway
	})
	u.c = paho.NewClient(opts)
	return u, nil
}

func (u *uplink) connect() { u.c.Connect() } // retried by paho until it succeeds

func (u *uplink) connected() bool { return u.up.Load() }

func (u *uplink) onConnect(c paho.Client) {
	e := u.e
	handlers := map[string]func([]byte){telemetry.KindPolicy: e.onPolicy, telemetry.KindDecisions: e.onDecisions}
	for kind, h := range handlers {
		c.Subscribe(telemetry.Topic(u.creds.Site, kind), 1, func(_ paho.Client, m paho.Message) { h(m.Payload()) })
	}
	online, _ := json.Marshal(telemetry.Status{V: telemetry.SchemaVersion, Device: u.creds.Device, State: "online",
		Version: e.o.Version, Time: time.Now().UTC()})
	c.Publish(telemetry.Topic(u.creds.Site, telemetry.KindStatus), 1, true, online)
	u.up.Store(true)
	e.m.connected.Set(1)
	e.log.Info("agent: connected to the broker", "url", u.creds.MQTTURL)
	u.wake()
	e.kickReconcile()
}

func (u *uplink) wake() {
	select {
	case u.wakeC <- struct{}{}:
	default:
	}
}

// sendLoop publishes the spool, oldest first, and deletes what the broker acknowledged.
func (u *uplink) sendLoop(ctx context.Context) {
	retry := time.Second
	for {
		if !u.connected() {
			if !u.waitWake(ctx, time.Second) {
				return
			}
			continue
		}
		recs, err := u.e.sp.Peek(publishBatch)
		if err != nil {
			u.e.log.Error("agent: reading the spool", "err", err)
			if !u.waitWake(ctx, retry) {
				return
			}
			continue
		}
		if len(recs) == 0 {
			if !u.waitWake(ctx, 5*time.Second) {
				return
			}
			continue
		}
		if err := u.publish(ctx, recs); err != nil {
			u.e.log.Warn("agent: publishing the spool; retrying", "err", err, "in", retry)
			if !u.waitWake(ctx, retry) {
				return
			}
			retry = min(2*retry, 30*time.Second)
			continue
		}
		retry = time.Second
	}
}

// publish sends recs at QoS 1 and acks them in the spool once the broker has them all.
func (u *uplink) publish(ctx context.Context, recs []spool.Record) error {
	toks := make([]paho.Token, 0, len(recs))
	for _, r := range recs {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		kind, payload, ok := splitMessage(r.Payload)
		if !ok {
			continue // not ours: skip it (Ack below moves past it)
		}
		// copy: the spool reuses its buffer on the next Peek, paho writes asynchronously
		toks = append(toks, u.c.Publish(telemetry.Topic(u.creds.Site, kind), 1, false, append([]byte(nil), payload...)))
	}
	deadline := time.NewTimer(publishTimeout)
	defer deadline.Stop()
	for _, t := range toks {
		select {
		case <-t.Done():
			if err := t.Error(); err != nil {
				return err
			}
		case <-deadline.C:
			return errors.New("no PUBACK from the broker in time")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := u.e.sp.Ack(recs[len(recs)-1].ID); err != nil {
		return fmt.Errorf("acking the spool: %w", err)
	}
	u.e.m.published.Add(float64(len(toks)))
	return nil
}

func (u *uplink) waitWake(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-u.wakeC:
	case <-t.C:
	}
	return true
}

// close says goodbye: an offline status (a clean DISCONNECT suppresses the last will).
func (u *uplink) close() {
	if u.connected() {
		off, _ := json.Marshal(telemetry.Status{V: telemetry.SchemaVersion, Device: u.creds.Device, State: "offline", Time: time.Now().UTC()})
		u.c.Publish(telemetry.Topic(u.creds.Site, telemetry.KindStatus), 1, true, off).WaitTimeout(2 * time.Second)
	}
	u.c.Disconnect(500)
}
