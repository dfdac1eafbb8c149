package config

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLoadFlagsFinish(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.yaml")
	if err := os.WriteFile(path, []byte(`
controller: https://ctl:8443
data_dir: /tmp/x
probe: {interval: 100ms, delay_step: 300ms}
transports:
  - {name: mpls, interface: eth1, gateway: 198.18.1.1, probe_targets: [198.18.100.1]}
  - {name: lte, interface: wwan0, method: tcp, probe_targets: ["198.18.100.1:443"], interval: 500ms, delay_step: 600ms, timeout: 2s}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	f := NewFlags(fs)
	if err := fs.Parse([]string{"--data-dir", "/var/lib/y", "--down-after", "4"}); err != nil {
		t.Fatal(err)
	}
	f.Apply(c)
	if err := c.Finish(); err != nil {
		t.Fatal(err)
	}
	if c.DataDir != "/var/lib/y" || c.Controller != "https://ctl:8443" || c.DownAfter != 4 || c.Window != time.Second {
		t.Fatalf("%+v", c)
	}
	if c.Transports[0].Interval != 100*time.Millisecond || c.Transports[1].Interval != 500*time.Millisecond || c.Transports[0].Method != "icmp" {
		t.Fatalf("transports %+v", c.Transports)
	}
	if c.Transports[0].DelayStep != 300*time.Millisecond || c.Transports[1].DelayStep != 600*time.Millisecond {
		t.Fatalf("delay steps %v %v, want the file's 300ms and the transport's own 600ms", c.Transports[0].DelayStep, c.Transports[1].DelayStep)
	}
	// the flag overrides the file's default; 0 stays the prober's default
	fs = flag.NewFlagSet("x", flag.ContinueOnError)
	f = NewFlags(fs)
	if err := fs.Parse([]string{"--probe-delay-step", "400ms"}); err != nil {
		t.Fatal(err)
	}
	c = &Config{Transports: []Transport{{Name: "a", Interface: "e"}}}
	f.Apply(c)
	if err := c.Finish(); err != nil || c.Probe.DelayStep != 400*time.Millisecond || c.Transports[0].DelayStep != 400*time.Millisecond {
		t.Fatalf("--probe-delay-step: %v %+v", err, c)
	}
	if c = (&Config{}); c.Finish() != nil || c.Probe.DelayStep != 0 {
		t.Fatalf("unset delay step: %+v", c.Probe)
	}
	if !*c.Enforce || c.Steering.HoldDown != 30*time.Second || c.MQTTStandby != StandbyAuto {
		t.Fatalf("defaults %+v", c)
	}
	// mqtt_standby: the file's value, the flag over it
	fs = flag.NewFlagSet("x", flag.ContinueOnError)
	f = NewFlags(fs)
	if err := fs.Parse([]string{"--mqtt-standby", "off"}); err != nil {
		t.Fatal(err)
	}
	c = &Config{MQTTStandby: StandbyAuto}
	f.Apply(c)
	if err := c.Finish(); err != nil || c.MQTTStandby != StandbyOff {
		t.Fatalf("--mqtt-standby off: %v %q", err, c.MQTTStandby)
	}
}

func TestErrors(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"transprts: []", "field transprts not found"},
		{"transports: [{name: A, interface: eth1}]", "name \"A\""},
		{"transports: [{name: a}]", "interface is required"},
		{"transports: [{name: a, interface: e}, {name: a, interface: f}]", "listed twice"},
		{"transports: [{name: a, interface: e, gateway: nope}]", "not an IP address"},
		{"transports: [{name: a, interface: e, gateway6: 198.18.1.1}]", "not an IPv6 address"},
		{"transports: [{name: a, interface: e, method: udp}]", "icmp, tcp or http"},
		{"transports: [{name: a, interface: e, interval: 1ms}]", "below 10ms"},
		{"window: 10ms", "window"},
		{"probe: {delay_step: 10ms}", "delay_step 10ms: want 50ms..1s"},
		{"probe: {delay_step: -1s}", "delay_step -1s"},
		{"probe: {delay_step: 1s}", "below the probe timeout"},
		{"probe: {delay_step: 600ms, timeout: 500ms}", "delay_step 600ms: want 50ms..500ms"},
		{"transports: [{name: a, interface: e, delay_step: 2s}]", "transport a: delay_step 2s"},
		{"transports: [{name: a, interface: e, delay_step: 20ms}]", "transport a: delay_step 20ms"},
		{"mqtt_standby: on", `mqtt_standby "on": auto or off`},
	} {
		path := filepath.Join(t.TempDir(), "a.yaml")
		_ = os.WriteFile(path, []byte(tc.yaml), 0o600)
		c, err := Load(path)
		if err == nil {
			err = c.Finish()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want %q", tc.yaml, err, tc.want)
		}
	}
}

func TestTransportFlag(t *testing.T) {
	var tf transportFlags
	if err := tf.Set("name=mpls,if=eth1,gw=198.18.1.1,targets=198.18.100.1+198.18.100.2,src=198.18.1.2"); err != nil {
		t.Fatal(err)
	}
	if got := tf[0]; got.Name != "mpls" || got.Interface != "eth1" || len(got.ProbeTargets) != 2 || got.Source != "198.18.1.2" {
		t.Fatalf("%+v", got)
	}
	for _, bad := range []string{"name", "name=a,colour=red", ""} {
		if err := tf.Set(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// The flag parser and Finish never panic, whatever an operator types.
func FuzzTransportFlag(f *testing.F) {
	f.Add("name=mpls,if=eth1,gw=198.18.1.1,targets=198.18.100.1")
	f.Add("name=a,if=b,method=tcp,targets=h:1+h:2")
	f.Add("=,=,")
	f.Fuzz(func(t *testing.T, s string) {
		var tf transportFlags
		if tf.Set(s) != nil {
			return
		}
		c := &Config{Transports: tf}
		_ = c.Finish()
	})
}
