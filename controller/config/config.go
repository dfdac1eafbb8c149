// Package config is the controller's configuration: one plain struct with defaults, filled from
// flags and EDGEWAN_* environment variables, validated in one place.
package config

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"
	"time"
)

// Config is everything `controller serve` can be told.
type Config struct {
	DataDir       string // SQLite database, generated TLS material
	Listen        string // HTTPS API address
	MetricsListen string // Prometheus /metrics address; empty disables
	TLSCert       string // PEM certificate; empty: generate a CA and server certificate in DataDir/tls
	TLSKey        string
	TLSHosts      []string // extra names/addresses for the generated certificate
	PlainHTTP     bool     // serve the API without TLS, for use behind a TLS-terminating proxy only
	DatabaseURL   string   // postgres://...; empty: SQLite in DataDir
	OrgName       string

	AllowHTTPWebhooks  bool          // accept http:// webhook URLs to loopback addresses (development)
	WebhookTimeout     time.Duration // per delivery attempt
	WebhookRetryBase   time.Duration // first retry delay, doubling
	WebhookRetryMax    time.Duration // longest delay between attempts
	WebhookRetryWindow time.Duration // give up after this long

	MQTTListen    string        // the embedded broker's TLS listener
	MQTTURL       string        // an external broker (mqtts://host:port) instead of the embedded one
	MQTTUsername  string        // the controller's identity on the external broker
	MQTTPassword  string        // its password (prefer EDGEWAN_MQTT_PASSWORD to the flag)
	MQTTCA        string        // CA bundle for the external broker's certificate
	MQTTPublicURL string        // the broker URL handed to agents at claim; empty: derived
	MosquittoDir  string        // write an external Mosquitto's password and ACL files here at every claim
	OfflineAfter  time.Duration // a site that has not reported for this long is offline

	// Steering hysteresis (steering.Options); agents should run the same figures.
	SteeringHoldDown     time.Duration
	SteeringBreachAfter  int
	SteeringRecoverAfter int

	InfluxURL    string // InfluxDB for telemetry history; empty: the embedded store in DataDir
	InfluxToken  string
	InfluxOrg    string
	InfluxBucket string

	AIModels     string // JSON file of the gateway's models and fallbacks; empty: only the built-in echo model
	AuditKeyFile string // key sealing opted-in raw inputs in the audit log; empty: DataDir/audit.key
	// SecretsKeyFile seals webhook signing secrets in the database; empty: DataDir/secrets.key.
	// SecretsKeyFile+".previous", if present, is the key it replaced (rotation, docs/security.md).
	SecretsKeyFile string
	SIEMSinks      []string // where to stream audit records: syslog+tls://, syslog+tcp://, https:// (aigw/siem)
	// ProposalInterval is how often Automatic mode analyses every project's audit records; 0
	// disables the schedule (POST /projects/{id}/proposals still runs it on demand).
	ProposalInterval time.Duration

	// Scaled-out mode (docs/scale-out.md): set NATSURLs and the controller shares the sites
	// with the other controllers of the cluster through partition leases in PostgreSQL, and
	// takes the agents' messages from a NATS cluster instead of a broker of its own.
	NATSURLs     []string // nats://host:port of the NATS nodes; empty: not scaled out
	NATSMQTTURLs []string // the nodes' MQTT listeners, for the controller's publishes
	NATSUser     string   // the controller's NATS (and NATS MQTT) user
	NATSPassword string   // its password (prefer EDGEWAN_NATS_PASSWORD to the flag)
	// NATSKeysFile is the controller's keys for NATS operator mode (controller/natsauth; written
	// by `controller nats-init`): per-device NATS users instead of NATSUser/NATSPassword.
	NATSKeysFile      string
	ClusterID         string        // this controller's name in the cluster; empty: the hostname
	ClusterPartitions int           // partitions of the site space; 0: 16. The same on every controller
	ClusterLeaseTTL   time.Duration // a dead controller's partitions move after this; 0: 6s
	// NATSReadCoalesce is how long the controller's NATS connection lets the agents' messages
	// gather before reading again: one read and one wake-up for all of them, at the cost of up
	// to that much latency per message (docs/scale-out.md); 0 turns it off.
	NATSReadCoalesce time.Duration

	RateLimit float64 // requests per second per token; 0 disables
	RateBurst int     // bucket size

	ShutdownTimeout time.Duration
	LogLevel        string // debug, info, warn, error
	LogFormat       string // text or json
	// Pprof also serves Go's runtime profiles (/debug/pprof/) on MetricsListen and samples
	// blocking and mutex contention for them. Off by default: profiles reveal internals and
	// cost a little CPU; for diagnosing a running controller (docs/operations.md "Profiling").
	Pprof bool
}

// Default returns the defaults: embedded everything, HTTPS on loopback.
func Default() Config {
	return Config{
		DataDir:              "./data",
		Listen:               "127.0.0.1:8443",
		MetricsListen:        "127.0.0.1:9108",
		WebhookTimeout:       10 * time.Second,
		WebhookRetryBase:     5 * time.Second,
		WebhookRetryMax:      time.Hour,
		WebhookRetryWindow:   24 * time.Hour,
		MQTTListen:           "127.0.0.1:8883",
		MQTTUsername:         "controller",
		OfflineAfter:         30 * time.Second,
		SteeringHoldDown:     30 * time.Second,
		SteeringBreachAfter:  3,
		SteeringRecoverAfter: 10,
		InfluxBucket:         "telemetry/autogen",
		RateLimit:            50,
		RateBurst:            100,
		ShutdownTimeout:      20 * time.Second,
		ProposalInterval:     time.Hour,
		LogLevel:             "info",
		LogFormat:            "text",
		NATSReadCoalesce:     20 * time.Millisecond,
	}
}

// Flags binds c's fields to flags on fs; each flag --some-name also reads EDGEWAN_SOME_NAME
// when not given on the command line (see ApplyEnv).
func (c *Config) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.DataDir, "data-dir", c.DataDir, "directory for the SQLite database and generated TLS files")
	fs.StringVar(&c.Listen, "listen", c.Listen, "HTTPS API listen address")
	fs.StringVar(&c.MetricsListen, "metrics-listen", c.MetricsListen, "Prometheus /metrics listen address (empty disables)")
	fs.BoolVar(&c.Pprof, "pprof", c.Pprof, "also serve Go's runtime profiles at /debug/pprof/ on --metrics-listen (diagnosis only; off by default)")
	fs.StringVar(&c.TLSCert, "tls-cert", c.TLSCert, "TLS certificate (PEM); without it a CA and certificate are generated in the data dir")
	fs.StringVar(&c.TLSKey, "tls-key", c.TLSKey, "TLS private key (PEM)")
	fs.Func("tls-hosts", "comma-separated extra DNS names or IPs for the generated certificate", func(s string) error {
		c.TLSHosts = splitList(s)
		return nil
	})
	fs.BoolVar(&c.PlainHTTP, "plain-http", c.PlainHTTP, "serve plain HTTP (only behind a TLS-terminating proxy)")
	fs.StringVar(&c.DatabaseURL, "database-url", c.DatabaseURL, "PostgreSQL URL (postgres://...); empty uses SQLite in the data dir")
	fs.StringVar(&c.OrgName, "org-name", c.OrgName, "organisation name shown by GET /v1/org")
	fs.BoolVar(&c.AllowHTTPWebhooks, "allow-http-webhooks", c.AllowHTTPWebhooks, "allow http:// webhook URLs to loopback addresses (development)")
	fs.DurationVar(&c.WebhookTimeout, "webhook-timeout", c.WebhookTimeout, "timeout of one webhook delivery attempt")
	fs.DurationVar(&c.WebhookRetryBase, "webhook-retry-base", c.WebhookRetryBase, "delay before the first webhook retry; doubles each time")
	fs.DurationVar(&c.WebhookRetryMax, "webhook-retry-max", c.WebhookRetryMax, "longest delay between webhook retries")
	fs.DurationVar(&c.WebhookRetryWindow, "webhook-retry-window", c.WebhookRetryWindow, "how long to retry a webhook delivery before marking it failed")
	fs.StringVar(&c.MQTTListen, "mqtt-listen", c.MQTTListen, "the embedded MQTT broker's TLS listen address (agents connect here)")
	fs.StringVar(&c.MQTTURL, "mqtt-url", c.MQTTURL, "use this external broker (mqtts://host:port) instead of the embedded one")
	fs.StringVar(&c.MQTTUsername, "mqtt-username", c.MQTTUsername, "the controller's username on the external broker")
	fs.StringVar(&c.MQTTPassword, "mqtt-password", c.MQTTPassword, "the controller's password on the external broker (prefer EDGEWAN_MQTT_PASSWORD)")
	fs.StringVar(&c.MQTTCA, "mqtt-ca", c.MQTTCA, "CA bundle (PEM) for the external broker's certificate")
	fs.StringVar(&c.MQTTPublicURL, "mqtt-public-url", c.MQTTPublicURL, "broker URL given to agents when they claim (default: from --mqtt-url or --mqtt-listen); several broker nodes: a comma-separated list, agents fail over between them")
	fs.StringVar(&c.MosquittoDir, "mosquitto-dir", c.MosquittoDir, "with --mqtt-url: write the Mosquitto password and ACL files for the agents here")
	fs.DurationVar(&c.OfflineAfter, "offline-after", c.OfflineAfter, "mark a site offline after this long without a report")
	fs.DurationVar(&c.SteeringHoldDown, "steering-hold-down", c.SteeringHoldDown, "least time from a breach or outage to recovery, and between a class's switches")
	fs.IntVar(&c.SteeringBreachAfter, "steering-breach-after", c.SteeringBreachAfter, "consecutive bad telemetry windows that breach a class's SLA, for windows without probe counts (with them the SLA detector decides: steering/README.md)")
	fs.IntVar(&c.SteeringRecoverAfter, "steering-recover-after", c.SteeringRecoverAfter, "consecutive good windows before a breached or down transport is used again")
	fs.StringVar(&c.InfluxURL, "influx-url", c.InfluxURL, "InfluxDB URL for telemetry history (empty: embedded store in the data dir)")
	fs.StringVar(&c.InfluxToken, "influx-token", c.InfluxToken, "InfluxDB token (\"user:password\" for InfluxDB 1.8)")
	fs.StringVar(&c.InfluxOrg, "influx-org", c.InfluxOrg, "InfluxDB organisation (empty for 1.8)")
	fs.StringVar(&c.InfluxBucket, "influx-bucket", c.InfluxBucket, "InfluxDB bucket (\"database/retention\" for 1.8)")
	fs.StringVar(&c.AIModels, "ai-models", c.AIModels, "AI gateway models file (JSON: models and fallbacks; see aigw/provider/README.md); empty: the echo model only")
	fs.Func("siem", "stream AI gateway audit records to this SIEM sink (repeatable): syslog+tls://host:port?ca=FILE, syslog+tcp://host:port, https://host/path?token_env=VAR", func(s string) error {
		c.SIEMSinks = append(c.SIEMSinks, s)
		return nil
	})
	fs.DurationVar(&c.ProposalInterval, "ai-proposal-interval", c.ProposalInterval, "how often the AI gateway's Automatic mode analyses each project's audit records and proposes policy changes (0 disables the schedule)")
	fs.StringVar(&c.AuditKeyFile, "audit-key-file", c.AuditKeyFile, "key that encrypts raw inputs kept in the AI gateway's audit log (default DATA_DIR/audit.key)")
	fs.StringVar(&c.SecretsKeyFile, "secrets-key-file", c.SecretsKeyFile, "key that seals webhook signing secrets in the database (default DATA_DIR/secrets.key; FILE.previous is the key it replaced)")
	fs.Func("nats-urls", "scaled-out mode: comma-separated nats://host:port of the NATS cluster's nodes (docs/scale-out.md); needs --database-url, --influx-url and --nats-mqtt-urls", func(s string) error {
		c.NATSURLs = splitList(s)
		return nil
	})
	fs.Func("nats-mqtt-urls", "scaled-out mode: comma-separated MQTT listeners of the NATS nodes (tcp:// or mqtts://), for the controller's publishes; also the default of --mqtt-public-url", func(s string) error {
		c.NATSMQTTURLs = splitList(s)
		return nil
	})
	fs.StringVar(&c.NATSUser, "nats-user", c.NATSUser, "scaled-out mode: the controller's user on the NATS cluster")
	fs.StringVar(&c.NATSPassword, "nats-password", c.NATSPassword, "scaled-out mode: its password (prefer EDGEWAN_NATS_PASSWORD)")
	fs.StringVar(&c.NATSKeysFile, "nats-keys", c.NATSKeysFile, "scaled-out mode: the controller's NATS operator-mode keys file (from `controller nats-init`): each claimed device gets its own NATS user limited to its site (instead of --nats-user/--nats-password)")
	fs.StringVar(&c.ClusterID, "cluster-id", c.ClusterID, "scaled-out mode: this controller's name, unique in the cluster (default: the hostname)")
	fs.IntVar(&c.ClusterPartitions, "cluster-partitions", c.ClusterPartitions, "scaled-out mode: partitions of the site space, the same on every controller and in the NATS mapping (0: 16)")
	fs.DurationVar(&c.ClusterLeaseTTL, "cluster-lease-ttl", c.ClusterLeaseTTL, "scaled-out mode: how long a partition lease lasts without renewal; a dead controller's sites move after it (0: 6s)")
	fs.DurationVar(&c.NATSReadCoalesce, "nats-read-coalesce", c.NATSReadCoalesce, "scaled-out mode: let the agents' messages gather this long before the NATS connection reads again (one read and one wake-up for all of them; adds up to this much latency; 0 turns it off)")
	fs.Float64Var(&c.RateLimit, "rate-limit", c.RateLimit, "API requests per second per token (0 disables)")
	fs.IntVar(&c.RateBurst, "rate-burst", c.RateBurst, "API request burst per token")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", c.ShutdownTimeout, "how long to drain requests and queues on SIGTERM")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "debug, info, warn or error")
	fs.StringVar(&c.LogFormat, "log-format", c.LogFormat, "text or json")
}

// EnvName is the environment variable for a flag: --data-dir -> EDGEWAN_DATA_DIR.
func EnvName(flagName string) string {
	return "EDGEWAN_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// ApplyEnv sets every flag of fs not given on the command line from its EDGEWAN_* variable.
// Call it after fs.Parse: the command line wins over the environment.
func ApplyEnv(fs *flag.FlagSet) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] {
			return
		}
		if v, ok := os.LookupEnv(EnvName(f.Name)); ok {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: %w", EnvName(f.Name), v, err))
			}
		}
	})
	return errors.Join(errs...)
}

// Validate checks c and says what is wrong with it.
func (c *Config) Validate() error {
	var errs []error
	if c.DataDir == "" {
		errs = append(errs, errors.New("--data-dir must not be empty"))
	}
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		errs = append(errs, fmt.Errorf("--listen %q: %w", c.Listen, err))
	}
	if c.MetricsListen != "" {
		if _, _, err := net.SplitHostPort(c.MetricsListen); err != nil {
			errs = append(errs, fmt.Errorf("--metrics-listen %q: %w", c.MetricsListen, err))
		}
	} else if c.Pprof {
		errs = append(errs, errors.New("--pprof needs --metrics-listen: the profiles are served there"))
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		errs = append(errs, errors.New("--tls-cert and --tls-key go together"))
	}
	if c.PlainHTTP && c.TLSCert != "" {
		errs = append(errs, errors.New("--plain-http and --tls-cert exclude each other"))
	}
	if u := c.DatabaseURL; u != "" && !strings.HasPrefix(u, "postgres://") && !strings.HasPrefix(u, "postgresql://") {
		errs = append(errs, errors.New("--database-url must be a postgres:// URL (leave it empty for the embedded SQLite)"))
	}
	for name, d := range map[string]time.Duration{"webhook-timeout": c.WebhookTimeout, "webhook-retry-base": c.WebhookRetryBase,
		"webhook-retry-max": c.WebhookRetryMax, "webhook-retry-window": c.WebhookRetryWindow, "shutdown-timeout": c.ShutdownTimeout} {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("--%s must be positive, got %s", name, d))
		}
	}
	if c.MQTTURL == "" {
		if _, _, err := net.SplitHostPort(c.MQTTListen); err != nil {
			errs = append(errs, fmt.Errorf("--mqtt-listen %q: %w", c.MQTTListen, err))
		}
	} else if !strings.HasPrefix(c.MQTTURL, "mqtts://") && !strings.HasPrefix(c.MQTTURL, "ssl://") && !strings.HasPrefix(c.MQTTURL, "tcp://") {
		errs = append(errs, fmt.Errorf("--mqtt-url %q: want mqtts://host:port", c.MQTTURL))
	}
	if c.MosquittoDir != "" && c.MQTTURL == "" {
		errs = append(errs, errors.New("--mosquitto-dir goes with --mqtt-url (the embedded broker needs no files)"))
	}
	if c.SteeringHoldDown < 0 || c.SteeringBreachAfter < 1 || c.SteeringRecoverAfter < 1 {
		errs = append(errs, errors.New("--steering-hold-down must be >= 0, --steering-breach-after and --steering-recover-after >= 1"))
	}
	if c.OfflineAfter < 2*time.Second {
		errs = append(errs, fmt.Errorf("--offline-after must be at least 2s, got %s", c.OfflineAfter))
	}
	if c.InfluxURL != "" && !strings.HasPrefix(c.InfluxURL, "http://") && !strings.HasPrefix(c.InfluxURL, "https://") {
		errs = append(errs, fmt.Errorf("--influx-url %q: want http(s)://host:port", c.InfluxURL))
	}
	if c.ProposalInterval < 0 || c.ProposalInterval > 0 && c.ProposalInterval < time.Minute {
		errs = append(errs, fmt.Errorf("--ai-proposal-interval must be 0 (off) or at least 1m, got %s", c.ProposalInterval))
	}
	errs = append(errs, c.validateCluster()...)
	if c.RateLimit < 0 || c.RateBurst < 0 {
		errs = append(errs, errors.New("--rate-limit and --rate-burst must not be negative"))
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("--log-level must be debug, info, warn or error, got %q", c.LogLevel))
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		errs = append(errs, fmt.Errorf("--log-format must be text or json, got %q", c.LogFormat))
	}
	return errors.Join(errs...)
}

// Scaled reports whether the controller runs in the scaled-out mode (--nats-urls).
func (c *Config) Scaled() bool { return len(c.NATSURLs) > 0 }

// validateCluster checks the scaled-out flags: all or nothing, and never with the parts of
// the embedded default that would split the fleet's state between controllers.
func (c *Config) validateCluster() []error {
	var errs []error
	if !c.Scaled() {
		for name, set := range map[string]bool{"nats-mqtt-urls": len(c.NATSMQTTURLs) > 0, "nats-user": c.NATSUser != "",
			"nats-password": c.NATSPassword != "", "nats-keys": c.NATSKeysFile != "", "cluster-id": c.ClusterID != "",
			"cluster-partitions": c.ClusterPartitions != 0, "cluster-lease-ttl": c.ClusterLeaseTTL != 0,
			"nats-read-coalesce": c.NATSReadCoalesce != Default().NATSReadCoalesce} {
			if set {
				errs = append(errs, fmt.Errorf("--%s is a scaled-out setting: it needs --nats-urls (%s)", name, EnvName("nats-urls")))
			}
		}
		return errs
	}
	if c.DatabaseURL == "" {
		errs = append(errs, errors.New("--nats-urls needs --database-url: the controllers of a cluster share one PostgreSQL (the embedded SQLite is one controller's)"))
	}
	if c.InfluxURL == "" {
		errs = append(errs, errors.New("--nats-urls needs --influx-url: the controllers of a cluster share one InfluxDB (the embedded time series is one controller's)"))
	}
	if len(c.NATSMQTTURLs) == 0 {
		errs = append(errs, errors.New("--nats-urls needs --nats-mqtt-urls (the nodes' MQTT listeners, for the controller's publishes)"))
	}
	if c.MQTTURL != "" || c.MosquittoDir != "" {
		errs = append(errs, errors.New("--nats-urls excludes --mqtt-url and --mosquitto-dir: the NATS cluster is the broker"))
	}
	if c.NATSKeysFile != "" && (c.NATSUser != "" || c.NATSPassword != "") {
		errs = append(errs, errors.New("--nats-keys excludes --nats-user and --nats-password: in operator mode the controller signs its own NATS users"))
	}
	for _, u := range c.NATSURLs {
		if !strings.HasPrefix(u, "nats://") && !strings.HasPrefix(u, "tls://") {
			errs = append(errs, fmt.Errorf("--nats-urls %q: want nats://host:port", u))
		}
	}
	for _, u := range c.NATSMQTTURLs {
		if !strings.HasPrefix(u, "tcp://") && !strings.HasPrefix(u, "mqtts://") && !strings.HasPrefix(u, "ssl://") {
			errs = append(errs, fmt.Errorf("--nats-mqtt-urls %q: want tcp://host:port or mqtts://host:port", u))
		}
	}
	if c.ClusterPartitions < 0 || c.ClusterPartitions > 4096 {
		errs = append(errs, fmt.Errorf("--cluster-partitions must be 1..4096 (0: 16), got %d", c.ClusterPartitions))
	}
	if c.ClusterLeaseTTL < 0 || c.ClusterLeaseTTL > 0 && c.ClusterLeaseTTL < time.Second {
		errs = append(errs, fmt.Errorf("--cluster-lease-ttl must be at least 1s (0: 6s), got %s", c.ClusterLeaseTTL))
	}
	if c.NATSReadCoalesce < 0 || c.NATSReadCoalesce > 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("--nats-read-coalesce must be 0 (off) to 100ms, got %s", c.NATSReadCoalesce))
	}
	if len(c.ClusterID) > 200 {
		errs = append(errs, errors.New("--cluster-id must have at most 200 characters"))
	}
	return errs
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
