package natsauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// claimsUpdate is the subject the NATS-based resolver takes account JWTs on (from the system
// account): every node stores a JWT newer than the one it has and answers.
const claimsUpdate = "$SYS.REQ.CLAIMS.UPDATE"

// Sync pushes the account JWT with revoked and with every revocation the cluster's resolver
// already has (a union: revocations are never taken back), and returns how many of nodes
// stored it. NATS 2.9.10's resolver stores an account JWT even when it is older than the one
// it has (seen in the tests), so a controller that read the database just before another one
// revoked a device could otherwise push the revocation away; reading the resolver's JWT first
// leaves only the moment between that read and the push, which the controllers' periodic
// check repairs.
func (i *Issuer) Sync(ctx context.Context, urls []string, revoked map[string]time.Time, nodes int) (int, error) {
	nc, err := i.systemConn(urls)
	if err != nil {
		return 0, err
	}
	defer nc.Close()
	all := map[string]time.Time{}
	m, err := nc.RequestWithContext(ctx, "$SYS.REQ.ACCOUNT."+i.k.Account+".CLAIMS.LOOKUP", nil)
	if err != nil {
		return 0, fmt.Errorf("natsauth.Sync: looking the account up: %w", err)
	}
	if len(m.Data) > 0 {
		ac, err := jwt.DecodeAccountClaims(string(m.Data))
		if err != nil {
			return 0, fmt.Errorf("natsauth.Sync: the resolver's account JWT: %w", err)
		}
		for pub, at := range ac.Revocations {
			if nkeys.IsValidPublicUserKey(pub) {
				all[pub] = time.Unix(at, 0)
			}
		}
	}
	for pub, at := range revoked {
		if old, ok := all[pub]; !ok || at.After(old) {
			all[pub] = at
		}
	}
	acc, err := i.AccountJWT(all)
	if err != nil {
		return 0, err
	}
	return push(ctx, nc, acc, nodes)
}

func (i *Issuer) systemConn(urls []string) (*nats.Conn, error) {
	tok, seed, err := i.SystemUser()
	if err != nil {
		return nil, err
	}
	nc, err := nats.Connect(strings.Join(urls, ","), nats.UserJWTAndSeed(tok, string(seed)), nats.Name("edgewan account push"))
	if err != nil {
		return nil, fmt.Errorf("natsauth: connecting to %v as the system account: %w", urls, err)
	}
	return nc, nil
}

// push sends an account JWT to the cluster's resolver on nc (a system-account user) and
// returns how many nodes stored it: it waits for nodes answers (the number of nodes; a node
// down does not answer) or, after the first answer, for at most a second more. Any refusal (a
// bad signature, an account JWT of another operator) is an error; so is no answer before ctx
// ends. A node stores the JWT as it is: Sync is what keeps revocations.
func push(ctx context.Context, nc *nats.Conn, accountJWT string, nodes int) (int, error) {
	inbox := nc.NewRespInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return 0, fmt.Errorf("natsauth.Push: %w", err)
	}
	if err := nc.PublishRequest(claimsUpdate, inbox, []byte(accountJWT)); err != nil {
		return 0, fmt.Errorf("natsauth.Push: %w", err)
	}
	stored := 0
	var errs []error
	for n := 0; n < nodes; n++ {
		wctx, cancel := ctx, context.CancelFunc(func() {})
		if n > 0 {
			wctx, cancel = context.WithTimeout(ctx, time.Second)
		}
		m, err := sub.NextMsgWithContext(wctx)
		cancel()
		if err != nil {
			if n == 0 {
				return 0, fmt.Errorf("natsauth.Push: no node answered: %w", err)
			}
			break
		}
		if err := answerErr(m.Data); err != nil {
			errs = append(errs, err)
			continue
		}
		stored++
	}
	if err := errors.Join(errs...); err != nil {
		return stored, fmt.Errorf("natsauth.Push: %w", err)
	}
	return stored, nil
}

func answerErr(b []byte) error {
	var r struct {
		Error *struct {
			Code        int    `json:"code"`
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("answer %q: %w", b, err)
	}
	if r.Error != nil {
		return fmt.Errorf("refused (%d): %s", r.Error.Code, r.Error.Description)
	}
	return nil
}
