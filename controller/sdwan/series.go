package sdwan

import (
	"context"
	"strconv"
	"time"

	"github.com/edgewan/edgewan/telemetry/rollup"
)

// Series is the answer of GET /sites/{id}/series: each transport's figures per bucket over the
// window, from the controller's rolling aggregates (the NOC page's sparklines).
type Series struct {
	Site       string            `json:"site"`
	Window     string            `json:"window"`
	Step       string            `json:"step"` // bucket length: 1m up to 1h windows, 15m up to 24h, 6h beyond
	Transports []TransportSeries `json:"transports"`
	Time       time.Time         `json:"generated_at"`
}

// TransportSeries is one transport's buckets, oldest first; a bucket with samples 0 had no data.
type TransportSeries struct {
	Name   string         `json:"name"`
	Points []rollup.Point `json:"points"`
}

// Series returns a site's per-bucket figures over window.
func (s *Service) Series(ctx context.Context, siteID string, window time.Duration, windowText string) (*Series, error) {
	site, err := s.store.GetSite(ctx, siteID)
	if err != nil {
		return nil, err
	}
	out := &Series{Site: site.ID, Window: windowText, Transports: make([]TransportSeries, 0, len(site.Transports))}
	var step time.Duration
	var got []rollup.TransportPoints
	if s.live != nil {
		step, got, out.Time = s.live.Points(siteID, window)
	}
	if step == 0 { // no live state or no data yet: the step the window would have, no points
		var empty rollup.Series
		step, _ = empty.Points(s.now(), window)
		out.Time = s.now()
	}
	out.Step = formatStep(step)
	for _, t := range site.Transports {
		ts := TransportSeries{Name: t.Name, Points: []rollup.Point{}}
		for _, g := range got {
			if g.Transport == t.Name {
				ts.Points = g.Points
			}
		}
		out.Transports = append(out.Transports, ts)
	}
	return out, nil
}

// formatStep writes 1m, 15m or 6h rather than Go's 1m0s.
func formatStep(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	}
	return d.String()
}
