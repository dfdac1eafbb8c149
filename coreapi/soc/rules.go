package soc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/edgewan/edgewan/coreapi/apierr"
)

// System rules: the security-relevant events for which the controller opens a case by itself.
// docs/soc.md lists them. While a rule's case about a subject is unresolved, new occurrences
// add a note to it (at most one per NoteEvery) instead of opening another.
const (
	RuleAuthBruteForce = "auth.brute_force"   // many failed authentications from one address
	RuleRevokedKeyUsed = "auth.revoked_key"   // a revoked key was presented
	RuleMQTTACL        = "mqtt.acl_violation" // a device published or subscribed outside its site
	RuleClaimReuse     = "ztp.claim_reuse"    // a used or expired claim token was presented
	RuleClockSkew      = "agent.clock_skew"   // an agent's messages are dated outside the accepted window
	// RuleSiteQuarantined: the controller could not load a site's stored state and stopped
	// evaluating it (not an attack, but nobody may notice otherwise: the site keeps its paths).
	RuleSiteQuarantined = "controller.site_quarantined"
	// RuleObjectQuarantined: a stored object other than a site (a webhook, a policy version,
	// the SIEM cursor file) cannot be used; it is reported and every other one runs.
	RuleObjectQuarantined = "controller.object_quarantined"
	// RuleControllerClock: most agents agree that the controller's own clock is wrong; one
	// case for the controller instead of one agent.clock_skew case per site.
	RuleControllerClock = "controller.clock"
)

// Signal is one occurrence of a rule's event.
type Signal struct {
	Rule        string
	Subject     string // e.g. a client address or key ID; one open case per rule and subject
	Severity    string
	Title       string
	Description string
}

// Raise opens a system case for sig, or notes the occurrence on the open one, at most once per
// NoteEvery: within that time of the last open or note, the open case is returned unchanged.
func (s *Service) Raise(ctx context.Context, sig Signal) (*Case, error) {
	s.raising.Lock()
	defer s.raising.Unlock()
	key := sig.Rule + "\x00" + sig.Subject
	c, err := s.store.OpenCaseFor(ctx, sig.Rule, sig.Subject)
	if errors.Is(err, apierr.ErrNotFound) {
		c, err = s.open(ctx, &Case{
			Title: sig.Title, Description: sig.Description, Severity: sig.Severity,
			Source: SourceSystem, Rule: sig.Rule, Subject: sig.Subject,
		})
		if err == nil {
			s.markNoted(key, c.CreatedAt)
			return c, nil
		}
		if !errors.Is(err, apierr.ErrConflict) {
			return nil, err
		}
		// Another controller opened it since OpenCaseFor (the store keeps one open case per
		// rule and subject): note on that one instead, as if it had been found.
		c, err = s.store.OpenCaseFor(ctx, sig.Rule, sig.Subject)
	}
	if err != nil {
		return nil, fmt.Errorf("soc.Raise: %w", err)
	}
	now := s.now()
	last, ok := s.noted[key]
	if !ok {
		last = c.UpdatedAt // after a restart: the case's last change stands for the last note
	}
	if d := now.Sub(last); d < NoteEvery && d > -NoteEvery {
		return c, nil
	}
	note := "occurred again: " + sig.Description
	c, err = s.Update(ctx, c.ID, UpdateRequest{Note: &note}, "system")
	if err == nil {
		s.markNoted(key, now)
	}
	return c, err
}

// markNoted records when key's case was last opened or noted. Called with s.raising held.
func (s *Service) markNoted(key string, at time.Time) {
	if len(s.noted) > 100_000 { // bounded under a flood of subjects; OpenCaseFor's UpdatedAt stands in
		clear(s.noted)
	}
	s.noted[key] = at
}

// WatchOptions tune the authentication watcher.
type WatchOptions struct {
	Threshold int           // failures from one address within Window that open a case; default 20
	Window    time.Duration // default 5 minutes
	NoteEvery time.Duration // least time between notes on the same open case; default 10 minutes
}

// AuthWatcher turns authentication failures into cases. Observe never blocks the request:
// signals go through a buffered channel to the goroutine of Run.
type AuthWatcher struct {
	svc *Service
	o   WatchOptions
	ch  chan Signal

	mu       sync.Mutex
	failures map[string][]time.Time // per client address, within the window
	raised   map[string]time.Time   // rule+subject -> last time raised
}

// NewAuthWatcher returns a watcher that raises cases through svc.
func NewAuthWatcher(svc *Service, o WatchOptions) *AuthWatcher {
	if o.Threshold <= 0 {
		o.Threshold = 20
	}
	if o.Window <= 0 {
		o.Window = 5 * time.Minute
	}
	if o.NoteEvery <= 0 {
		o.NoteEvery = 10 * time.Minute
	}
	return &AuthWatcher{svc: svc, o: o, ch: make(chan Signal, 256),
		failures: make(map[string][]time.Time), raised: make(map[string]time.Time)}
}

// Failure records one refused credential: reason "revoked" raises at once; any failure counts
// towards the brute-force threshold of the client's address. at (the controller's wall clock)
// dates the case's text; the windows are durations, measured on the machine's monotonic clock,
// so a step of the wall clock neither empties nor prolongs them.
func (w *AuthWatcher) Failure(clientIP, keyID, reason string, at time.Time) {
	mono := time.Now()
	w.mu.Lock()
	var sigs []Signal
	if reason == "revoked" && w.due(RuleRevokedKeyUsed+keyID, mono) {
		sigs = append(sigs, Signal{Rule: RuleRevokedKeyUsed, Subject: keyID, Severity: "medium",
			Title:       "Revoked API key used: " + keyID,
			Description: fmt.Sprintf("revoked key %s was presented from %s at %s", keyID, clientIP, at.UTC().Format(time.RFC3339))})
	}
	fs := w.failures[clientIP]
	cut := 0
	for cut < len(fs) && mono.Sub(fs[cut]) > w.o.Window {
		cut++
	}
	fs = append(fs[cut:], mono)
	if len(fs) >= w.o.Threshold && w.due(RuleAuthBruteForce+clientIP, mono) {
		sigs = append(sigs, Signal{Rule: RuleAuthBruteForce, Subject: clientIP, Severity: "high",
			Title:       "Repeated authentication failures from " + clientIP,
			Description: fmt.Sprintf("%d failed authentications from %s within %s (last reason: %s)", len(fs), clientIP, w.o.Window, reason)})
	}
	if len(fs) > w.o.Threshold {
		fs = fs[len(fs)-w.o.Threshold:] // keep memory bounded under a flood
	}
	w.failures[clientIP] = fs
	if len(w.failures) > 100000 {
		w.failures = make(map[string][]time.Time) // a flood from many addresses: start counting again
	}
	w.mu.Unlock()
	for _, s := range sigs {
		select {
		case w.ch <- s:
		default:
			slog.Warn("soc: signal dropped, watcher busy", "rule", s.Rule, "subject", s.Subject)
		}
	}
}

// due reports whether rule+subject may raise now, and records it. Called with w.mu held.
func (w *AuthWatcher) due(key string, at time.Time) bool {
	if last, ok := w.raised[key]; ok && at.Sub(last) < w.o.NoteEvery {
		return false
	}
	w.raised[key] = at
	return true
}

// Run raises the watcher's signals until ctx is done.
func (w *AuthWatcher) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case s := <-w.ch:
			if _, err := w.svc.Raise(ctx, s); err != nil && !errors.Is(err, context.Canceled) {
				slog.Error("soc: raising case", "rule", s.Rule, "subject", s.Subject, "err", err)
			}
		}
	}
}
