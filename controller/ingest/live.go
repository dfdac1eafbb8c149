package ingest

import (
	"time"

	"github.com/edgewan/edgewan/controller/sdwan"
	"github.com/edgewan/edgewan/telemetry/rollup"
)

var (
	_ sdwan.Live   = (*Engine)(nil)
	_ sdwan.Pusher = (*Engine)(nil)
)

// Overlay implements sdwan.Live: the transports' latest figures from memory.
func (e *Engine) Overlay(siteID string, ts []*sdwan.Transport) {
	st := e.site(siteID)
	if st == nil {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, t := range ts {
		for _, l := range st.transports {
			if l.name == t.Name && !l.at.IsZero() {
				t.Status, t.LatencyMs, t.LossPct, t.JitterMs, t.LastSampleAt = l.status, l.latencyMs, l.lossPct, l.jitterMs, l.at.UTC()
			}
		}
	}
}

// Health implements sdwan.Live: each transport's figures aggregated over the window from the
// rolling aggregates, and each class's SLA judged on those of its current path.
func (e *Engine) Health(siteID string, window time.Duration) (*sdwan.Health, bool) {
	st := e.site(siteID)
	if st == nil {
		return nil, false
	}
	now := e.o.Now()
	stats := e.roll.Site(now, siteID, window)
	h := &sdwan.Health{Site: siteID, Time: now.UTC(), Transports: make([]sdwan.TransportHealth, 0, len(stats)), SLA: []sdwan.SLAHealth{}}
	st.mu.Lock()
	defer st.mu.Unlock()
	h.Status = st.status
	for _, t := range st.transports {
		th := sdwan.TransportHealth{Name: t.name, Status: t.status}
		for _, s := range stats {
			if s.Transport == t.name {
				th.LatencyMs, th.LossPct, th.JitterMs, th.MaxLatencyMs, th.Samples = round(s.LatencyMs), round(s.LossPct), round(s.JitterMs), round(s.MaxLatencyMs), s.Samples
			}
		}
		h.Transports = append(h.Transports, th)
	}
	for _, c := range st.classes {
		if st.steer == nil {
			break
		}
		path := st.steer.Path(c.Name)
		sh := sdwan.SLAHealth{Class: c.Name, Path: path}
		for _, th := range h.Transports {
			if th.Name == path {
				sh.LatencyMs, sh.LossPct, sh.JitterMs = th.LatencyMs, th.LossPct, th.JitterMs
				sh.TargetMet = th.Samples > 0 && th.Status != sdwan.TransportDown &&
					(c.SLA.MaxLatencyMs == 0 || th.LatencyMs <= c.SLA.MaxLatencyMs) &&
					(c.SLA.MaxLossPct == 0 || th.LossPct <= c.SLA.MaxLossPct) &&
					(c.SLA.MaxJitterMs == 0 || th.JitterMs <= c.SLA.MaxJitterMs)
			}
		}
		h.SLA = append(h.SLA, sh)
	}
	return h, true
}

// round keeps three decimals: figures are milliseconds and percentages.
func round(v float64) float64 { return float64(int64(v*1000+0.5)) / 1000 }

// Points implements sdwan.Live: each transport's buckets over the window from the rolling
// aggregates.
func (e *Engine) Points(siteID string, window time.Duration) (time.Duration, []rollup.TransportPoints, time.Time) {
	if e.site(siteID) == nil {
		return 0, nil, time.Time{}
	}
	now := e.o.Now()
	step, pts := e.roll.SitePoints(now, siteID, window)
	return step, pts, now.UTC()
}
