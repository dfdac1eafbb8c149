package mqtt

import (
	"context"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/edgewan/edgewan/telemetry"
)

// ControllerUsername is the controller's own MQTT identity, allowed every topic. No device may
// be called so: the claim must refuse it (ValidAgentUsername does).
const ControllerUsername = "controller"

// Credential is what the broker needs to know of an agent: who it is, which site it speaks for,
// and the hash of its password (never the password).
type Credential struct {
	Username string // the agent's device ID; also its MQTT client ID
	Site     string // the only site whose topics it may use
	Hash     string // HashPassword's output, computed at claim time
}

// CredentialStore looks agents up by username. An unknown username is (nil, nil) or an error;
// both refuse the client. The controller's store implements it.
type CredentialStore interface {
	MQTTCredential(ctx context.Context, username string) (*Credential, error)
}

// CredentialMemory is a CredentialStore that may hold credentials in memory: the broker asks
// it first, without a context. ok false means "look it up" (MQTTCredential), never "unknown".
type CredentialMemory interface {
	CachedMQTTCredential(username string) (c *Credential, ok bool)
}

// ValidAgentUsername reports whether s can be an agent's username: a valid ID (see
// telemetry.ValidID) other than ControllerUsername.
func ValidAgentUsername(s string) bool { return s != ControllerUsername && telemetry.ValidID(s) }

// The password hash is Mosquitto 2.0's own format, "$7$<iterations>$<salt>$<hash>": PBKDF2 with
// HMAC-SHA512, a 12-byte salt and a 64-byte key, both standard base64. One hash, computed once
// at claim time, so serves the embedded broker (VerifyPassword) and goes unchanged into a
// Mosquitto password file: switching brokers needs no new credentials. 101 iterations is
// mosquitto_passwd's default; the passwords are 192-bit random strings, so a slow hash adds
// nothing but connect latency.
const (
	hashIterations = 101
	hashSaltLen    = 12 // Mosquitto 2.0 rejects any other salt length
	hashKeyLen     = 64
	maxIterations  = 1_000_000 // refuse hashes that would make every CONNECT a denial of service
)

// NewPassword returns a random password of 192 bits (32 characters of base64url).
func NewPassword() (string, error) {
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("mqtt.NewPassword: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// HashPassword returns the hash to store for password, in Mosquitto's "$7$" format.
func HashPassword(password string) (string, error) {
	var salt [hashSaltLen]byte
	if _, err := rand.Read(salt[:]); err != nil {
		return "", fmt.Errorf("mqtt.HashPassword: %w", err)
	}
	key, err := pbkdf2.Key(sha512.New, password, salt[:], hashIterations, hashKeyLen)
	if err != nil {
		return "", fmt.Errorf("mqtt.HashPassword: %w", err)
	}
	return "$7$" + strconv.Itoa(hashIterations) + "$" + base64.StdEncoding.EncodeToString(salt[:]) +
		"$" + base64.StdEncoding.EncodeToString(key), nil
}

// NewCredential issues credentials to an agent claiming site as device: the password to hand
// to the agent once, and the Credential (with the hash) to store.
func NewCredential(device, site string) (password string, c Credential, err error) {
	if !ValidAgentUsername(device) {
		return "", c, fmt.Errorf("mqtt.NewCredential: bad device ID %q", device)
	}
	if !telemetry.ValidID(site) {
		return "", c, fmt.Errorf("mqtt.NewCredential: bad site ID %q", site)
	}
	if password, err = NewPassword(); err != nil {
		return "", c, err
	}
	h, err := HashPassword(password)
	if err != nil {
		return "", c, err
	}
	return password, Credential{Username: device, Site: site, Hash: h}, nil
}

var errBadHash = errors.New("not a $7$ (PBKDF2-SHA512) password hash")

type parsedHash struct {
	iterations int
	salt, key  []byte
}

func parseHash(h string) (parsedHash, error) {
	var p parsedHash
	rest, ok := strings.CutPrefix(h, "$7$")
	if !ok {
		return p, errBadHash
	}
	parts := strings.Split(rest, "$")
	if len(parts) != 3 {
		return p, errBadHash
	}
	n, err := strconv.Atoi(parts[0])
	if err != nil || n < 1 || n > maxIterations {
		return p, errBadHash
	}
	salt, err := base64.StdEncoding.DecodeString(parts[1])
	if err != nil || len(salt) != hashSaltLen {
		return p, errBadHash
	}
	key, err := base64.StdEncoding.DecodeString(parts[2])
	if err != nil || len(key) != hashKeyLen {
		return p, errBadHash
	}
	return parsedHash{iterations: n, salt: salt, key: key}, nil
}

// CheckHash reports whether h is a hash VerifyPassword and Mosquitto 2.0 accept.
func CheckHash(h string) error {
	if _, err := parseHash(h); err != nil {
		return fmt.Errorf("mqtt.CheckHash: %w", err)
	}
	return nil
}

// VerifyPassword reports whether password matches hash, in constant time for a given hash.
func VerifyPassword(hash, password string) bool {
	p, err := parseHash(hash)
	if err != nil {
		return false
	}
	key, err := pbkdf2.Key(sha512.New, password, p.salt, p.iterations, hashKeyLen)
	if err != nil {
		return false
	}
	return subtle.ConstantTimeCompare(key, p.key) == 1
}

// dummyHash is verified against when a username is unknown, so that an unknown user and a
// wrong password take the same time.
var dummyHash = func() string {
	h, err := HashPassword("edgewan-dummy")
	if err != nil {
		panic(err)
	}
	return h
}()
