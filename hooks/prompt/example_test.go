package prompt_test

import (
	"context"
	"fmt"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/prompt"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/loop/scripted"
)

// A prompt hook on tool.before: the model's verdict denies the call, and
// the reason goes back to the agent's model as the tool result.
func Example() {
	judge := scripted.New(&scripted.Script{Name: "judge", Replies: []scripted.Reply{
		{Content: `{"ok": false, "reason": "force-pushing main rewrites shared history"}`},
	}})
	hook, err := prompt.New(prompt.Config{
		Prompt: "Refuse git commands that rewrite shared history. The call: $ARGUMENTS",
		Model:  judge,
		Cache:  prompt.NewMemoryCache(nil),
	})
	if err != nil {
		panic(err)
	}
	chain := interceptors.NewChain()
	if _, err := chain.Register(interceptors.Registration{Plugin: "git-guard", Stage: events.StageToolBefore, Tools: "Bash", Timeout: hook.Timeout()}, hook); err != nil {
		panic(err)
	}
	for _, id := range []string{"call_1_1", "call_2_1"} {
		ev, _ := events.New(events.StageToolBefore, events.Meta{Source: "example", AgentID: "dev", SessionID: "s1", RunID: "r1", Subject: "Bash"},
			events.ToolBefore{Call: events.ToolCall{ID: id, Name: "Bash", Arguments: []byte(`{"command":"git push --force origin main"}`)}})
		out, err := chain.Run(context.Background(), ev)
		if err != nil {
			panic(err)
		}
		d := out.Records[0].HookDecided()
		fmt.Printf("%s: %s (cache %s, model %s)\n", out.Decision, out.Reason, d.Annotations["cache"], d.Annotations["model"])
	}
	// Output:
	// deny: force-pushing main rewrites shared history (cache miss, model scripted:judge)
	// deny: force-pushing main rewrites shared history (cache hit, model scripted:judge)
}
