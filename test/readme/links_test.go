package readme

import (
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

var (
	// inlineLink is a Markdown link or image: [text](target) or
	// [text](target "title"); group 1 is the target.
	inlineLink = regexp.MustCompile(`\]\(<?([^)\s>]*)>?(?:\s+"[^"]*")?\)`)
	// refLink is a link reference definition: [label]: target.
	refLink = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)`)
	// atxHeading is a heading line: its text is group 1.
	atxHeading = regexp.MustCompile(`^\s{0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$`)
	// linkText keeps the text of a link or image in a heading.
	linkText = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
)

// mdLine is one line of a Markdown file outside its fenced code blocks.
type mdLine struct {
	n    int // 1-based
	text string
}

// prose returns the lines of doc outside fenced code blocks.
func prose(doc string) []mdLine {
	var out []mdLine
	fence := ""
	for i, l := range strings.Split(doc, "\n") {
		t := strings.TrimSpace(l)
		if fence != "" {
			if strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]) == "" {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fence = t[:3]
			for _, c := range t[3:] {
				if c != rune(fence[0]) {
					break
				}
				fence += string(c)
			}
			continue
		}
		out = append(out, mdLine{i + 1, l})
	}
	return out
}

// slug is the anchor GitHub gives a heading's text: lower case, with
// every character but letters, marks, digits, '_', '-' and spaces removed,
// then each space a '-'.
func slug(heading string) string {
	heading = linkText.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsMark(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors returns the anchors of doc's headings, a repeated one suffixed
// -1, -2... as GitHub does.
func anchors(doc string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, l := range prose(doc) {
		m := atxHeading.FindStringSubmatch(l.text)
		if m == nil {
			continue
		}
		a := slug(m[1])
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// withoutCode returns line without its inline code spans: a run of
// backticks up to the next run of the same length.
func withoutCode(line string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(line, '`')
		if i < 0 {
			return b.String() + line
		}
		b.WriteString(line[:i])
		n := len(line[i:]) - len(strings.TrimLeft(line[i:], "`"))
		open, rest := line[i:i+n], line[i+n:]
		end := -1
		for j := 0; j < len(rest); {
			k := strings.Index(rest[j:], open)
			if k < 0 {
				break
			}
			k += j
			m := len(rest[k:]) - len(strings.TrimLeft(rest[k:], "`"))
			if m == n {
				end = k
				break
			}
			j = k + m
		}
		if end < 0 { // no closing run: the backticks are text
			b.WriteString(open)
			line = rest
			continue
		}
		line = rest[end+n:]
	}
}

// links returns the targets of the links and images of doc, by line,
// leaving out those in code.
func links(doc string) []mdLine {
	var out []mdLine
	for _, l := range prose(doc) {
		text := withoutCode(l.text)
		for _, m := range inlineLink.FindAllStringSubmatch(text, -1) {
			out = append(out, mdLine{l.n, m[1]})
		}
		if m := refLink.FindStringSubmatch(text); m != nil {
			out = append(out, mdLine{l.n, m[1]})
		}
	}
	return out
}

func TestSlug(t *testing.T) {
	for heading, want := range map[string]string{
		"Three terminals: a server, an interceptor, a run":               "three-terminals-a-server-an-interceptor-a-run",
		"Claude Code's hooks on hookbus agents":                          "claude-codes-hooks-on-hookbus-agents",
		"Events: CloudEvents 1.0, binary content mode over NATS headers": "events-cloudevents-10-binary-content-mode-over-nats-headers",
		"The web page (`observer ui`)":                                   "the-web-page-observer-ui",
		"deploy/nats — nats-server configurations for hookbus":           "deploynats--nats-server-configurations-for-hookbus",
		"Durability: `sync_interval`":                                    "durability-sync_interval",
		"See [PROTOCOL](PROTOCOL.md) here":                               "see-protocol-here",
	} {
		if got := slug(heading); got != want {
			t.Errorf("slug(%q) = %q, want %q", heading, got, want)
		}
	}
	a := anchors("# A\n\n## Same\n\n```sh\n# Same\n```\n\n## Same\n")
	if !a["a"] || !a["same"] || !a["same-1"] || a["same-2"] || len(a) != 3 {
		t.Errorf("anchors = %v, want a, same, same-1 (a # line in a code block is no heading)", a)
	}
}

// TestLinks checks every relative link of README.md and of the Markdown
// files under docs/: its file or directory exists, and its #anchor (in the
// same file, or in the Markdown file it names) is a heading's anchor there,
// by GitHub's rules. Links with a scheme (https:, mailto:) are not followed.
func TestLinks(t *testing.T) {
	root := repoRoot(t)
	texts := map[string]string{} // by slash path relative to root
	read := func(rel string) (string, error) {
		if s, ok := texts[rel]; ok {
			return s, nil
		}
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		texts[rel] = string(b)
		return string(b), err
	}
	checked := 0
	for _, file := range docFiles(t, root) {
		doc, err := read(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range links(doc) {
			target := l.text
			if target == "" {
				t.Errorf("%s:%d: a link with no target", file, l.n)
				continue
			}
			if u, err := url.Parse(target); err == nil && u.Scheme != "" {
				continue
			}
			checked++
			p, frag, _ := strings.Cut(target, "#")
			p, err := url.PathUnescape(p)
			if err != nil {
				t.Errorf("%s:%d: link %q: %v", file, l.n, target, err)
				continue
			}
			rel := file
			switch {
			case p == "":
			case strings.HasPrefix(p, "/"):
				rel = path.Clean(strings.TrimPrefix(p, "/"))
			default:
				rel = path.Clean(path.Join(path.Dir(file), p))
			}
			if rel == ".." || strings.HasPrefix(rel, "../") {
				t.Errorf("%s:%d: link %q leaves the repository", file, l.n, target)
				continue
			}
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel))); err != nil {
				t.Errorf("%s:%d: link %q: no file or directory %s", file, l.n, target, rel)
				continue
			}
			if frag == "" {
				continue
			}
			if !strings.HasSuffix(rel, ".md") {
				t.Errorf("%s:%d: link %q: an anchor in %s, which is not Markdown", file, l.n, target, rel)
				continue
			}
			text, err := read(rel)
			if err != nil {
				t.Errorf("%s:%d: link %q: %v", file, l.n, target, err)
				continue
			}
			if !anchors(text)[frag] {
				t.Errorf("%s:%d: link %q: %s has no heading with the anchor #%s", file, l.n, target, rel, frag)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative link found: the link scanner is broken")
	}
	t.Logf("%d relative links of README.md and docs/ checked", checked)
}
