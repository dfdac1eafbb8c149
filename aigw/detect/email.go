package detect

import "strings"

// emailDetector finds addresses like "jane.doe+tag@mail.example.co.uk". The local part uses the
// common unquoted character set; the domain needs at least two labels and an alphabetic TLD.
type emailDetector struct{}

const (
	emailScore = 0.9
	// roleEmailScore is under DefaultMinScore: a role mailbox (support@, noreply@, payroll@)
	// reaches a team, not a person, so it is not personal data; a stricter MinScore still
	// reports it (subtype "role").
	roleEmailScore = 0.45
)

// roleMailboxes are local parts that name a function rather than a person (RFC 2142's and the
// common ones), compared after dropping a "+tag" and the separators '.', '-' and '_'.
var roleMailboxes = map[string]bool{
	"abuse": true, "accounts": true, "accounting": true, "admin": true, "administrator": true,
	"alerts": true, "billing": true, "bookings": true, "careers": true, "contact": true,
	"contactus": true, "customerservice": true, "customercare": true, "donotreply": true,
	"enquiries": true, "feedback": true, "finance": true, "hello": true, "help": true,
	"helpdesk": true, "hostmaster": true, "hr": true, "info": true, "inquiries": true,
	"invoices": true, "jobs": true, "legal": true, "mailerdaemon": true, "marketing": true,
	"media": true, "newsletter": true, "noc": true, "noreply": true, "notifications": true,
	"office": true, "ops": true, "orders": true, "payroll": true, "postmaster": true,
	"press": true, "privacy": true, "reception": true, "reservations": true, "sales": true,
	"security": true, "service": true, "support": true, "team": true, "webmaster": true,
}

// roleMailbox reports whether the local part local names a function (roleMailboxes).
func roleMailbox(local string) bool {
	if i := strings.IndexByte(local, '+'); i >= 0 {
		local = local[:i]
	}
	var buf [24]byte
	n := 0
	for i := 0; i < len(local); i++ {
		c := local[i]
		if c == '.' || c == '-' || c == '_' {
			continue
		}
		if n == len(buf) {
			return false
		}
		buf[n] = lowerASCII(c)
		n++
	}
	return roleMailboxes[string(buf[:n])]
}

func isLocalByte(c byte) bool {
	return isAlnum(c) || c == '.' || c == '_' || c == '%' || c == '+' || c == '-'
}

func isDomainByte(c byte) bool { return isAlnum(c) || c == '.' || c == '-' }

func (emailDetector) Detect(text string, out []Entity) []Entity {
	for i := 0; i < len(text); {
		k := strings.IndexByte(text[i:], '@')
		if k < 0 {
			break
		}
		at := i + k
		i = at + 1
		// Local part: at most 64 bytes; '@' is not a local byte, so scans never overlap.
		s := at
		for s > 0 && at-s < 64 && isLocalByte(text[s-1]) {
			s--
		}
		if s > 0 && isLocalByte(text[s-1]) {
			continue // longer than 64 bytes
		}
		for s < at && (text[s] == '.' || text[s] == '-') {
			s++
		}
		if s == at || text[at-1] == '.' || strings.Contains(text[s:at], "..") {
			continue
		}
		e := at + 1
		for e < len(text) && e-at <= 254 && isDomainByte(text[e]) {
			e++
		}
		for e > at+1 && (text[e-1] == '.' || text[e-1] == '-') {
			e--
		}
		if !validHostname(text[at+1 : e]) {
			continue
		}
		x := Entity{Type: TypeEmail, Start: s, End: e, Score: emailScore}
		if roleMailbox(text[s:at]) {
			x.Subtype, x.Score = "role", roleEmailScore
		}
		out = append(out, x)
		i = e
	}
	return out
}

// validHostname reports whether h is a DNS name with at least two labels and an alphabetic
// top-level label (or an IDNA "xn--" one).
func validHostname(h string) bool {
	if len(h) < 4 || len(h) > 253 {
		return false
	}
	labels, start := 0, 0
	for i := 0; i <= len(h); i++ {
		if i < len(h) && h[i] != '.' {
			continue
		}
		l := h[start:i]
		if len(l) == 0 || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		labels++
		if i == len(h) { // top-level label
			if strings.HasPrefix(l, "xn--") {
				break
			}
			if len(l) < 2 || len(l) > 24 {
				return false
			}
			for j := 0; j < len(l); j++ {
				if !isAlpha(l[j]) {
					return false
				}
			}
		}
		start = i + 1
	}
	return labels >= 2
}
