package loop

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/hookbus/hookbus/events"
)

// Worker runs the requests of the run queue with an Engine per agent. Its
// Handle is the handler of runs.Queue.Consume: a nil error acknowledges
// the request, an error sends it back to the queue for another attempt
// (which resumes the run from its events).
type Worker struct {
	engines map[string]*Engine // by agent id
	any     *Engine            // for every agent; nil with engines
	log     *slog.Logger
}

// NewWorker returns a worker running the requests of whatever agent they
// name on eng (the agents its run consumer serves); log defaults to
// discarding.
func NewWorker(eng *Engine, log *slog.Logger) *Worker {
	return &Worker{any: eng, log: cmp.Or(log, slog.New(slog.DiscardHandler))}
}

// NewAgentsWorker returns a worker running each agent's requests on its own
// engine (an agent definitions file's agents). A request for another agent
// is handed back to the queue, never run nor dropped: give Consume the
// same agents.
func NewAgentsWorker(engines map[string]*Engine, log *slog.Logger) *Worker {
	return &Worker{engines: engines, log: cmp.Or(log, slog.New(slog.DiscardHandler))}
}

// Handle runs one request. It returns nil when the run's end is recorded
// (whatever the reason, failures included) or the request can never run (bad
// ids: retrying would not help); it returns the error when the run could not
// be brought to an end, so the request is delivered again.
func (w *Worker) Handle(ctx context.Context, req *events.RunRequest) error {
	eng, err := w.engine(req.AgentID)
	if err != nil {
		w.log.Error("a run request for an agent this worker has no engine for; handed back", "run", req.RunID, "agent", req.AgentID)
		return err
	}
	res, err := eng.Run(ctx, req)
	switch {
	case err == nil:
		w.log.Info("run ended", "run", res.RunID, "agent", res.AgentID, "session", res.SessionID, "reason", res.Reason, "steps", res.Steps)
		return nil
	case errors.Is(err, ErrLostRun):
		// Another worker holds the run now and will end it: its request is
		// that worker's to acknowledge.
		w.log.Warn("run taken over by another worker", "run", req.RunID, "err", err)
		return err
	case errors.Is(err, ErrOtherDefinition):
		// The run goes on with the definition it is recorded on: the
		// request is queued again for that definition's workers.
		w.log.Warn("run recorded on another definition; handed to its workers", "run", req.RunID, "err", err)
		return err
	case errors.Is(err, ErrInvalidRequest):
		w.log.Warn("dropping an invalid run request", "run", req.RunID, "err", err)
		return nil
	case res != nil && res.Ended:
		w.log.Warn("run failed", "run", res.RunID, "err", err)
		return nil
	default:
		w.log.Warn("run not ended, it will be retried", "run", req.RunID, "err", err)
		return err
	}
}

// engine returns the engine that runs agent's requests, or an error
// wrapping ErrInvalidConfig when the worker has none.
func (w *Worker) engine(agent string) (*Engine, error) {
	if w.any != nil {
		return w.any, nil
	}
	if eng := w.engines[agent]; eng != nil {
		return eng, nil
	}
	return nil, fmt.Errorf("%w: no engine for agent %q on this worker", ErrInvalidConfig, agent)
}

// Close records the end of req's run, run.failed naming cause, when the
// queue gives its request no more attempts (runs.ConsumerConfig.Close):
// nobody then waits for a run that will not be attempted again. A run that
// has an end already is left as it is (nil). It returns an error wrapping
// ErrUnrecorded when the end could not be recorded.
func (w *Worker) Close(ctx context.Context, req *events.RunRequest, cause error) error {
	eng, err := w.engine(req.AgentID)
	if err != nil {
		return err
	}
	res, err := eng.Close(ctx, req, cause.Error())
	switch {
	case errors.Is(err, ErrLostRun):
		return nil // it has an end, or another attempt holds it
	case err != nil:
		return err
	}
	w.log.Warn("run closed: its request gets no more attempts", "run", res.RunID, "agent", res.AgentID, "session", res.SessionID, "detail", res.Detail)
	return nil
}
