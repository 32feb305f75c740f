package tools_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/tools"
)

// TestBadArguments gives every tool arguments it cannot use: each is an
// error wrapping ErrArguments that names the tool and what is wrong.
func TestBadArguments(t *testing.T) {
	tr := newTree(t, map[string]string{"a.txt": "a\n"})
	bash, err := tools.NewBash(tools.BashConfig{Root: tr.root})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		tool loop.Tool
		args string
		want string // in the message
	}{
		{tr.fs.Read(), `{"file_path":`, "Read"},
		{tr.fs.Read(), `["a.txt"]`, "Read"},
		{tr.fs.Read(), `{}`, `"file_path" is required`},
		{tr.fs.Read(), `{"file_path":""}`, `"file_path" is required`},
		{tr.fs.Read(), `{"file_path":7}`, `"file_path" must be a string`},
		{tr.fs.Read(), `{"file_path":"a.txt","offset":"2"}`, `"offset" must be an integer`},
		{tr.fs.Read(), `{"file_path":"a.txt","limit":1.5}`, `"limit" must be an integer`},
		{tr.fs.Read(), `{"path":"a.txt"}`, `unknown field "path"`},
		{tr.fs.Read(), `{"file_path":"a.txt"} {}`, "after the arguments"},
		{tr.fs.Write(), `{"file_path":"b.txt"}`, `"content" is required`},
		{tr.fs.Write(), `{"content":"x"}`, `"file_path" is required`},
		{tr.fs.Write(), `{"file_path":"b.txt","content":null}`, `"content" is required`},
		{tr.fs.Write(), `{"file_path":"b.txt","content":["x"]}`, `"content" must be a string`},
		{tr.fs.Write(), `not json`, "Write"},
		{tr.fs.Edit(), `{"file_path":"a.txt","new_string":"b"}`, `"old_string" is required`},
		{tr.fs.Edit(), `{"file_path":"a.txt","old_string":"a"}`, `"new_string" is required`},
		{tr.fs.Edit(), `{"file_path":"a.txt","old_string":"a","new_string":"b","replace_all":"yes"}`, `"replace_all" must be a boolean`},
		{tr.fs.Glob(), `{}`, `"pattern" is required`},
		{tr.fs.Glob(), `{"pattern":["*"]}`, `"pattern" must be a string`},
		{tr.fs.Glob(), `{"pattern":"*","path":null,"recursive":true}`, `unknown field "recursive"`},
		{tr.fs.Grep(), `{"path":"."}`, `"pattern" is required`},
		{tr.fs.Grep(), `{"pattern":"a","-i":"true"}`, `"-i" must be a boolean`},
		{tr.fs.Grep(), `{"pattern":"a","-C":"2"}`, `"-C" must be an integer`},
		{tr.fs.Grep(), `{"pattern":"a"`, "Grep"},
		{bash, `{}`, `"command" is required`},
		{bash, `{"command":"  "}`, `"command" is required`},
		{bash, `{"command":["ls"]}`, `"command" must be a string`},
		{bash, `{"command":"ls","timeout":"5"}`, `"timeout" must be an integer`},
		{bash, `{"command":"ls","timeout":0}`, `"timeout" must be 1 to 600000 milliseconds`},
		{bash, `{"command":"ls","timeout":600001}`, `"timeout" must be 1 to 600000 milliseconds`},
		{bash, `{"command":"ls","run_in_background":true}`, "run_in_background is not supported"},
		{bash, `{"cmd":"ls"}`, `unknown field "cmd"`},
		{tools.Calculator(), `[1]`, "calculator"},
	}
	for _, tc := range cases {
		name := tc.tool.Spec().Name
		got, err := call(t, tc.tool, tc.args)
		if !errors.Is(err, tools.ErrArguments) {
			t.Errorf("%s(%s) = %q, %v; want ErrArguments", name, tc.args, got, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s(%s): error %q does not say %q", name, tc.args, err, tc.want)
		}
	}
}
