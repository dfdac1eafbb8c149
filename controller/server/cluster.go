package server

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/edgewan/edgewan/controller/cluster"
	"github.com/edgewan/edgewan/controller/mqtt"
)

// startCluster joins the scaled-out cluster (--nats-urls, docs/scale-out.md): a seat in the
// partition leases of the shared PostgreSQL, and the NATS bus that consumes exactly the
// partitions this controller holds. Leases are taken only once Run runs the member.
func (s *Server) startCluster(ctx context.Context) error {
	cfg := s.cfg
	id := cfg.ClusterID
	if id == "" {
		h, err := os.Hostname()
		if err != nil || h == "" {
			return fmt.Errorf("server: --cluster-id is empty and the hostname is unknown (%v): set --cluster-id", err)
		}
		id = h
	}
	// A pool of its own: lease renewals must not queue behind the API's queries.
	db, err := sql.Open("pgx", cfg.DatabaseURL)
	if err != nil {
		return fmt.Errorf("server: cluster database: %w", err)
	}
	db.SetMaxOpenConns(2)
	s.clusterDB = db
	var bus *mqtt.NATSBus
	s.member, err = cluster.New(ctx, cluster.Options{DB: db, ID: id, Partitions: cfg.ClusterPartitions, TTL: cfg.ClusterLeaseTTL,
		// Neither waits: the member takes and renews every lease on one goroutine.
		OnAcquire: func(p int, epoch int64) {
			if err := bus.StartPartition(s.bgCtx, p); err != nil && s.bgCtx.Err() == nil {
				slog.Error("cluster: consuming an acquired partition", "partition", p, "epoch", epoch, "err", err)
			}
			if s.Engine != nil { // the partition's sites: stored state read in batches, watermarks out at once
				s.Engine.SitesTaken(func(site string) bool { return s.member.PartitionOf(site) == p })
			}
		},
		OnRelease: func(p int) { bus.StopPartition(p) },
	})
	if err != nil {
		return err
	}
	m := s.member
	s.Store.SetFence(m) // site writes (status, events, figures, rollouts) only while the lease holds
	o := mqtt.NATSOptions{URLs: cfg.NATSURLs, MQTTURLs: cfg.NATSMQTTURLs, User: cfg.NATSUser,
		Password: cfg.NATSPassword, ClientID: "edgewan-controller-" + id, Partitions: m.Partitions(),
		Owns: func(p int) bool { _, ok := m.Epoch(p); return ok }, ReadCoalesce: cfg.NATSReadCoalesce}
	if o.ReadCoalesce == 0 {
		o.ReadCoalesce = -1 // off (the option's 0 is the bus's default)
	}
	if s.natsIssuer != nil { // operator mode: the controller signs its own users
		var seed []byte
		if o.JWT, seed, o.MQTTJWT, err = s.natsIssuer.Controller(id); err != nil {
			return err
		}
		o.Seed = string(seed)
	}
	bus, err = mqtt.NewNATSBus(ctx, o)
	if err != nil {
		return err
	}
	s.bus = bus
	s.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "edgewan_cluster_partitions_owned",
		Help: "Partitions of the site space this controller holds the lease of (scaled-out mode)."},
		func() float64 { return float64(len(m.Owned())) }))
	slog.Info("scaled-out mode: joining the cluster", "cluster_id", id, "partitions", m.Partitions(),
		"nats", mqtt.NodeOrder(cfg.NATSURLs, o.ClientID)) // the order it dials them in
	return nil
}

// runCluster holds leases until ctx ends, then releases them (the next owners start at
// once instead of after the lease TTL). It returns when the leases are released.
func (s *Server) runCluster(ctx context.Context) {
	if s.member == nil {
		return
	}
	if err := s.member.Run(ctx); err != nil {
		slog.Error("cluster member stopped", "err", err)
	}
}
