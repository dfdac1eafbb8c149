// Package natsauth issues the NATS credentials of the scaled-out mode (docs/scale-out.md) with
// NATS's decentralised JWT authentication: the account agents and controllers share, one user
// per claimed device allowed its own site's subjects only, and the controllers' own users.
package natsauth

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"

	"github.com/edgewan/edgewan/controller/cluster"
	"github.com/edgewan/edgewan/telemetry"
)

// AccountName is the name in the account JWT the agents and controllers share.
const AccountName = "EDGEWAN"

// Keys are the controller's secrets in operator mode (the file of --nats-keys, written by
// `controller nats-init`): what it takes to sign the shared account's JWT (its revocations),
// the users of that account, and a system-account user to push account JWTs with. The
// operator's identity key is not among them: it only signs the operator JWT, once, offline.
type Keys struct {
	Operator           string `json:"operator"`             // the operator's public key
	OperatorSigningKey string `json:"operator_signing_key"` // seed; signs account JWTs
	Account            string `json:"account"`              // the shared account's public key
	AccountSigningKey  string `json:"account_signing_key"`  // seed; signs user JWTs
	SystemAccount      string `json:"system_account"`       // public key
	SystemSigningKey   string `json:"system_signing_key"`   // seed; signs the push user
	Partitions         int    `json:"partitions"`           // of the subject mapping in the account JWT
}

// ReadKeys reads a Keys file.
func ReadKeys(path string) (Keys, error) {
	var k Keys
	b, err := os.ReadFile(path)
	if err != nil {
		return k, fmt.Errorf("natsauth: reading keys: %w", err)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields() // a misspelt key must not pass for a missing one
	if err := d.Decode(&k); err != nil {
		return k, fmt.Errorf("natsauth: keys file %s: %w", path, err)
	}
	return k, nil
}

// Issuer signs account and user JWTs with a Keys' signing keys.
type Issuer struct {
	k                  Keys
	opSK, accSK, sysSK nkeys.KeyPair
	accSKPub           string
}

// NewIssuer checks k and returns its Issuer.
func NewIssuer(k Keys) (*Issuer, error) {
	i := &Issuer{k: k}
	if !nkeys.IsValidPublicOperatorKey(k.Operator) {
		return nil, errors.New("natsauth: keys: operator is not an operator public key")
	}
	if !nkeys.IsValidPublicAccountKey(k.Account) || !nkeys.IsValidPublicAccountKey(k.SystemAccount) {
		return nil, errors.New("natsauth: keys: account or system_account is not an account public key")
	}
	if k.Partitions < 1 || k.Partitions > 4096 {
		return nil, fmt.Errorf("natsauth: keys: partitions %d out of 1..4096", k.Partitions)
	}
	var err error
	for _, s := range []struct {
		name  string
		seed  string
		valid func(string) bool
		kp    *nkeys.KeyPair
	}{
		{"operator_signing_key", k.OperatorSigningKey, nkeys.IsValidPublicOperatorKey, &i.opSK},
		{"account_signing_key", k.AccountSigningKey, nkeys.IsValidPublicAccountKey, &i.accSK},
		{"system_signing_key", k.SystemSigningKey, nkeys.IsValidPublicAccountKey, &i.sysSK},
	} {
		if *s.kp, err = nkeys.FromSeed([]byte(s.seed)); err != nil {
			return nil, fmt.Errorf("natsauth: keys: %s: %w", s.name, err)
		}
		if pub, err := (*s.kp).PublicKey(); err != nil || !s.valid(pub) {
			return nil, fmt.Errorf("natsauth: keys: %s is not the seed of the right kind of key", s.name)
		}
	}
	i.accSKPub, _ = i.accSK.PublicKey()
	return i, nil
}

// newKey makes a key pair with create (nkeys.CreateUser, CreateAccount ...) and returns its
// public key and seed.
func newKey(create func() (nkeys.KeyPair, error)) (pub string, seed []byte, err error) {
	kp, err := create()
	if err != nil {
		return "", nil, err
	}
	if pub, err = kp.PublicKey(); err != nil {
		return "", nil, err
	}
	seed, err = kp.Seed()
	return pub, seed, err
}

// Partitions is the number of partitions of the account's subject mapping.
func (i *Issuer) Partitions() int { return i.k.Partitions }

// Subject is the NATS subject of an MQTT topic without wildcards (NATS's MQTT listener maps
// '/' to '.').
func Subject(topic string) string { return strings.ReplaceAll(topic, "/", ".") }

// mqttInternal is what NATS 2.9's MQTT listener does on a client's behalf under the client's
// own permissions: a QoS 1 subscription delivers through $MQTT.sub.<id>.
const mqttInternal = "$MQTT.sub.>"

// DeviceClaims returns the claims of a device of site: a bearer user (an MQTT client cannot
// sign the server's nonce; the JWT alone, sent as the MQTT password, is the credential),
// MQTT connections only, allowed to publish its site's upward kinds and to subscribe to its
// downward kinds, exact subjects only. NATS 2.9 checks an MQTT publish against the subject
// after the account's mapping, so the upward kinds are allowed as mapped too: into the site's
// own partition only (cluster.Partition, the server's partition function), so a device cannot
// feed another partition's consumer either.
func (i *Issuer) DeviceClaims(device, site, userPub string) (*jwt.UserClaims, error) {
	if !telemetry.ValidID(device) || !telemetry.ValidID(site) {
		return nil, fmt.Errorf("natsauth: bad device %q or site %q", device, site)
	}
	uc := jwt.NewUserClaims(userPub)
	uc.Name = device
	uc.IssuerAccount = i.k.Account
	uc.BearerToken = true
	uc.AllowedConnectionTypes = jwt.StringList{jwt.ConnectionTypeMqtt}
	p := strconv.Itoa(cluster.Partition(site, i.k.Partitions))
	for _, k := range telemetry.UpKinds {
		uc.Pub.Allow.Add(Subject(telemetry.Topic(site, k)), "edgewan.in."+p+"."+site+"."+k)
	}
	for _, k := range telemetry.DownKinds {
		uc.Sub.Allow.Add(Subject(telemetry.Topic(site, k)))
	}
	uc.Sub.Allow.Add(mqttInternal)
	return uc, nil
}

// Device issues a device's credential: the user JWT (its MQTT password) and the user's public
// key, which a revocation names (RevokedUser). Every call makes a new user key, so re-issuing
// for the same device and revoking the old key leaves the new one valid.
func (i *Issuer) Device(device, site string) (token, userPub string, err error) {
	if userPub, _, err = newKey(nkeys.CreateUser); err != nil {
		return "", "", fmt.Errorf("natsauth: %w", err)
	}
	uc, err := i.DeviceClaims(device, site, userPub)
	if err != nil {
		return "", "", err
	}
	if token, err = uc.Encode(i.accSK); err != nil {
		return "", "", fmt.Errorf("natsauth: signing device %s: %w", device, err)
	}
	return token, userPub, nil
}

// Controller issues a controller's own users: natsJWT and seed for its NATS connection,
// unrestricted in the shared account (it manages the stream and its consumers; it signs the
// server's nonce with the seed, so the JWT alone is not enough), and mqttJWT for its MQTT
// publisher: a bearer user limited to MQTT connections and to publishing the agents' downward
// kinds, so that this JWT, which travels as a password, is worth no more than what the
// controller sends agents anyway.
func (i *Issuer) Controller(name string) (natsJWT string, seed []byte, mqttJWT string, err error) {
	mk := func(bearer bool) (string, []byte, error) {
		pub, seed, err := newKey(nkeys.CreateUser)
		if err != nil {
			return "", nil, err
		}
		uc := jwt.NewUserClaims(pub)
		uc.Name = "controller " + name
		uc.IssuerAccount = i.k.Account
		if bearer {
			uc.BearerToken = true
			uc.AllowedConnectionTypes = jwt.StringList{jwt.ConnectionTypeMqtt}
			for _, k := range telemetry.DownKinds {
				uc.Pub.Allow.Add(Subject(telemetry.TopicRoot) + "*." + k)
			}
			uc.Sub.Deny.Add(">")
		}
		t, err := uc.Encode(i.accSK)
		return t, seed, err
	}
	if natsJWT, seed, err = mk(false); err != nil {
		return "", nil, "", fmt.Errorf("natsauth: controller user: %w", err)
	}
	if mqttJWT, _, err = mk(true); err != nil {
		return "", nil, "", fmt.Errorf("natsauth: controller MQTT user: %w", err)
	}
	return natsJWT, seed, mqttJWT, nil
}

// SystemUser issues a user of the system account, for pushing account JWTs to the resolver.
func (i *Issuer) SystemUser() (token string, seed []byte, err error) {
	pub, seed, err := newKey(nkeys.CreateUser)
	if err != nil {
		return "", nil, fmt.Errorf("natsauth: %w", err)
	}
	uc := jwt.NewUserClaims(pub)
	uc.Name = "edgewan account pusher"
	uc.IssuerAccount = i.k.SystemAccount
	uc.Expires = time.Now().Add(time.Hour).Unix()
	if token, err = uc.Encode(i.sysSK); err != nil {
		return "", nil, fmt.Errorf("natsauth: signing the system user: %w", err)
	}
	return token, seed, nil
}

// AccountJWT signs the shared account's JWT: JetStream enabled without limits, the partition
// mapping of the agents' upward subjects (edgewan.v1.sites.{site}.{kind} to
// edgewan.in.{partition}.{site}.{kind}, as scripts/nats.sh configures it without operator
// mode), the account signing key, and revoked: user public key -> revocation time (every JWT
// of that user issued at or before it is refused, and its connections are closed).
func (i *Issuer) AccountJWT(revoked map[string]time.Time) (string, error) {
	ac := jwt.NewAccountClaims(i.k.Account)
	ac.Name = AccountName
	ac.SigningKeys.Add(i.accSKPub)
	ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: -1, DiskStorage: -1, Streams: -1, Consumer: -1}
	for _, k := range telemetry.UpKinds {
		from := jwt.Subject(Subject(telemetry.TopicRoot) + "*." + k)
		to := jwt.Subject("edgewan.in.{{partition(" + strconv.Itoa(i.k.Partitions) + ",1)}}.{{wildcard(1)}}." + k)
		ac.AddMapping(from, jwt.WeightedMapping{Subject: to, Weight: 100})
	}
	for pub, at := range revoked {
		if !nkeys.IsValidPublicUserKey(pub) {
			return "", fmt.Errorf("natsauth: revocation of %q: not a user public key", pub)
		}
		ac.RevokeAt(pub, at)
	}
	t, err := ac.Encode(i.opSK)
	if err != nil {
		return "", fmt.Errorf("natsauth: signing the account JWT: %w", err)
	}
	return t, nil
}
