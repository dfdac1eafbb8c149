package config

import (
	"flag"
	"strings"
	"testing"
	"time"
)

func TestEnvFillsUnsetFlags(t *testing.T) {
	t.Setenv("EDGEWAN_DATA_DIR", "/from/env")
	t.Setenv("EDGEWAN_LISTEN", "127.0.0.1:1")
	t.Setenv("EDGEWAN_WEBHOOK_RETRY_BASE", "250ms")
	t.Setenv("EDGEWAN_TLS_HOSTS", "a.example, 198.18.0.1")
	c := Default()
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	c.Flags(fs)
	if err := fs.Parse([]string{"--listen", "127.0.0.1:2"}); err != nil {
		t.Fatal(err)
	}
	if err := ApplyEnv(fs); err != nil {
		t.Fatal(err)
	}
	if c.DataDir != "/from/env" {
		t.Errorf("DataDir %q; want /from/env", c.DataDir)
	}
	if c.Listen != "127.0.0.1:2" {
		t.Errorf("Listen %q; want the flag's 127.0.0.1:2 over the environment", c.Listen)
	}
	if c.WebhookRetryBase != 250*time.Millisecond {
		t.Errorf("WebhookRetryBase %s; want 250ms", c.WebhookRetryBase)
	}
	if strings.Join(c.TLSHosts, "|") != "a.example|198.18.0.1" {
		t.Errorf("TLSHosts %q", c.TLSHosts)
	}
}

func TestBadEnvIsAnError(t *testing.T) {
	t.Setenv("EDGEWAN_RATE_LIMIT", "fast")
	c := Default()
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	c.Flags(fs)
	_ = fs.Parse(nil)
	if err := ApplyEnv(fs); err == nil || !strings.Contains(err.Error(), "EDGEWAN_RATE_LIMIT") {
		t.Fatalf("got %v; want an error naming EDGEWAN_RATE_LIMIT", err)
	}
}

// scaled sets a consistent scaled-out configuration.
func scaled(c *Config) {
	c.NATSURLs = []string{"nats://n1:4222", "nats://n2:4222"}
	c.NATSMQTTURLs = []string{"tcp://n1:1883", "tcp://n2:1883"}
	c.DatabaseURL = "postgres://u@db/edgewan"
	c.InfluxURL = "http://influx:8086"
	c.ClusterPartitions, c.ClusterLeaseTTL, c.ClusterID = 16, 6*time.Second, "c1"
}

// TestComposeVariables reads the scaled-out settings from the variables that
// deploy/compose.scale-out.yaml sets.
func TestComposeVariables(t *testing.T) {
	for k, v := range map[string]string{"EDGEWAN_NATS_URLS": "nats://nats-1:4222,nats://nats-2:4222",
		"EDGEWAN_NATS_MQTT_URLS": "tcp://nats-1:1883", "EDGEWAN_NATS_USER": "controller", "EDGEWAN_NATS_PASSWORD": "pw",
		"EDGEWAN_CLUSTER_ID": "controller-2", "EDGEWAN_CLUSTER_PARTITIONS": "32", "EDGEWAN_CLUSTER_LEASE_TTL": "6s"} {
		t.Setenv(k, v)
	}
	c := Default()
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	c.Flags(fs)
	_ = fs.Parse(nil)
	if err := ApplyEnv(fs); err != nil {
		t.Fatal(err)
	}
	if !c.Scaled() || len(c.NATSURLs) != 2 || c.NATSMQTTURLs[0] != "tcp://nats-1:1883" || c.NATSUser != "controller" ||
		c.NATSPassword != "pw" || c.ClusterID != "controller-2" || c.ClusterPartitions != 32 || c.ClusterLeaseTTL != 6*time.Second {
		t.Fatalf("scaled-out settings not read from the environment: %+v", c)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*Config)
		wantErr string
	}{
		{"defaults", func(*Config) {}, ""},
		{"bad listen", func(c *Config) { c.Listen = "8443" }, "--listen"},
		{"cert without key", func(c *Config) { c.TLSCert = "x.pem" }, "--tls-cert and --tls-key"},
		{"plain and cert", func(c *Config) { c.PlainHTTP, c.TLSCert, c.TLSKey = true, "a", "b" }, "exclude"},
		{"mysql url", func(c *Config) { c.DatabaseURL = "mysql://x" }, "postgres://"},
		{"zero timeout", func(c *Config) { c.WebhookTimeout = 0 }, "--webhook-timeout"},
		{"negative rate", func(c *Config) { c.RateLimit = -1 }, "--rate-limit"},
		{"bad log level", func(c *Config) { c.LogLevel = "loud" }, "--log-level"},
		{"metrics off", func(c *Config) { c.MetricsListen = "" }, ""},
		{"pprof", func(c *Config) { c.Pprof = true }, ""},
		{"pprof without metrics", func(c *Config) { c.MetricsListen, c.Pprof = "", true }, "--pprof needs --metrics-listen"},
		{"scaled out", scaled, ""},
		{"nats without postgres", func(c *Config) { scaled(c); c.DatabaseURL = "" }, "--nats-urls needs --database-url"},
		{"nats without influx", func(c *Config) { scaled(c); c.InfluxURL = "" }, "--nats-urls needs --influx-url"},
		{"nats without mqtt urls", func(c *Config) { scaled(c); c.NATSMQTTURLs = nil }, "--nats-mqtt-urls"},
		{"nats and external broker", func(c *Config) { scaled(c); c.MQTTURL = "mqtts://b:8883" }, "excludes --mqtt-url"},
		{"nats bad url", func(c *Config) { scaled(c); c.NATSURLs = []string{"http://n1:4222"} }, "nats://host:port"},
		{"short lease", func(c *Config) { scaled(c); c.ClusterLeaseTTL = 100 * time.Millisecond }, "--cluster-lease-ttl"},
		{"read coalescing off", func(c *Config) { scaled(c); c.NATSReadCoalesce = 0 }, ""},
		{"negative read coalescing", func(c *Config) { scaled(c); c.NATSReadCoalesce = -time.Millisecond }, "--nats-read-coalesce"},
		{"long read coalescing", func(c *Config) { scaled(c); c.NATSReadCoalesce = time.Second }, "--nats-read-coalesce"},
		{"read coalescing without nats", func(c *Config) { c.NATSReadCoalesce = time.Millisecond }, "--nats-read-coalesce is a scaled-out setting"},
		{"too many partitions", func(c *Config) { scaled(c); c.ClusterPartitions = 5000 }, "--cluster-partitions"},
		{"cluster flag without nats", func(c *Config) { c.ClusterPartitions = 16 }, "--cluster-partitions is a scaled-out setting: it needs --nats-urls"},
		{"nats user without nats", func(c *Config) { c.NATSUser = "u" }, "--nats-user is a scaled-out setting"},
		{"nats keys without nats", func(c *Config) { c.NATSKeysFile = "k.json" }, "--nats-keys is a scaled-out setting"},
		{"nats keys and user", func(c *Config) { scaled(c); c.NATSKeysFile = "k.json"; c.NATSUser = "u" }, "--nats-keys excludes --nats-user"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			tc.mutate(&c)
			err := c.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("got %v; want no error", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("got %v; want an error mentioning %q", err, tc.wantErr)
			}
		})
	}
}
