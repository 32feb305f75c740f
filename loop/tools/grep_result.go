package tools

import (
	"fmt"
	"strings"
)

// grepResult gathers a search's findings for format.
type grepResult struct {
	files    []walked // files with a match, in search order
	counts   []int    // matching lines of files[i]
	lines    []string // content mode: output lines, "--" between groups
	total    int      // matching lines in all
	tooLarge []string
	binary   bool // the one file searched is binary
}

// format renders the result in the output mode, applying offset and
// head_limit to its lines or entries.
func (res *grepResult) format(mode string, headLimit, offset *int) string {
	var entries []string
	switch mode {
	case "files_with_matches":
		sorted := append([]walked(nil), res.files...)
		newestFirst(sorted)
		for _, w := range sorted {
			entries = append(entries, w.path)
		}
	case "count":
		for i, w := range res.files {
			entries = append(entries, fmt.Sprintf("%s:%d", w.path, res.counts[i]))
		}
	default:
		entries = res.lines
	}
	shown, page := paginate(entries, headLimit, offset)
	var b strings.Builder
	switch {
	case len(entries) == 0 && mode == "files_with_matches":
		b.WriteString("No files found")
	case len(entries) == 0:
		b.WriteString("No matches found")
	case mode == "files_with_matches":
		fmt.Fprintf(&b, "Found %d %s\n%s", len(entries), plural(len(entries), "file", "files"), strings.Join(shown, "\n"))
	case mode == "count":
		fmt.Fprintf(&b, "%s\n\nFound %d total %s across %d %s.", strings.Join(shown, "\n"),
			res.total, plural(res.total, "occurrence", "occurrences"), len(res.files), plural(len(res.files), "file", "files"))
	default:
		b.WriteString(strings.Join(shown, "\n"))
	}
	b.WriteString(page)
	if res.binary {
		b.WriteString("\n(the file is binary and was not searched)")
	}
	if len(res.tooLarge) > 0 {
		fmt.Fprintf(&b, "\n(%d files larger than %d MiB were not searched: %s)", len(res.tooLarge), grepMaxFile>>20, strings.Join(res.tooLarge, ", "))
	}
	return capText(b.String(), grepMaxOutput)
}

// paginate applies offset and head_limit (default 250, 0 for none) to
// entries, and returns Claude Code's pagination note when it left some out.
func paginate(entries []string, headLimit, offset *int) ([]string, string) {
	limit, skip := grepDefaultHeadLimit, 0
	if headLimit != nil {
		limit = *headLimit
	}
	if offset != nil {
		skip = *offset
	}
	shown := entries[min(skip, len(entries)):]
	if limit > 0 && len(shown) > limit {
		shown = shown[:limit]
	}
	if len(shown) == len(entries) {
		return shown, ""
	}
	return shown, fmt.Sprintf("\n\n[Showing results with pagination = limit: %d, offset: %d; %d entries in all]", limit, skip, len(entries))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
