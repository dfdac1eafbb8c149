package natsauth_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nkeys"

	"github.com/edgewan/edgewan/controller/natsauth"
)

func benchIssuer(b *testing.B) *natsauth.Issuer {
	_, iss := newIssuer(b, 16)
	return iss
}

// BenchmarkDevice is the claim's extra work in operator mode: a user key and a signed JWT.
func BenchmarkDevice(b *testing.B) {
	iss := benchIssuer(b)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, _, err := iss.Device("dev-"+strconv.Itoa(i), "site-1"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAccountJWT signs the account JWT with 10,000 revoked devices (what a push costs and
// how big it gets: NATS's default max_payload of 1 MB bounds the number of revocations).
func BenchmarkAccountJWT(b *testing.B) {
	iss := benchIssuer(b)
	revoked := map[string]time.Time{}
	for range 10_000 {
		kp, err := nkeys.CreateUser()
		if err != nil {
			b.Fatal(err)
		}
		pub, _ := kp.PublicKey()
		revoked[pub] = time.Now()
	}
	var size int
	for b.Loop() {
		tok, err := iss.AccountJWT(revoked)
		if err != nil {
			b.Fatal(err)
		}
		size = len(tok)
	}
	b.ReportMetric(float64(size), "jwt-bytes")
	b.ReportMetric(float64(size)/float64(len(revoked)), "bytes/revocation")
}
