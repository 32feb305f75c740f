package mcp

import (
	"cmp"
	"fmt"
	"maps"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"
)

// DefaultTimeout bounds a call, and the start and handshake of a server,
// when ServerConfig.Timeout is zero.
const DefaultTimeout = 60 * time.Second

// baseEnv names the variables of the worker's environment that a stdio
// server inherits (when set), as the official TypeScript SDK's
// getDefaultEnvironment does; everything else comes from ServerConfig.Env.
var baseEnv = [...]string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"}

// ServerConfig describes one MCP server: a command run as a child process
// speaking MCP over its stdin and stdout (Command), or a streamable HTTP
// endpoint (URL). Exactly one of Command and URL is set.
type ServerConfig struct {
	// Name names the server in its tools' names, mcp__<Name>__<tool>:
	// letters, digits, '_' and '-', without "__" and not ending in '_' (so
	// the server part of a tool name is unambiguous).
	Name string

	// Command is the program of a stdio server (looked up in PATH).
	Command string
	// Args are the command's arguments.
	Args []string
	// Env is the stdio server's environment. The child inherits only HOME,
	// LOGNAME, PATH, SHELL, TERM and USER from the worker (as the official
	// TypeScript SDK does), then Env: never the worker's keys and secrets.
	Env map[string]string
	// Dir is the stdio server's working directory (default: the worker's).
	Dir string

	// URL is the endpoint of a streamable HTTP server (http or https).
	URL string
	// Headers are sent with every HTTP request (e.g. Authorization).
	Headers map[string]string

	// Timeout bounds each call, and the start, handshake and tool listing
	// of a (re)connection (default DefaultTimeout).
	Timeout time.Duration
}

// Validate reports what is wrong with c, wrapping ErrInvalidConfig.
func (c *ServerConfig) Validate() error {
	if err := validName(c.Name); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: server %s: %s", ErrInvalidConfig, c.Name, fmt.Sprintf(format, args...))
	}
	switch {
	case c.Command == "" && c.URL == "":
		return bad("set command (a stdio server) or url (a streamable HTTP server)")
	case c.Command != "" && c.URL != "":
		return bad("set command or url, not both")
	case c.Timeout < 0:
		return bad("timeout %v is negative", c.Timeout)
	}
	if c.URL != "" {
		if len(c.Args) > 0 || len(c.Env) > 0 || c.Dir != "" {
			return bad("args, env and dir are for a stdio server (command), not a url")
		}
		u, err := url.Parse(c.URL)
		if err != nil {
			return bad("url: %v", err)
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return bad("url %q is not an http or https URL", c.URL)
		}
		for k := range c.Headers {
			if k == "" || strings.ContainsAny(k, " :\r\n") {
				return bad("header name %q is not valid", k)
			}
		}
		return nil
	}
	if len(c.Headers) > 0 {
		return bad("headers are for a url, not a stdio server")
	}
	for k := range c.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return bad("env name %q is not valid", k)
		}
	}
	return nil
}

// validName checks a server name (see ServerConfig.Name).
func validName(name string) error {
	if name == "" {
		return fmt.Errorf("server name is empty")
	}
	for _, r := range name {
		if !validRune(r) {
			return fmt.Errorf("server name %q: only letters, digits, '_' and '-' are allowed, not %q", name, r)
		}
	}
	if strings.Contains(name, "__") || strings.HasSuffix(name, "_") {
		return fmt.Errorf("server name %q: must not contain \"__\" or end with '_' (tool names are mcp__<server>__<tool>)", name)
	}
	return nil
}

func validRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-'
}

func (c *ServerConfig) timeout() time.Duration { return cmp.Or(c.Timeout, DefaultTimeout) }

// environ is a stdio server's environment: baseEnv from the worker, then
// Env, sorted.
func (c *ServerConfig) environ() []string {
	env := make(map[string]string, len(baseEnv)+len(c.Env))
	for _, k := range baseEnv {
		if v, ok := os.LookupEnv(k); ok {
			env[k] = v
		}
	}
	maps.Copy(env, c.Env)
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}
