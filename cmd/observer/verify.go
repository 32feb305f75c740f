package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/hookbus/hookbus/audit"
	"github.com/hookbus/hookbus/cmd/internal/cli"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/tlog"
	"github.com/hookbus/hookbus/tlog/tlogbus"
	"github.com/nats-io/nkeys"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// verifyCmd recomputes the hash chains of runs and checks their signed
// ends; it fails when any run fails verification (audit.Verifier's rule:
// tampering; with --public-key, a signer not given; with --require-signed,
// an end not signed).
func verifyCmd(a *cli.App) *cobra.Command {
	return cli.Command("verify [flags]", "Check runs' hash chains and signed ends (and, with --checkpoint, the whole stream)", `Recomputes every run's hash chain and checks its signed end: per run, ok, or which
event was altered, removed, inserted or reordered. Exits 1 when any run fails:
when its record was tampered with, when it is signed by a key not given with
--public-key (when any is given), or, with --require-signed, when its end is
not signed. A run without an end yet (running, waiting, cut off) and an
intact unsigned run pass, and say so.

With --checkpoint it also recomputes the Merkle tree of the whole stream and proves it
is the one the checkpoint (and every stored checkpoint) commits to, each extending
the one before: what a run's chain cannot see, whole runs deleted, the tail
truncated, a rewrite re-signed, another stream, is named; it exits 1 then too.`, func(fs *pflag.FlagSet) cli.Run {
		stdout, stderr := a.Out, a.Err
		var d deskFlags
		d.register(a, fs, "one verdict (JSON) per run (audit.RunVerdict)", cli.OutputText, cli.OutputJSON)
		var ff filterFlags
		ff.register(fs)
		var keys []string
		fs.Func("public-key", "a trusted signing `KEY`: the public nkey (printed by \"loop keygen\") or a file holding it; repeatable", func(v string) error {
			keys = append(keys, v)
			return nil
		})
		checkpoint := fs.String("checkpoint", "", "also prove the whole stream against a checkpoint: latest (the latest stored, cosigned by every --witness-key) or a file holding one (observer checkpoint --note, a witness' state); needs --checkpoint-key")
		cpKey := fs.String("checkpoint-key", "", "the log's verifier key (the checkpointer's), or a file holding it")
		wkeys := verifiersFlag{witness: true}
		fs.Var(&wkeys, "witness-key", "with --checkpoint: a witness whose cosignature the checkpoint must carry (its verifier key, or a file); repeatable")
		quiet := fs.BoolP("quiet", "q", false, "print only the runs that fail")
		allowMissing := fs.Bool("allow-missing-payloads", false, "with --checkpoint: accept claim-checked events whose large payload is gone from the payloads store (a note instead of a failure); by default verification fails, since what they recorded cannot be read")
		maxLag := fs.Duration("max-lag", 0, "with --checkpoint: fail when the oldest message no checkpoint covers was stored longer ago than this (the checkpointer stopped, paused or behind); without it the note says how far the checkpoints lag")
		requireSigned := fs.Bool("require-signed", false, "fail every run whose end is not signed (by a key given with --public-key, when any is given); by default an unsigned run whose record is intact passes")
		return func(ctx context.Context, args []string) error {
			if err := cli.NoArgs(nil, args); err != nil {
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
			var stream *tlogbus.VerifyConfig
			switch {
			case *checkpoint != "":
				if ff.describe() != "" {
					return fmt.Errorf("%w: --checkpoint proves the whole stream: give no --agent, --session, --run or --since with it", cli.ErrUsage)
				}
				if *cpKey == "" {
					return fmt.Errorf("%w: --checkpoint needs --checkpoint-key (the log's verifier key)", cli.ErrUsage)
				}
				logKey, err := tlog.ParseVerifier(*cpKey)
				if err != nil {
					return fmt.Errorf("%w: --checkpoint-key: %v", cli.ErrUsage, err)
				}
				cp, err := checkpointArg(*checkpoint)
				if err != nil {
					return err
				}
				stream = &tlogbus.VerifyConfig{LogKey: logKey, Witnesses: wkeys.list, Checkpoint: cp, AllowMissingPayloads: *allowMissing, MaxLag: *maxLag}
			case *cpKey != "" || len(wkeys.list) > 0 || *allowMissing || *maxLag != 0:
				return fmt.Errorf("%w: --checkpoint-key, --witness-key, --allow-missing-payloads and --max-lag go with --checkpoint", cli.ErrUsage)
			}
			v := &audit.Verifier{Trust: trust, RequireSigned: *requireSigned}
			prefix := ff.runPrefix()
			var sv *tlog.StreamVerdict
			if err := d.scanThen(ctx, filter, stderr, func(e *events.Event) {
				if prefix == "" || strings.HasPrefix(e.RunID, prefix) {
					v.Add(e)
				}
			}, func(ctx context.Context, c *cli.Conn) error {
				if stream == nil {
					return nil
				}
				p := &progress{w: stderr, live: isTerminal(os.Stderr), last: lastSeq(ctx, c.Bus)}
				stream.Progress = p.saw
				var err error
				sv, err = tlogbus.VerifyStream(ctx, c.Bus, *stream)
				if err == nil && p.drawn {
					fmt.Fprint(stderr, "\r\033[K")
				}
				if err == nil && sv.TrustsServer {
					fmt.Fprintln(stderr, "warning: no --witness-key and no saved checkpoint: this trusts the server. It proves the stream is the log its checkpoints stream holds now, which whoever runs the server could have replaced along with the stream; give --witness-key, or --checkpoint FILE (a checkpoint kept outside the server: the checkpointer's --state file, a witness' state)")
				}
				return err
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
			if d.asJSON() {
				if err := writeJSONLines(stdout, shown); err != nil {
					return err
				}
			} else {
				for _, vd := range shown {
					printVerdict(stdout, vd)
				}
			}
			fmt.Fprintf(stderr, "%d runs verified: %d intact, %d failed\n", len(verdicts), len(verdicts)-failed, failed)
			if sv != nil {
				if d.asJSON() {
					if err := writeJSONLines(stdout, []any{map[string]any{"stream": sv}}); err != nil {
						return err
					}
				} else {
					printStreamVerdict(stdout, sv)
				}
			}
			if len(verdicts) == 0 {
				if d := ff.describe(); d != "" {
					return fmt.Errorf("no events match %s", d)
				}
			}
			switch {
			case failed > 0 && sv != nil && !sv.OK():
				return fmt.Errorf("%d of %d runs failed verification, and the stream does not match its checkpoints", failed, len(verdicts))
			case failed > 0:
				return fmt.Errorf("%d of %d runs failed verification", failed, len(verdicts))
			case sv != nil && !sv.OK():
				return errors.New("the stream does not match its checkpoints")
			}
			return nil
		}
	})
}

// printStreamVerdict writes the stream's verification against checkpoints.
func printStreamVerdict(w io.Writer, sv *tlog.StreamVerdict) {
	status := "ok    "
	if !sv.OK() {
		status = "FAILED"
	}
	cp := sv.Checkpoint
	var by []string
	for _, c := range sv.Cosigned {
		by = append(by, c.Name)
	}
	cosigned := ""
	if len(by) > 0 {
		cosigned = ", cosigned by " + strings.Join(by, ", ")
	}
	fmt.Fprintf(w, "%s  stream %s: checkpoint of size %d, root %s%s\n", status, cp.Origin, cp.Size, cp.Root, cosigned)
	proven := "the stream as read does not produce its root"
	if sv.Proven {
		proven = "the stream as read produces its root"
	}
	fmt.Fprintf(w, "        %s; %d messages read, %d compared with their checkpointed leaves; %d of %d stored checkpoints proven", proven, sv.Messages, sv.Compared, sv.ProvenStored, sv.Stored)
	if sv.Begin > 0 {
		fmt.Fprintf(w, " (the first %d leaves from a stored compact range)", sv.Begin)
	}
	fmt.Fprintln(w)
	for _, f := range sv.Findings {
		note := ""
		if !f.Fails {
			note = "note: "
		}
		at := ""
		if s := f.Seqs(); s != "" {
			at = " " + s
		}
		fmt.Fprintf(w, "        %s%-14s%s: %s\n", note, f.Kind, at, f.Detail)
	}
}

func printVerdict(w io.Writer, vd *audit.RunVerdict) {
	status := "ok    "
	if !vd.OK() {
		status = "FAILED"
	}
	var state string
	switch {
	case vd.Signer != "" && vd.Has(audit.ProblemUnknownSigner) && vd.OK():
		state = "signed by " + vd.Signer + " (a key not given with --public-key)"
	case vd.Signer != "":
		state = "signed by " + vd.Signer
	case vd.Ended:
		state = "unsigned"
	default:
		state = "no end yet (running, waiting or cut off)"
	}
	fmt.Fprintf(w, "%s  run %s  %s/%s  %d events, %s\n", status, vd.RunID, vd.AgentID, vd.SessionID, vd.Events, state)
	for _, p := range vd.Problems {
		if !p.Fails && said(p.Kind) {
			continue
		}
		at := ""
		if p.Seq > 0 {
			at = fmt.Sprintf(" #%03d", p.Seq)
		}
		id := ""
		if p.EventID != "" {
			id = " (event " + p.EventID + ")"
		}
		note := ""
		if !p.Fails {
			note = "note: "
		}
		fmt.Fprintf(w, "        %s%-14s%s%s: %s\n", note, p.Kind, at, id, p.Detail)
	}
}

// said reports whether a problem of kind that does not fail the run is
// said by the run's line already.
func said(kind string) bool {
	return kind == audit.ProblemUnsigned || kind == audit.ProblemNoEnd || kind == audit.ProblemUnknownSigner
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
