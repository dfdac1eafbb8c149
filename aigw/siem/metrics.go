package siem

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the Streamer's Prometheus metrics.
type metrics struct {
	s        *Streamer
	sent     *prometheus.CounterVec
	failures *prometheus.CounterVec
	lag      *prometheus.Desc
	cursor   *prometheus.Desc
}

func newMetrics(s *Streamer) *metrics {
	return &metrics{
		s: s,
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edgewan_siem_records_sent_total",
			Help: "Audit records a SIEM sink accepted (records sent again after a failure count again).",
		}, []string{"sink"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edgewan_siem_failures_total",
			Help: "Failures of a SIEM sink's stream by stage: read (the audit log), send (the sink), cursor (reading or storing it).",
		}, []string{"sink", "stage"}),
		lag: prometheus.NewDesc("edgewan_siem_lag_records",
			"Audit records a SIEM sink has yet to accept (the newest audit sequence number less the sink's cursor).",
			[]string{"sink"}, nil),
		cursor: prometheus.NewDesc("edgewan_siem_cursor",
			"Sequence number of the last audit record a SIEM sink accepted.",
			[]string{"sink"}, nil),
	}
}

func (m *metrics) register(r prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.sent, m.failures, m} {
		if err := r.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// maxSeqer is a Source that knows its newest sequence number (the store does); the lag is then
// exact even when every sink is stuck.
type maxSeqer interface {
	MaxAuditSeq(ctx context.Context) (int64, error)
}

// Describe implements prometheus.Collector for the lag and cursor gauges.
func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.lag
	ch <- m.cursor
}

// Collect implements prometheus.Collector for the lag and cursor gauges.
func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	head := m.s.head.Load()
	if ms, ok := m.s.src.(maxSeqer); ok {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		if n, err := ms.MaxAuditSeq(ctx); err == nil && n > head {
			head = n
		}
		cancel()
	}
	for _, l := range m.s.lanes {
		c := l.cursor.Load()
		if c < 0 {
			continue
		}
		ch <- prometheus.MustNewConstMetric(m.cursor, prometheus.GaugeValue, float64(c), l.name)
		ch <- prometheus.MustNewConstMetric(m.lag, prometheus.GaugeValue, float64(max(head-c, 0)), l.name)
	}
}
