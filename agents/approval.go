package agents

import (
	"fmt"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
)

// onExpiry maps the file's words to the answer an unanswered request gets.
var onExpiry = map[string]string{
	"": events.ActionRejectAndContinue, "deny": events.ActionRejectAndContinue,
	"reject": events.ActionReject, "approve": events.ActionApprove,
}

// approval makes the loop's approval policy of the agent's.
func (a *Agent) approval() (loop.Approval, error) {
	p := a.Approval
	action, ok := onExpiry[p.OnExpiry]
	if !ok {
		return loop.Approval{}, fmt.Errorf("on_expiry %q (want deny, reject or approve)", p.OnExpiry)
	}
	type matcher struct {
		tool string
		args *regexp.Regexp
	}
	var ms []matcher
	for i, m := range p.Tools {
		if m.Tool == "" {
			return loop.Approval{}, fmt.Errorf("tools[%d]: no tool (a name or glob: Bash, mcp__*)", i)
		}
		for _, alt := range strings.Split(m.Tool, "|") {
			if _, err := path.Match(alt, ""); err != nil {
				return loop.Approval{}, fmt.Errorf("tools[%d]: bad glob %q: %v", i, m.Tool, err)
			}
		}
		mm := matcher{tool: m.Tool}
		if m.Args != "" {
			re, err := regexp.Compile(m.Args)
			if err != nil {
				return loop.Approval{}, fmt.Errorf("tools[%d]: args: %v", i, err)
			}
			mm.args = re
		}
		ms = append(ms, mm)
	}
	pol := loop.Approval{Expiry: time.Duration(p.Expiry), OnExpiry: action}
	if len(ms) > 0 {
		pol.Required = func(call events.ToolCall) string {
			for _, m := range ms {
				if !globMatch(m.tool, call.Name) {
					continue
				}
				if m.args != nil && !m.args.Match(call.Arguments) {
					continue
				}
				if m.args != nil {
					return fmt.Sprintf("%s with arguments matching %q needs approval", call.Name, m.args.String())
				}
				return call.Name + " needs approval"
			}
			return ""
		}
	}
	return pol, nil
}

func globMatch(pattern, name string) bool {
	for _, alt := range strings.Split(pattern, "|") {
		if ok, _ := path.Match(alt, name); ok {
			return true
		}
	}
	return false
}
