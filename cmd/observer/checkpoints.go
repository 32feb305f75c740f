package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/cmd/internal/cli"
	"github.com/hookbus/hookbus/cmd/internal/health"
	"github.com/hookbus/hookbus/tlog"
	"github.com/hookbus/hookbus/tlog/tlogbus"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/mod/sumdb/note"
)

// keygenCmd writes a signed-note key: a checkpointer's (its name is the
// log's origin) or a witness'.
func keygenCmd(a *cli.App) *cobra.Command {
	return cli.NoArgsCommand("keygen --name NAME --out FILE", "Write a checkpointer's or a witness' key", `Writes a new Ed25519 signed-note key (golang.org/x/mod/sumdb/note, the format of Go's
checksum database) for a checkpointer (observer checkpointer --key FILE) or a witness
(observer witness --key FILE), and prints its verifier key, which auditors give to
observer verify --checkpoint-key or --witness-key. An existing FILE is not overwritten.`, func(fs *pflag.FlagSet) cli.Run {
		stdout := a.Out
		name := fs.String("name", "", "the key's name: a checkpointer's is its log's origin (e.g. example.com/hookbus), a witness' names the witness (e.g. witness.example.com/w1); no spaces, no '+' (required)")
		out := fs.String("out", "", "the file to write the signer key to, readable by its owner only (required; FILE.pub gets the verifier key)")
		return func(ctx context.Context, _ []string) error {
			if *name == "" || *out == "" {
				return fmt.Errorf("%w: give --name and --out", cli.ErrUsage)
			}
			skey, vkey, err := tlog.GenerateKey(*name)
			if err != nil {
				return fmt.Errorf("%w: %v", cli.ErrUsage, err)
			}
			f, err := os.OpenFile(*out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if err != nil {
				if errors.Is(err, os.ErrExist) {
					return fmt.Errorf("%w: %s exists: it is not overwritten (remove it first, or give another --out)", cli.ErrUsage, *out)
				}
				return err
			}
			if _, err := fmt.Fprintln(f, skey); err != nil {
				f.Close()
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
			if err := os.WriteFile(*out+".pub", []byte(vkey+"\n"), 0o644); err != nil {
				return err
			}
			fmt.Fprintln(stdout, vkey)
			return nil
		}
	})
}

// witnessFlag is --witness NAME=VKEY, repeatable.
type witnessFlag []tlogbus.WitnessRef

func (w *witnessFlag) String() string { return "" }

// Type names the flag's value in the help.
func (w *witnessFlag) Type() string { return "NAME=KEY" }

func (w *witnessFlag) Set(v string) error {
	name, key, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return fmt.Errorf("want NAME=KEY (the witness' subject name, its verifier key or a file holding it)")
	}
	k, err := tlog.ParseWitnessVerifier(key)
	if err != nil {
		return err
	}
	*w = append(*w, tlogbus.WitnessRef{Name: name, Key: k})
	return nil
}

// verifiersFlag is a repeatable flag of verifier keys (the key, or a file
// holding it).
type verifiersFlag struct {
	list    []note.Verifier
	witness bool
}

func (f *verifiersFlag) String() string { return "" }

// Type names the flag's value in the help.
func (f *verifiersFlag) Type() string { return "KEY" }

func (f *verifiersFlag) Set(v string) error {
	parse := tlog.ParseVerifier
	if f.witness {
		parse = tlog.ParseWitnessVerifier
	}
	k, err := parse(v)
	if err != nil {
		return err
	}
	f.list = append(f.list, k)
	return nil
}

// checkpointerCmd runs the checkpointer of the events stream.
func checkpointerCmd(a *cli.App) *cobra.Command {
	return cli.NoArgsCommand("checkpointer --key FILE [flags]", "Sign checkpoints of the events stream as it grows", `Reads every message of the events stream, in order, and stores a signed checkpoint of
the stream's Merkle tree (C2SP tlog-checkpoint) in HOOKBUS_CHECKPOINTS every --every messages or
--interval, each cosigned by the --witness given that agrees it extends the last one it
cosigned. Runs until interrupted (then checkpoints what it read). A restart goes on
from the last checkpoint stored: nothing is lost. One checkpointer per log.

It saves each checkpoint it stores in --state, a file on its own disk, outside the
streams: at start it refuses to go on when HOOKBUS_CHECKPOINTS no longer holds that log
(its checkpoints deleted, or a latest that does not extend the saved one) unless
--new-log REASON says to start a new log, which the new log's first checkpoint records.`, func(fs *pflag.FlagSet) cli.Run {
		stderr := a.Err
		conn := cli.ConnFlags{App: a, StoreFallback: true, Await: true}
		conn.Register(fs)
		keyFile := fs.String("key", "", "the log's signer key file (observer keygen); its name is the checkpoints' origin (required)")
		every := fs.Int("every", tlogbus.DefaultEvery, fmt.Sprintf("store a checkpoint after this many new messages (at most %d)", tlog.MaxWindow))
		interval := fs.Duration("interval", tlogbus.DefaultInterval, "and at least this often while there are new messages")
		var witnesses witnessFlag
		fs.Var(&witnesses, "witness", "a witness to cosign each checkpoint: NAME=KEY, its subject name (observer witness --name) and its verifier key or a file holding it; repeatable")
		durable := fs.String("durable", tlogbus.DefaultDurable, "the name of the checkpointer's durable consumer of the events stream")
		maxLag := fs.Duration("max-lag", 0, fmt.Sprintf("not ready (/readyz) when a message has waited longer than this for a checkpoint to cover it, or the durable consumer is paused or gone (default %s, or four --interval when longer)", tlogbus.DefaultMaxLag))
		once := fs.Bool("once", false, "checkpoint what the stream holds now, then exit (an offline --store, a catch-up)")
		state := fs.String("state", "", "the file where it saves its last checkpoint, on its own disk (default: in --store DIR, else under $XDG_STATE_HOME/hookbus/checkpointer or ~/.local/state/hookbus/checkpointer, named after the log's key)")
		newLog := fs.String("new-log", "", "start a new log where HOOKBUS_CHECKPOINTS holds no checkpoint although --state holds one: the reason, recorded in the new log's first checkpoint")
		var admin cli.AdminFlags
		admin.Register(fs, "127.0.0.1:9466", 0, "")
		return func(ctx context.Context, _ []string) error {
			signer, verifier, statePath, err := checkpointerKey(*keyFile, *state, conn.Store)
			if err != nil {
				return err
			}
			log := a.Log.Logger(stderr)
			c, gctx, release, err := conn.OpenGuarded(ctx, "hookbus-checkpointer", log, cli.ProvisionStore)
			if err != nil {
				return err
			}
			defer release()
			if c.Embedded != nil { // a store: make what an older hookbus did not (the checkpoints stream)
				if err := c.Bus.Provision(gctx); err != nil {
					return c.Explain(err)
				}
			}
			cfg := tlogbus.CheckpointerConfig{
				Signer: signer, Verifier: verifier, Every: *every, Interval: *interval, Witnesses: witnesses, Durable: *durable, Logger: log,
				State: statePath, NewLog: *newLog,
			}
			first, err := tlogbus.NewCheckpointer(c.Bus, cfg)
			if err != nil {
				return fmt.Errorf("%w: %v", cli.ErrUsage, err)
			}
			var cp atomic.Pointer[tlogbus.Checkpointer]
			cp.Store(first)
			runCtx, cancel := context.WithCancel(gctx)
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- keepCheckpointing(runCtx, c, &cp, cfg) }()
			h := health.New()
			c.HealthChecks(h)
			h.Add("checkpointing", func(ctx context.Context) error { return cp.Load().Ready(ctx, *maxLag) })
			adm, err := admin.Serve("observer checkpointer", log, nil, h)
			if err != nil {
				cancel()
				<-done
				return err
			}
			defer adm.Stop()
			adm.Say(&a.Log, stderr)
			a.Log.Say(stderr, "checkpointing %s on %s as %s (every %d messages or %s), saving its last checkpoint in %s", c.Bus.Names().Events, c.Where, signer.Name(), *every, *interval, statePath)
			if *once {
				if ended, err := catchUp(gctx, c, &cp, done); ended {
					return c.Explain(err)
				}
				cancel()
			}
			err = <-done
			s := cp.Load().Status()
			a.Log.Say(stderr, "checkpointed %d messages (%d checkpoints stored now)", s.Size, s.Checkpoints)
			return c.Explain(err)
		}
	})
}

// checkpointerKey reads the log's signer key from keyFile (required) and
// says where its state file is (checkpointerState).
func checkpointerKey(keyFile, state, store string) (note.Signer, note.Verifier, string, error) {
	if keyFile == "" {
		return nil, nil, "", fmt.Errorf("%w: --key FILE is required (observer keygen --name ORIGIN --out FILE makes one)", cli.ErrUsage)
	}
	signer, verifier, err := tlog.ReadSigner(keyFile)
	if err != nil {
		return nil, nil, "", fmt.Errorf("%w: --key: %v", cli.ErrUsage, err)
	}
	statePath, err := checkpointerState(state, store, verifier)
	return signer, verifier, statePath, err
}

// catchUp waits until the checkpointer has read what the events stream
// holds now, or ctx ends. It reports ended, with the error to return, when
// the stream's state cannot be read or the checkpointer ended first (done).
func catchUp(ctx context.Context, c *cli.Conn, cp *atomic.Pointer[tlogbus.Checkpointer], done <-chan error) (ended bool, err error) {
	st, err := c.Bus.EventsState(ctx)
	if err != nil {
		return true, err
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for cp.Load().Status().Read < st.LastSeq {
		select {
		case err := <-done:
			return true, err
		case <-tick.C:
		case <-ctx.Done():
			return false, nil
		}
	}
	return false, nil
}

// checkpointerState is the checkpointer's state file: the one given, else
// one named after the log's key in the store directory given, else under
// the user's state directory.
func checkpointerState(given, store string, key note.Verifier) (string, error) {
	if given != "" {
		return given, nil
	}
	name := fmt.Sprintf("%s-%08x.checkpoint", strings.NewReplacer("/", "_", string(os.PathSeparator), "_").Replace(key.Name()), key.KeyHash())
	if store != "" {
		return filepath.Join(store, "checkpointer", name), nil
	}
	dir := os.Getenv("XDG_STATE_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("%w: --state: no home directory to keep the checkpointer's state in (%v): give --state FILE", cli.ErrUsage, err)
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "hookbus", "checkpointer", name), nil
}

// checkpointLine is one stored checkpoint as observer checkpoint shows it.
type checkpointLine struct {
	tlog.Checkpoint
	Record   uint64             `json:"record"`
	PrevSize uint64             `json:"prev_size"`
	Created  time.Time          `json:"created"`
	Signers  []string           `json:"signers"`
	Verified bool               `json:"verified"`
	Cosigned []tlog.Cosignature `json:"cosigned,omitempty"`
	Note     string             `json:"note"`
	NewLog   *tlog.LogStart     `json:"new_log,omitempty"`
}

// checkpointCmd prints the latest stored checkpoint, or all of them.
func checkpointCmd(a *cli.App) *cobra.Command {
	return cli.NoArgsCommand("checkpoint [flags]", "Print the stored checkpoints of the stream", `Prints the latest checkpoint stored in HOOKBUS_CHECKPOINTS (--all: every one): its origin,
tree size and root hash, who signed and cosigned it. Without --key the signatures are
not checked (the lines say so).`, func(fs *pflag.FlagSet) cli.Run {
		stdout, stderr := a.Out, a.Err
		var d deskFlags
		d.register(a, fs, "one JSON object per checkpoint", cli.OutputText, cli.OutputJSON)
		all := fs.Bool("all", false, "list every stored checkpoint, oldest first")
		noteOnly := fs.Bool("note", false, "print only the latest checkpoint's signed note (a file for observer verify --checkpoint)")
		key := fs.String("key", "", "the log's verifier key (or a file holding it): check the signatures")
		wkeys := verifiersFlag{witness: true}
		fs.Var(&wkeys, "witness-key", "a witness' verifier key (or a file holding it): check its cosignatures; repeatable")
		return func(ctx context.Context, _ []string) error {
			var logKey note.Verifier
			if *key != "" {
				var err error
				if logKey, err = tlog.ParseVerifier(*key); err != nil {
					return fmt.Errorf("%w: --key: %v", cli.ErrUsage, err)
				}
			}
			c, gctx, release, err := d.conn.OpenGuarded(ctx, "hookbus-observer", d.logger(stderr), cli.ReadOnly)
			if err != nil {
				return err
			}
			defer release()
			var recs []tlogbus.StoredRecord
			if *all {
				recs, err = tlogbus.ReadRecords(gctx, c.Bus)
			} else {
				var last *tlogbus.StoredRecord
				if last, err = tlogbus.LastRecord(gctx, c.Bus); last != nil {
					recs = append(recs, *last)
				}
			}
			if err != nil {
				return c.Explain(err)
			}
			if len(recs) == 0 {
				return fmt.Errorf("%w: %s holds no checkpoint (is a checkpointer running? observer checkpointer --key FILE)", tlogbus.ErrNoCheckpoints, c.Bus.Names().Checkpoints)
			}
			var lines []checkpointLine
			for _, r := range recs {
				l, err := readLine(r, logKey, wkeys.list)
				if err != nil {
					return err
				}
				lines = append(lines, l)
			}
			switch {
			case *noteOnly:
				_, err := io.WriteString(stdout, lines[len(lines)-1].Note)
				return err
			case d.out.JSON():
				return writeJSONLines(stdout, lines)
			}
			for _, l := range lines {
				status := "signatures not checked (give --key)"
				if l.Verified {
					status = "signed by " + l.Origin
					for _, c := range l.Cosigned {
						status += ", cosigned by " + c.Name + " at " + c.Time.Local().Format(time.DateTime)
					}
				} else if len(l.Signers) > 0 {
					status += ": lines by " + strings.Join(l.Signers, ", ")
				}
				fmt.Fprintf(stdout, "%s  size %-8d root %s  %s\n", when(l.Created), l.Size, l.Root, status)
				if l.NewLog != nil {
					fmt.Fprintf(stdout, "    a new log over a previous one, by the operator's decision: %q\n", l.NewLog.Reason)
				}
			}
			if !*all {
				fmt.Fprintf(stdout, "\n%s", lines[0].Note)
			}
			return nil
		}
	})
}

func readLine(r tlogbus.StoredRecord, logKey note.Verifier, witnesses []note.Verifier) (checkpointLine, error) {
	var rec tlog.Record
	if err := json.Unmarshal(r.Data, &rec); err != nil {
		return checkpointLine{}, fmt.Errorf("checkpoint record %d: %w: %v", r.Seq, tlog.ErrMalformed, err)
	}
	l := checkpointLine{Record: r.Seq, PrevSize: rec.PrevSize, Created: rec.Created, Note: rec.Checkpoint, NewLog: rec.NewLog}
	cp, signers, err := tlog.PeekCheckpoint([]byte(rec.Checkpoint))
	if err != nil {
		return l, fmt.Errorf("checkpoint record %d: %w", r.Seq, err)
	}
	l.Checkpoint, l.Signers = cp, signers
	if logKey != nil {
		s, err := tlog.ParseRecord(r.Data, logKey, witnesses...)
		if err != nil {
			return l, fmt.Errorf("checkpoint record %d: %w", r.Seq, err)
		}
		l.Verified, l.Cosigned = true, s.Cosigned
	}
	return l, nil
}

// keepCheckpointing runs the checkpointer in cp until ctx ends or it fails
// for a reason other than JetStream being unavailable. When JetStream is
// unavailable (an election, a node away), it waits until JetStream answers
// (Conn.Await, saying so) and starts a new checkpointer, which goes on from
// the last checkpoint stored.
func keepCheckpointing(ctx context.Context, c *cli.Conn, cp *atomic.Pointer[tlogbus.Checkpointer], cfg tlogbus.CheckpointerConfig) error {
	for {
		err := cp.Load().Run(ctx)
		if err == nil || ctx.Err() != nil || !bus.Unavailable(err) {
			return err
		}
		cfg.Logger.Warn("observer checkpointer: JetStream unavailable: the checkpointer starts again, from the last checkpoint stored, once it answers", "err", err)
		t := time.NewTimer(time.Second)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		if werr := c.Await(ctx, "checkpoint", func(ctx context.Context) error {
			_, err := c.Bus.EventsState(ctx)
			return err
		}); werr != nil {
			return werr
		}
		next, nerr := tlogbus.NewCheckpointer(c.Bus, cfg)
		if nerr != nil {
			return nerr
		}
		cp.Store(next)
	}
}
