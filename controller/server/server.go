// Package server assembles the controller: storage, services, the HTTPS API of all families,
// metrics, background workers, and their orderly start and stop.
package server

import (
	"context"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"github.com/edgewan/edgewan/controller/clock"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/edgewan/edgewan/aigw/gateway"
	"github.com/edgewan/edgewan/aigw/siem"
	"github.com/edgewan/edgewan/controller/cluster"
	"github.com/edgewan/edgewan/controller/config"
	"github.com/edgewan/edgewan/controller/ingest"
	"github.com/edgewan/edgewan/controller/mqtt"
	"github.com/edgewan/edgewan/controller/natsauth"
	"github.com/edgewan/edgewan/controller/noc"
	"github.com/edgewan/edgewan/controller/sdwan"
	"github.com/edgewan/edgewan/controller/store"
	"github.com/edgewan/edgewan/controller/tlsgen"
	"github.com/edgewan/edgewan/coreapi"
	"github.com/edgewan/edgewan/coreapi/auth"
	"github.com/edgewan/edgewan/coreapi/openapi"
	"github.com/edgewan/edgewan/coreapi/page"
	"github.com/edgewan/edgewan/coreapi/ratelimit"
	"github.com/edgewan/edgewan/coreapi/rest"
	"github.com/edgewan/edgewan/coreapi/seal"
	"github.com/edgewan/edgewan/coreapi/soc"
	"github.com/edgewan/edgewan/coreapi/webhook"
)

// Version is the controller's version, set at build time (see Makefile).
var Version = "dev"

// Server is a running controller.
type Server struct {
	cfg       config.Config
	Store     *store.Store
	Webhooks  *webhook.Service
	Cases     *soc.Service
	SDWAN     *sdwan.Service
	Gateway   *gateway.Service
	siem      *siem.Streamer
	siemSinks []siem.Sink

	engine     *gin.Engine
	authn      *auth.Authenticator
	api        *http.Server
	apiLn      net.Listener
	metrics    *http.Server
	metricsLn  net.Listener
	dispatcher *webhook.Dispatcher
	watcher    *soc.AuthWatcher
	tls        *tls.Config // the API's and the embedded broker's certificate
	caPEM      string      // the generated CA, handed to agents at claim
	broker     *mqtt.Broker
	bus        mqtt.Bus
	member     *cluster.Member  // scaled-out mode only
	clusterDB  *sql.DB          // the member's pool (scaled-out mode)
	natsIssuer *natsauth.Issuer // --nats-keys: per-device NATS users (scaled-out mode)
	natsPush   chan struct{}    // wakes syncNATSAccount
	sink       telemetrySink
	Engine     *ingest.Engine
	bgCtx      context.Context // lives until Run's shutdown: the broker and the external bus
	stopBG     context.CancelFunc
	registry   *namedRegistry
	// quarantined reports stored objects other than sites that cannot be used (quarantine.go).
	quarantined *quarantines
	ready       atomic.Bool
	clock       *clock.Clock // wall time where it decides behaviour (a test may step it)
	CAFile      string       // the generated CA, when the server made its own certificate
}

// New opens storage, builds the services and binds the listeners; Run serves.
func New(ctx context.Context, cfg config.Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	gin.SetMode(gin.ReleaseMode)
	so, err := secretsAtRest(cfg)
	if err != nil {
		return nil, err
	}
	st, err := store.Open(ctx, so)
	if err != nil {
		return nil, err
	}
	clk, err := clock.FromEnv()
	if err != nil {
		st.Close()
		return nil, err
	}
	s := &Server{cfg: cfg, Store: st, registry: newNamedRegistry(), clock: clk}
	s.quarantined = newQuarantines(s.registry)
	s.bgCtx, s.stopBG = context.WithCancel(context.WithoutCancel(ctx))
	go clk.Run(s.bgCtx)
	fail := func(err error) (*Server, error) {
		s.stopBG()
		s.closeSDWAN()
		st.Close()
		return nil, err
	}
	if err := s.loadTLS(); err != nil {
		return fail(err)
	}
	if err := s.loadNATSKeys(); err != nil {
		return fail(err)
	}
	if err := s.build(ctx); err != nil {
		return fail(err)
	}
	if err := s.startSDWAN(ctx); err != nil {
		return fail(err)
	}
	if err := s.listen(); err != nil {
		return fail(err)
	}
	return s, nil
}

// secretsAtRest makes the data dir private (0700, whatever the umask: it holds the database
// and the keys) and loads the key that seals webhook secrets, and the one it replaced if any.
func secretsAtRest(cfg config.Config) (store.Options, error) {
	o := store.Options{DatabaseURL: cfg.DatabaseURL, DataDir: cfg.DataDir}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return o, fmt.Errorf("server: data dir: %w", err)
	}
	if err := os.Chmod(cfg.DataDir, 0o700); err != nil {
		return o, fmt.Errorf("server: data dir: %w", err)
	}
	path := cfg.SecretsKeyFile
	if path == "" {
		path = filepath.Join(cfg.DataDir, "secrets.key")
	}
	var err error
	if o.Secrets, err = seal.Load(path); err != nil {
		return o, fmt.Errorf("server: secrets key: %w", err)
	}
	if _, err := os.Stat(path + ".previous"); err == nil {
		if o.PreviousSecrets, err = seal.Load(path + ".previous"); err != nil {
			return o, fmt.Errorf("server: previous secrets key: %w", err)
		}
		slog.Info("resealing webhook secrets sealed with the previous key; delete it once the controller has started", "previous", path+".previous")
	}
	return o, nil
}

// loadTLS loads the given certificate or makes the controller's own CA and certificate. The
// embedded MQTT broker uses it even when the API is plain HTTP behind a proxy.
func (s *Server) loadTLS() error {
	cfg := s.cfg
	certFile, keyFile := cfg.TLSCert, cfg.TLSKey
	if certFile == "" {
		if cfg.PlainHTTP && (cfg.MQTTURL != "" || cfg.Scaled()) {
			return nil // nothing here speaks TLS
		}
		f, created, err := tlsgen.Ensure(cfg.DataDir, cfg.TLSHosts)
		if err != nil {
			return err
		}
		certFile, keyFile, s.CAFile = f.Cert, f.Key, f.CACert
		caPEM, err := os.ReadFile(f.CACert)
		if err != nil {
			return fmt.Errorf("server: %w", err)
		}
		s.caPEM = string(caPEM)
		fp, _ := tlsgen.Fingerprint(f.CACert)
		slog.Info("using the controller's own CA; give clients this file or its fingerprint", "ca", f.CACert, "sha256", fp, "generated", created)
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return fmt.Errorf("server: TLS: %w", err)
	}
	if s.caPEM != "" {
		// Present the generated CA with the leaf, so that an agent that pins only the CA's
		// fingerprint (agent --ca-fingerprint) can find it and verify the leaf against it.
		if blk, _ := pem.Decode([]byte(s.caPEM)); blk != nil {
			cert.Certificate = append(cert.Certificate, blk.Bytes)
		}
	}
	s.tls = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	ticketKey, err := sessionTicketKey(cert)
	if err != nil {
		return fmt.Errorf("server: TLS: %w", err)
	}
	s.tls.SetSessionTicketKeys([][32]byte{ticketKey})
	return nil
}

// sessionTicketKey derives the TLS session ticket key from the certificate's private key, so
// that tickets issued before a restart still resume after it: a fleet reconnecting to a
// restarted controller then skips the certificate exchange and its verification, about a
// quarter of an agent's reconnect CPU and an eighth of the controller's (docs/benchmarks.md,
// "Reconnect rate at 10,000 agents"). Go's default is a random key
// per process. Anyone who can read this key can read the private key it comes from, so it
// adds no exposure; a ticket is good for 7 days at most (crypto/tls), and TLS 1.3 resumption
// still runs an ECDHE exchange, so recorded traffic stays protected. A new key pair means new
// tickets.
func sessionTicketKey(cert tls.Certificate) ([32]byte, error) {
	var k [32]byte
	der, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		return k, fmt.Errorf("session ticket key: %w", err)
	}
	b, err := hkdf.Key(sha256.New, der, nil, "edgewan TLS session ticket key v1", len(k))
	if err != nil {
		return k, fmt.Errorf("session ticket key: %w", err)
	}
	copy(k[:], b)
	return k, nil
}

func (s *Server) build(ctx context.Context) error {
	cfg := s.cfg
	if _, err := s.Store.EnsureOrg(ctx, cfg.OrgName); err != nil {
		return err
	}
	newKey := func() string {
		b := make([]byte, 32)
		_, _ = rand.Read(b)
		return hex.EncodeToString(b)
	}
	cursorKey, err := s.Store.Setting(ctx, "cursor_key", newKey)
	if err != nil {
		return err
	}
	kb, err := hex.DecodeString(cursorKey)
	pages, cerr := page.NewCodec(kb)
	if err != nil || cerr != nil {
		// Nothing in the data stops the start: a damaged key only invalidates the cursors
		// clients hold (they get invalid_cursor and list again).
		slog.Error("server: the stored cursor key is damaged; replacing it (list cursors issued before are invalid)", "err", errors.Join(err, cerr))
		cursorKey = newKey()
		if err := s.Store.SetSetting(ctx, "cursor_key", cursorKey); err != nil {
			return err
		}
		kb, _ = hex.DecodeString(cursorKey)
		if pages, err = page.NewCodec(kb); err != nil {
			return err
		}
	}

	s.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	s.dispatcher = webhook.NewDispatcher(s.Store, webhook.DispatchOptions{
		Now:     s.clock.Now,
		Timeout: cfg.WebhookTimeout, RetryBase: cfg.WebhookRetryBase, RetryMax: cfg.WebhookRetryMax,
		RetryWindow: cfg.WebhookRetryWindow, Registerer: s.registry, Shared: cfg.Scaled(),
	})
	s.Webhooks = webhook.NewService(s.Store, webhook.Options{AllowHTTPLoopback: cfg.AllowHTTPWebhooks, Now: s.clock.Now}, s.dispatcher.Notify)
	s.Cases = soc.NewService(s.Store, s.dispatcher.Notify)
	s.Cases.SetClock(s.clock.Now)
	s.watcher = soc.NewAuthWatcher(s.Cases, soc.WatchOptions{})

	s.authn = &auth.Authenticator{
		Keys:    s.Store,
		Now:     s.clock.Now,
		Limiter: ratelimit.New(ratelimit.Options{Rate: cfg.RateLimit, Burst: cfg.RateBurst}),
		OnFail: func(_ context.Context, f auth.Failure) {
			s.watcher.Failure(f.ClientIP, f.KeyID, f.Reason, f.At)
		},
	}

	e := gin.New()
	e.HandleMethodNotAllowed = true
	e.ContextWithFallback = true
	e.RemoveExtraSlash = false
	if err := e.SetTrustedProxies(nil); err != nil { // the client address is the peer's unless configured
		return err
	}
	e.Use(rest.RequestID(), s.httpMetrics(), accessLog(), rest.Recovery(), headLimit(), rest.CleanPath())
	e.NoRoute(rest.NoRoute)
	e.NoMethod(rest.NoMethod)
	e.GET("/healthz", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"status": "ok"}) })
	e.GET("/readyz", s.readyz)
	oa, err := openapi.Handler()
	if err != nil {
		return err
	}
	e.GET("/openapi.json", oa)
	noc.Register(e) // the NOC page: static files; its data comes from the API below

	authn := s.authn
	v1 := e.Group("/v1", authn.Middleware())
	coreapi.Register(v1, coreapi.Deps{Pages: pages, Org: s.Store, Cases: s.Cases, Webhooks: s.Webhooks, Version: Version, Now: s.clock.Now})

	s.SDWAN = sdwan.NewService(s.Store, sdwan.Options{
		Now:            s.clock.Now,
		BrokerURL:      s.mqttPublicURL,
		Broker:         s.brokerKind(),
		CAPEM:          s.caPEM,
		OnClaimed:      s.writeMosquittoFiles,
		NATSCredential: s.natsCredential(),
		OnClaimUnknown: func(_ context.Context, clientIP string) {
			s.watcher.Failure(clientIP, "", "unknown claim token", s.clock.Now())
		},
		OnClaimReuse: func(ctx context.Context, siteID, clientIP, reason string) {
			s.raise(ctx, soc.Signal{Rule: soc.RuleClaimReuse, Subject: siteID, Severity: "medium",
				Title:       "Claim token of site " + siteID + " presented again",
				Description: fmt.Sprintf("a claim token that %s was presented from %s", reason, clientIP)})
		},
	}, s.dispatcher.Notify)
	sd := e.Group("/sd-wan/v1")
	sdwan.RegisterClaim(sd.Group("", ipLimit(authn.Limiter)), s.SDWAN)
	sdwan.Register(sd.Group("", authn.Middleware()), s.SDWAN, pages)

	if err := s.buildGateway(ctx); err != nil {
		return err
	}
	gateway.Register(e.Group("/ai-gateway/v1", authn.Middleware()), s.Gateway, pages, sdwan.Diff)
	s.engine = e
	return nil
}

func (s *Server) listen() error {
	cfg := s.cfg
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("server: API listener: %w", err)
	}
	s.api = &http.Server{
		Handler:           s.engine,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    maxHeaderBytes, // headLimit refuses far less, with the error body
		ErrorLog:          slog.NewLogLogger(slog.Default().Handler(), slog.LevelDebug),
	}
	// Event streams never end by themselves: end them when the shutdown starts to drain.
	s.api.RegisterOnShutdown(s.SDWAN.CloseStreams)
	if cfg.PlainHTTP {
		slog.Warn("serving the API over plain HTTP: only do this behind a TLS-terminating proxy", "listen", ln.Addr().String())
		s.apiLn = ln
	} else {
		s.api.TLSConfig = s.tls
		s.apiLn = tls.NewListener(ln, s.tls)
	}
	if cfg.MetricsListen != "" {
		mln, err := net.Listen("tcp", cfg.MetricsListen)
		if err != nil {
			s.apiLn.Close()
			return fmt.Errorf("server: metrics listener: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{Registry: s.registry}))
		if cfg.Pprof {
			servePprof(mux)
		}
		s.metrics = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		s.metricsLn = mln
	}
	return nil
}

// Addr is the API's listening address.
func (s *Server) Addr() string { return s.apiLn.Addr().String() }

// MetricsAddr is the metrics listening address, or "".
func (s *Server) MetricsAddr() string {
	if s.metricsLn == nil {
		return ""
	}
	return s.metricsLn.Addr().String()
}

// Handler is the API handler (for in-process benchmarks).
func (s *Server) Handler() http.Handler { return s.engine }

// Run serves until ctx is cancelled, then drains: stops accepting, lets requests finish,
// lets webhook attempts in flight finish and stores their results, and closes the database.
func (s *Server) Run(ctx context.Context) error {
	bg, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	engineCtx, stopEngine := context.WithCancel(context.WithoutCancel(ctx))
	engineDone := make(chan struct{})
	go func() {
		defer close(engineDone)
		if err := s.Engine.Run(engineCtx); err != nil {
			slog.Error("ingest stopped", "err", err)
		}
	}()
	clusterCtx, leaveCluster := context.WithCancel(context.WithoutCancel(ctx))
	clusterDone := make(chan struct{})
	go func() {
		defer close(clusterDone)
		s.runCluster(clusterCtx)
	}()
	wg.Add(5)
	go func() {
		defer wg.Done()
		s.runSIEM(bg)
	}()
	go func() {
		defer wg.Done()
		s.runAudit(bg)
	}()
	go func() {
		defer wg.Done()
		s.syncNATSAccount(bg)
	}()
	go func() {
		defer wg.Done()
		if err := s.dispatcher.Run(bg); err != nil {
			slog.Error("webhook dispatcher stopped", "err", err)
		}
	}()
	go func() {
		defer wg.Done()
		s.watcher.Run(bg)
	}()

	errc := make(chan error, 2)
	go func() { errc <- s.api.Serve(s.apiLn) }()
	if s.metrics != nil {
		go func() { errc <- s.metrics.Serve(s.metricsLn) }()
	}
	s.ready.Store(true)
	slog.Info("controller serving", "api", s.Addr(), "mqtt", s.MQTTAddr(), "metrics", s.MetricsAddr(), "database", s.Store.Backend(), "version", Version)

	var runErr error
	select {
	case <-ctx.Done():
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			runErr = fmt.Errorf("server: %w", err)
		}
	}
	s.ready.Store(false)
	slog.Info("shutting down: draining requests and queues", "timeout", s.cfg.ShutdownTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	if err := s.api.Shutdown(sctx); err != nil {
		slog.Warn("requests still running at shutdown timeout", "err", err)
	}
	if s.metrics != nil {
		_ = s.metrics.Shutdown(sctx)
	}
	leaveCluster() // releases the leases: the other controllers take the sites over at once
	<-clusterDone
	s.closeIngress(sctx) // before the engine stops: what the broker acknowledged must reach it
	stopEngine()         // saves the latest figures and flushes the time series
	<-engineDone
	s.Gateway.Close() // commits the audit records of the requests just drained
	s.stopBG()
	s.closeSDWAN()
	stopBG() // the webhook dispatcher last: it delivers what the others raised
	wg.Wait()
	s.authn.Wait()
	if err := s.Store.Close(); err != nil {
		slog.Warn("closing database", "err", err)
	}
	slog.Info("controller stopped")
	return runErr
}

func (s *Server) readyz(c *gin.Context) {
	if !s.ready.Load() {
		rest.FailWith(c, http.StatusServiceUnavailable, "unavailable", "not ready: starting or shutting down")
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), 2*time.Second)
	defer cancel()
	if faults := s.faults(ctx); len(faults) > 0 {
		rest.FailWith(c, http.StatusServiceUnavailable, "unavailable", "not ready: %s", strings.Join(faults, "; "))
		return
	}
	c.JSON(http.StatusOK, gin.H{"status": "ready", "database": s.Store.Backend()})
}

// minFreeDisk is the free space of the data dir below which the controller says it is not
// ready: SQLite, the embedded telemetry store and the TLS files all write there.
const minFreeDisk = 8 << 20

// faults checks, at once, everything the controller needs to keep what it accepts: the
// database, the data dir's free space, the telemetry store and the external broker.
func (s *Server) faults(ctx context.Context) []string {
	checks := []func() string{
		func() string {
			if err := s.Store.Ping(ctx); err != nil {
				return "database not reachable"
			}
			return ""
		},
		func() string {
			var st syscall.Statfs_t
			if err := syscall.Statfs(s.cfg.DataDir, &st); err != nil {
				return "data dir: " + err.Error()
			}
			if free := st.Bavail * uint64(st.Bsize); free < minFreeDisk {
				return fmt.Sprintf("data dir full: %d bytes free", free)
			}
			return ""
		},
		func() string {
			if p, ok := s.sink.(interface{ Ping(context.Context) error }); ok && p.Ping(ctx) != nil {
				return "telemetry store (InfluxDB) not reachable"
			}
			return ""
		},
		func() string {
			if s.Engine == nil {
				return ""
			}
			if c, ok := s.Engine.ClockFault(); ok {
				held := ""
				if c.Refused {
					held = "; agents' reports held until it is right"
				}
				return fmt.Sprintf("clock: the controller's clock looks %s off (%d of %d reporting sites agree)%s",
					c.Offset.Round(time.Second), c.Sites, c.Heard, held)
			}
			return ""
		},
		func() string {
			if b, ok := s.bus.(interface{ Connected() bool }); ok && !b.Connected() {
				return "MQTT broker not connected"
			}
			return ""
		},
	}
	found := make([]string, len(checks))
	var wg sync.WaitGroup
	for i, check := range checks {
		wg.Go(func() { found[i] = check() })
	}
	wg.Wait()
	return slices.DeleteFunc(found, func(f string) bool { return f == "" })
}

// Routes lists the API's registered routes (the OpenAPI drift test compares them with the document).
func (s *Server) Routes() gin.RoutesInfo { return s.engine.Routes() }

// raise opens or notes a system case off the caller's path; failures are logged.
func (s *Server) raise(ctx context.Context, sig soc.Signal) {
	go func() {
		if _, err := s.Cases.Raise(context.WithoutCancel(ctx), sig); err != nil {
			slog.Error("soc: raising case", "rule", sig.Rule, "subject", sig.Subject, "err", err)
		}
	}()
}
