package events

import "fmt"

// Definition names the agent definition a run ran on: the digest of what
// defines the agent (its model, prompt, tools, hooks and settings; see
// docs/PROTOCOL.md, "Agent definitions"), and the definition's name and
// version as its author wrote them. run.started records it, so a resumed
// attempt is run only by a worker holding the same definition.
type Definition struct {
	// Digest is the hex SHA-256 of the definition's canonical JSON.
	Digest string `json:"digest"`
	// Name is the definition's name (the agent id it defines).
	Name string `json:"name,omitempty"`
	// Version is the definition's version, when its author gave one.
	Version string `json:"version,omitempty"`
}

// Short is the digest's first 12 hex digits, as tables show it.
func (d Definition) Short() string { return ShortDigest(d.Digest) }

// ShortDigest is a digest's first 12 hex digits ("-" for none).
func ShortDigest(digest string) string {
	switch {
	case digest == "":
		return "-"
	case len(digest) > 12:
		return digest[:12]
	}
	return digest
}

// String names the definition for people: "ops v2 (3f2a9c0b1d4e)".
func (d Definition) String() string {
	s := d.Name
	if d.Version != "" {
		s += " v" + d.Version
	}
	if s == "" {
		return d.Short()
	}
	return s + " (" + d.Short() + ")"
}

// DigestLen is the length of a definition digest: 64 hex digits.
const DigestLen = 64

// ValidateDigest checks a definition digest: 64 lower-case hex digits. An
// error wraps ErrInvalidID (a digest is a subject token of the run queue).
func ValidateDigest(d string) error {
	if len(d) != DigestLen {
		return fmt.Errorf("%w: definition digest %.16q is %d characters (want %d hex digits)", ErrInvalidID, d, len(d), DigestLen)
	}
	for i := 0; i < len(d); i++ {
		if c := d[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return fmt.Errorf("%w: definition digest %.16q... is not lower-case hex", ErrInvalidID, d)
		}
	}
	return nil
}
