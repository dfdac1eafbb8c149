package steering_test

import (
	"fmt"
	"time"

	"github.com/edgewan/edgewan/steering"
)

func Example() {
	s, err := steering.NewSite([]string{"mpls", "inet"}, []steering.Class{
		{Name: "voice", SLA: steering.Thresholds{MaxLatencyMs: 150, MaxLossPct: 1, MaxJitterMs: 30}},
	}, steering.DefaultOptions())
	if err != nil {
		panic(err)
	}
	var out []steering.Decision // reused from window to window
	now := time.Unix(1_700_000_000, 0)
	s.Observe(now, "mpls", steering.Metrics{Down: true}) // e.g. 3 probes lost in a row
	s.Observe(now, "inet", steering.Metrics{LatencyMs: 30, JitterMs: 3})
	out = s.Evaluate(now, out[:0])
	for _, d := range out {
		switch d.Kind {
		case steering.PathSwitched:
			fmt.Printf("%s %s: %s > %s (%s)\n", d.Kind, d.Class, d.From, d.To, d.Reason)
		default:
			fmt.Printf("%s %s\n", d.Kind, d.Transport)
		}
	}
	fmt.Println("voice on", s.Path("voice"))
	// Output:
	// transport.down mpls
	// path.switched voice: mpls > inet (down)
	// voice on inet
}
