package gateway_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/edgewan/edgewan/aigw/gateway"
	"github.com/edgewan/edgewan/aigw/proposal"
	"github.com/edgewan/edgewan/controller/store"
	"github.com/edgewan/edgewan/coreapi/page"
)

// TestProposalSchedule: the scheduler analyses every project with recent records on its own,
// and a proposal made once is not made again on the next rounds.
func TestProposalSchedule(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		e := newEnv(t, st, func(o *gateway.Options) {
			o.Proposals = st.Gateway()
			o.ProposalOptions = gateway.ProposalOptions{Interval: 30 * time.Millisecond, Analysis: proposal.Options{MinRecords: 5, MinMatches: 2}}
		})
		e.publish(t, `{"entities": {"url": "allow"}}`)
		for i := range 6 {
			req := gateway.SanitizeRequest{Project: "proj", Text: fmt.Sprintf("see https://docs.example.com/page/%d", i)}
			if _, err := e.svc.Sanitize(ctx, user, fmt.Sprintf("req_%d", i), req); err != nil {
				t.Fatal(err)
			}
		}
		runWorker(t, e)
		deadline := time.Now().Add(10 * time.Second)
		var got []*gateway.Proposal
		for {
			var err error
			got, err = e.svc.ListProposals(ctx, user, "proj", page.Params{Limit: 10, Desc: true}, "", "")
			if err != nil {
				t.Fatal(err)
			}
			if len(got) > 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond) // polling the scheduler, bounded by the deadline
		}
		if len(got) != 1 || got[0].Change.Entity != "url" || got[0].Evidence.Matches != 6 {
			t.Fatalf("proposals %+v; want one for url with 6 matches", got)
		}
		time.Sleep(150 * time.Millisecond) // a few more rounds
		if again, _ := e.svc.ListProposals(ctx, user, "proj", page.Params{Limit: 10, Desc: true}, "", ""); len(again) != 1 {
			t.Errorf("after more rounds: %d proposals; want still 1", len(again))
		}
		if _, err := e.svc.ListProposals(ctx, other, "proj", page.Params{Limit: 10}, "", ""); err == nil {
			t.Error("another project's key listed this project's proposals")
		}
	})
}
