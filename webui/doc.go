// Package webui serves hookbus' web timeline: a page an auditor or an
// operator opens in a browser to see sessions and runs (with filters), a
// run's timeline (steps, model calls, tool calls, every interceptor
// decision with its plugin, latency and the change it made drawn as a
// diff), child runs nested under the call that started them, live updates
// while a run goes, per-plugin stats, and the tool calls waiting for a
// human, with Approve / Reject / Reject-and-continue buttons when the
// server allows answers, and the policies (Config.Policies): each with its
// mode and rollout, its enforced and would-be hits, and its last test
// against history. A run's page says whether its record verifies
// (audit.Verifier: its hash chain, and its end signed by a key of
// Config.Trust), or what was removed, inserted, altered or reordered, by
// the rule observer verify's exit code follows (audit.Problem.Fails).
//
// The lists are package audit's folds, the same values observer runs,
// sessions and stats print: audit.Runs (with Runs.Decisions),
// audit.SessionsOf, audit.Stats.Plugins, audit.Approvals.
//
// Everything comes from the event stream: the server replays it (bounded:
// Config.MaxScan events per request) and tails it for the live updates
// (server-sent events, one ordered consumer per open page, ended with the
// request). The page is three embedded files (HTML, CSS, vanilla JS): no
// framework, no build step, nothing loaded from the internet. The JSON
// endpoints are documented in docs/PROTOCOL.md, "The web page".
//
// Start one over a bus and serve it behind the listener every hookbus HTTP
// server uses (observer ui does this; internal/httpauth):
//
//	srv, err := webui.New(webui.Config{Bus: b, Where: "nats://127.0.0.1:4222"})
//	ln, err := flags.Listen("127.0.0.1:8080", httpauth.Options{Name: "observer ui", Login: true})
//	err = ln.Serve(ctx, srv)
//
// The listener serves only its own host names, refuses cross-site state
// changes and authenticates the caller (docs/SECURITY.md). The server is
// read-only unless Config.AllowApprovals is set: the buttons are then shown
// and POST /api/runs/{run}/answer records the answer exactly as observer
// approve|reject do (approval.Answer, on the server's own NATS user's
// subject, which vouches for the caller's authenticated identity, never a
// name the request carries; a worker then resumes the run). Without an
// identity (the server not behind the listener) answers are refused
// (ErrUnauthenticated).
package webui
