package runs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hookbus/hookbus/bus/internal/deadline"
	"github.com/nats-io/nats.go/jetstream"
)

// The consumer of every agent an older hookbus made overlaps the per-agent
// consumers of a work queue; see docs/ARCHITECTURE.md, "Routing by agent".

// errCodeWQNotUnique is JetStream's error for a consumer whose filter
// overlaps another's on a work-queue stream.
const errCodeWQNotUnique jetstream.ErrorCode = 10100

// clearLegacy deals with the consumers of the run queue whose filters
// overlap filter: one of an older hookbus (a consumer of every agent's
// requests, or named after the pool) that nobody uses is removed; one in
// use, or anyone else's, is an error naming it.
func (q *Queue) clearLegacy(ctx context.Context, pool, filter string) error {
	ctx, cancel := q.withTimeout(ctx)
	defer cancel()
	st, err := q.js.Stream(ctx, q.names.Runs)
	if err != nil {
		return fmt.Errorf("%w: stream %s: %w", ErrConsumer, q.names.Runs, deadline.Err(ctx, err))
	}
	lister := st.ListConsumers(ctx)
	var infos []*jetstream.ConsumerInfo
	for ci := range lister.Info() {
		infos = append(infos, ci)
	}
	if err := lister.Err(); err != nil {
		return fmt.Errorf("%w: list the consumers of %s: %w", ErrConsumer, q.names.Runs, deadline.Err(ctx, err))
	}
	for _, ci := range infos {
		filters := ci.Config.FilterSubjects
		if ci.Config.FilterSubject != "" {
			filters = append(filters, ci.Config.FilterSubject)
		}
		if len(filters) == 0 {
			filters = []string{">"}
		}
		if !slices.ContainsFunc(filters, func(f string) bool { return subjectsCollide(f, filter) }) {
			continue
		}
		legacy := ci.Name == pool || slices.Contains(filters, q.subj.AllRuns())
		rm := fmt.Sprintf("nats consumer rm %s %s", q.names.Runs, ci.Name)
		switch {
		case !legacy:
			return fmt.Errorf("%w: consumer %s of %s (filter %s) overlaps %s, which this worker needs: a work queue gives each request to one consumer; remove it (%s) or stop what uses it",
				ErrConsumer, ci.Name, q.names.Runs, strings.Join(filters, ", "), filter, rm)
		case ci.NumAckPending > 0 || ci.NumWaiting > 0:
			return fmt.Errorf("%w: consumer %s of %s (filter %s), made by an older hookbus for every agent, is in use (%d requests in flight, %d pulls waiting): stop the older loop serve workers, then start this one again (or remove it: %s)",
				ErrLegacyConsumer, ci.Name, q.names.Runs, strings.Join(filters, ", "), ci.NumAckPending, ci.NumWaiting, rm)
		}
		if err := st.DeleteConsumer(ctx, ci.Name); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
			return fmt.Errorf("%w: remove consumer %s of %s, made by an older hookbus: %w (remove it: %s)", ErrLegacyConsumer, ci.Name, q.names.Runs, deadline.Err(ctx, err), rm)
		}
		q.log.Warn("hookbus: removed an idle run consumer of an older hookbus (one consumer for every agent); its requests stay queued for the per-agent consumers",
			"consumer", ci.Name, "stream", q.names.Runs, "filter", strings.Join(filters, ", "))
	}
	return nil
}

// subjectsCollide reports whether two subject filters can match one
// subject.
func subjectsCollide(a, b string) bool {
	ta, tb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(ta) && i < len(tb); i++ {
		if ta[i] == ">" || tb[i] == ">" {
			return true
		}
		if ta[i] != tb[i] && ta[i] != "*" && tb[i] != "*" {
			return false
		}
	}
	return len(ta) == len(tb)
}
