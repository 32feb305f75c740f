package tools

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
)

// Limits of Read, as Claude Code's: 2000 lines unless limit says otherwise,
// lines cut at 2000 characters; and a result cut at a line boundary once it
// passes readMaxOutput characters (about Claude Code's 25000 tokens).
const (
	readDefaultLimit = 2000
	readMaxLine      = 2000
	readMaxOutput    = 100000
	binarySniff      = 8000 // bytes looked at for a NUL, as git and ripgrep do
)

const readSchema = `{"type":"object","properties":{` +
	`"file_path":{"type":"string","description":"The file to read: an absolute path inside the working directory, or a path relative to it."},` +
	`"offset":{"type":"integer","minimum":0,"description":"The line number to start reading from (1 is the first line). Give it only for a file too large to read at once."},` +
	`"limit":{"type":"integer","minimum":1,"description":"How many lines to read (default 2000). Give it only for a file too large to read at once."}` +
	`},"required":["file_path"],"additionalProperties":false}`

// Read returns the "Read" tool: {"file_path", "offset", "limit"}. It shows a
// text file as `cat -n` does (the line number right-aligned in six columns,
// a tab, the line), from line offset (1-based), at most limit lines (default
// 2000); lines longer than 2000 characters are cut, saying so. A binary file
// or a directory is an error wrapping ErrArguments, a FIFO, device or
// socket one wrapping ErrNotRegular, a missing file one matching
// fs.ErrNotExist, a path outside the root one wrapping ErrPathEscape. Read
// is idempotent.
func (f *FS) Read() loop.Tool {
	return loop.ToolFunc(events.ToolSpec{
		Name: "Read",
		Description: "Reads a text file from the working directory and returns it with line numbers (cat -n format). " +
			"Reads up to 2000 lines from the start unless offset and limit are given; lines longer than 2000 characters are cut.",
		Parameters: json.RawMessage(readSchema),
		Idempotent: true,
	}, f.read)
}

func (f *FS) read(_ context.Context, raw json.RawMessage) (string, error) {
	var a struct {
		FilePath *string `json:"file_path"`
		Offset   *int    `json:"offset"`
		Limit    *int    `json:"limit"`
	}
	if err := decodeArgs("Read", raw, &a); err != nil {
		return "", err
	}
	if a.FilePath == nil || *a.FilePath == "" {
		return "", missing("Read", "file_path")
	}
	if err := nonNegative("Read", intField{"offset", a.Offset}, intField{"limit", a.Limit}); err != nil {
		return "", err
	}
	if a.Limit != nil && *a.Limit == 0 {
		return "", fmt.Errorf("%w: Read: \"limit\" must be at least 1", ErrArguments)
	}
	start, limit := 1, readDefaultLimit
	if a.Offset != nil && *a.Offset > 1 {
		start = *a.Offset
	}
	if a.Limit != nil {
		limit = *a.Limit
	}
	p := *a.FilePath
	name, err := f.rel(p)
	if err != nil {
		return "", err
	}
	r, err := f.open()
	if err != nil {
		return "", err
	}
	defer r.Close()
	file, fi, err := openPlain(r, name, os.O_RDONLY, 0)
	if err != nil {
		return "", f.wrap(p, err)
	}
	defer file.Close()
	if fi.IsDir() {
		return "", fmt.Errorf("%w: Read: %s is a directory; list it with Glob", ErrArguments, p)
	}
	br := bufio.NewReaderSize(file, 64<<10)
	if head, _ := br.Peek(binarySniff); bytes.IndexByte(head, 0) >= 0 {
		return "", fmt.Errorf("%w: Read: %s is a binary file; Read shows text files only", ErrArguments, p)
	}
	return formatLines(br, p, start, limit)
}

// formatLines writes lines start..start+limit-1 of r in cat -n format and
// counts the rest, for the closing note.
func formatLines(r *bufio.Reader, p string, start, limit int) (string, error) {
	var out strings.Builder
	total, last, cutAt := 0, 0, 0
	for {
		line, runes, err := readLine(r, readMaxLine)
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", fmt.Errorf("%s: %w", p, err)
		}
		total++
		if total < start || total >= start+limit || cutAt != 0 {
			continue
		}
		text := string(line)
		if runes > readMaxLine {
			text = cutRunes(text, readMaxLine) + fmt.Sprintf(" [... line cut: %d more characters]", runes-readMaxLine)
		}
		entry := fmt.Sprintf("%6d\t%s\n", total, text)
		if out.Len()+len(entry) > readMaxOutput && out.Len() > 0 {
			cutAt = total
			continue
		}
		out.WriteString(entry)
		last = total
	}
	switch {
	case total == 0:
		return "(the file is empty)", nil
	case start > total:
		return fmt.Sprintf("(the file has %d lines: offset %d is past its end)", total, start), nil
	}
	res := strings.TrimSuffix(out.String(), "\n")
	switch {
	case cutAt != 0:
		res += fmt.Sprintf("\n\n(output cut at %d characters: lines %d-%d of %d shown; read on with offset %d)", readMaxOutput, start, last, total, cutAt)
	case last < total:
		res += fmt.Sprintf("\n\n(lines %d-%d of %d shown; read on with offset %d)", start, last, total, last+1)
	}
	return res, nil
}

// readLine reads one line without its "\n", keeping at most keep characters
// of it (and a few bytes more) in memory, and returns how many characters
// (runes) the whole line has. It returns io.EOF only when no line is left.
func readLine(r *bufio.Reader, keep int) ([]byte, int, error) {
	var line []byte
	runes := 0
	for {
		chunk, err := r.ReadSlice('\n')
		if len(chunk) > 0 {
			body := bytes.TrimSuffix(chunk, []byte{'\n'})
			runes += utf8.RuneCount(body)
			if len(line) < keep*utf8.UTFMax {
				line = append(line, body...)
			}
		}
		switch {
		case err == nil:
			return line, runes, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF && len(chunk) == 0 && line == nil:
			return nil, 0, io.EOF
		case err == io.EOF:
			return line, runes, nil
		default:
			return nil, 0, err
		}
	}
}

// cutRunes returns the first n characters of s.
func cutRunes(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}
