package ingest

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/edgewan/edgewan/controller/sdwan"
	"github.com/edgewan/edgewan/telemetry"
)

type metrics struct {
	reports   prometheus.Counter
	late      prometheus.Counter
	abandoned prometheus.Counter
	rejected  *prometheus.CounterVec
	events    *prometheus.CounterVec
	switches  *prometheus.CounterVec
	lag       prometheus.Histogram
	fenced    *prometheus.CounterVec
	takeovers prometheus.Counter
	holeAsks  prometheus.Counter
}

func newMetrics(reg prometheus.Registerer, e *Engine) metrics {
	m := metrics{
		reports: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "edgewan_ingest_reports_total", Help: "Telemetry reports ingested and evaluated.",
		}),
		late: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "edgewan_ingest_late_reports_total", Help: "Reports that arrived late (replayed or delayed): stored as history, not evaluated.",
		}),
		abandoned: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "edgewan_ingest_seq_abandoned_total",
			Help: "Agent message sequences never received that the agent no longer holds (its spool was wiped or capped, or it deleted them before the contiguous watermark): the stored watermark moves past them.",
		}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edgewan_ingest_rejected_total",
			Help: "Agent messages refused, by reason: invalid, unknown_site, wrong_device, duplicate, window_full (more than 1,024 sequences above a hole: sent again later), unknown_transport, invalid_ack, invalid_event, invalid_status, sink, clock_skew (dated outside the accepted window), oversize (refused by the embedded broker: payload over 64 KiB).",
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
		fenced: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edgewan_ingest_fenced_writes_total",
			Help: "Site writes the store refused because another controller holds the site's lease now (scaled-out mode), by write: status_events, figures, rollout.",
		}, []string{"write"}),
		takeovers: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "edgewan_ingest_takeovers_total",
			Help: "Sites this controller took over from another (scaled-out mode): their stored state read, their watermark published.",
		}),
		holeAsks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "edgewan_ingest_hole_requests_total",
			Help: "Requests to agents to send again sequences missing below newer ones (lost between the broker and the controller) once the reorder grace passed.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.reports, m.late, m.abandoned, m.rejected, m.events, m.switches, m.lag, m.fenced, m.takeovers, m.holeAsks,
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "edgewan_sites_live", Help: "Claimed sites the controller follows."},
				func() float64 { e.mu.RLock(); defer e.mu.RUnlock(); return float64(len(e.sites)) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "edgewan_transports_tracked", Help: "Transports with rolling aggregates in memory."},
				func() float64 { return float64(e.roll.Len()) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "edgewan_ingest_pending_events",
				Help: "SD-WAN events waiting to be stored (the ingest's database queue)."},
				func() float64 { e.rec.mu.Lock(); defer e.rec.mu.Unlock(); return float64(e.rec.events) }),
			&statusCollector{e: e})
	}
	return m
}

// Refused counts a message the embedded broker refused before the ingest saw it, in
// edgewan_ingest_rejected_total. reason is one of the broker's (mqtt.Refused*); anything else
// is counted as "other", so the label keeps a closed set of values.
func (e *Engine) Refused(reason string) {
	if reason != "oversize" {
		reason = "other"
	}
	e.m.rejected.WithLabelValues(reason).Inc()
}

// statusCollector counts the followed sites and their transports by status at each scrape.
type statusCollector struct{ e *Engine }

var (
	sitesDesc = prometheus.NewDesc("edgewan_sites", "Followed (claimed) sites by status: up, degraded, offline.",
		[]string{"status"}, nil)
	quarantinedDesc = prometheus.NewDesc("edgewan_sites_quarantined", "Followed sites the controller cannot evaluate because their stored state does not load, by kind: data, steering, store.",
		[]string{"kind"}, nil)
	transportsDesc = prometheus.NewDesc("edgewan_transports", "Transports of the followed sites by status: unknown, up, degraded, down.",
		[]string{"status"}, nil)
)

func (c *statusCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- sitesDesc
	ch <- transportsDesc
	ch <- quarantinedDesc
}

func (c *statusCollector) Collect(ch chan<- prometheus.Metric) {
	sites := map[string]int{sdwan.SiteUp: 0, sdwan.SiteDegraded: 0, sdwan.SiteOffline: 0}
	trs := map[string]int{sdwan.TransportUnknown: 0, sdwan.TransportUp: 0, sdwan.TransportDegraded: 0, sdwan.TransportDown: 0}
	quar := make(map[string]int, len(sdwan.QuarantineKinds))
	for _, k := range sdwan.QuarantineKinds {
		quar[k] = 0
	}
	c.e.mu.RLock()
	all := make([]*site, 0, len(c.e.sites))
	for _, st := range c.e.sites {
		all = append(all, st)
	}
	c.e.mu.RUnlock()
	for _, st := range all {
		st.mu.Lock()
		sites[st.status]++
		if st.quarantine != nil {
			quar[st.quarantine.Kind]++
		}
		for _, t := range st.transports {
			trs[t.status]++
		}
		st.mu.Unlock()
	}
	for k, n := range sites {
		ch <- prometheus.MustNewConstMetric(sitesDesc, prometheus.GaugeValue, float64(n), k)
	}
	for k, n := range quar {
		ch <- prometheus.MustNewConstMetric(quarantinedDesc, prometheus.GaugeValue, float64(n), k)
	}
	for k, n := range trs {
		ch <- prometheus.MustNewConstMetric(transportsDesc, prometheus.GaugeValue, float64(n), k)
	}
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
