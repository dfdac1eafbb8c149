package siem

import (
	"strings"
	"testing"
)

func TestParseSinkURL(t *testing.T) {
	p := newPKI(t)
	t.Setenv("SIEM_TEST_TOKEN", "tok")
	for _, tc := range []struct {
		name, url string
		wantName  string // "" with wantErr
		wantErr   string
	}{
		{name: "syslog tcp", url: "syslog+tcp://siem.example:1514", wantName: "syslog+tcp://siem.example:1514"},
		{name: "syslog tcp default port", url: "syslog+tcp://siem.example", wantName: "syslog+tcp://siem.example:514"},
		{name: "syslog tls", url: "syslog+tls://siem.example?ca=" + p.caFile + "&facility=local4", wantName: "syslog+tls://siem.example:6514"},
		{name: "syslog tls client cert", url: "syslog+tls://[::1]:6514?cert=" + p.certFile + "&key=" + p.keyFile + "&server_name=siem", wantName: "syslog+tls://[::1]:6514"},
		{name: "syslog named", url: "syslog+tcp://10.0.0.1:514?name=soc&hostname=gw-7&max_message=8192&timeout=5s", wantName: "soc"},
		{name: "https", url: "https://siem.example/ingest?token_env=SIEM_TEST_TOKEN", wantName: "https://siem.example/ingest"},
		{name: "https all", url: "https://siem.example:8088/services/collector/raw?token_env=SIEM_TEST_TOKEN&token_scheme=Splunk&format=ndjson&max_body=65536&timeout=10s&header=X-A:+b&header=X-C:d&ca=" + p.caFile, wantName: "https://siem.example:8088/services/collector/raw"},
		{name: "http loopback", url: "http://127.0.0.1:8080/in", wantName: "http://127.0.0.1:8080/in"},
		{name: "http localhost", url: "http://localhost:8080/in?name=dev", wantName: "dev"},
		{name: "http ipv6 loopback", url: "http://[::1]:8080/in", wantName: "http://[::1]:8080/in"},

		{name: "http remote", url: "http://siem.example/in", wantErr: "loopback"},
		{name: "unknown scheme", url: "syslog://siem.example", wantErr: "want a syslog+tls"},
		{name: "udp", url: "syslog+udp://siem.example", wantErr: "want a syslog+tls"},
		{name: "unknown parameter", url: "syslog+tcp://siem.example?facilty=local0", wantErr: "unknown parameters facilty"},
		{name: "unknown https parameter", url: "https://siem.example/in?channel=1", wantErr: "unknown parameters channel"},
		{name: "parameter twice", url: "syslog+tcp://siem.example?facility=local0&facility=local1", wantErr: "given 2 times"},
		{name: "bad facility", url: "syslog+tcp://siem.example?facility=local9", wantErr: "facility"},
		{name: "bad hostname", url: "syslog+tcp://siem.example?hostname=a+b", wantErr: "hostname"},
		{name: "tls parameter on tcp", url: "syslog+tcp://siem.example?ca=" + p.caFile, wantErr: "needs TLS"},
		{name: "tls parameter on http", url: "http://127.0.0.1/in?ca=" + p.caFile, wantErr: "needs TLS"},
		{name: "missing ca", url: "syslog+tls://siem.example?ca=/nonexistent/ca.pem", wantErr: "ca:"},
		{name: "not a ca", url: "syslog+tls://siem.example?ca=" + p.keyFile, wantErr: "no PEM certificate"},
		{name: "cert without key", url: "syslog+tls://siem.example?cert=" + p.certFile, wantErr: "go together"},
		{name: "syslog path", url: "syslog+tcp://siem.example/x", wantErr: "no user or path"},
		{name: "syslog user", url: "syslog+tcp://u@siem.example", wantErr: "no user or path"},
		{name: "no host", url: "syslog+tcp://", wantErr: "no user or path"},
		{name: "credentials in https", url: "https://u:p@siem.example/in", wantErr: "credentials"},
		{name: "token env unset", url: "https://siem.example/in?token_env=SIEM_TEST_UNSET", wantErr: "SIEM_TEST_UNSET is not set"},
		{name: "secret env unset", url: "https://siem.example/in?secret_env=SIEM_TEST_UNSET", wantErr: "SIEM_TEST_UNSET is not set"},
		{name: "bad format", url: "https://siem.example/in?format=xml", wantErr: "format"},
		{name: "bad header", url: "https://siem.example/in?header=nocolon", wantErr: "header"},
		{name: "bad max_body", url: "https://siem.example/in?max_body=-1", wantErr: "positive integer"},
		{name: "bad timeout", url: "https://siem.example/in?timeout=soon", wantErr: "duration"},
		{name: "fragment", url: "https://siem.example/in#x", wantErr: "fragment"},
		{name: "not a URL", url: "://", wantErr: "missing protocol scheme"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseSinkURL(tc.url)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v; want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if s.Name() != tc.wantName {
				t.Errorf("Name: got %q; want %q", s.Name(), tc.wantName)
			}
		})
	}
}

// TestParseSinkURLOptions checks that parameters reach the sinks' options.
func TestParseSinkURLOptions(t *testing.T) {
	p := newPKI(t)
	t.Setenv("SIEM_TEST_SECRET", "sec")
	s, err := ParseSinkURL("syslog+tls://siem.example?facility=auth&hostname=gw-7&max_message=8192&timeout=5s&ca=" + p.caFile + "&cert=" + p.certFile + "&key=" + p.keyFile)
	if err != nil {
		t.Fatal(err)
	}
	sy := s.(*SyslogSink)
	if o := sy.o; sy.f.facility != 4 || o.Hostname != "gw-7" || o.MaxMessage != 8192 || o.DialTimeout.String() != "5s" ||
		o.WriteTimeout.String() != "5s" || o.TLS == nil || o.TLS.RootCAs == nil || len(o.TLS.Certificates) != 1 || o.TLS.InsecureSkipVerify {
		t.Errorf("syslog options: got %+v", o)
	}
	h, err := ParseSinkURL("https://siem.example/in?secret_env=SIEM_TEST_SECRET&format=ndjson&header=X-A:+b")
	if err != nil {
		t.Fatal(err)
	}
	ho := h.(*HTTPSink).o
	if ho.Secret != "sec" || !ho.NDJSON || ho.Header.Get("X-A") != "b" || ho.URL != "https://siem.example/in" || ho.TokenScheme != "Bearer" || ho.MaxBody != DefaultMaxBody {
		t.Errorf("http options: got %+v", ho)
	}
}
