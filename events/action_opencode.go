package events

import "encoding/json"

// camelPath reads OpenCode's filePath (or path).
var camelPath = func(a *Action, m map[string]json.RawMessage) { a.Paths = strs(m, "filePath", "path") }

// opencodeTools are OpenCode's built-in tools (Kilo Code's are the same),
// as its plugins' tool.execute.before names them.
var opencodeTools = map[string]toolRule{
	"bash":        {KindShell, shell},
	"read":        {KindFileRead, camelPath},
	"write":       {KindFileWrite, camelPath},
	"edit":        {KindFileEdit, camelPath},
	"multiedit":   {KindFileEdit, camelPath},
	"patch":       {KindFileEdit, patch},
	"apply_patch": {KindFileEdit, patch},
	"glob":        {KindFileSearch, search},
	"grep":        {KindFileSearch, search},
	"list":        {KindFileSearch, search},
	"webfetch":    {KindWebFetch, fetchURL},
	"websearch":   {KindWebSearch, query},
	"codesearch":  {KindWebSearch, query},
	"task":        {KindAgent, none},
	"todowrite":   {KindOther, none},
	"todoread":    {KindOther, none},
}
