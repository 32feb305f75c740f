package events

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
)

// ActionKind is what a tool call does, whatever the harness calls the tool: the
// normalized action's kind. A rule written for KindShell holds for Claude
// Code's Bash, Gemini CLI's run_shell_command, Codex CLI's shell and
// hookbus' own Bash alike. docs/ACTIONS.md has the table.
type ActionKind string

// The kinds.
const (
	KindShell      ActionKind = "shell"       // runs a shell command
	KindFileRead   ActionKind = "file.read"   // reads files
	KindFileWrite  ActionKind = "file.write"  // creates or overwrites files
	KindFileEdit   ActionKind = "file.edit"   // changes part of files
	KindFileSearch ActionKind = "file.search" // lists or searches files
	KindWebFetch   ActionKind = "web.fetch"   // fetches a URL
	KindWebSearch  ActionKind = "web.search"  // searches the web
	KindMCP        ActionKind = "mcp"         // calls an MCP server's tool
	KindAgent      ActionKind = "agent"       // starts a sub-agent
	KindOther      ActionKind = "other"       // anything no table maps
)

// ActionKinds returns every kind, KindOther last.
func ActionKinds() []ActionKind {
	return []ActionKind{KindShell, KindFileRead, KindFileWrite, KindFileEdit, KindFileSearch,
		KindWebFetch, KindWebSearch, KindMCP, KindAgent, KindOther}
}

// Valid reports whether k is one of ActionKinds.
func (k ActionKind) Valid() bool { return slices.Contains(ActionKinds(), k) }

// Action is a tool call normalized: its kind and the fields rules look at,
// read from the call's native arguments. The call's name and arguments stay
// as the harness sent them; the action is only added beside them.
type Action struct {
	// Kind is what the call does; KindOther for a tool no table maps.
	Kind ActionKind `json:"kind"`
	// Command is a shell call's command line (an argv is joined with
	// spaces).
	Command string `json:"command,omitempty"`
	// Paths are the files or directories a file call names (a patch's
	// files, in order).
	Paths []string `json:"paths,omitempty"`
	// URL is the URL a web.fetch call fetches (the first one its prompt
	// names).
	URL string `json:"url,omitempty"`
	// Query is a search's pattern or a web search's query.
	Query string `json:"query,omitempty"`
	// Server is an MCP call's server.
	Server string `json:"server,omitempty"`
	// MCPTool is an MCP call's tool, as the server names it.
	MCPTool string `json:"mcp_tool,omitempty"`
}

// Harness names who put a tool call on the bus, for NewAction: hookbus'
// own agent or a coding agent's harness (the names of loop agent-hook
// --harness).
type Harness string

// The harnesses with a table.
const (
	HarnessHookbus Harness = "hookbus"
	HarnessClaude  Harness = "claude"
	HarnessGemini  Harness = "gemini"
	HarnessCodex   Harness = "codex"
	// OpenCode and Kilo Code (its fork) name their tools alike.
	HarnessOpenCode Harness = "opencode"
	HarnessKilo     Harness = "kilo"
	HarnessCopilot  Harness = "copilot"
	HarnessQwen     Harness = "qwen"
	HarnessFactory  Harness = "factory"
	HarnessCline    Harness = "cline"
)

// toolRule maps one native tool: its kind and the fields it reads.
type toolRule struct {
	kind ActionKind
	read func(a *Action, args map[string]json.RawMessage)
}

// Field readers, by what the native arguments hold.
var (
	shell     = func(a *Action, m map[string]json.RawMessage) { a.Command = command(m["command"]) }
	shellCmd  = func(a *Action, m map[string]json.RawMessage) { a.Command = command(first(m, "command", "cmd")) }
	filePath  = func(a *Action, m map[string]json.RawMessage) { a.Paths = strs(m, "file_path", "absolute_path", "path") }
	notebook  = func(a *Action, m map[string]json.RawMessage) { a.Paths = strs(m, "notebook_path") }
	manyPaths = func(a *Action, m map[string]json.RawMessage) { a.Paths = strs(m, "paths", "dir_path", "path") }
	search    = func(a *Action, m map[string]json.RawMessage) {
		a.Query = str(m["pattern"])
		a.Paths = strs(m, "path", "dir_path")
	}
	fetchURL = func(a *Action, m map[string]json.RawMessage) { a.URL = str(m["url"]) }
	fetchIn  = func(a *Action, m map[string]json.RawMessage) {
		a.URL = urlRE.FindString(str(first(m, "url", "prompt")))
	}
	query = func(a *Action, m map[string]json.RawMessage) { a.Query = str(m["query"]) }
	patch = func(a *Action, m map[string]json.RawMessage) { a.Paths = patchPaths(m) }
	// Cline's calls hold lists: commands, files and requests.
	commands = func(a *Action, m map[string]json.RawMessage) {
		var cmds []string
		_ = json.Unmarshal(m["commands"], &cmds)
		a.Command = strings.Join(cmds, "\n")
	}
	files    = func(a *Action, m map[string]json.RawMessage) { a.Paths = objectField(m["files"], "path") }
	requests = func(a *Action, m map[string]json.RawMessage) {
		if urls := objectField(m["requests"], "url"); len(urls) > 0 {
			a.URL = urls[0]
		}
	}
	queries = func(a *Action, m map[string]json.RawMessage) {
		a.Query = strings.Join(objectField(m["queries"], "query"), "\n")
	}
	globs = func(a *Action, m map[string]json.RawMessage) {
		a.Query = strings.Join(strs(m, "patterns", "pattern"), " ")
		a.Paths = strs(m, "folder", "paths", "path")
	}
	dirPath = func(a *Action, m map[string]json.RawMessage) { a.Paths = strs(m, "directory_path", "path") }
	none    = func(*Action, map[string]json.RawMessage) {}
)

// The tables: one per harness, native tool name to rule. MCP tools
// (mcp__SERVER__TOOL, and Gemini CLI's SERVER__TOOL or mcp_SERVER_TOOL
// with its mcp_context) are read by mcpAction, not listed.
var (
	hookbusTools = map[string]toolRule{
		"Bash":       {KindShell, shell},
		"Read":       {KindFileRead, filePath},
		"read_file":  {KindFileRead, filePath},
		"Write":      {KindFileWrite, filePath},
		"Edit":       {KindFileEdit, filePath},
		"Glob":       {KindFileSearch, search},
		"Grep":       {KindFileSearch, search},
		"clock":      {KindOther, none},
		"calculator": {KindOther, none},
		"Task":       {KindAgent, none},
	}
	claudeTools = map[string]toolRule{
		"Bash":         {KindShell, shell},
		"Read":         {KindFileRead, filePath},
		"Write":        {KindFileWrite, filePath},
		"Edit":         {KindFileEdit, filePath},
		"MultiEdit":    {KindFileEdit, filePath},
		"NotebookEdit": {KindFileEdit, notebook},
		"Glob":         {KindFileSearch, search},
		"Grep":         {KindFileSearch, search},
		"LS":           {KindFileSearch, search},
		"WebFetch":     {KindWebFetch, fetchURL},
		"WebSearch":    {KindWebSearch, query},
		"Task":         {KindAgent, none},
		"Agent":        {KindAgent, none},
	}
	geminiTools = map[string]toolRule{
		"run_shell_command":   {KindShell, shell},
		"read_file":           {KindFileRead, filePath},
		"read_many_files":     {KindFileRead, manyPaths},
		"write_file":          {KindFileWrite, filePath},
		"replace":             {KindFileEdit, filePath},
		"glob":                {KindFileSearch, search},
		"search_file_content": {KindFileSearch, search},
		"grep":                {KindFileSearch, search},
		"list_directory":      {KindFileSearch, manyPaths},
		"web_fetch":           {KindWebFetch, fetchIn},
		"google_web_search":   {KindWebSearch, query},
	}
	codexTools = map[string]toolRule{
		"Bash":           {KindShell, shellCmd},
		"shell":          {KindShell, shellCmd},
		"local_shell":    {KindShell, shellCmd},
		"exec_command":   {KindShell, shellCmd},
		"apply_patch":    {KindFileEdit, patch},
		"Read":           {KindFileRead, filePath},
		"Write":          {KindFileWrite, filePath},
		"Edit":           {KindFileEdit, filePath},
		"web_search":     {KindWebSearch, query},
		"view_image":     {KindFileRead, filePath},
		"update_plan":    {KindOther, none},
		"write_stdin":    {KindShell, none},
		"unified_exec":   {KindShell, shellCmd},
		"container.exec": {KindShell, shellCmd},
	}
	// GitHub Copilot CLI: its own names (camelCase hooks) and the Claude
	// Code names its PascalCase hooks give some of them.
	copilotTools = map[string]toolRule{
		"bash":      {KindShell, shell},
		"Bash":      {KindShell, shell},
		"read_bash": {KindShell, none},
		"view":      {KindFileRead, filePath},
		"Read":      {KindFileRead, filePath},
		"create":    {KindFileWrite, filePath},
		"Write":     {KindFileWrite, filePath},
		"edit":      {KindFileEdit, filePath},
		"Edit":      {KindFileEdit, filePath},
		"glob":      {KindFileSearch, globs},
		"Glob":      {KindFileSearch, globs},
		"grep":      {KindFileSearch, globs},
		"Grep":      {KindFileSearch, globs},
		"web_fetch": {KindWebFetch, fetchURL},
		"WebFetch":  {KindWebFetch, fetchURL},
		"task":      {KindAgent, none},
		"Task":      {KindAgent, none},
	}
	qwenTools = map[string]toolRule{
		"run_shell_command":   {KindShell, shell},
		"read_file":           {KindFileRead, filePath},
		"read_many_files":     {KindFileRead, manyPaths},
		"write_file":          {KindFileWrite, filePath},
		"edit":                {KindFileEdit, filePath},
		"replace":             {KindFileEdit, filePath},
		"notebook_edit":       {KindFileEdit, notebook},
		"glob":                {KindFileSearch, search},
		"grep_search":         {KindFileSearch, search},
		"search_file_content": {KindFileSearch, search},
		"list_directory":      {KindFileSearch, manyPaths},
		"web_fetch":           {KindWebFetch, fetchIn},
		"web_search":          {KindWebSearch, query},
		"agent":               {KindAgent, none},
		"task":                {KindAgent, none},
	}
	factoryTools = map[string]toolRule{
		"Execute":    {KindShell, shell},
		"Read":       {KindFileRead, filePath},
		"Create":     {KindFileWrite, filePath},
		"Edit":       {KindFileEdit, filePath},
		"MultiEdit":  {KindFileEdit, filePath},
		"ApplyPatch": {KindFileEdit, patch},
		"Grep":       {KindFileSearch, search},
		"Glob":       {KindFileSearch, globs},
		"LS":         {KindFileSearch, dirPath},
		"FetchUrl":   {KindWebFetch, fetchURL},
		"WebSearch":  {KindWebSearch, query},
		"Task":       {KindAgent, none},
	}
	clineTools = map[string]toolRule{
		"run_commands":      {KindShell, commands},
		"execute_command":   {KindShell, shell},
		"read_files":        {KindFileRead, files},
		"editor":            {KindFileEdit, filePath},
		"search_codebase":   {KindFileSearch, queries},
		"fetch_web_content": {KindWebFetch, requests},
		"spawn_agent":       {KindAgent, none},
	}
)

func table(h Harness) map[string]toolRule {
	switch h {
	case HarnessHookbus:
		return hookbusTools
	case HarnessClaude:
		return claudeTools
	case HarnessGemini:
		return geminiTools
	case HarnessCodex:
		return codexTools
	case HarnessOpenCode, HarnessKilo:
		return opencodeTools
	case HarnessCopilot:
		return copilotTools
	case HarnessQwen:
		return qwenTools
	case HarnessFactory:
		return factoryTools
	case HarnessCline:
		return clineTools
	}
	return nil
}

// NewAction normalizes one tool call of harness h: name is the tool's
// native name, args its native arguments (a JSON object; anything else
// leaves the fields empty). A tool the harness's table does not map, and
// any tool of a harness with no table, is KindOther: never dropped. An MCP
// tool is KindMCP with its server and tool when its name says them
// (mcp__SERVER__TOOL; for Gemini CLI also SERVER__TOOL); MCPAction takes
// them from a harness that says them apart.
func NewAction(h Harness, name string, args json.RawMessage) Action {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(args, &m) // not an object: no fields
	if r, ok := table(h)[name]; ok {
		a := Action{Kind: r.kind}
		r.read(&a, m)
		return a
	}
	if server, tool, ok := mcpName(h, name); ok {
		return MCPAction(server, tool)
	}
	return Action{Kind: KindOther}
}

// MCPAction is the action of a call of tool on MCP server server.
func MCPAction(server, tool string) Action {
	return Action{Kind: KindMCP, Server: server, MCPTool: tool}
}

// mcpName splits an MCP tool's name as harness h writes it.
func mcpName(h Harness, name string) (server, tool string, ok bool) {
	rest, prefixed := strings.CutPrefix(name, "mcp__")
	if !prefixed && h != HarnessGemini {
		return "", "", false
	}
	server, tool, ok = strings.Cut(rest, "__")
	return server, tool, ok && server != "" && tool != ""
}

// urlRE finds a URL in free text (Gemini CLI's web_fetch prompt).
var urlRE = regexp.MustCompile(`https?://[^\s"'<>]+`)

func first(m map[string]json.RawMessage, keys ...string) json.RawMessage {
	for _, k := range keys {
		if v, ok := m[k]; ok {
			return v
		}
	}
	return nil
}

// str reads a JSON string; "" for anything else.
func str(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// command reads a command given as a string or as an argv (joined with
// spaces).
func command(raw json.RawMessage) string {
	if s := str(raw); s != "" {
		return s
	}
	var argv []string
	if json.Unmarshal(raw, &argv) != nil {
		return ""
	}
	return strings.Join(argv, " ")
}

// strs reads the first of keys present: a string or an array of strings.
func strs(m map[string]json.RawMessage, keys ...string) []string {
	raw := first(m, keys...)
	if s := str(raw); s != "" {
		return []string{s}
	}
	var list []string
	if json.Unmarshal(raw, &list) != nil || len(list) == 0 {
		return nil
	}
	return list
}

// objectField reads a list of strings, or of objects, as the strings or
// each object's field key.
func objectField(raw json.RawMessage, key string) []string {
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		return nil
	}
	var out []string
	for _, e := range list {
		if s := str(e); s != "" {
			out = append(out, s)
			continue
		}
		var o map[string]json.RawMessage
		if json.Unmarshal(e, &o) == nil {
			if s := str(o[key]); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

// patchPaths lists the files an apply_patch patch names, wherever its
// arguments hold the patch (input, patch, or an argv's last word).
func patchPaths(m map[string]json.RawMessage) []string {
	text := str(first(m, "input", "patch"))
	if text == "" {
		var argv []string
		if json.Unmarshal(m["command"], &argv) == nil && len(argv) > 0 {
			text = argv[len(argv)-1]
		} else {
			text = str(m["command"])
		}
	}
	var out []string
	for _, line := range strings.Split(text, "\n") {
		for _, p := range []string{"*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: "} {
			if f, ok := strings.CutPrefix(strings.TrimSpace(line), p); ok && f != "" {
				out = append(out, f)
			}
		}
	}
	return out
}

// WithAction returns c with its Action set to NewAction(h, c.Name,
// c.Arguments).
func (c ToolCall) WithAction(h Harness) ToolCall {
	a := NewAction(h, c.Name, c.Arguments)
	c.Action = &a
	return c
}

// Kind returns the kind of c's action; "" when c carries none.
func (c ToolCall) Kind() ActionKind {
	if c.Action == nil {
		return ""
	}
	return c.Action.Kind
}

// CallKind reads the kind of the tool call a tool stage's payload carries
// (data is the event's data: {"call":{"action":{"kind":...}}}); "" when
// it carries none.
func CallKind(data json.RawMessage) ActionKind {
	var p struct {
		Call struct {
			Action *struct {
				Kind ActionKind `json:"kind"`
			} `json:"action"`
		} `json:"call"`
	}
	if json.Unmarshal(data, &p) != nil || p.Call.Action == nil {
		return ""
	}
	return p.Call.Action.Kind
}
