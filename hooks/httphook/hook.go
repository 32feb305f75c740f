package httphook

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/hookbus/hookbus/hooks/claudecode"
	"github.com/hookbus/hookbus/interceptors"
)

// Transcripts gives a session's transcript file, for the hook input's
// transcript_path. *claudecode.TranscriptDir implements it.
type Transcripts = claudecode.Transcripts

// DefaultMaxBody is how much of a response body is read by default.
const DefaultMaxBody = 1 << 20

// Config is what http hooks of one agent share.
type Config struct {
	// Client sends the requests (default: a client of its own, with no
	// timeout of its own: the chain's deadline bounds each request).
	Client *http.Client
	// Cwd is the agent's root, the input's cwd.
	Cwd string
	// Transcripts writes the session's transcript for transcript_path; nil
	// leaves it empty.
	Transcripts Transcripts
	// MaxBody is how many bytes of a response are read (default
	// DefaultMaxBody); the rest is counted and said to be cut.
	MaxBody int
	// Model is the agent's model, for SessionStart's model field.
	Model string
	// LookupEnv reads the variables headers may name (default
	// os.LookupEnv); only those a handler's allowedEnvVars lists are read.
	LookupEnv func(string) (string, bool)
	// Logger logs transcript failures (default: discard).
	Logger *slog.Logger
}

// handler is the http handler object of a settings file.
type handler struct {
	Type           string            `json:"type"`
	URL            string            `json:"url"`
	Headers        map[string]string `json:"headers"`
	AllowedEnvVars []string          `json:"allowedEnvVars"`
	// Read and ignored: the timeout is the registration's; the others are
	// how Claude Code shows or repeats a hook.
	Timeout       *float64 `json:"timeout"`
	StatusMessage string   `json:"statusMessage"`
	Once          bool     `json:"once"`
}

// Hook is an http hook: an interceptors.Interceptor that POSTs Claude
// Code's hook input to a URL and reads Claude Code's output from the
// response.
type Hook struct {
	cfg     Config
	event   claudecode.HookEvent
	url     string
	headers http.Header
}

// Factory returns the claudecode.Factory of "http" handlers.
func Factory(cfg Config) claudecode.Factory {
	return func(h claudecode.Handler, _ interceptors.Registration) (interceptors.Interceptor, error) {
		return New(cfg, h.Event, h.Raw)
	}
}

// New returns the hook of an http handler ({"type": "http", "url": "...",
// "headers": {...}, "allowedEnvVars": [...], "timeout": 30}) for event.
// Header values may name variables as $NAME or ${NAME}; those listed in
// allowedEnvVars are read once, here, and the others become empty, as in
// Claude Code. The error wraps ErrInvalidConfig.
func New(cfg Config, event claudecode.HookEvent, raw json.RawMessage) (*Hook, error) {
	if !event.Mapped() {
		return nil, fmt.Errorf("%w: %q is not a Claude Code event hookbus maps", ErrInvalidConfig, event)
	}
	var h handler
	if err := claudecode.DecodeHandler(raw, claudecode.TypeHTTP, &h); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	u, err := url.Parse(h.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: url %q is not an http or https URL", ErrInvalidConfig, h.URL)
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{}
	}
	cfg.MaxBody = cmp.Or(cfg.MaxBody, DefaultMaxBody)
	if cfg.MaxBody < 0 {
		return nil, fmt.Errorf("%w: MaxBody is negative", ErrInvalidConfig)
	}
	if cfg.LookupEnv == nil {
		cfg.LookupEnv = os.LookupEnv
	}
	cfg.Logger = cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	hk := &Hook{cfg: cfg, event: event, url: h.URL, headers: http.Header{}}
	for k, v := range h.Headers {
		hk.headers.Set(k, interpolate(v, h.AllowedEnvVars, cfg.LookupEnv))
	}
	return hk, nil
}

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)`)

// interpolate replaces $NAME and ${NAME} in v by the variable's value when
// allowed lists it, else by "".
func interpolate(v string, allowed []string, lookup func(string) (string, bool)) string {
	return envRef.ReplaceAllStringFunc(v, func(ref string) string {
		name := strings.Trim(ref, "${}")
		if !slices.Contains(allowed, name) {
			return ""
		}
		val, _ := lookup(name)
		return val
	})
}

// Intercept POSTs the input of req's event and reads the answer
// (claudecode.Decide): a 2xx body is the hook's output; another status, a
// refused connection or a timeout is a non-blocking error. A PostToolUse
// hook is not called on a result that is an error (claudecode.Applies): it
// allows (claudecode.NotRun).
func (h *Hook) Intercept(ctx context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
	if !claudecode.Applies(h.event, req.Event) {
		return claudecode.NotRun(h.event), nil
	}
	in, err := claudecode.HookInput(ctx, h.cfg.Transcripts, h.event, req.Event, claudecode.Env{Cwd: h.cfg.Cwd, Model: h.cfg.Model}, h.cfg.Logger)
	if err != nil {
		return nil, err
	}
	r, err := h.Post(ctx, in)
	if err != nil {
		return nil, err
	}
	return claudecode.Decide(h.event, req.Event, r)
}

// BoundByContext marks Intercept as returning once its ctx ends: the
// request is bounded by ctx.
func (h *Hook) BoundByContext() {}

var _ interceptors.ContextBound = (*Hook)(nil)

// Post sends in and returns the 2xx response's body as a Reply (exit
// status 0). Another status is an error wrapping ErrStatus that quotes
// the start of the body; ctx's deadline is an error wrapping
// interceptors.ErrTimeout.
func (h *Hook) Post(ctx context.Context, in *claudecode.Input) (claudecode.Reply, error) {
	body, err := json.Marshal(in)
	if err != nil {
		return claudecode.Reply{}, fmt.Errorf("http hook: input: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, bytes.NewReader(body))
	if err != nil {
		return claudecode.Reply{}, fmt.Errorf("http hook %s: %w", h.url, err)
	}
	maps.Copy(req.Header, h.headers)
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.cfg.Client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return claudecode.Reply{}, fmt.Errorf("%w: http hook %s: %w", interceptors.ErrTimeout, h.url, err)
		}
		return claudecode.Reply{}, fmt.Errorf("http hook %s: %w", h.url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, int64(h.cfg.MaxBody)+1))
	if err != nil {
		return claudecode.Reply{}, fmt.Errorf("http hook %s: reading the response: %w", h.url, err)
	}
	var cut int64
	if len(b) > h.cfg.MaxBody {
		b = b[:h.cfg.MaxBody]
		n, _ := io.Copy(io.Discard, resp.Body)
		cut = n + 1
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return claudecode.Reply{}, fmt.Errorf("%w: http hook %s answered %s (Claude Code's non-blocking error): %.200s", ErrStatus, h.url, resp.Status, bytes.TrimSpace(b))
	}
	return claudecode.Reply{Stdout: b, StdoutCut: cut}, nil
}
