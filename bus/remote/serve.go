package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/internal/claimcheck"
	"github.com/hookbus/hookbus/bus/internal/header"
	"github.com/hookbus/hookbus/bus/internal/jsname"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/internal/deadlinectx"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"
)

// DefaultServiceVersion is the micro service version Serve announces when
// ServeConfig.Version is empty.
const DefaultServiceVersion = "0.0.0"

// ServeConfig says what Serve serves.
type ServeConfig struct {
	// Plugin is the plugin id (required): the micro service name, the last
	// token of the subjects and the queue group. It must be a valid id
	// (events.ValidateID) and a micro service name: letters, digits, '-'
	// and '_' only.
	Plugin string
	// Stages are the stages served (at least one), each an
	// interceptable stage, one endpoint each.
	Stages []events.Stage
	// Prefix is the subject prefix (default "hookbus").
	Prefix string
	// Version is the service's SemVer version (default DefaultServiceVersion).
	Version string
	// Description describes the service in $SRV.INFO.
	Description string
	// Metadata annotates the service in $SRV.INFO; Serve adds
	// "hookbus.protocol" (the wire protocol version, "1") and
	// "hookbus.prefix".
	Metadata map[string]string
	// Register, when set, are the plugin's registrations, written into the
	// registry once the service is up and kept while it serves: Serve holds
	// a lease for them (Registry.Hold), so that loops stop calling the
	// plugin within seconds when its process dies, and Stop removes them
	// (unless another instance of the plugin still serves). Plugin may be
	// left empty (it is the config's); each Stage must be one served.
	Register []interceptors.Registration
	// Logger receives panics (with their stack) and reply failures; the
	// default discards.
	Logger *slog.Logger
}

// Service is an interceptor served by Serve. Stop it when done.
type Service struct {
	svc    micro.Service
	ic     interceptors.Interceptor
	plugin string
	log    *slog.Logger
	pay    *claimcheck.Store // fetches claim-checked request data
	ctx    context.Context   // parent of every call's ctx: Serve's, without its cancellation
	lease  *Lease            // the registrations' lease (ServeConfig.Register)

	mu      sync.Mutex
	unhook  func() bool // stops the Stop-on-ctx-done hook
	stopped sync.Once
	stopErr error
}

// Serve serves ic as a nats.go micro service: service name cfg.Plugin, one
// endpoint per stage on <prefix>.hook.<stage>.<plugin>, queue group
// cfg.Plugin, so instances of one plugin share the requests and $SRV
// discovery finds them. It returns once the server has the subscriptions.
// Each request is decoded (claim-checked data fetched), ic is called with
// a ctx that ends at the request's deadline, and its decision is the reply;
// docs/PROTOCOL.md ("Interception": request, reply, deadlines, the error
// codes 400, 500 and 504) has the wire details.
//
// ic runs on the endpoint's subscription, one request at a time per
// endpoint and instance: it must return when its ctx ends. Run more
// instances to share the load. When ctx ends, the service stops; micro
// chains the connection's closed and error handlers, so set them before
// Serve. The error wraps ErrInvalidOption for a bad config (naming the
// field) or a plugin id that cannot be a micro service name, or is the
// connection's error.
func Serve(ctx context.Context, nc *nats.Conn, cfg ServeConfig, ic interceptors.Interceptor) (*Service, error) {
	subj, err := cfg.check(nc, ic)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	meta := make(map[string]string, len(cfg.Metadata)+2)
	maps.Copy(meta, cfg.Metadata)
	meta["hookbus.protocol"] = "1"
	meta["hookbus.prefix"] = subj.Prefix
	version := cfg.Version
	if version == "" {
		version = DefaultServiceVersion
	}
	s := &Service{ic: ic, plugin: cfg.Plugin, log: cfg.Logger}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	svc, err := micro.AddService(nc, micro.Config{
		Name: cfg.Plugin, Version: version, Description: cfg.Description, Metadata: meta,
		QueueGroup: cfg.Plugin,
		ErrorHandler: func(_ micro.Service, e *micro.NATSError) {
			if unnamedDiscovery(e.Subject) {
				// deploy/nats lets a plugin answer only its own $SRV
				// subjects; discovery by name still works.
				s.log.Info("hookbus serve: unnamed discovery subject refused by the server's permissions", "plugin", cfg.Plugin, "subject", e.Subject)
				return
			}
			s.log.Error("hookbus serve: subscription error", "plugin", cfg.Plugin, "subject", e.Subject, "err", e.Description)
		},
	})
	if err != nil {
		return nil, fmt.Errorf("%w: serve plugin %s: %w", ErrInvalidOption, cfg.Plugin, err)
	}
	s.svc = svc
	s.ctx = context.WithoutCancel(ctx)
	js, err := jetstream.New(nc)
	if err != nil {
		_ = s.Stop()
		return nil, fmt.Errorf("serve plugin %s: %w", cfg.Plugin, err)
	}
	s.pay = claimcheck.New(nc, js, bus.NamesFor(subj.Prefix).Payloads, 0, bus.DefaultTimeout, s.log)
	for _, stage := range cfg.Stages {
		hook, _ := subj.Hook(stage, cfg.Plugin) // checked
		err := svc.AddEndpoint(endpointName(stage), s.handler(stage),
			micro.WithEndpointSubject(hook),
			micro.WithEndpointQueueGroup(cfg.Plugin),
			micro.WithEndpointMetadata(map[string]string{"hookbus.stage": string(stage)}))
		if err != nil {
			_ = s.Stop()
			return nil, fmt.Errorf("serve plugin %s on %s: %w", cfg.Plugin, stage, err)
		}
	}
	if err := flush(ctx, nc); err != nil {
		_ = s.Stop()
		return nil, fmt.Errorf("serve plugin %s: %w", cfg.Plugin, err)
	}
	// The server refuses a subscription asynchronously, but before it
	// answers the flush: a refusal of one of ours is the connection's last
	// error now.
	if err := refused(nc, subj, cfg.Plugin, cfg.Stages); err != nil {
		_ = s.Stop()
		return nil, err
	}
	if len(cfg.Register) > 0 {
		b, err := bus.New(nc, bus.WithPrefix(subj.Prefix), bus.WithLogger(s.log))
		if err == nil {
			s.lease, err = NewRegistry(b).Hold(s.ctx, cfg.Plugin, cfg.Register...)
		}
		if err != nil {
			_ = s.Stop()
			return nil, fmt.Errorf("serve plugin %s: register: %w", cfg.Plugin, err)
		}
	}
	unhook := context.AfterFunc(ctx, func() { _ = s.Stop() })
	s.mu.Lock()
	s.unhook = unhook
	s.mu.Unlock()
	return s, nil
}

// check validates the config and returns the subjects of its prefix.
func (cfg *ServeConfig) check(nc *nats.Conn, ic interceptors.Interceptor) (events.Subjects, error) {
	switch {
	case nc == nil:
		return events.Subjects{}, invalid("serve: nil connection")
	case ic == nil:
		return events.Subjects{}, invalid("serve: nil interceptor")
	}
	if err := events.ValidateID("plugin", cfg.Plugin); err != nil {
		return events.Subjects{}, invalid("serve: %v", err)
	}
	// micro's service name rule, ^[A-Za-z0-9\-_]+$, is a JetStream name
	// token's.
	if !jsname.ValidToken(cfg.Plugin) {
		return events.Subjects{}, invalid("serve: plugin id %q cannot be a micro service name (letters, digits, '-' and '_' only)", cfg.Plugin)
	}
	subj, err := events.NewSubjects(cfg.Prefix)
	if err != nil {
		return events.Subjects{}, invalid("serve: %v", err)
	}
	if len(cfg.Stages) == 0 {
		return events.Subjects{}, invalid("serve plugin %s: no stages", cfg.Plugin)
	}
	cfg.Register = slices.Clone(cfg.Register) // the caller's stay as they are
	for i := range cfg.Register {
		reg := &cfg.Register[i]
		if reg.Plugin == "" {
			reg.Plugin = cfg.Plugin
		}
		switch {
		case reg.Plugin != cfg.Plugin:
			return events.Subjects{}, invalid("serve plugin %s: Register[%d] is a registration of plugin %q", cfg.Plugin, i, reg.Plugin)
		case !slices.Contains(cfg.Stages, reg.Stage):
			return events.Subjects{}, invalid("serve plugin %s: Register[%d] is on stage %q, which is not served (Stages)", cfg.Plugin, i, string(reg.Stage))
		}
	}
	for i, st := range cfg.Stages {
		switch {
		case !st.Valid():
			return events.Subjects{}, invalid("serve plugin %s: stage %q is not a hookbus stage", cfg.Plugin, string(st))
		case !st.Interceptable():
			return events.Subjects{}, invalid("serve plugin %s: stage %s is observe-only", cfg.Plugin, st)
		case slices.Contains(cfg.Stages[:i], st):
			return events.Subjects{}, invalid("serve plugin %s: stage %s listed twice", cfg.Plugin, st)
		}
	}
	return subj, nil
}

// unnamedDiscovery reports whether subject is one of micro's discovery
// subjects for every service ($SRV.PING, $SRV.INFO, $SRV.STATS).
func unnamedDiscovery(subject string) bool {
	return subject == "$SRV.PING" || subject == "$SRV.INFO" || subject == "$SRV.STATS"
}

// endpointName is the micro endpoint name of a stage: "tool.before" gives
// "tool_before".
func endpointName(st events.Stage) string { return strings.ReplaceAll(string(st), ".", "_") }

// flush waits until the server has processed the connection's
// subscriptions, within ctx (or bus.DefaultTimeout when ctx has no
// deadline).
func flush(ctx context.Context, nc *nats.Conn) error {
	if _, ok := ctx.Deadline(); !ok {
		return nc.FlushTimeout(bus.DefaultTimeout)
	}
	return nc.FlushWithContext(ctx)
}

// refused returns an error wrapping ErrPermission when the connection's last
// error is the server refusing a subscription to one of the plugin's
// endpoint subjects.
func refused(nc *nats.Conn, subj events.Subjects, plugin string, stages []events.Stage) error {
	last := nc.LastError()
	if last == nil || !errors.Is(last, nats.ErrPermissionViolation) {
		return nil
	}
	text := strings.ToLower(last.Error())
	for _, st := range stages {
		subject, err := subj.Hook(st, plugin)
		if err == nil && strings.Contains(text, "subscription to \""+strings.ToLower(subject)+"\"") {
			return fmt.Errorf("%w: serve plugin %s: the server refused the subscription to %s (a privileged stage needs a privileged user): %v",
				ErrPermission, plugin, subject, last)
		}
	}
	return nil
}

// Stop stops the service: its subscriptions are drained, so the server
// sends it no more requests and those it already has are answered (each
// within its deadline). It is idempotent.
//
// With ServeConfig.Register, its lease is released first, and its
// registrations removed unless another instance of the plugin holds a
// lease: loops stop calling the plugin before it stops answering.
func (s *Service) Stop() error {
	s.stopped.Do(func() { s.stopErr = s.stop() })
	return s.stopErr
}

// stop is Stop's one run; the Stop-on-ctx-done hook may call Stop while
// Serve returns, or beside its caller's Stop.
func (s *Service) stop() error {
	s.mu.Lock()
	unhook := s.unhook
	s.mu.Unlock()
	if unhook != nil {
		unhook()
	}
	var released error
	if s.lease != nil {
		if err := s.lease.Release(context.Background()); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
			released = fmt.Errorf("stop plugin %s: %w", s.plugin, err)
		}
	}
	if err := s.svc.Stop(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
		return errors.Join(released, fmt.Errorf("stop plugin %s: %w", s.plugin, err))
	}
	return released
}

// Stopped reports whether the service stopped (Stop, its ctx ended, or the
// connection closed).
func (s *Service) Stopped() bool { return s.svc.Stopped() }

// Micro returns the micro service: Info and Stats.
func (s *Service) Micro() micro.Service { return s.svc }

func (s *Service) handler(stage events.Stage) micro.HandlerFunc {
	return func(r micro.Request) { s.handle(stage, r) }
}

// handle answers one request. The interceptor runs on the endpoint's
// subscription goroutine, as micro handlers do: one request at a time per
// endpoint and instance, and micro's statistics count the call.
func (s *Service) handle(stage events.Stage, r micro.Request) {
	now := time.Now()
	h := nats.Header(r.Headers())
	deadline, err := requestDeadline(h, now)
	if err != nil {
		s.replyError(r, "400", "malformed request: "+err.Error())
		return
	}
	// Not CloudEvents headers: off the decoder's path.
	delete(h, HeaderDeadline)
	delete(h, HeaderTimeoutMs)
	ev, err := events.Decode(h, r.Data())
	if err != nil {
		s.replyError(r, "400", "malformed request: "+err.Error())
		return
	}
	if ev.Stage != stage {
		s.replyError(r, "400", fmt.Sprintf("malformed request: a %s event sent to the %s endpoint", ev.Stage, stage))
		return
	}
	if !deadline.After(now) {
		s.replyError(r, "504", fmt.Sprintf("deadline %s passed before the request was handled (a request without %s)", deadline.Format(time.RFC3339Nano), HeaderTimeoutMs))
		return
	}
	// The timer is armed only if something waits on ctx (deadlinectx): an
	// interceptor that answers without waiting costs none.
	c := &callState{}
	deadlinectx.Init(&c.ctx, s.ctx, deadline)
	defer c.ctx.Cancel()
	var ctx context.Context = &c.ctx
	if gone, err := s.pay.Fetch(ctx, ev); err != nil { // claim-checked data (bus.ClaimCheck)
		switch {
		case gone:
			s.replyError(r, "400", "malformed request: "+err.Error())
		case ctx.Err() != nil:
			s.replyError(r, "504", "deadline passed fetching the request's data: "+err.Error())
		default:
			s.replyError(r, "500", "cannot fetch the request's data: "+err.Error())
		}
		return
	}
	c.req = interceptors.Request{
		Stage: stage, Event: ev, Deadline: deadline,
		Registration: interceptors.Registration{Plugin: s.plugin, Stage: stage, Remote: true},
	}
	dec, err := s.call(ctx, &c.req)
	switch {
	case err != nil:
		s.replyError(r, "500", err.Error())
	case bareAllow(dec):
		s.respond(r, nil)
	default:
		body, err := json.Marshal(dec)
		if err != nil {
			s.replyError(r, "500", "cannot encode the decision: "+err.Error())
			return
		}
		s.respond(r, body)
	}
}

// callState is what one request gives the interceptor, in one allocation: its
// ctx and its request.
type callState struct {
	ctx deadlinectx.Context
	req interceptors.Request
}

// call runs the interceptor, turning a panic (or runtime.Goexit) into an
// error.
func (s *Service) call(ctx context.Context, req *interceptors.Request) (dec *interceptors.Decision, err error) {
	returned := false
	defer func() {
		if v := recover(); v != nil {
			s.log.Error("hookbus serve: interceptor panicked", "plugin", s.plugin, "stage", req.Stage, "event", req.Event.ID, "panic", v, "stack", string(debug.Stack()))
			dec, err = nil, fmt.Errorf("panic: %v", v)
		} else if !returned {
			dec, err = nil, errors.New("panic: runtime.Goexit")
		}
	}()
	dec, err = s.ic.Intercept(ctx, req)
	returned = true
	return dec, err
}

// bareAllow reports whether d is an allow with nothing else to say, sent as
// an empty body.
func bareAllow(d *interceptors.Decision) bool {
	return d == nil || d.Kind == interceptors.Allow && d.Data == nil && d.Patch == nil && d.Reason == "" &&
		d.Context == "" && len(d.Warnings) == 0 && len(d.Annotations) == 0
}

func (s *Service) respond(r micro.Request, body []byte) {
	if limit := s.pay.Limit(); limit > 0 && len(body) > limit {
		s.replyError(r, "500", fmt.Sprintf("the decision is %d bytes, more than a reply may carry (%d): modify a large payload with a patch", len(body), limit))
		return
	}
	if err := r.Respond(body); err != nil {
		s.log.Warn("hookbus serve: reply failed", "plugin", s.plugin, "subject", r.Subject(), "err", err)
	}
}

// replyError answers a micro error. The description goes in a header: it is
// made one line of at most maxErrorText bytes.
func (s *Service) replyError(r micro.Request, code, desc string) {
	desc = strings.TrimSpace(header.OneLine(desc, maxErrorText))
	if desc == "" {
		desc = "error"
	}
	if err := r.Error(code, desc, nil); err != nil {
		s.log.Warn("hookbus serve: error reply failed", "plugin", s.plugin, "subject", r.Subject(), "err", err)
	}
}

// maxErrorText bounds the description of an error reply.
const maxErrorText = 1024

// requestDeadline is when a request's budget ends. The budget is measured
// from the request's receipt (now + HeaderTimeoutMs), so a service whose
// clock disagrees with the loop's still gets the whole budget; the absolute
// HeaderDeadline is used only by a request that carries no HeaderTimeoutMs,
// and now + interceptors.DefaultTimeout by one that carries neither. A
// header that does not parse is an error naming it.
func requestDeadline(h nats.Header, now time.Time) (time.Time, error) {
	var deadline time.Time
	if v, ok := header.Value(h, HeaderDeadline); ok {
		t, err := events.ParseTime(v) // the form Remote writes, without time.Parse's cost
		if err != nil {
			return time.Time{}, fmt.Errorf("header %s %q is not an RFC 3339 time", HeaderDeadline, v)
		}
		deadline = t
	}
	if v, ok := header.Value(h, HeaderTimeoutMs); ok {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil || ms < 0 || ms > maxTimeoutMs {
			return time.Time{}, fmt.Errorf("header %s %q is not a number of milliseconds", HeaderTimeoutMs, v)
		}
		return now.Add(time.Duration(ms) * time.Millisecond), nil
	}
	if deadline.IsZero() {
		deadline = now.Add(interceptors.DefaultTimeout)
	}
	return deadline, nil
}

// maxTimeoutMs bounds HeaderTimeoutMs (a day): a larger budget is no budget.
const maxTimeoutMs = 24 * 60 * 60 * 1000
