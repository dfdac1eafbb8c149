// Package config is the agent's configuration: a YAML file, then flags, then defaults, as one
// plain struct that `agent run` validates before it touches the network.
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/edgewan/edgewan/telemetry"
)

// Config is everything `agent run` needs.
type Config struct {
	Controller    string `yaml:"controller"`     // https://controller:8443 (claim only)
	ClaimToken    string `yaml:"claim_token"`    // first boot only; never needed once claimed
	CAFile        string `yaml:"ca_file"`        // the controller's CA certificate (PEM)
	CAFingerprint string `yaml:"ca_fingerprint"` // or its SHA-256 fingerprint (hex, colons allowed)
	Serial        string `yaml:"serial"`         // the router's serial number, if the site was pre-staged with one
	Hostname      string `yaml:"hostname"`       // default: os.Hostname()
	DataDir       string `yaml:"data_dir"`       // credentials, spool, state; default /var/lib/edgewan-agent
	MetricsListen string `yaml:"metrics_listen"` // Prometheus /metrics; "" off

	Window    time.Duration `yaml:"window"`     // telemetry window; default 1s
	DownAfter int           `yaml:"down_after"` // consecutive suspect probes that make a transport down; default 3
	SpoolMax  int64         `yaml:"spool_max_bytes"`

	Probe      ProbeDefaults `yaml:"probe"`
	Transports []Transport   `yaml:"transports"`
	Routing    Routing       `yaml:"routing"`
	Enforce    *bool         `yaml:"enforce"` // apply routes, rules and qdiscs (default true); false: probe and report only
	Steering   Steering      `yaml:"steering"`
	// MQTTStandby: "auto" (default): on a NATS cluster (the claim's broker), keep a warm second
	// connection to another node, so that a node's death costs no CONNECT before the next
	// report; never on another broker. "off": none (one connection per agent).
	MQTTStandby string `yaml:"mqtt_standby"`
}

// Steering is the local failover's hysteresis; keep it equal to the controller's
// --steering-* flags so that both decide alike. Zero fields take the controller's defaults.
type Steering struct {
	HoldDown     time.Duration `yaml:"hold_down"`     // default 30s
	BreachAfter  int           `yaml:"breach_after"`  // default 3
	RecoverAfter int           `yaml:"recover_after"` // default 10
}

// ProbeDefaults apply to every transport that does not set its own.
type ProbeDefaults struct {
	Interval time.Duration `yaml:"interval"` // default 200ms
	Timeout  time.Duration `yaml:"timeout"`  // the longest wait for an answer (a probe is lost after 3 suspect deadlines, at most this); default 1s
	// DelayStep is the largest sudden RTT increase never taken for a dead link: a probe counts
	// towards one only when unanswered for SRTT + delay_step + max(4*RTTVAR, 30ms); 0: the
	// prober's default, 250ms (at most the timeout).
	DelayStep time.Duration `yaml:"delay_step"`
}

// Transport is one WAN circuit of the router.
type Transport struct {
	Name         string        `yaml:"name"`
	Interface    string        `yaml:"interface"`
	Gateway      string        `yaml:"gateway"`  // IPv4 (or IPv6 for an IPv6-only circuit); "" for point-to-point links
	Gateway6     string        `yaml:"gateway6"` // the IPv6 gateway of a dual-stack circuit
	Source       string        `yaml:"source"`   // source address of probes; "" the kernel's choice
	ProbeTargets []string      `yaml:"probe_targets"`
	Method       string        `yaml:"method"` // icmp (default), tcp (targets host:port) or http (targets URLs)
	Interval     time.Duration `yaml:"interval"`
	Timeout      time.Duration `yaml:"timeout"`
	DelayStep    time.Duration `yaml:"delay_step"`
}

// Routing places the agent's tables, rules and marks (see agent/dataplane).
type Routing struct {
	TableBase    int    `yaml:"table_base"`
	RulePriority int    `yaml:"rule_priority"`
	MarkBase     uint32 `yaml:"mark_base"`
}

// Default values.
const (
	DefaultDataDir  = "/var/lib/edgewan-agent"
	DefaultWindow   = time.Second
	DefaultInterval = 200 * time.Millisecond
	DefaultTimeout  = time.Second
	// MinDelayStep: below it a busy machine's scheduling alone would look like a dead link.
	MinDelayStep    = 50 * time.Millisecond
	DefaultDown     = 3
	DefaultSpoolMax = 64 << 20
	StandbyAuto     = "auto" // mqtt_standby: a warm standby connection on NATS only
	StandbyOff      = "off"
)

// Load reads the YAML file at path (unknown keys are an error: a typo must not pass silently).
func Load(path string) (*Config, error) {
	c := &Config{}
	if path == "" {
		return c, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	dec := yaml.NewDecoder(f)
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// Flags registers the flags that override the file; call Apply after parsing.
type Flags struct {
	fs     *flag.FlagSet
	values Config
	trans  transportFlags
}

type transportFlags []Transport

func (t *transportFlags) String() string { return fmt.Sprint(len(*t)) }

// Set parses name=mpls,if=eth1,gw=198.18.1.1,src=...,targets=198.18.100.1+198.18.100.2,method=icmp.
func (t *transportFlags) Set(s string) error {
	var tr Transport
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("transport %q: want key=value pairs (name=, if=, gw=, gw6=, src=, targets=a+b, method=)", s)
		}
		switch k {
		case "name":
			tr.Name = v
		case "if", "interface":
			tr.Interface = v
		case "gw", "gateway":
			tr.Gateway = v
		case "gw6", "gateway6":
			tr.Gateway6 = v
		case "src", "source":
			tr.Source = v
		case "targets":
			tr.ProbeTargets = strings.Split(v, "+")
		case "method":
			tr.Method = v
		default:
			return fmt.Errorf("transport %q: unknown key %q", s, k)
		}
	}
	*t = append(*t, tr)
	return nil
}

// NewFlags registers the agent's flags on fs.
func NewFlags(fs *flag.FlagSet) *Flags {
	f := &Flags{fs: fs}
	v := &f.values
	fs.StringVar(&v.Controller, "controller", "", "controller URL, e.g. https://controller:8443 (needed to claim)")
	fs.StringVar(&v.ClaimToken, "claim-token", "", "one-time claim token of the pre-staged site (first boot only)")
	fs.StringVar(&v.CAFile, "ca-file", "", "the controller's CA certificate (PEM)")
	fs.StringVar(&v.CAFingerprint, "ca-fingerprint", "", "or the SHA-256 fingerprint of the controller's CA (printed in its log)")
	fs.StringVar(&v.Serial, "serial", "", "this router's serial number, if the site was pre-staged with one")
	fs.StringVar(&v.Hostname, "hostname", "", "name reported to the controller (default: the host name)")
	fs.StringVar(&v.DataDir, "data-dir", "", "credentials, telemetry spool and state (default "+DefaultDataDir+")")
	fs.StringVar(&v.MetricsListen, "metrics-listen", "", "serve Prometheus /metrics here, e.g. 127.0.0.1:9101")
	fs.DurationVar(&v.Window, "window", 0, "telemetry window (default 1s)")
	fs.DurationVar(&v.Probe.Interval, "probe-interval", 0, "probe interval per transport (default 200ms)")
	fs.DurationVar(&v.Probe.Timeout, "probe-timeout", 0, "longest wait for an answer: a probe is lost after three suspect deadlines, at most this (default 1s)")
	fs.DurationVar(&v.Probe.DelayStep, "probe-delay-step", 0, "largest sudden RTT increase never taken for a dead link (default 250ms; 50ms..timeout)")
	fs.IntVar(&v.DownAfter, "down-after", 0, "consecutive unanswered probes that make a transport down (default 3)")
	fs.DurationVar(&v.Steering.HoldDown, "steering-hold-down", 0, "local failover hold-down (default 30s; keep equal to the controller's)")
	fs.IntVar(&v.Steering.BreachAfter, "steering-breach-after", 0, "bad windows that breach an SLA locally, for windows without probe counts (default 3; with counts the SLA detector decides)")
	fs.IntVar(&v.Steering.RecoverAfter, "steering-recover-after", 0, "good windows before a transport is used again (default 10)")
	fs.StringVar(&v.MQTTStandby, "mqtt-standby", "", "auto (default): a warm standby broker connection to another node on a NATS cluster, none on other brokers; off: none")
	fs.Var(&f.trans, "transport", "a transport: name=N,if=IFACE,gw=GATEWAY[,gw6=IPV6_GATEWAY],targets=IP+IP[,src=ADDR][,method=icmp|tcp|http] (repeatable; replaces the file's)")
	return f
}

// Apply overlays the flags that were set on c.
func (f *Flags) Apply(c *Config) {
	set := map[string]bool{}
	f.fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	v := f.values
	str := func(name string, dst *string, val string) {
		if set[name] {
			*dst = val
		}
	}
	str("controller", &c.Controller, v.Controller)
	str("claim-token", &c.ClaimToken, v.ClaimToken)
	str("ca-file", &c.CAFile, v.CAFile)
	str("ca-fingerprint", &c.CAFingerprint, v.CAFingerprint)
	str("serial", &c.Serial, v.Serial)
	str("hostname", &c.Hostname, v.Hostname)
	str("data-dir", &c.DataDir, v.DataDir)
	str("metrics-listen", &c.MetricsListen, v.MetricsListen)
	str("mqtt-standby", &c.MQTTStandby, v.MQTTStandby)
	if set["window"] {
		c.Window = v.Window
	}
	if set["probe-interval"] {
		c.Probe.Interval = v.Probe.Interval
	}
	if set["probe-timeout"] {
		c.Probe.Timeout = v.Probe.Timeout
	}
	if set["probe-delay-step"] {
		c.Probe.DelayStep = v.Probe.DelayStep
	}
	if set["down-after"] {
		c.DownAfter = v.DownAfter
	}
	if set["steering-hold-down"] {
		c.Steering.HoldDown = v.Steering.HoldDown
	}
	if set["steering-breach-after"] {
		c.Steering.BreachAfter = v.Steering.BreachAfter
	}
	if set["steering-recover-after"] {
		c.Steering.RecoverAfter = v.Steering.RecoverAfter
	}
	if len(f.trans) > 0 {
		c.Transports = f.trans
	}
}

// Finish fills in defaults and validates; the error says what to fix.
func (c *Config) Finish() error {
	if c.DataDir == "" {
		c.DataDir = DefaultDataDir
	}
	if c.Hostname == "" {
		c.Hostname, _ = os.Hostname()
	}
	if c.Window <= 0 {
		c.Window = DefaultWindow
	}
	if c.DownAfter <= 0 {
		c.DownAfter = DefaultDown
	}
	if c.SpoolMax <= 0 {
		c.SpoolMax = DefaultSpoolMax
	}
	if c.Probe.Interval <= 0 {
		c.Probe.Interval = DefaultInterval
	}
	if c.Probe.Timeout <= 0 {
		c.Probe.Timeout = DefaultTimeout
	}
	if err := checkDelayStep("probe", c.Probe.DelayStep, c.Probe.Timeout); err != nil {
		return err
	}
	switch c.MQTTStandby {
	case "":
		c.MQTTStandby = StandbyAuto
	case StandbyAuto, StandbyOff:
	default:
		return fmt.Errorf("mqtt_standby %q: auto or off", c.MQTTStandby)
	}
	if c.Enforce == nil {
		t := true
		c.Enforce = &t
	}
	if c.Steering.HoldDown == 0 {
		c.Steering.HoldDown = 30 * time.Second
	}
	if c.Steering.BreachAfter <= 0 {
		c.Steering.BreachAfter = 3
	}
	if c.Steering.RecoverAfter <= 0 {
		c.Steering.RecoverAfter = 10
	}
	if c.Window < 100*time.Millisecond || c.Window > time.Hour {
		return fmt.Errorf("window %v: want 100ms..1h", c.Window)
	}
	if len(c.Transports) > telemetry.MaxTransports {
		return fmt.Errorf("%d transports: at most %d", len(c.Transports), telemetry.MaxTransports)
	}
	seen := map[string]bool{}
	for i := range c.Transports {
		t := &c.Transports[i]
		if !telemetry.ValidID(t.Name) {
			return fmt.Errorf("transport %d: name %q: use 1-64 of a-z, 0-9, '-' and '_'", i+1, t.Name)
		}
		if seen[t.Name] {
			return fmt.Errorf("transport %q listed twice", t.Name)
		}
		seen[t.Name] = true
		if t.Interface == "" {
			return fmt.Errorf("transport %s: interface is required", t.Name)
		}
		if t.Gateway != "" {
			if _, err := netip.ParseAddr(t.Gateway); err != nil {
				return fmt.Errorf("transport %s: gateway %q is not an IP address", t.Name, t.Gateway)
			}
		}
		if t.Gateway6 != "" {
			if a, err := netip.ParseAddr(t.Gateway6); err != nil || !a.Is6() || a.Is4In6() {
				return fmt.Errorf("transport %s: gateway6 %q is not an IPv6 address", t.Name, t.Gateway6)
			}
		}
		if t.Source != "" {
			if _, err := netip.ParseAddr(t.Source); err != nil {
				return fmt.Errorf("transport %s: source %q is not an IP address", t.Name, t.Source)
			}
		}
		if t.Method == "" {
			t.Method = "icmp"
		}
		if t.Method != "icmp" && t.Method != "tcp" && t.Method != "http" {
			return fmt.Errorf("transport %s: method %q: icmp, tcp or http", t.Name, t.Method)
		}
		if t.Interval <= 0 {
			t.Interval = c.Probe.Interval
		}
		if t.Timeout <= 0 {
			t.Timeout = c.Probe.Timeout
		}
		if t.Interval < 10*time.Millisecond {
			return fmt.Errorf("transport %s: probe interval %v is below 10ms", t.Name, t.Interval)
		}
		if t.DelayStep == 0 {
			t.DelayStep = c.Probe.DelayStep
		}
		if err := checkDelayStep("transport "+t.Name, t.DelayStep, t.Timeout); err != nil {
			return err
		}
	}
	return nil
}

// checkDelayStep refuses a delay step the dead-link rule cannot use (0: the prober's default): under MinDelayStep a loaded machine's scheduling looks like a dead link, and
// from the timeout on the rule would be the timeout's, the option saying nothing.
func checkDelayStep(what string, step, timeout time.Duration) error {
	if step == 0 {
		return nil
	}
	if step < MinDelayStep || step >= timeout {
		return fmt.Errorf("%s: delay_step %v: want %v..%v (below the probe timeout)", what, step, MinDelayStep, timeout)
	}
	return nil
}
