package main

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

// demoPlugin is the plugin id of the demo's in-process hook.
const demoPlugin = "demo-redactor"

// registerDemoHook registers the hook of "loop run --demo-hook" (make run)
// on chain: on tool.after of the clock, it keeps the date and replaces the
// time of day, so the trace shows a hook.decided with its patch and the
// answer shows its effect. The raw result stays in tool.result, for
// auditors.
func registerDemoHook(chain *interceptors.Chain) error {
	_, err := chain.Register(interceptors.Registration{Plugin: demoPlugin, Stage: events.StageToolAfter, Tools: "clock"},
		interceptors.Func(redactTimeOfDay))
	return err
}

func redactTimeOfDay(_ context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
	p, err := events.Data[events.ToolAfter](req.Event)
	if err != nil {
		return nil, err
	}
	date, _, ok := strings.Cut(p.Result.Content, "T") // RFC 3339: 2026-11-23T15:18:46Z
	if p.Result.IsError || !ok {
		return nil, nil // allow: nothing to redact
	}
	v, err := json.Marshal(date + " (time of day redacted by the " + demoPlugin + " hook)")
	if err != nil {
		return nil, err
	}
	return &interceptors.Decision{
		Kind:   interceptors.Modify,
		Patch:  []interceptors.PatchOp{{Op: "replace", Path: "/result/content", Value: v}},
		Reason: "the demo's policy: the model gets the date, not the time",
	}, nil
}
