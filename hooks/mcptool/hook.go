package mcptool

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"regexp"
	"strings"

	"github.com/hookbus/hookbus/hooks/claudecode"
	"github.com/hookbus/hookbus/interceptors"
)

// Servers calls the tools of an agent's MCP servers. mcp.Servers
// implements it.
type Servers interface {
	CallTool(ctx context.Context, server, tool string, args json.RawMessage) (string, error)
	Has(server string) bool
}

// Config is what the hooks of one agent share.
type Config struct {
	// Servers are the agent's MCP servers (required).
	Servers Servers
	// Cwd is the agent's root (the input's cwd); Model its model.
	Cwd, Model string
	// Transcripts writes the transcript the input names (nil: none).
	Transcripts claudecode.Transcripts
	// Logger defaults to discarding.
	Logger *slog.Logger
}

// handler is an mcp_tool handler's object.
type handler struct {
	Type          string          `json:"type"`
	Server        string          `json:"server"`
	Tool          string          `json:"tool"`
	Input         json.RawMessage `json:"input"`
	Timeout       *float64        `json:"timeout"`
	StatusMessage string          `json:"statusMessage"`
	Once          bool            `json:"once"`
}

// Hook is one mcp_tool handler as an interceptor.
type Hook struct {
	cfg   Config
	event claudecode.HookEvent
	h     handler
}

// Factory returns the claudecode.Factory of mcp_tool handlers.
func Factory(cfg Config) claudecode.Factory {
	return func(h claudecode.Handler, _ interceptors.Registration) (interceptors.Interceptor, error) {
		return New(cfg, h.Event, h.Raw)
	}
}

// New returns the hook of an mcp_tool handler (its JSON object) for
// event. The error wraps ErrConfig and names what is wrong.
func New(cfg Config, event claudecode.HookEvent, raw json.RawMessage) (*Hook, error) {
	if cfg.Servers == nil {
		return nil, fmt.Errorf("%w: the agent has no MCP servers", ErrConfig)
	}
	cfg.Logger = cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	var h handler
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		return nil, fmt.Errorf("%w: %v (hookbus reads type, server, tool, input, timeout, statusMessage, once)", ErrConfig, err)
	}
	switch {
	case h.Type != claudecode.TypeMCPTool:
		return nil, fmt.Errorf("%w: handler of type %q is not an mcp_tool hook", ErrConfig, h.Type)
	case h.Server == "" || h.Tool == "":
		return nil, fmt.Errorf("%w: an mcp_tool hook names its server and tool", ErrConfig)
	case !cfg.Servers.Has(h.Server):
		return nil, fmt.Errorf("%w: server %q is not one of the agent's MCP servers", ErrConfig, h.Server)
	}
	if len(bytes.TrimSpace(h.Input)) == 0 || string(bytes.TrimSpace(h.Input)) == "null" {
		h.Input = json.RawMessage(`{}`)
	}
	if bytes.TrimSpace(h.Input)[0] != '{' {
		return nil, fmt.Errorf("%w: input is not a JSON object", ErrConfig)
	}
	return &Hook{cfg: cfg, event: event, h: h}, nil
}

// Intercept calls the tool with the handler's input, its placeholders
// filled from the hook's input on req's event, and reads the tool's text
// as a command hook's stdout (claudecode.Decide, exit status 0).
func (h *Hook) Intercept(ctx context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
	if !claudecode.Applies(h.event, req.Event) {
		return claudecode.NotRun(h.event), nil
	}
	in, err := claudecode.HookInput(ctx, h.cfg.Transcripts, h.event, req.Event, claudecode.Env{Cwd: h.cfg.Cwd, Model: h.cfg.Model}, h.cfg.Logger)
	if err != nil {
		return nil, err
	}
	args, err := Fill(h.h.Input, in)
	if err != nil {
		return nil, err
	}
	text, err := h.cfg.Servers.CallTool(ctx, h.h.Server, h.h.Tool, args)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: %v", interceptors.ErrTimeout, err)
		}
		return nil, fmt.Errorf("%w: %s/%s: %v", ErrToolFailed, h.h.Server, h.h.Tool, err)
	}
	return claudecode.Decide(h.event, req.Event, claudecode.Reply{Stdout: []byte(text)})
}

// placeholder is ${path}, path a dotted path into the hook's input.
var placeholder = regexp.MustCompile(`\$\{([A-Za-z0-9_.\-]+)\}`)

// Fill returns input (a JSON object) with the ${path} placeholders of its
// strings replaced by the values at those paths of the hook input in: a
// string whose whole text is one placeholder takes the value as it is (an
// object stays an object); elsewhere the value's text (a string as it is,
// anything else as JSON) is put in its place. A path the input does not
// have gives an empty string.
func Fill(input json.RawMessage, in *claudecode.Input) (json.RawMessage, error) {
	raw, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("mcp_tool hook: input: %w", err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("mcp_tool hook: input: %w", err)
	}
	var tmpl any
	if err := json.Unmarshal(input, &tmpl); err != nil {
		return nil, fmt.Errorf("%w: input: %v", ErrConfig, err)
	}
	out, err := json.Marshal(fill(tmpl, doc))
	if err != nil {
		return nil, fmt.Errorf("mcp_tool hook: input: %w", err)
	}
	return out, nil
}

func fill(v any, doc map[string]any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			v[k] = fill(x, doc)
		}
		return v
	case []any:
		for i, x := range v {
			v[i] = fill(x, doc)
		}
		return v
	case string:
		if m := placeholder.FindStringSubmatch(v); m != nil && m[0] == v {
			if val, ok := lookup(doc, m[1]); ok {
				return val
			}
			return ""
		}
		return placeholder.ReplaceAllStringFunc(v, func(p string) string {
			val, ok := lookup(doc, placeholder.FindStringSubmatch(p)[1])
			if !ok {
				return ""
			}
			if s, ok := val.(string); ok {
				return s
			}
			b, _ := json.Marshal(val)
			return string(b)
		})
	}
	return v
}

// lookup is the value at a dotted path of doc.
func lookup(doc map[string]any, path string) (any, bool) {
	var cur any = doc
	for _, k := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[k]; !ok {
			return nil, false
		}
	}
	return cur, true
}
