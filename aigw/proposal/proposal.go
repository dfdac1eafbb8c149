// Package proposal is the gateway's Automatic mode: it reads a project's recent audit records
// against its policy and proposes policy changes, each with its evidence. It does no I/O.
package proposal

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/edgewan/edgewan/aigw/detect"
	"github.com/edgewan/edgewan/aigw/guard"
)

// Kinds of proposals.
const (
	// KindEntityPassedThrough: an entity type the policy lets through (allow) turns up often.
	KindEntityPassedThrough = "entity_passed_through"
	// KindRecurringBlock: a hand-written block rule (pattern or keyword) keeps refusing requests
	// that hold one entity type: blocking the type says it once, for every wording.
	KindRecurringBlock = "recurring_block"
	// KindRuleNeverFires: a pattern or keyword rule matched none of the requests its policy
	// version checked.
	KindRuleNeverFires = "rule_never_fires"
)

// Change operations.
const (
	OpSetEntityAction = "set_entity_action"
	OpRemoveRule      = "remove_rule"
)

// Record is what the analysis reads of an audit record.
type Record struct {
	ID            string
	PolicyID      string
	PolicyVersion int
	Entities      []Entity // every entity found, with the action applied
	Rules         []Hit    // block rules that fired
	At            time.Time
}

// Entity is one entity of a record.
type Entity struct{ Type, Action string }

// Hit is one block rule that fired.
type Hit struct{ Rule, Kind string }

// Change is a proposed change to a policy's content.
type Change struct {
	Op       string `json:"op"`                  // set_entity_action, remove_rule
	Entity   string `json:"entity,omitempty"`    // set_entity_action
	Action   string `json:"action,omitempty"`    // set_entity_action
	Rule     string `json:"rule,omitempty"`      // remove_rule
	RuleKind string `json:"rule_kind,omitempty"` // remove_rule: regex or keyword
}

// Evidence is why a change is proposed.
type Evidence struct {
	Records int       `json:"records"` // audit records analysed
	Matches int       `json:"matches"` // records that support the proposal
	Share   float64   `json:"share"`   // matches / records
	Samples []string  `json:"samples"` // up to 5 request IDs of matching records (or of records checked, for a rule that never fires)
	Since   time.Time `json:"since"`
	Until   time.Time `json:"until"`
	Detail  string    `json:"detail"`
}

// Proposal is one proposed change with its evidence. Fingerprint identifies the change against
// the policy version it was made for, so a dismissed proposal is not made again until the
// policy changes.
type Proposal struct {
	Kind        string   `json:"kind"`
	Title       string   `json:"title"`
	Change      Change   `json:"change"`
	Evidence    Evidence `json:"evidence"`
	Fingerprint string   `json:"-"`
}

// Options are the analysis thresholds. Zero values mean the defaults.
type Options struct {
	MinRecords int     // records needed before anything is proposed; default 20
	MinMatches int     // matching records a proposal needs; default 5
	MinShare   float64 // and their share of the records; default 0.05
	CoOccur    float64 // recurring_block: share of a rule's hits holding the entity type; default 0.8
}

func (o *Options) defaults() {
	if o.MinRecords <= 0 {
		o.MinRecords = 20
	}
	if o.MinMatches <= 0 {
		o.MinMatches = 5
	}
	if o.MinShare <= 0 {
		o.MinShare = 0.05
	}
	if o.CoOccur <= 0 {
		o.CoOccur = 0.8
	}
}

// Ref names the policy version the analysis compares with ("default", 0 for the built-in one).
type Ref struct {
	ID      string
	Version int
}

// Analyze proposes changes to policy p (the project's active version, ref) from recs.
func Analyze(p guard.Policy, ref Ref, recs []Record, o Options) []Proposal {
	o.defaults()
	if len(recs) < o.MinRecords {
		return nil
	}
	since, until := recs[0].At, recs[0].At
	for _, r := range recs {
		if r.At.Before(since) {
			since = r.At
		}
		if r.At.After(until) {
			until = r.At
		}
	}
	ev := func(matches int, samples []string, detail string) Evidence {
		return Evidence{Records: len(recs), Matches: matches, Share: round3(float64(matches) / float64(len(recs))),
			Samples: samples, Since: since, Until: until, Detail: detail}
	}
	fp := func(kind, target string) string { return fmt.Sprintf("%s:%s:%d:%s", kind, ref.ID, ref.Version, target) }
	enough := func(n int) bool { return n >= o.MinMatches && float64(n)/float64(len(recs)) >= o.MinShare }
	var out []Proposal

	// Entity types passed through.
	passed := map[string][]string{}
	for _, r := range recs {
		seen := map[string]bool{}
		for _, e := range r.Entities {
			if e.Action == string(guard.ActionAllow) && !seen[e.Type] && actionOf(p, e.Type) == guard.ActionAllow {
				seen[e.Type] = true
				passed[e.Type] = append(passed[e.Type], r.ID)
			}
		}
	}
	for _, typ := range sortedKeys(passed) {
		ids := passed[typ]
		if !enough(len(ids)) {
			continue
		}
		action := guard.ActionRedact
		if typ == detect.TypeCreditCard || typ == detect.TypeIBAN {
			action = guard.ActionMask
		}
		out = append(out, Proposal{Kind: KindEntityPassedThrough,
			Title:       fmt.Sprintf("%s: %s instead of allow", typ, action),
			Change:      Change{Op: OpSetEntityAction, Entity: typ, Action: string(action)},
			Evidence:    ev(len(ids), sample(ids), fmt.Sprintf("%d of %d requests carried %s entities to the model unchanged (action allow)", len(ids), len(recs), typ)),
			Fingerprint: fp(KindEntityPassedThrough, typ)})
	}

	// Hand-written rules that keep blocking requests holding one entity type.
	ruleHits := map[string][]Record{}
	for _, r := range recs {
		seen := map[string]bool{}
		for _, h := range r.Rules {
			if (h.Kind == guard.KindRegex || h.Kind == guard.KindKeyword) && !seen[h.Rule] {
				seen[h.Rule] = true
				ruleHits[h.Rule] = append(ruleHits[h.Rule], r)
			}
		}
	}
	for _, rule := range sortedKeys(ruleHits) {
		hits := ruleHits[rule]
		if !enough(len(hits)) {
			continue
		}
		types := map[string][]string{}
		for _, r := range hits {
			seen := map[string]bool{}
			for _, e := range r.Entities {
				if !seen[e.Type] {
					seen[e.Type] = true
					types[e.Type] = append(types[e.Type], r.ID)
				}
			}
		}
		for _, typ := range sortedKeys(types) {
			ids := types[typ]
			if float64(len(ids)) < o.CoOccur*float64(len(hits)) || actionOf(p, typ) == guard.ActionBlock {
				continue
			}
			out = append(out, Proposal{Kind: KindRecurringBlock,
				Title:  fmt.Sprintf("%s: block, as rule %s keeps doing by hand", typ, rule),
				Change: Change{Op: OpSetEntityAction, Entity: typ, Action: string(guard.ActionBlock)},
				Evidence: ev(len(ids), sample(ids), fmt.Sprintf("rule %s blocked %d requests; %d of them (%.0f%%) held %s entities, which the policy does not block",
					rule, len(hits), len(ids), 100*float64(len(ids))/float64(len(hits)), typ)),
				Fingerprint: fp(KindRecurringBlock, rule+":"+typ)})
		}
	}

	// Rules of the active version that never fired on the requests it checked.
	var checked []string
	fired := map[string]bool{}
	for _, r := range recs {
		if r.PolicyID != ref.ID || r.PolicyVersion != ref.Version {
			continue
		}
		checked = append(checked, r.ID)
		for _, h := range r.Rules {
			fired[h.Rule] = true
		}
	}
	if len(checked) >= o.MinRecords {
		type named struct{ name, kind string }
		var rules []named
		for _, x := range p.Block.Patterns {
			rules = append(rules, named{x.Name, guard.KindRegex})
		}
		for _, x := range p.Block.Keywords {
			rules = append(rules, named{x.Name, guard.KindKeyword})
		}
		for _, x := range rules {
			if fired[x.name] {
				continue
			}
			e := ev(0, sample(checked), fmt.Sprintf("rule %s (%s) matched none of the %d requests policy %s v%d checked", x.name, x.kind, len(checked), ref.ID, ref.Version))
			e.Records = len(checked)
			out = append(out, Proposal{Kind: KindRuleNeverFires,
				Title:       fmt.Sprintf("remove rule %s: it never fires", x.name),
				Change:      Change{Op: OpRemoveRule, Rule: x.name, RuleKind: x.kind},
				Evidence:    e,
				Fingerprint: fp(KindRuleNeverFires, x.name)})
		}
	}
	return out
}

// Apply returns p with the change made, or an error when it no longer applies (the rule is gone).
func Apply(p guard.Policy, c Change) (guard.Policy, error) {
	switch c.Op {
	case OpSetEntityAction:
		if !slices.Contains(detect.Types(), c.Entity) {
			return p, fmt.Errorf("unknown entity type %q", c.Entity)
		}
		ents := make(map[string]guard.Action, len(p.Entities)+1)
		for k, v := range p.Entities {
			ents[k] = v
		}
		ents[c.Entity] = guard.Action(c.Action)
		p.Entities = ents
		return p, nil
	case OpRemoveRule:
		n := len(p.Block.Patterns) + len(p.Block.Keywords)
		p.Block.Patterns = slices.DeleteFunc(slices.Clone(p.Block.Patterns), func(x guard.PatternRule) bool { return x.Name == c.Rule })
		p.Block.Keywords = slices.DeleteFunc(slices.Clone(p.Block.Keywords), func(x guard.KeywordRule) bool { return x.Name == c.Rule })
		if len(p.Block.Patterns)+len(p.Block.Keywords) == n {
			return p, fmt.Errorf("the policy has no rule %q any more", c.Rule)
		}
		return p, nil
	}
	return p, fmt.Errorf("unknown change %q", c.Op)
}

func actionOf(p guard.Policy, typ string) guard.Action {
	if a, ok := p.Entities[typ]; ok {
		return a
	}
	if p.DefaultAction == "" {
		return guard.ActionRedact
	}
	return p.DefaultAction
}

func sample(ids []string) []string {
	if len(ids) > 5 {
		ids = ids[len(ids)-5:] // the latest
	}
	return slices.Clone(ids)
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func round3(f float64) float64 { return float64(int(f*1000+0.5)) / 1000 }
