package ingest

import (
	"strconv"

	"github.com/edgewan/edgewan/telemetry"
)

// decodeReport is telemetry.DecodeReport with a fast path for the payloads agents send.
//
// encoding/json took about 70% of the engine's CPU per report (reflection, a validating
// pre-scan, 15 allocations), and the engine takes 10,000 reports a second per 10,000 sites.
// fastDecode parses the common shape of a Report by hand, without reflection and with at most
// a couple of allocations; anything outside that shape (an unknown or repeated key, a null, an
// escaped or non-ASCII string, a number a field cannot hold, malformed JSON, trailing data)
// makes it give up, and the payload goes to telemetry.DecodeReport, which decodes it as
// before and produces the same result or error. So the fast path only ever accepts what
// encoding/json decodes to the same Report (decode_test.go checks this, also by fuzzing).
func decodeReport(site string, payload []byte, r *telemetry.Report) error {
	if len(payload) <= telemetry.MaxPayload && fastDecode(site, payload, r) {
		return r.Validate(site)
	}
	return telemetry.DecodeReport(site, payload, r)
}

// Keys of a Report and a TransportWindow, as bits of a mask of the keys seen.
const (
	kV = 1 << iota
	kSite
	kDevice
	kSeq
	kTs
	kWindow
	kTransports
	kHeld
)

const (
	kName = 1 << iota
	kMethod
	kSent
	kLost
	kLatency
	kP50
	kP95
	kMin
	kMax
	kJitter
	kStdDev
	kDown
	kJitterN
	kJitterMean
	kJitterSD
)

// jsonScanner walks a payload. Every method reports false when the input leaves the subset
// fastDecode handles.
type jsonScanner struct {
	b []byte
	i int
}

func (s *jsonScanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// next skips whitespace and returns the next byte (0 at the end).
func (s *jsonScanner) next() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *jsonScanner) expect(c byte) bool {
	if s.next() != c {
		return false
	}
	s.i++
	return true
}

// str returns the bytes of a string of printable ASCII without escapes.
func (s *jsonScanner) str() ([]byte, bool) {
	if !s.expect('"') {
		return nil, false
	}
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return s.b[start : s.i-1], true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return nil, false
		}
		s.i++
	}
	return nil, false
}

// number returns a number token, checked against JSON's grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *jsonScanner) number() ([]byte, bool) {
	s.ws()
	start := s.i
	b := s.b
	digits := func() int {
		n := 0
		for s.i < len(b) && b[s.i] >= '0' && b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	if s.i < len(b) && b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(b) && b[s.i] == '0':
		s.i++
	case digits() == 0:
		return nil, false
	}
	if s.i < len(b) && b[s.i] == '.' {
		s.i++
		if digits() == 0 {
			return nil, false
		}
	}
	if s.i < len(b) && (b[s.i] == 'e' || b[s.i] == 'E') {
		s.i++
		if s.i < len(b) && (b[s.i] == '+' || b[s.i] == '-') {
			s.i++
		}
		if digits() == 0 {
			return nil, false
		}
	}
	return b[start:s.i], true
}

func (s *jsonScanner) int() (int, bool) {
	tok, ok := s.number()
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(string(tok), 10, 0) // no allocation: the conversion does not escape
	return int(n), err == nil
}

func (s *jsonScanner) uint64() (uint64, bool) {
	tok, ok := s.number()
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(string(tok), 10, 64)
	return n, err == nil
}

func (s *jsonScanner) float() (float64, bool) {
	tok, ok := s.number()
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(tok), 64)
	return f, err == nil
}

func (s *jsonScanner) bool() (v, ok bool) {
	s.ws()
	switch {
	case len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "true":
		s.i += 4
		return true, true
	case len(s.b)-s.i >= 5 && string(s.b[s.i:s.i+5]) == "false":
		s.i += 5
		return false, true
	}
	return false, false
}

// intern returns b as a string, one of the candidates when it equals one (no allocation).
func intern(b []byte, candidates ...string) string {
	for _, c := range candidates {
		if string(b) == c {
			return c
		}
	}
	return string(b)
}

// fastDecode decodes payload into r like DecodeReport's json.Unmarshal (r reset first, its
// transport slice reused), or reports false, leaving r to be reset again by the caller's
// fallback.
func fastDecode(site string, payload []byte, r *telemetry.Report) bool {
	// Transport names and methods of r's last use: most reports name the same ones.
	var prev [4]string
	for i := range min(len(prev), len(r.Transport)) {
		prev[i] = r.Transport[i].Name
	}
	ts := r.Transport[:cap(r.Transport)]
	clear(ts)
	*r = telemetry.Report{Transport: ts[:0]}

	s := jsonScanner{b: payload}
	if !s.expect('{') {
		return false
	}
	seen := 0
	if s.next() == '}' {
		s.i++
	} else {
		for {
			key, ok := s.str()
			if !ok || !s.expect(':') {
				return false
			}
			var bit int
			switch string(key) {
			case "v":
				bit = kV
				r.V, ok = s.int()
			case "site":
				bit = kSite
				var v []byte
				if v, ok = s.str(); ok {
					r.Site = intern(v, site)
				}
			case "device":
				bit = kDevice
				var v []byte
				if v, ok = s.str(); ok {
					r.Device = string(v)
				}
			case "seq":
				bit = kSeq
				r.Seq, ok = s.uint64()
			case "held":
				bit = kHeld
				r.Held, ok = s.uint64()
			case "ts":
				bit = kTs
				s.ws()
				start := s.i
				if _, ok = s.str(); ok {
					ok = r.Time.UnmarshalJSON(payload[start:s.i]) == nil
				}
			case "window_ms":
				bit = kWindow
				r.WindowMs, ok = s.int()
			case "transports":
				bit = kTransports
				ok = s.transports(r, &prev)
			default:
				return false
			}
			if !ok || seen&bit != 0 {
				return false
			}
			seen |= bit
			if s.expect(',') {
				continue
			}
			if !s.expect('}') {
				return false
			}
			break
		}
	}
	s.ws()
	return s.i == len(payload)
}

// transports decodes the transports array into r.Transport.
func (s *jsonScanner) transports(r *telemetry.Report, prev *[4]string) bool {
	if !s.expect('[') {
		return false
	}
	if s.next() == ']' {
		s.i++
		return true
	}
	for n := 0; ; n++ {
		if n > telemetry.MaxTransports {
			return false // Validate refuses it anyway; leave the error to the fallback
		}
		r.Transport = append(r.Transport, telemetry.TransportWindow{})
		t := &r.Transport[len(r.Transport)-1]
		if !s.expect('{') {
			return false
		}
		seen := 0
		if s.next() == '}' {
			s.i++
		} else {
			for {
				key, ok := s.str()
				if !ok || !s.expect(':') {
					return false
				}
				var bit int
				switch string(key) {
				case "name":
					bit = kName
					var v []byte
					if v, ok = s.str(); ok {
						t.Name = intern(v, prev[:]...)
					}
				case "method":
					bit = kMethod
					var v []byte
					if v, ok = s.str(); ok {
						t.Method = intern(v, "icmp", "tcp", "http")
					}
				case "sent":
					bit = kSent
					t.Sent, ok = s.int()
				case "lost":
					bit = kLost
					t.Lost, ok = s.int()
				case "latency_ms":
					bit = kLatency
					t.LatencyMs, ok = s.float()
				case "p50_ms":
					bit = kP50
					t.P50Ms, ok = s.float()
				case "p95_ms":
					bit = kP95
					t.P95Ms, ok = s.float()
				case "min_ms":
					bit = kMin
					t.MinMs, ok = s.float()
				case "max_ms":
					bit = kMax
					t.MaxMs, ok = s.float()
				case "jitter_ms":
					bit = kJitter
					t.JitterMs, ok = s.float()
				case "stddev_ms":
					bit = kStdDev
					t.StdDevMs, ok = s.float()
				case "down":
					bit = kDown
					t.Down, ok = s.bool()
				case "jitter_n":
					bit = kJitterN
					t.JitterN, ok = s.int()
				case "jitter_mean_ms":
					bit = kJitterMean
					t.JitterMeanMs, ok = s.float()
				case "jitter_sd_ms":
					bit = kJitterSD
					t.JitterSDMs, ok = s.float()
				default:
					return false
				}
				if !ok || seen&bit != 0 {
					return false
				}
				seen |= bit
				if s.expect(',') {
					continue
				}
				if !s.expect('}') {
					return false
				}
				break
			}
		}
		if s.expect(',') {
			continue
		}
		return s.expect(']')
	}
}
