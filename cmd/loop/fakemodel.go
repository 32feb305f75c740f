package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/hookbus/hookbus/cmd/internal/cli"
	"github.com/hookbus/hookbus/internal/fakellm"
)

const fakeModelLong = `Serves a fake model from a script file, to try Claude Code, Gemini CLI, Codex CLI or
loop's openai and anthropic providers without an account, or to test a policy against a
real CLI in CI. It answers OpenAI's POST /v1/chat/completions and /v1/responses,
Anthropic's POST /v1/messages and the Gemini API's POST
/v1beta/models/MODEL:generateContent and :streamGenerateContent, streamed when asked.

The script (YAML or JSON) is a list of turns, each a reply text, a tool call, or both:

    turns:
      - reply: Removing it.
        tool: {name: Bash, arguments: {command: rm -rf victim}}
      - when: refused          # optional: only a request whose body contains this
        reply: The hook refused, so I left victim alone.

Each request takes the first turn not yet taken whose "when" it contains; when none is
left it is answered 501, which no client retries. A mistake in the script is refused
with its file:line. It prints the environment to set for each client, and a line for
each request it answers. --record FILE writes each request, as received, to FILE as a line
of JSON ({"n", "method", "path", "api", "turn", "body"}): what a CLI sent its model, e.g.
the tool result that tells the model a hook's reason.

It has no authentication and serves anyone who reaches it: it listens on loopback,
and refuses another address unless --allow-remote. It is a test tool, not a proxy.
docs/CLAUDE_CODE.md and docs/AGENTS.md show each CLI and provider against it.`

// fakeModelCmd serves scripted model APIs until interrupted.
func fakeModelCmd(a *cli.App) *cobra.Command {
	return cli.NoArgsCommand("fake-model --script FILE [--listen ADDR]", "Serve a scripted fake model (OpenAI, Anthropic, Gemini APIs) to try CLIs and providers without a key", fakeModelLong, func(fs *pflag.FlagSet) cli.Run {
		script := fs.String("script", "", "the script `FILE` of turns (YAML or JSON)")
		listen := fs.String("listen", "127.0.0.1:8790", "the `ADDR`ess to listen on (port 0: any free port)")
		record := fs.String("record", "", "write each request received to `FILE` as a line of JSON (created readable by you only, or truncated)")
		remote := fs.Bool("allow-remote", false, "listen on an address other than loopback: anyone who reaches it can use the fake")
		return func(ctx context.Context, _ []string) error {
			if *script == "" {
				return fmt.Errorf("%w: give the script of turns with --script FILE", cli.ErrUsage)
			}
			return fakeModel(ctx, *script, *listen, *record, *remote, a.Err)
		}
	})
}

// fakeModel serves the script on listen until ctx ends.
func fakeModel(ctx context.Context, script, listen, record string, remote bool, stderr io.Writer) error {
	b, err := os.ReadFile(script)
	if err != nil {
		return err
	}
	turns, err := fakellm.ParseTurns(script, b)
	if err != nil {
		return err
	}
	if err := checkLoopback(listen, remote); err != nil {
		return err
	}
	ts := fakellm.NewTurnServer(turns, &prefixWriter{prefix: "loop fake-model: ", w: stderr})
	if record != "" {
		f, err := os.OpenFile(record, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		defer f.Close()
		ts.RecordTo(f)
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	url := "http://" + ln.Addr().String()
	fmt.Fprintf(stderr, `loop fake-model: listening on %s, %d turns from %s; interrupt to stop
  Claude Code:       ANTHROPIC_BASE_URL=%[1]s ANTHROPIC_API_KEY=sk-ant-fake CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1
  Gemini CLI:        GOOGLE_GEMINI_BASE_URL=%[1]s GEMINI_API_KEY=fake-gemini-key
  Codex CLI:         base_url = "%[1]s/v1", wire_api = "responses" in a [model_providers.fake] of ~/.codex/config.toml
  loop --model openai:NAME:     OPENAI_BASE_URL=%[1]s/v1 OPENAI_API_KEY=fake
  loop --model anthropic:NAME:  ANTHROPIC_BASE_URL=%[1]s ANTHROPIC_API_KEY=fake
`, url, len(turns.Turns), script)
	var h http.Handler = ts
	if !remote {
		h = loopbackHost(h)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shut)
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	fmt.Fprintln(stderr, "loop fake-model: stopped")
	return nil
}

// checkLoopback refuses an address off loopback unless remote.
func checkLoopback(listen string, remote bool) error {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return fmt.Errorf("%w: --listen %q: %v", cli.ErrUsage, listen, err)
	}
	if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) || remote {
		return nil
	}
	return fmt.Errorf("%w: --listen %s is not a loopback address: the fake model has no authentication and is a test tool; give --allow-remote to serve it there anyway", cli.ErrUsage, listen)
}

// loopbackHost answers 421 to a request whose Host is not a loopback name:
// a web page that rebinds its own name to 127.0.0.1 reaches nothing.
func loopbackHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.Host)
		if err != nil {
			host = r.Host
		}
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			http.Error(w, "loop fake-model serves only loopback names (localhost, 127.0.0.1, [::1])", http.StatusMisdirectedRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// prefixWriter writes each write (a line) after a prefix, one at a time.
type prefixWriter struct {
	prefix string
	w      io.Writer
	mu     sync.Mutex
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := io.WriteString(p.w, p.prefix+string(b)); err != nil {
		return 0, err
	}
	return len(b), nil
}
