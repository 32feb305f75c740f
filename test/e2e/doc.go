// Package e2e tests the Claude Code bridge end to end, with processes: the
// loop and observer binaries built from this tree, a real embedded NATS
// server, a remote interceptor, and, when it is on PATH, the real Claude
// Code (the npm package @anthropic-ai/claude-code) talking to a fake
// Anthropic Messages API (internal/fakellm) that streams scripted replies.
//
// "make e2e" installs Claude Code into $(HOME)/.cache/hookbus/claude and
// runs these tests with it on PATH; without it ("make test") the tests that
// need it are skipped, saying so. Nothing reaches the internet: Claude
// Code's ANTHROPIC_BASE_URL is the fake, its HOME a temporary directory,
// and CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC is set.
package e2e
