package engine

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/edgewan/edgewan/agent/spool"
)

// metrics are the agent's Prometheus metrics (README lists them).
type metrics struct {
	probesSent, probesLost *prometheus.CounterVec
	transportUp            *prometheus.GaugeVec
	switches               *prometheus.CounterVec
	reports                prometheus.Counter
	dpChanges              prometheus.Counter
	dpErrors               prometheus.Counter
	published              prometheus.Counter
	stored                 prometheus.Counter
	resent                 prometheus.Counter
	holeRequests           prometheus.Counter
	pubackFallbacks        prometheus.Counter
	connected              prometheus.Gauge
	standby                prometheus.Gauge
	standbyActivations     prometheus.Counter
	standbyPublished       prometheus.Counter
	verdictsRevoked        prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		probesSent:  prometheus.NewCounterVec(prometheus.CounterOpts{Name: "edgewan_agent_probes_sent_total", Help: "Probes whose fate is known (answered or lost), per transport."}, []string{"transport"}),
		probesLost:  prometheus.NewCounterVec(prometheus.CounterOpts{Name: "edgewan_agent_probes_lost_total", Help: "Probes unanswered within the probe timeout, per transport."}, []string{"transport"}),
		transportUp: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "edgewan_agent_transport_up", Help: "1 while the transport answers probes, 0 while it is hard down."}, []string{"transport"}),
		switches:    prometheus.NewCounterVec(prometheus.CounterOpts{Name: "edgewan_agent_path_switches_total", Help: "Class path changes applied, by who decided (local or controller)."}, []string{"by"}),
		reports:     prometheus.NewCounter(prometheus.CounterOpts{Name: "edgewan_agent_reports_total", Help: "Telemetry windows written to the spool."}),
		dpChanges:   prometheus.NewCounter(prometheus.CounterOpts{Name: "edgewan_agent_dataplane_changes_total", Help: "Netlink changes made (routes, rules, qdiscs, classes, filters)."}),
		dpErrors:    prometheus.NewCounter(prometheus.CounterOpts{Name: "edgewan_agent_dataplane_errors_total", Help: "Data-plane applies that failed."}),
		published:   prometheus.NewCounter(prometheus.CounterOpts{Name: "edgewan_agent_mqtt_published_total", Help: "Spooled messages acknowledged by the broker (PUBACK); on NATS, at QoS 0, written to the connection."}),
		stored:      prometheus.NewCounter(prometheus.CounterOpts{Name: "edgewan_agent_reports_stored_total", Help: "Telemetry windows the controller confirmed stored (covered by its watermark) and the spool deleted."}),
		resent: prometheus.NewCounter(prometheus.CounterOpts{Name: "edgewan_agent_spool_resent_total",
			Help: "Spooled messages sent again because they were lost between broker and controller: the controller asked for them (a hole below newer ones), or its watermark stalled below them long after the broker acknowledged them."}),
		holeRequests: prometheus.NewCounter(prometheus.CounterOpts{Name: "edgewan_agent_spool_hole_requests_total",
			Help: "The controller's requests for spooled messages it is missing below newer ones that the agent served (their records are counted in edgewan_agent_spool_resent_total)."}),
		pubackFallbacks: prometheus.NewCounter(prometheus.CounterOpts{Name: "edgewan_agent_spool_puback_fallbacks_total",
			Help: "Times the agent began deleting spooled records at the broker's PUBACK (no watermark from the controller within the grace: an older controller)."}),
		connected: prometheus.NewGauge(prometheus.GaugeOpts{Name: "edgewan_agent_mqtt_connected", Help: "1 while connected to the broker."}),
		standby:   prometheus.NewGauge(prometheus.GaugeOpts{Name: "edgewan_agent_mqtt_standby_connected", Help: "1 while the warm standby connection (NATS only) is up on another node."}),
		standbyActivations: prometheus.NewCounter(prometheus.CounterOpts{Name: "edgewan_agent_mqtt_standby_activations_total",
			Help: "Times the primary broker connection dropped and the spool went out on the standby connection at once."}),
		standbyPublished: prometheus.NewCounter(prometheus.CounterOpts{Name: "edgewan_agent_mqtt_standby_published_total",
			Help: "Spooled messages sent on the standby connection (at QoS 0) while the primary was down."}),
		verdictsRevoked: prometheus.NewCounter(prometheus.CounterOpts{Name: "edgewan_agent_dead_link_verdicts_revoked_total",
			Help: "Dead-link verdicts withdrawn because their first unanswered probe was answered late (a delay step, not a dead link)."}),
	}
	if reg != nil {
		reg.MustRegister(m.probesSent, m.probesLost, m.transportUp, m.switches, m.reports, m.dpChanges, m.dpErrors, m.published, m.stored, m.resent, m.holeRequests, m.pubackFallbacks, m.connected, m.standby, m.standbyActivations, m.standbyPublished, m.verdictsRevoked)
	}
	return m
}

// registerDeleteMode exports how spooled records are deleted now: 1 for the mode in force.
func (m *metrics) registerDeleteMode(reg prometheus.Registerer, mode func() string) {
	if reg == nil {
		return
	}
	for _, name := range []string{modeWatermark, modeWaiting, modePuback} {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "edgewan_agent_spool_delete_mode",
			Help:        "1 for how spooled records are deleted now: watermark (covered by the controller's watermark), puback (at the broker's PUBACK: an older controller), waiting (kept while waiting for a first watermark after connecting).",
			ConstLabels: prometheus.Labels{"mode": name}},
			func() float64 {
				if mode() == name {
					return 1
				}
				return 0
			}))
	}
}

// registerSpool exports the spool's depth and losses.
func (m *metrics) registerSpool(reg prometheus.Registerer, sp *spool.Spool) {
	if reg == nil {
		return
	}
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "edgewan_agent_spool_records", Help: "Messages in the on-disk spool not yet confirmed stored by the controller."},
			func() float64 { return float64(sp.Stats().Records) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "edgewan_agent_spool_bytes", Help: "Bytes waiting in the on-disk spool."},
			func() float64 { return float64(sp.Stats().Bytes) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "edgewan_agent_spool_dropped_total", Help: "Messages dropped because the spool reached its cap (oldest first)."},
			func() float64 { return float64(sp.Stats().Dropped) }),
	)
}
