// Package claudecodetest serves an in-process interceptor as a Claude Code
// hook server, for tests of what speaks Claude Code's hook protocol: the
// conformance suite of the command and http hook interceptors
// (interceptorstest) runs each case's interceptor behind it, so that every
// decision travels as Claude Code's input and output, both ways.
//
//	url := claudecodetest.Serve(t, reg, ic) // POST Claude Code hook inputs here
//	hook, err := httphook.New(httphook.Config{}, claudecode.PreToolUse, json.RawMessage(`{"type":"http","url":"`+url+`"}`))
package claudecodetest
