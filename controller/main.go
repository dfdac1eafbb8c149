// Command controller is edgewan's central controller: the HTTPS API of all three families,
// telemetry ingest, SLA decisions and policy publishing.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/edgewan/edgewan/buildinfo"
	"github.com/edgewan/edgewan/controller/cluster"
	"github.com/edgewan/edgewan/controller/config"
	"github.com/edgewan/edgewan/controller/natsauth"
	"github.com/edgewan/edgewan/controller/server"
	"github.com/edgewan/edgewan/controller/store"
	"github.com/edgewan/edgewan/coreapi/auth"
)

const usage = `usage: controller <command> [flags]

commands:
  serve                      run the controller (controller serve -h for flags)
  keys create --scopes a,b   create an API key; the token is the last line printed
  keys create --project P    create an AI gateway key for project P (add --scopes aigw:admin
                             to let it change the project's policies)
  keys list                  list keys (never their tokens)
  keys revoke ID             revoke a key
  nats-init DIR              make the NATS operator-mode setup of the scaled-out mode in DIR
                             (--partitions N, as --cluster-partitions; docs/scale-out.md)
  version                    print the version
`

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return // -h: the usage was printed to stdout
		}
		fmt.Fprintln(os.Stderr, "controller:", err)
		os.Exit(2)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("no command given")
	}
	switch args[0] {
	case "serve":
		if helpRequested(args[1:]) {
			stderr = stdout // asked for: the flags on stdout, exit 0
		}
		return serve(ctx, args[1:], stderr)
	case "keys":
		return keys(ctx, args[1:], stdout, stderr)
	case "nats-init":
		return natsInit(args[1:], stdout, stderr)
	case "version", "--version", "-version":
		fmt.Fprintln(stdout, buildinfo.Get(server.Version).String("controller"))
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", args[0])
}

func serve(ctx context.Context, args []string, stderr io.Writer) error {
	cfg := config.Default()
	fs := flag.NewFlagSet("controller serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.Flags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := config.ApplyEnv(fs); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("serve: unexpected arguments %q", fs.Args())
	}
	setupLogging(cfg, stderr)
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	srv, err := server.New(ctx, cfg)
	if err != nil {
		return err
	}
	return srv.Run(ctx)
}

func setupLogging(cfg config.Config, w io.Writer) {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(cfg.LogLevel))
	opts := &slog.HandlerOptions{Level: lvl}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if cfg.LogFormat == "json" {
		h = slog.NewJSONHandler(w, opts)
	}
	slog.SetDefault(slog.New(h))
}

// storeFlags binds the flags that say where the database is, for the commands that work on the
// data dir without a running server.
func storeFlags(fs *flag.FlagSet) *config.Config {
	cfg := config.Default()
	fs.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "data directory of the controller")
	fs.StringVar(&cfg.DatabaseURL, "database-url", cfg.DatabaseURL, "PostgreSQL URL, if the controller uses one")
	return &cfg
}

func openStore(ctx context.Context, fs *flag.FlagSet, cfg *config.Config) (*store.Store, error) {
	if err := config.ApplyEnv(fs); err != nil {
		return nil, err
	}
	return store.Open(ctx, store.Options{DatabaseURL: cfg.DatabaseURL, DataDir: cfg.DataDir})
}

// parseInterspersed parses flags that may come before or after positional arguments.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
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

// natsInit writes a new NATS operator-mode setup (controller/natsauth): the servers' auth.conf
// and operator JWT, the controllers' keys file and the operator's identity seed.
func natsInit(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("controller nats-init", flag.ContinueOnError)
	fs.SetOutput(stderr)
	if helpRequested(args) {
		fs.SetOutput(stdout)
	}
	partitions := fs.Int("partitions", cluster.DefaultPartitions, "partitions of the site space: the controllers' --cluster-partitions")
	operatorPath := fs.String("operator-path", "", "where the NATS servers will read operator.jwt (default: DIR/operator.jwt, absolute)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: controller nats-init [--partitions N] [--operator-path PATH] DIR")
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return errors.New("nats-init: give one directory")
	}
	if *partitions < 1 || *partitions > 4096 {
		return fmt.Errorf("nats-init: --partitions must be 1..4096, got %d", *partitions)
	}
	setup, err := natsauth.Generate(*partitions)
	if err != nil {
		return err
	}
	if err := setup.Write(pos[0], *operatorPath); err != nil {
		return fmt.Errorf("nats-init: %w", err)
	}
	fmt.Fprintf(stdout, `wrote %[1]s:
  auth.conf             include it in every NATS node's configuration, with a resolver block
  operator.jwt          the operator JWT auth.conf names
  controller-keys.json  the controllers' --nats-keys (secret: signs every device's credential)
  operator.nk           the operator's identity key: move it offline (it only signs operator.jwt)
`, pos[0])
	return nil
}

func keys(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("keys: give create, list or revoke")
	}
	if helpRequested(args[:1]) || args[0] == "help" {
		fmt.Fprint(stdout, usage)
		return flag.ErrHelp
	}
	fs := flag.NewFlagSet("controller keys "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	if helpRequested(args[1:]) {
		fs.SetOutput(stdout)
	}
	cfg := storeFlags(fs)
	switch args[0] {
	case "create":
		scopes := fs.String("scopes", "", "comma-separated scopes: "+strings.Join(auth.AllScopes, ","))
		project := fs.String("project", "", "make an AI gateway key for this project instead")
		name := fs.String("name", "", "a name to recognise the key by")
		if _, err := parseInterspersed(fs, args[1:]); err != nil {
			return err
		}
		st, err := openStore(ctx, fs, cfg)
		if err != nil {
			return err
		}
		defer st.Close()
		var sc []string
		if *scopes != "" {
			sc = strings.Split(*scopes, ",")
		}
		k, token, err := auth.Create(ctx, st, *name, sc, *project)
		if err != nil {
			return fmt.Errorf("keys create: %w", err)
		}
		what := "scopes " + strings.Join(k.Scopes, ",")
		if k.Project != "" {
			what = "AI gateway project " + k.Project
		}
		fmt.Fprintf(stdout, "created key %s (%s) with %s\n", k.ID, k.Name, what)
		fmt.Fprintln(stdout, "the token below is shown only now; store it safely:")
		fmt.Fprintln(stdout, token)
		return nil
	case "list":
		if _, err := parseInterspersed(fs, args[1:]); err != nil {
			return err
		}
		st, err := openStore(ctx, fs, cfg)
		if err != nil {
			return err
		}
		defer st.Close()
		ks, err := st.ListKeys(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tSCOPES/PROJECT\tCREATED\tLAST USED\tSTATUS")
		for _, k := range ks {
			what := strings.Join(k.Scopes, ",")
			if k.Project != "" {
				what = "project:" + k.Project
			}
			status := "active"
			if k.Revoked() {
				status = "revoked " + k.RevokedAt.Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Name, what, k.CreatedAt.Format(time.RFC3339), fmtTime(k.LastUsedAt), status)
		}
		return tw.Flush()
	case "revoke":
		pos, err := parseInterspersed(fs, args[1:])
		if err != nil {
			return err
		}
		if len(pos) != 1 {
			return errors.New("keys revoke: give exactly one key ID")
		}
		st, err := openStore(ctx, fs, cfg)
		if err != nil {
			return err
		}
		defer st.Close()
		if err := st.RevokeKey(ctx, pos[0], time.Now().UTC()); err != nil {
			return fmt.Errorf("keys revoke: %w", err)
		}
		fmt.Fprintf(stdout, "revoked key %s\n", pos[0])
		return nil
	}
	return fmt.Errorf("keys: unknown command %q; give create, list or revoke", args[0])
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.Format(time.RFC3339)
}
