package bus

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// JetStream error codes of a cluster that cannot answer for a while: no
// meta or stream leader (an election), too few peers up, results missing
// from a node that is away.
const (
	codeClusterIncomplete  = 10004
	codeClusterNoPeers     = 10005
	codeClusterNotAvail    = 10008
	codeClusterNotLeader   = 10009
	codeStreamOffline      = 10118
	codeConsumerOffline    = 10119
	codeStreamOfflineWhy   = 10194
	codeConsumerOfflineWhy = 10195
)

// Unavailable reports whether err says that JetStream could not answer for
// a while, rather than that it refused: no answer in time, no responders,
// the connection being re-established, a cluster without a leader (an
// election, a node away), or a read no replica could serve up to the
// leader's last sequence (ErrBehind). Such a failure passes once the
// cluster has quorum again; the processes of hookbus wait it out, up to the
// outage bound (Outage), instead of failing or counting it as an attempt.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	if retryable(err) || errors.Is(err, ErrBehind) || errors.Is(err, jetstream.ErrJetStreamNotEnabled) {
		return true
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case codeClusterIncomplete, codeClusterNoPeers, codeClusterNotAvail, codeClusterNotLeader,
			codeStreamOffline, codeConsumerOffline, codeStreamOfflineWhy, codeConsumerOfflineWhy:
			return true
		}
		return false
	}
	return errors.Is(err, jetstream.ErrNoHeartbeat) ||
		errors.Is(err, nats.ErrConnectionReconnecting) ||
		errors.Is(err, context.DeadlineExceeded)
}

// Outage returns how long the bus' publishes wait out JetStream being
// unavailable (WithPublishRetry; default DefaultOutageWait): the outage
// bound that the processes built on the bus wait for too.
func (b *Bus) Outage() time.Duration { return b.opts.outage }
