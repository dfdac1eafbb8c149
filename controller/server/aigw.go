package server

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

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
		Documents: s.Store.Gateway(), DocumentOptions: gateway.DocumentOptions{AllowHTTP: s.cfg.AllowHTTPWebhooks},
		Proposals: s.Store.Gateway(), ProposalOptions: gateway.ProposalOptions{Interval: proposalInterval(s.cfg.ProposalInterval)},
	})
	if err == nil {
		x := s.Gateway.Extractor()
		if !x.OCR() {
			slog.Warn("tesseract not found: images and scanned PDF pages are refused (422) until it is installed (tesseract-ocr tesseract-ocr-eng)")
		}
		slog.Debug("document capture", "ocr", x.OCR(), "poppler", x.Poppler())
	}
	return err
}

// runSIEM runs the AI gateway's background work until ctx ends: the document worker and
// Automatic mode's schedule (gateway.Service.Run), and the SIEM streams, whose sinks it then
// closes.
func (s *Server) runSIEM(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Gateway.Run(ctx)
	}()
	defer func() { <-done }()
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

// proposalInterval maps the flag (0: off) to gateway.ProposalOptions (negative: off).
func proposalInterval(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}
