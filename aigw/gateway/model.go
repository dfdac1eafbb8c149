// Package gateway is the AI gateway family (/ai-gateway/v1): per-project policies with versions,
// sanitizing, model calls with redacted input and checked output (streamed too), and the audit
// log that records every request.
package gateway

import (
	"context"
	"encoding/json"
	"time"

	"github.com/edgewan/edgewan/coreapi/event"
	"github.com/edgewan/edgewan/coreapi/page"
	"github.com/edgewan/edgewan/coreapi/policyver"
)

// Version statuses, as in the SD-WAN family.
const (
	VersionDraft      = policyver.Draft
	VersionPublished  = policyver.Published
	VersionSuperseded = policyver.Superseded
)

// Project is a tenant of the gateway, named by its keys.
type Project struct {
	ID            string    `json:"id"`
	StoreRawInput bool      `json:"store_raw_input"` // keep the raw input in the audit log, encrypted
	PolicyID      string    `json:"policy,omitempty"`
	PolicyVersion int       `json:"policy_version,omitempty"`
	HashKey       []byte    `json:"-"` // keys the hash action
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
}

// Policy is one of a project's policies; the project runs one published version at a time.
type Policy struct {
	ID               string     `json:"id"`
	Project          string     `json:"project"`
	Name             string     `json:"name"`
	Description      string     `json:"description"`
	PublishedVersion int        `json:"published_version"`
	Active           bool       `json:"active"` // the project runs this policy
	Versions         []*Version `json:"versions"`
	CreatedAt        time.Time  `json:"created_at"`
	UpdatedAt        time.Time  `json:"updated_at"`
}

// Version is one version of a policy's content (guard.Policy as JSON).
type Version = policyver.Version

// Change is a change record of the gateway's policies.
type Change struct {
	ID          string    `json:"id"`
	Kind        string    `json:"kind"` // ai_policy.published
	Actor       string    `json:"actor"`
	Target      string    `json:"target"`
	Project     string    `json:"project"`
	Version     int       `json:"version"`
	FromVersion int       `json:"from_version"`
	Diff        []string  `json:"diff"`
	Comment     string    `json:"comment,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// Redaction is one entity found and what was done with it.
type Redaction struct {
	Type        string  `json:"type"`
	Subtype     string  `json:"subtype,omitempty"`
	Action      string  `json:"action"`
	Placeholder string  `json:"placeholder,omitempty"`
	Start       int     `json:"start"` // byte offsets in the text it was found in
	End         int     `json:"end"`
	Score       float64 `json:"score"`
	Where       string  `json:"where"` // input (message index as "input[2]") or output
}

// Finding is a block rule that fired.
type Finding struct {
	Rule   string `json:"rule"`
	Kind   string `json:"kind"`
	Detail string `json:"detail,omitempty"`
	Where  string `json:"where"`
}

// Record is one audit record.
type Record struct {
	ID            string          `json:"request_id"`
	Seq           int64           `json:"seq"`
	Project       string          `json:"project"`
	KeyID         string          `json:"key"`
	Kind          string          `json:"kind"` // sanitize, chat, openai
	Model         string          `json:"model,omitempty"`
	Input         json.RawMessage `json:"input"`               // sanitized
	RawInput      string          `json:"raw_input,omitempty"` // decrypted, only for the project's own audit readers when stored
	Output        string          `json:"output,omitempty"`    // sanitized
	Redactions    []Redaction     `json:"redactions"`
	Findings      []Finding       `json:"findings"`
	PolicyID      string          `json:"policy,omitempty"`
	PolicyVersion int             `json:"policy_version,omitempty"`
	Blocked       bool            `json:"blocked"`
	Status        int             `json:"status"`
	LatencyMs     float64         `json:"latency_ms"`
	CreatedAt     time.Time       `json:"created_at"`
	UpdatedAt     time.Time       `json:"updated_at"`
	RawInputEnc   string          `json:"-"` // the raw input as stored: sealed with the controller's audit key
}

// LogFilter selects audit records.
type LogFilter struct {
	Project string
	Until   time.Time
	Entity  string
	Blocked *bool
	Kind    string
}

// Store is what the gateway needs of the database.
type Store interface {
	EnsureProject(ctx context.Context, id string, hashKey func() []byte) (*Project, error)
	UpdateProject(ctx context.Context, p *Project) error
	CreatePolicy(ctx context.Context, p *Policy, v *Version) error
	AddVersion(ctx context.Context, policyID string, v *Version) error
	GetPolicy(ctx context.Context, id string) (*Policy, error)
	ListPolicies(ctx context.Context, p page.Params, project string) ([]*Policy, error)
	// ActivatePolicy publishes version and makes it the project's active policy, with the change
	// record, in one transaction.
	ActivatePolicy(ctx context.Context, project, policyID string, version int, c *Change) error
	ListChanges(ctx context.Context, p page.Params, project string) ([]*Change, error)
	// InsertRecords stores audit records and the events they raise in one transaction, and
	// returns how many webhook deliveries the events queued.
	InsertRecords(ctx context.Context, rs []*Record, evs []*event.Envelope) (int, error)
	MaxAuditSeq(ctx context.Context) (int64, error)
	ListRecords(ctx context.Context, p page.Params, f LogFilter) ([]*Record, error)
	GetRecord(ctx context.Context, id string) (*Record, error)
	RecordsAfter(ctx context.Context, seq int64, limit int) ([]*Record, error)
}
