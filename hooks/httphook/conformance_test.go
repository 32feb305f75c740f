package httphook_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/claudecode"
	"github.com/hookbus/hookbus/hooks/claudecode/claudecodetest"
	"github.com/hookbus/hookbus/hooks/httphook"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/interceptors/interceptorstest"
)

// ClaudeCodeFeatures are what Claude Code's hook protocol cannot carry.
var ClaudeCodeFeatures = interceptorstest.Features{
	PanicKind:        events.FailError,
	Stages:           []events.Stage{events.StageIntake, events.StageToolBefore, events.StageToolAfter, events.StageStop, events.StageSubagentBefore},
	NoMock:           true,
	NoAnnotations:    true,
	NoPayloadReplace: true,
	NoPatchReply:     true,
	NoStageCheck:     true,
}

// TestConformance runs the conformance suite with each interceptor served
// as a Claude Code http hook server and called by an http hook.
func TestConformance(t *testing.T) {
	interceptorstest.Run(t, func(t *testing.T, reg interceptors.Registration, ic interceptors.Interceptor) interceptors.Interceptor {
		url := claudecodetest.Serve(t, reg, ic)
		evs := claudecode.EventsFor(reg.Stage)
		if len(evs) == 0 {
			t.Fatalf("no Claude Code event for %s: the features should have skipped this case", reg.Stage)
		}
		h, err := httphook.New(httphook.Config{}, evs[0], json.RawMessage(fmt.Sprintf(`{"type":"http","url":%q}`, url)))
		if err != nil {
			t.Fatal(err)
		}
		return h
	}, ClaudeCodeFeatures)
}
