package claudecode

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"time"
)

// Default timeouts of Claude Code's hook types, used when a handler gives
// none.
const (
	DefaultCommandTimeout = 600 * time.Second
	DefaultHTTPTimeout    = 600 * time.Second
	DefaultPromptTimeout  = 30 * time.Second
	DefaultAgentTimeout   = 60 * time.Second
)

// Handler types of a settings file.
const (
	TypeCommand = "command"
	TypeHTTP    = "http"
	TypePrompt  = "prompt"
	TypeAgent   = "agent"
	TypeMCPTool = "mcp_tool"
)

// DefaultTimeout returns the timeout of a handler type when the file gives
// none (0 for a type Claude Code does not define), on most events:
// DefaultTimeoutFor gives the event's.
func DefaultTimeout(typ string) time.Duration {
	switch typ {
	case TypeCommand:
		return DefaultCommandTimeout
	case TypeHTTP, TypeMCPTool:
		return DefaultHTTPTimeout
	case TypePrompt:
		return DefaultPromptTimeout
	case TypeAgent:
		return DefaultAgentTimeout
	}
	return 0
}

// DefaultTimeoutFor returns the timeout of a handler of type typ on event
// when the file gives none, as Claude Code applies it: command, http and
// mcp_tool hooks get the event's Limit (30 s on UserPromptSubmit,
// PreModelSwitch and PostModelSwitch, 10 s on MessageDisplay, 1.5 s on
// SessionEnd, 600 s elsewhere); prompt and agent hooks their type's.
func DefaultTimeoutFor(event HookEvent, typ string) time.Duration {
	switch typ {
	case TypeCommand, TypeHTTP, TypeMCPTool:
		return event.Limit()
	}
	return DefaultTimeout(typ)
}

// Settings is the hooks section of a Claude Code settings file, read as
// Claude Code reads it:
//
//	{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
//	    {"type": "command", "command": "./guard.sh", "timeout": 30}]}]}}
//
// Other keys of the file (permissions, env, model, ...) are not read.
type Settings struct {
	// Path names the file in errors and plugin names' sources.
	Path string
	// DisableAllHooks is the file's disableAllHooks: Register registers
	// nothing from it.
	DisableAllHooks bool
	// Handlers are the file's hook handlers of mapped events, each event's
	// in the file's order (matcher groups, then their hooks), the events in
	// the order a run meets them.
	Handlers []Handler
	// Skipped says which hooks of the file hookbus does not run: those of
	// Claude Code events it maps to no stage.
	Skipped []string
}

// Handler is one hook handler of a settings file.
type Handler struct {
	Event HookEvent
	// Matcher is its group's matcher as written, and compiled.
	Matcher  string
	Compiled *Matcher
	// Type is "command", "http", "prompt", "agent" or another type a
	// Factory was given for.
	Type string
	// Timeout is the file's, or Claude Code's default for the event and
	// type (DefaultTimeoutFor); TimeoutSet says the file gave it.
	Timeout    time.Duration
	TimeoutSet bool
	// Raw is the handler's JSON object as written: each type's Factory
	// reads its own fields (command, url, headers, prompt, model, ...).
	Raw json.RawMessage
	// Where names it in errors: "settings.json: hooks.PreToolUse[0].hooks[1]".
	Where string
	// Group and Index are its matcher group's position in the event's list
	// and its own in the group.
	Group, Index int
}

// LoadSettings reads a Claude Code settings file (ParseSettings).
func LoadSettings(path string) (*Settings, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSettings, err)
	}
	return ParseSettings(b, path)
}

// ParseSettings reads the hooks section of a settings file's content; name
// names it in errors. An event that is not a Claude Code event, a matcher
// group without hooks, a handler without a type, a timeout that is not a
// positive number of seconds, or a matcher that does not compile is an
// error wrapping ErrSettings that names the file and the place. Hooks of
// Claude Code events hookbus does not map are listed in Skipped.
func ParseSettings(data []byte, name string) (*Settings, error) {
	name = cmp.Or(name, "settings.json")
	fail := func(where, format string, args ...any) error {
		if where != "" {
			where = ": " + where
		}
		return fmt.Errorf("%w: %s%s: %s", ErrSettings, name, where, fmt.Sprintf(format, args...))
	}
	var file struct {
		Hooks           json.RawMessage `json:"hooks"`
		DisableAllHooks bool            `json:"disableAllHooks"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		return nil, fail("", "%s", describeJSON(data, err))
	}
	s := &Settings{Path: name, DisableAllHooks: file.DisableAllHooks}
	if len(file.Hooks) == 0 || string(file.Hooks) == "null" {
		return s, nil
	}
	var byEvent map[string]json.RawMessage
	if err := json.Unmarshal(file.Hooks, &byEvent); err != nil {
		return nil, fail("hooks", "expected an object of events ({\"PreToolUse\": [...]})")
	}
	for ev := range byEvent {
		e := HookEvent(ev)
		if !e.Known() {
			return nil, fail("hooks."+ev, "not a Claude Code hook event (hookbus knows %s)", eventList())
		}
	}
	for _, e := range AllEvents() {
		raw, ok := byEvent[string(e)]
		if !ok {
			continue
		}
		where := "hooks." + string(e)
		var groups []json.RawMessage
		if err := json.Unmarshal(raw, &groups); err != nil {
			return nil, fail(where, "expected a list of matcher groups ([{\"matcher\": ..., \"hooks\": [...]}])")
		}
		for g, graw := range groups {
			gwhere := fmt.Sprintf("%s[%d]", where, g)
			var grp struct {
				Matcher *string           `json:"matcher"`
				Hooks   []json.RawMessage `json:"hooks"`
			}
			if err := json.Unmarshal(graw, &grp); err != nil {
				return nil, fail(gwhere, "expected {\"matcher\": \"...\", \"hooks\": [...]}: %v", err)
			}
			if len(grp.Hooks) == 0 {
				return nil, fail(gwhere, "no hooks (want \"hooks\": [{\"type\": \"command\", ...}])")
			}
			matcher := ""
			if grp.Matcher != nil {
				matcher = *grp.Matcher
			}
			if !e.Mapped() {
				s.Skipped = append(s.Skipped, fmt.Sprintf("%s: %d hook(s) of %s, a Claude Code event whose hooks do not fire on a hookbus agent", gwhere, len(grp.Hooks), e))
				continue
			}
			var compiled *Matcher
			if e.takesMatcher() {
				var err error
				if compiled, err = ParseMatcher(matcher); err != nil {
					return nil, fail(gwhere+".matcher", "%v", err)
				}
			} else {
				compiled, _ = ParseMatcher("") // Claude Code ignores the matcher of this event
			}
			for i, hraw := range grp.Hooks {
				h, err := parseHandler(hraw)
				hwhere := fmt.Sprintf("%s.hooks[%d]", gwhere, i)
				if err != nil {
					return nil, fail(hwhere, "%v", err)
				}
				if !h.TimeoutSet {
					h.Timeout = DefaultTimeoutFor(e, h.Type)
				}
				h.Event, h.Matcher, h.Compiled, h.Group, h.Index = e, matcher, compiled, g, i
				h.Where = name + ": " + hwhere
				s.Handlers = append(s.Handlers, h)
			}
		}
	}
	return s, nil
}

// parseHandler reads the fields every handler has: type and timeout.
func parseHandler(raw json.RawMessage) (Handler, error) {
	var h struct {
		Type    *string  `json:"type"`
		Timeout *float64 `json:"timeout"`
	}
	if err := json.Unmarshal(raw, &h); err != nil {
		return Handler{}, fmt.Errorf("expected a handler object {\"type\": ..., ...}: %v", err)
	}
	if h.Type == nil || *h.Type == "" {
		return Handler{}, errors.New("no type (want command, http, mcp_tool, prompt or agent)")
	}
	out := Handler{Type: *h.Type, Raw: append(json.RawMessage(nil), bytes.TrimSpace(raw)...), Timeout: DefaultTimeout(*h.Type)}
	if h.Timeout != nil {
		out.TimeoutSet = true
		t := *h.Timeout
		if t <= 0 || math.IsInf(t, 0) || t > float64(math.MaxInt64/int64(time.Second)) {
			return Handler{}, fmt.Errorf("timeout %v is not a positive number of seconds", t)
		}
		out.Timeout = time.Duration(t * float64(time.Second))
	}
	return out, nil
}

func eventList() string {
	names := make([]string, 0, len(table))
	for _, e := range AllEvents() {
		names = append(names, string(e))
	}
	return strings.Join(names, ", ")
}

// describeJSON words a decoding error of a file, with the line and column
// of a syntax error.
func describeJSON(data []byte, err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line, col := 1, 1 // of the byte the decoder stopped at
		for _, c := range data[:min(max(int(se.Offset)-1, 0), len(data))] {
			if c == '\n' {
				line, col = line+1, 1
			} else {
				col++
			}
		}
		return fmt.Sprintf("line %d, column %d: %v", line, col, err)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("%s: expected %s, not a JSON %s", te.Field, te.Type, te.Value)
	}
	return err.Error()
}
