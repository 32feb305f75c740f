package redact

import (
	"io"
	"net/url"
	"strings"
	"sync"
)

// Mask is what a secret is replaced with (nats.go's choice in
// Conn.ConnectedUrlRedacted).
const Mask = "xxxxx"

// URL returns s, a NATS server URL or a comma-separated list of them, with
// every password replaced by Mask, and a user name that stands alone (a
// token, to NATS) replaced too. Text that does not parse as a URL loses
// everything between "//" and the last "@" of each entry.
func URL(s string) string {
	if !strings.Contains(s, "@") {
		return s
	}
	parts := strings.Split(s, ",")
	for i, p := range parts {
		parts[i] = one(p)
	}
	return strings.Join(parts, ",")
}

func one(s string) string {
	if !strings.Contains(s, "@") {
		return s
	}
	u, err := url.Parse(strings.TrimSpace(s))
	if err == nil && u.User != nil && u.Host != "" {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), Mask)
		} else {
			u.User = url.User(Mask)
		}
		lead := s[:len(s)-len(strings.TrimLeft(s, " "))]
		return lead + u.String()
	}
	// Not a URL (a typo, a bad escape): mask the would-be user info.
	at := strings.LastIndex(s, "@")
	start := strings.Index(s, "//") + 2 // 1 when there is no "//"
	if start == 1 {
		start = 0
	}
	if start > at {
		start = 0
	}
	return s[:start] + Mask + s[at:]
}

// UserInfo returns the secrets held in the user info of a NATS URL (or a
// comma-separated list): each password, and each user name that stands
// alone (a token). User names with a password are not secrets.
func UserInfo(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		at := strings.LastIndex(p, "@")
		if at < 0 {
			continue
		}
		u, err := url.Parse(p)
		if err == nil && u.User != nil {
			if pw, ok := u.User.Password(); ok {
				out = append(out, pw)
			} else {
				out = append(out, u.User.Username())
			}
			continue
		}
		// Unparsable: take the raw text between "//" and "@", and its
		// part after the first ':'.
		raw := p[:at]
		if i := strings.Index(raw, "//"); i >= 0 {
			raw = raw[i+2:]
		}
		out = append(out, raw)
		if _, pw, ok := strings.Cut(raw, ":"); ok {
			out = append(out, pw)
		}
	}
	return out
}

// MinSecret is the shortest secret Writer replaces: shorter strings would
// mask ordinary words.
const MinSecret = 4

// Writer replaces secrets in what is written through it, in each Write
// (a message or a log line is one Write). It is safe for concurrent use
// when the underlying writer is.
type Writer struct {
	w       io.Writer
	mu      sync.Mutex
	replace *strings.Replacer
}

// NewWriter returns a Writer over w that replaces each of secrets (those of
// at least MinSecret bytes) by Mask. With no such secret it writes through.
func NewWriter(w io.Writer, secrets ...string) *Writer {
	var pairs []string
	seen := map[string]bool{}
	for _, s := range secrets {
		if len(s) < MinSecret || seen[s] {
			continue
		}
		seen[s] = true
		pairs = append(pairs, s, Mask)
		// The same secret as a URL prints it (percent-encoded as a
		// password, as a user name, as a query value).
		for _, e := range []string{strings.TrimPrefix(url.UserPassword("", s).String(), ":"), url.User(s).String(), url.QueryEscape(s)} {
			if e != s && !seen[e] {
				seen[e] = true
				pairs = append(pairs, e, Mask)
			}
		}
	}
	out := &Writer{w: w}
	if len(pairs) > 0 {
		out.replace = strings.NewReplacer(pairs...)
	}
	return out
}

// Write writes p with the secrets replaced. It reports len(p) written when
// the replaced text was written whole.
func (w *Writer) Write(p []byte) (int, error) {
	if w.replace == nil {
		return w.w.Write(p)
	}
	s := w.replace.Replace(string(p))
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := io.WriteString(w.w, s); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Secrets returns the secrets a command line and its environment carry:
// the user info of --nats and $NATS_URL, --password and --token (and
// $NATS_PASSWORD, $NATS_TOKEN), and the gateway's bearer token
// ($HOOKBUS_GATEWAY_TOKEN). Flags are read in every form the flag
// package accepts (-x v, --x v, -x=v, --x=v).
func Secrets(args []string, getenv func(string) string) []string {
	var out []string
	out = append(out, UserInfo(getenv("NATS_URL"))...)
	for _, env := range []string{"NATS_PASSWORD", "NATS_TOKEN", "HOOKBUS_GATEWAY_TOKEN"} {
		if v := getenv(env); v != "" {
			out = append(out, v)
		}
	}
	for i := 0; i < len(args); i++ {
		name, value, hasValue := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		if !strings.HasPrefix(args[i], "-") {
			continue
		}
		switch name {
		case "nats", "password", "token":
		default:
			continue
		}
		if !hasValue {
			if i+1 >= len(args) {
				continue
			}
			i++
			value = args[i]
		}
		if name == "nats" {
			out = append(out, UserInfo(value)...)
		} else {
			out = append(out, value)
		}
	}
	return out
}

// Error returns err with secrets masked in its text; errors.Is and As see
// err. A nil err stays nil.
func Error(err error, secrets ...string) error {
	if err == nil {
		return nil
	}
	return &maskedError{err: err, secrets: secrets}
}

type maskedError struct {
	err     error
	secrets []string
}

func (e *maskedError) Error() string {
	var b strings.Builder
	_, _ = NewWriter(&b, e.secrets...).Write([]byte(e.err.Error()))
	return b.String()
}

func (e *maskedError) Unwrap() error { return e.err }
