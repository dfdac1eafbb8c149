package engine

import (
	"sort"
	"time"
)

// Status is what the agent is doing now, for `agent status` (served as JSON on the metrics
// listener at /status).
type Status struct {
	Site       string            `json:"site"`
	Device     string            `json:"device"`
	Connected  bool              `json:"connected"`
	Transports []TransportStatus `json:"transports"`
	Classes    []ClassStatus     `json:"classes"`
	Policies   []PolicyStatus    `json:"policies"`
	Spool      SpoolStatus       `json:"spool"`
	Time       time.Time         `json:"ts"`
}

// TransportStatus is one transport as the agent sees it.
type TransportStatus struct {
	Name      string `json:"name"`
	Interface string `json:"interface"`
	Probing   bool   `json:"probing"`
	Down      bool   `json:"down"`  // hard down by the probes now
	State     string `json:"state"` // the local steering's: up, degraded, down
}

// ClassStatus is one traffic class's path.
type ClassStatus struct {
	Name       string `json:"name"`
	Path       string `json:"path"`       // what the data plane uses
	Controller string `json:"controller"` // the controller's decision, if any
	Local      string `json:"local"`      // the agent's own choice
	By         string `json:"by"`         // controller or local
}

// PolicyStatus is a policy version the site runs and what the agent acknowledged.
type PolicyStatus struct {
	Policy  string `json:"policy"`
	Type    string `json:"type"`
	Version int    `json:"version"`
	Ack     string `json:"ack"` // "3/applied", "3/failed", or "" before the first apply
}

// SpoolStatus is the outgoing queue.
type SpoolStatus struct {
	Records int    `json:"records"`
	Bytes   int64  `json:"bytes"`
	Dropped uint64 `json:"dropped"`
	// DeleteMode is when records leave the spool: "watermark" (the controller's watermark
	// covers them), "puback" (the broker acknowledged them: an older controller that publishes
	// no watermark) or "waiting" (not known yet: kept, as for watermark, during the grace after
	// connecting).
	DeleteMode string `json:"delete_mode"`
}

// Status reports the agent's state now.
func (e *Engine) Status() Status {
	var spool SpoolStatus
	if e.sp != nil { // before mu: the spool's lock waits on fsyncs, which probes must not
		s := e.sp.Stats()
		spool = SpoolStatus{Records: s.Records, Bytes: s.Bytes, Dropped: s.Dropped}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	st := Status{Site: e.o.Creds.Site, Device: e.o.Creds.Device, Connected: e.up != nil && e.up.connected(), Time: time.Now().UTC()}
	for _, t := range e.transports {
		ts := TransportStatus{Name: t.Name, Interface: t.Interface}
		if m := e.monitors[t.Name]; m != nil {
			ts.Probing, ts.Down = m.cancel != nil && !m.stopped, m.down
		}
		if e.steer != nil {
			if s, ok := e.steer.Status(t.Name); ok {
				ts.State = s.String()
			}
		}
		st.Transports = append(st.Transports, ts)
	}
	for _, c := range e.classes {
		path, local := e.effectivePathLocked(c.Name)
		cs := ClassStatus{Name: c.Name, Path: path, Controller: e.decisions[c.Name], By: "controller"}
		if e.steer != nil {
			cs.Local = e.steer.Path(c.Name)
		}
		if local {
			cs.By = "local"
		}
		st.Classes = append(st.Classes, cs)
	}
	if e.policy != nil {
		for _, pv := range e.policy.Policies {
			st.Policies = append(st.Policies, PolicyStatus{Policy: pv.Policy, Type: pv.Type, Version: pv.Version, Ack: e.acked[pv.Policy]})
		}
	}
	sort.Slice(st.Policies, func(i, j int) bool { return st.Policies[i].Type < st.Policies[j].Type })
	if e.up != nil {
		spool.DeleteMode = e.up.deleteMode()
	}
	st.Spool = spool
	return st
}
