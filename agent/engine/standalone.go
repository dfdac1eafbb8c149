package engine

import (
	"context"
	"log/slog"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/edgewan/edgewan/agent/claim"
	"github.com/edgewan/edgewan/agent/config"
	"github.com/edgewan/edgewan/agent/spool"
	"github.com/edgewan/edgewan/telemetry"
)

// Uplink is the agent's delivery alone: its spool and its MQTT uplink (the watermark, the
// resends after a reconnect, a controller restart or a stalled watermark), without probes or
// a data plane, and deaf to policies and decisions. Simulators and tests that must deliver
// exactly as the agent does use it rather than a copy.
type Uplink struct {
	e    *Engine
	u    *uplink
	once sync.Once
}

// NewUplink returns an uplink for creds over sp; Run connects it.
func NewUplink(creds *claim.Credentials, sp *spool.Spool, log *slog.Logger) (*Uplink, error) {
	if log == nil {
		log = slog.Default()
	}
	e := &Engine{o: Options{Creds: creds, Version: "uplink"}, m: newMetrics(nil), log: log, sp: sp,
		kick: make(chan struct{}, 1), events: make(chan telemetry.AgentEvent, 16),
		monitors: map[string]*monitor{}, decisions: map[string]string{}, paths: map[string]string{}, acked: map[string]string{}}
	u, err := newUplink(e, creds, config.StandbyAuto)
	if err != nil {
		return nil, err
	}
	u.storedOnly = true
	e.up = u
	return &Uplink{e: e, u: u}, nil
}

// Run connects (and reconnects) and sends the spool until ctx ends, then disconnects.
func (x *Uplink) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); x.u.connectLoop(ctx) }()
	go func() { defer wg.Done(); x.u.sendLoop(ctx) }()
	wg.Wait()
	x.u.close()
}

// Report spools one report of the windows tws, ended at now, as the agent does at the end of
// each window.
func (x *Uplink) Report(now time.Time, window time.Duration, tws []telemetry.TransportWindow) {
	x.e.spoolReport(now, window, tws)
}

// OnAccepted sets Options.OnAccepted (before Run).
func (x *Uplink) OnAccepted(f func(at time.Time)) { x.e.o.OnAccepted = f }

// SetStandby sets the warm standby connection's mode (config.StandbyAuto, the default, or StandbyOff;
// config.Config.MQTTStandby); before Run.
func (x *Uplink) SetStandby(mode string) {
	if mode == config.StandbyOff {
		x.u.sb = nil
	}
}

// OnStandby reports whether the spool goes out on the standby connection now (the primary is down).
func (x *Uplink) OnStandby() bool { return x.u.onStandby() }

// StandbyPublished is how many spooled messages went out on the standby connection.
func (x *Uplink) StandbyPublished() float64 { return counterOf(x.e.m.standbyPublished) }

// StandbyActivations is how many times the spool moved to the standby connection.
func (x *Uplink) StandbyActivations() float64 { return counterOf(x.e.m.standbyActivations) }

// StandbyUp reports whether the standby connection is up.
func (x *Uplink) StandbyUp() bool { return x.u.sb != nil && x.u.sb.up.Load() }

// Watermark is the controller's last watermark for this device: what the spool has deleted.
func (x *Uplink) Watermark() uint64 { return x.u.mark.Load() }

// Connected reports whether the MQTT connection is up.
func (x *Uplink) Connected() bool { return x.u.connected() }

// SetHoleAfter changes how long a stalled watermark waits before the agent sends the oldest
// uncovered records again (holeAfter; tests shorten it).
func (x *Uplink) SetHoleAfter(d time.Duration) { x.u.holeAfter.Store(int64(d)) }

// Resent is how many spooled messages were sent again for a stalled watermark.
func (x *Uplink) Resent() float64 { return counterOf(x.e.m.resent) }

func counterOf(c interface{ Write(*dto.Metric) error }) float64 {
	var m dto.Metric
	if c.Write(&m) != nil {
		return 0
	}
	return m.GetCounter().GetValue()
}

// Published is how many spooled messages the broker acknowledged (PUBACK), resends included.
func (x *Uplink) Published() float64 { return counterOf(x.e.m.published) }

// PubackFallbacks is how many times the uplink began deleting at PUBACK (modePuback): tests
// of a controller that publishes the watermark require 0, not merely a final "watermark".
func (x *Uplink) PubackFallbacks() float64 { return counterOf(x.e.m.pubackFallbacks) }

// DeleteMode says how the spool deletes records now: "watermark", "waiting" (for a first
// watermark, within the grace) or "puback" (no watermark seen: an older controller).
func (x *Uplink) DeleteMode() string { return x.u.deleteMode() }
