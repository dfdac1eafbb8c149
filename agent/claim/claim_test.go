package claim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/edgewan/edgewan/controller/tlsgen"
)

// controller is a real HTTPS server answering the claim endpoint as the controller does.
func controller(t *testing.T, status int, body string) (*httptest.Server, *[]string) {
	var got []string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, r.Method+" "+r.URL.Path+" "+string(b))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, &got
}

const okBody = `{"site":{"id":"site_a"},"device":"dev_a","mqtt":{"url":"mqtts://ctl:8883","username":"dev_a","password":"s3cret","ca_pem":"PEM"}}`

func TestClaimPinnedFingerprint(t *testing.T) {
	srv, got := controller(t, 200, okBody)
	sum := sha256.Sum256(srv.Certificate().Raw)
	fp := strings.ToUpper(hex.EncodeToString(sum[:]))
	fp = fp[:2] + ":" + fp[2:] // colons and case do not matter
	tc, err := TLSConfig("", fp)
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tc}}
	c, err := Claim(context.Background(), hc, srv.URL, Request{ClaimToken: "ewc_x", Hostname: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Site != "site_a" || c.Device != "dev_a" || c.Password != "s3cret" || c.MQTTURL != "mqtts://ctl:8883" {
		t.Fatalf("%+v", c)
	}
	if len(*got) != 1 || !strings.Contains((*got)[0], `POST /sd-wan/v1/claim {"claim_token":"ewc_x"`) {
		t.Fatalf("request %v", *got)
	}
}

func TestClaimUntrusted(t *testing.T) {
	srv, got := controller(t, 200, okBody)
	tc, _ := TLSConfig("", strings.Repeat("ab", 32))
	_, err := Claim(context.Background(), &http.Client{Transport: &http.Transport{TLSClientConfig: tc}}, srv.URL, Request{ClaimToken: "ewc_x"})
	var ce *Error
	if !errors.As(err, &ce) || !ce.Permanent || ce.Code != "untrusted_controller" {
		t.Fatalf("err %v", err)
	}
	// a CA file that is not the server's (another controller's generated CA)
	files, _, err := tlsgen.Ensure(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	tc, err = TLSConfig(files.CACert, "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Claim(context.Background(), &http.Client{Transport: &http.Transport{TLSClientConfig: tc}}, srv.URL, Request{ClaimToken: "ewc_x"})
	if !errors.As(err, &ce) || !ce.Permanent || ce.Code != "untrusted_controller" {
		t.Fatalf("wrong CA file: %v", err)
	}
	if len(*got) != 0 {
		t.Fatal("the token was sent to an untrusted server")
	}
}

func TestClaimRefusals(t *testing.T) {
	for _, tc := range []struct {
		status    int
		body      string
		code      string
		permanent bool
	}{
		{401, `{"error":{"code":"claim_token_used","message":"claim token was already used"}}`, "claim_token_used", true},
		{401, `{"error":{"code":"claim_token_expired","message":"claim token has expired"}}`, "claim_token_expired", true},
		{429, `{"error":{"code":"rate_limited","message":"slow down"}}`, "rate_limited", false},
		{503, `{"error":{"code":"unavailable","message":"starting"}}`, "unavailable", false},
	} {
		srv, _ := controller(t, tc.status, tc.body)
		_, err := Claim(context.Background(), srv.Client(), srv.URL, Request{ClaimToken: "ewc_x"})
		var ce *Error
		if !errors.As(err, &ce) || ce.Code != tc.code || ce.Permanent != tc.permanent || !strings.Contains(err.Error(), tc.code) {
			t.Errorf("%d: %v (%+v)", tc.status, err, ce)
		}
	}
}

func TestTLSConfigNeedsTrust(t *testing.T) {
	if _, err := TLSConfig("", ""); err == nil {
		t.Fatal("no CA and no fingerprint accepted")
	}
	if _, err := TLSConfig("", "zz"); err == nil {
		t.Fatal("bad fingerprint accepted")
	}
}

func TestSaveLoad(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if _, err := Load(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Load before Save: %v", err)
	}
	c := &Credentials{Site: "site_a", Device: "dev_a", MQTTURL: "mqtts://x:1", MQTTURLs: []string{"mqtts://x:1", "mqtts://y:1"}, Username: "dev_a", Password: "p"}
	if err := Save(dir, c); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(filepath.Join(dir, File))
	dst, _ := os.Stat(dir)
	if st.Mode().Perm() != 0o600 || dst.Mode().Perm() != 0o700 {
		t.Fatalf("modes %v %v", st.Mode(), dst.Mode())
	}
	got, err := Load(dir)
	if err != nil || !reflect.DeepEqual(got, c) {
		t.Fatalf("%+v %v", got, err)
	}
	_ = os.WriteFile(filepath.Join(dir, File), []byte("{"), 0o600)
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Fatalf("corrupt file: %v", err)
	}
}

// The broker's kind comes from the claim answer and survives Save/Load; credentials stored
// before the field existed load with none (the MQTT profile), and the hand edit
// docs/scale-out.md gives for them ("broker": "nats") selects the NATS one.
func TestBrokerKind(t *testing.T) {
	srv, _ := controller(t, 200, strings.Replace(okBody, `"ca_pem":"PEM"`, `"ca_pem":"PEM","broker":"nats"`, 1))
	hc := srv.Client()
	c, err := Claim(context.Background(), hc, srv.URL, Request{ClaimToken: "ewc_x", Hostname: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Broker != BrokerNATS {
		t.Fatalf("claim answer's broker gave %q; want %q", c.Broker, BrokerNATS)
	}
	dir := t.TempDir()
	if err := Save(dir, c); err != nil {
		t.Fatal(err)
	}
	if got, err := Load(dir); err != nil {
		t.Fatal(err)
	} else if got.Broker != BrokerNATS {
		t.Fatalf("after Save/Load: broker %q; want %q", got.Broker, BrokerNATS)
	}
	for _, tc := range []struct{ name, file, want string }{
		{"stored before the field", `{"site":"s","device":"d","mqtt_url":"mqtts://x:1","username":"d","password":"p","ca_pem":"","claimed_at":"2026-01-01T00:00:00Z"}`, ""},
		{"hand edit", `{"site":"s","device":"d","mqtt_url":"mqtts://x:1","username":"d","password":"p","ca_pem":"","broker": "nats","claimed_at":"2026-01-01T00:00:00Z"}`, BrokerNATS},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, File), []byte(tc.file), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			if got.Broker != tc.want {
				t.Fatalf("Load: broker %q; want %q", got.Broker, tc.want)
			}
		})
	}
}
