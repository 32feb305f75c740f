package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/hookbus/hookbus/audit"
	"github.com/hookbus/hookbus/bus"
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
	return cli.NoArgsCommand("verify [flags]", "Check runs' hash chains and signed ends (and, with --checkpoint, the whole stream)", `Recomputes every run's hash chain and checks its signed end: per run, ok, or which
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
		var f verifyFlags
		f.register(fs)
		return func(ctx context.Context, _ []string) error {
			filter, v, stream, err := f.check()
			if err != nil {
				return err
			}
			prefix := f.runs.runPrefix()
			var sv *tlog.StreamVerdict
			if err := d.scanThen(ctx, filter, stderr, func(e *events.Event) {
				if prefix == "" || strings.HasPrefix(e.RunID, prefix) {
					v.Add(e)
				}
			}, func(ctx context.Context, c *cli.Conn) (err error) {
				if stream != nil {
					sv, err = verifyStream(ctx, c, stderr, stream)
				}
				return err
			}); err != nil {
				return err
			}
			verdicts := v.Verdicts()
			failed, err := printVerdicts(stdout, stderr, d.out.JSON(), f.quiet, verdicts, sv)
			if err != nil {
				return err
			}
			if len(verdicts) == 0 {
				if d := f.runs.describe(); d != "" {
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

// verifyFlags are observer verify's own flags.
type verifyFlags struct {
	runs                            filterFlags
	keys                            []string
	checkpoint, cpKey               string
	witnesses                       verifiersFlag
	quiet, allowMissing, requireSig bool
	maxLag                          time.Duration
}

func (f *verifyFlags) register(fs *pflag.FlagSet) {
	f.runs.register(fs)
	fs.Func("public-key", "a trusted signing `KEY`: the public nkey (printed by \"loop keygen\") or a file holding it; repeatable", func(v string) error {
		f.keys = append(f.keys, v)
		return nil
	})
	fs.StringVar(&f.checkpoint, "checkpoint", "", "also prove the whole stream against a checkpoint: latest (the latest stored, cosigned by every --witness-key) or a file holding one (observer checkpoint --note, a witness' state); needs --checkpoint-key")
	fs.StringVar(&f.cpKey, "checkpoint-key", "", "the log's verifier key (the checkpointer's), or a file holding it")
	f.witnesses = verifiersFlag{witness: true}
	fs.Var(&f.witnesses, "witness-key", "with --checkpoint: a witness whose cosignature the checkpoint must carry (its verifier key, or a file); repeatable")
	fs.BoolVarP(&f.quiet, "quiet", "q", false, "print only the runs that fail")
	fs.BoolVar(&f.allowMissing, "allow-missing-payloads", false, "with --checkpoint: accept claim-checked events whose large payload is gone from the payloads store (a note instead of a failure); by default verification fails, since what they recorded cannot be read")
	fs.DurationVar(&f.maxLag, "max-lag", 0, "with --checkpoint: fail when the oldest message no checkpoint covers was stored longer ago than this (the checkpointer stopped, paused or behind); without it the note says how far the checkpoints lag")
	fs.BoolVar(&f.requireSig, "require-signed", false, "fail every run whose end is not signed (by a key given with --public-key, when any is given); by default an unsigned run whose record is intact passes")
}

// check reads the flags into the events to read, the runs' verifier, and
// the stream's verification (nil without --checkpoint). A bad flag is a
// usage error.
func (f *verifyFlags) check() (bus.Filter, *audit.Verifier, *tlogbus.VerifyConfig, error) {
	if f.runs.stage != "" {
		return bus.Filter{}, nil, nil, fmt.Errorf("%w: --stage: a chain is verified whole", cli.ErrUsage)
	}
	filter, err := f.runs.filter()
	if err != nil {
		return bus.Filter{}, nil, nil, err
	}
	trust, err := trustedKeys(f.keys)
	if err != nil {
		return bus.Filter{}, nil, nil, err
	}
	v := &audit.Verifier{Trust: trust, RequireSigned: f.requireSig}
	if f.checkpoint == "" {
		if f.cpKey != "" || len(f.witnesses.list) > 0 || f.allowMissing || f.maxLag != 0 {
			return bus.Filter{}, nil, nil, fmt.Errorf("%w: --checkpoint-key, --witness-key, --allow-missing-payloads and --max-lag go with --checkpoint", cli.ErrUsage)
		}
		return filter, v, nil, nil
	}
	if f.runs.describe() != "" {
		return bus.Filter{}, nil, nil, fmt.Errorf("%w: --checkpoint proves the whole stream: give no --agent, --session, --run or --since with it", cli.ErrUsage)
	}
	if f.cpKey == "" {
		return bus.Filter{}, nil, nil, fmt.Errorf("%w: --checkpoint needs --checkpoint-key (the log's verifier key)", cli.ErrUsage)
	}
	logKey, err := tlog.ParseVerifier(f.cpKey)
	if err != nil {
		return bus.Filter{}, nil, nil, fmt.Errorf("%w: --checkpoint-key: %v", cli.ErrUsage, err)
	}
	cp, err := checkpointArg(f.checkpoint)
	if err != nil {
		return bus.Filter{}, nil, nil, err
	}
	return filter, v, &tlogbus.VerifyConfig{LogKey: logKey, Witnesses: f.witnesses.list, Checkpoint: cp, AllowMissingPayloads: f.allowMissing, MaxLag: f.maxLag}, nil
}

// verifyStream proves the whole stream against its checkpoints, showing
// its progress on stderr, and warns when nothing but the server vouches
// for them.
func verifyStream(ctx context.Context, c *cli.Conn, stderr io.Writer, cfg *tlogbus.VerifyConfig) (*tlog.StreamVerdict, error) {
	p := &progress{w: stderr, live: isTerminal(os.Stderr), last: lastSeq(ctx, c.Bus)}
	cfg.Progress = p.saw
	sv, err := tlogbus.VerifyStream(ctx, c.Bus, *cfg)
	if err != nil {
		return nil, err
	}
	if p.drawn {
		fmt.Fprint(stderr, "\r\033[K")
	}
	if sv.TrustsServer {
		fmt.Fprintln(stderr, "warning: no --witness-key and no saved checkpoint: this trusts the server. It proves the stream is the log its checkpoints stream holds now, which whoever runs the server could have replaced along with the stream; give --witness-key, or --checkpoint FILE (a checkpoint kept outside the server: the checkpointer's --state file, a witness' state)")
	}
	return sv, nil
}

// printVerdicts writes the runs' verdicts (only the failed ones when
// quiet) and the stream's (when sv is not nil), as text or JSON lines, and
// the count on stderr; it returns how many runs failed.
func printVerdicts(stdout, stderr io.Writer, asJSON, quiet bool, verdicts []*audit.RunVerdict, sv *tlog.StreamVerdict) (int, error) {
	failed, shown := 0, verdicts[:0:0]
	for _, vd := range verdicts {
		if !vd.OK() {
			failed++
		}
		if !quiet || !vd.OK() {
			shown = append(shown, vd)
		}
	}
	if asJSON {
		if err := writeJSONLines(stdout, shown); err != nil {
			return failed, err
		}
	} else {
		for _, vd := range shown {
			printVerdict(stdout, vd)
		}
	}
	fmt.Fprintf(stderr, "%d runs verified: %d intact, %d failed\n", len(verdicts), len(verdicts)-failed, failed)
	switch {
	case sv != nil && asJSON:
		return failed, writeJSONLines(stdout, []any{map[string]any{"stream": sv}})
	case sv != nil:
		printStreamVerdict(stdout, sv)
	}
	return failed, nil
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
