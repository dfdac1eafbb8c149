package guard

// Field applies the policy's action for typ to a value that structured extraction (a document
// capture) labelled as that type although the detectors did not report it, e.g. a name after
// "Name:". The value gets the placeholder, mask or hash the session would give it; for allow it
// is returned unchanged. block redacts like redact and reports hit, so the caller can flag it.
func (s *Session) Field(typ, value string) (Redaction, bool) {
	a := s.g.action(typ)
	red := Redaction{Type: typ, Action: a, End: len(value), Score: 1}
	switch a {
	case ActionAllow:
	case ActionMask:
		red.Replacement = mask(typ, "", value)
	default:
		red.Replacement = s.replacement(typ, value, a)
	}
	return red, a == ActionBlock
}

// Document checks one page of a captured document: the entity actions, the pattern and
// keyword rules, and entities whose action is block. A page is not a prompt: the input size
// limit and the prompt-injection heuristics do not apply. A fired rule is reported, not
// refused, as with sanitize.
func (s *Session) Document(text string) Result {
	var r Result
	var hits []entityHit
	r.Text, r.Redactions, hits = s.redactText(text)
	r.Findings = appendEntityFindings(r.Findings, hits)
	r.Findings = s.g.blockRules(text, 0, r.Findings)
	r.Blocked = len(r.Findings) > 0
	return r
}
