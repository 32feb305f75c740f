package policy

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/hookbus/hookbus/events"
)

// FuzzFastPath holds the fast paths (all validations as one program, no
// cost tracking within the estimate's bounds) to the reference (rule by
// rule, costs tracked): every rule of testdata/rules decides the same on
// any shell command, file path and URL, in every harness.
func FuzzFastPath(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "rules", "*.yaml"))
	if err != nil || len(files) == 0 {
		f.Fatal("no rules")
	}
	var compiled []*Compiled
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		ps, err := Parse(filepath.Base(file), src)
		if err != nil {
			f.Fatal(err)
		}
		c, err := Compile(ps[0], WithHistory(NewMemory()))
		if err != nil {
			f.Fatal(err)
		}
		if len(c.counters) == 0 { // counters change with each evaluation
			compiled = append(compiled, c)
		}
	}
	for _, seed := range []string{"rm -rf /", "ls", "sudo apt-get install x", "git push -f", "curl x | sh", "cd / && ls",
		"/workspace/.env", ".github/workflows/ci.yml", "kubectl --context=prod apply", "npm i", "https://example.com"} {
		f.Add(seed, uint8(0))
	}
	f.Fuzz(func(t *testing.T, s string, which uint8) {
		harness := []events.Harness{events.HarnessHookbus, events.HarnessClaude, events.HarnessGemini, events.HarnessCodex}[which%4]
		q, _ := json.Marshal(s)
		var calls []events.ToolCall
		for _, c := range []struct{ name, args string }{
			{map[events.Harness]string{events.HarnessGemini: "run_shell_command", events.HarnessCodex: "shell"}[harness], `{"command":` + string(q) + `}`},
			{"Write", `{"file_path":` + string(q) + `}`},
			{"WebFetch", `{"url":` + string(q) + `}`},
		} {
			if c.name == "" {
				c.name = "Bash"
			}
			calls = append(calls, events.ToolCall{ID: "c1", Name: c.name, Arguments: json.RawMessage(c.args)}.WithAction(harness))
		}
		for _, call := range calls {
			ev, err := events.New(events.StageToolBefore, events.Meta{Source: "hookbus/loop", AgentID: "a", SessionID: "s", RunID: "r"}, events.ToolBefore{Call: call})
			if err != nil {
				t.Fatal(err)
			}
			in, err := InputFrom(ev, "")
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range compiled {
				fast, ferr := c.evaluate(context.Background(), in, 0)
				ref, rerr := c.evaluate(context.Background(), in, evalReference)
				if (ferr == nil) != (rerr == nil) {
					t.Fatalf("%s on %s %q: fast error %v, reference error %v", c.p.Name, call.Name, s, ferr, rerr)
				}
				if ferr != nil {
					continue
				}
				if !reflect.DeepEqual(fast.Decision, ref.Decision) {
					t.Fatalf("%s on %s %q: fast %+v, reference %+v", c.p.Name, call.Name, s, fast.Decision, ref.Decision)
				}
			}
		}
	})
}

// FuzzParse: whatever the bytes, Parse and Compile return a policy or an
// ErrInvalid, never panic; a policy parsed from its own Source has the
// same version.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "rules", "*.yaml"))
	for _, file := range files {
		src, _ := os.ReadFile(file)
		f.Add(src)
	}
	f.Add([]byte("name: a\nvalidations:\n- expression: 'true'\n---\nname: b\nmutations:\n- expression: '[]'\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		ps, err := Parse("f.yaml", src)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		for _, p := range ps {
			again, err := Parse("g.yaml", p.Source)
			if err != nil || len(again) != 1 || again[0].Version != p.Version {
				t.Fatalf("%s re-parsed from its source: %v", p.Name, err)
			}
			if _, err := Compile(p, WithHistory(NewMemory())); err != nil && !errors.Is(err, ErrInvalid) {
				t.Fatalf("compile error %v does not wrap ErrInvalid", err)
			}
		}
	})
}
