package policy_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/policy"
)

// Bad policies are refused by Parse with a named error at their place in
// the file.
func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, src, want string
	}{
		{"unknown key", "name: p\nvalidations:\n- expresion: 'true'\n", `f.yaml:3:3: unknown key "expresion" in validations[0] (known: action, expression, message, messageExpression, name, reason)`},
		{"unknown top key", "name: p\nmatchh: {}\nvalidations:\n- expression: 'true'\n", `f.yaml:2:1: unknown key "matchh" in the policy`},
		{"unknown match key", "name: p\nmatch:\n  kind: [shell]\nvalidations:\n- expression: 'true'\n", `f.yaml:3:3: unknown key "kind" in match`},
		{"bad name", "name: 'no spaces'\nvalidations:\n- expression: 'true'\n", `f.yaml:1:7: policy no spaces: hookbus: invalid id`},
		{"no name", "validations:\n- expression: 'true'\n", `f.yaml:1:1: policy: hookbus: invalid id: policy id is empty`},
		{"bad mode", "name: p\nmode: enforcing\nvalidations:\n- expression: 'true'\n", `f.yaml:2:7: policy p: mode "enforcing" (want enforce, warn or audit)`},
		{"bad rollout", "name: p\nrollout: 120\nvalidations:\n- expression: 'true'\n", `f.yaml:2:10: policy p: rollout 120 is not a percentage`},
		{"rollout not a number", "name: p\nrollout: half\nvalidations:\n- expression: 'true'\n", "f.yaml:2:1: cannot unmarshal !!str `half` into int"},
		{"bad failure policy", "name: p\nfailurePolicy: open\nvalidations:\n- expression: 'true'\n", `f.yaml:2:16: policy p: failurePolicy "open" (want ignore or fail)`},
		{"bad action", "name: p\nvalidations:\n- expression: 'true'\n  action: block\n", `f.yaml:4:11: policy p: action "block" (want deny, ask or warn)`},
		{"bad stage", "name: p\nmatch:\n  stages: [tool.bfore]\nvalidations:\n- expression: 'true'\n", `f.yaml:3:12: policy p: stage "tool.bfore" is not a hookbus stage`},
		{"observe-only stage", "name: p\nmatch:\n  stages: [run.started]\nvalidations:\n- expression: 'true'\n", `policy p: stage run.started is observe-only`},
		{"bad kind", "name: p\nmatch:\n  kinds: [shel]\nvalidations:\n- expression: 'true'\n", `f.yaml:3:11: policy p: kind "shel" matches no action kind`},
		{"bad glob", "name: p\nmatch:\n  agents: ['[a-']\nvalidations:\n- expression: 'true'\n", `f.yaml:3:12: policy p: agents: glob "[a-" is malformed`},
		{"bad regexp", "name: p\nmatch:\n  tools: ['re:(']\nvalidations:\n- expression: 'true'\n", `policy p: tools: "re:(" is not a regular expression`},
		{"kinds off tool stages", "name: p\nmatch:\n  stages: [intake]\n  kinds: [shell]\nvalidations:\n- expression: 'true'\n", `policy p: kinds and tools match tool calls`},
		{"ask off tool.before", "name: p\nmatch:\n  stages: [intake]\nvalidations:\n- expression: 'true'\n  action: ask\n", `policy p: action ask needs stages that accept ask (intake accepts`},
		{"deny on tool.after", "name: p\nmatch:\n  stages: [tool.after]\nvalidations:\n- expression: 'true'\n", `f.yaml:5:3: policy p: action deny needs stages that accept deny or stop (tool.after accepts allow, modify): use action warn`},
		{"mutation on a stage without modify", "name: p\nmatch:\n  stages: [step.started]\nmutations:\n- expression: '[]'\n", `policy p: mutations need stages that accept modify`},
		{"duplicate rule", "name: p\nvalidations:\n- name: a\n  expression: 'true'\n- name: a\n  expression: 'false'\n", `f.yaml:5:3: policy p: rule "a" is defined twice`},
		{"variable name", "name: p\nvariables:\n- name: my-var\n  expression: '1'\nvalidations:\n- expression: 'true'\n", `policy p: variable name "my-var" is read in CEL as variables.my-var`},
		{"missing expression", "name: p\nvalidations:\n- name: a\n", `f.yaml:3:3: policy p: expression is required`},
		{"counter without window", "name: p\ncounters:\n- name: c\n  key: agent\nvalidations:\n- expression: 'true'\n", `policy p: counter c needs a positive window`},
		{"counter bad window", "name: p\ncounters:\n- name: c\n  key: agent\n  window: soon\nvalidations:\n- expression: 'true'\n", "f.yaml:5:1: cannot unmarshal !!str `soon` into time.Duration"},
		{"not a mapping", "- a\n- b\n", `f.yaml:1:1: a policy document is a mapping`},
		{"duplicate key", "name: p\nmode: warn\nname: q\nvalidations:\n- expression: 'true'\n", `f.yaml:3:1: mapping key "name" already defined at line 1`},
		{"duplicate key in 2nd doc", "name: a\nvalidations:\n- expression: 'true'\n---\nname: p\nname: q\n", `f.yaml:6:1: mapping key "name" already defined at line 5`},
		{"nothing to do", "name: p\n", `policy p: no validations and no mutations`},
		{"empty file", "# nothing\n", `f.yaml: no policy document`},
		{"yaml syntax in 2nd doc", "name: a\nvalidations:\n- expression: 'true'\n---\nname: b\nvalidations: [\n", `f.yaml:6:1: did not find expected node content`},
		{"same name twice", "name: a\nvalidations:\n- expression: 'true'\n---\nname: a\nvalidations:\n- expression: 'true'\n", `f.yaml:5:1: policy "a" is defined twice in the file (first at line 1)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := policy.Parse("f.yaml", []byte(tc.src))
			if !errors.Is(err, policy.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v\nwant it to hold %q", err, tc.want)
			}
		})
	}
}

// Parse reads several documents, applies the defaults and versions each
// by its content: spacing and comments do not change a version.
func TestParseDocuments(t *testing.T) {
	src := "# two policies\nname: a\nvalidations:\n- expression: 'true'\n---\nname: b\nmode: audit\nrollout: 0\nvalidations:\n- expression: 'false'\n"
	ps, err := policy.Parse("f.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 || ps[0].Name != "a" || ps[1].Name != "b" {
		t.Fatalf("policies = %+v", ps)
	}
	a := ps[0].Spec
	if a.Mode != policy.ModeEnforce || a.Rollout != 100 || a.FailurePolicy != "fail" || len(a.Match.Stages) != 1 ||
		a.Match.Stages[0] != "tool.before" || a.Validations[0].Name != "validation-1" || a.Validations[0].Action != policy.ActionDeny {
		t.Errorf("defaults: %+v", a)
	}
	if b := ps[1].Spec; b.Mode != policy.ModeAudit || b.Rollout != 0 {
		t.Errorf("b: %+v", b)
	}
	if string(ps[1].Source) != "name: b\nmode: audit\nrollout: 0\nvalidations:\n- expression: 'false'\n" {
		t.Errorf("source of b = %q", ps[1].Source)
	}
	again, err := policy.Parse("g.yaml", []byte("name:   a   # the same\nvalidations:\n  - expression: \"true\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if again[0].Version != ps[0].Version || !strings.HasPrefix(ps[0].Version, "sha256:") || len(ps[0].Version) != len("sha256:")+16 {
		t.Errorf("versions %s and %s: want the same sha256:16hex", again[0].Version, ps[0].Version)
	}
	if ps[0].Version == ps[1].Version {
		t.Error("two policies share a version")
	}
}

// Compile refuses expressions that do not type-check, refer to what does
// not exist, cost too much or need a history it was not given, pointing
// into the expression in the file.
func TestCompileRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		history   bool
		want      string
		is        error
	}{
		{"unknown field", "name: p\nvalidations:\n- name: r\n  expression: '!action.comand.contains(\"x\")'\n", false,
			`f.yaml:4:23: policy p: validation r: undefined field 'comand'`, nil},
		{"unknown variable", "name: p\nvalidations:\n- name: r\n  expression: 'variables.cmd == \"\"'\n", false,
			`f.yaml:4:16: policy p: validation r: undeclared reference to 'variables'`, nil},
		{"unknown identifier", "name: p\nvalidations:\n- expression: 'tool == \"Bash\"'\n", false,
			`f.yaml:3:16: policy p: validation validation-1: undeclared reference to 'tool'`, nil},
		{"unknown function", "name: p\nvalidations:\n- expression: 'action.command.shellSplit().size() > 0'\n", false,
			`f.yaml:3:41: policy p: validation validation-1: undeclared reference to 'shellSplit'`, nil},
		{"not a bool", "name: p\nvalidations:\n- expression: 'action.command'\n", false,
			`f.yaml:3:16: policy p: validation validation-1: the expression is of type string; it must be of type bool`, nil},
		{"message not a string", "name: p\nvalidations:\n- expression: 'true'\n  messageExpression: '1 + 1'\n", false,
			`f.yaml:4:23: policy p: validation validation-1: the expression is of type int; it must be of type string`, nil},
		{"mutation not a list", "name: p\nmutations:\n- expression: '{\"op\": \"remove\"}'\n", false,
			`policy p: mutation mutation-1: the expression is of type map(string, string); it must be a list of JSON Patch operations`, nil},
		{"syntax", "name: p\nvalidations:\n- expression: 'action.command.matches(\"x\"'\n", false,
			`f.yaml:3:`, nil},
		{"block scalar position", "name: p\nvalidations:\n- expression: |\n    action.kind == \"shell\" &&\n      action.nope\n", false,
			`f.yaml:5:13: policy p: validation validation-1: undefined field 'nope'`, nil},
		{"second document position", "name: a\nvalidations:\n- expression: 'true'\n---\nname: b\nvalidations:\n- expression: 'harness == 1'\n", false,
			`f.yaml:7:`, nil},
		{"too costly", "name: p\nvalidations:\n- expression: 'action.paths.all(p, action.paths.all(q, action.paths.all(r, (p + q + r).matches(action.command))))'\n", false,
			`estimated cost`, policy.ErrCostLimit},
		{"history without WithHistory", "name: p\nmatch:\n  kinds: [web.fetch]\nvalidations:\n- expression: '!session.seen(\"file.read\", \"\\\\.env$\")'\n", false,
			`f.yaml:5:29: policy p: validation validation-1: session.seen reads the record: compile with a history (WithHistory)`, policy.ErrNoHistory},
		{"counter without WithHistory", "name: p\ncounters:\n- name: n\n  key: agent\n  window: 1h\nvalidations:\n- expression: 'counters.n < 10.0'\n", false,
			`f.yaml:3:1: policy p: counters are kept in the record`, policy.ErrNoHistory},
		{"count off session", "name: p\nvalidations:\n- expression: 'agent.count(\"shell\", duration(\"1h\")) < 3'\n", true,
			`f.yaml:3:`, nil},
		{"bad pattern", "name: p\nvalidations:\n- expression: '!session.seen(\"shell\", \"(\")'\n", true,
			`f.yaml:3:39: policy p: validation validation-1: session.seen: error parsing regexp: missing closing )`, nil},
		{"bad kinds", "name: p\nvalidations:\n- expression: 'session.count(\"shel\", duration(\"1h\")) < 3'\n", true,
			`f.yaml:3:30: policy p: validation validation-1: session.count: "shel" matches no action kind`, nil},
		{"bad regexp constant", "name: p\nvalidations:\n- expression: 'action.command.matches(\"(\")'\n", false,
			`f.yaml:3:16: policy p: validation validation-1: error parsing regexp`, nil},
		{"bad duration constant", "name: p\nvalidations:\n- expression: 'session.count(\"shell\", duration(\"1x\")) < 3'\n", true,
			`f.yaml:3:16: policy p: validation validation-1: type conversion error`, nil},
		{"unknown counter", "name: p\ncounters:\n- name: n\n  key: agent\n  window: 1h\nvalidations:\n- expression: 'counters.m < 10.0'\n", true,
			`f.yaml:7:24: policy p: validation validation-1: undeclared reference to 'counters.m' (did you mean 'counters.n'?)`, nil},
		{"counter key not a string", "name: p\ncounters:\n- name: n\n  key: event.step\n  window: 1h\nvalidations:\n- expression: 'counters.n < 10.0'\n", true,
			`policy p: counter n: the expression is of type int; it must be of type string`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps, err := policy.Parse("f.yaml", []byte(tc.src))
			if err != nil {
				t.Fatal(err)
			}
			var opts []policy.Option
			if tc.history {
				opts = append(opts, policy.WithHistory(policy.NewMemory()))
			}
			var cerr error
			for _, p := range ps {
				if _, err := policy.Compile(p, opts...); err != nil {
					cerr = err
					break
				}
			}
			if !errors.Is(cerr, policy.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", cerr)
			}
			if tc.is != nil && !errors.Is(cerr, tc.is) {
				t.Errorf("err = %v, want it to wrap %v", cerr, tc.is)
			}
			if !strings.Contains(cerr.Error(), tc.want) {
				t.Errorf("err = %v\nwant it to hold %q", cerr, tc.want)
			}
		})
	}
}
