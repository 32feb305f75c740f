package tlogbus_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookbus/hookbus/audit"
	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/scripted"
	"github.com/hookbus/hookbus/loop/tools"
	"github.com/hookbus/hookbus/tlog"
	"github.com/hookbus/hookbus/tlog/tlogbus"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
	tnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"
)

const logName = "test.example/hookbus"

// logKey is a log's signer and verifier.
type logKey struct {
	signer   note.Signer
	verifier note.Verifier
}

func newLogKey(t testing.TB, name string) logKey {
	t.Helper()
	skey, _, err := tlog.GenerateKey(name)
	if err != nil {
		t.Fatal(err)
	}
	s, v, err := tnote.NewEd25519SignerVerifier(skey)
	if err != nil {
		t.Fatal(err)
	}
	return logKey{s, v}
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// runs records n runs of the demo agent in session s, each signed by kp,
// and returns their ids.
func runs(t testing.TB, b *bus.Bus, kp nkeys.KeyPair, session string, n int) []string {
	t.Helper()
	eng, err := loop.New(loop.Config{
		Emitter: b, History: b, Model: scripted.New(scripted.Demo()), Tools: tools.Builtin(t.TempDir()), Signer: kp,
	})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for range n {
		req := &events.RunRequest{RunID: events.NewID(), AgentID: "demo", SessionID: session, Prompt: "What time is it, and what is 6*7?"}
		res, err := eng.Run(testCtx(t), req)
		if err != nil || res.Reason != events.ReasonDone {
			t.Fatalf("run: %+v, %v", res, err)
		}
		ids = append(ids, req.RunID)
	}
	return ids
}

func signingKey(t testing.TB) nkeys.KeyPair {
	kp, err := nkeys.CreateAccount()
	if err != nil {
		t.Fatal(err)
	}
	return kp
}

// running is a checkpointer running in the background.
type running struct {
	c    *tlogbus.Checkpointer
	stop context.CancelFunc
	done chan error
}

func startCheckpointer(t testing.TB, b *bus.Bus, cfg tlogbus.CheckpointerConfig) *running {
	t.Helper()
	if cfg.Interval == 0 {
		cfg.Interval = 50 * time.Millisecond
	}
	c, err := tlogbus.NewCheckpointer(b, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{c: c, stop: cancel, done: make(chan error, 1)}
	go func() { r.done <- c.Run(ctx) }()
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { cancel(); <-r.done }) })
	return r
}

// halt stops the checkpointer (it stores what it read) and returns Run's
// error.
func (r *running) halt(t testing.TB) error {
	t.Helper()
	r.stop()
	select {
	case err := <-r.done:
		r.done <- err // for the cleanup
		return err
	case <-time.After(time.Minute):
		t.Fatal("the checkpointer did not stop")
		return nil
	}
}

// caughtUp waits until the checkpointer's last checkpoint covers the
// events stream's last sequence.
func (r *running) caughtUp(t testing.TB, b *bus.Bus) {
	t.Helper()
	bustest.Eventuallyf(t, time.Minute, func() bool {
		st, err := b.EventsState(context.Background())
		return err == nil && r.c.Status().Size >= st.LastSeq
	}, "the checkpointer did not catch up: %+v", r.c.Status())
}

// checkpointAll runs a checkpointer until it covers the stream, then stops
// it.
func checkpointAll(t testing.TB, b *bus.Bus, cfg tlogbus.CheckpointerConfig) {
	t.Helper()
	r := startCheckpointer(t, b, cfg)
	r.caughtUp(t, b)
	if err := r.halt(t); err != nil {
		t.Fatalf("checkpointer: %v", err)
	}
}

func verifyStream(t testing.TB, b *bus.Bus, key logKey, cfg tlogbus.VerifyConfig) *tlog.StreamVerdict {
	t.Helper()
	cfg.LogKey = key.verifier
	v, err := tlogbus.VerifyStream(testCtx(t), b, cfg)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	// Proving against the server's latest alone says it trusts the
	// server; the tests' assertions are about the other findings.
	trusts := cfg.Checkpoint == nil && len(cfg.Witnesses) == 0
	if v.TrustsServer != trusts || v.Has(tlog.FindTrustsServer) != trusts {
		t.Fatalf("trusts the server: %v, want %v:\n%s", v.TrustsServer, trusts, explain(v))
	}
	v.Findings = slices.DeleteFunc(v.Findings, func(f tlog.Finding) bool { return f.Kind == tlog.FindTrustsServer })
	return v
}

func explain(v *tlog.StreamVerdict) string {
	var b strings.Builder
	fmt.Fprintf(&b, "proven %v, intact %v, %d messages, %d compared, begin %d\n", v.Proven, v.Intact, v.Messages, v.Compared, v.Begin)
	for _, f := range v.Findings {
		fmt.Fprintf(&b, "  %s %s fails=%v: %s\n", f.Kind, f.Seqs(), f.Fails, f.Detail)
	}
	return b.String()
}

// stored is one message of a stream, as read raw.
type stored struct {
	seq uint64
	msg *nats.Msg
}

// rawMessages reads every message of a stream.
func rawMessages(t testing.TB, js jetstream.JetStream, stream string) []stored {
	t.Helper()
	ctx := testCtx(t)
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []stored
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, stored{seq: seq, msg: &nats.Msg{Subject: m.Subject, Header: m.Header, Data: m.Data}})
	}
	return out
}

// copyInto publishes msgs, each changed by edit (nil: dropped), into b's
// stream, as someone with a copy of the store could.
func copyInto(t testing.TB, b *bus.Bus, msgs []stored, edit func(stored) *nats.Msg) {
	t.Helper()
	for _, m := range msgs {
		out := m.msg
		if edit != nil {
			out = edit(m)
		}
		if out == nil {
			continue
		}
		h := nats.Header{}
		for k, v := range out.Header {
			if !strings.HasPrefix(k, "Nats-") {
				h[k] = v
			}
		}
		if _, err := b.JetStream().PublishMsg(testCtx(t), &nats.Msg{Subject: out.Subject, Header: h, Data: out.Data}); err != nil {
			t.Fatal(err)
		}
	}
}

// verifyRuns is the per-run verification (observer verify without
// checkpoints), trusting kp.
func verifyRuns(t testing.TB, b *bus.Bus, kp nkeys.KeyPair) []*audit.RunVerdict {
	t.Helper()
	pub, _ := kp.PublicKey()
	v := &audit.Verifier{Trust: map[string]bool{pub: true}, RequireSigned: true}
	if _, err := b.Replay(testCtx(t), bus.Filter{}, func(e *events.Event) error { v.Add(e); return nil }); err != nil {
		t.Fatal(err)
	}
	return v.Verdicts()
}

// seqsOf returns the stream sequences of run's events, in order.
func seqsOf(t testing.TB, b *bus.Bus, run string) []uint64 {
	t.Helper()
	var out []uint64
	if _, err := b.Replay(testCtx(t), bus.Filter{Run: run}, func(e *events.Event) error { out = append(out, e.Stored); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}
