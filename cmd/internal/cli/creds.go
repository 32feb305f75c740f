package cli

import (
	"cmp"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/hookbus/hookbus/internal/redact"
	"github.com/nats-io/nats.go"
	"github.com/spf13/pflag"
)

// Credentials are the ways to authenticate to an external NATS server
// besides user info in the URL, as the nats CLI offers them: a flag, else
// its environment variable.
type Credentials struct {
	Creds    string // --creds FILE, $NATS_CREDS: a NATS credentials file (JWT and nkey seed)
	NKey     string // --nkey FILE, $NATS_NKEY: an nkey seed file
	User     string // --user, $NATS_USER
	Password string // --password, $NATS_PASSWORD
	Token    string // --token, $NATS_TOKEN
	TLSCA    string // --tls-ca FILE, $NATS_CA: CA certificates to verify the server with
	TLSCert  string // --tls-cert FILE, $NATS_CERT: the client certificate (mTLS)
	TLSKey   string // --tls-key FILE, $NATS_KEY: the client certificate's private key
}

func (c *Credentials) register(fs *pflag.FlagSet) {
	fs.StringVar(&c.Creds, "creds", "", "NATS credentials file (JWT and nkey seed, as nsc writes it); default $NATS_CREDS")
	fs.StringVar(&c.NKey, "nkey", "", "nkey seed file (a user's SU... seed); default $NATS_NKEY")
	fs.StringVar(&c.User, "user", "", "user name, with --password; default $NATS_USER")
	fs.StringVar(&c.Password, "password", "", "password of --user; default $NATS_PASSWORD (prefer the variable: a flag shows in ps)")
	fs.StringVar(&c.Token, "token", "", "authentication token; default $NATS_TOKEN")
	fs.StringVar(&c.TLSCA, "tls-ca", "", "CA certificate file to verify the server's TLS certificate (a tls:// URL, or a server requiring TLS); default $NATS_CA")
	fs.StringVar(&c.TLSCert, "tls-cert", "", "client certificate file (PEM) for a server that verifies its clients (mTLS: verify: true), with --tls-key; default $NATS_CERT")
	fs.StringVar(&c.TLSKey, "tls-key", "", "private key file (PEM) of --tls-cert; default $NATS_KEY")
}

// fromEnv fills the fields not given as flags from the environment.
func (c *Credentials) fromEnv(getenv func(string) string) Credentials {
	out := *c
	for _, f := range []struct {
		v   *string
		env string
	}{{&out.Creds, "NATS_CREDS"}, {&out.NKey, "NATS_NKEY"}, {&out.User, "NATS_USER"}, {&out.Password, "NATS_PASSWORD"}, {&out.Token, "NATS_TOKEN"},
		{&out.TLSCA, "NATS_CA"}, {&out.TLSCert, "NATS_CERT"}, {&out.TLSKey, "NATS_KEY"}} {
		if *f.v == "" {
			*f.v = getenv(f.env)
		}
	}
	return out
}

// given names the credentials set, for errors.
func (c Credentials) given() []string {
	var out []string
	if c.Creds != "" {
		out = append(out, "--creds")
	}
	if c.NKey != "" {
		out = append(out, "--nkey")
	}
	if c.User != "" || c.Password != "" {
		out = append(out, "--user/--password")
	}
	if c.Token != "" {
		out = append(out, "--token")
	}
	return out
}

// options returns the nats options of c for a connection to servers (the
// URL list); a contradiction (two kinds of credentials, a password without a
// user, credentials both in the URL and as flags) is an error wrapping
// ErrUsage. Nothing in an error is a secret.
func (c Credentials) options(servers string) ([]nats.Option, error) {
	kinds := c.given()
	if len(kinds) > 1 {
		return nil, fmt.Errorf("%w: give one kind of credentials, not %s (flags or $NATS_* variables)", ErrUsage, strings.Join(kinds, " and "))
	}
	if len(kinds) == 1 && urlHasUser(servers) {
		return nil, fmt.Errorf("%w: the server URL %s carries credentials and so does %s: give one", ErrUsage, redact.URL(servers), kinds[0])
	}
	var opts []nats.Option
	switch {
	case c.Creds != "":
		if err := readable(c.Creds, "--creds"); err != nil {
			return nil, err
		}
		opts = append(opts, nats.UserCredentials(c.Creds))
	case c.NKey != "":
		if err := readable(c.NKey, "--nkey"); err != nil {
			return nil, err
		}
		o, err := nats.NkeyOptionFromSeed(c.NKey)
		if err != nil {
			return nil, fmt.Errorf("%w: --nkey %s: not an nkey seed file: %v", ErrUsage, c.NKey, err)
		}
		opts = append(opts, o)
	case c.User != "" || c.Password != "":
		if c.User == "" || c.Password == "" {
			return nil, fmt.Errorf("%w: --user and --password go together (a lone secret is a --token)", ErrUsage)
		}
		opts = append(opts, nats.UserInfo(c.User, c.Password))
	case c.Token != "":
		opts = append(opts, nats.Token(c.Token))
	}
	if c.TLSCA != "" {
		if err := readable(c.TLSCA, "--tls-ca"); err != nil {
			return nil, err
		}
		opts = append(opts, nats.RootCAs(c.TLSCA))
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return nil, fmt.Errorf("%w: a client certificate needs both --tls-cert and --tls-key ($NATS_CERT and $NATS_KEY)", ErrUsage)
	}
	if c.TLSCert != "" {
		if err := readable(c.TLSCert, "--tls-cert"); err != nil {
			return nil, err
		}
		if err := readable(c.TLSKey, "--tls-key"); err != nil {
			return nil, err
		}
		opts = append(opts, nats.ClientCert(c.TLSCert, c.TLSKey))
	}
	return opts, nil
}

// withContext fills what c lacks from a NATS context's settings: its
// credentials when c has none of any kind, and each TLS file c lacks.
// Flags and $NATS_* variables win over the context, as for the nats CLI.
func (c Credentials) withContext(ctx Credentials) Credentials {
	out := c
	if len(c.given()) == 0 {
		out.Creds, out.NKey, out.User, out.Password, out.Token = ctx.Creds, ctx.NKey, ctx.User, ctx.Password, ctx.Token
	}
	out.TLSCA = cmp.Or(out.TLSCA, ctx.TLSCA)
	if out.TLSCert == "" && out.TLSKey == "" {
		out.TLSCert, out.TLSKey = ctx.TLSCert, ctx.TLSKey
	}
	return out
}

// any reports whether any credential or TLS setting is given.
func (c Credentials) any() bool { return c != Credentials{} }

func readable(path, flag string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrUsage, flag, err)
	}
	return f.Close()
}

func urlHasUser(servers string) bool {
	for _, s := range strings.Split(servers, ",") {
		if u, err := url.Parse(strings.TrimSpace(s)); err == nil && u.User != nil {
			return true
		} else if err != nil && strings.Contains(s, "@") {
			return true
		}
	}
	return false
}

// flagNames names the flags set, for errors.
func (c Credentials) flagNames() string {
	names := c.given()
	for _, f := range []struct{ v, name string }{{c.TLSCA, "--tls-ca"}, {c.TLSCert, "--tls-cert"}, {c.TLSKey, "--tls-key"}} {
		if f.v != "" {
			names = append(names, f.name)
		}
	}
	return strings.Join(names, ", ")
}

// empty reports whether no credential is set (a client certificate
// counts).
func (c Credentials) empty() bool { return len(c.given()) == 0 && c.TLSCert == "" }
