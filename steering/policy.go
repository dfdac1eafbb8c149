package steering

import "github.com/edgewan/edgewan/telemetry"

// ClassesOf returns the classes of a steering policy's content, as the controller and the
// agent both steer them: each class with its SLA and preferred transports; a class without
// paths of its own uses the default class's.
func ClassesOf(c *telemetry.SteeringContent) []Class {
	out := make([]Class, 0, len(c.Classes))
	for _, cl := range c.Classes {
		pref := c.Paths[cl.Name]
		if len(pref) == 0 {
			pref = c.Paths[c.DefaultClass]
		}
		out = append(out, Class{Name: cl.Name, Preferred: pref,
			SLA: Thresholds{MaxLatencyMs: cl.MaxLatencyMs, MaxLossPct: cl.MaxLossPct, MaxJitterMs: cl.MaxJitterMs}})
	}
	return out
}

// DefaultClass is the only class of a site that runs no steering policy: all traffic, on the
// site's transports in the order given (the controller orders them by cost).
const DefaultClass = "default"
