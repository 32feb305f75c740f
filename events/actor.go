package events

import (
	"cmp"
	"fmt"
	"strings"
	"time"
)

// Actor is who did something the record keeps (answered an approval,
// disabled a plugin, set a budget), as hookbus knows it: an identity the
// NATS server authenticated (or that a web page authenticated and vouches
// for), the channel it came through, the NATS user that wrote the record,
// and any name the actor gave itself, kept apart as a note. See
// docs/SECURITY.md, "Approvals and operator actions".
type Actor struct {
	// Identity is who acted, as authenticated: the NATS user of the
	// connection that wrote the record (what the server says it is), or,
	// for the web page, the page's authenticated user. "hookbus" for an
	// expiry; "anonymous" on a server without authentication.
	Identity string `json:"identity,omitempty"`
	// Via says how Identity was authenticated: "nats" (the server's user
	// info), or the web page's method (a token, a proxy's header).
	Via string `json:"via,omitempty"`
	// Channel is how the action reached hookbus: ChannelCLI, ChannelWeb,
	// ChannelNATS (any other client) or ChannelExpiry.
	Channel string `json:"channel,omitempty"`
	// Writer is the NATS user whose connection wrote the record: for an
	// answer, the last token of the subject it is stored on, which the
	// server lets only that user publish. Empty for an expiry (written by
	// a worker on the plain subject).
	Writer string `json:"writer,omitempty"`
	// DeclaredBy is a name the actor typed (observer's --note, formerly
	// --by): a note, never checked.
	DeclaredBy string `json:"declared_by,omitempty"`
}

// Channels of an Actor.
const (
	ChannelCLI    = "cli"
	ChannelWeb    = "web"
	ChannelNATS   = "nats"
	ChannelExpiry = "expiry"
)

// IdentityHookbus is the identity of what hookbus does by itself (an
// approval's expiry); IdentityAnonymous the identity of a connection the
// server did not authenticate.
const (
	IdentityHookbus   = "hookbus"
	IdentityAnonymous = "anonymous"
)

// CheckWriter reports whether a's record, stored on a subject whose writer
// token is writer ("" for the plain subject), says who wrote it truthfully:
// an expiry is written on the plain subject by hookbus; any other answer
// on its writer's own subject, with Writer equal to that token, and, except
// for the web page (whose server vouches for the user it authenticated),
// Identity equal to Writer. A record without a channel (written before
// hookbus recorded identities) claims none and passes. The error says what
// does not match.
func (a Actor) CheckWriter(writer string) error {
	switch {
	case a.Channel == "":
		if writer != "" && a.Writer != "" && a.Writer != writer {
			return fmt.Errorf("names writer %q but was written by NATS user %q", a.Writer, writer)
		}
		return nil
	case a.Channel == ChannelExpiry:
		if writer != "" {
			return fmt.Errorf("an expiry written by NATS user %q (expiries are written by workers, on the plain subject)", writer)
		}
		if a.Identity != IdentityHookbus {
			return fmt.Errorf("an expiry by %q (expiries are by %s)", a.Identity, IdentityHookbus)
		}
		return nil
	case writer == "":
		return fmt.Errorf("claims %s by %q but is on the plain subject: no NATS user vouches for it", a.Channel, a.Identity)
	case a.Writer != writer:
		return fmt.Errorf("names writer %q but was written by NATS user %q", a.Writer, writer)
	case a.Channel != ChannelWeb && a.Identity != writer:
		return fmt.Errorf("claims identity %q but was written by NATS user %q", a.Identity, writer)
	}
	return nil
}

// String says who acted: "alice (cli)", "bob (web, vouched for by NATS user
// webui; note \"on call\")".
func (a Actor) String() string {
	who := cmp.Or(a.Identity, "?")
	var parts []string
	if a.Channel != "" {
		parts = append(parts, a.Channel)
	}
	if a.Writer != "" && a.Writer != a.Identity {
		parts = append(parts, "vouched for by NATS user "+a.Writer)
	}
	s := who
	if len(parts) > 0 {
		s += " (" + strings.Join(parts, ", ") + ")"
	}
	if a.DeclaredBy != "" && a.DeclaredBy != a.Identity {
		s += fmt.Sprintf(" [note: declared %q]", a.DeclaredBy)
	}
	return s
}

// Describe says what an answer was, who gave it, how and when: "approve by
// alice (cli) at 2026-01-02T03:04:05Z (answer 01J...)"; for a record
// written before identities were recorded, "approve by alice (declared;
// no identity recorded)".
func (r ApprovalResolved) Describe() string {
	action := cmp.Or(r.Action, map[bool]string{true: ActionApprove, false: ActionReject}[r.Approved])
	s := action + " by " + r.Who()
	if r.Expired && r.Channel != ChannelExpiry {
		s += ", expired"
	}
	if !r.AnsweredAt.IsZero() {
		s += " at " + r.AnsweredAt.UTC().Format(time.RFC3339)
	}
	if r.AnswerID != "" {
		s += " (answer " + r.AnswerID + ")"
	}
	return s
}

// Who says who gave an answer: its Actor (String), or for a record written
// before identities were recorded, the name it gives, marked declared.
func (r ApprovalResolved) Who() string {
	switch {
	case r.Identity != "":
		return r.Actor.String()
	case r.Expired:
		return r.By + " (expiry)"
	}
	return r.By + " (declared; no identity recorded)"
}

// MaxWriterTokenLen bounds an encoded writer token.
const MaxWriterTokenLen = 256

// WriterToken encodes a NATS user name as one subject token: letters,
// digits and "-_@+=" stay, every other byte becomes %XX (upper-case hex),
// so "alice@example.com" is "alice@example%2Ecom". It returns an error
// wrapping ErrInvalidID for an empty user or one whose token would pass
// MaxWriterTokenLen bytes.
func WriterToken(user string) (string, error) {
	if user == "" {
		return "", fmt.Errorf("%w: writer (NATS user) is empty", ErrInvalidID)
	}
	var b strings.Builder
	for i := 0; i < len(user); i++ {
		c := user[i]
		if tokenByte(c) {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	if b.Len() > MaxWriterTokenLen {
		return "", fmt.Errorf("%w: writer %.32q... encodes to %d bytes (max %d)", ErrInvalidID, user, b.Len(), MaxWriterTokenLen)
	}
	return b.String(), nil
}

// ParseWriterToken decodes a writer token (WriterToken's); a token that is
// not in WriterToken's form (a byte that should have been encoded, a bad
// escape, an escape of a byte that stays) is an error wrapping
// ErrInvalidSubject.
func ParseWriterToken(tok string) (string, error) {
	if tok == "" || len(tok) > MaxWriterTokenLen {
		return "", fmt.Errorf("%w: writer token of %d bytes", ErrInvalidSubject, len(tok))
	}
	var b strings.Builder
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		switch {
		case tokenByte(c):
			b.WriteByte(c)
		case c == '%' && i+2 < len(tok) && isUpperHex(tok[i+1]) && isUpperHex(tok[i+2]):
			hi, _ := unhex(tok[i+1])
			lo, _ := unhex(tok[i+2])
			v := hi<<4 | lo
			if tokenByte(v) {
				return "", fmt.Errorf("%w: writer token %q escapes %q, which stays as it is", ErrInvalidSubject, tok, string(v))
			}
			b.WriteByte(v)
			i += 2
		default:
			return "", fmt.Errorf("%w: writer token %q is not percent-encoded (%q at byte %d)", ErrInvalidSubject, tok, string(c), i)
		}
	}
	return b.String(), nil
}

func tokenByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	case c == '-', c == '_', c == '@', c == '+', c == '=':
		return true
	}
	return false
}

func isUpperHex(c byte) bool { return '0' <= c && c <= '9' || 'A' <= c && c <= 'F' }
