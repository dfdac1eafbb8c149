// Package policyver is the versioned-policy lifecycle the SD-WAN and AI gateway families share:
// numbered versions, written as drafts, published, and superseded when a later one is published.
package policyver

import (
	"encoding/json"
	"time"

	"github.com/edgewan/edgewan/coreapi/quarantine"
)

// Version statuses.
const (
	Draft      = "draft"
	Published  = "published"
	Superseded = "superseded"
)

// Version is one version of a policy: its content is the family's (steering or QoS content,
// or a gateway policy).
type Version struct {
	Version     int             `json:"version"`
	Status      string          `json:"status"`
	Content     json.RawMessage `json:"content"`
	Comment     string          `json:"comment,omitempty"`
	CreatedBy   string          `json:"created_by"`
	CreatedAt   time.Time       `json:"created_at"`
	PublishedAt time.Time       `json:"published_at,omitzero"`
	// Quarantine is set when the stored version cannot be used (its content is not valid
	// JSON): it is shown with content null and cannot be published; other versions and
	// policies are not affected.
	Quarantine *quarantine.Quarantine `json:"quarantine,omitempty"`
}
