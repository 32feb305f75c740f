package command

import "strings"

// shellWords splits a shell command line into the words sh would see after
// quote removal and the expansion of $NAME and ${NAME} from vars (unset:
// empty, or the default of ${NAME:-default}). Operators (; & | ( ) and
// newlines) end words; a comment is skipped. The word after a redirection
// that writes (>, >>, >|, &>, 2>...) is left out, as is the descriptor
// number before it. What cannot be known without running the command (a
// command substitution, $1, $$) leaves out the word it is in; globs and ~
// stay as written. A word is marked run when it is what runs: the program
// of a simple command (after its assignments), or the script an
// interpreter it names reads (sh, bash, python3, node, source, ... and
// their first argument that is not an option).
func shellWords(s string, vars map[string]string) []word {
	l := lexer{s: s, vars: vars, first: true}
	l.run()
	return l.words
}

// word is a word of a command line, and whether it is what runs: a
// program (found in PATH unless it has a slash) or an interpreter's script
// (a path, relative to the working directory).
type word struct {
	text   string
	run    bool
	script bool
}

// interpreters are programs whose first argument that is not an option is
// the script they run.
var interpreters = map[string]bool{
	"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "fish": true,
	"python": true, "python3": true, "node": true, "deno": true, "bun": true,
	"perl": true, "ruby": true, "php": true, "lua": true, "Rscript": true,
	"source": true, ".": true, "exec": true, "env": true, "nohup": true, "command": true,
}

type lexer struct {
	s        string
	i        int
	vars     map[string]string
	words    []word
	first    bool // the next word starts a simple command
	interp   bool // the next argument that is not an option is run
	cur      strings.Builder
	inWord   bool
	unknown  bool // the current word holds something unknowable
	redirect bool // the next word is a redirection's target
}

func (l *lexer) end() {
	if l.inWord {
		w := l.cur.String()
		switch {
		case l.redirect:
		case l.first && isAssignment(w):
			// NAME=value before the program: the program is still to come
		case l.unknown:
			l.first, l.interp = false, false
		case l.first || l.interp && !strings.HasPrefix(w, "-") && !isAssignment(w):
			l.words = append(l.words, word{text: w, run: true, script: !l.first})
			l.interp = interpreters[w[strings.LastIndexByte(w, '/')+1:]]
			l.first = false
		default:
			l.words = append(l.words, word{text: w})
		}
		l.redirect = false
	}
	l.cur.Reset()
	l.inWord, l.unknown = false, false
}

func (l *lexer) run() {
	for l.i < len(l.s) {
		c := l.s[l.i]
		switch {
		case c == ' ' || c == '\t':
			l.end()
			l.i++
		case c == '\n' || c == ';' || c == '|' || c == '(' || c == ')' || c == '&':
			l.end()
			l.redirect, l.first, l.interp = false, true, false
			l.i++
		case c == '#' && !l.inWord:
			for l.i < len(l.s) && l.s[l.i] != '\n' {
				l.i++
			}
		case c == '>':
			if l.inWord && isDigits(l.cur.String()) {
				l.cur.Reset()
				l.inWord = false // a descriptor number: 2>file
			} else {
				l.end()
			}
			l.i++
			for l.i < len(l.s) && (l.s[l.i] == '>' || l.s[l.i] == '|' || l.s[l.i] == '&') {
				l.i++
			}
			l.redirect = true
		case c == '<':
			l.end()
			l.i++
			for l.i < len(l.s) && (l.s[l.i] == '<' || l.s[l.i] == '&') {
				l.i++
			}
		case c == '\\':
			l.i++
			if l.i < len(l.s) {
				if l.s[l.i] != '\n' {
					l.add(l.s[l.i])
				}
				l.i++
			}
		case c == '\'':
			l.inWord = true
			l.i++
			for l.i < len(l.s) && l.s[l.i] != '\'' {
				l.add(l.s[l.i])
				l.i++
			}
			l.i++
		case c == '"':
			l.inWord = true
			l.i++
			l.double()
		case c == '$':
			l.dollar(false)
		case c == '`':
			l.substitution('`')
		default:
			l.add(c)
			l.i++
		}
	}
	l.end()
}

func (l *lexer) add(c byte) {
	l.cur.WriteByte(c)
	l.inWord = true
}

// double reads a double-quoted string's content, after its opening quote.
func (l *lexer) double() {
	for l.i < len(l.s) {
		c := l.s[l.i]
		switch {
		case c == '"':
			l.i++
			return
		case c == '\\' && l.i+1 < len(l.s) && strings.IndexByte("$`\"\\\n", l.s[l.i+1]) >= 0:
			if l.s[l.i+1] != '\n' {
				l.add(l.s[l.i+1])
			}
			l.i += 2
		case c == '$':
			l.dollar(true)
		case c == '`':
			l.substitution('`')
		default:
			l.add(c)
			l.i++
		}
	}
}

// dollar expands what starts at a $.
func (l *lexer) dollar(quoted bool) {
	l.inWord = true
	l.i++
	if l.i >= len(l.s) {
		l.add('$')
		return
	}
	c := l.s[l.i]
	switch {
	case c == '(':
		l.substitution(')')
	case c == '{':
		end := strings.IndexByte(l.s[l.i:], '}')
		if end < 0 {
			l.unknown = true
			l.i = len(l.s)
			return
		}
		expr := l.s[l.i+1 : l.i+end]
		l.i += end + 1
		name, rest := expr, ""
		if k := strings.IndexAny(expr, ":-=?+#%/"); k >= 0 {
			name, rest = expr[:k], expr[k:]
		}
		if !isName(name) {
			l.unknown = true
			return
		}
		v, set := l.vars[name]
		switch {
		case rest == "":
			l.cur.WriteString(v)
		case strings.HasPrefix(rest, ":-") && v == "":
			l.cur.WriteString(rest[2:])
		case strings.HasPrefix(rest, "-") && !set:
			l.cur.WriteString(rest[1:])
		case strings.HasPrefix(rest, ":-") || strings.HasPrefix(rest, "-"):
			l.cur.WriteString(v)
		default:
			l.unknown = true
		}
	case c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z':
		j := l.i
		for j < len(l.s) && isNameByte(l.s[j]) {
			j++
		}
		l.cur.WriteString(l.vars[l.s[l.i:j]])
		l.i = j
	case strings.IndexByte("0123456789?$!#*@-", c) >= 0:
		l.unknown = true
		l.i++
	default:
		if quoted || c != '\'' {
			l.add('$')
		}
	}
}

// substitution skips a command substitution, up to its closing character
// (nested parentheses counted), and marks the word unknowable.
func (l *lexer) substitution(close byte) {
	l.inWord, l.unknown = true, true
	l.i++
	depth := 1
	for l.i < len(l.s) && depth > 0 {
		switch c := l.s[l.i]; {
		case c == '\\':
			l.i++
		case close == ')' && c == '(':
			depth++
		case c == close:
			depth--
		}
		l.i++
	}
}

// isAssignment reports whether w is NAME=value.
func isAssignment(w string) bool {
	k := strings.IndexByte(w, '=')
	return k > 0 && isName(w[:k])
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func isName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isNameByte(s[i]) {
			return false
		}
	}
	return true
}

func isNameByte(c byte) bool {
	return c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
}
