package sdwan

import (
	"context"
	"slices"
	"strings"

	"github.com/edgewan/edgewan/coreapi/apierr"
	"github.com/edgewan/edgewan/coreapi/event"
	"github.com/edgewan/edgewan/coreapi/page"
)

// EventTypes are the events of the SD-WAN family, which GET /sd-wan/v1/events lists.
var EventTypes = []string{
	event.TransportDegraded, event.TransportDown, event.SLABreach, event.PathSwitched,
	event.SiteOffline, event.DeviceStatusChanged,
}

// EventFilter narrows an event list; empty fields do not filter.
type EventFilter struct {
	Types []string // one of these types; empty: every SD-WAN type
	Site  string   // events whose data names this site
}

// ListEvents lists the SD-WAN events raised (the same envelopes the webhooks deliver), newest
// first by default.
func (s *Service) ListEvents(ctx context.Context, p page.Params, typ, site string) ([]*event.Envelope, error) {
	f := EventFilter{Types: EventTypes, Site: site}
	if typ != "" {
		if !slices.Contains(EventTypes, typ) {
			return nil, apierr.BadRequest("type %q is not an SD-WAN event type (%v)", typ, EventTypes)
		}
		f.Types = []string{typ}
	}
	if site != "" && !validSiteID(site) {
		return nil, apierr.BadRequest("site %q is not a site ID", site)
	}
	return s.store.ListEvents(ctx, p, f)
}

// validSiteID accepts what ids.New("site") makes: "site_" and lowercase letters and digits.
func validSiteID(id string) bool {
	rest, ok := strings.CutPrefix(id, "site_")
	if !ok || rest == "" || len(id) > 64 {
		return false
	}
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}
