// Package cli holds what the hookbus commands (cmd/loop, cmd/observer) share:
// the connection flags (--nats, --store, --listen, --prefix, --replicas), opening
// a provisioned bus from them, and printing events as a timeline.
package cli
