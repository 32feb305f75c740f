//go:build unix

package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/hookbus/hookbus/loop/tools"
)

// Bash runs a command in the root with a minimal environment: only the
// variables listed in Env pass from the worker.
func ExampleNewBash() {
	root, _ := os.MkdirTemp("", "agent")
	defer os.RemoveAll(root)
	os.Setenv("DEPLOY_ENV", "staging")
	defer os.Unsetenv("DEPLOY_ENV")
	bash, err := tools.NewBash(tools.BashConfig{Root: root, Env: []string{"DEPLOY_ENV", "GREETING=hello"}})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	out, _ := bash.Call(ctx, json.RawMessage(`{"command":"echo $GREETING from $DEPLOY_ENV; echo to stderr >&2","description":"Greet"}`))
	fmt.Println(out)
	_, err = bash.Call(ctx, json.RawMessage(`{"command":"echo no such file >&2; exit 2"}`))
	var ce *tools.CommandError
	fmt.Println(errors.As(err, &ce), ce.ExitCode)
	fmt.Println(err)
	// Output:
	// hello from staging
	// to stderr
	// true 2
	// Exit code 2
	// no such file
}
