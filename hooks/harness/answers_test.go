package harness_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/claudecode"
	"github.com/hookbus/hookbus/hooks/cline"
	"github.com/hookbus/hookbus/hooks/codex"
	"github.com/hookbus/hookbus/hooks/copilot"
	"github.com/hookbus/hookbus/hooks/factory"
	"github.com/hookbus/hookbus/hooks/gemini"
	"github.com/hookbus/hookbus/hooks/harness"
	"github.com/hookbus/hookbus/hooks/opencode"
	"github.com/hookbus/hookbus/hooks/qwen"
	"github.com/hookbus/hookbus/interceptors"
)

var update = flag.Bool("update", false, "rewrite testdata/answers.golden")

// TestAnswers pins every harness's answer to each decision its events'
// stages accept, to an approval, and to an outage under each policy: the
// answers the coding agents read stay the same byte for byte.
func TestAnswers(t *testing.T) {
	protos := []struct {
		p   harness.Protocol
		dir string
	}{
		{claudecode.Harness{}, "claudecode"},
		{claudecode.Harness{Options: claudecode.AnswerOptions{ApproveModified: true}}, "claudecode"},
		{gemini.Harness{}, "gemini"},
		{codex.Harness{}, "codex"},
		{copilot.Harness(), "copilot"},
		{qwen.Harness(), "qwen"},
		{factory.Harness(), "factory"},
		{cline.Harness{}, "cline"},
		{opencode.OpenCode, "claudecode"},
		{opencode.Kilo, "claudecode"},
	}
	var got bytes.Buffer
	for i, h := range protos {
		files, err := filepath.Glob(filepath.Join("..", h.dir, "testdata", "reference", "*.json"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no reference inputs (%v)", h.dir, err)
		}
		sort.Strings(files)
		for _, f := range files {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			in, err := h.p.Parse(raw)
			if err != nil {
				continue // an event this harness does not post
			}
			m, err := in.Map()
			if err != nil {
				t.Fatalf("%d %s %s: map: %v", i, h.p.Name(), f, err)
			}
			head := fmt.Sprintf("%d %s %s", i, h.p.Name(), filepath.Base(f))
			for _, c := range outcomes(t, m) {
				r, err := in.Answer(c.out)
				fmt.Fprintf(&got, "%s %s: %s\n", head, c.name, show(r, err))
			}
			for _, p := range []interceptors.Policy{interceptors.PolicyIgnore, interceptors.PolicyFail} {
				r := in.Outage(p, errors.New("bus down"))
				fmt.Fprintf(&got, "%s outage %s: %s\n", head, p, show(r, nil))
			}
		}
	}
	golden := filepath.Join("testdata", "answers.golden")
	if *update {
		if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		gl, wl := bytes.Split(got.Bytes(), []byte("\n")), bytes.Split(want, []byte("\n"))
		for i := 0; i < len(gl) && i < len(wl); i++ {
			if !bytes.Equal(gl[i], wl[i]) {
				t.Fatalf("answers changed; first difference:\n got %s\nwant %s", gl[i], wl[i])
			}
		}
		t.Fatalf("answers changed: %d lines, want %d", len(gl), len(wl))
	}
}

type outcome struct {
	name string
	out  *harness.Outcome
}

// outcomes are the outcomes to answer on m: nothing, each decision its
// stage accepts (with warnings and a failure the chain went past), a
// modify of data that does not decode, and on approval.requested each
// approval answer.
func outcomes(t *testing.T, m *harness.Mapped) []outcome {
	out := []outcome{{"nil", nil}, {"empty", &harness.Outcome{Warnings: []string{"w1"}}}}
	if m == nil {
		return out
	}
	st := m.Stage
	if st == events.StageApprovalRequested {
		st = events.StageToolBefore
		for _, a := range []*events.ApprovalResolved{
			{CallID: "c", Approved: true, Action: events.ActionApprove},
			{CallID: "c", Approved: true, Action: events.ActionApprove, Arguments: json.RawMessage(`{"edited":true}`)},
			{CallID: "c", Action: events.ActionRejectAndContinue, By: "ann", Reason: "no"},
			{CallID: "c", Action: events.ActionRejectAndContinue, Expired: true},
		} {
			out = append(out, outcome{"approval " + string(a.Action), &harness.Outcome{Approval: a}})
		}
	}
	data := modified(t, m.Payload)
	recs := []interceptors.CallRecord{{Plugin: "p1", Warnings: []string{"careful"}},
		{Plugin: "p2", Failure: &interceptors.CallFailure{Kind: events.FailTimeout, Outcome: interceptors.FailedOpen}}}
	for _, k := range interceptors.StageKinds(st) {
		for _, reason := range []string{"", "because"} {
			c := &interceptors.ChainResult{Stage: st, Decision: k, Reason: reason, Plugin: "p1", Data: data, Records: recs}
			if reason != "" {
				c.Context = []string{"ctx one", "ctx two"}
			}
			if k == interceptors.Mock {
				c.Mock = &events.ToolResult{Content: reason, Mocked: true} // "" where the mock gave no text
			}
			out = append(out, outcome{fmt.Sprintf("%s %q", k, reason), &harness.Outcome{Chain: c, Warnings: []string{"w1"}}})
		}
		if k == interceptors.Mock { // a mock that gave no text
			c := &interceptors.ChainResult{Stage: st, Decision: k, Reason: "mocked by p1", Plugin: "p1", Data: data, Mock: &events.ToolResult{Mocked: true}}
			out = append(out, outcome{"mock no text", &harness.Outcome{Chain: c}})
		}
	}
	bad := &interceptors.ChainResult{Stage: st, Decision: interceptors.Modify, Data: json.RawMessage(`[`)}
	return append(out, outcome{"modify undecodable", &harness.Outcome{Chain: bad}})
}

// modified is p as an interceptor could have changed it, as JSON.
func modified(t *testing.T, p any) json.RawMessage {
	switch v := p.(type) {
	case events.ToolBefore:
		v.Call.Arguments = json.RawMessage(`{"command":"ls -la","n":1}`)
		p = v
	case events.ApprovalRequested:
		v.Call.Arguments = json.RawMessage(`{"command":"ls -la","n":1}`)
		p = events.ToolBefore{Call: v.Call}
	case events.ToolAfter:
		v.Result.Content = "changed result"
		p = v
	case events.Intake:
		v.Prompt += " and more"
		p = v
	case events.SubagentBefore:
		v.Instruction += " and more"
		p = v
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func show(r *harness.Reply, err error) string {
	if err != nil {
		return "error " + fmt.Sprint(errors.Is(err, events.ErrPayload))
	}
	return fmt.Sprintf("exit %d stdout %s stderr %q", r.Exit, r.Stdout, r.Stderr)
}
