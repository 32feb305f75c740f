package policy

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hookbus/hookbus/events"
)

// Input is what a policy decides on: an event, its tool call when it
// carries one, who put it on the bus and who asked.
type Input struct {
	// Event is the event being decided (its Data the payload as the chain
	// has it).
	Event *events.Event
	// Call is the tool call the payload carries (tool stages), or nil.
	Call *events.ToolCall
	// Harness names who put the call on the bus (events.Harness: hookbus,
	// claude, gemini, codex, copilot, qwen, factory, cline, opencode,
	// kilo).
	Harness string
	// Identity is the caller's authenticated identity, when known.
	Identity string
}

// HarnessOf names the harness that put ev on the bus, from its source
// ("hookbus/<agent>" for the coding-agent bridge: "hookbus/claude-code" is
// claude); hookbus for anything else, hookbus' own loop among them.
func HarnessOf(ev *events.Event) events.Harness {
	if rest, ok := strings.CutPrefix(ev.Source, "hookbus/"); ok {
		for _, h := range []events.Harness{events.HarnessClaude, events.HarnessGemini, events.HarnessCodex, events.HarnessCopilot,
			events.HarnessQwen, events.HarnessFactory, events.HarnessCline, events.HarnessOpenCode, events.HarnessKilo} {
			if strings.HasPrefix(rest, string(h)) {
				return h
			}
		}
	}
	return events.HarnessHookbus
}

// InputFrom is the Input of ev: its tool call read from the payload on
// the stages that carry one, the harness from its source (HarnessOf).
// A payload that is not a JSON object is an error wrapping ErrEvaluation.
func InputFrom(ev *events.Event, identity string) (*Input, error) {
	return inputFrom(ev, identity, false)
}

// inputFrom is InputFrom; reference reads the call with encoding/json
// only, what the fast reader (readCall) must agree with.
func inputFrom(ev *events.Event, identity string, reference bool) (*Input, error) {
	in := &Input{Event: ev, Harness: string(HarnessOf(ev)), Identity: identity}
	switch ev.Stage {
	case events.StageToolBefore, events.StageToolAfter, events.StageToolFailed, events.StageApprovalRequested:
		if len(ev.Data) == 0 {
			break
		}
		if !reference {
			if call, ok := readCall(ev.Data); ok {
				in.Call = call
				break
			}
		}
		var p struct {
			Call *events.ToolCall `json:"call"`
		}
		if err := json.Unmarshal(ev.Data, &p); err != nil {
			return nil, fmt.Errorf("%w: %s payload: %v", ErrEvaluation, ev.Stage, err)
		}
		in.Call = p.Call
	}
	return in, nil
}
