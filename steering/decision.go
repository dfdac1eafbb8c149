package steering

// Kind is what a Decision reports. String gives the name of the event the controller raises.
type Kind uint8

// The kinds of decision.
const (
	TransportDegraded  Kind = iota + 1 // the transport misses Options.Degraded (or came up from Down still missing it)
	TransportDown                      // the transport is hard down
	TransportRecovered                 // the transport is up again, neither Down nor Degraded
	SLABreach                          // the class's SLA is not met on the path it now uses
	SLARecovered                       // the class's SLA is met again
	PathSwitched                       // the class moved from one transport to another
)

var kindNames = [...]string{
	TransportDegraded:  "transport.degraded",
	TransportDown:      "transport.down",
	TransportRecovered: "transport.recovered",
	SLABreach:          "sla.breach",
	SLARecovered:       "sla.recovered",
	PathSwitched:       "path.switched",
}

func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return "unknown"
}

// Reason says why a PathSwitched or SLABreach decision was made.
type Reason string

// The reasons. ReasonDown and ReasonSLA switches are forced and happen at once; ReasonPreferred
// and ReasonScore switches wait Options.HoldDown after the class's previous switch.
const (
	ReasonDown      Reason = "down"      // the path is hard down
	ReasonSLA       Reason = "sla"       // the path breaches the SLA and the new one meets it (also SLABreach: no transport meets it)
	ReasonPreferred Reason = "preferred" // the new path meets the SLA and comes earlier in the class's order
	ReasonScore     Reason = "score"     // no transport meets the SLA; the new one's Violation is lower by ScoreMargin
	ReasonRemoved   Reason = "removed"   // Reconfigure removed the path
	ReasonAllDown   Reason = "all-down"  // SLABreach: every transport is Down; the class keeps its path
)

// Decision is one change found by Evaluate (or Reconfigure).
type Decision struct {
	Kind Kind
	// Transport is the transport concerned: the one whose status changed, or for SLABreach and
	// SLARecovered the class's path. Empty for PathSwitched.
	Transport string
	Class     string // SLABreach, SLARecovered, PathSwitched
	From, To  string // PathSwitched
	Reason    Reason // PathSwitched, SLABreach
	// Metrics is the last window of Transport, or for PathSwitched of From (zero when From
	// was removed).
	Metrics Metrics
}
