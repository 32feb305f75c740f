package gemini

import (
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/harness"
)

// Gemini CLI's hook events.
const (
	SessionStart        = "SessionStart"
	BeforeAgent         = "BeforeAgent"
	BeforeModel         = "BeforeModel"
	BeforeToolSelection = "BeforeToolSelection"
	AfterModel          = "AfterModel"
	BeforeTool          = "BeforeTool"
	AfterTool           = "AfterTool"
	PreCompress         = "PreCompress"
	Notification        = "Notification"
	AfterAgent          = "AfterAgent"
	SessionEnd          = "SessionEnd"
)

// DefaultHookLimit is Gemini CLI's default timeout of a command hook.
const DefaultHookLimit = 60 * time.Second

// stages is the one table of Gemini CLI's events: the stage each is
// recorded as; "" for those recorded as a harness.event (the model's
// requests and its streamed chunks, the tool selection, notifications).
// PreCompress is compact.before only when manual: an automatic one, which
// Gemini CLI fires on every compression check, is a harness.event
// (Input.Map). It is never written.
var stages = harness.Table{
	{Name: SessionStart, Stage: events.StageRunStarted},
	{Name: BeforeAgent, Stage: events.StageIntake},
	{Name: BeforeModel},
	{Name: BeforeToolSelection},
	{Name: AfterModel},
	{Name: BeforeTool, Stage: events.StageToolBefore},
	{Name: AfterTool, Stage: events.StageToolAfter},
	{Name: PreCompress, Stage: events.StageCompactBefore},
	{Name: Notification},
	{Name: AfterAgent, Stage: events.StageStop},
	{Name: SessionEnd, Stage: events.StageRunCompleted},
}

// Events returns Gemini CLI's hook events, in the order a session meets
// them.
func Events() []string { return stages.Names() }

// StageOf returns the stage Gemini CLI's event is recorded as; "" for an
// event recorded as a harness.event, or one Gemini CLI does not have.
func StageOf(event string) events.Stage { return stages.StageOf(event) }
