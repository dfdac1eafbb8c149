// Command agent runs on each branch router: it probes the WAN transports, reports telemetry to
// the controller and applies the steering and QoS policies it receives.
//
//	agent run [--config FILE] [flags]   claim the site on first boot, then run
//	agent cleanup [--config FILE]       remove every route, rule and qdisc the agent added
//	agent version
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/vishvananda/netns"

	"github.com/edgewan/edgewan/agent/claim"
	"github.com/edgewan/edgewan/agent/config"
	"github.com/edgewan/edgewan/agent/dataplane"
	"github.com/edgewan/edgewan/agent/engine"
	"github.com/edgewan/edgewan/buildinfo"
)

// Version is set at build time (see Makefile); commit and date come from buildinfo.
var Version = "dev"

const usage = `usage:
  agent run [--config FILE] [flags]    claim the site on first boot (--controller, --claim-token,
                                       --ca-file or --ca-fingerprint), then probe, report and enforce
  agent cleanup [--config FILE]        remove every route, rule and qdisc the agent added
  agent status [--config FILE]         what the running agent is doing (from its --metrics-listen)
  agent version

Run 'agent run -h' for the flags.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "version", "--version", "-version":
		fmt.Println(buildinfo.Get(Version).String("agent"))
		return
	case "run":
		err = run(os.Args[2:], os.Stderr)
	case "cleanup":
		err = cleanup(os.Args[2:])
	case "status":
		err = status(os.Args[2:], os.Stdout)
	case "-h", "--help", "help":
		fmt.Print(usage)
		return
	default:
		fmt.Fprintf(os.Stderr, "agent: unknown command %q\n\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	if errors.Is(err, flag.ErrHelp) {
		return // -h: the flags were printed to stdout
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "agent:", err)
		var ce *claim.Error
		if errors.As(err, &ce) && ce.Permanent {
			os.Exit(3) // a refused claim: restarting will not help (systemd: RestartPreventExitStatus=3)
		}
		os.Exit(1)
	}
}

// helpRequested reports whether args ask for help (before any "--").
func helpRequested(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help", "--h":
			return true
		}
	}
	return false
}

func loadConfig(fs *flag.FlagSet, args []string) (*config.Config, error) {
	path := fs.String("config", "", "YAML configuration file (flags override it)")
	f := config.NewFlags(fs)
	if helpRequested(args) {
		fs.SetOutput(os.Stdout) // asked for: usage on stdout, exit 0 (flag.ErrHelp in main)
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	c, err := config.Load(*path)
	if err != nil {
		return nil, err
	}
	f.Apply(c)
	if err := c.Finish(); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return c, nil
}

func run(args []string, logOut io.Writer) error {
	fs := flag.NewFlagSet("agent run", flag.ContinueOnError)
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	c, err := loadConfig(fs, args)
	if err != nil {
		return err
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	log := slog.New(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: lvl}))
	if os.Getenv("GOMAXPROCS") == "" {
		// The agent waits on sockets and timers; one core is plenty, and it spares the CPU
		// that Go's scheduler spends looking for work on idle cores (docs/agent.md).
		runtime.GOMAXPROCS(1)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	// Everything that can fail locally is checked before provision spends a one-time claim
	// token: a second agent started by mistake must stop here, not after claiming the site.
	unlock, err := lockDataDir(c.DataDir)
	if err != nil {
		return err
	}
	defer unlock()
	metricsLn, err := preflight(c)
	if err != nil {
		return err
	}
	if metricsLn != nil {
		defer metricsLn.Close()
	}
	creds, err := provision(ctx, c, log)
	if err != nil {
		return err
	}
	var running atomic.Pointer[engine.Engine]
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if metricsLn != nil {
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		// profiles, on the same (loopback by default) listener as the metrics
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/status", func(w http.ResponseWriter, r *http.Request) {
			e := running.Load()
			if e == nil {
				http.Error(w, "starting", http.StatusServiceUnavailable)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(e.Status())
		})
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(metricsLn) }()
		defer srv.Close()
		log.Info("agent: metrics", "listen", metricsLn.Addr().String())
	}
	log.Info("agent: starting", "version", Version, "site", creds.Site, "device", creds.Device, "transports", len(c.Transports), "enforce", *c.Enforce)
	return engine.Run(ctx, engine.Options{Config: c, Creds: creds, Version: Version, Logger: log, Registry: reg,
		OnStart: func(e *engine.Engine) { running.Store(e) }})
}

// preflight checks, before any claim, what the agent will need locally: a writable data dir
// (credentials and spool), the metrics and status listener (returned bound, nil when none is
// configured), the controller's CA for a first boot, and netlink when it enforces. The
// configuration itself was validated by loadConfig.
func preflight(c *config.Config) (net.Listener, error) {
	probe, err := os.CreateTemp(c.DataDir, ".preflight-*")
	if err != nil {
		return nil, fmt.Errorf("data dir %s is not writable: %w", c.DataDir, err)
	}
	probe.Close()
	os.Remove(probe.Name())
	if err := os.MkdirAll(filepath.Join(c.DataDir, "spool"), 0o700); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	if _, err := claim.Load(c.DataDir); errors.Is(err, os.ErrNotExist) && c.ClaimToken != "" {
		if _, err := claim.TLSConfig(c.CAFile, c.CAFingerprint); err != nil {
			return nil, err
		}
	}
	if *c.Enforce {
		dp, err := dataplane.New(netns.None(), dataplane.Options{TableBase: c.Routing.TableBase,
			RulePriority: c.Routing.RulePriority, MarkBase: c.Routing.MarkBase})
		if err != nil {
			return nil, fmt.Errorf("data plane (netlink): %w", err)
		}
		dp.Close()
	}
	if c.MetricsListen == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", c.MetricsListen)
	if err != nil {
		return nil, fmt.Errorf("--metrics-listen: %w", err)
	}
	return ln, nil
}

// provision returns the stored credentials, or claims the site once with the claim token.
func provision(ctx context.Context, c *config.Config, log *slog.Logger) (*claim.Credentials, error) {
	creds, err := claim.Load(c.DataDir)
	if err == nil {
		if c.ClaimToken != "" {
			log.Info("agent: already claimed; the claim token is not needed any more", "site", creds.Site)
		}
		return creds, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if c.ClaimToken == "" || c.Controller == "" {
		return nil, errors.New("not provisioned yet: give --controller URL and --claim-token (and --ca-file or --ca-fingerprint) for the first boot")
	}
	tc, err := claim.TLSConfig(c.CAFile, c.CAFingerprint)
	if err != nil {
		return nil, err
	}
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}
	req := claim.Request{ClaimToken: c.ClaimToken, Serial: c.Serial, Hostname: c.Hostname, Version: Version}
	backoff := time.Second
	for {
		creds, err = claim.Claim(ctx, hc, c.Controller, req)
		if err == nil {
			break
		}
		var ce *claim.Error
		if errors.As(err, &ce) && ce.Permanent {
			return nil, err
		}
		log.Warn("agent: claim failed; retrying", "err", err, "in", backoff)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Minute)
	}
	if err := claim.Save(c.DataDir, creds); err != nil {
		return nil, err
	}
	log.Info("agent: site claimed", "site", creds.Site, "device", creds.Device, "broker", creds.MQTTURL)
	return creds, nil
}

func cleanup(args []string) error {
	fs := flag.NewFlagSet("agent cleanup", flag.ContinueOnError)
	c, err := loadConfig(fs, args)
	if err != nil {
		return err
	}
	// A running agent would put back what this removes: refuse while one holds the data dir.
	unlock, err := lockDataDir(c.DataDir)
	if err != nil {
		return err
	}
	defer unlock()
	dp, err := dataplane.New(netns.None(), dataplane.Options{TableBase: c.Routing.TableBase, RulePriority: c.Routing.RulePriority, MarkBase: c.Routing.MarkBase})
	if err != nil {
		return err
	}
	defer dp.Close()
	n, err := dp.Cleanup()
	fmt.Printf("agent cleanup: %d changes\n", n)
	return err
}

// lockDataDir takes the data dir's lock (DATA/agent.lock, flock): two agents sharing a spool
// and credentials, or a cleanup under a running agent, would undo each other's work. The kernel
// drops the lock when the process dies, so a crash leaves nothing to clear.
func lockDataDir(dir string) (unlock func(), err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "agent.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("another agent is running with data dir %s; stop it first", dir)
		}
		return nil, fmt.Errorf("locking data dir %s: %w", dir, err)
	}
	return func() { f.Close() }, nil
}

// status prints the running agent's state, read from its metrics listener.
func status(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("agent status", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the raw JSON")
	c, err := loadConfig(fs, args)
	if err != nil {
		return err
	}
	if c.MetricsListen == "" {
		return errors.New("the agent serves its status on --metrics-listen (metrics_listen:); none is configured")
	}
	hc := &http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Get("http://" + c.MetricsListen + "/status")
	if err != nil {
		return fmt.Errorf("is the agent running? %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("agent status: %s", resp.Status)
	}
	var st engine.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return fmt.Errorf("agent status: %w", err)
	}
	if *asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
	conn := "connected"
	if !st.Connected {
		conn = "NOT connected (local decisions only)"
	}
	fmt.Fprintf(out, "site %s, device %s, broker %s\n\n", st.Site, st.Device, conn)
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TRANSPORT\tINTERFACE\tPROBING\tHARD DOWN\tSTEERING")
	for _, t := range st.Transports {
		fmt.Fprintf(tw, "%s\t%s\t%v\t%v\t%s\n", t.Name, t.Interface, t.Probing, t.Down, t.State)
	}
	fmt.Fprintln(tw, "\nCLASS\tPATH\tBY\tCONTROLLER\tLOCAL")
	for _, cl := range st.Classes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", cl.Name, cl.Path, cl.By, cl.Controller, cl.Local)
	}
	fmt.Fprintln(tw, "\nPOLICY\tTYPE\tVERSION\tACK")
	for _, p := range st.Policies {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", p.Policy, p.Type, p.Version, p.Ack)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nspool: %d messages waiting (%d bytes), %d dropped at the cap, deleted at: %s\n", st.Spool.Records, st.Spool.Bytes, st.Spool.Dropped, st.Spool.DeleteMode)
	return nil
}
