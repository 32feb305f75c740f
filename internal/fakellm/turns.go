package fakellm

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Turns is a script of model turns for TurnServer, the script file of loop
// fake-model, in YAML or JSON (docs/CLAUDE_CODE.md shows one):
//
//	turns:
//	  - reply: Removing it.
//	    tool: {name: Bash, arguments: {command: rm -rf victim}}
//	  - when: refused
//	    reply: The hook refused, I left it alone.
//
// Each request takes the first turn not yet taken whose When is empty or
// appears in the request's body (as sent or in one of its JSON strings);
// the turn is rendered in the shape of the API asked (OpenAI chat or
// Responses, Anthropic messages, Gemini), streamed when the request
// streams.
type Turns struct {
	Turns []Turn `yaml:"turns" json:"turns"`
}

// Turn is one answer of the model: a reply text, a tool call, or both (the
// text first).
type Turn struct {
	// When, if set, is text the request's body must contain.
	When string `yaml:"when,omitempty" json:"when,omitempty"`
	// Reply is the model's text.
	Reply string `yaml:"reply,omitempty" json:"reply,omitempty"`
	// Tool is a tool call.
	Tool *ToolCall `yaml:"tool,omitempty" json:"tool,omitempty"`

	line int // where the turn starts in its file
}

// ToolCall is a call of the tool Name with Arguments (an object); ID is
// made up when empty.
type ToolCall struct {
	ID        string         `yaml:"id,omitempty" json:"id,omitempty"`
	Name      string         `yaml:"name" json:"name"`
	Arguments map[string]any `yaml:"arguments,omitempty" json:"arguments,omitempty"`
}

var yamlLine = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// ParseTurns parses a script of turns; file names it in errors. An error
// wraps ErrBadScript and starts with file:line.
func ParseTurns(file string, b []byte) (*Turns, error) {
	bad := func(line int, format string, args ...any) error {
		return fmt.Errorf("%s:%d: %w: %s", file, line, ErrBadScript, fmt.Sprintf(format, args...))
	}
	var t Turns
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&t); err != nil {
		msg := err.Error()
		var te *yaml.TypeError
		if errors.As(err, &te) && len(te.Errors) > 0 {
			msg = te.Errors[0]
		}
		if m := yamlLine.FindStringSubmatch(msg); m != nil {
			n, _ := strconv.Atoi(m[1])
			return nil, bad(n, "%s", m[2])
		}
		return nil, bad(1, "%s", strings.TrimPrefix(msg, "yaml: "))
	}
	// The lines of the turns, for the errors below and the log.
	var doc yaml.Node
	_ = yaml.Unmarshal(b, &doc)
	if len(doc.Content) == 1 {
		root := doc.Content[0]
		for i := 0; i+1 < len(root.Content); i += 2 {
			if root.Content[i].Value == "turns" {
				for j, n := range root.Content[i+1].Content {
					if j < len(t.Turns) {
						t.Turns[j].line = n.Line
					}
				}
			}
		}
	}
	if len(t.Turns) == 0 {
		return nil, bad(1, "no turns (want turns: a list of {reply: TEXT} or {tool: {name: NAME, arguments: {...}}})")
	}
	for i, tu := range t.Turns {
		switch {
		case tu.Reply == "" && tu.Tool == nil:
			return nil, bad(tu.line, "turn %d has neither reply nor tool", i+1)
		case tu.Tool != nil && tu.Tool.Name == "":
			return nil, bad(tu.line, "turn %d: its tool has no name", i+1)
		}
		if tu.Tool != nil {
			if _, err := json.Marshal(tu.Tool.Arguments); err != nil {
				return nil, bad(tu.line, "turn %d: arguments of %s: %v", i+1, tu.Tool.Name, err)
			}
		}
	}
	return &t, nil
}

// Line is the line of the script file the turn starts at.
func (t Turn) Line() int { return t.line }

// blocks are the turn's content blocks; n numbers the made-up tool call ID.
func (t Turn) blocks(prefix string, n int) []Block {
	var bs []Block
	if t.Reply != "" {
		bs = append(bs, Text(t.Reply))
	}
	if t.Tool != nil {
		id := cmp.Or(t.Tool.ID, fmt.Sprintf("%s%d", prefix, n))
		args := t.Tool.Arguments
		if args == nil {
			args = map[string]any{}
		}
		bs = append(bs, ToolUse(id, t.Tool.Name, args))
	}
	return bs
}

// String says what the turn answers, for the log.
func (t Turn) String() string {
	var parts []string
	if t.Reply != "" {
		r := t.Reply
		if len(r) > 40 {
			r = r[:40] + "..."
		}
		parts = append(parts, strconv.Quote(r))
	}
	if t.Tool != nil {
		parts = append(parts, "tool "+t.Tool.Name)
	}
	return strings.Join(parts, " + ")
}
