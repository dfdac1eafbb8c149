package server

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/edgewan/edgewan/aigw/gateway"
	"github.com/edgewan/edgewan/aigw/provider"
	"github.com/edgewan/edgewan/aigw/siem"
	"github.com/edgewan/edgewan/controller/store"
	"github.com/edgewan/edgewan/coreapi/quarantine"
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
		// Scaled-out: the stream runs on the singleton job's holder and moves with it, so its
		// position is shared in the database.
		var cursors siem.CursorStore = s.Store.SIEMCursors()
		if !s.cfg.Scaled() {
			if cursors, err = s.openSIEMCursors(filepath.Join(s.cfg.DataDir, siem.CursorFile)); err != nil {
				return err
			}
		}
		if s.siem, err = siem.New(s.Store.Gateway(), sinks, cursors, siem.Options{Registerer: s.registry, Logger: slog.Default()}); err != nil {
			return err
		}
		s.siemSinks = sinks
		onAudit = s.siem.Notify
	}
	s.Gateway, err = gateway.New(ctx, s.Store.Gateway(), gateway.Options{
		Models: router, AuditKeyFile: keyFile, Notify: s.dispatcher.Notify, OnAudit: onAudit, Registerer: s.registry, Now: s.clock.Now,
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

// runSIEM runs the AI gateway's background work until ctx ends: the document worker, and
// Automatic mode's schedule and the SIEM streams, whose sinks it then closes. In the
// scaled-out mode the latter two are singleton jobs: they run on one controller at a time.
func (s *Server) runSIEM(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(2)
	go func() {
		defer wg.Done()
		s.Gateway.RunDocuments(ctx)
	}()
	go func() {
		defer wg.Done()
		s.singleton(ctx, "proposals", s.Gateway.RunProposals)
	}()
	if s.siem == nil {
		return
	}
	s.singleton(ctx, "siem", func(ctx context.Context) {
		if err := s.siem.Run(ctx); err != nil {
			slog.Error("siem streaming stopped", "err", err)
		}
	})
	for _, sk := range s.siemSinks {
		_ = sk.Close()
	}
}

// singleton runs fn until ctx ends: at once with one controller, and only while this
// controller holds the cluster's singleton lease in the scaled-out mode (cluster.Singleton).
func (s *Server) singleton(ctx context.Context, name string, fn func(context.Context)) {
	if s.member == nil {
		fn(ctx)
		return
	}
	s.member.Singleton(ctx, name, fn)
}

// proposalInterval maps the flag (0: off) to gateway.ProposalOptions (negative: off).
func proposalInterval(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// openSIEMCursors opens the SIEM cursor file. A file that does not decode does not stop the
// start: it is moved aside (FILE.damaged-TIME, for the operator), reported (a SOC case, the
// gauge), and the streams start from the beginning of the audit log: the sinks get records
// again (at-least-once, as after any failure) rather than miss any.
func (s *Server) openSIEMCursors(path string) (*siem.FileCursors, error) {
	c, err := siem.OpenFileCursors(path)
	if err == nil {
		return c, nil
	}
	aside := fmt.Sprintf("%s.damaged-%s", path, time.Now().UTC().Format("20060102T150405Z"))
	if rerr := os.Rename(path, aside); rerr != nil {
		return nil, fmt.Errorf("%w (and moving it aside failed: %v)", err, rerr)
	}
	slog.Error("siem: the cursor file is damaged; moved aside, the streams start from the beginning of the audit log", "file", path, "moved_to", aside, "err", err)
	s.quarantined.note(store.Quarantined{Object: objectSIEMCursors, ID: filepath.Base(path),
		Q: quarantine.Quarantine{Kind: quarantine.Data, Reason: fmt.Sprintf("%v; moved to %s, the SIEM streams resent the audit log from its start", err, filepath.Base(aside))}})
	return siem.OpenFileCursors(path)
}
