package server_test

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/edgewan/edgewan/controller/config"
	"github.com/edgewan/edgewan/controller/server/servertest"
	"github.com/edgewan/edgewan/controller/tlsgen"
)

func TestHealthAndMetrics(t *testing.T) {
	s := servertest.Start(t, servertest.Options{})
	for _, path := range []string{"/healthz", "/readyz", "/openapi.json"} {
		r := s.Do("GET", path, "", nil)
		if r.Status != 200 || r.Header.Get("X-Request-Id") == "" {
			t.Errorf("GET %s without a token: got %d (request id %q); want 200 with a request id", path, r.Status, r.Header.Get("X-Request-Id"))
		}
	}
	tok := s.Key("org:read")
	s.Do("GET", "/v1/org", tok, nil)
	s.Do("GET", "/v1/no-such-thing", tok, nil)
	resp, err := http.Get("http://" + s.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`edgewan_http_requests_total{code="200",family="core",method="GET",route="/v1/org"} 1`,
		`edgewan_http_requests_total{code="404",family="other",method="GET",route="unmatched"} 1`,
		`edgewan_webhook_deliveries{status="pending"}`,
		`go_goroutines`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func TestPlainHTTP(t *testing.T) {
	s := servertest.Start(t, servertest.Options{Config: func(c *config.Config) { c.PlainHTTP = true }})
	if !strings.HasPrefix(s.URL, "http://") {
		t.Fatalf("URL %s; want http://", s.URL)
	}
	if r := s.Do("GET", "/v1/ping", s.Key("org:read"), nil); r.Status != 200 {
		t.Fatalf("ping over plain HTTP: got %d %s", r.Status, r.Body)
	}
}

// TestProvidedCertificate serves a certificate given with --tls-cert/--tls-key and checks a
// client trusting only its CA connects, while one trusting nothing does not.
func TestProvidedCertificate(t *testing.T) {
	dir := t.TempDir()
	f, _, err := tlsgen.Ensure(dir, []string{"controller.test"})
	if err != nil {
		t.Fatal(err)
	}
	s := servertest.Start(t, servertest.Options{Config: func(c *config.Config) { c.TLSCert, c.TLSKey = f.Cert, f.Key }})
	pem, _ := os.ReadFile(f.CACert)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	good := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := good.Get(s.URL + "/healthz")
	if err != nil {
		t.Fatalf("client trusting the given CA: %v", err)
	}
	resp.Body.Close()
	if _, err := http.Get(s.URL + "/healthz"); err == nil {
		t.Fatal("a client trusting only the system roots connected; want a certificate error")
	}
	if _, err := os.Stat(s.Config.DataDir + "/tls/ca.crt"); !os.IsNotExist(err) {
		t.Errorf("generated a CA although a certificate was given (stat: %v)", err)
	}
}
