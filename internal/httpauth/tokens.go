package httpauth

import (
	"bufio"
	"cmp"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"unicode"

	"github.com/hookbus/hookbus/events"
)

// MinTokenLen is the shortest token accepted (make one with
// `openssl rand -hex 32`).
const MinTokenLen = 32

// MinSecretLen is the shortest proxy secret accepted (ReadSecretFile).
const MinSecretLen = 32

// Token is what a token file says of one token: who holds it and which
// agents' sessions it may write.
type Token struct {
	// Name names the holder (recorded as the identity); default
	// token-<first 8 hex digits of the token's SHA-256>.
	Name string
	// Agents bound the agents the holder may write for (loop gateway);
	// empty: any.
	Agents []string
}

// Tokens is a set of bearer tokens. Only their SHA-256 is kept; Lookup
// compares in constant time. The zero value holds none.
type Tokens struct {
	entries []tokenEntry
}

type tokenEntry struct {
	sum [sha256.Size]byte
	tok Token
}

// LoadTokens reads a token file (see ParseTokens). It refuses
// (ErrInvalidConfig) a file every user of the machine may read or write:
// keep it 0600 (0640 for a group the server's user is in).
func LoadTokens(path string) (*Tokens, error) {
	f, err := openPrivate(path, "token file")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := ParseTokens(f, path)
	if err != nil {
		return nil, err
	}
	if t.Len() == 0 {
		return nil, fmt.Errorf("%w: token file %s holds no token", ErrInvalidConfig, path)
	}
	return t, nil
}

// ParseTokens reads a token file: one token a line, then optionally the
// holder's name and the agents it is bound to, separated by spaces:
//
//	# token                                                          name   agents
//	3f1c0e7a9b2d4c6e8f0a1b3c5d7e9f1a3c5e7f9b1d3f5a7c9e1b3d5f7a9c1e3  alice  agents=claude-alice,claude-ci
//	9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d                                 ci-bot
//
// Blank lines and lines starting with # are skipped. A token is at least
// MinTokenLen characters; a token given twice, a second name or a bad
// agent id is an error naming the line (never the token). name labels
// the errors (the file's path).
func ParseTokens(r io.Reader, name string) (*Tokens, error) {
	t := &Tokens{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		var tok Token
		for _, f := range fields[1:] {
			if agents, ok := strings.CutPrefix(f, "agents="); ok {
				if tok.Agents != nil {
					return nil, fmt.Errorf("%w: %s, line %d: agents= given twice", ErrInvalidConfig, name, n)
				}
				tok.Agents = []string{}
				for a := range strings.SplitSeq(agents, ",") {
					if err := events.ValidateID("agent", a); err != nil {
						return nil, fmt.Errorf("%w: %s, line %d: agents=: %v", ErrInvalidConfig, name, n, err)
					}
					tok.Agents = append(tok.Agents, a)
				}
				continue
			}
			if tok.Name != "" {
				return nil, fmt.Errorf("%w: %s, line %d: a token has one name (%s, then %s); bind agents with agents=ID,ID", ErrInvalidConfig, name, n, tok.Name, f)
			}
			tok.Name = f
		}
		if err := t.add(fields[0], tok); err != nil {
			return nil, fmt.Errorf("%w: %s, line %d: %v", ErrInvalidConfig, name, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalidConfig, name, err)
	}
	return t, nil
}

// Add adds a token. It refuses (ErrInvalidConfig) a token shorter than
// MinTokenLen or holding a control character, one already held, and a
// name that is not printable.
func (t *Tokens) Add(secret string, tok Token) error {
	if err := t.add(secret, tok); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	return nil
}

func (t *Tokens) add(secret string, tok Token) error {
	if len(secret) < MinTokenLen {
		return fmt.Errorf("a token of %d characters is too short (at least %d: make one with openssl rand -hex 32)", len(secret), MinTokenLen)
	}
	if strings.IndexFunc(secret, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) }) >= 0 {
		return errors.New("a token holds a space or control character")
	}
	if err := checkName(tok.Name); err != nil {
		return err
	}
	sum := sha256.Sum256([]byte(secret))
	tok.Name = cmp.Or(tok.Name, "token-"+hex.EncodeToString(sum[:4]))
	for _, e := range t.entries {
		if e.sum == sum {
			return fmt.Errorf("the token of %s is given twice", tok.Name)
		}
	}
	t.entries = append(t.entries, tokenEntry{sum: sum, tok: tok})
	return nil
}

// Lookup returns the token secret is, comparing its SHA-256 with every
// token's in constant time.
func (t *Tokens) Lookup(secret string) (Token, bool) {
	if t == nil {
		return Token{}, false
	}
	sum := sha256.Sum256([]byte(secret))
	found := -1
	for i := range t.entries {
		if subtle.ConstantTimeCompare(sum[:], t.entries[i].sum[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return Token{}, false
	}
	return t.entries[found].tok, true
}

// Len is how many tokens t holds (0 for nil).
func (t *Tokens) Len() int {
	if t == nil {
		return 0
	}
	return len(t.entries)
}

// checkName refuses a name that could not be recorded as given.
func checkName(name string) error {
	if len(name) > 256 {
		return fmt.Errorf("a name of %d bytes (at most 256)", len(name))
	}
	if strings.IndexFunc(name, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		return fmt.Errorf("name %q holds a character that is not printable", name)
	}
	return nil
}

// openPrivate opens a file of secrets, refusing one that every user may
// read or write (what names it in errors).
func openPrivate(path, what string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalidConfig, what, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalidConfig, what, err)
	}
	if m := fi.Mode(); m&0o006 != 0 && m&fs.ModeType == 0 {
		f.Close()
		return nil, fmt.Errorf("%w: %s %s may be read or written by every user of this machine (mode %04o): chmod 600 %s", ErrInvalidConfig, what, path, m.Perm(), path)
	}
	return f, nil
}

// ReadSecretFile reads a shared secret (a trusted proxy's,
// Config.ProxySecret): the file's first line, trimmed. It refuses
// (ErrInvalidConfig) a file every user may read or write, and a secret
// shorter than MinSecretLen bytes (make one with `openssl rand -hex 32`).
func ReadSecretFile(path string) ([]byte, error) {
	f, err := openPrivate(path, "secret file")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, 4<<10))
	if err != nil {
		return nil, fmt.Errorf("%w: secret file %s: %v", ErrInvalidConfig, path, err)
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	line = strings.TrimSpace(line)
	if len(line) < MinSecretLen {
		return nil, fmt.Errorf("%w: secret file %s holds a secret of %d bytes, at least %d are needed (make one with openssl rand -hex 32)", ErrInvalidConfig, path, len(line), MinSecretLen)
	}
	if strings.IndexFunc(line, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) }) >= 0 {
		return nil, fmt.Errorf("%w: secret file %s: the secret holds a space or control character (it goes in a header)", ErrInvalidConfig, path)
	}
	return []byte(line), nil
}
