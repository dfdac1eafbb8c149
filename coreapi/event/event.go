// Package event defines the event envelope and the catalogue of event types that webhooks
// deliver, for all three API families.
package event

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/edgewan/edgewan/coreapi/ids"
)

// Event types, as in the spec's table. Payloads are documented in docs/webhooks.md and docs/soc.md.
const (
	RedactionApplied    = "redaction.applied"
	RequestBlocked      = "request.blocked"
	PolicyProposed      = "policy.proposed"
	DocumentCaptured    = "document.captured"
	TransportDegraded   = "transport.degraded"
	TransportDown       = "transport.down"
	SiteOffline         = "site.offline"
	SLABreach           = "sla.breach"
	PathSwitched        = "path.switched"
	CaseOpened          = "case.opened"
	CaseUpdated         = "case.updated"
	CaseClosed          = "case.closed"
	DeviceStatusChanged = "device.status_changed"
)

// Types lists every event type a webhook may subscribe to.
var Types = []string{
	RedactionApplied, RequestBlocked, PolicyProposed, DocumentCaptured,
	TransportDegraded, TransportDown, SiteOffline, SLABreach, PathSwitched,
	CaseOpened, CaseUpdated, CaseClosed, DeviceStatusChanged,
}

// Known reports whether t is an event type.
func Known(t string) bool { return slices.Contains(Types, t) }

// Envelope is every webhook delivery's body.
type Envelope struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	CreatedAt time.Time       `json:"created_at"`
	Data      json.RawMessage `json:"data"`
}

// New builds an envelope with a fresh ID and the current time. data must marshal to a JSON object.
func New(typ string, data any) (*Envelope, error) {
	return NewAt(typ, data, time.Now())
}

// NewAt is New dated at (the controller's injected clock: a test may step it).
func NewAt(typ string, data any, at time.Time) (*Envelope, error) {
	if !Known(typ) {
		return nil, fmt.Errorf("event.New: unknown event type %q", typ)
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return nil, fmt.Errorf("event.New %s: %w", typ, err)
	}
	if len(raw) == 0 || raw[0] != '{' {
		return nil, fmt.Errorf("event.New %s: data must be a JSON object", typ)
	}
	return &Envelope{ID: ids.New("evt"), Type: typ, CreatedAt: at.UTC().Truncate(time.Microsecond), Data: raw}, nil
}
