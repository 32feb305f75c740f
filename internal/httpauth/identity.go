package httpauth

import (
	"context"
	"os"
	"os/user"
	"slices"
	"strconv"
)

// How a caller was authenticated (Identity.Method).
const (
	// MethodToken: a bearer token of the token file.
	MethodToken = "token"
	// MethodSession: the page's login cookie, issued for a token.
	MethodSession = "session"
	// MethodProxy: X-Forwarded-User or X-Forwarded-Email from a trusted
	// proxy.
	MethodProxy = "proxy"
	// MethodLocal: no authentication configured; the listener is on
	// loopback and every caller is the local user.
	MethodLocal = "local"
)

// Identity is who a request comes from, as the Guard authenticated it.
type Identity struct {
	// Name is the token's name (its fingerprint, token-xxxxxxxx, when the
	// file names none), the proxy's X-Forwarded-User (else
	// X-Forwarded-Email), or local:<os user>.
	Name string
	// Method is how: MethodToken, MethodSession, MethodProxy or
	// MethodLocal.
	Method string
	// Agents are the agents a token is bound to; empty: any.
	Agents []string
}

// MayWrite reports whether the caller may write the sessions of agent:
// true unless its token is bound to other agents.
func (id Identity) MayWrite(agent string) bool {
	return len(id.Agents) == 0 || slices.Contains(id.Agents, agent)
}

type identityKey struct{}

// WithIdentity returns ctx carrying id (the Guard does this for every
// request it lets through).
func WithIdentity(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// IdentityOf returns the identity the Guard authenticated for the request
// of ctx; false when the request did not pass a Guard.
func IdentityOf(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(identityKey{}).(Identity)
	return id, ok
}

// LocalName is the identity of a loopback caller where no authentication
// is configured: "local:" and the user running this process (its uid when
// the name cannot be read).
func LocalName() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return "local:" + u.Username
	}
	return "local:uid-" + strconv.Itoa(os.Getuid())
}
