package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hookbus/hookbus/loop"
)

// Servers are the MCP servers of one agent.
type Servers []*Server

// ConnectAll connects to every server of cfgs, in parallel. Server names
// must be unique. On any failure it closes the servers it connected and
// returns the errors (joined: one per server that failed, in cfgs' order).
func ConnectAll(ctx context.Context, cfgs []ServerConfig, opts ...Option) (Servers, error) {
	seen := make(map[string]bool, len(cfgs))
	for i := range cfgs {
		if err := cfgs[i].Validate(); err != nil {
			return nil, err
		}
		if seen[cfgs[i].Name] {
			return nil, fmt.Errorf("%w: server name %s is used twice", ErrInvalidConfig, cfgs[i].Name)
		}
		seen[cfgs[i].Name] = true
	}
	if _, err := buildOptions(opts); err != nil {
		return nil, err
	}
	out := make(Servers, len(cfgs))
	errs := make([]error, len(cfgs))
	done := make(chan struct{})
	for i := range cfgs {
		go func() {
			defer func() { done <- struct{}{} }()
			out[i], errs[i] = Connect(ctx, cfgs[i], opts...)
		}()
	}
	for range cfgs {
		<-done
	}
	if err := errors.Join(errs...); err != nil {
		_ = out.Close()
		return nil, err
	}
	return out, nil
}

// Tools are the tools of every server, in order.
func (ss Servers) Tools() []loop.Tool {
	var out []loop.Tool
	for _, s := range ss {
		if s != nil {
			out = append(out, s.tools...)
		}
	}
	return out
}

// Close closes every server (in parallel: each may wait for its child to
// exit).
func (ss Servers) Close() error {
	done := make(chan struct{})
	for _, s := range ss {
		go func() {
			defer func() { done <- struct{}{} }()
			if s != nil {
				_ = s.Close()
			}
		}()
	}
	for range ss {
		<-done
	}
	return nil
}

// CallTool calls tool on the server named server with args (a JSON
// object) and returns the result's text, as a tool call of an agent does
// (every failure an *Error naming the server and the tool; a result the
// tool marked as an error is ErrToolError). The error wraps ErrNoServer
// for a server not among ss.
func (ss Servers) CallTool(ctx context.Context, server, tool string, args json.RawMessage) (string, error) {
	for _, s := range ss {
		if s.Name() == server {
			return s.call(ctx, tool, args, false)
		}
	}
	return "", fmt.Errorf("%w: %q (the agent's: %s)", ErrNoServer, server, ss.names())
}

// Has reports whether ss holds the server named server.
func (ss Servers) Has(server string) bool {
	return slices.ContainsFunc(ss, func(s *Server) bool { return s.Name() == server })
}

func (ss Servers) names() string {
	if len(ss) == 0 {
		return "none"
	}
	names := make([]string, len(ss))
	for i, s := range ss {
		names[i] = s.Name()
	}
	return strings.Join(names, ", ")
}
