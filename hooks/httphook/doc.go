// Package httphook runs Claude Code http hooks as hookbus interceptors:
// the hook input JSON (claudecode.NewInput) is POSTed to the handler's URL
// with its headers, and a 2xx response's body is read as a command hook's
// stdout (claudecode.Decide: Claude Code's JSON output, or text). A
// non-2xx status, a refused connection or a timeout is Claude Code's
// non-blocking error: hook.failed, and the action proceeds. To block, a
// server answers 2xx with a decision in its JSON body, as in Claude Code.
//
// Header values may use $NAME or ${NAME} for the variables the handler's
// allowedEnvVars lists; others become empty.
//
//	hooks, err := claudecode.Register(chain, []*claudecode.Settings{s}, claudecode.Options{
//		Factories: map[string]claudecode.Factory{claudecode.TypeHTTP: httphook.Factory(httphook.Config{Cwd: root})},
//	})
package httphook
