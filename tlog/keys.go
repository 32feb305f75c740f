package tlog

import (
	"crypto/rand"
	"fmt"
	"os"
	"strings"

	tnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"
)

// Keys are signed-note keys (golang.org/x/mod/sumdb/note, the format of
// Go's checksum database): Ed25519, named. A signer key is
// "PRIVATE+KEY+<name>+<key id>+<base64>", its verifier key
// "<name>+<key id>+<base64>". A log's key is named after its origin; a
// witness' key after the witness. The same kind of key serves both: a log
// signs with note's Ed25519 signature, a witness with the timestamped
// cosignature/v1 of C2SP tlog-cosignature.

// GenerateKey returns a new signer key and its verifier key, named name
// (no spaces, no '+'). The error wraps ErrKey.
func GenerateKey(name string) (skey, vkey string, err error) {
	skey, vkey, err = note.GenerateKey(rand.Reader, name)
	if err != nil {
		return "", "", fmt.Errorf("%w: name %q: %v (a name has no spaces and no '+', e.g. example.com/hookbus)", ErrKey, name, err)
	}
	return skey, vkey, nil
}

// readKeyFile returns the first non-empty line of a key file.
func readKeyFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrKey, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// ReadSigner reads a log's signer key from a file, and returns it with
// its verifier. The error wraps ErrKey.
func ReadSigner(path string) (note.Signer, note.Verifier, error) {
	skey, err := readKeyFile(path)
	if err != nil {
		return nil, nil, err
	}
	s, v, err := tnote.NewEd25519SignerVerifier(skey)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s holds no Ed25519 signer key: %v", ErrKey, path, err)
	}
	return s, v, nil
}

// ReadCosigner reads a witness' signer key from a file: it cosigns with
// cosignature/v1. The error wraps ErrKey.
func ReadCosigner(path string) (*tnote.Signer, error) {
	skey, err := readKeyFile(path)
	if err != nil {
		return nil, err
	}
	s, err := tnote.NewSignerForCosignatureV1(skey)
	if err != nil {
		return nil, fmt.Errorf("%w: %s holds no signer key: %v", ErrKey, path, err)
	}
	return s, nil
}

// verifierKey returns v, or the content of the file v names when v is not
// a verifier key itself.
func verifierKey(v string) (string, error) {
	v = strings.TrimSpace(v)
	if _, err := note.NewVerifier(v); err == nil {
		return v, nil
	}
	b, err := os.ReadFile(v)
	if err != nil {
		return "", fmt.Errorf("%w: %q is neither a verifier key (<name>+<id>+<base64>) nor a readable file", ErrKey, v)
	}
	return strings.TrimSpace(string(b)), nil
}

// ParseVerifier reads a log's verifier key: the key itself, or a file
// holding it. The error wraps ErrKey.
func ParseVerifier(v string) (note.Verifier, error) { return parseVerifier(v, note.NewVerifier) }

// ParseWitnessVerifier reads a witness' verifier key (the key, or a file
// holding it) as the verifier of its cosignature/v1 cosignatures. The
// error wraps ErrKey.
func ParseWitnessVerifier(v string) (note.Verifier, error) {
	return parseVerifier(v, tnote.NewVerifierForCosignatureV1)
}

// parseVerifier reads the verifier key v (the key, or a file holding it)
// with newVerifier.
func parseVerifier(v string, newVerifier func(string) (note.Verifier, error)) (note.Verifier, error) {
	key, err := verifierKey(v)
	if err != nil {
		return nil, err
	}
	out, err := newVerifier(key)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrKey, v, err)
	}
	return out, nil
}
