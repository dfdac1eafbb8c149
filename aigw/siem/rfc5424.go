package siem

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/edgewan/edgewan/aigw/gateway"
)

// RFC 5424 fields of every message.
const (
	sdID            = "edgewan@32473" // 32473 is the enterprise number RFC 5612 reserves for examples
	appName         = "edgewan"
	msgID           = "aigw-audit"
	severityWarning = 4 // blocked requests
	severityNotice  = 5 // the others
	timestampFormat = "2006-01-02T15:04:05.000000Z07:00"
	bom             = "\xEF\xBB\xBF"
)

// facilities are the RFC 5424 facility codes by their usual names.
var facilities = map[string]int{
	"kern": 0, "user": 1, "mail": 2, "daemon": 3, "auth": 4, "syslog": 5, "lpr": 6, "news": 7,
	"uucp": 8, "cron": 9, "authpriv": 10, "ftp": 11, "ntp": 12, "audit": 13, "alert": 14, "clock": 15,
	"local0": 16, "local1": 17, "local2": 18, "local3": 19, "local4": 20, "local5": 21, "local6": 22, "local7": 23,
}

// parseFacility reads a facility name or code; "" is local0.
func parseFacility(s string) (int, error) {
	if s == "" {
		return facilities["local0"], nil
	}
	if f, ok := facilities[s]; ok {
		return f, nil
	}
	if f, err := strconv.Atoi(s); err == nil && f >= 0 && f <= 23 {
		return f, nil
	}
	return 0, fmt.Errorf("unknown syslog facility %q (want kern, user, ..., local0-local7, or 0-23)", s)
}

// validHeaderField reports whether s fits an RFC 5424 header field of at most max PRINTUSASCII.
func validHeaderField(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 33 || s[i] > 126 {
			return false
		}
	}
	return true
}

// formatter writes audit records as octet-counted RFC 5424 messages. It keeps its buffers
// between messages; one formatter serves one goroutine.
type formatter struct {
	facility   int
	hostname   string
	maxMessage int // bytes of one message; 0 is no limit

	msg   bytes.Buffer
	enc   *json.Encoder // on msg
	types []string
}

func newFormatter(facility int, hostname string, maxMessage int) *formatter {
	f := &formatter{facility: facility, hostname: hostname, maxMessage: maxMessage}
	f.enc = json.NewEncoder(&f.msg)
	f.enc.SetEscapeHTML(false)
	return f
}

// appendFrame appends r to dst as MSG-LEN SP SYSLOG-MSG (RFC 6587 octet counting). A record
// whose message would be larger than maxMessage, or whose input is not valid JSON, goes without
// input and output, marked "truncated":true.
func (f *formatter) appendFrame(dst []byte, r *gateway.Record) ([]byte, error) {
	err := f.message(r, false)
	if err != nil || (f.maxMessage > 0 && f.msg.Len() > f.maxMessage) {
		err = f.message(r, true)
	}
	if err != nil {
		return dst, fmt.Errorf("record %d: %w", r.Seq, err)
	}
	dst = strconv.AppendInt(dst, int64(f.msg.Len()), 10)
	dst = append(dst, ' ')
	return append(dst, f.msg.Bytes()...), nil
}

// message formats r into f.msg.
func (f *formatter) message(r *gateway.Record, truncate bool) error {
	f.msg.Reset()
	b := f.msg.AvailableBuffer()
	sev := severityNotice
	if r.Blocked {
		sev = severityWarning
	}
	b = append(b, '<')
	b = strconv.AppendInt(b, int64(f.facility*8+sev), 10)
	b = append(b, ">1 "...)
	if r.CreatedAt.IsZero() {
		b = append(b, '-')
	} else {
		b = r.CreatedAt.UTC().AppendFormat(b, timestampFormat)
	}
	b = append(b, ' ')
	b = append(b, f.hostname...)
	b = append(b, " "+appName+" - "+msgID+" "...)
	b = f.appendSD(b, r)
	b = append(b, " "+bom...)
	f.msg.Write(b)
	if err := encodeRecord(f.enc, r, truncate); err != nil {
		return err
	}
	f.msg.Truncate(f.msg.Len() - 1) // the encoder's newline
	return nil
}

// appendSD appends the record's STRUCTURED-DATA element.
func (f *formatter) appendSD(b []byte, r *gateway.Record) []byte {
	b = append(b, "["+sdID...)
	b = appendParam(b, "request_id", r.ID)
	b = append(b, ` seq="`...)
	b = strconv.AppendInt(b, r.Seq, 10)
	b = append(b, '"')
	b = appendParam(b, "project", r.Project)
	b = appendParam(b, "kind", r.Kind)
	if r.Model != "" {
		b = appendParam(b, "model", r.Model)
	}
	b = append(b, ` blocked="`...)
	b = strconv.AppendBool(b, r.Blocked)
	b = append(b, '"')
	if r.PolicyID != "" {
		b = appendParam(b, "policy", r.PolicyID)
		b = append(b, ` policy_version="`...)
		b = strconv.AppendInt(b, int64(r.PolicyVersion), 10)
		b = append(b, '"')
	}
	b = append(b, ` status="`...)
	b = strconv.AppendInt(b, int64(r.Status), 10)
	b = append(b, `" latency_ms="`...)
	b = strconv.AppendFloat(b, r.LatencyMs, 'f', -1, 64)
	b = append(b, '"')
	if len(r.Redactions) > 0 {
		f.types = f.types[:0]
		for _, x := range r.Redactions {
			f.types = append(f.types, x.Type)
		}
		slices.Sort(f.types)
		f.types = slices.Compact(f.types)
		b = append(b, ` entities="`...)
		for i, t := range f.types {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendSDValue(b, t)
		}
		b = append(b, '"')
	}
	return append(b, ']')
}

// appendParam appends SP name="value"; name must be a valid PARAM-NAME.
func appendParam(b []byte, name, value string) []byte {
	b = append(b, ' ')
	b = append(b, name...)
	b = append(b, '=', '"')
	b = appendSDValue(b, value)
	return append(b, '"')
}

// appendSDValue appends s as an RFC 5424 PARAM-VALUE (without the quotes): '"', '\' and ']'
// escaped with a backslash, as section 6.3.3 requires, and invalid UTF-8 replaced by U+FFFD,
// since a PARAM-VALUE is UTF-8.
func appendSDValue(b []byte, s string) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c == '"' || c == '\\' || c == ']' {
				b = append(b, '\\')
			}
			b = append(b, c)
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b = append(b, "\uFFFD"...)
		} else {
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return b
}
