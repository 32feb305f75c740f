package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/scripted"
)

// observer show prints a run as people read it: arguments, the changes a
// hook made and its reasons as they were written, without JSON's \u0026
// for & or Go's \" for a quote.
func TestShowReadable(t *testing.T) {
	srv, nc := bustest.Start(t, bustest.WithListener())
	b := bustest.Provision(t, nc)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	chain := interceptors.NewChain()
	if _, err := chain.Register(interceptors.Registration{Plugin: "sandbox", Stage: events.StageToolBefore, Tools: "Bash"},
		interceptors.Func(func(ctx context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
			return &interceptors.Decision{Kind: interceptors.Modify, Reason: `writes go to "safe.txt" & nowhere else`,
				Patch: []interceptors.PatchOp{{Op: "replace", Path: "/call/arguments/command", Value: json.RawMessage(`"ls -la && cat main.py > safe.txt"`)}}}, nil
		})); err != nil {
		t.Fatal(err)
	}
	bash := loop.ToolFunc(events.ToolSpec{Name: "Bash"}, func(context.Context, json.RawMessage) (string, error) { return `wrote "safe.txt" <ok>`, nil })
	eng, err := loop.New(loop.Config{Emitter: b, History: b, Hooks: chain, Tools: []loop.Tool{bash}, Model: scripted.New(&scripted.Script{Replies: []scripted.Reply{
		{Content: "Listing.", ToolCalls: []scripted.ToolCall{{Name: "Bash", Arguments: json.RawMessage(`{"command":"ls -la && cat main.py > out.txt"}`)}}},
		{Content: `Done: "safe.txt" has it.`}}})})
	if err != nil {
		t.Fatal(err)
	}
	res, err := eng.Run(ctx, &events.RunRequest{AgentID: "a", SessionID: "s", Prompt: `list & save to "out.txt"`})
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := observer(t, "show", res.RunID, "--nats", srv.ClientURL())
	if code != exitOK {
		t.Fatalf("observer show: exit %d\n%s", code, errOut)
	}
	for _, want := range []string{
		`tool Bash {"command":"ls -la && cat main.py > safe.txt"} → "wrote "safe.txt" <ok>"`,
		`▸ sandbox on tool.before: modify "writes go to "safe.txt" & nowhere else"`,
		`- /call/arguments/command: "ls -la && cat main.py > out.txt"`,
		`+ /call/arguments/command: "ls -la && cat main.py > safe.txt"`,
		`intake "list & save to "out.txt""`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("observer show does not print %s\n%s", want, out)
		}
	}
	for _, escaped := range []string{`\u0026`, `\u003e`, `\u003c`, `\"`} {
		if strings.Contains(out, escaped) {
			t.Errorf("observer show prints %s\n%s", escaped, out)
		}
	}
}
