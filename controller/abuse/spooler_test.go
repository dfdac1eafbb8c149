package abuse

import (
	"context"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/edgewan/edgewan/agent/claim"
	"github.com/edgewan/edgewan/agent/engine"
	"github.com/edgewan/edgewan/agent/sim"
	"github.com/edgewan/edgewan/agent/spool"
	"github.com/edgewan/edgewan/telemetry"
)

// spooler is an agent that delivers exactly as the real one does: its own spool and uplink
// (engine.Uplink), which keep each report until the controller's stored watermark covers it
// and send again whatever a restarted controller did not store. What it deleted from its
// spool, the controller said it had stored: that is the "accepted" of telemetry.
type spooler struct {
	Site   string
	sp     *spool.Spool
	up     *engine.Uplink
	cancel context.CancelFunc // the reporting
	stopUp context.CancelFunc // the uplink
	tick   sync.WaitGroup
	run    sync.WaitGroup
}

// startSpooler claims a new site on c and spools a report of one window every period.
func startSpooler(t *testing.T, c *ctl, every time.Duration) *spooler {
	t.Helper()
	site := newSite(c)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	creds, err := claim.Claim(ctx, c.client(), c.URL, claim.Request{ClaimToken: site.Claim, Hostname: "fault-router", Version: "abuse"})
	if err != nil {
		t.Fatal(err)
	}
	sp, err := spool.Open(spool.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	up, err := engine.NewUplink(creds, sp, log.With("agent", "spooler"))
	if err != nil {
		t.Fatal(err)
	}
	s := &spooler{Site: creds.Site, sp: sp, up: up}
	runCtx, stopUp := context.WithCancel(context.Background())
	tickCtx, stopTick := context.WithCancel(context.Background())
	s.cancel, s.stopUp = stopTick, stopUp
	s.run.Add(1)
	go func() { defer s.run.Done(); up.Run(runCtx) }()
	s.tick.Add(1)
	go func() {
		defer s.tick.Done()
		tk := time.NewTicker(every)
		defer tk.Stop()
		w := sim.Window("inet", 10, 0, 20, 1)
		for {
			select {
			case <-tickCtx.Done():
				return
			case now := <-tk.C:
				up.Report(now, every, []telemetry.TransportWindow{w})
			}
		}
	}()
	t.Cleanup(s.close)
	return s
}

// Stats is the spool's: LastID reports made, Acked the last one deleted (covered by the
// watermark: every report up to it the controller said it stored).
func (s *spooler) Stats() spool.Stats { return s.sp.Stats() }

// StopReporting ends the reports; the uplink goes on delivering. It returns the reports made.
func (s *spooler) StopReporting() uint64 {
	s.cancel()
	s.tick.Wait()
	return s.sp.Stats().LastID
}

// WaitDrained waits until the watermark covers every report made (the spool is empty).
func (s *spooler) WaitDrained(limit time.Duration) bool {
	return s.wait(limit, func(st spool.Stats) bool { return st.Records == 0 && st.Acked >= st.LastID })
}

// WaitDeleted waits until the watermark covers report n.
func (s *spooler) WaitDeleted(n uint64, limit time.Duration) bool {
	return s.wait(limit, func(st spool.Stats) bool { return st.Acked >= n })
}

func (s *spooler) wait(limit time.Duration, ok func(spool.Stats) bool) bool {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if ok(s.sp.Stats()) {
			return true
		}
		time.Sleep(100 * time.Millisecond) // the uplink deletes as the watermark arrives; no event to await here
	}
	return false
}

func (s *spooler) close() {
	s.cancel()
	s.tick.Wait()
	s.stopUp()
	s.run.Wait()
	_ = s.sp.Close()
}
