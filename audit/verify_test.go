package audit_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/audit"
	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/looptest"
	"github.com/hookbus/hookbus/loop/scripted"
	"github.com/hookbus/hookbus/loop/tools"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
)

// signedRun runs the demo agent on a fresh bus with a signing key and
// returns the bus, its connection, the key and the run's id.
func signedRun(t *testing.T) (*bus.Bus, *nats.Conn, nkeys.KeyPair, string) {
	t.Helper()
	_, nc := bustest.Start(t)
	b := bustest.Provision(t, nc)
	kp, err := nkeys.CreateAccount()
	if err != nil {
		t.Fatal(err)
	}
	eng, err := loop.New(loop.Config{
		Emitter: b, History: b, Model: scripted.New(scripted.Demo()), Tools: tools.Builtin(t.TempDir()), Signer: kp,
	})
	if err != nil {
		t.Fatal(err)
	}
	req := &events.RunRequest{RunID: events.NewID(), AgentID: "demo", SessionID: "s1", Prompt: "What time is it, and what is 6*7?"}
	res, err := eng.Run(testCtx(t), req)
	if err != nil || res.Reason != events.ReasonDone {
		t.Fatalf("run: %+v, %v", res, err)
	}
	return b, nc, kp, req.RunID
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// verify reads the run's events from b and verifies them, trusting kp.
func verify(t *testing.T, b *bus.Bus, kp nkeys.KeyPair, run string) *audit.RunVerdict {
	t.Helper()
	pub, _ := kp.PublicKey()
	v := &audit.Verifier{Trust: map[string]bool{pub: true}}
	if _, err := b.Replay(testCtx(t), bus.Filter{Run: run}, func(e *events.Event) error { v.Add(e); return nil }); err != nil {
		t.Fatal(err)
	}
	vs := v.Verdicts()
	if len(vs) != 1 {
		t.Fatalf("%d verdicts, want 1", len(vs))
	}
	return vs[0]
}

// stored is one message of the events stream.
type stored struct {
	seq  uint64
	msg  *nats.Msg
	ev   *events.Event
	name string // stage
}

// messages reads every message of the events stream.
func messages(t *testing.T, nc *nats.Conn) []stored {
	t.Helper()
	ctx := testCtx(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(ctx, bus.NamesFor("").Events)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []stored
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			continue // deleted
		}
		ev, err := events.Decode(events.Header(m.Header), m.Data)
		if err != nil {
			t.Fatalf("seq %d: %v", seq, err)
		}
		out = append(out, stored{seq: seq, msg: &nats.Msg{Subject: m.Subject, Header: m.Header, Data: m.Data}, ev: ev, name: string(ev.Stage)})
	}
	return out
}

// find returns the stored message of the run's event with stage st (the
// first), failing the test when there is none.
func find(t *testing.T, ms []stored, st events.Stage) stored {
	t.Helper()
	for _, m := range ms {
		if m.ev.Stage == st {
			return m
		}
	}
	t.Fatalf("no %s stored", st)
	return stored{}
}

// copyStore publishes msgs, each changed by edit (nil: dropped), into a
// fresh server's events stream, as someone with a copy of the store could.
func copyStore(t *testing.T, ms []stored, edit func(stored) *nats.Msg) *bus.Bus {
	t.Helper()
	_, nc := bustest.Start(t)
	b := bustest.Provision(t, nc)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		out := edit(m)
		if out == nil {
			continue
		}
		h := nats.Header{}
		for k, v := range out.Header {
			if !strings.HasPrefix(k, "Nats-") {
				h[k] = v
			}
		}
		if _, err := js.PublishMsg(testCtx(t), &nats.Msg{Subject: out.Subject, Header: h, Data: out.Data}); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

func kinds(v *audit.RunVerdict) string {
	var out []string
	for _, p := range v.Problems {
		out = append(out, fmt.Sprintf("%s@%d", p.Kind, p.Seq))
	}
	return strings.Join(out, ",")
}

func TestVerifySignedRunIsIntact(t *testing.T) {
	b, nc, kp, run := signedRun(t)
	v := verify(t, b, kp, run)
	if !v.OK() || !v.Ended || v.Events < 10 {
		t.Fatalf("verdict %+v: %s", v, kinds(v))
	}
	// A verbatim copy of the store verifies too: the chain covers only what
	// is stored.
	cp := copyStore(t, messages(t, nc), func(m stored) *nats.Msg { return m.msg })
	if v := verify(t, cp, kp, run); !v.OK() {
		t.Fatalf("copy: %s", kinds(v))
	}
	// Another key is not trusted.
	other, _ := nkeys.CreateAccount()
	if v := verify(t, b, other, run); kinds(v) != "unknown_signer@"+strconv.Itoa(v.Events) {
		t.Fatalf("untrusted key: %s", kinds(v))
	}
}

func TestVerifyNamesEveryTampering(t *testing.T) {
	b, nc, kp, run := signedRun(t)
	ms := messages(t, nc)
	toolAfter := find(t, ms, events.StageToolAfter)
	end := find(t, ms, events.StageRunCompleted)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("DataChangedInACopiedStore", func(t *testing.T) {
		cp := copyStore(t, ms, func(m stored) *nats.Msg {
			if m.seq != toolAfter.seq {
				return m.msg
			}
			return &nats.Msg{Subject: m.msg.Subject, Header: m.msg.Header, Data: []byte(strings.Replace(string(m.msg.Data), `"content":"`, `"content":"forged `, 1))}
		})
		want := fmt.Sprintf("altered@%d", toolAfter.ev.Seq)
		if v := verify(t, cp, kp, run); kinds(v) != want {
			t.Fatalf("got %s, want %s", kinds(v), want)
		}
	})
	t.Run("TwoEventsSwapped", func(t *testing.T) {
		a, c := toolAfter.ev.Seq, toolAfter.ev.Seq+1
		cp := copyStore(t, ms, func(m stored) *nats.Msg {
			if m.ev.RunID != run || (m.ev.Seq != a && m.ev.Seq != c) {
				return m.msg
			}
			h := nats.Header{}
			for k, v := range m.msg.Header {
				h[k] = v
			}
			to := a + c - m.ev.Seq
			h.Set(events.HeaderPrefix+events.ExtSeq, strconv.FormatUint(to, 10))
			return &nats.Msg{Subject: m.msg.Subject, Header: h, Data: m.msg.Data}
		})
		v := verify(t, cp, kp, run)
		if got := kinds(v); got != fmt.Sprintf("reordered@%d,reordered@%d", a, c) {
			t.Fatalf("got %s", got)
		}
	})
	t.Run("ForgedEventOnTheRunsSubject", func(t *testing.T) {
		// A well-formed tool.after with the next seq after a real one,
		// linked to it: its seq is taken, so it is not in the chain.
		f := *toolAfter.ev
		f.ID = events.NewID()
		f.Seq = toolAfter.ev.Seq + 1
		f.PrevHash = toolAfter.ev.ChainHash()
		h, body, err := events.Encode(&f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := js.PublishMsg(testCtx(t), &nats.Msg{Subject: toolAfter.msg.Subject, Header: nats.Header(h), Data: body}); err != nil {
			t.Fatal(err)
		}
		v := verify(t, b, kp, run)
		if got, want := kinds(v), fmt.Sprintf("inserted@%d", f.Seq); got != want {
			t.Fatalf("got %s, want %s", got, want)
		}
		if v.Problems[0].EventID != f.ID {
			t.Fatalf("inserted event %s, want the forged %s", v.Problems[0].EventID, f.ID)
		}
		if err := deleteMsg(t, js, lastSeq(t, js)); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("MessageDeleted", func(t *testing.T) {
		if err := deleteMsg(t, js, toolAfter.seq); err != nil {
			t.Fatal(err)
		}
		v := verify(t, b, kp, run)
		if got, want := kinds(v), fmt.Sprintf("removed@%d", toolAfter.ev.Seq); got != want {
			t.Fatalf("got %s, want %s", got, want)
		}
	})
	t.Run("TerminalEventRemoved", func(t *testing.T) {
		if err := deleteMsg(t, js, end.seq); err != nil {
			t.Fatal(err)
		}
		v := verify(t, b, kp, run)
		if got := kinds(v); !strings.HasSuffix(got, "no_end@0") || v.Ended {
			t.Fatalf("got %s", got)
		}
	})
}

func deleteMsg(t *testing.T, js jetstream.JetStream, seq uint64) error {
	s, err := js.Stream(testCtx(t), bus.NamesFor("").Events)
	if err != nil {
		return err
	}
	return s.DeleteMsg(testCtx(t), seq)
}

func lastSeq(t *testing.T, js jetstream.JetStream) uint64 {
	s, err := js.Stream(testCtx(t), bus.NamesFor("").Events)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.LastSeq
}

// A shadow registration's record has no seq and is outside the chain: it is
// counted, not reported; an event without seq that is not one is reported.
func TestVerifySkipsShadowRecords(t *testing.T) {
	b, nc, kp, run := signedRun(t)
	ms := messages(t, nc)
	before := find(t, ms, events.StageToolBefore)
	shadow, err := events.New(events.StageHookDecided, events.Meta{Source: "hookbus/loop", AgentID: "demo", SessionID: "s1", RunID: run},
		events.HookDecided{Plugin: "candidate", Stage: events.StageToolBefore, Decision: "deny", EventID: before.ev.ID, Shadow: true})
	if err != nil {
		t.Fatal(err)
	}
	forged := *shadow
	forged.ID = events.NewID()
	forged.Data = []byte(`{"plugin":"candidate","stage":"tool.before","decision":"deny","latency_us":0}`)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []*events.Event{shadow, &forged} {
		h, body, err := events.Encode(e)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := js.PublishMsg(testCtx(t), &nats.Msg{Subject: strings.Replace(before.msg.Subject, "tool.before", "hook.decided", 1), Header: nats.Header(h), Data: body}); err != nil {
			t.Fatal(err)
		}
	}
	pub, _ := kp.PublicKey()
	v := &audit.Verifier{Trust: map[string]bool{pub: true}}
	if _, err := b.Replay(testCtx(t), bus.Filter{Run: run}, func(e *events.Event) error { v.Add(e); return nil }); err != nil {
		t.Fatal(err)
	}
	vd := v.Verdicts()[0]
	if v.Shadow != 1 || len(vd.Problems) != 1 || vd.Problems[0].EventID != forged.ID {
		t.Fatalf("shadow %d, problems %s: want the shadow record counted and the other reported", v.Shadow, kinds(vd))
	}
}

// What fails a run's verification is one rule: tampering always; a signer
// not trusted when keys are given; an end unsigned (or a chain that cannot
// be checked) only when signed runs are required; a run without an end
// never (it is running, waiting or was cut off).
func TestVerifyRule(t *testing.T) {
	kp, _ := nkeys.CreateAccount()
	pub, _ := kp.PublicKey()
	other, _ := nkeys.CreateAccount()
	otherPub, _ := other.PublicKey()
	record := func(signer loop.Signer) []*events.Event {
		j := looptest.New()
		eng, err := loop.New(loop.Config{Emitter: j, History: j, Model: scripted.New(scripted.Demo()), Tools: tools.Builtin(t.TempDir()), Signer: signer})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := eng.Run(testCtx(t), &events.RunRequest{RunID: events.NewID(), AgentID: "demo", SessionID: "s1", Prompt: "What time is it?"}); err != nil {
			t.Fatal(err)
		}
		return j.Events()
	}
	unsigned, signed := record(nil), record(kp)
	unended := unsigned[:len(unsigned)-1]
	altered := slices.Clone(unsigned)
	forged := *altered[3]
	forged.Data = []byte(`{"messages":[]}`)
	altered[3] = &forged
	// A claim stored after the end with the end's seq: chained to the end's
	// predecessor (an attempt's claim admitted late), or to nothing.
	claimAfter := func(prev string) []*events.Event {
		end := signed[len(signed)-1]
		c := *signed[1]
		c.ID, c.Seq, c.PrevHash, c.Signer, c.Signature = events.NewID(), end.Seq, prev, "", ""
		return append(slices.Clone(signed), &c)
	}
	late := claimAfter(signed[len(signed)-2].ChainHash())
	stray := claimAfter(strings.Repeat("0", 64))
	for _, tc := range []struct {
		name  string
		evs   []*events.Event
		v     audit.Verifier
		ok    bool
		kinds string // the problems, failing ones marked !
	}{
		{"unsigned, intact", unsigned, audit.Verifier{}, true, "unsigned"},
		{"unsigned, signatures required", unsigned, audit.Verifier{RequireSigned: true, Trust: map[string]bool{pub: true}}, false, "unsigned!"},
		{"unsigned, keys given", unsigned, audit.Verifier{Trust: map[string]bool{pub: true}}, true, "unsigned"},
		{"no end", unended, audit.Verifier{}, true, "no_end"},
		{"no end, signatures required", unended, audit.Verifier{RequireSigned: true, Trust: map[string]bool{pub: true}}, true, "no_end"},
		{"signed, no key given", signed, audit.Verifier{}, true, "unknown_signer"},
		{"signed, its key given", signed, audit.Verifier{Trust: map[string]bool{pub: true}}, true, ""},
		{"signed, another key given", signed, audit.Verifier{Trust: map[string]bool{otherPub: true}}, false, "unknown_signer!"},
		{"signed, signatures required", signed, audit.Verifier{RequireSigned: true, Trust: map[string]bool{pub: true}}, true, ""},
		{"signed, signatures required, no key given", signed, audit.Verifier{RequireSigned: true}, true, "unknown_signer"},
		{"unsigned, signatures required, no key given", unsigned, audit.Verifier{RequireSigned: true}, false, "unsigned!"},
		{"altered", altered, audit.Verifier{}, false, "altered!,unsigned"},
		{"a claim admitted after the end", late, audit.Verifier{Trust: map[string]bool{pub: true}}, true, "late_claim"},
		{"a claim after the end chained to nothing", stray, audit.Verifier{Trust: map[string]bool{pub: true}}, false, "inserted!"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := tc.v
			for _, e := range tc.evs {
				v.Add(e)
			}
			vd := v.Verdicts()[0]
			var got []string
			for _, p := range vd.Problems {
				k := p.Kind
				if p.Fails {
					k += "!"
				}
				got = append(got, k)
			}
			if vd.OK() != tc.ok || vd.Intact != tc.ok || strings.Join(got, ",") != tc.kinds {
				t.Fatalf("ok %v (intact %v), problems %v; want ok %v, %s", vd.OK(), vd.Intact, got, tc.ok, tc.kinds)
			}
		})
	}
}
