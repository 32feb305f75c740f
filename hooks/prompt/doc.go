// Package prompt is the prompt hook: an interceptor that asks a language
// model, in one call, whether an event of an agent's run may go on, the way
// Claude Code's "type": "prompt" hooks do. The template's $ARGUMENTS is
// replaced by the event as JSON (Input); the model answers Claude Code's
// {"ok": true} or {"ok": false, "reason": "..."}; ok allows, not ok denies
// with the reason (continues the run on stop, stops it on step.started,
// gives the reason to the model on tool.after). A model that fails, times out (default 30s) or answers
// without a verdict is a failure, handled by the registration's policy
// (fail-open by default) and recorded as hook.failed.
//
//	hook, err := prompt.New(prompt.Config{
//		Prompt:    "Is this shell command safe to run on a build machine? $ARGUMENTS",
//		Model:     haiku, // a loop.Model: openai, anthropic, scripted
//		ModelName: "anthropic:claude-haiku-4-5",
//		Cache:     remote.NewDecisionCache(b), // shared by every worker; optional
//	})
//	unregister, err := chain.Register(interceptors.Registration{
//		Plugin: "safe-bash", Stage: events.StageToolBefore, Tools: "Bash",
//		Timeout: hook.Timeout(),
//	}, hook)
//
// With a Cache, the same hook (its id: template, model and stage) on the
// same input (a hash of the stage, agent, subject and payload, without the
// ids of one call) within the TTL reuses the decision instead of calling
// the model; hook.decided carries the annotation cache=hit. The bus' KV
// bucket hookbus_decisions (remote.DecisionCache) shares it between workers;
// MemoryCache keeps it in one process. docs/PROTOCOL.md ("Prompt and agent
// hooks") has the input, the mapping and the cache in full.
//
// ParseVerdict, Verdict.Decision, EventInput and Render are shared with the
// agent hook (package hooks/agenthook).
package prompt
