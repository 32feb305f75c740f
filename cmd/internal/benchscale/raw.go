package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// rawStream and rawPrefix are where the raw baseline publishes: a stream
// with the events stream's configuration on other subjects.
const (
	rawStream = "BENCHSCALE_RAW"
	rawPrefix = "benchscale.raw."
)

// rawMessages prepares the baseline's messages from the stored ones: the
// same headers and body on rawPrefix+subject, with a new event id
// (Nats-Msg-Id and ce-id, so the duplicate window stores each) and the
// fence headers renamed from Nats-Expected-* to Xats-Expected-* (the same
// bytes on the wire; the raw publish has no claim to check).
func rawMessages(stored []*nats.Msg) []*nats.Msg {
	out := make([]*nats.Msg, len(stored))
	for i, m := range stored {
		h := nats.Header{}
		for k, v := range m.Header {
			if rest, ok := strings.CutPrefix(k, "Nats-Expected-"); ok {
				k = "Xats-Expected-" + rest
			}
			h[k] = v
		}
		id := events.NewID()
		h[events.HeaderMsgID] = []string{id}
		h["ce-id"] = []string{id}
		out[i] = &nats.Msg{Subject: rawPrefix + m.Subject, Header: h, Data: m.Data}
	}
	return out
}

// createRawStream (re)creates the baseline's stream with the events
// stream's configuration, empty.
func createRawStream(ctx context.Context, js jetstream.JetStream, events string) error {
	s, err := js.Stream(ctx, events)
	if err != nil {
		return err
	}
	cfg := s.CachedInfo().Config
	cfg.Name, cfg.Subjects = rawStream, []string{rawPrefix + ">"}
	if err := js.DeleteStream(ctx, rawStream); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return err
	}
	_, err = js.CreateStream(ctx, cfg)
	return err
}

// rawPublish publishes msgs with jetstream PublishMsgAsync, as fast as
// the client allows (waiting for room when too many are unacked, as
// bus.Publish does), and waits for every ack; it returns how many failed.
func rawPublish(js jetstream.JetStream, msgs []*nats.Msg) (failed int, err error) {
	futures := make([]jetstream.PubAckFuture, 0, len(msgs))
	for _, m := range msgs {
		for {
			f, err := js.PublishMsgAsync(m)
			if err == nil {
				futures = append(futures, f)
				break
			}
			if !errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
				return failed, fmt.Errorf("raw publish: %w", err)
			}
		}
	}
	<-js.PublishAsyncComplete()
	for _, f := range futures {
		select {
		case <-f.Ok():
		case <-f.Err():
			failed++
		}
	}
	return failed, nil
}
