package proposal_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/edgewan/edgewan/aigw/guard"
	"github.com/edgewan/edgewan/aigw/proposal"
)

func recs(n int, f func(i int, r *proposal.Record)) []proposal.Record {
	out := make([]proposal.Record, n)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range out {
		out[i] = proposal.Record{ID: fmt.Sprintf("req_%03d", i), PolicyID: "aipol_1", PolicyVersion: 2, At: t0.Add(time.Duration(i) * time.Minute)}
		f(i, &out[i])
	}
	return out
}

func TestAnalyze(t *testing.T) {
	pol := guard.Policy{
		Entities:      map[string]guard.Action{"url": guard.ActionAllow, "ip_address": guard.ActionAllow},
		DefaultAction: guard.ActionRedact,
		Block: guard.BlockRules{
			Patterns: []guard.PatternRule{{Name: "employee-id", Regex: `EMP-\d+`}, {Name: "never", Regex: `ZZZ\d`}},
			Keywords: []guard.KeywordRule{{Name: "codename", Words: []string{"falcon"}}},
		},
	}
	ref := proposal.Ref{ID: "aipol_1", Version: 2}
	rs := recs(100, func(i int, r *proposal.Record) {
		if i%5 == 0 { // 20 requests with a URL passed through
			r.Entities = append(r.Entities, proposal.Entity{Type: "url", Action: "allow"})
		}
		if i == 7 { // one IP address: too few to propose
			r.Entities = append(r.Entities, proposal.Entity{Type: "ip_address", Action: "allow"})
		}
		if i%10 == 1 { // employee-id blocks 10 requests, 9 of which hold an SSN
			r.Rules = append(r.Rules, proposal.Hit{Rule: "employee-id", Kind: guard.KindRegex})
			if i != 91 {
				r.Entities = append(r.Entities, proposal.Entity{Type: "ssn", Action: "redact"})
			}
		}
		if i%20 == 3 { // codename fires 5 times on requests with an e-mail 2 of 5: below 80%
			r.Rules = append(r.Rules, proposal.Hit{Rule: "codename", Kind: guard.KindKeyword})
			if i < 40 {
				r.Entities = append(r.Entities, proposal.Entity{Type: "email", Action: "redact"})
			}
		}
	})
	got := proposal.Analyze(pol, ref, rs, proposal.Options{})
	want := map[string]proposal.Change{
		proposal.KindEntityPassedThrough: {Op: proposal.OpSetEntityAction, Entity: "url", Action: "redact"},
		proposal.KindRecurringBlock:      {Op: proposal.OpSetEntityAction, Entity: "ssn", Action: "block"},
		proposal.KindRuleNeverFires:      {Op: proposal.OpRemoveRule, Rule: "never", RuleKind: guard.KindRegex},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d proposals %+v; want %d", len(got), got, len(want))
	}
	for _, p := range got {
		if p.Change != want[p.Kind] {
			t.Errorf("%s: change %+v; want %+v", p.Kind, p.Change, want[p.Kind])
		}
		if p.Evidence.Records != 100 || len(p.Evidence.Samples) == 0 || p.Evidence.Detail == "" || p.Fingerprint == "" || p.Title == "" {
			t.Errorf("%s: incomplete evidence %+v", p.Kind, p)
		}
	}
	for _, p := range got {
		switch p.Kind {
		case proposal.KindEntityPassedThrough:
			if p.Evidence.Matches != 20 || p.Evidence.Share != 0.2 {
				t.Errorf("url evidence %+v; want 20 of 100", p.Evidence)
			}
		case proposal.KindRecurringBlock:
			if p.Evidence.Matches != 9 {
				t.Errorf("ssn evidence %+v; want 9", p.Evidence)
			}
		}
	}

	// Below MinRecords nothing is proposed; a record from another version does not count for
	// never-firing rules.
	if got := proposal.Analyze(pol, ref, rs[:19], proposal.Options{}); len(got) != 0 {
		t.Errorf("19 records: got %d proposals; want none", len(got))
	}
	if got := proposal.Analyze(pol, proposal.Ref{ID: "aipol_1", Version: 3}, rs, proposal.Options{}); len(got) != 2 {
		t.Errorf("version 3 (no record checked by it): got %d proposals; want 2 (no rule_never_fires)", len(got))
	}
	// Once the policy redacts URLs, the old records do not propose it again.
	pol2 := pol
	pol2.Entities = map[string]guard.Action{"url": guard.ActionRedact}
	for _, p := range proposal.Analyze(pol2, ref, rs, proposal.Options{}) {
		if p.Kind == proposal.KindEntityPassedThrough {
			t.Errorf("proposed %+v although the policy no longer allows URLs", p)
		}
	}
}

func TestApply(t *testing.T) {
	pol := guard.DefaultPolicy()
	pol.Block.Patterns = []guard.PatternRule{{Name: "x", Regex: "x+"}}
	got, err := proposal.Apply(pol, proposal.Change{Op: proposal.OpSetEntityAction, Entity: "url", Action: "mask"})
	if err != nil || got.Entities["url"] != guard.ActionMask || pol.Entities["url"] != "" {
		t.Fatalf("set_entity_action: %+v, %v (the original must not change: %+v)", got.Entities, err, pol.Entities)
	}
	if got, err = proposal.Apply(pol, proposal.Change{Op: proposal.OpRemoveRule, Rule: "x"}); err != nil || len(got.Block.Patterns) != 0 || len(pol.Block.Patterns) != 1 {
		t.Fatalf("remove_rule: %+v, %v", got.Block, err)
	}
	for _, c := range []proposal.Change{{Op: proposal.OpRemoveRule, Rule: "gone"}, {Op: proposal.OpSetEntityAction, Entity: "shoe_size"}, {Op: "rename"}} {
		if _, err := proposal.Apply(pol, c); err == nil {
			t.Errorf("Apply(%+v): no error", c)
		}
	}
}
