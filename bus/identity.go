package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hookbus/hookbus/bus/internal/deadline"
	"github.com/hookbus/hookbus/bus/internal/header"
	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go"
)

// userInfoSubject is the NATS server's service that tells a connection who
// it is (nats-server events.go, userInfoReq): every account imports it from
// the system account.
const userInfoSubject = "$SYS.REQ.USER.INFO"

// Caller is who a connection is, as hookbus records it in an
// events.Actor.
type Caller struct {
	// User is the NATS user the server authenticated the connection as
	// (a name, or a public nkey); events.IdentityAnonymous on a server
	// without authentication.
	User string
	// Account is the connection's account.
	Account string
	// Via is how User was learnt: "nats" (the server said so), or
	// "connection" (a server without the user info service: the user the
	// connection was opened with, which the server accepted).
	Via string
}

// WhoAmI asks the server who the bus' connection is
// ($SYS.REQ.USER.INFO). A server without authentication (the embedded
// one) answers with no user: the caller is events.IdentityAnonymous. A
// server that does not offer the service (no system account) gives the
// user the connection was opened with, or anonymous without one. It
// returns an error wrapping ErrPermission when the user may not ask
// (deploy/nats allows every user that writes records to), or ctx's error.
func (b *Bus) WhoAmI(ctx context.Context) (Caller, error) {
	ctx, cancel := b.withTimeout(ctx)
	defer cancel()
	m, err := b.nc.RequestWithContext(ctx, userInfoSubject, nil)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		c := Caller{User: b.nc.Opts.User, Via: "connection"}
		if c.User == "" {
			c.User = b.nc.Opts.Nkey
		}
		if c.User == "" {
			c.User = events.IdentityAnonymous
		}
		return c, nil
	case errors.Is(err, nats.ErrPermissionViolation):
		return Caller{}, fmt.Errorf("%w: ask the server who this connection is (%s): %w", ErrPermission, userInfoSubject, err)
	case err != nil:
		return Caller{}, fmt.Errorf("hookbus: ask the server who this connection is (%s): %w", userInfoSubject, deadline.Err(ctx, err))
	}
	var reply struct {
		Data *struct {
			User    string `json:"user"`
			Account string `json:"account"`
		} `json:"data"`
		Error *struct {
			Code        int    `json:"code"`
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(m.Data, &reply); err != nil || reply.Data == nil {
		if reply.Error != nil {
			return Caller{}, fmt.Errorf("hookbus: the server did not say who this connection is: %d %s", reply.Error.Code, reply.Error.Description)
		}
		return Caller{}, fmt.Errorf("hookbus: the server's user info does not parse: %q", header.OneLine(string(m.Data), 200))
	}
	c := Caller{User: reply.Data.User, Account: reply.Data.Account, Via: "nats"}
	if c.User == "" {
		c.User = events.IdentityAnonymous
	}
	return c, nil
}

// Actor fills a (a record's actor, its channel and note as its writer gave
// them) with c: the identity, how it was learnt, and the writer. The
// channel defaults to events.ChannelNATS. The kill switch and the shared
// budgets record who changed them so, with the Caller WhoAmI returns.
func (c Caller) Actor(a events.Actor) events.Actor {
	a.Identity, a.Via, a.Writer = c.User, c.Via, c.User
	if a.Channel == "" {
		a.Channel = events.ChannelNATS
	}
	return a
}
