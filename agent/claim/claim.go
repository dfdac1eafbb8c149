// Package claim is the agent's zero-touch provisioning: it claims a pre-staged site with a
// one-time token over HTTPS (trusting the controller by its CA file or the CA's fingerprint)
// and keeps the MQTT credentials it receives in the data dir, mode 0600, for every later boot.
package claim

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Credentials are what a claim returns, as stored.
type Credentials struct {
	Site     string   `json:"site"`
	Device   string   `json:"device"`
	MQTTURL  string   `json:"mqtt_url"`
	MQTTURLs []string `json:"mqtt_urls,omitempty"` // every broker node when there are several, MQTTURL first
	Username string   `json:"username"`
	Password string   `json:"password"`
	CAPEM    string   `json:"ca_pem"` // trust for the broker
	// Broker is the broker's kind when the controller names it: BrokerNATS in the scaled-out
	// mode (the agent then publishes and subscribes at QoS 0 and retains nothing: see
	// agent/engine). Empty: an MQTT broker (the controller's embedded one or Mosquitto).
	Broker  string    `json:"broker,omitempty"`
	Claimed time.Time `json:"claimed_at"`
}

// BrokerNATS is Credentials.Broker for a NATS cluster's MQTT listeners.
const BrokerNATS = "nats"

// File is the credentials file's name in the data dir.
const File = "credentials.json"

// Load reads stored credentials; os.ErrNotExist when the agent has not claimed yet.
func Load(dataDir string) (*Credentials, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, File))
	if err != nil {
		return nil, err
	}
	var c Credentials
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("claim: %s is corrupt (%v): restore it or re-provision the site", filepath.Join(dataDir, File), err)
	}
	if c.Site == "" || c.Device == "" || c.MQTTURL == "" || c.Password == "" {
		return nil, fmt.Errorf("claim: %s is incomplete: restore it or re-provision the site", filepath.Join(dataDir, File))
	}
	return &c, nil
}

// Save writes credentials atomically with mode 0600 (the directory 0700).
func Save(dataDir string, c *Credentials) error {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return fmt.Errorf("claim: %w", err)
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dataDir, ".credentials-*")
	if err != nil {
		return fmt.Errorf("claim: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("claim: %w", err)
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("claim: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("claim: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("claim: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dataDir, File)); err != nil {
		return fmt.Errorf("claim: %w", err)
	}
	if d, err := os.Open(dataDir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// TLSConfig trusts the controller: by its CA certificate file, or by the SHA-256 fingerprint of
// any certificate in the chain it presents (the controller logs its CA's). One of the two is
// required: an agent never claims over an unauthenticated connection.
func TLSConfig(caFile, fingerprint string) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	switch {
	case caFile != "":
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("claim: CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("claim: %s holds no PEM certificate", caFile)
		}
		c.RootCAs = pool
	case fingerprint != "":
		want, err := hex.DecodeString(strings.ReplaceAll(strings.ToLower(strings.TrimSpace(fingerprint)), ":", ""))
		if err != nil || len(want) != sha256.Size {
			return nil, errors.New("claim: --ca-fingerprint must be a SHA-256 in hex (64 digits, colons allowed)")
		}
		// Verify the chain against the pinned CA itself: the presented chain must contain a
		// certificate with the fingerprint, and the leaf must verify up to it for the host.
		c.InsecureSkipVerify = true // replaced by VerifyConnection below
		c.VerifyConnection = func(cs tls.ConnectionState) error {
			var ca *x509.Certificate
			for _, cert := range cs.PeerCertificates {
				sum := sha256.Sum256(cert.Raw)
				if bytes.Equal(sum[:], want) {
					ca = cert
				}
			}
			if ca == nil {
				return fmt.Errorf("%w: its certificate chain does not contain the CA with the pinned fingerprint", ErrUntrusted)
			}
			roots := x509.NewCertPool()
			roots.AddCert(ca)
			inter := x509.NewCertPool()
			for _, cert := range cs.PeerCertificates[1:] {
				inter.AddCert(cert)
			}
			if _, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, DNSName: cs.ServerName}); err != nil {
				return fmt.Errorf("%w: %v", ErrUntrusted, err)
			}
			return nil
		}
	default:
		return nil, errors.New("claim: give --ca-file or --ca-fingerprint so the agent can trust the controller")
	}
	return c, nil
}

// ErrUntrusted says the controller's certificate does not match the CA the agent was given.
var ErrUntrusted = errors.New("the controller is not the one this agent was told to trust")

// Request is what the agent tells the controller about itself.
type Request struct {
	ClaimToken string `json:"claim_token"`
	Serial     string `json:"serial,omitempty"`
	Hostname   string `json:"hostname,omitempty"`
	Version    string `json:"version,omitempty"`
}

// Response is the controller's answer to a claim (POST /sd-wan/v1/claim) as agents read it:
// the site, the device record made for the agent, and how to reach the broker.
type Response struct {
	Site struct {
		ID string `json:"id"`
	} `json:"site"`
	Device string `json:"device"`
	MQTT   struct {
		URL      string   `json:"url"`
		URLs     []string `json:"urls"`
		Username string   `json:"username"`
		Password string   `json:"password"`
		CAPEM    string   `json:"ca_pem"`
		Broker   string   `json:"broker"`
	} `json:"mqtt"`
}

// Error is a refusal from the controller: Permanent ones (a used, expired or unknown token, a
// serial mismatch) will not change by retrying.
type Error struct {
	Status    int
	Code      string
	Message   string
	Permanent bool
}

func (e *Error) Error() string {
	if e.Status == 0 {
		return fmt.Sprintf("claim: %s (%s)", e.Message, e.Code)
	}
	return fmt.Sprintf("claim refused by the controller (%d %s): %s", e.Status, e.Code, e.Message)
}

// Claim claims the site through POST {controller}/sd-wan/v1/claim.
func Claim(ctx context.Context, hc *http.Client, controller string, r Request) (*Credentials, error) {
	body, _ := json.Marshal(r)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(controller, "/")+"/sd-wan/v1/claim", bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("claim: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		var cve *tls.CertificateVerificationError
		if errors.Is(err, ErrUntrusted) || errors.As(err, &cve) {
			// not a network hiccup: retrying will not make the certificate match
			return nil, &Error{Code: "untrusted_controller", Message: err.Error(), Permanent: true}
		}
		return nil, fmt.Errorf("claim: %w", err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		var eb struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		_ = json.Unmarshal(raw, &eb)
		return nil, &Error{Status: resp.StatusCode, Code: eb.Error.Code, Message: eb.Error.Message,
			Permanent: resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusRequestTimeout}
	}
	var a Response
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, fmt.Errorf("claim: the controller's answer: %w", err)
	}
	return &Credentials{Site: a.Site.ID, Device: a.Device, MQTTURL: a.MQTT.URL, MQTTURLs: a.MQTT.URLs, Username: a.MQTT.Username,
		Password: a.MQTT.Password, CAPEM: a.MQTT.CAPEM, Broker: a.MQTT.Broker, Claimed: time.Now().UTC()}, nil
}
