package policies

import "github.com/hookbus/hookbus/events"

// SyncOption configures Sync.
type SyncOption func(*syncOptions) error

type syncOptions struct {
	stages []events.Stage
}

// ForStages makes Sync load only the policies that match one of stages:
// a process that decides on one event (loop agent-hook) compiles no
// policy it cannot use. The error (from Sync) wraps ErrInvalidOption for
// a stage that accepts no interceptor.
func ForStages(stages ...events.Stage) SyncOption {
	return func(o *syncOptions) error {
		for _, st := range stages {
			if !st.Interceptable() {
				return invalid("sync policies: stage %q accepts no interceptor", st)
			}
		}
		o.stages = append(o.stages, stages...)
		return nil
	}
}
