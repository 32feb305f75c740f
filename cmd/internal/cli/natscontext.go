package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strings"

	"github.com/nats-io/nats.go"
)

// NATSContextEnv names the variable that names a NATS context when
// --context is not given, as for the nats CLI.
const NATSContextEnv = "NATS_CONTEXT"

// NATSContext is a connection context of the nats CLI, read from the
// CLI's own file: $XDG_CONFIG_HOME/nats/context/NAME.json, by default
// ~/.config/nats/context/NAME.json (nats context add writes it). hookbus
// reads the server URLs, the credentials (user and password, token,
// creds, nkey), the TLS files (ca, and the client certificate cert and
// key), tls_first and inbox_prefix. A setting hookbus cannot honour
// (nsc lookups, JetStream domains and prefixes, a SOCKS proxy, the
// Windows certificate store, user_jwt) is refused, naming it, rather than
// ignored.
type NATSContext struct {
	// Name is the context's name (or the path of its file).
	Name string
	// Path is the file it was read from.
	Path string

	Description string `json:"description"`
	URL         string `json:"url"`
	User        string `json:"user"`
	Password    string `json:"password"`
	Token       string `json:"token"`
	Creds       string `json:"creds"`
	NKey        string `json:"nkey"`
	Cert        string `json:"cert"`
	Key         string `json:"key"`
	CA          string `json:"ca"`
	TLSFirst    bool   `json:"tls_first"`
	InboxPrefix string `json:"inbox_prefix"`
}

// unsupportedContext are the nats CLI's context settings hookbus does not
// honour, by JSON name.
var unsupportedContext = []string{"nsc", "jetstream_domain", "jetstream_api_prefix", "jetstream_event_prefix",
	"socks_proxy", "user_jwt", "user_seed", "windows_cert_store", "windows_cert_match_by", "windows_cert_match", "windows_ca_certs_match"}

// NATSContextDir is where the nats CLI keeps its contexts.
func NATSContextDir(getenv func(string) string) (string, error) {
	if xdg := getenv("XDG_CONFIG_HOME"); xdg != "" {
		return filepath.Join(xdg, "nats", "context"), nil
	}
	home, err := homeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".config", "nats", "context"), nil
}

// LoadNATSContext reads the context name: a context of the nats CLI, or,
// when name is a path (it holds a path separator or ends in .json), that
// file. Paths in it may start with ~ and hold $VARIABLES, and creds,
// nkey, cert, key and ca may be file:// URIs; password and token may be
// env://VARIABLE or file:// references, as the nats CLI reads them.
func LoadNATSContext(name string, getenv func(string) string) (*NATSContext, error) {
	path := name
	if !strings.ContainsAny(name, `/\`) && !strings.HasSuffix(name, ".json") {
		if name == "" || strings.Contains(name, "..") {
			return nil, fmt.Errorf("%w: NATS context %q: not a context name", ErrUsage, name)
		}
		dir, err := NATSContextDir(getenv)
		if err != nil {
			return nil, fmt.Errorf("NATS context %s: %w", name, err)
		}
		path = filepath.Join(dir, name+".json")
	}
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: NATS context %s: %s does not exist (nats context add %s --server URL creates it; nats context ls lists them)", ErrUsage, name, path, name)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: NATS context %s: %v", ErrUsage, name, err)
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(raw, &all); err != nil {
		return nil, fmt.Errorf("%w: NATS context %s (%s): %v", ErrUsage, name, path, err)
	}
	for _, k := range unsupportedContext {
		if v, ok := all[k]; ok && !emptyJSON(v) {
			return nil, fmt.Errorf("%w: NATS context %s (%s) sets %s, which hookbus does not support (docs/OPERATIONS.md, \"NATS contexts\")", ErrUsage, name, path, k)
		}
	}
	c := &NATSContext{Name: name, Path: path}
	if err := json.Unmarshal(raw, c); err != nil {
		return nil, fmt.Errorf("%w: NATS context %s (%s): %v", ErrUsage, name, path, err)
	}
	for _, f := range []struct {
		v    *string
		name string
	}{{&c.Creds, "creds"}, {&c.NKey, "nkey"}, {&c.Cert, "cert"}, {&c.Key, "key"}, {&c.CA, "ca"}} {
		p, err := contextPath(*f.v, getenv)
		if err != nil {
			return nil, fmt.Errorf("%w: NATS context %s: %s: %v", ErrUsage, name, f.name, err)
		}
		*f.v = p
	}
	for _, f := range []struct {
		v    *string
		name string
	}{{&c.Password, "password"}, {&c.Token, "token"}} {
		v, err := contextLiteral(*f.v, getenv)
		if err != nil {
			return nil, fmt.Errorf("%w: NATS context %s: %s: %v", ErrUsage, name, f.name, err)
		}
		*f.v = v
	}
	return c, nil
}

// credentials are the context's credentials and TLS files.
func (c *NATSContext) credentials() Credentials {
	return Credentials{Creds: c.Creds, NKey: c.NKey, User: c.User, Password: c.Password, Token: c.Token,
		TLSCA: c.CA, TLSCert: c.Cert, TLSKey: c.Key}
}

func emptyJSON(v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	return len(v) == 0 || bytes.Equal(v, []byte(`""`)) || bytes.Equal(v, []byte("null")) ||
		bytes.Equal(v, []byte("false")) || bytes.Equal(v, []byte("[]"))
}

// contextPath reads a file setting: a path (~ and $VARIABLES expanded) or
// a file:// URI.
func contextPath(v string, getenv func(string) string) (string, error) {
	if v == "" {
		return "", nil
	}
	if p, ok := strings.CutPrefix(v, "file://"); ok {
		v = p
	} else if scheme, _, ok := strings.Cut(v, "://"); ok && !strings.ContainsAny(scheme, `/\`) {
		return "", fmt.Errorf("%q: hookbus reads files (a path or file://PATH), not %s:// references", v, scheme)
	}
	v = os.Expand(v, getenv)
	if rest, ok := strings.CutPrefix(v, "~"); ok {
		home, err := homeDir()
		if err != nil {
			return "", err
		}
		v = home + rest
	}
	return v, nil
}

// contextLiteral reads a secret setting: the value, env://VARIABLE or
// file://PATH.
func contextLiteral(v string, getenv func(string) string) (string, error) {
	switch {
	case strings.HasPrefix(v, "env://"):
		name := strings.TrimPrefix(v, "env://")
		s := getenv(name)
		if s == "" {
			return "", fmt.Errorf("$%s is not set", name)
		}
		return s, nil
	case strings.HasPrefix(v, "file://"):
		b, err := os.ReadFile(strings.TrimPrefix(v, "file://"))
		if err != nil {
			return "", err
		}
		return strings.TrimRight(string(b), "\r\n"), nil
	}
	return v, nil
}

func homeDir() (string, error) {
	if h, err := os.UserHomeDir(); err == nil && h != "" {
		return h, nil
	}
	u, err := user.Current()
	if err != nil {
		return "", fmt.Errorf("no home directory: %w", err)
	}
	return u.HomeDir, nil
}

// options are the context's connection options beyond its credentials.
func (c *NATSContext) options() []nats.Option {
	var out []nats.Option
	if c.TLSFirst {
		out = append(out, nats.TLSHandshakeFirst())
	}
	if c.InboxPrefix != "" {
		out = append(out, nats.CustomInboxPrefix(c.InboxPrefix))
	}
	return out
}
