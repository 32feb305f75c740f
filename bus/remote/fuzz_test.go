package remote

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
)

// Fuzz targets for what the bus reads from the network (events themselves
// are fuzzed in package events): interception requests as Serve reads them
// (deadline headers, then the event), interception replies as Client reads
// them, registry entries and trust grants (KV values). Run one with
//
//	go test ./bus -run '^$' -fuzz '^FuzzServeRequest$' -fuzztime 30s

// headerText writes h as "key: value" lines, keys sorted, one line per
// value: the form the fuzz targets read headers in.
func headerText(h map[string][]string) string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		for _, v := range h[k] {
			b.WriteString(k + ": " + v + "\n")
		}
	}
	return b.String()
}

// parseHeaderText reads "key: value" lines (a line without ':' is a key
// with an empty value; a repeated key adds a value).
func parseHeaderText(s string) nats.Header {
	h := nats.Header{}
	for _, line := range strings.Split(s, "\n") {
		if line == "" {
			continue
		}
		k, v, _ := strings.Cut(line, ":")
		h[k] = append(h[k], strings.TrimPrefix(v, " "))
	}
	return h
}

// fuzzSeedEvents are valid events in the shapes the loop writes, and a few
// it does not (foreign source, claim check, odd subject).
func fuzzSeedEvents(f *testing.F) []*events.Event {
	f.Helper()
	mk := func(stage events.Stage, meta events.Meta, payload any) *events.Event {
		e, err := events.New(stage, meta, payload)
		if err != nil {
			f.Fatal(err)
		}
		return e
	}
	meta := events.Meta{Source: "hookbus/loop", AgentID: "support", SessionID: "s1", RunID: "01J0000000000000000000000R", Step: 2, Seq: 7}
	tool := meta
	tool.Subject = "calculator"
	odd := events.Meta{Source: "https://example.com/x?y=1", AgentID: `a%"é`, SessionID: "s", RunID: "r", Subject: " padded ",
		Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
	ref := mk(events.StageToolAfter, meta, events.ToolAfter{})
	ref.DataRef, ref.Data = "hookbus_payloads/"+ref.ID, nil
	return []*events.Event{
		mk(events.StageToolBefore, tool, events.ToolBefore{Call: events.ToolCall{ID: "c1", Name: "calculator", Arguments: json.RawMessage(`{"expression":"6*7"}`)}}),
		mk(events.StageStepStarted, meta, events.StepStarted{Step: 2}),
		mk(events.StageRunCompleted, odd, events.RunCompleted{Reason: "done", Answer: "42"}),
		ref,
	}
}

// fakeRequest is a micro.Request that records the answer.
type fakeRequest struct {
	h        micro.Headers
	data     []byte
	answers  int
	code     string
	desc     string
	response []byte
}

func (r *fakeRequest) Respond(b []byte, _ ...micro.RespondOpt) error {
	r.answers++
	r.response = b
	return nil
}

func (r *fakeRequest) RespondJSON(v any, _ ...micro.RespondOpt) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return r.Respond(b)
}

func (r *fakeRequest) Error(code, desc string, _ []byte, _ ...micro.RespondOpt) error {
	r.answers++
	r.code, r.desc = code, desc
	return nil
}

func (r *fakeRequest) Data() []byte           { return r.data }
func (r *fakeRequest) Headers() micro.Headers { return r.h }
func (r *fakeRequest) Subject() string        { return "hookbus.hook.tool.before.fuzz" }
func (r *fakeRequest) Reply() string          { return "_INBOX.fuzz" }

// FuzzServeRequest feeds Serve's request handler any headers and body, as
// a client of the tool.before endpoint could send them: every request gets
// exactly one answer; an error answer has a known code and a one-line,
// bounded description (400 "malformed request: ..." for what cannot be
// read); the interceptor sees only tool.before events with a deadline, the
// event the codec decodes from the request without its deadline headers.
func FuzzServeRequest(f *testing.F) {
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339Nano)
	for _, e := range fuzzSeedEvents(f) {
		h, body, err := events.Encode(e)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(headerText(h), body)
		f.Add(headerText(h)+HeaderDeadline+": "+future+"\n"+HeaderTimeoutMs+": 2000\n", body)
		f.Add(headerText(h)+strings.ToLower(HeaderTimeoutMs)+": -1\n", body)
		f.Add(headerText(h)+HeaderDeadline+": 2001-01-01T00:00:00Z\n", body)
		f.Add(headerText(h)+HeaderDeadline+": tomorrow\n", body)
		f.Add(headerText(h)+HeaderTimeoutMs+": 99999999999999999999\n", body)
	}
	f.Add("", []byte("hello"))
	f.Fuzz(func(t *testing.T, hdr string, body []byte) {
		h := parseHeaderText(hdr)
		var calls int
		var seen *interceptors.Request
		var seenDeadline time.Time
		s := &Service{plugin: "fuzz", ctx: context.Background(), log: slog.New(slog.DiscardHandler)}
		s.ic = interceptors.Func(func(ctx context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
			calls++
			seen = req
			seenDeadline, _ = ctx.Deadline()
			return &interceptors.Decision{Kind: interceptors.Deny, Reason: "fuzz"}, nil
		})
		// What the interceptor should see: the event without the deadline
		// headers, decoded as the codec does.
		plain := nats.Header{}
		for k, v := range h {
			if !strings.EqualFold(k, HeaderDeadline) && !strings.EqualFold(k, HeaderTimeoutMs) {
				plain[k] = v
			}
		}
		req := &fakeRequest{h: micro.Headers(h), data: body}
		before := time.Now()
		s.handle(events.StageToolBefore, req)

		if req.answers != 1 {
			t.Fatalf("%d answers to one request", req.answers)
		}
		if req.code != "" {
			if !slices.Contains([]string{"400", "500", "504"}, req.code) {
				t.Fatalf("error code %q", req.code)
			}
			if req.desc == "" || len(req.desc) > maxErrorText || strings.ContainsAny(req.desc, "\r\n") {
				t.Fatalf("error description %q is not one bounded line", req.desc)
			}
			if req.code == "400" && !strings.HasPrefix(req.desc, "malformed request: ") {
				t.Fatalf("400 %q does not say the request is malformed", req.desc)
			}
			if req.code != "500" && calls != 0 {
				t.Fatalf("the interceptor was called for a request answered %s %s", req.code, req.desc)
			}
			return
		}
		if calls != 1 {
			t.Fatalf("answered without calling the interceptor (%d calls)", calls)
		}
		want, err := events.Decode(plain, body)
		if err != nil {
			t.Fatalf("the interceptor got a request events.Decode rejects: %v", err)
		}
		if seen.Stage != events.StageToolBefore || seen.Event.Stage != events.StageToolBefore || !reflect.DeepEqual(seen.Event, want) {
			t.Fatalf("the interceptor saw %+v\nwant %+v", seen.Event, want)
		}
		if !seen.Deadline.After(before) || !seenDeadline.Equal(seen.Deadline) {
			t.Fatalf("deadline %v (ctx %v), request handled at %v", seen.Deadline, seenDeadline, before)
		}
		if d, err := interceptors.ParseDecision(req.response); err != nil || d.Kind != interceptors.Deny {
			t.Fatalf("reply %q: %+v, %v", req.response, d, err)
		}
	})
}

// FuzzRequestDeadline checks the deadline Serve gives a request: the
// earlier of the two headers, DefaultTimeout without them, and an error
// naming the header that does not parse.
func FuzzRequestDeadline(f *testing.F) {
	f.Add("2030-01-02T03:04:05.123456789Z", "1500", true, true)
	f.Add("2001-01-01T00:00:00Z", "", true, false)
	f.Add("", "0", false, true)
	f.Add("yesterday", "-1", true, true)
	f.Add("", "9223372036854775807", false, true)
	f.Fuzz(func(t *testing.T, deadline, timeoutMs string, hasDeadline, hasTimeout bool) {
		h := nats.Header{}
		if hasDeadline {
			h[HeaderDeadline] = []string{deadline}
		}
		if hasTimeout {
			h[strings.ToLower(HeaderTimeoutMs)] = []string{timeoutMs} // any case
		}
		now := time.Now()
		got, err := requestDeadline(h, now)
		if err != nil {
			if !strings.Contains(err.Error(), HeaderDeadline) && !strings.Contains(err.Error(), HeaderTimeoutMs) {
				t.Fatalf("error %q names no header", err)
			}
			return
		}
		if !hasDeadline && !hasTimeout {
			if !got.Equal(now.Add(interceptors.DefaultTimeout)) {
				t.Fatalf("no headers: deadline %v, want now + %v", got, interceptors.DefaultTimeout)
			}
			return
		}
		if hasTimeout {
			if want := now.Add(time.Duration(mustAtoi(t, timeoutMs)) * time.Millisecond); !got.Equal(want) {
				t.Fatalf("deadline %v, want receipt + %s ms = %v (the budget counts from receipt)", got, timeoutMs, want)
			}
			return
		}
		if hasDeadline {
			d, err := time.Parse(time.RFC3339Nano, deadline)
			if err != nil {
				t.Fatalf("accepted deadline %q that does not parse: %v", deadline, err)
			}
			if got.After(d) {
				t.Fatalf("deadline %v is after the header's %v", got, d)
			}
		}
	})
}

func mustAtoi(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("accepted timeout %q that is not an integer: %v", s, err)
	}
	return n
}

// FuzzRemoteReply feeds Client's reply reader any headers and body: a
// reply is a decision (empty is allow), or a *interceptors.CallError of
// kind bad_reply (the body does not parse), error (a service error or
// status), or timeout (a 504 service error).
func FuzzRemoteReply(f *testing.F) {
	f.Add("", []byte(""))
	f.Add("", []byte(`{"decision":"deny","reason":"no"}`))
	f.Add("", []byte("not json"))
	f.Add(micro.ErrorCodeHeader+": 500\n"+micro.ErrorHeader+": boom\n", []byte(""))
	f.Add(micro.ErrorCodeHeader+": 504\n", []byte(""))
	f.Add("nats-service-error: lower case\n", []byte("{}"))
	f.Add("Status: 503\n", []byte(""))
	f.Fuzz(func(t *testing.T, hdr string, body []byte) {
		r := &Client{reg: interceptors.Registration{Plugin: "fuzz", Stage: events.StageToolBefore}}
		req := &interceptors.Request{Stage: events.StageToolBefore}
		h := parseHeaderText(hdr)
		d, err := r.decision(req, &nats.Msg{Header: h, Data: body})
		if err != nil {
			var he *interceptors.CallError
			if !errors.As(err, &he) || he.Plugin != "fuzz" || he.Stage != events.StageToolBefore {
				t.Fatalf("error %v is not the plugin's HookError", err)
			}
			switch he.Kind {
			case events.FailBadReply:
				if !errors.Is(err, interceptors.ErrBadReply) {
					t.Fatalf("bad_reply %v does not wrap ErrBadReply", err)
				}
				if _, perr := interceptors.ParseDecision(body); perr == nil {
					t.Fatalf("bad_reply for a body that parses: %q", body)
				}
			case events.FailError, events.FailTimeout:
				if len(h) == 0 {
					t.Fatalf("%s without headers: %v", he.Kind, err)
				}
			default:
				t.Fatalf("kind %q for a reply", he.Kind)
			}
			return
		}
		if len(strings.TrimSpace(string(body))) == 0 {
			if d != nil {
				t.Fatalf("empty reply gave %+v, want nil (allow)", d)
			}
			return
		}
		want, perr := interceptors.ParseDecision(body)
		if perr != nil || !reflect.DeepEqual(d, want) {
			t.Fatalf("decision %+v, ParseDecision %+v, %v", d, want, perr)
		}
	})
}

// FuzzRegistryEntry reads any KV key and value as a registry entry: a
// value that is not a registration for its key is an error wrapping
// interceptors.ErrInvalidRegistration or events.ErrInvalidID; one that is
// comes back valid, never builtin or remote, and survives a round trip.
func FuzzRegistryEntry(f *testing.F) {
	f.Add("tool.before.pii", []byte(`{"plugin":"pii","stage":"tool.before","order":10,"timeout":"2s","policy":"fail","tools":"fetch_*"}`))
	f.Add("tool.before.pii", []byte(`{"plugin":"pii","stage":"tool.before","builtin":true,"remote":true}`))
	f.Add("context.assembled.x", []byte(`{"plugin":"x","stage":"context.assembled","mode":"validate"}`))
	f.Add("tool.before.pii", []byte(`{"plugin":"other","stage":"tool.before"}`))
	f.Add("tool.before.pii", []byte(`{"plugin":"pii","stage":"tool.before","timeout":"1h"}`))
	f.Add("tool.before.pii", []byte(`{"plugin":"pii","stage":"tool.before","timeout":"soon"}`))
	f.Add("stop.p", []byte(`null`))
	f.Add("x", []byte(`{`))
	f.Fuzz(func(t *testing.T, key string, value []byte) {
		reg, err := decodeEntry(key, value)
		if err != nil {
			if !errors.Is(err, interceptors.ErrInvalidRegistration) && !errors.Is(err, events.ErrInvalidID) {
				t.Fatalf("error %v wraps neither ErrInvalidRegistration nor ErrInvalidID", err)
			}
			return
		}
		if err := checkEntry(reg); err != nil {
			t.Fatalf("decoded an invalid entry %+v: %v", reg, err)
		}
		if reg.Builtin || reg.Remote {
			t.Fatalf("entry %+v read from the registry is builtin or remote", reg)
		}
		if RegistryKey(reg.Stage, reg.Plugin) != key {
			t.Fatalf("entry %+v under key %q", reg, key)
		}
		b, err := json.Marshal(reg)
		if err != nil {
			t.Fatalf("marshal %+v: %v", reg, err)
		}
		again, err := decodeEntry(key, b)
		if err != nil || !reflect.DeepEqual(again, reg) {
			t.Fatalf("round trip of %s: %+v, %v\nwant %+v", b, again, err, reg)
		}
	})
}

// FuzzTrustGrant reads any KV value as a trust grant: only a JSON object
// whose privileged_hooks is true grants, and what Grant writes grants.
func FuzzTrustGrant(f *testing.F) {
	written, _ := json.Marshal(grant{PrivilegedHooks: true, GrantedAt: time.Now().UTC()})
	f.Add(written)
	f.Add([]byte(`{"privileged_hooks":false}`))
	f.Add([]byte(`{"privileged_hooks":"true"}`))
	f.Add([]byte(`true`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"privileged_hooks":true,"privileged_hooks":false}`))
	f.Fuzz(func(t *testing.T, value []byte) {
		if !grants(value) {
			return
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(value, &m); err != nil {
			t.Fatalf("%q grants but is not a JSON object: %v", value, err)
		}
		found := false
		for k, v := range m {
			if strings.EqualFold(k, "privileged_hooks") && strings.TrimSpace(string(v)) == "true" {
				found = true
			}
		}
		if !found {
			t.Fatalf("%q grants without privileged_hooks true", value)
		}
		if !grants(written) {
			t.Fatal("what Grant writes does not grant")
		}
	})
}
