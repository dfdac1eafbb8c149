package server

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/edgewan/edgewan/controller/store"
	"github.com/edgewan/edgewan/coreapi/soc"
)

// Objects quarantined by the server itself (the store finds the others).
const objectSIEMCursors = "siem_cursors"

// quarantineObjects are the objects edgewan_objects_quarantined always has a series for.
var quarantineObjects = []string{store.ObjectWebhook, store.ObjectSDWANPolicyVersion, store.ObjectAIGWPolicyVersion, objectSIEMCursors}

// auditEvery is how often the stored objects are checked again.
const auditEvery = time.Minute

// quarantines reports the stored objects other than sites that the controller cannot use
// (crash-only start: each is reported, every other object runs): the gauge
// edgewan_objects_quarantined{object} and one SOC case per object (rule
// controller.object_quarantined).
type quarantines struct {
	gauge *prometheus.GaugeVec
	mu    sync.Mutex
	fixed map[string]store.Quarantined // found once and for all (the SIEM cursor file), by object/ID
	kick  chan struct{}                // a noted object is reported at once, not at the next tick
}

func newQuarantines(reg prometheus.Registerer) *quarantines {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "edgewan_objects_quarantined",
		Help: "Stored objects other than sites the controller cannot use, by object: webhook, sdwan_policy_version, aigw_policy_version, siem_cursors. Each also has a SOC case (controller.object_quarantined)."},
		[]string{"object"})
	for _, o := range quarantineObjects {
		g.WithLabelValues(o)
	}
	reg.MustRegister(g)
	return &quarantines{gauge: g, fixed: map[string]store.Quarantined{}, kick: make(chan struct{}, 1)}
}

// note records an object found unusable outside the store, and reports it at the next audit.
func (q *quarantines) note(x store.Quarantined) {
	q.mu.Lock()
	q.fixed[x.Object+"/"+x.ID] = x
	q.mu.Unlock()
	select {
	case q.kick <- struct{}{}:
	default:
	}
}

// audit checks the stored objects once: it sets the gauge and raises a case per object.
func (s *Server) audit(ctx context.Context) {
	found, err := s.Store.QuarantinedObjects(ctx)
	if err != nil {
		if ctx.Err() == nil {
			slog.Warn("checking stored objects for quarantine", "err", err)
		}
		return
	}
	s.quarantined.mu.Lock()
	for _, x := range s.quarantined.fixed {
		found = append(found, x)
	}
	s.quarantined.mu.Unlock()
	count := map[string]int{}
	for _, x := range found {
		count[x.Object]++
		s.raise(ctx, soc.Signal{Rule: soc.RuleObjectQuarantined, Subject: x.Object + "/" + x.ID, Severity: "high",
			Title: fmt.Sprintf("Stored %s %s quarantined: the controller cannot use it", x.Object, x.ID),
			Description: fmt.Sprintf("%s: %s. Every other object runs. Its API representation shows the quarantine; fix or replace it (docs/sdwan.md, Crash-only start).",
				x.Q.Kind, x.Q.Reason)})
	}
	for _, o := range quarantineObjects {
		s.quarantined.gauge.WithLabelValues(o).Set(float64(count[o]))
	}
}

// runAudit checks the stored objects at start and every auditEvery until ctx ends.
func (s *Server) runAudit(ctx context.Context) {
	t := time.NewTicker(auditEvery)
	defer t.Stop()
	for {
		s.audit(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.quarantined.kick:
		}
	}
}
