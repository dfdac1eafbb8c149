package server

import (
	"regexp"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/edgewan/edgewan/telemetry/sink"
)

// namedRegistry is the controller's Prometheus registry, remembering the name of every metric
// registered, so the metric list can be checked (the deploy dashboards' test) even for vectors
// that have no series yet.
type namedRegistry struct {
	*prometheus.Registry
	mu    sync.Mutex
	names map[string]bool
}

func newNamedRegistry() *namedRegistry {
	return &namedRegistry{Registry: prometheus.NewRegistry(), names: map[string]bool{}}
}

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

// Register implements prometheus.Registerer.
func (r *namedRegistry) Register(c prometheus.Collector) error {
	if err := r.Registry.Register(c); err != nil {
		return err
	}
	ch := make(chan *prometheus.Desc, 16)
	go func() { c.Describe(ch); close(ch) }()
	r.mu.Lock()
	defer r.mu.Unlock()
	for d := range ch {
		if m := fqName.FindStringSubmatch(d.String()); m != nil {
			r.names[m[1]] = true
		}
	}
	return nil
}

// MustRegister implements prometheus.Registerer.
func (r *namedRegistry) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// MetricNames lists the names of the metric families the controller exports, sorted.
func (s *Server) MetricNames() []string {
	s.registry.mu.Lock()
	defer s.registry.mu.Unlock()
	out := make([]string, 0, len(s.registry.names))
	for n := range s.registry.names {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// registerSDWANMetrics exports the depth of the MQTT handler queue and the time-series sink's
// backlog and losses, which live in packages that do not know Prometheus.
func (s *Server) registerSDWANMetrics() {
	if q, ok := s.bus.(interface{ Queued() int }); ok {
		s.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "edgewan_mqtt_queued_messages", Help: "Agent messages received and waiting for the ingest's handlers.",
		}, func() float64 { return float64(q.Queued()) }))
	}
	var pending, written, dropped func() float64
	switch sk := s.sink.(type) {
	case *sink.InfluxSink:
		pending = func() float64 { return float64(sk.Stats().Pending) }
		written = func() float64 { return float64(sk.Stats().Written) }
		dropped = func() float64 { st := sk.Stats(); return float64(st.Dropped + st.Rejected) }
	case *sink.EmbeddedSink:
		pending = func() float64 { return 0 } // aggregated in memory, flushed every few seconds
		written = func() float64 { return float64(sk.Stats().Windows) }
		dropped = func() float64 { return float64(sk.Stats().Dropped) }
	default:
		return
	}
	s.registry.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "edgewan_telemetry_sink_pending_points",
			Help: "Transport windows accepted by the time-series store and not yet written (InfluxDB's buffer)."}, pending),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "edgewan_telemetry_sink_written_total",
			Help: "Transport windows written to the time-series store."}, written),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "edgewan_telemetry_sink_dropped_total",
			Help: "Transport windows the time-series store lost: buffer full, refused by InfluxDB, or failed flushes."}, dropped),
	)
}

// loginRefusals registers edgewan_mqtt_logins_refused_total{reason} and returns what counts one
// refused CONNECT of the embedded broker. The reasons are the broker's closed set; anything
// else is "other", so a label value never comes from outside.
func (s *Server) loginRefusals() func(reason string) {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "edgewan_mqtt_logins_refused_total",
		Help: "CONNECTs the embedded broker refused: bad_credentials, anonymous, throttled (the address spent its failure budget: refused without a password check), other."},
		[]string{"reason"})
	s.registry.MustRegister(c)
	known := map[string]string{"bad credentials": "bad_credentials", "anonymous": "anonymous", "throttled": "throttled"}
	for _, l := range known {
		c.WithLabelValues(l)
	}
	return func(reason string) {
		l, ok := known[reason]
		if !ok {
			l = "other"
		}
		c.WithLabelValues(l).Inc()
	}
}
