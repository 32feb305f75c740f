package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
)

const writeSchema = `{"type":"object","properties":{` +
	`"file_path":{"type":"string","description":"The file to write: an absolute path inside the working directory, or a path relative to it."},` +
	`"content":{"type":"string","description":"The whole new content of the file."}` +
	`},"required":["file_path","content"],"additionalProperties":false}`

const editSchema = `{"type":"object","properties":{` +
	`"file_path":{"type":"string","description":"The file to change: an absolute path inside the working directory, or a path relative to it."},` +
	`"old_string":{"type":"string","description":"The exact text to replace; it must occur once in the file unless replace_all is true."},` +
	`"new_string":{"type":"string","description":"The text to put in its place; it must differ from old_string."},` +
	`"replace_all":{"type":"boolean","default":false,"description":"Replace every occurrence of old_string (default false)."}` +
	`},"required":["file_path","old_string","new_string"],"additionalProperties":false}`

// Write returns the "Write" tool: {"file_path", "content"}. It creates the
// file (and its missing parent directories) or replaces its whole content,
// atomically. A FIFO, device or socket is neither written to nor replaced:
// an error wrapping ErrNotRegular. Write is idempotent: writing the same
// content twice leaves what writing it once does.
func (f *FS) Write() loop.Tool {
	return loop.ToolFunc(events.ToolSpec{
		Name:        "Write",
		Description: "Writes a file in the working directory, creating it or replacing its whole content. Prefer Edit to change part of an existing file.",
		Parameters:  json.RawMessage(writeSchema),
		Idempotent:  true,
	}, f.write)
}

func (f *FS) write(_ context.Context, raw json.RawMessage) (string, error) {
	var a struct {
		FilePath *string `json:"file_path"`
		Content  *string `json:"content"`
	}
	if err := decodeArgs("Write", raw, &a); err != nil {
		return "", err
	}
	if a.FilePath == nil || *a.FilePath == "" {
		return "", missing("Write", "file_path")
	}
	if a.Content == nil {
		return "", missing("Write", "content")
	}
	p := *a.FilePath
	name, err := f.rel(p)
	if err != nil {
		return "", err
	}
	if name == "." {
		return "", fmt.Errorf("%w: Write: %s is the working directory itself", ErrArguments, p)
	}
	r, err := f.open()
	if err != nil {
		return "", err
	}
	defer r.Close()
	_, statErr := r.Stat(name)
	if statErr != nil && !errors.Is(statErr, fs.ErrNotExist) {
		return "", f.wrap(p, statErr)
	}
	if err := writeFile(r, name, []byte(*a.Content)); err != nil {
		return "", f.wrap(p, err)
	}
	if statErr != nil {
		return fmt.Sprintf("File created successfully at: %s", p), nil
	}
	return fmt.Sprintf("The file %s has been updated.", p), nil
}

// Edit returns the "Edit" tool: {"file_path", "old_string", "new_string",
// "replace_all"}. It replaces the one occurrence of old_string in the file
// with new_string, or every occurrence when replace_all is true, and writes
// the file atomically. old_string absent is an error wrapping ErrNoMatch;
// more than one occurrence without replace_all, ErrNotUnique; old_string
// equal to new_string, ErrArguments; a FIFO, device or socket,
// ErrNotRegular. An empty old_string creates a file that
// does not exist (or fills an empty one) with new_string, as Claude Code's
// Edit does. Edit is not idempotent.
func (f *FS) Edit() loop.Tool {
	return loop.ToolFunc(events.ToolSpec{
		Name: "Edit",
		Description: "Replaces exact text in a file of the working directory: old_string must occur exactly once " +
			"(give more surrounding context to make it unique) unless replace_all is true.",
		Parameters: json.RawMessage(editSchema),
	}, f.edit)
}

func (f *FS) edit(_ context.Context, raw json.RawMessage) (string, error) {
	var a struct {
		FilePath   *string `json:"file_path"`
		OldString  *string `json:"old_string"`
		NewString  *string `json:"new_string"`
		ReplaceAll bool    `json:"replace_all"`
	}
	if err := decodeArgs("Edit", raw, &a); err != nil {
		return "", err
	}
	switch {
	case a.FilePath == nil || *a.FilePath == "":
		return "", missing("Edit", "file_path")
	case a.OldString == nil:
		return "", missing("Edit", "old_string")
	case a.NewString == nil:
		return "", missing("Edit", "new_string")
	case *a.OldString == *a.NewString:
		return "", fmt.Errorf("%w: Edit: no changes to make: old_string and new_string are the same", ErrArguments)
	}
	p, old, repl := *a.FilePath, *a.OldString, *a.NewString
	name, err := f.rel(p)
	if err != nil {
		return "", err
	}
	r, err := f.open()
	if err != nil {
		return "", err
	}
	defer r.Close()
	data, err := readPlain(r, name)
	switch {
	case old == "" && errors.Is(err, fs.ErrNotExist) && !f.isEscape(err):
		if err := writeFile(r, name, []byte(repl)); err != nil {
			return "", f.wrap(p, err)
		}
		return fmt.Sprintf("File created successfully at: %s", p), nil
	case err != nil:
		return "", f.wrap(p, err)
	case old == "" && len(data) > 0:
		return "", fmt.Errorf("%w: Edit: old_string is empty but %s already has content; give the text to replace", ErrArguments, p)
	}
	content := string(data)
	n := strings.Count(content, old)
	switch {
	case old == "":
		content, n = repl, 1
	case n == 0:
		return "", fmt.Errorf("%w in %s: %q", ErrNoMatch, p, clip(old, 200))
	case n > 1 && !a.ReplaceAll:
		return "", fmt.Errorf("%w in %s: it occurs %d times; set replace_all to true to replace them all, or give more context to pick one: %q",
			ErrNotUnique, p, n, clip(old, 200))
	case a.ReplaceAll:
		content = strings.ReplaceAll(content, old, repl)
	default:
		content = strings.Replace(content, old, repl, 1)
	}
	if err := writeFile(r, name, []byte(content)); err != nil {
		return "", f.wrap(p, err)
	}
	if n == 1 {
		return fmt.Sprintf("The file %s has been updated: 1 occurrence replaced.", p), nil
	}
	return fmt.Sprintf("The file %s has been updated: all %d occurrences replaced.", p, n), nil
}

// clip shortens s to n characters for an error message, saying so.
func clip(s string, n int) string {
	if c := cutRunes(s, n); len(c) < len(s) {
		return c + "..."
	}
	return s
}

// readPlain reads the regular file name (relative to r) whole; a FIFO,
// device or socket is openPlain's error, a directory an error saying so.
func readPlain(r *os.Root, name string) ([]byte, error) {
	file, fi, err := openPlain(r, name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	if fi.IsDir() {
		return nil, &fs.PathError{Op: "read", Path: name, Err: errors.New("is a directory")}
	}
	return io.ReadAll(file)
}
