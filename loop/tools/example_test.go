package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hookbus/hookbus/loop/tools"
)

// The file tools work on one root directory; paths may be relative to it or
// absolute inside it.
func ExampleNewFS() {
	root, _ := os.MkdirTemp("", "agent")
	defer os.RemoveAll(root)
	f, err := tools.NewFS(root)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	out, _ := f.Write().Call(ctx, json.RawMessage(`{"file_path":"notes/todo.md","content":"- write tests\n- ship\n"}`))
	fmt.Println(out)
	out, _ = f.Edit().Call(ctx, json.RawMessage(`{"file_path":"notes/todo.md","old_string":"ship","new_string":"ship it"}`))
	fmt.Println(out)
	args, _ := json.Marshal(map[string]string{"file_path": filepath.Join(root, "notes", "todo.md")})
	out, _ = f.Read().Call(ctx, args)
	fmt.Println(out)
	out, _ = f.Grep().Call(ctx, json.RawMessage(`{"pattern":"ship","output_mode":"content"}`))
	fmt.Println(out)
	_, err = f.Read().Call(ctx, json.RawMessage(`{"file_path":"../etc/passwd"}`))
	fmt.Println(errors.Is(err, tools.ErrPathEscape), err)
	// Output:
	// File created successfully at: notes/todo.md
	// The file notes/todo.md has been updated: 1 occurrence replaced.
	//      1	- write tests
	//      2	- ship it
	// notes/todo.md:2:- ship it
	// true tools: path escapes the root directory: "../etc/passwd"
}

// An agent definition lists its tools by name, as Claude Code's settings
// and hook matchers name them.
func ExampleByNames() {
	root, _ := os.MkdirTemp("", "agent")
	defer os.RemoveAll(root)
	ts, err := tools.ByNames([]string{"Read", "Glob", "Grep", "calculator"}, tools.Config{Root: root})
	if err != nil {
		panic(err)
	}
	for _, t := range ts {
		fmt.Println(t.Spec().Name, t.Spec().Idempotent)
	}
	_, err = tools.ByName("WebSearch", tools.Config{Root: root})
	fmt.Println(errors.Is(err, tools.ErrUnknownTool))
	// Output:
	// Read true
	// Glob true
	// Grep true
	// calculator false
	// true
}
