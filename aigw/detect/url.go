package detect

import (
	"net/netip"
	"strings"
)

// urlDetector finds URLs with a known scheme ("https://...", "postgres://...") and web
// addresses starting with "www.". Bare domains ("example.com") are not reported: in prompts
// they are mostly file names, package names and code.
type urlDetector struct{}

const (
	urlScore     = 0.95 // high enough to win over an e-mail address or token inside the URL
	urlWWWScore  = 0.85
	urlMaxScheme = 16
)

var urlSchemes = map[string]bool{
	"http": true, "https": true, "ftp": true, "ftps": true, "sftp": true, "ws": true, "wss": true,
	"ssh": true, "git": true, "svn": true, "ldap": true, "ldaps": true, "smb": true, "rtsp": true,
	"postgres": true, "postgresql": true, "mysql": true, "mongodb": true, "mongodb+srv": true,
	"redis": true, "rediss": true, "amqp": true, "amqps": true, "s3": true, "gs": true,
}

func isSchemeByte(c byte) bool { return isAlnum(c) || c == '+' || c == '.' || c == '-' }

// isURLByte reports the bytes allowed in the path, query and fragment (RFC 3986 plus
// non-ASCII for internationalised URLs).
func isURLByte(c byte) bool {
	if c >= 0x80 {
		return true
	}
	if isAlnum(c) {
		return true
	}
	return strings.IndexByte("-._~:/?#[]@!$&'()*+,;=%", c) >= 0
}

func (urlDetector) Detect(text string, out []Entity) []Entity {
	// Scheme URLs.
	for i := 0; i < len(text); {
		k := strings.Index(text[i:], "://")
		if k < 0 {
			break
		}
		colon := i + k
		i = colon + 3
		s := colon
		for s > 0 && colon-s < urlMaxScheme && isSchemeByte(text[s-1]) {
			s--
		}
		for s < colon && !isAlpha(text[s]) {
			s++
		}
		if s == colon || (s > 0 && isSchemeByte(text[s-1])) {
			continue
		}
		var scheme [urlMaxScheme]byte
		n := copy(scheme[:], text[s:colon])
		for k := range n {
			scheme[k] = lowerASCII(scheme[k])
		}
		if !urlSchemes[string(scheme[:n])] {
			continue
		}
		end, ok := urlRest(text, colon+3)
		if !ok {
			continue
		}
		out = append(out, Entity{Type: TypeURL, Start: s, End: end, Score: urlScore})
		i = end
	}
	// "www." addresses without a scheme.
	var ww wwwFinder
	for i := 0; i < len(text); {
		s := ww.next(text, i)
		if s < 0 {
			break
		}
		i = s + 4
		if s > 0 && (isWordByte(text[s-1]) || text[s-1] == '/' || text[s-1] == '.' || text[s-1] == '@') {
			continue
		}
		end, ok := urlRest(text, s)
		if !ok {
			continue
		}
		out = append(out, Entity{Type: TypeURL, Start: s, End: end, Score: urlWWWScore})
		i = end
	}
	return out
}

// urlRest parses the authority starting at i and the path after it, returning the end of the
// URL. It fails when the host is not a domain name, "localhost" or an IP address.
func urlRest(text string, i int) (int, bool) {
	j := i // end of the authority
	for j < len(text) && isURLByte(text[j]) && text[j] != '/' && text[j] != '?' && text[j] != '#' {
		j++
	}
	hs := i
	if at := strings.LastIndexByte(text[i:j], '@'); at >= 0 {
		hs = i + at + 1
	}
	var end int
	if hs < j && text[hs] == '[' {
		k := strings.IndexByte(text[hs:j], ']')
		if k < 0 {
			return 0, false
		}
		if _, err := netip.ParseAddr(text[hs+1 : hs+k]); err != nil {
			return 0, false
		}
		end = hs + k + 1
	} else {
		end = hs
		for end < j && isDomainByte(text[end]) {
			end++
		}
		for end > hs && (text[end-1] == '.' || text[end-1] == '-') {
			end--
		}
		if !validURLHost(text[hs:end]) {
			return 0, false
		}
	}
	if end+1 < len(text) && text[end] == ':' && isDigit(text[end+1]) {
		if p := digitsAt(text, end+1); p-end-1 <= 5 {
			end = p
		}
	}
	if end < j {
		// Punctuation after the host ends the URL: "see https://example.com, then".
		return end, true
	}
	for end < len(text) && isURLByte(text[end]) {
		end++
	}
	return trimURL(text, i, end), true
}

func validURLHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	if strings.Trim(host, "0123456789.") == "" { // parse only IP-shaped hosts: errors allocate
		_, err := netip.ParseAddr(host)
		return err == nil
	}
	return validHostname(host)
}

// trimURL drops trailing punctuation that belongs to the sentence, and closing brackets that
// have no opening one inside the URL. Bracket counts are taken once, so the cost is linear.
func trimURL(text string, start, end int) int {
	var open, close [2]int // '(' ')' and '[' ']'
	for _, c := range []byte(text[start:end]) {
		switch c {
		case '(':
			open[0]++
		case ')':
			close[0]++
		case '[':
			open[1]++
		case ']':
			close[1]++
		}
	}
	for end > start {
		switch c := text[end-1]; c {
		case '.', ',', ';', ':', '!', '?', '\'', '"', '*':
			end--
			continue
		case ')', ']':
			k := 0
			if c == ']' {
				k = 1
			}
			if open[k] < close[k] {
				close[k]--
				end--
				continue
			}
		}
		break
	}
	return end
}

// wwwFinder finds "www." in any letter case. It looks for "w." and "W." with the fast
// strings.Index and remembers where each occurs next, so repeated calls stay linear.
type wwwFinder struct {
	lower, upper int // absolute index of the next "w." / "W." at or after the last search; -1: none
	init         bool
}

// next returns the index of the first "www." at or after i, or -1.
func (f *wwwFinder) next(text string, i int) int {
	if !f.init {
		f.lower, f.upper, f.init = -2, -2, true
	}
	find := func(pos *int, pat string, from int) {
		if *pos == -1 || *pos >= from {
			return
		}
		if k := strings.Index(text[from:], pat); k >= 0 {
			*pos = from + k
		} else {
			*pos = -1
		}
	}
	from := i + 2 // "w." ends the pattern two bytes in
	for {
		if from+2 > len(text) {
			return -1
		}
		find(&f.lower, "w.", from)
		find(&f.upper, "W.", from)
		p := f.lower
		if p < 0 || f.upper >= 0 && f.upper < p {
			p = f.upper
		}
		if p < 0 {
			return -1
		}
		if lowerASCII(text[p-1]) == 'w' && lowerASCII(text[p-2]) == 'w' {
			return p - 2
		}
		from = p + 1
	}
}
