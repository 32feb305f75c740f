// Package tools holds the tools an agent run by package loop can call.
//
// The demo tools need nothing: Clock, Calculator and ReadFile (confined to a
// root directory with os.Root); Builtin returns all three.
//
//	eng, err := loop.New(loop.Config{..., Tools: tools.Builtin(root)})
package tools
