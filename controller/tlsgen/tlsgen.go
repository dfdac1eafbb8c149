// Package tlsgen makes the controller's own CA and server certificate on first start, so the
// API is HTTPS from the first run without any certificate to hand.
package tlsgen

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Files are the paths of the generated material.
type Files struct {
	CACert, CAKey, Cert, Key string
}

// Paths returns where Ensure keeps its files under dir.
func Paths(dir string) Files {
	d := filepath.Join(dir, "tls")
	return Files{CACert: filepath.Join(d, "ca.crt"), CAKey: filepath.Join(d, "ca.key"),
		Cert: filepath.Join(d, "server.crt"), Key: filepath.Join(d, "server.key")}
}

// Ensure makes sure dir/tls holds a CA and a server certificate signed by it, valid for
// localhost, the loopback addresses, the host name and extra hosts. The CA is made once; the
// server certificate again when missing, within 30 days of expiry, or lacking a host.
// created reports whether anything was written.
func Ensure(dir string, extraHosts []string) (f Files, created bool, err error) {
	f = Paths(dir)
	if err := os.MkdirAll(filepath.Dir(f.CACert), 0o700); err != nil {
		return f, false, fmt.Errorf("tlsgen: %w", err)
	}
	hosts := []string{"localhost", "127.0.0.1", "::1"}
	if h, err := os.Hostname(); err == nil && h != "" {
		hosts = append(hosts, h)
	}
	for _, h := range extraHosts {
		if !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}
	caCert, caKey, err := loadPair(f.CACert, f.CAKey)
	if errors.Is(err, os.ErrNotExist) {
		caCert, caKey, err = newCA()
		if err == nil {
			err = writePair(f.CACert, f.CAKey, caCert, caKey)
		}
		created = true
	}
	if err != nil {
		return f, false, fmt.Errorf("tlsgen: CA: %w", err)
	}
	cert, _, err := loadPair(f.Cert, f.Key)
	if err == nil && !created && time.Until(cert.NotAfter) > 30*24*time.Hour && covers(cert, hosts) {
		return f, false, nil
	}
	cert, key, err := newServer(caCert, caKey, hosts)
	if err == nil {
		err = writePair(f.Cert, f.Key, cert, key)
	}
	if err != nil {
		return f, false, fmt.Errorf("tlsgen: server certificate: %w", err)
	}
	return f, true, nil
}

// Fingerprint returns the SHA-256 fingerprint of a PEM certificate file, hex encoded, which an
// agent can pin instead of carrying the CA file.
func Fingerprint(certFile string) (string, error) {
	c, err := readCert(certFile)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(c.Raw)
	return hex.EncodeToString(sum[:]), nil
}

func covers(c *x509.Certificate, hosts []string) bool {
	for _, h := range hosts {
		if c.VerifyHostname(h) != nil {
			return false
		}
	}
	return true
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n
}

func newCA() (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "edgewan controller CA", Organization: []string{"edgewan"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	c, err := x509.ParseCertificate(der)
	return c, key, err
}

func newServer(ca *x509.Certificate, caKey *ecdsa.PrivateKey, hosts []string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: hosts[0], Organization: []string{"edgewan"}},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().AddDate(1, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tpl.IPAddresses = append(tpl.IPAddresses, ip)
		} else {
			tpl.DNSNames = append(tpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, err
	}
	c, err := x509.ParseCertificate(der)
	return c, key, err
}

func writePair(certFile, keyFile string, c *x509.Certificate, k *ecdsa.PrivateKey) error {
	kb, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return err
	}
	if err := writeAtomic(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		return err
	}
	return writeAtomic(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw}), 0o644)
}

func writeAtomic(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func readCert(path string) (*x509.Certificate, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("%s: no PEM certificate", path)
	}
	return x509.ParseCertificate(blk.Bytes)
}

func loadPair(certFile, keyFile string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	c, err := readCert(certFile)
	if err != nil {
		return nil, nil, err
	}
	b, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, nil, err
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, nil, fmt.Errorf("%s: no PEM key", keyFile)
	}
	k, err := x509.ParseECPrivateKey(blk.Bytes)
	return c, k, err
}
