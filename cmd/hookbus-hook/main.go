// The runtime starts no goroutine to follow the CPU limit: the hook runs
// one goroutine for a few milliseconds, and GOMAXPROCS changes nothing it
// does.

//go:debug updatemaxprocs=0

package main

import (
	"errors"
	"io"
	"os"
	"strconv"
)

// The hook imports no fmt, flag or net/url: each package linked makes the
// binary start later (docs/CODING_AGENTS.md, "What a hook costs per
// event"), and this one runs once per event.

// Exit statuses: the agents' own meanings of a command hook's.
const (
	exitOK      = 0
	exitProceed = 1 // a non-blocking error: shown, the event proceeds
	exitBlock   = 2 // a blocking error: the call or prompt is refused, stderr the reason
)

// maxInput bounds the hook input read from stdin (a tool's output may be
// large; the gateway's --max-body is 8 MiB by default).
const maxInput = 64 << 20

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr))
}

// run is the command: parse, post, print; its exit status.
func run(args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	c, err := parse(args, getenv, stderr)
	if err != nil {
		say(stderr, "hookbus-hook: "+err.Error())
		return exitBlock
	}
	in, err := io.ReadAll(io.LimitReader(stdin, maxInput+1))
	if err == nil && len(in) > maxInput {
		err = errors.New("hook input over " + strconv.Itoa(maxInput) + " bytes")
	}
	if err != nil {
		return c.outage(stderr, err)
	}
	body, err := c.post(in)
	if err != nil {
		return c.outage(stderr, err)
	}
	if len(body) > 0 {
		// One write: the agent reading the answer wakes once.
		_, _ = stdout.Write(append(body, '\n'))
	}
	return exitOK
}

// outage answers when the gateway could not: by policy.
func (c *config) outage(stderr io.Writer, err error) int {
	if c.policy == "fail" {
		say(stderr, "hookbus is unavailable and its policy is to fail closed: "+err.Error())
		return exitBlock
	}
	say(stderr, "hookbus-hook: "+err.Error()+"; the event proceeds unchecked")
	return exitProceed
}

// say writes line and a newline to w.
func say(w io.Writer, line string) { _, _ = io.WriteString(w, line+"\n") }
