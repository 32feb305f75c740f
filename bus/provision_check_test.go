package bus_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
)

func TestCheckProvisioned(t *testing.T) {
	_, nc := bustest.Start(t)
	b, err := bus.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = b.CheckProvisioned(ctx)
	if !errors.Is(err, bus.ErrNotProvisioned) || !strings.Contains(err.Error(), "HOOKBUS_EVENTS") || !strings.Contains(err.Error(), "OBJ_hookbus_payloads") {
		t.Fatalf("CheckProvisioned on a bare server = %v", err)
	}
	if err := b.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.CheckProvisioned(ctx); err != nil {
		t.Fatalf("CheckProvisioned after Provision = %v", err)
	}
	if err := b.JetStream().DeleteStream(ctx, "HOOKBUS_DLQ"); err != nil {
		t.Fatal(err)
	}
	if err := b.CheckProvisioned(ctx); !errors.Is(err, bus.ErrNotProvisioned) || !strings.Contains(err.Error(), "missing HOOKBUS_DLQ") {
		t.Fatalf("CheckProvisioned with the DLQ gone = %v", err)
	}
}
