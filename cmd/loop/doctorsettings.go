package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hookbus/hookbus/hooks/claudecode"
	"github.com/hookbus/hookbus/hooks/cline"
	"github.com/hookbus/hookbus/hooks/codex"
	"github.com/hookbus/hookbus/hooks/copilot"
	"github.com/hookbus/hookbus/hooks/factory"
	"github.com/hookbus/hookbus/hooks/gemini"
	"github.com/hookbus/hookbus/hooks/opencode"
	"github.com/hookbus/hookbus/hooks/qwen"
)

// doctorEnv is where loop doctor looks: the user's home, the project, the
// environment the coding agent would run with.
type doctorEnv struct {
	home, project string
	getenv        func(string) string
}

// settingsFile is one file a CLI reads its hooks (or plugins) from.
type settingsFile struct {
	scope string // user, project, local, managed, system
	path  string
}

// trustState is what a CLI's own trust store says of the project.
type trustState struct {
	applies bool   // the CLI has trust
	trusted bool   // the project is trusted
	where   string // the file or variable that says so
}

// cliRow is one coding agent's CLI as loop doctor reads it: where its
// settings are, which hook events it offers, how it trusts a project. One
// row per CLI: another CLI is one more row.
type cliRow struct {
	name, title string
	// route is loop gateway's route for it; agent its default agent id.
	route string
	// events are the hook events it offers (or, for a plugin, the hooks
	// the plugin posts).
	events []string
	// files are where it reads hooks, in its order.
	files func(e doctorEnv) []settingsFile
	// plugin: its hooks are hookbus' plugin file, not a hooks table.
	plugin bool
	// read reads one of its files' hooks, event to hooks (nil: Claude
	// Code's settings shape, hookTable); a file that is not there gives
	// nil and no error.
	read func(path string) (map[string][]hookEntry, error)
	// trust reads its trust store for the project; trustAll: an untrusted
	// project runs none of its hooks, else only the project's own.
	trust    func(e doctorEnv) trustState
	trustAll bool
	// trustFlag, when set, is how the CLI is told to trust a project for
	// one run, which loop doctor cannot see: an untrusted project is a
	// note naming it, not a problem.
	trustFlag string
	// note is what loop doctor cannot check of it, said as a note.
	note string
	// probe is the probe's hook input for session in project (nil: Claude
	// Code's SessionStart, which most CLIs send).
	probe func(session, project string, now time.Time) []byte
}

// cliRows are the CLIs loop doctor knows, by --harness name.
func cliRows() []cliRow {
	none := func(doctorEnv) trustState { return trustState{} }
	return []cliRow{
		{name: claudecode.HarnessName, title: "Claude Code", route: GatewayPath, events: claudeEvents(),
			files: func(e doctorEnv) []settingsFile {
				return []settingsFile{
					{"user", filepath.Join(e.home, ".claude", "settings.json")},
					{"project", filepath.Join(e.project, ".claude", "settings.json")},
					{"local", filepath.Join(e.project, ".claude", "settings.local.json")},
					{"managed", "/etc/claude-code/managed-settings.json"},
				}
			},
			trust: claudeTrust},
		{name: gemini.HarnessName, title: "Gemini CLI", route: "/gemini-cli", events: gemini.Events(),
			files: func(e doctorEnv) []settingsFile {
				return []settingsFile{
					{"user", filepath.Join(e.home, ".gemini", "settings.json")},
					{"project", filepath.Join(e.project, ".gemini", "settings.json")},
					{"system", "/etc/gemini-cli/settings.json"},
				}
			},
			trust: geminiTrust, trustAll: true},
		{name: codex.HarnessName, title: "Codex CLI", route: "/codex-cli", events: codex.Events(),
			files: func(e doctorEnv) []settingsFile {
				return []settingsFile{
					{"user", filepath.Join(codexHome(e), "hooks.json")},
					{"project", filepath.Join(e.project, ".codex", "hooks.json")},
				}
			},
			trust: codexTrust,
			note:  "Codex CLI also runs a hook only once a person has trusted it (/hooks in its TUI; headless: codex exec --dangerously-bypass-hook-trust), which loop doctor cannot see"},
		{name: opencode.OpenCode.Name(), title: "OpenCode", route: "/" + opencode.OpenCode.Agent(), events: opencode.Hooks(), plugin: true,
			files: func(e doctorEnv) []settingsFile {
				return pluginFiles(filepath.Join(e.home, ".config", "opencode", "plugins"), filepath.Join(e.project, ".opencode", "plugins"))
			},
			trust: none},
		{name: opencode.Kilo.Name(), title: "Kilo Code", route: "/" + opencode.Kilo.Agent(), events: opencode.Hooks(), plugin: true,
			files: func(e doctorEnv) []settingsFile {
				return pluginFiles(filepath.Join(e.home, ".config", "kilo", "plugins"), filepath.Join(e.project, ".kilo", "plugins"))
			},
			trust: none},
		{name: copilot.HarnessName, title: "GitHub Copilot CLI", route: "/" + copilot.DefaultAgent, events: copilot.Events(),
			files: func(e doctorEnv) []settingsFile {
				return dirFiles(filepath.Join(e.project, ".github", "hooks"), "project", ".json")
			},
			read: copilotHookTable, trust: copilotTrust, trustAll: true, trustFlag: "--trust-folder"},
		{name: qwen.HarnessName, title: "Qwen Code", route: "/" + qwen.DefaultAgent, events: qwen.Events(),
			files: func(e doctorEnv) []settingsFile {
				system := cmp.Or(e.getenv("QWEN_CODE_SYSTEM_SETTINGS_PATH"), "/etc/qwen-code/settings.json")
				return []settingsFile{
					{"user", filepath.Join(e.home, ".qwen", "settings.json")},
					{"project", filepath.Join(e.project, ".qwen", "settings.json")},
					{"system", system},
				}
			},
			trust: qwenTrust, trustAll: true},
		{name: factory.HarnessName, title: "Factory Droid", route: "/" + factory.DefaultAgent, events: factory.Events(),
			files: func(e doctorEnv) []settingsFile {
				return []settingsFile{
					{"user", filepath.Join(e.home, ".factory", "settings.json")},
					{"project", filepath.Join(e.project, ".factory", "settings.json")},
					{"local", filepath.Join(e.project, ".factory", "settings.local.json")},
				}
			},
			trust: none},
		{name: cline.HarnessName, title: "Cline", route: "/" + cline.DefaultAgent, events: cline.Events(),
			files: func(e doctorEnv) []settingsFile {
				return []settingsFile{
					{"user", filepath.Join(e.home, ".cline", "hooks")},
					{"project", filepath.Join(e.project, ".clinerules", "hooks")},
				}
			},
			read: clineHookDir, trust: none,
			probe: func(session, project string, now time.Time) []byte {
				return fmt.Appendf(nil, `{"taskId":%q,"hookName":"agent_start","timestamp":%q,"workspaceRoots":[%q],"taskStart":{"taskMetadata":{}}}`,
					session, now.UTC().Format(time.RFC3339), project)
			}},
	}
}

// readHooks reads the hooks of one of the row's files.
func (r cliRow) readHooks(path string) (map[string][]hookEntry, error) {
	if r.read != nil {
		return r.read(path)
	}
	return hookTable(path)
}

// dirFiles are the files of dir whose names end in one of exts (dir itself
// when it has none).
func dirFiles(dir, scope string, exts ...string) []settingsFile {
	var out []settingsFile
	ents, _ := os.ReadDir(dir)
	for _, ent := range ents {
		if !ent.IsDir() && slices.Contains(exts, filepath.Ext(ent.Name())) {
			out = append(out, settingsFile{scope, filepath.Join(dir, ent.Name())})
		}
	}
	if len(out) == 0 {
		out = append(out, settingsFile{scope, dir})
	}
	return out
}

// copilotHookTable reads a hooks file of Copilot CLI: {"version": 1,
// "hooks": {EVENT: [{"type": "command", "bash": COMMAND}]}}. A directory
// (no hooks file in it) or a file that is not there gives nil.
func copilotHookTable(path string) (map[string][]hookEntry, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if st, serr := os.Stat(path); serr == nil && st.IsDir() {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var doc struct {
		Hooks map[string][]struct {
			Type    string `json:"type"`
			Bash    string `json:"bash"`
			Command string `json:"command"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	out := map[string][]hookEntry{}
	for ev, hooks := range doc.Hooks {
		for _, h := range hooks {
			cmd := cmp.Or(h.Bash, h.Command)
			out[ev] = append(out[ev], hookEntry{Type: h.Type, Command: cmd})
		}
	}
	return out, nil
}

// clineHookDir reads a hooks directory of Cline: an executable file named
// after each event; its hook is the script's line that runs hookbus ("exec"
// and all). A file Cline cannot run (not executable) is no hook. A
// directory that is not there gives nil.
func clineHookDir(dir string) (map[string][]hookEntry, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string][]hookEntry{}
	for _, ent := range ents {
		info, err := ent.Info()
		if err != nil || ent.IsDir() || info.Mode()&0o111 == 0 {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, ent.Name()))
		if err != nil {
			return nil, err
		}
		e := hookEntry{Type: "command"}
		for _, line := range strings.Split(string(b), "\n") {
			line = strings.TrimSpace(line)
			if (hookEntry{Command: line}).isHookbus(nil) {
				e.Command = strings.TrimPrefix(line, "exec ")
				break
			}
		}
		out[ent.Name()] = append(out[ent.Name()], e)
	}
	return out, nil
}

func codexHome(e doctorEnv) string {
	if h := e.getenv("CODEX_HOME"); h != "" {
		return h
	}
	return filepath.Join(e.home, ".codex")
}

// pluginFiles are the plugin files of the user's and the project's plugin
// directories (the directory itself when it has none).
func pluginFiles(user, project string) []settingsFile {
	exts := []string{".js", ".ts", ".mjs"}
	return append(dirFiles(user, "user", exts...), dirFiles(project, "project", exts...)...)
}

// hookEntry is one hook a settings file gives an event.
type hookEntry struct {
	Type      string            `json:"type"`
	Command   string            `json:"command"`
	URL       string            `json:"url"`
	Headers   map[string]string `json:"headers"`
	OnFailure string            `json:"onFailure"`
}

// hookTable reads the hooks object of a settings file (Claude Code's
// shape, which Gemini CLI's and Codex CLI's share): event to its hooks.
// A file that is not there gives nil and no error.
func hookTable(path string) (map[string][]hookEntry, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var doc struct {
		Hooks map[string][]struct {
			Matcher string      `json:"matcher"`
			Hooks   []hookEntry `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	out := map[string][]hookEntry{}
	for ev, groups := range doc.Hooks {
		for _, g := range groups {
			out[ev] = append(out[ev], g.Hooks...)
		}
	}
	return out, nil
}

// isHookbus reports whether a hook sends the event to hookbus: loop
// agent-hook or claude-hook, hookbus-hook, or an http hook on a gateway
// route.
func (h hookEntry) isHookbus(rows []cliRow) bool {
	switch {
	case h.Command != "":
		return strings.Contains(h.Command, "agent-hook") || strings.Contains(h.Command, "claude-hook") || strings.Contains(h.Command, "hookbus-hook")
	case h.URL != "":
		for _, r := range rows {
			if strings.Contains(h.URL, r.route) {
				return true
			}
		}
	}
	return false
}

// isHookbusPlugin reports whether a plugin file is hookbus' plugin.
func isHookbusPlugin(path string) bool {
	b, err := os.ReadFile(path)
	return err == nil && bytes.Contains(b, []byte("HookbusPlugin"))
}

// claudeTrust reads ~/.claude.json: projects[PATH].hasTrustDialogAccepted.
func claudeTrust(e doctorEnv) trustState {
	path := filepath.Join(e.home, ".claude.json")
	st := trustState{applies: true, where: path}
	var doc struct {
		Projects map[string]struct {
			Accepted bool `json:"hasTrustDialogAccepted"`
		} `json:"projects"`
	}
	if b, err := os.ReadFile(path); err == nil && json.Unmarshal(b, &doc) == nil {
		st.trusted = doc.Projects[e.project].Accepted
	}
	return st
}

// geminiTrust reads ~/.gemini/trustedFolders.json (the project, or a
// parent with TRUST_PARENT or TRUST_FOLDER on an ancestor), or
// GEMINI_CLI_TRUST_WORKSPACE=true.
func geminiTrust(e doctorEnv) trustState {
	if e.getenv("GEMINI_CLI_TRUST_WORKSPACE") == "true" {
		return trustState{applies: true, trusted: true, where: "GEMINI_CLI_TRUST_WORKSPACE=true"}
	}
	path := filepath.Join(e.home, ".gemini", "trustedFolders.json")
	return trustState{applies: true, trusted: foldersTrust(path, e.project), where: path}
}

// copilotTrust reads the trusted_folders of Copilot CLI's config
// ($COPILOT_HOME/config.json, default ~/.copilot/config.json), or
// COPILOT_ALLOW_ALL=true.
func copilotTrust(e doctorEnv) trustState {
	if e.getenv("COPILOT_ALLOW_ALL") == "true" {
		return trustState{applies: true, trusted: true, where: "COPILOT_ALLOW_ALL=true"}
	}
	dir := cmp.Or(e.getenv("COPILOT_HOME"), filepath.Join(e.home, ".copilot"))
	path := filepath.Join(dir, "config.json")
	st := trustState{applies: true, where: path}
	var doc struct {
		Trusted []string `json:"trusted_folders"`
	}
	if b, err := os.ReadFile(path); err == nil && json.Unmarshal(b, &doc) == nil {
		for _, dir := range doc.Trusted {
			st.trusted = st.trusted || inside(dir, e.project)
		}
	}
	return st
}

// qwenTrust: Qwen Code's folder trust, off unless the user settings say
// security.folderTrust.enabled; then ~/.qwen/trustedFolders.json (or
// $QWEN_CODE_TRUSTED_FOLDERS_PATH) as Gemini CLI's.
func qwenTrust(e doctorEnv) trustState {
	var settings struct {
		Security struct {
			FolderTrust struct {
				Enabled bool `json:"enabled"`
			} `json:"folderTrust"`
		} `json:"security"`
	}
	b, err := os.ReadFile(filepath.Join(e.home, ".qwen", "settings.json"))
	if err != nil || json.Unmarshal(b, &settings) != nil || !settings.Security.FolderTrust.Enabled {
		return trustState{}
	}
	path := cmp.Or(e.getenv("QWEN_CODE_TRUSTED_FOLDERS_PATH"), filepath.Join(e.home, ".qwen", "trustedFolders.json"))
	return trustState{applies: true, trusted: foldersTrust(path, e.project), where: path}
}

// foldersTrust reads a trustedFolders.json (Gemini CLI's and Qwen
// Code's): whether the project is in a TRUST_FOLDER or TRUST_PARENT.
func foldersTrust(path, project string) bool {
	var folders map[string]string
	b, err := os.ReadFile(path)
	if err != nil || json.Unmarshal(b, &folders) != nil {
		return false
	}
	for dir, level := range folders {
		if (level == "TRUST_FOLDER" || level == "TRUST_PARENT") && inside(dir, project) {
			return true
		}
	}
	return false
}

// inside reports whether project is dir or under it.
func inside(dir, project string) bool {
	rel, err := filepath.Rel(dir, project)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// codexTrust reads $CODEX_HOME/config.toml: [projects."PATH"] trust_level
// = "trusted".
func codexTrust(e doctorEnv) trustState {
	path := filepath.Join(codexHome(e), "config.toml")
	st := trustState{applies: true, where: path}
	b, err := os.ReadFile(path)
	if err != nil {
		return st
	}
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") {
			in = line == `[projects."`+e.project+`"]` || line == `[projects.'`+e.project+`']`
			continue
		}
		if in && strings.ReplaceAll(line, " ", "") == `trust_level="trusted"` {
			st.trusted = true
		}
	}
	return st
}

func claudeEvents() []string {
	var out []string
	for _, e := range claudecode.Events() {
		out = append(out, string(e))
	}
	return out
}
