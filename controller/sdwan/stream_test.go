package sdwan_test

import (
	"strings"
	"testing"

	"github.com/edgewan/edgewan/controller/sdwan"
	"github.com/edgewan/edgewan/controller/whatif"
)

// FuzzParseStreamSites: any query value gives IDs that are all site IDs, at most 200, or an
// error, never a panic.
func FuzzParseStreamSites(f *testing.F) {
	for _, s := range []string{"", "site_abc", "site_a,site_b", "site_,x", strings.Repeat("site_a,", 201), "site_A", ",,,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		ids, err := sdwan.ParseStreamSites(v)
		if err != nil {
			return
		}
		if len(ids) > sdwan.MaxOverviewLimit {
			t.Fatalf("%d IDs accepted", len(ids))
		}
		for _, id := range ids {
			rest, ok := strings.CutPrefix(id, "site_")
			if !ok || rest == "" || strings.ContainsFunc(rest, func(r rune) bool { return (r < 'a' || r > 'z') && (r < '0' || r > '9') }) {
				t.Fatalf("%q accepted as a site ID", id)
			}
		}
	})
}

func FuzzParseStatistic(f *testing.F) {
	for _, s := range []string{"", "mean", "p95", "P95", "max"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		st, err := whatif.ParseStatistic(v)
		if err == nil && st != whatif.Mean && st != whatif.P95 {
			t.Fatalf("%q parsed as %q", v, st)
		}
	})
}
