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
