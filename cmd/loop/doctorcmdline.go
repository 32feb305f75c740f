package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// agentHookFlags reads a hook command's loop agent-hook (or claude-hook)
// flags as loop agent-hook reads them (--config included).
func agentHookFlags(command string) (*bridgeFlags, string, error) {
	words := shellWords(command)
	i := slices.IndexFunc(words, func(w string) bool { return w == "agent-hook" || w == "claude-hook" })
	if i < 0 {
		return nil, "", fmt.Errorf("not a loop agent-hook command")
	}
	var f bridgeFlags
	fs := pflag.NewFlagSet("agent-hook", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.String("harness", "", "")
	f.register(fs)
	f.registerFile(fs)
	if err := fs.Parse(words[i+1:]); err != nil {
		return nil, "", fmt.Errorf("its flags do not parse: %w", err)
	}
	if err := f.check(); err != nil {
		return nil, "", err
	}
	return &f, f.agent, nil
}

// commandBinary is the program a hook command runs: its first word after
// any NAME=VALUE assignments ("" for none).
func commandBinary(command string) string {
	for _, w := range shellWords(command) {
		if name, _, ok := strings.Cut(w, "="); ok && name != "" && !strings.ContainsAny(name, "/ ") {
			continue
		}
		return w
	}
	return ""
}

// shellWords splits a command line as sh does for plain words and quotes.
func shellWords(s string) []string {
	var out []string
	var cur strings.Builder
	in, quote := false, rune(0)
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		out = append(out, cur.String())
	}
	return out
}
