// Package mcptool is Claude Code's mcp_tool hook on hookbus agents: a
// handler of a settings file that calls a tool of one of the agent's MCP
// servers instead of running a command.
//
//	{"type": "mcp_tool", "server": "my_server", "tool": "security_scan",
//	 "input": {"file_path": "${tool_input.file_path}"}}
//
// The hook's input (claudecode.NewInput) fills the ${path} placeholders of
// input's strings (a dotted path into it: ${tool_input.file_path},
// ${session_id}); the tool's text is read as a command hook's stdout with
// exit status 0 (claudecode.Decide), so it may answer Claude Code's JSON
// output. A tool that reports an error (isError) is a non-blocking error,
// as in Claude Code: hook.failed, and the action proceeds.
//
//	factories[claudecode.TypeMCPTool] = mcptool.Factory(mcptool.Config{Servers: built.MCP})
package mcptool
