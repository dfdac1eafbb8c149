// Package sim simulates agents: it claims pre-staged sites and reports synthetic telemetry
// over MQTT like a real agent would, for the demo, tests and load generation.
package sim

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/edgewan/edgewan/agent/claim"
	"github.com/edgewan/edgewan/telemetry"
)

// Access is what a claim returns: the site, the device and how to reach the broker.
type Access = claim.Response

// Claim claims a pre-staged site with its claim token through the controller's API.
func Claim(ctx context.Context, hc *http.Client, apiURL, claimToken, hostname string) (*Access, error) {
	body, _ := json.Marshal(map[string]string{"claim_token": claimToken, "hostname": hostname, "version": "sim"})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(apiURL, "/")+"/sd-wan/v1/claim", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("sim.Claim: %w", err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("sim.Claim: %s: %s", resp.Status, raw)
	}
	var a Access
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, fmt.Errorf("sim.Claim: %w", err)
	}
	return &a, nil
}

// Message is a message the controller sent the agent.
type Message struct {
	Topic   string
	Payload []byte
}

// Agent is a connected simulated agent.
type Agent struct {
	Site, Device string
	client       paho.Client
	seq          uint64
	mu           sync.Mutex
	inbox        chan Message
	stored       uint64        // the highest watermark the controller published (mu)
	storedC      chan struct{} // closed and replaced at each new watermark (mu)
}

// Connect connects to the broker with a claim's credentials (trusting its CA), sets the
// agent's last will, announces it online and subscribes to its policy and decisions.
func Connect(ctx context.Context, a *Access) (*Agent, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if a.MQTT.CAPEM != "" {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(a.MQTT.CAPEM)) {
			return nil, errors.New("sim.Connect: no certificate in the claim's CA")
		}
		tc.RootCAs = pool
	}
	ag := &Agent{Site: a.Site.ID, Device: a.Device, inbox: make(chan Message, 64), storedC: make(chan struct{})}
	will, _ := json.Marshal(telemetry.Status{V: telemetry.SchemaVersion, Device: a.Device, State: "offline"})
	opts := paho.NewClientOptions().AddBroker(a.MQTT.URL).SetClientID(a.Device).
		SetUsername(a.MQTT.Username).SetPassword(a.MQTT.Password).SetTLSConfig(tc).
		SetCleanSession(false).SetAutoReconnect(true).SetConnectRetry(false).SetConnectTimeout(10*time.Second).
		SetBinaryWill(telemetry.Topic(a.Site.ID, telemetry.KindStatus), will, 1, true).
		SetOrderMatters(true)
	opts.SetDefaultPublishHandler(func(_ paho.Client, m paho.Message) {})
	ag.client = paho.NewClient(opts)
	if err := wait(ctx, ag.client.Connect()); err != nil {
		return nil, fmt.Errorf("sim.Connect %s: %w", a.Device, err)
	}
	for _, kind := range telemetry.DownKinds {
		tok := ag.client.Subscribe(telemetry.Topic(ag.Site, kind), 1, func(_ paho.Client, m paho.Message) {
			if kind == telemetry.KindStored {
				ag.onStored(m.Payload())
			}
			select {
			case ag.inbox <- Message{Topic: m.Topic(), Payload: m.Payload()}:
			default: // a test that does not read its inbox must not stall the client
			}
		})
		if err := wait(ctx, tok); err != nil {
			ag.Close()
			return nil, fmt.Errorf("sim.Connect: subscribing: %w", err)
		}
	}
	online, _ := json.Marshal(telemetry.Status{V: telemetry.SchemaVersion, Device: a.Device, State: "online", Version: "sim", Time: time.Now().UTC()})
	if err := ag.Publish(ctx, telemetry.KindStatus, online, true); err != nil {
		ag.Close()
		return nil, err
	}
	return ag, nil
}

func wait(ctx context.Context, tok paho.Token) error {
	select {
	case <-tok.Done():
		return tok.Error()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Publish sends payload to the agent's own topic of kind, at QoS 1, and waits for the broker.
func (a *Agent) Publish(ctx context.Context, kind string, payload []byte, retain bool) error {
	return wait(ctx, a.client.Publish(telemetry.Topic(a.Site, kind), 1, retain, payload))
}

// PublishTopic sends payload to any topic (to test what the broker refuses).
func (a *Agent) PublishTopic(ctx context.Context, topic string, payload []byte) error {
	return wait(ctx, a.client.Publish(topic, 1, false, payload))
}

// Report sends one telemetry window per transport, ending at t.
func (a *Agent) Report(ctx context.Context, t time.Time, window time.Duration, tws ...telemetry.TransportWindow) error {
	a.mu.Lock()
	a.seq++
	r := telemetry.Report{V: telemetry.SchemaVersion, Site: a.Site, Device: a.Device, Seq: a.seq, Time: t.UTC(), WindowMs: int(window / time.Millisecond), Transport: tws}
	a.mu.Unlock()
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return a.Publish(ctx, telemetry.KindTelemetry, b, false)
}

// ResumeSeq makes the next report's sequence n+1: a real agent's sequence survives its
// reconnections and restarts (its spool's), so a simulated one reconnecting must go on from
// where it was.
func (a *Agent) ResumeSeq(n uint64) {
	a.mu.Lock()
	a.seq = n
	a.mu.Unlock()
}

// Ack acknowledges a policy version.
func (a *Agent) Ack(ctx context.Context, policy string, version int, status, reason string) error {
	b, _ := json.Marshal(telemetry.PolicyAck{V: telemetry.SchemaVersion, Site: a.Site, Device: a.Device, Time: time.Now().UTC(),
		Policy: policy, Version: version, Status: status, Reason: reason})
	return a.Publish(ctx, telemetry.KindAcks, b, false)
}

// Next returns the next message from the controller (policy or decisions), or an error when
// ctx ends first.
func (a *Agent) Next(ctx context.Context) (Message, error) {
	select {
	case m := <-a.inbox:
		return m, nil
	case <-ctx.Done():
		return Message{}, ctx.Err()
	}
}

func (a *Agent) onStored(payload []byte) {
	var st telemetry.Stored
	if json.Unmarshal(payload, &st) != nil || st.Device != a.Device {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if st.Seq > a.stored {
		a.stored = st.Seq
		close(a.storedC)
		a.storedC = make(chan struct{})
	}
}

// WaitStored waits until the controller's watermark says every report up to seq is stored
// (flushed to the time-series store and the database): what a reader of history sees. Kept
// apart from the inbox, which drops what a test does not read.
func (a *Agent) WaitStored(ctx context.Context, seq uint64) error {
	for {
		a.mu.Lock()
		got, c := a.stored, a.storedC
		a.mu.Unlock()
		if got >= seq {
			return nil
		}
		select {
		case <-c:
		case <-ctx.Done():
			return fmt.Errorf("sim: watermark %d, waiting for %d: %w", got, seq, ctx.Err())
		}
	}
}

// Close disconnects cleanly (no last will).
func (a *Agent) Close() { a.client.Disconnect(250) }

// Kill drops the connection without a DISCONNECT, as a crashed agent would: the broker then
// publishes its last will.
func (a *Agent) Kill() {
	// paho has no abrupt close; Disconnect(0) still sends DISCONNECT. Publishing the will
	// ourselves is what the broker would do.
	will, _ := json.Marshal(telemetry.Status{V: telemetry.SchemaVersion, Device: a.Device, State: "offline"})
	_ = a.client.Publish(telemetry.Topic(a.Site, telemetry.KindStatus), 1, true, will).WaitTimeout(5 * time.Second)
	a.client.Disconnect(0)
}

// Window is a convenience: a transport window with n probes sent, lost of them lost, and the
// given mean latency and jitter.
func Window(name string, sent, lost int, latencyMs, jitterMs float64) telemetry.TransportWindow {
	return telemetry.TransportWindow{Name: name, Method: "icmp", Sent: sent, Lost: lost, LatencyMs: latencyMs, P50Ms: latencyMs,
		P95Ms: latencyMs + 2*jitterMs, MinMs: max(0, latencyMs-jitterMs), MaxMs: latencyMs + 3*jitterMs, JitterMs: jitterMs, StdDevMs: jitterMs,
		Down: sent > 0 && lost == sent}
}

// Connected reports whether the MQTT connection is up now.
func (a *Agent) Connected() bool { return a.client.IsConnectionOpen() }
