package interceptors

import (
	"maps"
	"time"

	"github.com/hookbus/hookbus/events"
)

// Disabled says that an operator turned a plugin off everywhere (the kill
// switch, "observer hooks disable"). A chain does not call a disabled
// plugin: each call it skips is recorded as a hook.decided with decision
// Skipped, naming who disabled the plugin, when and why.
type Disabled struct {
	// By is who disabled it, for people to read: the authenticated
	// identity (Actor.Identity) when the entry records one.
	By     string    `json:"by,omitempty"`
	At     time.Time `json:"at"`
	Reason string    `json:"reason,omitempty"`
	// Actor is who disabled it, as authenticated, the channel, and any
	// name the operator typed (a note).
	events.Actor
}

// Skipped is the decision recorded for a call the chain did not make
// because the plugin is disabled. It is never an interceptor's answer
// (Decision.Validate refuses it); the chain goes on as if the plugin were
// not registered.
const Skipped Kind = "skipped"

// Annotations of a skipped call's record (hook.decided annotations).
const (
	AnnotationDisabledBy     = "hookbus.disabled_by"
	AnnotationDisabledAt     = "hookbus.disabled_at"
	AnnotationDisabledReason = "hookbus.disabled_reason"
)

// Disable turns plugin off in this chain and every chain made from it
// (Child): from the next Run on, its registrations are not called, and
// each skipped call is recorded. Disabling again replaces d. It takes
// effect for Runs that start after it returns.
func (c *Chain) Disable(plugin string, d Disabled) {
	r := c.root()
	r.mu.Lock()
	defer r.mu.Unlock()
	next := map[string]Disabled{}
	if cur := r.disabled.Load(); cur != nil {
		next = maps.Clone(*cur)
	}
	next[plugin] = d
	r.disabled.Store(&next)
}

// Enable turns plugin back on and reports whether it was disabled.
func (c *Chain) Enable(plugin string) bool {
	r := c.root()
	r.mu.Lock()
	defer r.mu.Unlock()
	cur := r.disabled.Load()
	if cur == nil {
		return false
	}
	if _, ok := (*cur)[plugin]; !ok {
		return false
	}
	next := maps.Clone(*cur)
	delete(next, plugin)
	if len(next) == 0 {
		r.disabled.Store(nil)
	} else {
		r.disabled.Store(&next)
	}
	return true
}

// DisabledPlugins returns the disabled plugins (a copy).
func (c *Chain) DisabledPlugins() map[string]Disabled {
	cur := c.root().disabled.Load()
	if cur == nil {
		return map[string]Disabled{}
	}
	return maps.Clone(*cur)
}

// root is the chain the disabled set lives on: the outermost parent.
func (c *Chain) root() *Chain {
	for c.parent != nil {
		c = c.parent
	}
	return c
}

// skipped is the record of a call not made because its plugin is disabled.
func skipped(e *entry, eventID string, d Disabled) CallRecord {
	reason := "plugin " + e.reg.Plugin + " disabled"
	if d.By != "" {
		reason += " by " + d.By
	}
	if !d.At.IsZero() {
		reason += " at " + d.At.UTC().Format(time.RFC3339)
	}
	if d.Reason != "" {
		reason += ": " + d.Reason
	}
	ann := map[string]string{AnnotationDisabledAt: d.At.UTC().Format(time.RFC3339Nano)}
	if d.By != "" {
		ann[AnnotationDisabledBy] = d.By
	}
	if d.Reason != "" {
		ann[AnnotationDisabledReason] = d.Reason
	}
	return CallRecord{
		Plugin: e.reg.Plugin, Stage: e.reg.Stage, EventID: eventID, Mode: e.reg.Mode, Remote: e.reg.Remote,
		Decision: Skipped, Reason: reason, Annotations: ann,
	}
}
