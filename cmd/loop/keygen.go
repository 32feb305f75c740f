package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/hookbus/hookbus/cmd/internal/cli"
	"github.com/hookbus/hookbus/loop"
	"github.com/nats-io/nkeys"
)

// keygenCmd writes a new signing key: an nkey seed to --out, its public
// key on stdout.
func keygenCmd(a *cli.App) *cobra.Command {
	return cli.NoArgsCommand("keygen [--out FILE]", "Write a new signing key for runs' ends", `Writes a new ed25519 signing key (an nkey seed) for loop run|serve --signing-key,
and prints its public key, which auditors give to observer verify --public-key.
The directory of --out is created (mode 0700) when it does not exist.`, func(fs *pflag.FlagSet) cli.Run {
		out := fs.String("out", "hookbus-signing.nk", "the file to write the seed to (created, mode 0600, in a directory created with mode 0700 when missing; never overwritten)")
		return func(_ context.Context, _ []string) error {
			return keygen(*out, a.Out, a.Err)
		}
	})
}

// keygen writes a new signing key's seed to out and prints its public key.
func keygen(out string, stdout, stderr io.Writer) error {
	if err := keyDir(out, stderr); err != nil {
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
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return fmt.Errorf("%w: %s exists: a signing key is never overwritten (give another --out)", cli.ErrUsage, out)
	}
	if errors.Is(err, os.ErrPermission) {
		return fmt.Errorf("cannot write %s (permission denied): make its directory the user's that runs loop, e.g. sudo chown \"$USER\" %s, or give --out a path in a directory you can write", out, filepath.Dir(out))
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
	fmt.Fprintf(stderr, "seed written to %s (keep it secret: loop run|serve --signing-key %s); the public key above goes to auditors (observer verify --public-key)\n", out, out)
	return nil
}

// keyDir makes the directory of the key file path when it does not exist
// (mode 0700: a key's directory is its owner's), saying so; when it cannot,
// the error says what to do.
func keyDir(path string, stderr io.Writer) error {
	dir := filepath.Dir(path)
	if st, err := os.Stat(dir); err == nil {
		if !st.IsDir() {
			return fmt.Errorf("%w: --out %s: %s is not a directory", cli.ErrUsage, path, dir)
		}
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		if errors.Is(err, os.ErrPermission) {
			return fmt.Errorf("cannot create the directory %s of --out (permission denied): create it for the user that runs loop first, e.g. sudo install -d -m 0700 -o \"$USER\" %s, or give --out a path in a directory you can write", dir, dir)
		}
		return fmt.Errorf("--out %s: creating its directory: %w", path, err)
	}
	fmt.Fprintf(stderr, "created the directory %s (mode 0700)\n", dir)
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
