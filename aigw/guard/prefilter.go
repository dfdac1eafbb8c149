package guard

import (
	"regexp/syntax"
	"slices"
)

// Block patterns run through Go's regexp (RE2: linear time, but a few hundred nanoseconds per
// byte for a case-insensitive pattern). Most patterns contain a literal that every match must
// contain ("project" in `(?i)\bproject\s+falcon\b`); one keyword pass over the text finds
// which of those literals occur, and only their patterns run.

// prefilterMaxLiterals caps the alternatives kept for one pattern.
const prefilterMaxLiterals = 32

// requiredLiterals returns strings one of which occurs (up to case) in every match of expr, or
// nil when none can be derived or they would be too short to help.
func requiredLiterals(expr string) []string {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil
	}
	lits := required(re.Simplify())
	for _, l := range lits {
		if len(l) < 2 {
			return nil
		}
	}
	return lits
}

// required derives the literal set of one syntax node.
func required(re *syntax.Regexp) []string {
	switch re.Op {
	case syntax.OpLiteral:
		return []string{string(re.Rune)}
	case syntax.OpCapture, syntax.OpPlus:
		return required(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return required(re.Sub[0])
		}
	case syntax.OpConcat:
		var best []string
		for _, sub := range re.Sub {
			if l := required(sub); l != nil && better(l, best) {
				best = l
			}
		}
		return best
	case syntax.OpAlternate:
		var all []string
		for _, sub := range re.Sub {
			l := required(sub)
			if l == nil || len(all)+len(l) > prefilterMaxLiterals {
				return nil
			}
			all = append(all, l...)
		}
		slices.Sort(all)
		return slices.Compact(all)
	}
	return nil
}

// better prefers the set whose shortest literal is longer, then the smaller set.
func better(a, b []string) bool {
	if b == nil {
		return true
	}
	short := func(s []string) int {
		n := len(s[0])
		for _, x := range s {
			n = min(n, len(x))
		}
		return n
	}
	if sa, sb := short(a), short(b); sa != sb {
		return sa > sb
	}
	return len(a) < len(b)
}
