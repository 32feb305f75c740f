package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/hookbus/hookbus/audit"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/internal/cli"
	"github.com/nats-io/nkeys"
)

// cmdVerify recomputes the hash chains of runs and checks their signed
// ends; it fails when any run's record is not intact.
func cmdVerify(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("observer verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var d deskFlags
	d.register(fs, "one verdict (JSON) per run (audit.RunVerdict)")
	var ff filterFlags
	ff.register(fs)
	var keys []string
	fs.Func("public-key", "a trusted signing key: the public nkey (printed by \"loop keygen\") or a file holding it; repeatable", func(v string) error {
		keys = append(keys, v)
		return nil
	})
	quiet := fs.Bool("q", false, "print only the runs that fail")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: observer verify [flags]\n\nRecomputes every run's hash chain and checks its signed end: per run, ok, or which\nevent was altered, removed, inserted or reordered, a run with no end, an end unsigned\nor signed by a key not given with --public-key. Exits 1 when any run fails.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if err := cli.NoArgs(fs); err != nil {
		return err
	}
	if ff.stage != "" {
		return fmt.Errorf("%w: --stage: a chain is verified whole", cli.ErrUsage)
	}
	filter, err := ff.filter()
	if err != nil {
		return err
	}
	trust, err := trustedKeys(keys)
	if err != nil {
		return err
	}
	v := &audit.Verifier{Trust: trust}
	prefix := ff.runPrefix()
	if err := d.scan(ctx, filter, stderr, func(e *events.Event) {
		if prefix == "" || strings.HasPrefix(e.RunID, prefix) {
			v.Add(e)
		}
	}); err != nil {
		return err
	}
	verdicts := v.Verdicts()
	failed, shown := 0, verdicts[:0:0]
	for _, vd := range verdicts {
		if !vd.OK() {
			failed++
		}
		if !*quiet || !vd.OK() {
			shown = append(shown, vd)
		}
	}
	if d.asJSON {
		if err := writeJSONLines(stdout, shown); err != nil {
			return err
		}
	} else {
		for _, vd := range shown {
			printVerdict(stdout, vd)
		}
	}
	fmt.Fprintf(stderr, "%d runs verified: %d intact, %d failed\n", len(verdicts), len(verdicts)-failed, failed)
	if len(verdicts) == 0 {
		if d := ff.describe(); d != "" {
			return fmt.Errorf("no events match %s", d)
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d runs failed verification", failed, len(verdicts))
	}
	return nil
}

func printVerdict(w io.Writer, vd *audit.RunVerdict) {
	status := "ok    "
	if !vd.OK() {
		status = "FAILED"
	}
	signer := "unsigned"
	if vd.Signer != "" {
		signer = "signed by " + vd.Signer
	}
	fmt.Fprintf(w, "%s  run %s  %s/%s  %d events, %s\n", status, vd.RunID, vd.AgentID, vd.SessionID, vd.Events, signer)
	for _, p := range vd.Problems {
		at := ""
		if p.Seq > 0 {
			at = fmt.Sprintf(" #%03d", p.Seq)
		}
		id := ""
		if p.EventID != "" {
			id = " (event " + p.EventID + ")"
		}
		fmt.Fprintf(w, "        %-14s%s%s: %s\n", p.Kind, at, id, p.Detail)
	}
}

// trustedKeys reads --public-key values: a public nkey, or a file holding
// one.
func trustedKeys(values []string) (map[string]bool, error) {
	out := map[string]bool{}
	for _, v := range values {
		key := strings.TrimSpace(v)
		if _, err := nkeys.FromPublicKey(key); err != nil {
			b, ferr := os.ReadFile(v)
			if ferr != nil {
				return nil, fmt.Errorf("%w: --public-key %q is neither a public nkey (%v) nor a readable file (%v)", cli.ErrUsage, v, err, ferr)
			}
			key = strings.TrimSpace(string(b))
			if _, err := nkeys.FromPublicKey(key); err != nil {
				return nil, fmt.Errorf("%w: --public-key %s: the file holds no public nkey: %v", cli.ErrUsage, v, err)
			}
		}
		out[key] = true
	}
	return out, nil
}
