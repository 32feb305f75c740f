// Package e2e tests hookbus as the hook backend of the coding agents' CLIs
// end to end, with processes: the loop and observer binaries built from this
// tree, a real embedded NATS server, a remote interceptor (the guard: it
// denies rm -rf and rewrites "touch original.txt"), and, when they are on
// PATH, the real CLIs, each talking to a fake of its model API
// (internal/fakellm) that streams scripted turns: a shell tool call, then
// an answer.
//
//   - Claude Code (npm @anthropic-ai/claude-code): the Anthropic Messages
//     API at ANTHROPIC_BASE_URL; hooks in the project's .claude/settings.json.
//   - Gemini CLI (npm @google/gemini-cli): the Gemini API at
//     GOOGLE_GEMINI_BASE_URL with GEMINI_API_KEY; hooks and the API key's
//     auth in ~/.gemini/settings.json; the workspace trusted by
//     GEMINI_CLI_TRUST_WORKSPACE=true.
//   - Codex CLI (npm @openai/codex): the OpenAI Responses API as a model
//     provider in $CODEX_HOME/config.toml (wire_api = "responses"); hooks in
//     $CODEX_HOME/hooks.json, trusted by --dangerously-bypass-hook-trust.
//   - OpenCode (npm opencode-ai) and Kilo Code (npm @kilocode/cli): an
//     @ai-sdk/openai-compatible provider at the fake (OpenAI chat
//     completions, internal/fakellm's TurnServer) in the project's
//     opencode.json or kilo.json; hookbus' plugin (sdk/opencode-plugin) in
//     .opencode/plugins or .kilo/plugins posting to loop gateway; a
//     rewriting guard registered on the shell kind. Each starts slowly, so
//     each runs once in the suite (in TestPolicyEveryAgent: the guard's
//     rewrite and the policy's deny in one session).
//
// Each CLI's settings send every hook event it offers to loop agent-hook
// --harness claude|gemini|codex. For each CLI the tests check, in one
// session, that the rewritten command is the one that runs and that the
// guard's deny keeps the directory and reaches the model (read from what
// the fake received), and that observer replay shows the session under
// the CLI's own session id; for Claude Code also that a permission prompt
// waits for observer approve. Other tests drive loop claude-hook, Claude
// Code's own bridge.
//
// One policy for every agent (policy_test.go): a CEL policy file applied
// with observer policy apply, and no interceptor of the tests' deciding,
// denies rm -rf in hookbus' own agent (loop run against loop fake-model)
// and in each CLI above and below, wired as their tests wire them; each
// model is told the policy's message and hook.decided names the policy,
// its version and rule. Then observer policy test over the sessions: the
// policy as applied changes nothing, its next version (which also denies
// touch) flips exactly each session's touch, by run and call id, per
// agent and harness. The CLIs run at once, four at a time.
//
// The recipes of docs/CODING_AGENTS.md are run as written (recipes_test.go):
// each CLI's settings snippet is read from the page (the fenced block after
// its "<!-- e2e:NAME -->" marker), with the test's loop and connection in
// place of the page's, and the CLI runs against a loop fake-model process
// (its --record file shows what the CLI told the model):
//
//   - GitHub Copilot CLI (npm @github/copilot): COPILOT_OFFLINE with
//     COPILOT_PROVIDER_BASE_URL; hooks in the project's .github/hooks,
//     trusted by --trust-folder.
//   - Qwen Code (npm @qwen-code/qwen-code): --auth-type openai with
//     OPENAI_BASE_URL; hooks in ~/.qwen/settings.json.
//   - Factory Droid (npm @factory/cli and @factory/cli-linux-x64): the fake
//     as a custom model in ~/.factory/settings.json, droid exec -m
//     custom:fake-0; hooks in the same file.
//   - Cline (npm cline): cline auth -p openai-compatible; its hook script
//     installed as each event's file in ~/.cline/hooks. Cline leaves a hub
//     daemon in a process group of its own: the test stops it.
//   - Gemini CLI and Codex CLI with docs/CLAUDE_CODE.md's snippets, which
//     must record a whole session, its prompt and its end.
//
// "make e2e" installs the CLIs at pinned versions into
// $(HOME)/.cache/hookbus/<cli> and runs these tests with them on PATH; a
// CLI that is not there ("make test") skips its tests, saying so. Nothing
// reaches the internet: each CLI's HOME is a temporary directory and its
// model API the fake (Claude Code with CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC,
// Codex CLI with analytics off).
package e2e
