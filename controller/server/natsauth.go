package server

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"time"

	"github.com/edgewan/edgewan/controller/cluster"
	"github.com/edgewan/edgewan/controller/natsauth"
)

// natsAccountCheck is how often a controller compares the revocations in the database with
// those it last pushed: it pushes when they differ, so a push lost to a race with another
// controller (an older set signed later) is repaired within this.
const natsAccountCheck = 30 * time.Second

// loadNATSKeys reads --nats-keys (operator mode, docs/scale-out.md): the issuer of the
// devices' and the controller's NATS users.
func (s *Server) loadNATSKeys() error {
	if s.cfg.NATSKeysFile == "" {
		return nil
	}
	k, err := natsauth.ReadKeys(s.cfg.NATSKeysFile)
	if err != nil {
		return fmt.Errorf("server: --nats-keys: %w", err)
	}
	if fi, err := os.Stat(s.cfg.NATSKeysFile); err == nil && fi.Mode().Perm()&0o077 != 0 {
		// Not refused: secret mounts (compose, Kubernetes) are often 0644 inside a private
		// mount; but anyone who reads this file can sign any device's credential.
		slog.Warn("--nats-keys is readable by other users: it signs every device's NATS credential; make it 0600",
			"file", s.cfg.NATSKeysFile, "mode", fi.Mode().Perm().String())
	}
	want := s.cfg.ClusterPartitions
	if want == 0 {
		want = cluster.DefaultPartitions
	}
	if k.Partitions != want {
		return fmt.Errorf("server: --nats-keys was made for %d partitions (its account JWT maps the agents' subjects so); --cluster-partitions is %d", k.Partitions, want)
	}
	if s.natsIssuer, err = natsauth.NewIssuer(k); err != nil {
		return fmt.Errorf("server: --nats-keys: %w", err)
	}
	s.natsPush = make(chan struct{}, 1)
	return nil
}

// natsCredential is the claim's issuer of per-device NATS users; nil without --nats-keys.
func (s *Server) natsCredential() func(device, site string) (token, user string, err error) {
	if s.natsIssuer == nil {
		return nil
	}
	return s.natsIssuer.Device
}

// pushNATSAccount asks syncNATSAccount to push the account JWT now (a credential was revoked).
func (s *Server) pushNATSAccount() {
	if s.natsPush == nil {
		return
	}
	select {
	case s.natsPush <- struct{}{}:
	default:
	}
}

// syncNATSAccount keeps the cluster's account JWT carrying every revocation in the database:
// at start, when told (pushNATSAccount), and whenever the database's set differs from the one
// it last pushed. Each push carries the whole set joined with the resolver's (natsauth.Sync),
// so there is no state of its own to lose; a node that missed a push gets it from the other
// nodes' resolver.
func (s *Server) syncNATSAccount(ctx context.Context) {
	if s.natsIssuer == nil {
		return
	}
	var pushed map[string]time.Time
	t := time.NewTicker(natsAccountCheck)
	defer t.Stop()
	for {
		revoked, err := s.Store.NATSRevocations(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			slog.Error("NATS account: reading revocations", "err", err)
		} else if pushed == nil || !maps.EqualFunc(pushed, revoked, func(a, b time.Time) bool { return a.Equal(b) }) {
			if err := s.pushNATSRevocations(ctx, revoked); err != nil {
				if ctx.Err() != nil {
					return
				}
				slog.Error("NATS account: pushing the account JWT", "revoked", len(revoked), "err", err)
			} else {
				pushed = revoked
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.natsPush:
		}
	}
}

func (s *Server) pushNATSRevocations(ctx context.Context, revoked map[string]time.Time) error {
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	n, err := s.natsIssuer.Sync(pctx, s.cfg.NATSURLs, revoked, len(s.cfg.NATSURLs))
	if err != nil {
		return err
	}
	slog.Info("NATS account JWT pushed", "revoked_users", len(revoked), "nodes", n)
	return nil
}
