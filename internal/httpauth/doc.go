// Package httpauth is what every hookbus HTTP listener stands behind: the
// web page (observer ui), the Claude Code gateway (loop gateway) and the
// Prometheus endpoints (loop serve and observer otel --metrics).
//
// A Guard wraps a handler and, before the handler reads or answers
// anything:
//
//   - serves only its own host names: a loopback name (localhost,
//     127.0.0.1, [::1]) with the listener's port, or the host of a
//     configured public URL; any other Host gets 421 Misdirected Request,
//     so a site that rebinds its name to this address reads nothing;
//   - refuses a state-changing request (POST, ...) from another origin
//     (403): net/http's CrossOriginProtection, and an Origin, when sent,
//     must be one of the served origins;
//   - authenticates the caller: a bearer token of the token file
//     (compared in constant time), the page's login cookie (a random
//     session id whose session this process keeps in memory: signing out
//     ends it, a restart signs everyone out), or the identity headers
//     X-Forwarded-User / X-Forwarded-Email when the peer is a trusted
//     proxy that sends the shared proxy secret (from any other peer, or
//     without the secret, they are removed). With no way to authenticate
//     configured, the listener must be on loopback and every caller is
//     the local user ("local:<os user>").
//
// The handler reads who called with IdentityOf. Flags registers the
// listener flags a command takes (--public-url, --token-file,
// --trusted-proxy, --trusted-proxy-secret-file, --session-ttl,
// --http-tls-cert, --http-tls-key) and Flags.Listen opens the
// listener, refusing a non-loopback address without authentication:
//
//	var f httpauth.Flags
//	f.Register(fs)
//	ln, err := f.Listen("127.0.0.1:8080", httpauth.Options{Name: "observer ui", Login: true})
//	err = ln.Serve(ctx, handler) // until ctx ends
//
// docs/SECURITY.md says who may do what through each listener.
package httpauth
