package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/edgewan/edgewan/aigw/gateway"
	"github.com/edgewan/edgewan/aigw/proposal"
	"github.com/edgewan/edgewan/controller/store/storetest"
	"github.com/edgewan/edgewan/coreapi/apierr"
	"github.com/edgewan/edgewan/coreapi/page"
)

// TestDocumentQueue checks the document queue's leases: one worker per document, a lease that
// ended is taken over, a finished document leaves the queue and its upload is dropped, and an
// outcome from a lease that was taken over is not stored.
func TestDocumentQueue(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			st := b.Open(t).Gateway()
			t0 := time.Now().UTC().Truncate(time.Microsecond)
			for i, id := range []string{"doc_a", "doc_b"} {
				d := &gateway.Document{ID: id, Project: "p", Status: gateway.DocProcessing, CreatedAt: t0.Add(time.Duration(i) * time.Second), UpdatedAt: t0}
				if _, err := st.InsertDocument(ctx, d, gateway.WorkExtract, "sealed-"+id, nil); err != nil {
					t.Fatal(err)
				}
			}
			done := &gateway.Document{ID: "doc_c", Project: "p", Status: gateway.DocCaptured, CreatedAt: t0, UpdatedAt: t0}
			if _, err := st.InsertDocument(ctx, done, gateway.WorkNone, "", nil); err != nil {
				t.Fatal(err)
			}
			a, err := st.ClaimDocument(ctx, t0, t0.Add(time.Minute))
			if err != nil || a == nil || a.Doc.ID != "doc_a" || a.Blob != "sealed-doc_a" || a.Attempts != 1 || a.Work != gateway.WorkExtract {
				t.Fatalf("first claim: %+v %v", a, err)
			}
			b2, err := st.ClaimDocument(ctx, t0, t0.Add(time.Minute))
			if err != nil || b2 == nil || b2.Doc.ID != "doc_b" {
				t.Fatalf("second claim: %+v %v; want doc_b (doc_a is leased)", b2, err)
			}
			if none, err := st.ClaimDocument(ctx, t0, t0.Add(time.Minute)); err != nil || none != nil {
				t.Fatalf("third claim: %+v %v; want none", none, err)
			}
			// doc_a's lease ends: another worker takes it over; the first one's outcome is refused.
			later := t0.Add(2 * time.Minute)
			a2, err := st.ClaimDocument(ctx, later, later.Add(time.Minute))
			if err != nil || a2 == nil || a2.Doc.ID != "doc_a" || a2.Attempts != 2 {
				t.Fatalf("takeover: %+v %v", a2, err)
			}
			a.Doc.Status = gateway.DocFailed
			if ok, _, err := st.FinishDocument(ctx, a.Doc, a.ClaimedUntil, gateway.WorkNone, nil); err != nil || ok {
				t.Fatalf("finishing under an ended lease: %v %v; want refused", ok, err)
			}
			a2.Doc.Status, a2.Doc.Type = gateway.DocCaptured, "invoice"
			if ok, _, err := st.FinishDocument(ctx, a2.Doc, a2.ClaimedUntil, gateway.WorkNone, nil); err != nil || !ok {
				t.Fatalf("finish: %v %v", ok, err)
			}
			got, err := st.GetDocument(ctx, "doc_a")
			if err != nil || got.Status != gateway.DocCaptured {
				t.Fatalf("doc_a: %+v %v", got, err)
			}
			// Released, doc_b is claimable at once, its attempt not counted.
			if err := st.ReleaseDocument(ctx, "doc_b", b2.ClaimedUntil); err != nil {
				t.Fatal(err)
			}
			b3, err := st.ClaimDocument(ctx, t0, t0.Add(time.Minute))
			if err != nil || b3 == nil || b3.Doc.ID != "doc_b" || b3.Attempts != 1 {
				t.Fatalf("claim after release: %+v %v", b3, err)
			}
			list, err := st.ListDocuments(ctx, page.Params{Limit: 10, Desc: true}, gateway.DocumentFilter{Project: "p", Type: "invoice"})
			if err != nil || len(list) != 1 || list[0].ID != "doc_a" {
				t.Fatalf("list by type: %+v %v", list, err)
			}
			if _, err := st.GetDocument(ctx, "doc_nope"); !errors.Is(err, apierr.ErrNotFound) {
				t.Fatalf("missing document: %v", err)
			}
		})
	}
}

// TestProposalStore checks that a fingerprint is proposed once, and that only an open proposal
// can be resolved.
func TestProposalStore(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			st := b.Open(t).Gateway()
			now := time.Now().UTC().Truncate(time.Microsecond)
			mk := func(id string) *gateway.Proposal {
				return &gateway.Proposal{ID: id, Project: "p", Status: gateway.ProposalOpen, Kind: proposal.KindRuleNeverFires,
					Change: proposal.Change{Op: proposal.OpRemoveRule, Rule: "r"}, CreatedAt: now, UpdatedAt: now, Fingerprint: "rule_never_fires:aipol_1:1:r"}
			}
			if ok, _, err := st.InsertProposal(ctx, mk("prop_1"), nil); err != nil || !ok {
				t.Fatalf("insert: %v %v", ok, err)
			}
			if ok, _, err := st.InsertProposal(ctx, mk("prop_2"), nil); err != nil || ok {
				t.Fatalf("insert of the same fingerprint: %v %v; want skipped", ok, err)
			}
			p, err := st.GetProposal(ctx, "prop_1")
			if err != nil || p.Fingerprint == "" || p.Change.Rule != "r" {
				t.Fatalf("get: %+v %v", p, err)
			}
			p.Status, p.Resolution = gateway.ProposalDismissed, &gateway.Resolution{Actor: "key_1", At: now}
			if err := st.ResolveProposal(ctx, p, nil, "", nil); err != nil {
				t.Fatal(err)
			}
			if err := st.ResolveProposal(ctx, p, nil, "", nil); !errors.Is(err, apierr.ErrConflict) {
				t.Fatalf("resolving twice: %v; want conflict", err)
			}
			l, err := st.ListProposals(ctx, page.Params{Limit: 10, Desc: true}, "p", gateway.ProposalDismissed, proposal.KindRuleNeverFires)
			if err != nil || len(l) != 1 {
				t.Fatalf("list: %d %v", len(l), err)
			}
		})
	}
}
