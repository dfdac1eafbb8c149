package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/edgewan/edgewan/aigw/guard"
	"github.com/edgewan/edgewan/aigw/proposal"
	"github.com/edgewan/edgewan/coreapi/apierr"
	"github.com/edgewan/edgewan/coreapi/event"
	"github.com/edgewan/edgewan/coreapi/ids"
	"github.com/edgewan/edgewan/coreapi/page"
)

// Proposal statuses.
const (
	ProposalOpen      = "open"
	ProposalAccepted  = "accepted"
	ProposalDismissed = "dismissed"
)

// AutomaticPolicy names the policy an accepted proposal creates in a project that runs the
// built-in default policy.
const AutomaticPolicy = "automatic"

// Proposal is a policy change Automatic mode proposes for a project, with its evidence.
type Proposal struct {
	ID          string            `json:"id"`
	Project     string            `json:"project"`
	Status      string            `json:"status"` // open, accepted, dismissed
	Kind        string            `json:"kind"`   // entity_passed_through, recurring_block, rule_never_fires
	Title       string            `json:"title"`
	Change      proposal.Change   `json:"change"`
	Evidence    proposal.Evidence `json:"evidence"`
	Policy      PolicyRef         `json:"policy"` // the version the analysis compared with
	Resolution  *Resolution       `json:"resolution,omitempty"`
	CreatedAt   time.Time         `json:"created_at"`
	UpdatedAt   time.Time         `json:"updated_at"`
	Fingerprint string            `json:"-"`
}

// Resolution is what became of a proposal: accepted into a draft version, or dismissed.
type Resolution struct {
	Actor   string    `json:"actor"` // key ID
	Policy  string    `json:"policy,omitempty"`
	Version int       `json:"version,omitempty"` // the draft version an accepted proposal made
	Comment string    `json:"comment,omitempty"`
	At      time.Time `json:"at"`
}

// ProposalStore is what Automatic mode needs of the database.
type ProposalStore interface {
	// InsertProposal stores a proposal with its event unless the project already has one with
	// its fingerprint; it reports whether it did and how many deliveries were queued.
	InsertProposal(ctx context.Context, p *Proposal, ev *event.Envelope) (bool, int, error)
	GetProposal(ctx context.Context, id string) (*Proposal, error)
	ListProposals(ctx context.Context, p page.Params, project, status, kind string) ([]*Proposal, error)
	// ResolveProposal stores an open proposal's resolution and, for an accepted one, the draft
	// version (v, numbered by the store) of policy policyID, first creating newPolicy if not nil,
	// in one transaction. A proposal no longer open is a conflict.
	ResolveProposal(ctx context.Context, p *Proposal, newPolicy *Policy, policyID string, v *Version) error
	// Projects lists the projects that have audit records since since.
	Projects(ctx context.Context, since time.Time) ([]string, error)
	// RecentRecords returns up to limit of a project's latest audit records since since.
	RecentRecords(ctx context.Context, project string, since time.Time, limit int) ([]*Record, error)
}

// ProposalOptions configure Automatic mode (Options.ProposalOptions).
type ProposalOptions struct {
	Interval   time.Duration // between scheduled analyses of every project; default 1h, negative disables the schedule
	Window     time.Duration // audit records analysed: the latest of this period; default 7 days
	MaxRecords int           // and at most this many; default 10000
	Analysis   proposal.Options
}

func (s *Service) initProposals() {
	o := s.o.ProposalOptions
	if o.Interval == 0 {
		o.Interval = time.Hour
	}
	if o.Window <= 0 {
		o.Window = 7 * 24 * time.Hour
	}
	if o.MaxRecords <= 0 {
		o.MaxRecords = 10000
	}
	s.propOpts = o
}

func (s *Service) proposalsOn() error {
	if s.o.Proposals == nil {
		return apierr.New(http.StatusServiceUnavailable, apierr.CodeUnavailable, "Automatic mode is not configured on this controller")
	}
	return nil
}

// activePolicy returns the project's running policy content and reference.
func (s *Service) activePolicy(ctx context.Context, project string) (*cachedGuard, guard.Policy, error) {
	cg, err := s.guardFor(ctx, project)
	if err != nil {
		return nil, guard.Policy{}, err
	}
	return cg, cg.guard.Policy(), nil
}

// AnalyzeResult answers POST /projects/{id}/proposals.
type AnalyzeResult struct {
	Records  int         `json:"records"`  // audit records analysed
	Proposed []*Proposal `json:"proposed"` // new proposals (ones made before are not repeated)
	Policy   PolicyRef   `json:"policy"`
}

// Analyze runs Automatic mode on a project's recent audit records now.
func (s *Service) Analyze(ctx context.Context, c Caller, project string) (*AnalyzeResult, error) {
	if err := s.requireAdmin(c); err != nil {
		return nil, err
	}
	if err := s.checkProject(c, project); err != nil {
		return nil, err
	}
	if err := s.proposalsOn(); err != nil {
		return nil, err
	}
	return s.analyze(ctx, project)
}

func (s *Service) analyze(ctx context.Context, project string) (*AnalyzeResult, error) {
	cg, pol, err := s.activePolicy(ctx, project)
	if err != nil {
		return nil, err
	}
	now := s.o.Now().UTC()
	rs, err := s.o.Proposals.RecentRecords(ctx, project, now.Add(-s.propOpts.Window), s.propOpts.MaxRecords)
	if err != nil {
		return nil, err
	}
	recs := make([]proposal.Record, len(rs))
	for i, r := range rs {
		pr := proposal.Record{ID: r.ID, PolicyID: r.PolicyID, PolicyVersion: r.PolicyVersion, At: r.CreatedAt}
		if pr.PolicyID == "" {
			pr.PolicyID = "default"
		}
		for _, x := range r.Redactions {
			pr.Entities = append(pr.Entities, proposal.Entity{Type: x.Type, Action: x.Action})
		}
		for _, f := range r.Findings {
			pr.Rules = append(pr.Rules, proposal.Hit{Rule: f.Rule, Kind: f.Kind})
		}
		recs[i] = pr
	}
	ref := PolicyRef{cg.policyID, cg.version}
	out := &AnalyzeResult{Records: len(recs), Proposed: []*Proposal{}, Policy: ref}
	notify := false
	for _, x := range proposal.Analyze(pol, proposal.Ref{ID: ref.ID, Version: ref.Version}, recs, s.propOpts.Analysis) {
		at := s.o.Now().UTC().Truncate(time.Microsecond)
		p := &Proposal{ID: ids.New("prop"), Project: project, Status: ProposalOpen, Kind: x.Kind, Title: x.Title, Change: x.Change,
			Evidence: x.Evidence, Policy: ref, CreatedAt: at, UpdatedAt: at, Fingerprint: x.Fingerprint}
		if p.Evidence.Samples == nil {
			p.Evidence.Samples = []string{}
		}
		ev, err := event.NewAt(event.PolicyProposed, map[string]any{"proposal_id": p.ID, "project": project, "kind": p.Kind, "title": p.Title,
			"change": p.Change, "evidence": map[string]any{"records": p.Evidence.Records, "matches": p.Evidence.Matches, "share": p.Evidence.Share},
			"policy": ref.ID, "policy_version": ref.Version}, at)
		if err != nil {
			return nil, err
		}
		ok, n, err := s.o.Proposals.InsertProposal(ctx, p, ev)
		if err != nil {
			return nil, err
		}
		if ok {
			out.Proposed = append(out.Proposed, p)
		}
		notify = notify || n > 0
	}
	if notify {
		s.o.Notify()
	}
	return out, nil
}

// ListProposals lists a project's proposals (the caller's).
func (s *Service) ListProposals(ctx context.Context, c Caller, project string, p page.Params, status, kind string) ([]*Proposal, error) {
	if err := s.checkProject(c, project); err != nil {
		return nil, err
	}
	if err := s.proposalsOn(); err != nil {
		return nil, err
	}
	switch status {
	case "", ProposalOpen, ProposalAccepted, ProposalDismissed:
	default:
		return nil, apierr.BadRequest("status must be open, accepted or dismissed; got %q", status)
	}
	switch kind {
	case "", proposal.KindEntityPassedThrough, proposal.KindRecurringBlock, proposal.KindRuleNeverFires:
	default:
		return nil, apierr.BadRequest("kind must be entity_passed_through, recurring_block or rule_never_fires; got %q", kind)
	}
	return s.o.Proposals.ListProposals(ctx, p, project, status, kind)
}

// GetProposal returns a proposal of the caller's project.
func (s *Service) GetProposal(ctx context.Context, c Caller, id string) (*Proposal, error) {
	if err := s.proposalsOn(); err != nil {
		return nil, err
	}
	p, err := s.o.Proposals.GetProposal(ctx, id)
	if err != nil {
		return nil, err
	}
	if p.Project != c.Project {
		return nil, apierr.NotFound("proposal %q not found", id)
	}
	return p, nil
}

// ResolveRequest is the body of POST /proposals/{id}/accept and /dismiss.
type ResolveRequest struct {
	Comment string `json:"comment"`
}

// openProposal checks what accepting and dismissing share: an admin key, the comment, and a
// proposal of the caller's project that is still open.
func (s *Service) openProposal(ctx context.Context, c Caller, id string, req ResolveRequest) (*Proposal, error) {
	if err := s.requireAdmin(c); err != nil {
		return nil, err
	}
	if len(req.Comment) > 2000 {
		return nil, apierr.BadRequest("comment is limited to 2000 characters")
	}
	p, err := s.GetProposal(ctx, c, id)
	if err != nil {
		return nil, err
	}
	if p.Status != ProposalOpen {
		return nil, apierr.Conflict("proposal %s is %s already", id, p.Status)
	}
	return p, nil
}

// AcceptProposal makes the proposed change into a new draft version of the project's active
// policy (of a new policy "automatic" when the project runs the default policy). Publishing
// it stays a separate, deliberate step.
func (s *Service) AcceptProposal(ctx context.Context, c Caller, id string, req ResolveRequest) (*Proposal, error) {
	p, err := s.openProposal(ctx, c, id, req)
	if err != nil {
		return nil, err
	}
	cg, pol, err := s.activePolicy(ctx, p.Project)
	if err != nil {
		return nil, err
	}
	changed, err := proposal.Apply(pol, p.Change)
	if err != nil {
		return nil, apierr.Conflict("proposal %s no longer applies to the project's policy: %v", id, err)
	}
	raw, _ := json.Marshal(changed)
	content, err := canonicalPolicy(raw)
	if err != nil {
		return nil, fmt.Errorf("gateway: proposal %s makes invalid content: %w", id, err)
	}
	now := s.o.Now().UTC().Truncate(time.Microsecond)
	comment := fmt.Sprintf("Automatic mode, proposal %s: %s", id, p.Title)
	if req.Comment != "" {
		comment += " (" + req.Comment + ")"
	}
	v := &Version{Status: VersionDraft, Content: content, Comment: comment, CreatedBy: c.KeyID, CreatedAt: now}
	var newPol *Policy
	policyID := cg.policyID
	if policyID == "default" {
		existing, err := s.store.ListPolicies(ctx, page.Params{Limit: 200, Desc: true}, p.Project)
		if err != nil {
			return nil, err
		}
		policyID = ""
		for _, x := range existing {
			if x.Name == AutomaticPolicy {
				policyID = x.ID
			}
		}
		if policyID == "" {
			newPol = &Policy{ID: ids.New("aipol"), Project: p.Project, Name: AutomaticPolicy,
				Description: "Drafts made by accepting Automatic mode's proposals", CreatedAt: now, UpdatedAt: now}
			policyID = newPol.ID
		}
	}
	p.Status, p.UpdatedAt = ProposalAccepted, now
	p.Resolution = &Resolution{Actor: c.KeyID, Policy: policyID, Comment: req.Comment, At: now}
	if err := s.o.Proposals.ResolveProposal(ctx, p, newPol, policyID, v); err != nil {
		return nil, err
	}
	p.Resolution.Version = v.Version
	return p, nil
}

// DismissProposal closes a proposal without changing anything; it is not proposed again for
// the same policy version.
func (s *Service) DismissProposal(ctx context.Context, c Caller, id string, req ResolveRequest) (*Proposal, error) {
	p, err := s.openProposal(ctx, c, id, req)
	if err != nil {
		return nil, err
	}
	now := s.o.Now().UTC().Truncate(time.Microsecond)
	p.Status, p.UpdatedAt = ProposalDismissed, now
	p.Resolution = &Resolution{Actor: c.KeyID, Comment: req.Comment, At: now}
	if err := s.o.Proposals.ResolveProposal(ctx, p, nil, "", nil); err != nil {
		return nil, err
	}
	return p, nil
}

// runProposals analyses every project with recent audit records each Interval until ctx ends.
func (s *Service) runProposals(ctx context.Context) {
	if s.propOpts.Interval < 0 {
		return
	}
	t := time.NewTicker(s.propOpts.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		projects, err := s.o.Proposals.Projects(ctx, s.o.Now().UTC().Add(-s.propOpts.Window))
		if err != nil {
			if ctx.Err() == nil {
				slog.Error("gateway: automatic mode: listing projects", "err", err)
			}
			continue
		}
		for _, p := range projects {
			if ctx.Err() != nil {
				return
			}
			res, err := s.analyze(ctx, p)
			if err != nil {
				if ctx.Err() == nil {
					slog.Error("gateway: automatic mode", "project", p, "err", err)
				}
				continue
			}
			if len(res.Proposed) > 0 {
				slog.Info("gateway: automatic mode proposed policy changes", "project", p, "proposals", len(res.Proposed), "records", res.Records)
			}
		}
	}
}

// Run runs the gateway's background work until ctx ends: the document worker and Automatic
// mode's schedule. It returns when both have stopped.
func (s *Service) Run(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.RunProposals(ctx)
	}()
	s.RunDocuments(ctx)
	<-done
}

// RunProposals runs Automatic mode's schedule until ctx ends (nothing without a proposal
// store). With several controllers one runs it (the analysis is the same everywhere).
func (s *Service) RunProposals(ctx context.Context) {
	if s.o.Proposals != nil {
		s.runProposals(ctx)
	}
}

// RunDocuments runs the document worker until ctx ends (nothing without a document store).
// Every controller runs it: work is leased per document.
func (s *Service) RunDocuments(ctx context.Context) {
	if s.o.Documents != nil {
		s.runDocuments(ctx)
	}
}
