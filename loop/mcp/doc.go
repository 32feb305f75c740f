// Package mcp gives an agent the tools of MCP (Model Context Protocol)
// servers: each tool a server lists becomes a loop.Tool named
// mcp__<server>__<tool>, as Claude Code names them, so hook matchers such as
// "mcp__*" or "mcp__github__*" carry over. It is a client built on the
// official Go SDK (github.com/modelcontextprotocol/go-sdk).
//
// A server is a command run as a child process speaking MCP over its stdin
// and stdout, or a streamable HTTP endpoint:
//
//	servers, err := mcp.ConnectAll(ctx, []mcp.ServerConfig{
//		{Name: "files", Command: "mcp-server-filesystem", Args: []string{"/srv/data"}},
//		{Name: "docs", URL: "https://docs.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer " + token}},
//	})
//	if err != nil { ... }
//	defer servers.Close()
//	eng, err := loop.New(loop.Config{..., Tools: append(tools.Builtin(root), servers.Tools()...)})
//
// Connect (or ConnectAll) starts or reaches each server and lists its tools
// once. A tool's parameters are the server's input schema; it is declared
// idempotent (events.ToolSpec.Idempotent) when the server annotates it
// readOnlyHint or idempotentHint. A call returns the result's text (other
// content described in brackets, "[image: image/png, 1234 bytes]"); every
// failure is an *Error naming the server and the tool, with a Kind matched
// by errors.Is: the tool's own failure (ErrToolError), a timeout, a lost
// connection, a JSON-RPC error. The engine reports it to the model as the
// tool's result and publishes tool.failed.
//
// A session that breaks (the server died, a call timed out, the connection
// failed) is dropped and the next call opens a new one, starting a stdio
// server again: a worker outlives its servers' crashes. A stdio server
// inherits only a minimal environment (never the worker's secrets) and runs
// in its own process group, which Close kills.
//
// docs/AGENTS.md ("MCP servers") describes the behaviour on the wire.
package mcp
