package siem

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ParseSinkURL returns the sink a configuration string describes:
//
//	syslog+tls://host[:6514]?ca=/path/ca.pem&facility=local0
//	syslog+tcp://host[:514]
//	https://host/path?token_env=SIEM_TOKEN&secret_env=SIEM_SECRET&format=ndjson
//	http://127.0.0.1:port/path (loopback only)
//
// The query holds the sink's parameters (README.md lists them); unknown ones are errors, so the
// query is never passed on to an HTTP receiver. Secrets are named by environment variable, never
// written in the string.
func ParseSinkURL(s string) (Sink, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("siem: sink %q: %w", s, err)
	}
	if u.Fragment != "" {
		return nil, fmt.Errorf("siem: sink %q: unexpected #fragment", u.Redacted())
	}
	p := params{q: u.Query()}
	var sink Sink
	switch u.Scheme {
	case "syslog+tcp", "syslog+tls":
		sink, err = parseSyslog(u, &p)
	case "https", "http":
		sink, err = parseHTTP(u, &p)
	default:
		err = errors.New("want a syslog+tls, syslog+tcp, https or http URL")
	}
	if err == nil {
		err = p.rest()
	}
	if err != nil {
		return nil, fmt.Errorf("siem: sink %q: %w", u.Redacted(), err)
	}
	return sink, nil
}

// params takes a URL's query parameters one by one and remembers the first bad value.
type params struct {
	q   url.Values
	err error
}

// take returns the parameter's single value and removes it.
func (p *params) take(k string) string {
	vs, ok := p.q[k]
	delete(p.q, k)
	if ok && len(vs) != 1 && p.err == nil {
		p.err = fmt.Errorf("parameter %s given %d times", k, len(vs))
	}
	if len(vs) == 0 {
		return ""
	}
	return vs[0]
}

func (p *params) int(k string) int {
	v := p.take(k)
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if (err != nil || n <= 0) && p.err == nil {
		p.err = fmt.Errorf("parameter %s=%q: want a positive integer", k, v)
	}
	return n
}

func (p *params) duration(k string) time.Duration {
	v := p.take(k)
	if v == "" {
		return 0
	}
	d, err := time.ParseDuration(v)
	if (err != nil || d <= 0) && p.err == nil {
		p.err = fmt.Errorf("parameter %s=%q: want a positive duration such as 10s", k, v)
	}
	return d
}

// env returns the value of the environment variable the parameter names.
func (p *params) env(k string) string {
	name := p.take(k)
	if name == "" {
		return ""
	}
	v := os.Getenv(name)
	if v == "" && p.err == nil {
		p.err = fmt.Errorf("parameter %s: environment variable %s is not set", k, name)
	}
	return v
}

// rest fails on the first bad value or any parameter not taken.
func (p *params) rest() error {
	if p.err != nil {
		return p.err
	}
	if len(p.q) > 0 {
		var ks []string
		for k := range p.q {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		return fmt.Errorf("unknown parameters %s", strings.Join(ks, ", "))
	}
	return nil
}

// tls builds a TLS client configuration from ca, cert, key and server_name.
func (p *params) tls() (*tls.Config, error) {
	ca, cert, key, serverName := p.take("ca"), p.take("cert"), p.take("key"), p.take("server_name")
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: serverName}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("ca: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("ca: no PEM certificate in %s", ca)
		}
	}
	if (cert == "") != (key == "") {
		return nil, errors.New("cert and key go together")
	}
	if cert != "" {
		c, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{c}
	}
	return cfg, nil
}

// noTLS fails when TLS parameters are given to a plain connection.
func (p *params) noTLS(scheme string) error {
	for _, k := range []string{"ca", "cert", "key", "server_name"} {
		if p.q.Has(k) {
			return fmt.Errorf("parameter %s needs TLS, which %s is not", k, scheme)
		}
	}
	return nil
}

func parseSyslog(u *url.URL, p *params) (Sink, error) {
	if u.Hostname() == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.Opaque != "" {
		return nil, errors.New("want scheme://host[:port] with no user or path")
	}
	tlsOn := u.Scheme == "syslog+tls"
	port := u.Port()
	if port == "" {
		port = "514"
		if tlsOn {
			port = "6514" // RFC 5425
		}
	}
	timeout := p.duration("timeout")
	o := SyslogOptions{
		Addr:         net.JoinHostPort(u.Hostname(), port),
		Name:         p.take("name"),
		Facility:     p.take("facility"),
		Hostname:     p.take("hostname"),
		DialTimeout:  timeout,
		WriteTimeout: timeout,
		MaxMessage:   p.int("max_message"),
	}
	if tlsOn {
		cfg, err := p.tls()
		if err != nil {
			return nil, err
		}
		o.TLS = cfg
	} else if err := p.noTLS(u.Scheme); err != nil {
		return nil, err
	}
	if p.err != nil {
		return nil, p.err
	}
	return NewSyslogSink(o)
}

func parseHTTP(u *url.URL, p *params) (Sink, error) {
	o := HTTPOptions{
		Name:        p.take("name"),
		Token:       p.env("token_env"),
		TokenScheme: p.take("token_scheme"),
		Secret:      p.env("secret_env"),
		MaxBody:     p.int("max_body"),
		Timeout:     p.duration("timeout"),
	}
	switch f := p.take("format"); f {
	case "", "json":
	case "ndjson":
		o.NDJSON = true
	default:
		return nil, fmt.Errorf("format %q: want json or ndjson", f)
	}
	hs := p.q["header"]
	delete(p.q, "header")
	for _, h := range hs {
		k, v, ok := strings.Cut(h, ":")
		k = strings.TrimSpace(k)
		if !ok || k == "" || strings.ContainsAny(k, " \t\r\n") || strings.ContainsAny(v, "\r\n") {
			return nil, fmt.Errorf("header %q: want Name: value", h)
		}
		if o.Header == nil {
			o.Header = http.Header{}
		}
		o.Header.Add(textproto.CanonicalMIMEHeaderKey(k), strings.TrimSpace(v))
	}
	if u.Scheme == "https" {
		cfg, err := p.tls()
		if err != nil {
			return nil, err
		}
		o.TLS = cfg
	} else if err := p.noTLS(u.Scheme); err != nil {
		return nil, err
	}
	if p.err != nil {
		return nil, p.err
	}
	target := *u
	target.RawQuery = ""
	o.URL = target.String()
	return NewHTTPSink(o)
}
