package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/hookbus/hookbus/internal/cli"
	"github.com/hookbus/hookbus/tlog"
	"github.com/hookbus/hookbus/tlog/tlogbus"
	"golang.org/x/mod/sumdb/note"
)

// cmdKeygen writes a signed-note key: a checkpointer's (its name is the
// log's origin) or a witness'.
func cmdKeygen(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("observer keygen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("name", "", "the key's name: a checkpointer's is its log's origin (e.g. example.com/hookbus), a witness' names the witness (e.g. witness.example.com/w1); no spaces, no '+' (required)")
	out := fs.String("out", "", "the file to write the signer key to, readable by its owner only (required; FILE.pub gets the verifier key)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: observer keygen --name NAME --out FILE\n\nWrites a new Ed25519 signed-note key (golang.org/x/mod/sumdb/note, the format of Go's\nchecksum database) for a checkpointer (observer checkpointer --key FILE) or a witness\n(observer witness --key FILE), and prints its verifier key, which auditors give to\nobserver verify --checkpoint-key or --witness-key. An existing FILE is not overwritten.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if err := cli.NoArgs(fs); err != nil {
		return err
	}
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

// witnessFlag is --witness NAME=VKEY, repeatable.
type witnessFlag []tlogbus.WitnessRef

func (w *witnessFlag) String() string { return "" }

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

// cmdCheckpointer runs the checkpointer of the events stream.
func cmdCheckpointer(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("observer checkpointer", flag.ContinueOnError)
	fs.SetOutput(stderr)
	conn := cli.ConnFlags{StoreFallback: true}
	conn.Register(fs)
	keyFile := fs.String("key", "", "the log's signer key file (observer keygen); its name is the checkpoints' origin (required)")
	every := fs.Int("every", tlogbus.DefaultEvery, fmt.Sprintf("store a checkpoint after this many new messages (at most %d)", tlog.MaxWindow))
	interval := fs.Duration("interval", tlogbus.DefaultInterval, "and at least this often while there are new messages")
	var witnesses witnessFlag
	fs.Var(&witnesses, "witness", "a witness to cosign each checkpoint: NAME=KEY, its subject name (observer witness --name) and its verifier key or a file holding it; repeatable")
	durable := fs.String("durable", tlogbus.DefaultDurable, "the name of the checkpointer's durable consumer of the events stream")
	once := fs.Bool("once", false, "checkpoint what the stream holds now, then exit (an offline --store, a catch-up)")
	verbose := fs.Bool("v", false, cli.VerboseHelp)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: observer checkpointer --key FILE [flags]\n\nReads every message of the events stream, in order, and stores a signed checkpoint of\nthe stream's Merkle tree (C2SP tlog-checkpoint) in "+"HOOKBUS_CHECKPOINTS every --every messages or\n--interval, each cosigned by the --witness given that agrees it extends the last one it\ncosigned. Runs until interrupted (then checkpoints what it read). A restart goes on\nfrom the last checkpoint stored: nothing is lost. One checkpointer per log.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if err := cli.NoArgs(fs); err != nil {
		return err
	}
	if *keyFile == "" {
		return fmt.Errorf("%w: --key FILE is required (observer keygen --name ORIGIN --out FILE makes one)", cli.ErrUsage)
	}
	signer, verifier, err := tlog.ReadSigner(*keyFile)
	if err != nil {
		return fmt.Errorf("%w: --key: %v", cli.ErrUsage, err)
	}
	log := cli.Logger(*verbose, stderr)
	c, err := conn.Open(ctx, "hookbus-checkpointer", log, cli.ProvisionStore)
	if err != nil {
		return err
	}
	defer c.Close()
	gctx, stop := c.Guard(ctx)
	defer stop()
	if c.Embedded != nil { // a store: make what an older hookbus did not (the checkpoints stream)
		if err := c.Bus.Provision(gctx); err != nil {
			return c.Explain(err)
		}
	}
	cp, err := tlogbus.NewCheckpointer(c.Bus, tlogbus.CheckpointerConfig{
		Signer: signer, Verifier: verifier, Every: *every, Interval: *interval, Witnesses: witnesses, Durable: *durable, Logger: log,
	})
	if err != nil {
		return fmt.Errorf("%w: %v", cli.ErrUsage, err)
	}
	runCtx, cancel := context.WithCancel(gctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- cp.Run(runCtx) }()
	fmt.Fprintf(stderr, "checkpointing %s on %s as %s (every %d messages or %s)\n", c.Bus.Names().Events, c.Where, signer.Name(), *every, *interval)
	if *once {
		st, err := c.Bus.EventsState(gctx)
		if err != nil {
			return c.Explain(err)
		}
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
	wait:
		for cp.Status().Read < st.LastSeq {
			select {
			case err := <-done:
				return c.Explain(err)
			case <-tick.C:
			case <-gctx.Done():
				break wait
			}
		}
		cancel()
	}
	err = <-done
	s := cp.Status()
	fmt.Fprintf(stderr, "checkpointed %d messages (%d checkpoints stored now)\n", s.Size, s.Checkpoints)
	return c.Explain(err)
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
}

// cmdCheckpoint prints the latest stored checkpoint, or all of them.
func cmdCheckpoint(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("observer checkpoint", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var d deskFlags
	d.register(fs, "one JSON object per checkpoint")
	all := fs.Bool("all", false, "list every stored checkpoint, oldest first")
	noteOnly := fs.Bool("note", false, "print only the latest checkpoint's signed note (a file for observer verify --checkpoint)")
	key := fs.String("key", "", "the log's verifier key (or a file holding it): check the signatures")
	wkeys := verifiersFlag{witness: true}
	fs.Var(&wkeys, "witness-key", "a witness' verifier key (or a file holding it): check its cosignatures; repeatable")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: observer checkpoint [flags]\n\nPrints the latest checkpoint stored in HOOKBUS_CHECKPOINTS (--all: every one): its origin,\ntree size and root hash, who signed and cosigned it. Without --key the signatures are\nnot checked (the lines say so).\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if err := cli.NoArgs(fs); err != nil {
		return err
	}
	var logKey note.Verifier
	if *key != "" {
		var err error
		if logKey, err = tlog.ParseVerifier(*key); err != nil {
			return fmt.Errorf("%w: --key: %v", cli.ErrUsage, err)
		}
	}
	c, err := d.conn.Open(ctx, "hookbus-observer", cli.Logger(d.verbose, stderr), cli.ReadOnly)
	if err != nil {
		return err
	}
	defer c.Close()
	gctx, stop := c.Guard(ctx)
	defer stop()
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
	case d.asJSON:
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
	}
	if !*all {
		fmt.Fprintf(stdout, "\n%s", lines[0].Note)
	}
	return nil
}

func readLine(r tlogbus.StoredRecord, logKey note.Verifier, witnesses []note.Verifier) (checkpointLine, error) {
	var rec tlog.Record
	if err := json.Unmarshal(r.Data, &rec); err != nil {
		return checkpointLine{}, fmt.Errorf("checkpoint record %d: %w: %v", r.Seq, tlog.ErrMalformed, err)
	}
	l := checkpointLine{Record: r.Seq, PrevSize: rec.PrevSize, Created: rec.Created, Note: rec.Checkpoint}
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
