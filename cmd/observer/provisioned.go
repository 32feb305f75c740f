package main

import (
	"cmp"
	"context"
	"fmt"
	"io"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/cmd/internal/cli"
	"github.com/nats-io/nats.go/jetstream"
)

// asset is a stream, bucket or object store of the bus as provisioned.
type asset struct {
	Kind     string `json:"kind"` // stream, kv or object store
	Name     string `json:"name"`
	Replicas int    `json:"replicas"`
	// MaxAge is how long it keeps a message ("" for forever).
	MaxAge string `json:"max_age,omitempty"`
}

// provisioned reads back every asset of names from JetStream: what
// observer provision --output table|json lists.
func provisioned(ctx context.Context, c *cli.Conn, names bus.Names) ([]asset, error) {
	js, err := jetstream.New(c.NC)
	if err != nil {
		return nil, err
	}
	list := []asset{
		{Kind: "stream", Name: names.Events}, {Kind: "stream", Name: names.Runs}, {Kind: "stream", Name: names.Wakes},
		{Kind: "stream", Name: names.DeadLetters}, {Kind: "stream", Name: names.Checkpoints}, {Kind: "stream", Name: names.Usage},
		{Kind: "stream", Name: names.Counters},
		{Kind: "kv", Name: names.Hooks}, {Kind: "kv", Name: names.Trust}, {Kind: "kv", Name: names.Decisions},
		{Kind: "kv", Name: names.Budgets}, {Kind: "kv", Name: names.Agents}, {Kind: "kv", Name: names.Workers},
		{Kind: "kv", Name: names.Leases},
		{Kind: "object store", Name: names.Payloads},
	}
	out := list[:0]
	for _, a := range list {
		stream := a.Name
		switch a.Kind {
		case "kv":
			stream = "KV_" + a.Name
		case "object store":
			stream = "OBJ_" + a.Name
		}
		s, err := js.Stream(ctx, stream)
		if err != nil {
			return nil, fmt.Errorf("reading %s %s: %w", a.Kind, a.Name, err)
		}
		cfg := s.CachedInfo().Config
		a.Replicas = cfg.Replicas
		if cfg.MaxAge > 0 {
			a.MaxAge = cfg.MaxAge.String()
		}
		out = append(out, a)
	}
	return out, nil
}

// printProvisioned writes the assets as a table, or as one JSON document.
func printProvisioned(w io.Writer, assets []asset, asJSON bool) error {
	if asJSON {
		return writeJSON(w, struct {
			Assets []asset `json:"assets"`
		}{assets})
	}
	tw := table(w, "KIND\tNAME\tREPLICAS\tMAX AGE")
	for _, a := range assets {
		age := cmp.Or(a.MaxAge, "forever")
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", a.Kind, a.Name, a.Replicas, age)
	}
	return tw.Flush()
}
