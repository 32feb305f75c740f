// Command hookbus-hook is the cheapest command hook of a coding agent that
// only runs commands (Gemini CLI, Codex CLI, Claude Code's command hooks):
// it posts its stdin, the hook input, to a running loop gateway's route for
// the agent and prints the gateway's answer on stdout. It links nothing but
// the standard library's network code (no NATS client, no TLS, no HTTP
// client, no command framework, not even fmt), so that starting it costs
// about a millisecond where loop agent-hook costs ten. Build it without cgo
// (CGO_ENABLED=0, as make build does): a static binary loads no libc and
// starts a millisecond sooner. On Linux it connects to a gateway given by
// IP address with the socket calls themselves (no network poller, no
// other thread woken), and reads the answer to its Content-Length.
//
//	hookbus-hook http://127.0.0.1:9466/gemini-cli
//	hookbus-hook --policy fail http://10.0.0.5:9466/codex-cli/ci-bot
//
// It speaks plain HTTP: run the gateway on the same machine, or on a
// network you trust (over https, use loop agent-hook). The URL may also
// come from $HOOKBUS_GATEWAY_URL, the bearer token from
// $HOOKBUS_GATEWAY_TOKEN or --token-file. When the gateway cannot answer
// (down, refusing the token, the input unreadable) --policy decides, as
// loop agent-hook's does: ignore (the default) exits 1 with the cause on
// stderr, which the agents show and go on; fail exits 2 with the cause on
// stderr, which blocks the tool call or prompt and tells the model why.
// docs/OPENCODE.md, "The cheapest hook", has the settings.
package main
