package tlogbus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/tlog"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
)

// The witness over NATS: C2SP tlog-witness' add-checkpoint call, its body
// and reply as the HTTP binding has them, sent as a NATS request to
// <prefix>.witness.<name>.add-checkpoint; a refusal is a micro error reply
// whose Nats-Service-Error-Code is the HTTP status (409's body is the last
// size cosigned). <prefix>.witness.<name>.checkpoint answers the last
// checkpoint the witness cosigned (tlog-witness' monitoring call). See
// docs/PROTOCOL.md ("Witnesses").

// The witness' calls.
const (
	CallAddCheckpoint = "add-checkpoint"
	CallCheckpoint    = "checkpoint"
)

// ServeWitness serves w on nc as the witness name (a subject token): a
// micro service "hookbus-witness" with the endpoints add-checkpoint and
// checkpoint, in queue group name. Stop the returned service to stop.
func ServeWitness(nc *nats.Conn, subj events.Subjects, name string, w *tlog.Witness, logger *slog.Logger) (micro.Service, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	add, err := subj.Witness(name, CallAddCheckpoint)
	if err != nil {
		return nil, err
	}
	latest, _ := subj.Witness(name, CallCheckpoint)
	svc, err := micro.AddService(nc, micro.Config{
		Name: "hookbus-witness", Version: "1.0.0", QueueGroup: name,
		Description: "hookbus witness " + w.Name() + " (C2SP tlog-witness over NATS)",
		Metadata:    map[string]string{"hookbus.witness": name, "hookbus.witness.key": w.Name()},
	})
	if err != nil {
		return nil, err
	}
	err = svc.AddEndpoint("add-checkpoint", micro.HandlerFunc(func(r micro.Request) {
		lines, err := w.AddCheckpoint(r.Data())
		var we *tlog.WitnessError
		switch {
		case errors.As(err, &we):
			logger.Warn("witness: checkpoint refused", "status", we.Status, "reason", we.Msg)
			var body []byte
			if we.Status == tlog.StatusConflict {
				body = []byte(strconv.FormatUint(we.Size, 10) + "\n")
			}
			_ = r.Error(strconv.Itoa(we.Status), we.Msg, body)
		case err != nil:
			logger.Error("witness: checkpoint not recorded", "error", err)
			_ = r.Error("500", err.Error(), nil)
		default:
			logger.Info("witness: checkpoint cosigned", "bytes", len(r.Data()))
			_ = r.Respond(lines)
		}
	}), micro.WithEndpointSubject(add))
	if err == nil {
		err = svc.AddEndpoint("checkpoint", micro.HandlerFunc(func(r micro.Request) {
			origin := strings.TrimSpace(string(r.Data()))
			cp := w.LatestOf(origin)
			if cp == nil {
				_ = r.Error(strconv.Itoa(tlog.StatusNotFound), "no checkpoint cosigned for "+strconv.Quote(origin), nil)
				return
			}
			_ = r.Respond(cp)
		}), micro.WithEndpointSubject(latest))
	}
	if err != nil {
		_ = svc.Stop()
		return nil, err
	}
	return svc, nil
}

// AskWitness sends an add-checkpoint request (tlog.AddCheckpointRequest)
// to the witness name and returns its cosignature lines. A refusal is
// returned as a *tlog.WitnessError, wrapped with ErrWitness; no answer
// within ctx (or the default timeout) too.
func AskWitness(ctx context.Context, nc *nats.Conn, subj events.Subjects, name string, body []byte) ([]byte, error) {
	return call(ctx, nc, subj, name, CallAddCheckpoint, body)
}

// WitnessCheckpoint asks the witness name for the last checkpoint it
// cosigned of origin ("" when it witnesses one log): the signed note with
// the log's signature and its cosignature. Errors are AskWitness'.
func WitnessCheckpoint(ctx context.Context, nc *nats.Conn, subj events.Subjects, name, origin string) ([]byte, error) {
	return call(ctx, nc, subj, name, CallCheckpoint, []byte(origin))
}

func call(ctx context.Context, nc *nats.Conn, subj events.Subjects, name, what string, body []byte) ([]byte, error) {
	subject, err := subj.Witness(name, what)
	if err != nil {
		return nil, err
	}
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	reply, err := nc.RequestWithContext(ctx, subject, body)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %s: %w", ErrWitness, name, what, err)
	}
	if code := reply.Header.Get(micro.ErrorCodeHeader); code != "" {
		status, _ := strconv.Atoi(code)
		we := &tlog.WitnessError{Status: status, Msg: reply.Header.Get(micro.ErrorHeader)}
		if status == tlog.StatusConflict {
			we.Size, _ = strconv.ParseUint(strings.TrimSpace(string(reply.Data)), 10, 64)
		}
		return nil, fmt.Errorf("%w %s: %w", ErrWitness, name, we)
	}
	return reply.Data, nil
}

// cosign asks each witness to cosign the checkpoint and returns the signed
// note with the cosignatures that verify. A witness that refuses or does
// not answer is logged; the checkpoint goes without its cosignature.
func (c *Checkpointer) cosign(ctx context.Context, cp tlog.Checkpoint, signed []byte) []byte {
	for _, w := range c.cfg.Witnesses {
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.WitnessTimeout)
		lines, err := c.askWitness(wctx, w, cp, signed)
		cancel()
		if err != nil {
			c.log.Warn("checkpointer: the witness did not cosign", "witness", w.Name, "size", cp.Size, "error", err)
			continue
		}
		with := tlog.WithSignatures(signed, lines)
		s, err := tlog.OpenCheckpoint(with, c.cfg.Verifier, w.Key)
		if err != nil || !s.CosignedBy(w.Key.Name()) {
			c.log.Warn("checkpointer: the witness' answer holds no cosignature by its key", "witness", w.Name, "key", w.Key.Name(), "error", err)
			continue
		}
		signed = with
		c.witnessAt[w.Name] = cp.Size
		c.setStatus(func(s *CheckpointerStatus) {
			if s.Cosigned == nil {
				s.Cosigned = map[string]uint64{}
			}
			s.Cosigned[w.Name] = cp.Size
		})
	}
	return signed
}

// askWitness sends the checkpoint with a consistency proof from the size
// the witness last cosigned (the last checkpoint, until it says otherwise:
// then once more from the size it names).
func (c *Checkpointer) askWitness(ctx context.Context, w WitnessRef, cp tlog.Checkpoint, signed []byte) ([]byte, error) {
	old, ok := c.witnessAt[w.Name]
	if !ok {
		old = c.size
	}
	for attempt := 0; ; attempt++ {
		proof, err := c.consistency(ctx, old, cp.Size)
		if err != nil {
			return nil, err
		}
		lines, err := AskWitness(ctx, c.b.Conn(), c.b.Subjects(), w.Name, tlog.AddCheckpointRequest(old, proof, signed))
		var we *tlog.WitnessError
		if attempt == 0 && errors.As(err, &we) && we.Status == tlog.StatusConflict {
			c.log.Info("checkpointer: the witness last cosigned another size; proving from it", "witness", w.Name, "size", we.Size, "assumed", old)
			old = we.Size
			continue
		}
		return lines, err
	}
}

// consistency is the proof from the tree of size old to the tree of size
// (every leaf read): from the last checkpoint's range and the window, or,
// for an older size, from the stored checkpoints.
func (c *Checkpointer) consistency(ctx context.Context, old, size uint64) ([]tlog.Hash, error) {
	switch {
	case old == 0 || old == size:
		return nil, nil
	case old > size:
		return nil, fmt.Errorf("%w: the witness cosigned a checkpoint of size %d of this log, larger than %d: the log was rolled back", ErrWitness, old, size)
	}
	var t *tlog.Tree
	if old >= c.size {
		var err error
		if t, err = tlog.NewTree(c.size, c.prevRange); err != nil {
			return nil, err
		}
	} else {
		l, err := LoadLog(ctx, c.b, c.cfg.Verifier)
		if err != nil {
			return nil, err
		}
		if t = l.Tree; t == nil || t.Size() != c.size || old < t.Begin() {
			return nil, fmt.Errorf("%w: no stored checkpoints to prove size %d from", ErrWitness, old)
		}
	}
	for _, h := range c.window {
		t.Append(h)
	}
	return t.ConsistencyProof(old, size)
}
