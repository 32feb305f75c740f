package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxToolName is the longest tool name both OpenAI's and Anthropic's APIs
// accept.
const maxToolName = 64

// emptySchema is the parameters of a tool that lists no input schema.
var emptySchema = json.RawMessage(`{"type":"object"}`)

// ToolName is the name a server's tool has in an agent:
// mcp__<server>__<tool>, as Claude Code names MCP tools.
func ToolName(server, tool string) string { return "mcp__" + server + "__" + tool }

// tool is one MCP tool as a loop.Tool.
type tool struct {
	srv  *Server
	name string // the name on the server
	spec events.ToolSpec
}

func (t *tool) Spec() events.ToolSpec { return t.spec }

// Call sends tools/call with args (a JSON object) and returns the result's
// text. Every error is an *Error naming the server and the tool.
func (t *tool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	return t.srv.call(ctx, t.name, args, t.spec.Idempotent)
}

// adapt turns the listed tools into loop.Tools, leaving out (and
// reporting) those a model provider would refuse.
func (s *Server) adapt(listed []*sdk.Tool) ([]loop.Tool, []SkippedTool) {
	var tools []loop.Tool
	var skipped []SkippedTool
	seen := make(map[string]bool, len(listed))
	for _, lt := range listed {
		full := ToolName(s.cfg.Name, lt.Name)
		switch {
		case lt.Name == "" || strings.IndexFunc(lt.Name, func(r rune) bool { return !validRune(r) }) >= 0:
			skipped = append(skipped, SkippedTool{Name: lt.Name, Reason: "a tool name may hold only letters, digits, '_' and '-'"})
			continue
		case len(full) > maxToolName:
			skipped = append(skipped, SkippedTool{Name: lt.Name, Reason: fmt.Sprintf("%s is longer than %d characters", full, maxToolName)})
			continue
		case seen[lt.Name]:
			skipped = append(skipped, SkippedTool{Name: lt.Name, Reason: "listed twice"})
			continue
		}
		seen[lt.Name] = true
		params := emptySchema
		if lt.InputSchema != nil {
			b, err := json.Marshal(lt.InputSchema)
			if err != nil || !bytes.HasPrefix(bytes.TrimSpace(b), []byte("{")) {
				skipped = append(skipped, SkippedTool{Name: lt.Name, Reason: "its input schema is not a JSON object"})
				continue
			}
			params = b
		}
		tools = append(tools, &tool{srv: s, name: lt.Name, spec: events.ToolSpec{
			Name:        full,
			Description: lt.Description,
			Parameters:  params,
			Idempotent:  lt.Annotations != nil && (lt.Annotations.ReadOnlyHint || lt.Annotations.IdempotentHint),
		}})
	}
	return tools, skipped
}

// call runs one tools/call; see tool.Call.
func (s *Server) call(ctx context.Context, name string, args json.RawMessage, idempotent bool) (string, error) {
	fail := func(kind, err error, stderr string) error {
		return &Error{Server: s.cfg.Name, Tool: name, Kind: kind, Err: err, Stderr: stderr}
	}
	args = bytes.TrimSpace(args)
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	if args[0] != '{' || !json.Valid(args) {
		return "", fail(ErrArguments, nil, "")
	}
	var resent error // why the call is being sent again
	for attempt := 0; ; attempt++ {
		c, err := s.session(ctx, name)
		if err != nil && resent != nil {
			// The server is not back: the call's own failure is the news.
			return "", fail(ErrConnectionLost, resent, "")
		}
		if err != nil {
			return "", err
		}
		cctx, cancel := context.WithTimeout(ctx, s.cfg.timeout())
		res, err := c.sess.CallTool(cctx, &sdk.CallToolParams{Name: name, Arguments: args})
		timedOut := errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
		cancel()
		switch {
		case err == nil && res.IsError:
			var why error
			if text := render(res); text != "" {
				why = errors.New(text)
			}
			return "", fail(ErrToolError, why, "")
		case err == nil:
			return render(res), nil
		case ctx.Err() != nil:
			// The caller gave up (the SDK told the server to cancel); the
			// server is not at fault and the session stays.
			return "", fail(ctx.Err(), nil, "")
		case timedOut:
			s.drop(c)
			return "", fail(ErrTimeout, fmt.Errorf("no result within %v", s.cfg.timeout()), "")
		case isReply(err):
			// The server answered with a JSON-RPC error: it is alive and the
			// session stays.
			return "", fail(ErrProtocol, err, "")
		case errors.Is(err, sdk.ErrSessionMissing) && attempt == 0:
			// The server forgot the session (it restarted): the call did
			// not run, so it is safe to send it again on a new session.
			s.drop(c)
			continue
		case attempt == 0 && idempotent && c.proc == nil && lost(c, err):
			// An HTTP server that restarted between two calls may close
			// the connection the call was sent on before it answers (or
			// even reads it): whether the call ran is unknown, so only a
			// tool the server declares read-only or idempotent is sent
			// again, on a new session.
			s.drop(c)
			resent = err
			continue
		}
		s.drop(c)
		stderr := ""
		if c.proc != nil && c.proc.wait(waitDelay) {
			stderr = c.stderr() // the child died: its last words
		}
		kind := ErrProtocol
		if lost(c, err) {
			kind = ErrConnectionLost
		}
		return "", fail(kind, err, stderr)
	}
}

// sdkLocal reports whether code is one the SDK uses for its own failures
// (client closing, server closing, rejected by the transport), not sent by
// a server.
func sdkLocal(code int64) bool { return code == -32003 || code == -32004 || code == -32005 }

// isReply reports whether err is a JSON-RPC error the server sent.
func isReply(err error) bool {
	var we *jsonrpc.Error
	return errors.As(err, &we) && !sdkLocal(we.Code) && !errors.Is(err, sdk.ErrConnectionClosed)
}

// lost reports whether err means the connection broke (rather than a
// reply that does not parse).
func lost(c *conn, err error) bool {
	var ne net.Error
	var we *jsonrpc.Error
	return !c.alive() || errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, sdk.ErrSessionMissing) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, os.ErrClosed) ||
		errors.As(err, &ne) || (errors.As(err, &we) && sdkLocal(we.Code))
}

// render is a result's content as text: text blocks joined by newlines,
// other blocks described in brackets, the structured content as JSON when
// there is nothing else.
func render(res *sdk.CallToolResult) string {
	parts := make([]string, 0, len(res.Content))
	for _, c := range res.Content {
		parts = append(parts, renderContent(c))
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	return strings.Join(parts, "\n")
}

func renderContent(c sdk.Content) string {
	switch c := c.(type) {
	case *sdk.TextContent:
		return c.Text
	case *sdk.ImageContent:
		return fmt.Sprintf("[image: %s, %d bytes]", c.MIMEType, len(c.Data))
	case *sdk.AudioContent:
		return fmt.Sprintf("[audio: %s, %d bytes]", c.MIMEType, len(c.Data))
	case *sdk.ResourceLink:
		return fmt.Sprintf("[resource link: %s]", describe(c.URI, c.Name, c.MIMEType, -1))
	case *sdk.EmbeddedResource:
		r := c.Resource
		if r == nil {
			return "[resource]"
		}
		if r.Text != "" || len(r.Blob) == 0 {
			return fmt.Sprintf("[resource: %s]\n%s", describe(r.URI, "", r.MIMEType, -1), r.Text)
		}
		return fmt.Sprintf("[resource: %s]", describe(r.URI, "", r.MIMEType, len(r.Blob)))
	default:
		return fmt.Sprintf("[%T content]", c)
	}
}

// describe is "uri (name), mime, n bytes", leaving out what is empty.
func describe(uri, name, mime string, size int) string {
	s := uri
	if name != "" && name != uri {
		s += " (" + name + ")"
	}
	if mime != "" {
		s += ", " + mime
	}
	if size >= 0 {
		s += fmt.Sprintf(", %d bytes", size)
	}
	return s
}
