package policy_test

import (
	"testing"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/policy"
)

// Every coding agent's bridge is its harness, by the source it writes
// ("hookbus/" and the harness's default agent id); anything else is
// hookbus' own.
func TestHarnessOf(t *testing.T) {
	for source, want := range map[string]events.Harness{
		"hookbus/claude-code": events.HarnessClaude, "hookbus/gemini-cli": events.HarnessGemini, "hookbus/codex-cli": events.HarnessCodex,
		"hookbus/copilot-cli": events.HarnessCopilot, "hookbus/qwen-code": events.HarnessQwen, "hookbus/factory-droid": events.HarnessFactory,
		"hookbus/cline": events.HarnessCline, "hookbus/opencode": events.HarnessOpenCode, "hookbus/kilo-code": events.HarnessKilo,
		"hookbus/loop": events.HarnessHookbus, "agents.yaml": events.HarnessHookbus,
	} {
		if got := policy.HarnessOf(&events.Event{Source: source}); got != want {
			t.Errorf("HarnessOf(%q) = %s, want %s", source, got, want)
		}
	}
}
