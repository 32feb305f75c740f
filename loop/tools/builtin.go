package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
)

// Builtin returns the built-in tools: clock, calculator and read_file
// confined to root (read_file is left out when root is "").
func Builtin(root string) []loop.Tool {
	ts := []loop.Tool{Clock(nil), Calculator()}
	if root != "" {
		ts = append(ts, ReadFile(root))
	}
	return ts
}

// Clock returns the "clock" tool: the current time, RFC 3339, UTC. now
// defaults to time.Now.
func Clock(now func() time.Time) loop.Tool {
	if now == nil {
		now = time.Now
	}
	return loop.ToolFunc(events.ToolSpec{
		Name:        "clock",
		Description: "Returns the current date and time (RFC 3339, UTC).",
		Parameters:  json.RawMessage(`{"type":"object","properties":{}}`),
	}, func(context.Context, json.RawMessage) (string, error) {
		return now().UTC().Format(time.RFC3339), nil
	})
}

// Calculator returns the "calculator" tool: evaluates an arithmetic
// expression of numbers, + - * / %, unary minus and parentheses, given as
// {"expression": "6*7"}.
func Calculator() loop.Tool {
	return loop.ToolFunc(events.ToolSpec{
		Name:        "calculator",
		Description: "Evaluates an arithmetic expression: numbers, + - * / %, parentheses.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"expression":{"type":"string"}},"required":["expression"]}`),
	}, func(_ context.Context, raw json.RawMessage) (string, error) {
		var args struct {
			Expression string `json:"expression"`
		}
		if err := json.Unmarshal(raw, &args); err != nil {
			return "", fmt.Errorf("%w: calculator wants {\"expression\": \"...\"}: %v", ErrArguments, err)
		}
		v, err := Evaluate(args.Expression)
		if err != nil {
			return "", err
		}
		return strconv.FormatFloat(v, 'g', -1, 64), nil
	})
}

// ReadFile returns the "read_file" tool: reads a file under root, given as
// {"path": "notes.txt"}. A path that leaves root (absolute, "..", or a
// symlink pointing out) is an error wrapping ErrPathEscape; a FIFO, device
// or socket one wrapping ErrNotRegular. Files are read up to 1 MiB.
func ReadFile(root string) loop.Tool {
	const limit = 1 << 20
	return loop.ToolFunc(events.ToolSpec{
		Name:        "read_file",
		Description: "Reads a text file under the agent's root directory.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`),
	}, func(_ context.Context, raw json.RawMessage) (string, error) {
		var args struct {
			Path string `json:"path"`
		}
		if err := json.Unmarshal(raw, &args); err != nil || args.Path == "" {
			return "", fmt.Errorf("%w: read_file wants {\"path\": \"...\"}", ErrArguments)
		}
		if filepath.IsAbs(args.Path) || !filepath.IsLocal(args.Path) {
			return "", fmt.Errorf("%w: %q", ErrPathEscape, args.Path)
		}
		r, err := os.OpenRoot(root)
		if err != nil {
			return "", fmt.Errorf("read_file: open root %q: %w", root, err)
		}
		defer r.Close()
		f, fi, err := openPlain(r, args.Path, os.O_RDONLY, 0)
		if err != nil {
			var pe *fs.PathError
			if m, ok := isNotPlain(err); ok {
				return "", fmt.Errorf("read_file: %w", notRegular(args.Path, m))
			}
			if n, ok := isLinked(err); ok {
				return "", fmt.Errorf("read_file: %w: %s has %d hard links", ErrHardLink, args.Path, n)
			}
			if errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "escapes") {
				return "", fmt.Errorf("%w: %q", ErrPathEscape, args.Path)
			}
			return "", fmt.Errorf("read_file: %w", err)
		}
		defer f.Close()
		if fi.IsDir() {
			return "", fmt.Errorf("%w: read_file: %q is a directory", ErrArguments, args.Path)
		}
		b, err := io.ReadAll(io.LimitReader(f, limit+1))
		if err != nil {
			return "", fmt.Errorf("read_file: %w", err)
		}
		if len(b) > limit {
			return "", fmt.Errorf("%w: %q is larger than %d bytes", ErrArguments, args.Path, limit)
		}
		return string(b), nil
	})
}
