package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/budgets"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
)

func observe(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	code := run(ctx, args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestBudgetsCLI(t *testing.T) {
	srv, nc := bustest.Start(t, bustest.WithListener())
	b := bustest.Provision(t, nc)
	url := srv.ClientURL()

	if code, out, errOut := observe(t, "budgets", "--nats", url); code != exitOK || !strings.Contains(out, "no shared budgets") {
		t.Fatalf("empty: %d %q %q", code, out, errOut)
	}
	code, out, errOut := observe(t, "budgets", "set", "--agent", "support", "--period", "24h", "--tokens", "1000", "--cost", "2.5", "--nats", url)
	if code != exitOK || !strings.Contains(out, "budget of support set: per 24h0m0s, 1000 tokens, $2.50") {
		t.Fatalf("set: %d %q %q", code, out, errOut)
	}
	if code, _, errOut := observe(t, "budgets", "set", "--agent", "support", "--nats", url); code != exitUsage || !strings.Contains(errOut, "period") {
		t.Fatalf("set without a period: %d %q", code, errOut)
	}
	if code, _, errOut := observe(t, "budgets", "set", "--agent", "x", "--period", "1h", "--nats", url); code != exitUsage || !strings.Contains(errOut, "bounds nothing") {
		t.Fatalf("set without a bound: %d %q", code, errOut)
	}

	ctx := context.Background()
	sb := budgets.New(b)
	if over, err := sb.Reserve(ctx, "support", "s1", "r1"); err != nil || over != "" {
		t.Fatalf("Reserve: %q %v", over, err)
	}
	if err := sb.Charge(ctx, "support", "s1", "r1", events.Usage{InputTokens: 300, OutputTokens: 100, CostUSD: 0.5}); err != nil {
		t.Fatal(err)
	}
	_, out, _ = observe(t, "budgets", "--nats", url)
	if !strings.Contains(out, "400 / 1000") || !strings.Contains(out, "$0.5000 / $2.5000") {
		t.Fatalf("list:\n%s", out)
	}
	_, out, _ = observe(t, "budgets", "--json", "--nats", url)
	if !strings.Contains(out, `"tokens": 400`) || !strings.Contains(out, `"period": "24h0m0s"`) {
		t.Fatalf("list --json:\n%s", out)
	}
	if code, out, _ := observe(t, "budgets", "rm", "--agent", "support", "--nats", url); code != exitOK || !strings.Contains(out, "removed") {
		t.Fatalf("rm: %d %q", code, out)
	}
	if code, _, errOut := observe(t, "budgets", "rm", "--agent", "support", "--nats", url); code == exitOK || !strings.Contains(errOut, "has no shared budget") {
		t.Fatalf("rm again: %d %q", code, errOut)
	}
}
