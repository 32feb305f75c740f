package claudecode

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/hookbus/hookbus/events"
)

// TranscriptVersion is the "version" of the transcript lines hookbus
// writes (Claude Code writes its own version there).
const TranscriptVersion = "hookbus"

// transcriptLine is one line of a Claude Code transcript (JSONL).
type transcriptLine struct {
	ParentUUID  *string         `json:"parentUuid"`
	IsSidechain bool            `json:"isSidechain"`
	UserType    string          `json:"userType"`
	Cwd         string          `json:"cwd,omitempty"`
	SessionID   string          `json:"sessionId"`
	Version     string          `json:"version"`
	Type        string          `json:"type"`
	Message     json.RawMessage `json:"message"`
	UUID        string          `json:"uuid"`
	Timestamp   string          `json:"timestamp"`
}

type contentBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   *string         `json:"content,omitempty"`
}

// WriteTranscript writes a session's conversation as a Claude Code
// transcript: one JSON line per message, "user" lines for prompts and tool
// results (tool_result blocks), "assistant" lines for the model's replies
// (text and tool_use blocks), chained by parentUuid. System messages are
// left out, as Claude Code's transcripts have none. The uuids are derived
// from the session and the message's place, so a rewritten transcript
// keeps them.
func WriteTranscript(w io.Writer, session, cwd string, msgs []events.Message) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	now := time.Now().UTC().Format(time.RFC3339Nano)
	var parent *string
	for i, m := range msgs {
		line := transcriptLine{ParentUUID: parent, UserType: "external", Cwd: cwd, SessionID: session,
			Version: TranscriptVersion, UUID: lineUUID(session, i), Timestamp: now}
		var msg any
		switch m.Role {
		case events.RoleUser:
			line.Type = "user"
			msg = map[string]any{"role": "user", "content": m.Content}
		case events.RoleAssistant:
			line.Type = "assistant"
			var blocks []contentBlock
			if m.Content != "" {
				blocks = append(blocks, contentBlock{Type: "text", Text: m.Content})
			}
			for _, c := range m.ToolCalls {
				blocks = append(blocks, contentBlock{Type: "tool_use", ID: c.ID, Name: c.Name, Input: arguments(c.Arguments)})
			}
			msg = map[string]any{"role": "assistant", "type": "message", "content": blocks}
		case events.RoleTool:
			line.Type = "user"
			content := m.Content
			msg = map[string]any{"role": "user", "content": []contentBlock{{Type: "tool_result", ToolUseID: m.ToolCallID, Content: &content}}}
		default:
			continue
		}
		b, err := json.Marshal(msg)
		if err != nil {
			return err
		}
		line.Message = b
		if err := enc.Encode(line); err != nil {
			return err
		}
		u := line.UUID
		parent = &u
	}
	return bw.Flush()
}

// lineUUID is a stable UUID-shaped id of message i of session.
func lineUUID(session string, i int) string {
	h := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d", session, i))
	h[6] = h[6]&0x0f | 0x50 // version 5-like, variant RFC 4122
	h[8] = h[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

// Conversations gives a session's conversation as it stands in the record:
// what its transcript holds. loop.Conversations (the engine's rebuild of a
// session over its History) is one.
type Conversations interface {
	Conversation(ctx context.Context, agent, session string) ([]events.Message, error)
}

// TranscriptDir writes sessions' transcripts into a directory, from their
// conversations: Path reads the session's (Conversations) and writes
// dir/<agent>/<session>.jsonl, the ids escaped so that no id names a
// path outside its own file. The command hook interceptor calls Path for
// each hook's transcript_path. It is safe for concurrent use: a
// transcript is written to a temporary file and renamed into place, so a
// reader sees a whole one.
//
// The transcript holds the conversation as read when the hook runs: events
// the run appended asynchronously and the store has not yet acknowledged
// may be missing from it.
type TranscriptDir struct {
	c   Conversations
	dir string
	own bool
	cwd func(agent string) string
}

// NewTranscripts returns a TranscriptDir writing under dir; with dir ""
// it makes a temporary directory, which Close removes.
func NewTranscripts(c Conversations, dir string) (*TranscriptDir, error) {
	if c == nil {
		return nil, fmt.Errorf("claudecode: transcripts need the sessions' conversations")
	}
	t := &TranscriptDir{c: c, dir: dir}
	if dir == "" {
		d, err := os.MkdirTemp("", "hookbus-transcripts-")
		if err != nil {
			return nil, fmt.Errorf("claudecode: transcripts: %w", err)
		}
		t.dir, t.own = d, true
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("claudecode: transcripts: %w", err)
	}
	return t, nil
}

// WithCwd sets the cwd written in an agent's transcript lines (the agent's
// root); it returns t.
func (t *TranscriptDir) WithCwd(cwd func(agent string) string) *TranscriptDir {
	t.cwd = cwd
	return t
}

// Dir is the directory the transcripts are written in.
func (t *TranscriptDir) Dir() string { return t.dir }

// Transcripts writes a session's transcript and gives its path, for the
// hook input's transcript_path. *TranscriptDir implements it.
type Transcripts interface {
	Path(ctx context.Context, agent, session string) (string, error)
}

// FillTranscripts writes the transcripts the input of event on ev names
// and sets their paths in env: the session's, and for SubagentStop the
// sub-agent's. A transcript that cannot be written is logged and left
// empty: the hook still runs. A nil t fills nothing.
func FillTranscripts(ctx context.Context, t Transcripts, event HookEvent, ev *events.Event, env *Env, log *slog.Logger) {
	if t == nil {
		return
	}
	p, err := t.Path(ctx, ev.AgentID, ev.SessionID)
	if err != nil {
		log.WarnContext(ctx, "claude hook: no transcript", "agent", ev.AgentID, "session", ev.SessionID, "err", err)
	}
	env.TranscriptPath = p
	if agent, session, ok := SubagentSession(ev); ok && event == SubagentStop {
		if env.AgentTranscriptPath, err = t.Path(ctx, agent, session); err != nil {
			log.WarnContext(ctx, "claude hook: no sub-agent transcript", "agent", agent, "session", session, "err", err)
		}
	}
}

// HookInput is the input of event's hooks on ev (NewInput) with the
// transcripts t writes (FillTranscripts).
func HookInput(ctx context.Context, t Transcripts, event HookEvent, ev *events.Event, env Env, log *slog.Logger) (*Input, error) {
	FillTranscripts(ctx, t, event, ev, &env, log)
	return NewInput(event, ev, env)
}

// Path writes the session's transcript as it stands and returns its path.
// The error wraps events.ErrInvalidID for a bad id, or is Conversations' or
// the file system's.
func (t *TranscriptDir) Path(ctx context.Context, agent, session string) (string, error) {
	if err := events.ValidateID("agent", agent); err != nil {
		return "", err
	}
	if err := events.ValidateID("session", session); err != nil {
		return "", err
	}
	msgs, err := t.c.Conversation(ctx, agent, session)
	if err != nil {
		return "", fmt.Errorf("claudecode: transcript of %s/%s: %w", agent, session, err)
	}
	dir := filepath.Join(t.dir, url.PathEscape(agent))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("claudecode: transcript: %w", err)
	}
	path := filepath.Join(dir, url.PathEscape(session)+".jsonl")
	f, err := os.CreateTemp(dir, ".transcript-*")
	if err != nil {
		return "", fmt.Errorf("claudecode: transcript: %w", err)
	}
	cwd := ""
	if t.cwd != nil {
		cwd = t.cwd(agent)
	}
	werr := WriteTranscript(f, session, cwd, msgs)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(f.Name(), path)
	}
	if werr != nil {
		_ = os.Remove(f.Name())
		return "", fmt.Errorf("claudecode: transcript of %s/%s: %w", agent, session, werr)
	}
	return path, nil
}

// Close removes the directory when NewTranscripts made it.
func (t *TranscriptDir) Close() error {
	if !t.own {
		return nil
	}
	return os.RemoveAll(t.dir)
}
