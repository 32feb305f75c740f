package interceptors

// Trust says which plugins were granted privileged_hooks, the permission to
// intercept the privileged stages (context.assembled, model.responded).
// Chain.Register consults it, once: revoking a grant does not remove the
// plugin's existing registrations (whoever revokes unregisters them). The
// bus implements it over the hookbus_trust KV bucket. Implementations must
// be safe for concurrent use.
type Trust interface {
	Privileged(plugin string) bool
}

// Grants is a static Trust: the set of plugins granted privileged_hooks.
// A nil Grants grants nothing.
type Grants map[string]struct{}

// NewGrants returns the grants of the named plugins.
func NewGrants(plugins ...string) Grants {
	g := make(Grants, len(plugins))
	for _, p := range plugins {
		g[p] = struct{}{}
	}
	return g
}

// Privileged reports whether plugin is granted.
func (g Grants) Privileged(plugin string) bool {
	_, ok := g[plugin]
	return ok
}
