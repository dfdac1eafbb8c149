package server

import (
	"context"
	"log/slog"
	"path/filepath"

	"github.com/edgewan/edgewan/aigw/gateway"
	"github.com/edgewan/edgewan/aigw/provider"
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
	s.Gateway, err = gateway.New(ctx, s.Store.Gateway(), gateway.Options{
		Models: router, AuditKeyFile: keyFile, Notify: s.dispatcher.Notify, Registerer: s.registry,
	})
	return err
}
