package bus_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/hookbus/hookbus/bus"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func TestUnavailable(t *testing.T) {
	api := func(code jetstream.ErrorCode) error {
		return fmt.Errorf("stream info: %w", &jetstream.APIError{Code: 503, ErrorCode: code, Description: "x"})
	}
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"no meta leader", api(10008), true},
		{"no peers", api(10005), true},
		{"stream offline", api(10118), true},
		{"no responders", fmt.Errorf("publish: %w", nats.ErrNoResponders), true},
		{"no stream response", jetstream.ErrNoStreamResponse, true},
		{"timeout", fmt.Errorf("read: %w", context.DeadlineExceeded), true},
		{"replica behind", fmt.Errorf("%w: %w", bus.ErrConsumer, bus.ErrBehind), true},
		{"stream not found", jetstream.ErrStreamNotFound, false},
		{"fenced: wrong last sequence", api(jetstream.JSErrCodeStreamWrongLastSequence), false},
		{"bad request", api(10003), false},
		{"permission", nats.ErrPermissionViolation, false},
		{"cancelled", context.Canceled, false},
		{"other", errors.New("the model refused"), false},
	} {
		if got := bus.Unavailable(c.err); got != c.want {
			t.Errorf("%s: Unavailable(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}
