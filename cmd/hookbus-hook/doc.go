// Command hookbus-hook is the cheapest command hook of a coding agent that
// only runs commands (Gemini CLI, Codex CLI, Claude Code's command hooks):
// it posts its stdin, the hook input, to a running loop gateway's route for
// the agent and prints the gateway's answer on stdout. It links nothing but
// the standard library's network and TLS code (no NATS client, no command
// framework), so that starting it costs about a millisecond where loop
// agent-hook costs ten:
//
//	hookbus-hook http://127.0.0.1:9466/gemini-cli
//	hookbus-hook --policy fail https://hooks.example.com/codex-cli/ci-bot
//
// The URL may also come from $HOOKBUS_GATEWAY_URL, the bearer token from
// $HOOKBUS_GATEWAY_TOKEN or --token-file. When the gateway cannot answer
// (down, refusing the token, the input unreadable) --policy decides, as
// loop agent-hook's does: ignore (the default) exits 1 with the cause on
// stderr, which the agents show and go on; fail exits 2 with the cause on
// stderr, which blocks the tool call or prompt and tells the model why.
// docs/CODING_AGENTS.md has each agent's settings.
package main
