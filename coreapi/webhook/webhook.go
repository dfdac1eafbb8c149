// Package webhook registers webhook endpoints, records events with one durable delivery per
// subscribed endpoint, and delivers them signed, with retries, at least once.
package webhook

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/edgewan/edgewan/coreapi/apierr"
	"github.com/edgewan/edgewan/coreapi/event"
	"github.com/edgewan/edgewan/coreapi/ids"
	"github.com/edgewan/edgewan/coreapi/page"
	"github.com/edgewan/edgewan/coreapi/quarantine"
)

// Webhook is a registered endpoint. Secret is filled only in the creation response.
type Webhook struct {
	ID          string    `json:"id"`
	URL         string    `json:"url"`
	Events      []string  `json:"events"`
	Description string    `json:"description"`
	Secret      string    `json:"secret,omitempty"`
	CreatedBy   string    `json:"created_by"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	// Quarantine is set when the stored registration cannot be used (its secret does not
	// open, its URL is not one the dispatcher can call): its deliveries fail with the reason,
	// every other webhook delivers. Delete it and register it again to fix it.
	Quarantine *quarantine.Quarantine `json:"quarantine,omitempty"`
}

// Delivery statuses.
const (
	StatusPending    = "pending"    // waiting for its next attempt
	StatusDelivering = "delivering" // an attempt is in flight
	StatusSucceeded  = "succeeded"  // a 2xx came back
	StatusFailed     = "failed"     // no 2xx within the retry window
)

// Delivery is one event's journey to one webhook.
type Delivery struct {
	ID            string    `json:"id"`
	WebhookID     string    `json:"webhook_id"`
	EventID       string    `json:"event_id"`
	EventType     string    `json:"event_type"`
	Status        string    `json:"status"`
	Attempts      int       `json:"attempts"`
	NextAttemptAt time.Time `json:"next_attempt_at,omitzero"`
	LastAttemptAt time.Time `json:"last_attempt_at,omitzero"`
	LastStatus    int       `json:"last_status_code,omitempty"`
	LastError     string    `json:"last_error,omitempty"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
}

// Store is what the webhook service needs of the database.
type Store interface {
	CreateWebhook(ctx context.Context, w *Webhook) error
	GetWebhook(ctx context.Context, id string) (*Webhook, error)
	ListWebhooks(ctx context.Context, p page.Params, eventType string) ([]*Webhook, error)
	DeleteWebhook(ctx context.Context, id string) error
	ListDeliveries(ctx context.Context, webhookID string, p page.Params, status, eventID string) ([]*Delivery, error)
	GetDelivery(ctx context.Context, webhookID, id string) (*Delivery, error)
	// Redeliver queues a new delivery of d's event to its webhook, due at once.
	Redeliver(ctx context.Context, webhookID, deliveryID string, now time.Time) (*Delivery, error)
	// InsertEvent stores ev and one pending delivery for each webhook subscribed to its type,
	// in one transaction, and returns how many deliveries it queued.
	InsertEvent(ctx context.Context, ev *event.Envelope) (int, error)
}

// Options configure the webhook service.
type Options struct {
	// AllowHTTPLoopback accepts http:// URLs whose host is a loopback address (local development).
	AllowHTTPLoopback bool
	// Now is the wall clock for the times it records (created, an event, a redelivery due);
	// nil: time.Now. The controller passes its injected clock, which the dispatcher uses too.
	Now func() time.Time
}

// Service registers webhooks and publishes events.
type Service struct {
	store  Store
	o      Options
	notify func() // wakes the dispatcher; may be nil
}

// NewService returns a Service. notify, if not nil, is called after an event queued deliveries.
func NewService(s Store, o Options, notify func()) *Service {
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Service{store: s, o: o, notify: notify}
}

// CreateRequest is the body of POST /v1/webhooks.
type CreateRequest struct {
	URL         string   `json:"url"`
	Events      []string `json:"events"`
	Description string   `json:"description"`
}

// Create validates and registers a webhook and returns it with its signing secret.
func (s *Service) Create(ctx context.Context, req CreateRequest, createdBy string) (*Webhook, error) {
	if err := s.validateURL(req.URL); err != nil {
		return nil, err
	}
	if len(req.Events) == 0 {
		return nil, apierr.BadRequest("events must list at least one event type; known types: %s", strings.Join(event.Types, ", "))
	}
	evs := make([]string, 0, len(req.Events))
	for _, e := range req.Events {
		if !event.Known(e) {
			return nil, apierr.BadRequest("unknown event type %q; known types: %s", e, strings.Join(event.Types, ", "))
		}
		if !slices.Contains(evs, e) {
			evs = append(evs, e)
		}
	}
	if len(req.Description) > 500 {
		return nil, apierr.BadRequest("description is longer than 500 characters")
	}
	var sec [32]byte
	_, _ = rand.Read(sec[:])
	now := s.o.Now().UTC()
	w := &Webhook{
		ID: ids.New("wh"), URL: req.URL, Events: evs, Description: req.Description,
		Secret: "whsec_" + base64.RawURLEncoding.EncodeToString(sec[:]), CreatedBy: createdBy,
		CreatedAt: now, UpdatedAt: now,
	}
	if err := s.store.CreateWebhook(ctx, w); err != nil {
		return nil, fmt.Errorf("webhook.Create: %w", err)
	}
	return w, nil
}

func (s *Service) validateURL(raw string) error {
	if raw == "" {
		return apierr.BadRequest("url is required")
	}
	if len(raw) > 2048 {
		return apierr.BadRequest("url is longer than 2048 characters")
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return apierr.BadRequest("url %q is not an absolute URL", raw)
	}
	if u.User != nil {
		return apierr.BadRequest("url must not carry credentials; verify deliveries with the signing secret instead")
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if s.o.AllowHTTPLoopback && isLoopback(u.Hostname()) {
			return nil
		}
		if s.o.AllowHTTPLoopback {
			return apierr.BadRequest("url must use https; plain http is allowed only to loopback addresses")
		}
		return apierr.BadRequest("url must use https (start the controller with --allow-http-webhooks to allow http to loopback for local development)")
	}
	return apierr.BadRequest("url must use https, not %q", u.Scheme)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Publish records an event of type typ with data and queues its deliveries. It returns once
// the event is durable; delivery happens later. The data must marshal to a JSON object.
func (s *Service) Publish(ctx context.Context, typ string, data any) (*event.Envelope, error) {
	ev, err := event.NewAt(typ, data, s.o.Now())
	if err != nil {
		return nil, err
	}
	n, err := s.store.InsertEvent(ctx, ev)
	if err != nil {
		return nil, fmt.Errorf("webhook.Publish %s: %w", typ, err)
	}
	if n > 0 {
		s.Notify()
	}
	return ev, nil
}

// Notify wakes the dispatcher: call it after committing events written in another service's
// transaction.
func (s *Service) Notify() {
	if s.notify != nil {
		s.notify()
	}
}

// Get, List, Delete, Deliveries and Redeliver pass through to the store; the secret is never
// returned after creation.
func (s *Service) Get(ctx context.Context, id string) (*Webhook, error) {
	w, err := s.store.GetWebhook(ctx, id)
	if err != nil {
		return nil, err
	}
	w.Secret = ""
	return w, nil
}

// List lists webhooks, optionally those subscribed to eventType.
func (s *Service) List(ctx context.Context, p page.Params, eventType string) ([]*Webhook, error) {
	if eventType != "" && !event.Known(eventType) {
		return nil, apierr.BadRequest("unknown event type %q", eventType)
	}
	ws, err := s.store.ListWebhooks(ctx, p, eventType)
	for _, w := range ws {
		w.Secret = ""
	}
	return ws, err
}

// Delete removes a webhook and its pending deliveries.
func (s *Service) Delete(ctx context.Context, id string) error { return s.store.DeleteWebhook(ctx, id) }

// Deliveries lists a webhook's deliveries, optionally by status or event.
func (s *Service) Deliveries(ctx context.Context, webhookID string, p page.Params, status, eventID string) ([]*Delivery, error) {
	switch status {
	case "", StatusPending, StatusDelivering, StatusSucceeded, StatusFailed:
	default:
		return nil, apierr.BadRequest("status must be one of pending, delivering, succeeded, failed; got %q", status)
	}
	if _, err := s.store.GetWebhook(ctx, webhookID); err != nil {
		return nil, err
	}
	return s.store.ListDeliveries(ctx, webhookID, p, status, eventID)
}

// Delivery returns one delivery of a webhook.
func (s *Service) Delivery(ctx context.Context, webhookID, id string) (*Delivery, error) {
	return s.store.GetDelivery(ctx, webhookID, id)
}

// Redeliver queues the delivery's event again, as a new delivery with the same event ID.
func (s *Service) Redeliver(ctx context.Context, webhookID, deliveryID string) (*Delivery, error) {
	d, err := s.store.Redeliver(ctx, webhookID, deliveryID, s.o.Now().UTC())
	if err != nil {
		return nil, err
	}
	if s.notify != nil {
		s.notify()
	}
	return d, nil
}

// Job is a claimed delivery, with what the dispatcher needs to send it.
type Job struct {
	DeliveryID string
	WebhookID  string
	URL        string
	Secret     string
	Attempts   int       // attempts made before this one
	CreatedAt  time.Time // when the delivery was queued: the retry window counts from here
	Event      event.Envelope
}

// Result is the outcome of one attempt, to be stored.
type Result struct {
	DeliveryID    string
	Status        string // StatusSucceeded, StatusPending (retry at NextAttemptAt) or StatusFailed
	Attempts      int
	NextAttemptAt time.Time
	AttemptedAt   time.Time
	HTTPStatus    int
	Error         string
}

// QueueStore is what the dispatcher needs of the database.
type QueueStore interface {
	// ClaimDue marks up to limit pending deliveries due at now as delivering and returns them,
	// oldest due first, at most perWebhook per webhook, skipping the webhooks in exclude. It may
	// consider only the limit oldest due deliveries, so when a webhook got perWebhook, others'
	// may remain: claim again with that webhook excluded to reach them.
	ClaimDue(ctx context.Context, now time.Time, perWebhook, limit int, exclude []string) ([]Job, error)
	// FinishDeliveries stores attempt results.
	FinishDeliveries(ctx context.Context, rs []Result) error
	// ResetInFlight returns to pending, due at now, the deliveries still delivering that were
	// claimed before claimedBefore: left by a stopped or dead process.
	ResetInFlight(ctx context.Context, now, claimedBefore time.Time) (int64, error)
	// CountDeliveries counts deliveries by status.
	CountDeliveries(ctx context.Context) (map[string]int64, error)
}
