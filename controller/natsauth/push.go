package natsauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// claimsUpdate is the subject the NATS-based resolver takes account JWTs on (from the system
// account): every node stores a JWT newer than the one it has and answers.
const claimsUpdate = "$SYS.REQ.CLAIMS.UPDATE"

// Push sends an account JWT to the cluster's resolver as a system-account user and returns how
// many nodes stored it: it waits for nodes answers (the number of nodes; a node down does not
// answer) or, after the first answer, for at most a second more. Any refusal (a JWT older than
// a node's, a bad signature) is an error; so is no answer before ctx ends.
func (i *Issuer) Push(ctx context.Context, urls []string, accountJWT string, nodes int) (int, error) {
	tok, seed, err := i.SystemUser()
	if err != nil {
		return 0, err
	}
	nc, err := nats.Connect(strings.Join(urls, ","), nats.UserJWTAndSeed(tok, string(seed)), nats.Name("edgewan account push"))
	if err != nil {
		return 0, fmt.Errorf("natsauth.Push: connecting to %v: %w", urls, err)
	}
	defer nc.Close()
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
		wctx := ctx
		if n > 0 {
			var cancel context.CancelFunc
			wctx, cancel = context.WithTimeout(ctx, time.Second)
			defer cancel()
		}
		m, err := sub.NextMsgWithContext(wctx)
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
