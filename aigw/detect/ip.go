package detect

import (
	"net/netip"
	"strings"
)

// ipDetector finds IPv4 addresses in dotted-quad form (no leading zeros, each octet <= 255,
// not part of a longer dotted number such as an OID) and IPv6 addresses that net/netip accepts.
// A version number such as "1.2.3.4" after "version" is not an address: the context word drops it.
type ipDetector struct{}

const (
	ipv4Score      = 0.75
	ipv4SmallScore = 0.45 // every octet one digit ("1.2.3.4"): more often a version or clause number; needs a context word
	ipv6Score      = 0.8
	ipv6ShortScore = 0.55 // "fe80::1"-like, few groups
)

var ipContext = &contextRule{
	pos: newKeywords("ip", "ips", "ipv4", "ipv6", "ip address", "address", "host", "server", "gateway",
		"dns", "subnet", "router", "client", "proxy", "firewall", "ping", "ssh", "from", "to",
		"source", "destination", "src", "dst", "peer", "adresse", "dirección"),
	neg: newKeywords("version", "versions", "ver", "ver.", "v", "v.", "release", "build", "firmware",
		"sdk", "package", "rev", "revision", "section", "chapter", "figure", "table", "step",
		"oid", "patch", "update", "upgrade", "edition", "python", "node", "go", "java", "library"),
	boost:   0.15,
	penalty: 0.5,
}

func (ipDetector) Detect(text string, out []Entity) []Entity {
	out = detectIPv4(text, out)
	return detectIPv6(text, out)
}

func detectIPv4(text string, out []Entity) []Entity {
	for i := 0; i < len(text); {
		if !isDigit(text[i]) {
			i++
			continue
		}
		run := digitsAt(text, i)
		if !numLeftOK(text, i) || (i > 0 && text[i-1] == '.') {
			i = run
			continue
		}
		j, octets, small := i, 0, true
		ok := true
		for octets < 4 {
			e := digitsAt(text, j)
			if e == j || e-j > 3 || (e-j > 1 && text[j] == '0') || atoi(text[j:e]) > 255 {
				ok = false
				break
			}
			if e-j > 1 {
				small = false
			}
			octets++
			j = e
			if octets < 4 {
				if j+1 >= len(text) || text[j] != '.' || !isDigit(text[j+1]) {
					ok = false
					break
				}
				j++
			}
		}
		if ok && (numRightOK(text, j) || cidrSuffix(text, j)) && !(j < len(text) && text[j] == '.' && j+1 < len(text) && isDigit(text[j+1])) {
			score := ipv4Score
			if small {
				score = ipv4SmallScore
			}
			out = append(out, Entity{Type: TypeIP, Start: i, End: j, Score: score})
			i = j
			continue
		}
		i = run
	}
	return out
}

func isIPv6Byte(c byte) bool { return isHex(c) || c == ':' || c == '.' }

func detectIPv6(text string, out []Entity) []Entity {
	for i := 0; i < len(text); {
		k := strings.IndexByte(text[i:], ':')
		if k < 0 {
			break
		}
		// Expand the maximal run of hex digits, colons and dots around the colon.
		s := i + k
		for s > i && isIPv6Byte(text[s-1]) {
			s--
		}
		e := i + k
		for e < len(text) && isIPv6Byte(text[e]) {
			e++
		}
		i = e
		if s > 0 && isWordByte(text[s-1]) {
			// Glued to a word ("ip:fe80::1" expands from "p"): start after a single leading colon.
			for s < e && text[s] != ':' {
				s++
			}
		}
		if s+1 < e && text[s] == ':' && text[s+1] != ':' {
			s++
		}
		for e > s && (text[e-1] == '.' || (text[e-1] == ':' && (e-2 < s || text[e-2] != ':'))) {
			e--
		}
		if e-s < 6 || e-s > 45 || (s > 0 && isAlnum(text[s-1])) || (e < len(text) && isWordByte(text[e])) {
			continue
		}
		a, err := netip.ParseAddr(text[s:e])
		if err != nil || !a.Is6() {
			continue
		}
		colons := strings.Count(text[s:e], ":")
		score := ipv6Score
		if colons < 4 {
			score = ipv6ShortScore
		}
		out = append(out, Entity{Type: TypeIP, Start: s, End: e, Score: score})
	}
	return out
}

// cidrSuffix reports whether a prefix length such as "/24" follows at j; the address is reported
// without it.
func cidrSuffix(text string, j int) bool {
	if j+1 >= len(text) || text[j] != '/' || !isDigit(text[j+1]) {
		return false
	}
	e := digitsAt(text, j+1)
	return e-j-1 <= 2 && atoi(text[j+1:e]) <= 32 && numRightOK(text, e)
}
