package guard

import (
	"fmt"

	"github.com/edgewan/edgewan/aigw/detect"
)

// strength orders the entity actions by how much of a value they let through: block refuses
// it, redact hides it, hash hides it but lets equal values be linked, mask keeps a part, allow
// keeps it all.
var strength = map[Action]int{ActionBlock: 4, ActionRedact: 3, ActionHash: 2, ActionMask: 1, ActionAllow: 0}

// Weakens lists the default protections p turns off or weakens, one line each naming the
// field, its value and the default's, in a fixed order. A policy layered over the defaults
// (ParsePolicy) weakens nothing unless it says so; the gateway shows the list in the publish
// diff and in policy tests so that a weakening is never silent.
func Weakens(p Policy) []string {
	d := DefaultPolicy()
	p = p.withDefaults()
	var out []string
	act := func(pol Policy, typ string) Action {
		if a, ok := pol.Entities[typ]; ok {
			return a
		}
		return pol.DefaultAction
	}
	for _, t := range detect.Types() {
		if a, da := act(p, t), act(d, t); strength[a] < strength[da] {
			out = append(out, fmt.Sprintf("entities.%s: %s (default %s)", t, a, da))
		}
	}
	if p.MinScore > d.MinScore {
		out = append(out, fmt.Sprintf("min_score: %g drops detections the default %g keeps", p.MinScore, d.MinScore))
	}
	if !p.Block.PromptInjection {
		out = append(out, "block.prompt_injection: off (default on)")
	} else if p.Block.PromptInjectionThreshold > d.Block.PromptInjectionThreshold {
		out = append(out, fmt.Sprintf("block.prompt_injection_threshold: %g (default %g) blocks fewer prompts", p.Block.PromptInjectionThreshold, d.Block.PromptInjectionThreshold))
	}
	switch lim, dl := p.Block.MaxInputBytes, d.Block.MaxInputBytes; {
	case lim == 0:
		out = append(out, fmt.Sprintf("block.max_input_bytes: no limit (default %d)", dl))
	case lim > dl:
		out = append(out, fmt.Sprintf("block.max_input_bytes: %d (default %d)", lim, dl))
	}
	if p.Output.SkipEntities {
		out = append(out, "output.skip_entities: on, responses are not redacted (default off)")
	}
	return out
}
