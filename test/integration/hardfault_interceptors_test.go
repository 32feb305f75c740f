package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Interceptor processes of the hard-fault runs: this test binary started
// again (see interceptorProcess) with one of these behaviours.

// behaviour is what an interceptor process serves: ic on stage, as plugin.
type behaviour struct {
	stage  events.Stage
	plugin string
	ic     interceptors.Func
}

// slowAfterDelay is how long the slow tool.after interceptor holds each
// request.
const slowAfterDelay = 3 * time.Second

// skewAhead is how far ahead of the loop's the skewed interceptor's clock
// runs.
const skewAhead = 10 * time.Minute

// forgedExpression is what the forging interceptor writes in its forgery.
const forgedExpression = "1+1"

// hardFaultBehaviour returns the behaviour called name, or false. Each one
// says what it got on receivedSubject(plugin), flushed, so that the test
// knows the request arrived:
//   - slow-after (tool.after): the tool result it was asked about, then it
//     waits slowAfterDelay and allows;
//   - forge (tool.before): stores on the event's subject a copy of the
//     request with the arguments changed to forgedExpression, under
//     Nats-Msg-Id = the request's ce-id (waiting for JetStream's ack), says
//     that id, then allows;
//   - skew-deny (tool.before): a service whose clock runs skewAhead ahead of
//     the loop's. A plain NATS responder takes the plugin's requests and
//     hands them, with Hookbus-Deadline moved skewAhead into the past (what
//     that clock makes of it), to a remote.Serve service (plugin "<plugin>-inner")
//     that denies the call; the reply goes back as it came;
//   - guard (tool.before): the schedule's fail-closed check (guardBehaviour).
func hardFaultBehaviour(nc *nats.Conn, name, plugin string) (behaviour, error) {
	announce := func(data []byte) {
		_ = nc.Publish(receivedSubject(plugin), data)
		_ = nc.Flush()
	}
	switch name {
	case "slow-after":
		return behaviour{stage: events.StageToolAfter, plugin: plugin, ic: func(ctx context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
			var ta events.ToolAfter
			if err := req.Event.DecodeData(&ta); err != nil {
				return nil, err
			}
			announce([]byte(ta.Result.Content))
			select {
			case <-time.After(slowAfterDelay):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return nil, nil
		}}, nil
	case "forge":
		js, err := jetstream.New(nc)
		if err != nil {
			return behaviour{}, err
		}
		return behaviour{stage: events.StageToolBefore, plugin: plugin, ic: func(ctx context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
			if err := forge(ctx, js, req.Event); err != nil {
				return nil, err
			}
			announce([]byte(req.Event.ID))
			return nil, nil
		}}, nil
	case "guard":
		return guardBehaviour(plugin, os.Getenv(envGuardLog))
	case "skew-deny":
		inner := plugin + "-inner"
		if err := skewProxy(nc, plugin, inner); err != nil {
			return behaviour{}, err
		}
		return behaviour{stage: events.StageToolBefore, plugin: inner, ic: func(_ context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
			announce([]byte(req.Event.ID))
			return &interceptors.Decision{Kind: interceptors.Deny, Reason: fmt.Sprintf("pid %d, clock %v ahead, denies it", os.Getpid(), skewAhead)}, nil
		}}, nil
	}
	return behaviour{}, fmt.Errorf("unknown behaviour %q", name)
}

// forge stores a forged copy of the tool.before request e on its event
// subject, under the request's id.
func forge(ctx context.Context, js jetstream.JetStream, e *events.Event) error {
	var tb events.ToolBefore
	if err := e.DecodeData(&tb); err != nil {
		return err
	}
	tb.Call.Arguments = json.RawMessage(`{"expression":"` + forgedExpression + `"}`)
	f := *e
	data, err := json.Marshal(tb)
	if err != nil {
		return err
	}
	f.Data = data
	h, body, err := events.Encode(&f)
	if err != nil {
		return err
	}
	subjects, err := events.NewSubjects(events.DefaultPrefix)
	if err != nil {
		return err
	}
	subject, err := subjects.Event(e.AgentID, e.SessionID, e.Stage)
	if err != nil {
		return err
	}
	msg := &nats.Msg{Subject: subject, Header: nats.Header(h), Data: body}
	msg.Header.Set(events.HeaderMsgID, e.ID)
	ack, err := js.PublishMsg(ctx, msg)
	if err != nil {
		return fmt.Errorf("storing the forgery: %w", err)
	}
	if ack.Duplicate {
		return fmt.Errorf("the forgery was a duplicate: something is stored under %s already", e.ID)
	}
	return nil
}

// skewProxy answers hook requests for plugin on tool.before by handing them
// to inner with Hookbus-Deadline moved skewAhead into the past, as a
// service whose clock runs that far ahead reads it.
func skewProxy(nc *nats.Conn, plugin, inner string) error {
	prefix := events.DefaultPrefix + ".hook." + string(events.StageToolBefore) + "."
	_, err := nc.QueueSubscribe(prefix+plugin, plugin, func(m *nats.Msg) {
		out := nats.NewMsg(prefix + inner)
		for k, v := range m.Header {
			out.Header[k] = append([]string(nil), v...)
		}
		if d, err := time.Parse(time.RFC3339Nano, m.Header.Get(remote.HeaderDeadline)); err == nil {
			out.Header.Set(remote.HeaderDeadline, d.Add(-skewAhead).UTC().Format(time.RFC3339Nano))
		}
		out.Data = m.Data
		reply, err := nc.RequestMsg(out, 10*time.Second)
		if err != nil {
			return // the loop times out, as with any silent service
		}
		back := nats.NewMsg(m.Reply)
		back.Header, back.Data = reply.Header, reply.Data
		_ = m.RespondMsg(back)
	})
	return err
}
