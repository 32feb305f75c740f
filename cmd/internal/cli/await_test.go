package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// errElection is what a JetStream request answers while the cluster elects
// a meta leader.
var errElection = &jetstream.APIError{Code: 503, ErrorCode: 10008, Description: "JetStream system temporarily unavailable"}

func TestAwaitWaitsOutUnavailability(t *testing.T) {
	var said []string
	c := &Conn{outage: time.Minute, say: func(format string, args ...any) { said = append(said, fmt.Sprintf(format, args...)) }}
	tries := 0
	err := c.Await(context.Background(), "take runs", func(context.Context) error {
		if tries++; tries < 3 {
			return fmt.Errorf("consumer: %w", errElection)
		}
		return nil
	})
	if err != nil || tries != 3 {
		t.Fatalf("Await: %v after %d tries", err, tries)
	}
	if len(said) != 2 || !strings.HasPrefix(said[0], "JetStream unavailable (consumer: nats: API error: code=503 err_code=10008 description=JetStream system temporarily unavailable): waiting, up to 1m0s (--outage), to take runs") ||
		!strings.HasPrefix(said[1], "JetStream available again after ") || !strings.HasSuffix(said[1], ": going on to take runs") {
		t.Fatalf("said %q", said)
	}
}

func TestAwaitGivesUp(t *testing.T) {
	c := &Conn{outage: 300 * time.Millisecond, say: func(string, ...any) {}}
	refused := errors.New("permissions violation")
	if err := c.Await(context.Background(), "start", func(context.Context) error { return refused }); err != refused {
		t.Fatalf("a refusal: %v, want it at once", err)
	}
	tries := 0
	err := c.Await(context.Background(), "start", func(context.Context) error { tries++; return errElection })
	if !errors.Is(err, errElection) || !strings.Contains(err.Error(), "the outage bound: --outage") || tries < 2 {
		t.Fatalf("past the outage bound: %v after %d tries", err, tries)
	}
}
