// Package quarantine describes a stored object the controller cannot use: it is reported with
// its reason (its API representation, /metrics, a SOC case) and every other object runs, so
// nothing in the data stops the controller (crash-only start, docs/sdwan.md).
package quarantine

// Quarantine says why a stored object cannot be used. Sites have their own, with the time
// (controller/sdwan).
type Quarantine struct {
	Kind   string `json:"kind"` // one of Kinds
	Reason string `json:"reason"`
}

// Kinds: a closed set (the /metrics label).
const (
	Data   = "data"   // a stored field does not decode or is not valid
	Secret = "secret" // a sealed secret does not open with the secrets key
)

// Kinds lists every kind.
var Kinds = []string{Data, Secret}

// New returns a Quarantine of kind with reason.
func New(kind, reason string) *Quarantine { return &Quarantine{Kind: kind, Reason: reason} }
