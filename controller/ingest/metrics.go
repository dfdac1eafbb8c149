package ingest

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/edgewan/edgewan/telemetry"
)

type metrics struct {
	reports  prometheus.Counter
	rejected *prometheus.CounterVec
	events   *prometheus.CounterVec
	switches *prometheus.CounterVec
	lag      prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer, e *Engine) metrics {
	m := metrics{
		reports: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "edgewan_ingest_reports_total", Help: "Telemetry reports ingested and evaluated.",
		}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edgewan_ingest_rejected_total",
			Help: "Agent messages refused, by reason: invalid, unknown_site, wrong_device, duplicate, unknown_transport, invalid_ack, invalid_event, invalid_status, sink.",
		}, []string{"reason"}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edgewan_sdwan_events_total", Help: "SD-WAN events raised, by type.",
		}, []string{"type"}),
		switches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edgewan_path_switches_total", Help: "Path switches by reason (controller decisions, and agent-* for the agents' own).",
		}, []string{"reason"}),
		lag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "edgewan_ingest_lag_seconds",
			Help:    "From the end of a report's window (agent clock) to its evaluation.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}),
	}
	if reg != nil {
		reg.MustRegister(m.reports, m.rejected, m.events, m.switches, m.lag,
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "edgewan_sites_live", Help: "Claimed sites the controller follows."},
				func() float64 { e.mu.RLock(); defer e.mu.RUnlock(); return float64(len(e.sites)) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "edgewan_transports_tracked", Help: "Transports with rolling aggregates in memory."},
				func() float64 { return float64(e.roll.Len()) }))
	}
	return m
}

// pool recycles decoded reports so the hot path does not allocate a report per message.
type pool struct{ p sync.Pool }

func (p *pool) get() *telemetry.Report {
	if r, ok := p.p.Get().(*telemetry.Report); ok {
		return r
	}
	return &telemetry.Report{Transport: make([]telemetry.TransportWindow, 0, 4)}
}

func (p *pool) put(r *telemetry.Report) { p.p.Put(r) }
