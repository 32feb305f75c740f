package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/hookbus/hookbus/internal/cli"
	"github.com/hookbus/hookbus/loop"
	"github.com/nats-io/nkeys"
)

// cmdKeygen writes a new signing key: an nkey seed to --out, its public
// key on stdout.
func cmdKeygen(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("keygen", stderr)
	out := fs.String("out", "hookbus-signing.nk", "the file to write the seed to (created, mode 0600; never overwritten)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: loop keygen [--out FILE]\n\nWrites a new ed25519 signing key (an nkey seed) for loop run|serve --signing-key,\nand prints its public key, which auditors give to observer verify --public-key.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := cli.NoArgs(fs); err != nil {
		return err
	}
	kp, err := nkeys.CreateAccount()
	if err != nil {
		return err
	}
	seed, err := kp.Seed()
	if err != nil {
		return err
	}
	pub, err := kp.PublicKey()
	if err != nil {
		return err
	}
	f, err := os.OpenFile(*out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return fmt.Errorf("%w: %s exists: a signing key is never overwritten (give another --out)", cli.ErrUsage, *out)
	}
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(f, "%s\n", seed); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintln(stdout, pub)
	fmt.Fprintf(stderr, "seed written to %s (keep it secret: loop run|serve --signing-key %s); the public key above goes to auditors (observer verify --public-key)\n", *out, *out)
	return nil
}

// loadSigner reads --signing-key: an nkey seed file; nil without one.
func loadSigner(path string) (loop.Signer, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: --signing-key: %v", cli.ErrUsage, err)
	}
	kp, err := nkeys.FromSeed([]byte(strings.TrimSpace(string(b))))
	if err != nil {
		return nil, fmt.Errorf("%w: --signing-key %s holds no nkey seed: %v", cli.ErrUsage, path, err)
	}
	return kp, nil
}
