package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/cmd/internal/cli"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/tlog"
	"github.com/hookbus/hookbus/tlog/tlogbus"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// checkpointArg reads --checkpoint: "latest" (nil) or a file holding a
// signed checkpoint.
func checkpointArg(v string) ([]byte, error) {
	if v == "" || v == "latest" {
		return nil, nil
	}
	b, err := os.ReadFile(v)
	if err != nil {
		return nil, fmt.Errorf("%w: --checkpoint: %v", cli.ErrUsage, err)
	}
	return b, nil
}

// proveCmd writes the inclusion proof of a run's events.
func proveCmd(a *cli.App) *cobra.Command {
	return cli.Command("prove RUN --key KEY [flags]", "Prove a run's events are in the log (inclusion proofs)", `Writes the proof that RUN's events are in the log, at their stream sequences, under a
signed checkpoint: each event's leaf and its RFC 6962 inclusion proof (also as a C2SP
tlog-proof). observer verify-proof checks it offline; so does any RFC 6962 verifier
(docs/PROTOCOL.md, "Proofs"). RUN is a run id or a unique prefix of one.`, func(fs *pflag.FlagSet) cli.Run {
		stdout, stderr := a.Out, a.Err
		var d deskFlags
		d.register(a, fs, "(the proof is JSON)")
		key := fs.String("key", "", "the log's verifier key, or a file holding it (required)")
		checkpoint := fs.String("checkpoint", "latest", "the checkpoint to prove against: latest (the latest stored, cosigned by every --witness-key) or a file holding one")
		wkeys := verifiersFlag{witness: true}
		fs.Var(&wkeys, "witness-key", "a witness whose cosignature the checkpoint must carry (its verifier key, or a file); repeatable")
		return func(ctx context.Context, pos []string) error {
			if len(pos) != 1 {
				return fmt.Errorf("%w: want one RUN (an id or a prefix of one), got %d arguments", cli.ErrUsage, len(pos))
			}
			if *key == "" {
				return fmt.Errorf("%w: --key (the log's verifier key) is required", cli.ErrUsage)
			}
			logKey, err := tlog.ParseVerifier(*key)
			if err != nil {
				return fmt.Errorf("%w: --key: %v", cli.ErrUsage, err)
			}
			cp, err := checkpointArg(*checkpoint)
			if err != nil {
				return err
			}
			prefix := (&filterFlags{run: pos[0]}).runPrefix()
			if err := validID("run", prefix); err != nil || prefix == "" {
				return fmt.Errorf("%w: RUN %q holds no run id", cli.ErrUsage, pos[0])
			}
			c, gctx, release, err := d.conn.OpenGuarded(ctx, "hookbus-observer", d.logger(stderr), cli.ReadOnly)
			if err != nil {
				return err
			}
			defer release()
			ids, err := runsStartingWith(gctx, c.Bus, bus.Filter{}, prefix)
			if err != nil {
				return c.Explain(err)
			}
			run, err := pick(prefix, ids)
			if err != nil {
				return err
			}
			p, later, err := tlogbus.Prove(gctx, c.Bus, run, tlogbus.VerifyConfig{LogKey: logKey, Witnesses: wkeys.list, Checkpoint: cp})
			if errors.Is(err, tlogbus.ErrNoCheckpoints) && later > 0 {
				return fmt.Errorf("run %s is newer than the checkpoint: its %d events were stored after it. A running checkpointer (observer checkpointer) signs the next one within its --interval (%s by default, and at once every --every events); prove the run again then (observer checkpoint lists the stored checkpoints): %w",
					run, later, tlogbus.DefaultInterval, err)
			}
			if err != nil {
				return c.Explain(err)
			}
			if err := writeJSON(stdout, p); err != nil {
				return err
			}
			fmt.Fprintf(stderr, "run %s: %d events proven under the checkpoint of size %d", run, len(p.Entries), p.TreeSize)
			if later > 0 {
				fmt.Fprintf(stderr, "; %d newer events are not covered yet", later)
			}
			fmt.Fprintln(stderr)
			if data, err := json.Marshal(p); err == nil {
				if res, err := tlog.VerifyProof(data, logKey, wkeys.list...); errors.Is(err, tlog.ErrIncomplete) {
					for _, f := range res.Findings {
						fmt.Fprintf(stderr, "note: %s: %s (observer verify-proof fails it%s)\n", f.Kind, f.Detail, map[bool]string{true: " unless --unended"}[f.Kind == tlog.FindNoEnd])
					}
				}
			}
			return nil
		}
	})
}

// verifyProofCmd checks a proof offline.
func verifyProofCmd(a *cli.App) *cobra.Command {
	return cli.Command("verify-proof FILE --key KEY [flags]", "Check a run's proof offline", `Checks a proof written by observer prove, offline (no server, no store): the checkpoint's
signature by the log's key (and the witnesses' cosignatures), each event's leaf hash and
inclusion proof against the checkpoint's root, and the run's chain: every event's
predecessor in the proof, its end's signature. Exits 1 when the proof does not hold,
or is not of the whole run: events left out (left_out), an entry or an event twice
(duplicate), no end of the run (no_end; --unended accepts a run that had not ended at
the checkpoint, and says so).`, func(fs *pflag.FlagSet) cli.Run {
		stdout := a.Out
		key := fs.String("key", "", "the log's verifier key, or a file holding it (required)")
		wkeys := verifiersFlag{witness: true}
		fs.Var(&wkeys, "witness-key", "a witness whose cosignature the checkpoint must carry (its verifier key, or a file); repeatable")
		var signers []string
		fs.Func("public-key", "a trusted signing `KEY` of runs (the public nkey, or a file holding it): the run's end must be signed by one; repeatable", func(v string) error {
			signers = append(signers, v)
			return nil
		})
		asJSON := fs.Bool("json", false, "the result as JSON (tlog.ProofResult)")
		unended := fs.Bool("unended", false, "accept a proof without the run's end (a run that had not ended at the checkpoint): no_end is a note, not a failure")
		return func(ctx context.Context, pos []string) error {
			if len(pos) != 1 {
				return fmt.Errorf("%w: want one proof file, got %d arguments", cli.ErrUsage, len(pos))
			}
			if *key == "" {
				return fmt.Errorf("%w: --key (the log's verifier key) is required", cli.ErrUsage)
			}
			logKey, err := tlog.ParseVerifier(*key)
			if err != nil {
				return fmt.Errorf("%w: --key: %v", cli.ErrUsage, err)
			}
			trust, err := trustedKeys(signers)
			if err != nil {
				return err
			}
			data, err := os.ReadFile(pos[0])
			if err != nil {
				return fmt.Errorf("%w: %v", cli.ErrUsage, err)
			}
			res, err := tlog.VerifyProof(data, logKey, wkeys.list...)
			if err != nil && !errors.Is(err, tlog.ErrIncomplete) {
				return fmt.Errorf("the proof does not hold: %w", err)
			}
			var accept []string
			if *unended {
				accept = append(accept, tlog.FindNoEnd)
			}
			failing := res.Failing(accept...)
			for i := range res.Findings {
				res.Findings[i].Fails = !slices.Contains(accept, res.Findings[i].Kind)
			}
			if *asJSON {
				if err := writeJSON(stdout, res); err != nil {
					return err
				}
			} else {
				printProof(stdout, res, len(failing) > 0)
			}
			if len(failing) > 0 {
				var kinds []string
				for _, f := range failing {
					kinds = append(kinds, f.Kind)
				}
				return fmt.Errorf("the proof is not of the whole run %s: %s", res.Run, strings.Join(slices.Compact(kinds), ", "))
			}
			if len(trust) > 0 && !trust[res.Signer] {
				return fmt.Errorf("the run's end is not signed by a key given with --public-key (signer %q)", res.Signer)
			}
			return nil
		}
	})
}

// printProof writes a checked proof as text; failed says that it does not
// hold.
func printProof(stdout io.Writer, res *tlog.ProofResult, failed bool) {
	status := "ok"
	if failed {
		status = "FAILED"
	}
	fmt.Fprintf(stdout, "%s  run %s: %d events in %s, under its checkpoint of size %d (root %s)\n", status, res.Run, len(res.Events), res.Checkpoint.Origin, res.Checkpoint.Size, res.Checkpoint.Root)
	for _, c := range res.Cosigned {
		fmt.Fprintf(stdout, "    cosigned by %s at %s\n", c.Name, c.Time.Local().Format("2006-01-02 15:04:05"))
	}
	for _, e := range res.Events {
		fmt.Fprintf(stdout, "    seq %-8d #%03d %s (event %s)\n", e.Seq, e.RunSeq, strings.TrimPrefix(e.Type, events.TypePrefix), e.EventID)
	}
	switch {
	case res.Signer != "":
		fmt.Fprintf(stdout, "    the run's end is signed by %s", res.Signer)
	case res.Ended:
		fmt.Fprint(stdout, "    the run's end is not signed")
	default:
		fmt.Fprint(stdout, "    the proof holds no end of the run")
	}
	if res.Linked {
		fmt.Fprintln(stdout, "; every event's predecessor is in the proof")
	} else {
		fmt.Fprintln(stdout, "; some events' predecessors are not in the proof")
	}
	for _, f := range res.Findings {
		note := ""
		if !f.Fails {
			note = "note: "
		}
		fmt.Fprintf(stdout, "    %s%-10s %s\n", note, f.Kind, f.Detail)
	}
}

// witnessCmd runs a witness.
func witnessCmd(a *cli.App) *cobra.Command {
	return cli.NoArgsCommand("witness --key FILE --state DIR --checkpointer-key KEY [flags]", "Cosign checkpoints (a witness)", `Cosigns a log's checkpoints (C2SP tlog-witness over NATS) only when each is consistent
with the last one it cosigned, which it keeps in DIR: run it with its own key, as its own
user, ideally in another trust domain than the operator's. Runs until interrupted.`, func(fs *pflag.FlagSet) cli.Run {
		stderr := a.Err
		conn := cli.ConnFlags{App: a}
		conn.Register(fs)
		keyFile := fs.String("key", "", "the witness' own signer key file (observer keygen --name WITNESS-NAME) (required)")
		state := fs.String("state", "", "the witness' state directory: the last checkpoint it cosigned per log, fsync'd (required)")
		var logs verifiersFlag
		fs.Var(&logs, "checkpointer-key", "the verifier key of a log to witness (the checkpointer's), or a file holding it; repeatable (required)")
		name := fs.String("name", "w1", "the witness' name on NATS (a subject token): it answers <prefix>.witness.NAME.add-checkpoint, in queue group NAME")
		return func(ctx context.Context, _ []string) error {
			if *keyFile == "" || *state == "" || len(logs.list) == 0 {
				return fmt.Errorf("%w: give --key, --state and --checkpointer-key", cli.ErrUsage)
			}
			signer, err := tlog.ReadCosigner(*keyFile)
			if err != nil {
				return fmt.Errorf("%w: --key: %v", cli.ErrUsage, err)
			}
			w, err := tlog.OpenWitness(*state, signer, logs.list...)
			if err != nil {
				return err
			}
			defer w.Close()
			log := a.Log.Logger(stderr)
			c, err := conn.Open(ctx, "hookbus-witness", log, cli.ReadOnly)
			if err != nil {
				return err
			}
			defer c.Close()
			svc, err := tlogbus.ServeWitness(c.NC, c.Bus.Subjects(), *name, w, log)
			if err != nil {
				return c.Explain(err)
			}
			defer func() { _ = svc.Stop() }()
			subject, _ := c.Bus.Subjects().Witness(*name, tlogbus.CallAddCheckpoint)
			for _, l := range logs.list {
				fmt.Fprintf(stderr, "witnessing %s as %s on %s (state %s)\n", l.Name(), signer.Name(), subject, w.StatePath(l.Name()))
			}
			<-ctx.Done()
			return nil
		}
	})
}
