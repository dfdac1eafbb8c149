package server

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/edgewan/edgewan/aigw/gateway"
	"github.com/edgewan/edgewan/aigw/provider"
	"github.com/edgewan/edgewan/aigw/siem"
)

// buildGateway loads the AI gateway's models and starts its service.
func (s *Server) buildGateway(ctx context.Context) error {
	models := []provider.ModelConfig{{Name: "echo", Kind: provider.KindEcho}}
	var fallbacks map[string][]string
	if s.cfg.AIModels != "" {
		var err error
		if models, fallbacks, err = provider.LoadConfig(s.cfg.AIModels); err != nil {
			return err
		}
	}
	router, err := provider.NewRouter(models, fallbacks, provider.Options{Logger: slog.Default()})
	if err != nil {
		return err
	}
	keyFile := s.cfg.AuditKeyFile
	if keyFile == "" {
		keyFile = filepath.Join(s.cfg.DataDir, "audit.key")
	}
	var onAudit func()
	if len(s.cfg.SIEMSinks) > 0 {
		var sinks []siem.Sink
		for _, u := range s.cfg.SIEMSinks {
			sk, err := siem.ParseSinkURL(u)
			if err != nil {
				return fmt.Errorf("--siem: %w", err)
			}
			sinks = append(sinks, sk)
		}
		cursors, err := siem.OpenFileCursors(filepath.Join(s.cfg.DataDir, siem.CursorFile))
		if err != nil {
			return err
		}
		if s.siem, err = siem.New(s.Store.Gateway(), sinks, cursors, siem.Options{Registerer: s.registry, Logger: slog.Default()}); err != nil {
			return err
		}
		s.siemSinks = sinks
		onAudit = s.siem.Notify
	}
	s.Gateway, err = gateway.New(ctx, s.Store.Gateway(), gateway.Options{
		Models: router, AuditKeyFile: keyFile, Notify: s.dispatcher.Notify, OnAudit: onAudit, Registerer: s.registry,
	})
	return err
}

// runSIEM streams audit records to the SIEM sinks until ctx ends, then closes the sinks.
func (s *Server) runSIEM(ctx context.Context) {
	if s.siem == nil {
		return
	}
	if err := s.siem.Run(ctx); err != nil {
		slog.Error("siem streaming stopped", "err", err)
	}
	for _, sk := range s.siemSinks {
		_ = sk.Close()
	}
}
