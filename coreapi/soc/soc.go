// Package soc keeps SOC cases: opened by people through the API or by the system's rules for
// security-relevant events, worked through statuses and notes, each change announced as an event.
package soc

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/edgewan/edgewan/coreapi/apierr"
	"github.com/edgewan/edgewan/coreapi/event"
	"github.com/edgewan/edgewan/coreapi/ids"
	"github.com/edgewan/edgewan/coreapi/page"
)

// Case statuses. open -> investigating -> resolved; a resolved case can be reopened.
const (
	StatusOpen          = "open"
	StatusInvestigating = "investigating"
	StatusResolved      = "resolved"
)

// Statuses lists the case statuses.
var Statuses = []string{StatusOpen, StatusInvestigating, StatusResolved}

// Severities lists the case severities, lowest first.
var Severities = []string{"low", "medium", "high", "critical"}

// Sources of a case.
const (
	SourceManual = "manual" // opened through the API
	SourceSystem = "system" // opened by a rule (see rules.go)
)

// Case is a SOC case.
type Case struct {
	ID          string    `json:"id"`
	Title       string    `json:"title"`
	Description string    `json:"description"`
	Severity    string    `json:"severity"`
	Status      string    `json:"status"`
	Source      string    `json:"source"`
	Rule        string    `json:"rule,omitempty"`    // the rule that opened a system case
	Subject     string    `json:"subject,omitempty"` // what the rule was about, e.g. an address or key ID
	Notes       []Note    `json:"notes,omitzero"`    // in the detail view; lists leave notes out
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	ResolvedAt  time.Time `json:"resolved_at,omitzero"`
}

// Note is a remark added to a case.
type Note struct {
	ID        string    `json:"id"`
	Author    string    `json:"author"`
	Body      string    `json:"body"`
	CreatedAt time.Time `json:"created_at"`
}

// Filter selects cases in a list.
type Filter struct {
	Status, Severity, Source string
}

// Store is what the case service needs of the database. Writes take the event announcing them
// and store it, with its webhook deliveries, in the same transaction: no change without its event.
type Store interface {
	CreateCase(ctx context.Context, c *Case, ev *event.Envelope) error
	GetCase(ctx context.Context, id string) (*Case, error) // with notes
	// UpdateCase stores c's mutable fields and adds note (if not nil).
	UpdateCase(ctx context.Context, c *Case, note *Note, ev *event.Envelope) error
	ListCases(ctx context.Context, p page.Params, f Filter) ([]*Case, error) // without notes
	// OpenCaseFor returns the unresolved case a rule opened about subject, if any.
	OpenCaseFor(ctx context.Context, rule, subject string) (*Case, error)
}

// Service creates and updates cases and emits case.opened, case.updated and case.closed.
type Service struct {
	store  Store
	notify func() // wakes the webhook dispatcher after an event was stored; may be nil
	now    func() time.Time
	// raising serialises Raise: two signals of one rule and subject at once (an agent's
	// client re-sending the publish the broker refused) must make one case, not two.
	raising sync.Mutex
	noted   map[string]time.Time // rule+subject -> when Raise last opened or noted its case
}

// NoteEvery is the least time between two of Raise's notes on one open case (docs/soc.md):
// a flood of signals about one subject adds one note per NoteEvery, not one per signal.
const NoteEvery = 10 * time.Minute

// NewService returns a Service.
func NewService(s Store, notify func()) *Service {
	if notify == nil {
		notify = func() {}
	}
	return &Service{store: s, notify: notify, now: func() time.Time { return time.Now().UTC().Truncate(time.Microsecond) },
		noted: make(map[string]time.Time)}
}

// SetClock makes cases' times come from now (the controller's injected clock); call it before use.
func (s *Service) SetClock(now func() time.Time) {
	s.now = func() time.Time { return now().UTC().Truncate(time.Microsecond) }
}

// CreateRequest is the body of POST /v1/soc/cases.
type CreateRequest struct {
	Title       string `json:"title"`
	Description string `json:"description"`
	Severity    string `json:"severity"`
}

// UpdateRequest is the body of PATCH /v1/soc/cases/{id}; absent fields are left as they are.
type UpdateRequest struct {
	Title    *string `json:"title"`
	Severity *string `json:"severity"`
	Status   *string `json:"status"`
	Note     *string `json:"note"`
}

func checkText(field, v string, max int, required bool) error {
	if required && strings.TrimSpace(v) == "" {
		return apierr.BadRequest("%s is required", field)
	}
	if n := utf8.RuneCountInString(v); n > max {
		return apierr.BadRequest("%s is %d characters long; the limit is %d", field, n, max)
	}
	return nil
}

func checkSeverity(s string) error {
	if !slices.Contains(Severities, s) {
		return apierr.BadRequest("severity must be one of %s; got %q", strings.Join(Severities, ", "), s)
	}
	return nil
}

// Create opens a case by hand.
func (s *Service) Create(ctx context.Context, req CreateRequest) (*Case, error) {
	if err := checkText("title", req.Title, 200, true); err != nil {
		return nil, err
	}
	if err := checkText("description", req.Description, 10000, false); err != nil {
		return nil, err
	}
	if req.Severity == "" {
		req.Severity = "medium"
	}
	if err := checkSeverity(req.Severity); err != nil {
		return nil, err
	}
	return s.open(ctx, &Case{Title: strings.TrimSpace(req.Title), Description: req.Description, Severity: req.Severity, Source: SourceManual})
}

func (s *Service) open(ctx context.Context, c *Case) (*Case, error) {
	now := s.now()
	c.ID, c.Status, c.CreatedAt, c.UpdatedAt, c.Notes = ids.New("case"), StatusOpen, now, now, []Note{}
	ev, err := caseEvent(event.CaseOpened, c, nil, "")
	if err != nil {
		return nil, err
	}
	if err := s.store.CreateCase(ctx, c, ev); err != nil {
		return nil, fmt.Errorf("soc.Create: %w", err)
	}
	s.notify()
	return c, nil
}

// Get returns a case with its notes.
func (s *Service) Get(ctx context.Context, id string) (*Case, error) { return s.store.GetCase(ctx, id) }

// List lists cases.
func (s *Service) List(ctx context.Context, p page.Params, f Filter) ([]*Case, error) {
	if f.Status != "" && !slices.Contains(Statuses, f.Status) {
		return nil, apierr.BadRequest("status must be one of %s; got %q", strings.Join(Statuses, ", "), f.Status)
	}
	if f.Severity != "" {
		if err := checkSeverity(f.Severity); err != nil {
			return nil, err
		}
	}
	if f.Source != "" && f.Source != SourceManual && f.Source != SourceSystem {
		return nil, apierr.BadRequest("source must be manual or system; got %q", f.Source)
	}
	return s.store.ListCases(ctx, p, f)
}

// Update applies a change and emits case.updated, or case.closed when the case is resolved.
func (s *Service) Update(ctx context.Context, id string, req UpdateRequest, author string) (*Case, error) {
	if req.Title == nil && req.Severity == nil && req.Status == nil && req.Note == nil {
		return nil, apierr.BadRequest("nothing to change: give at least one of title, severity, status, note")
	}
	c, err := s.store.GetCase(ctx, id)
	if err != nil {
		return nil, err
	}
	was := c.Status
	if req.Title != nil {
		if err := checkText("title", *req.Title, 200, true); err != nil {
			return nil, err
		}
		c.Title = strings.TrimSpace(*req.Title)
	}
	if req.Severity != nil {
		if err := checkSeverity(*req.Severity); err != nil {
			return nil, err
		}
		c.Severity = *req.Severity
	}
	now := s.now()
	if req.Status != nil {
		if !slices.Contains(Statuses, *req.Status) {
			return nil, apierr.BadRequest("status must be one of %s; got %q", strings.Join(Statuses, ", "), *req.Status)
		}
		c.Status = *req.Status
		switch {
		case c.Status == StatusResolved && was != StatusResolved:
			c.ResolvedAt = now
		case c.Status != StatusResolved:
			c.ResolvedAt = time.Time{}
		}
	}
	var note *Note
	if req.Note != nil {
		if err := checkText("note", *req.Note, 10000, true); err != nil {
			return nil, err
		}
		note = &Note{ID: ids.New("note"), Author: author, Body: *req.Note, CreatedAt: now}
		c.Notes = append(c.Notes, *note)
	}
	c.UpdatedAt = now
	typ := event.CaseUpdated
	if c.Status == StatusResolved && was != StatusResolved {
		typ = event.CaseClosed
	}
	ev, err := caseEvent(typ, c, note, was)
	if err != nil {
		return nil, err
	}
	if err := s.store.UpdateCase(ctx, c, note, ev); err != nil {
		return nil, fmt.Errorf("soc.Update: %w", err)
	}
	s.notify()
	return c, nil
}

// eventData is the data of case events: the spec's id, severity and status, and more.
type eventData struct {
	ID             string `json:"id"`
	Title          string `json:"title"`
	Severity       string `json:"severity"`
	Status         string `json:"status"`
	Source         string `json:"source"`
	Rule           string `json:"rule,omitempty"`
	Subject        string `json:"subject,omitempty"`
	Note           *Note  `json:"note,omitempty"`
	PreviousStatus string `json:"previous_status,omitempty"`
}

func caseEvent(typ string, c *Case, note *Note, was string) (*event.Envelope, error) {
	d := eventData{
		ID: c.ID, Title: c.Title, Severity: c.Severity, Status: c.Status, Source: c.Source,
		Rule: c.Rule, Subject: c.Subject, Note: note,
	}
	if was != c.Status {
		d.PreviousStatus = was
	}
	return event.NewAt(typ, d, c.UpdatedAt) // the service's clock
}
