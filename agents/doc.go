// Package agents reads agent definitions: a YAML file naming each agent's
// model, system prompt, tools, MCP servers, step limit and budget, so a
// worker (loop serve --agents FILE) can run real agents.
//
//	agents:
//	  - id: coder
//	    version: "3"                        # optional: a newer version replaces the fleet's definition
//	    model: openai:gpt-4.1-mini          # or anthropic:claude-sonnet-4-5, scripted:demo, scripted:FILE
//	    system: You fix bugs in this repository.
//	    root: ./repo                        # file tools are confined to it; Bash runs in it
//	    tools: [Bash, Read, Edit, Glob, Grep]
//	    mcp:
//	      - {name: docs, command: docs-mcp-server}
//	    max_steps: 30
//	    budget: {max_output_tokens: 20000, max_cost_usd: 0.50}
//	    prices: {input_per_mtok: 0.40, output_per_mtok: 1.60}
//	    hooks:                              # Claude Code's settings format, this agent's runs only
//	      PreToolUse:
//	        - matcher: Bash
//	          hooks: [{type: command, command: ./hooks/guard.sh}]
//
// Agent.Definition digests what defines an agent (docs/PROTOCOL.md, "Agent
// definitions"): a worker records it in every run.started, registers it in
// the fleet, and resumes a run only on the definition it started with
// (or, with on_definition_change: adopt, records that it adopted it).
//
// Load checks a file without I/O beyond reading it, and refuses an invalid
// one with the file, line, agent and field named (an unknown field, an
// unknown tool or model provider, a bad MCP server). Agent.Build then makes
// the model (the provider's SDK, its key from the environment), the tools
// and the MCP connections, and returns the loop.Config they give.
//
// It is an assembly: it stands above the engine (package loop), the model
// providers, the tools and MCP (loop/...), and the hook kinds (an agent's
// hooks section is Claude Code's settings format, read by package
// hooks/claudecode), and none of them imports it.
//
// The full format is in the README ("Agent definitions").
package agents
